//! A client of Restate's admin API: register a deployment, cancel or kill an invocation, run
//! SQL over the server's tables (`state`, `sys_invocation`, ...).

use std::time::Duration;

use hyper::Method;

use crate::http::{Body, ClientError, Transport, segment};
use crate::ingress::InvocationId;

/// The admin API at one base URL (`http://host:port`, e.g. `http://127.0.0.1:9070`).
#[derive(Debug, Clone)]
pub struct Admin {
    http: Transport,
}

impl Admin {
    /// A client of the admin API at `url` (plain `http://host:port`), with a 60 s timeout per
    /// request.
    pub fn new(url: &str) -> Result<Self, ClientError> {
        Ok(Self {
            http: Transport::new(url)?,
        })
    }

    /// The same client with another per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.http.set_timeout(timeout);
        self
    }

    /// The base URL (`http://host:port`).
    pub fn url(&self) -> &str {
        self.http.base()
    }

    /// Registers the endpoint at `uri` (`POST /deployments`; the server discovers its services)
    /// and returns the deployment id (`dp_...`). `force` replaces a deployment registered at
    /// the same uri (needed when its handlers changed).
    pub async fn register_deployment(&self, uri: &str, force: bool) -> Result<String, ClientError> {
        let what = "POST /deployments";
        let body = serde_json::json!({ "uri": uri, "force": force }).to_string();
        let answer = self
            .http
            .send(
                Method::POST,
                "/deployments",
                Body::Json(body.as_bytes()),
                &[],
            )
            .await?;
        if !answer.is_success() {
            return Err(answer.error(what));
        }
        match answer
            .json(what)?
            .get("id")
            .and_then(serde_json::Value::as_str)
        {
            Some(id) if !id.is_empty() => Ok(id.to_owned()),
            _ => Err(ClientError::Protocol {
                what: what.to_owned(),
                detail: "no deployment id".to_owned(),
            }),
        }
    }

    /// Cancels an invocation (`PATCH /invocations/{id}/cancel`): the handler gets a terminal
    /// "Cancelled" error at its next await and may clean up.
    pub async fn cancel_invocation(&self, id: &InvocationId) -> Result<(), ClientError> {
        self.patch_invocation(id, "cancel").await
    }

    /// Kills an invocation (`PATCH /invocations/{id}/kill`): it stops at once, no cleanup runs.
    pub async fn kill_invocation(&self, id: &InvocationId) -> Result<(), ClientError> {
        self.patch_invocation(id, "kill").await
    }

    async fn patch_invocation(&self, id: &InvocationId, action: &str) -> Result<(), ClientError> {
        let path = format!("/invocations/{}/{action}", segment(id.as_str()));
        let answer = self
            .http
            .send(Method::PATCH, &path, Body::Empty, &[])
            .await?;
        if answer.is_success() {
            Ok(())
        } else {
            Err(answer.error(&format!("PATCH {path}")))
        }
    }

    /// Runs `query` (`POST /query`) and returns its rows, one JSON object per row.
    pub async fn sql(&self, query: &str) -> Result<Vec<serde_json::Value>, ClientError> {
        let what = "POST /query";
        let body = serde_json::json!({ "query": query }).to_string();
        let answer = self
            .http
            .send(Method::POST, "/query", Body::Json(body.as_bytes()), &[])
            .await?;
        if !answer.is_success() {
            return Err(answer.error(what));
        }
        match answer.json(what)? {
            serde_json::Value::Object(mut map) => match map.remove("rows") {
                Some(serde_json::Value::Array(rows)) => Ok(rows),
                _ => Err(ClientError::Protocol {
                    what: what.to_owned(),
                    detail: "no rows array".to_owned(),
                }),
            },
            _ => Err(ClientError::Protocol {
                what: what.to_owned(),
                detail: "not an object".to_owned(),
            }),
        }
    }
}
