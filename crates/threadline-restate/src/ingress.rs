//! A client of Restate's ingress: invoke a handler (`call`, `send`), read an invocation's
//! output, resolve or reject an awakeable.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use hyper::Method;
use hyper::header::{HeaderName, HeaderValue};

use crate::http::{Body, ClientError, Transport, segment};

/// An invocation id as the ingress returns it (`inv_...`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InvocationId(String);

impl InvocationId {
    /// Wraps an id read elsewhere (admin SQL, a log).
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What `GET /restate/invocation/{id}/output` says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// The invocation exists and has not completed (HTTP 470).
    Pending,
    /// It completed; the handler's serialized result (empty for `()` or `None`).
    Done(Bytes),
    /// It completed with a failure (a terminal error, a cancellation: HTTP 409 `Cancelled`).
    Failed {
        /// The HTTP status of the output (the terminal error's code for a terminal error).
        status: u16,
        /// Restate's failure message.
        message: String,
    },
}

/// The ingress API at one base URL (`http://host:port`, e.g. `http://127.0.0.1:8080`).
#[derive(Debug, Clone)]
pub struct Ingress {
    http: Transport,
}

/// The `idempotency-key` header.
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

impl Ingress {
    /// A client of the ingress at `url` (plain `http://host:port`), with a 60 s timeout per
    /// request.
    pub fn new(url: &str) -> Result<Self, ClientError> {
        Ok(Self {
            http: Transport::new(url)?,
        })
    }

    /// The same client with another per-request timeout (a `call` waits for the handler).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.http.set_timeout(timeout);
        self
    }

    /// The base URL (`http://host:port`).
    pub fn url(&self) -> &str {
        self.http.base()
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Duration {
        self.http.timeout()
    }

    /// Starts `handler` on the Virtual Object `service`/`key` without waiting
    /// (`POST /{service}/{key}/{handler}/send`) and returns the invocation's id. `body` is the
    /// handler's input as JSON bytes (empty: no input). With an `idempotency_key`, sending the
    /// same key again returns the first invocation's id and starts nothing.
    pub async fn send(
        &self,
        service: &str,
        key: &str,
        handler: &str,
        body: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<InvocationId, ClientError> {
        let path = format!(
            "/{}/{}/{}/send",
            segment(service),
            segment(key),
            segment(handler)
        );
        let what = format!("POST {path}");
        let mut headers = Vec::new();
        if let Some(k) = idempotency_key {
            let value = HeaderValue::from_str(k).map_err(|_| ClientError::InvalidRequest {
                what: what.clone(),
                reason: "the idempotency key is not a valid header value".to_owned(),
            })?;
            headers.push((IDEMPOTENCY_KEY, value));
        }
        let answer = self
            .http
            .send(Method::POST, &path, Body::Json(body), &headers)
            .await?;
        if !answer.is_success() {
            return Err(answer.error(&what));
        }
        let json = answer.json(&what)?;
        match json.get("invocationId").and_then(serde_json::Value::as_str) {
            Some(id) if !id.is_empty() => Ok(InvocationId::new(id)),
            _ => Err(ClientError::Protocol {
                what,
                detail: "no invocationId".to_owned(),
            }),
        }
    }

    /// Runs `handler` on `service`/`key` and waits for its result
    /// (`POST /{service}/{key}/{handler}`): the handler's serialized output. A failed handler
    /// is a [`ClientError::Status`] with its code and message.
    pub async fn call(
        &self,
        service: &str,
        key: &str,
        handler: &str,
        body: &[u8],
    ) -> Result<Bytes, ClientError> {
        let path = format!(
            "/{}/{}/{}",
            segment(service),
            segment(key),
            segment(handler)
        );
        let answer = self
            .http
            .send(Method::POST, &path, Body::Json(body), &[])
            .await?;
        if answer.is_success() {
            Ok(answer.body)
        } else {
            Err(answer.error(&format!("POST {path}")))
        }
    }

    /// The output of an invocation (`GET /restate/invocation/{id}/output`), without waiting.
    /// An unknown id is a [`ClientError::Status`] 404.
    pub async fn output(&self, id: &InvocationId) -> Result<Output, ClientError> {
        let path = format!("/restate/invocation/{}/output", segment(id.as_str()));
        let answer = self.http.send(Method::GET, &path, Body::Empty, &[]).await?;
        match answer.status {
            200..=299 => Ok(Output::Done(answer.body)),
            470 => Ok(Output::Pending),
            status if is_invocation_failure(&answer.body) => Ok(Output::Failed {
                status,
                message: answer.message(),
            }),
            // Not the invocation's outcome: a bad or unknown id, or the ingress cannot answer.
            _ => Err(answer.error(&format!("GET {path}"))),
        }
    }

    /// Completes the awakeable `id` with `body` (JSON bytes)
    /// (`POST /restate/awakeables/{id}/resolve`).
    pub async fn resolve_awakeable(&self, id: &str, body: &[u8]) -> Result<(), ClientError> {
        let path = format!("/restate/awakeables/{}/resolve", segment(id));
        let answer = self
            .http
            .send(Method::POST, &path, Body::Json(body), &[])
            .await?;
        if answer.is_success() {
            Ok(())
        } else {
            Err(answer.error(&format!("POST {path}")))
        }
    }

    /// Fails the awakeable `id` with `reason` (the waiting handler gets a terminal error)
    /// (`POST /restate/awakeables/{id}/reject`).
    pub async fn reject_awakeable(&self, id: &str, reason: &str) -> Result<(), ClientError> {
        let path = format!("/restate/awakeables/{}/reject", segment(id));
        let answer = self
            .http
            .send(Method::POST, &path, Body::Text(reason), &[])
            .await?;
        if answer.is_success() {
            Ok(())
        } else {
            Err(answer.error(&format!("POST {path}")))
        }
    }
}

/// Whether an error body of the output endpoint is the invocation's own failure: Restate
/// writes `{"code":..,"message":..,"source":"invocation"}` for it and `"source":"ingress"` for
/// the ingress's own errors (bad id, not completed).
fn is_invocation_failure(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("source").and_then(serde_json::Value::as_str) == Some("invocation"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_invocation_source_is_a_failure() {
        assert!(is_invocation_failure(
            br#"{"code":500,"message":"no way","source":"invocation"}"#
        ));
        assert!(!is_invocation_failure(
            br#"{"code":400,"message":"bad invocation id","source":"ingress"}"#
        ));
        assert!(!is_invocation_failure(br#"{"code":500,"message":"x"}"#));
        assert!(!is_invocation_failure(b"<html>"));
        assert!(!is_invocation_failure(b""));
    }
}
