//! The HTTP/1.1 transport shared by [`crate::Ingress`] and [`crate::Admin`]: plain HTTP over
//! hyper's legacy client (Restate's ingress and admin APIs on loopback or a private network),
//! every request under a timeout and every response body bounded.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The largest response body either client reads (Restate's own message limit is 32 MiB).
pub const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// The default timeout of one request (connect, send and read the whole answer).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a request to the Restate ingress or admin API failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The base URL is not `http://host:port` (TLS is not supported).
    #[error("invalid Restate URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An argument cannot be sent (e.g. an idempotency key that is not a valid header value).
    #[error("{what}: invalid request: {reason}")]
    InvalidRequest {
        /// The request (method and path).
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// The request could not be sent or its answer not read (connection refused, reset).
    #[error("{what}: {source}")]
    Transport {
        /// The request (method and path).
        what: String,
        /// The underlying error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// No complete answer within the timeout.
    #[error("{what}: no answer within {timeout:?}")]
    Timeout {
        /// The request (method and path).
        what: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The answer's body is larger than [`MAX_RESPONSE_BYTES`].
    #[error("{what}: response body over {limit} bytes")]
    TooLarge {
        /// The request (method and path).
        what: String,
        /// The limit.
        limit: usize,
    },
    /// The server answered with an unexpected status.
    #[error("{what}: HTTP {status}: {message}")]
    Status {
        /// The request (method and path).
        what: String,
        /// The status code.
        status: u16,
        /// Restate's `message` field, or the body as text (at most 1 KiB).
        message: String,
    },
    /// A 2xx answer whose body is not what the API documents.
    #[error("{what}: unexpected answer: {detail}")]
    Protocol {
        /// The request (method and path).
        what: String,
        /// What was wrong.
        detail: String,
    },
}

impl ClientError {
    /// The HTTP status, for [`ClientError::Status`].
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether the server said the target does not exist (404).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// Whether the server could not be reached or the connection failed.
    pub fn is_transport(&self) -> bool {
        matches!(self, Self::Transport { .. })
    }

    /// Whether trying again may succeed: a transport failure, a timeout, or a 5xx/429 answer.
    /// (Sending again is safe for ingress calls only with an idempotency key.)
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport { .. } | Self::Timeout { .. } => true,
            Self::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// Percent-encodes one path segment (RFC 3986 unreserved characters are kept), so a key with
/// `/`, `?`, `%` or spaces stays one segment.
pub(crate) fn segment(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A body to send.
pub(crate) enum Body<'a> {
    /// No body and no content type.
    Empty,
    /// `application/json` (an empty slice is sent as [`Body::Empty`]).
    Json(&'a [u8]),
    /// `text/plain; charset=utf-8`.
    Text(&'a str),
}

/// The status and body of an answer.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Bytes,
}

impl Answer {
    /// Restate's error `message` (a JSON body `{"message": ..}`), else the body as text, at
    /// most 1 KiB.
    pub(crate) fn message(&self) -> String {
        let text = serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&self.body).into_owned());
        truncate(text, 1024)
    }

    /// [`ClientError::Status`] for this answer.
    pub(crate) fn error(&self, what: &str) -> ClientError {
        ClientError::Status {
            what: what.to_owned(),
            status: self.status,
            message: self.message(),
        }
    }

    /// The body as JSON, or [`ClientError::Protocol`].
    pub(crate) fn json(&self, what: &str) -> Result<serde_json::Value, ClientError> {
        serde_json::from_slice(&self.body).map_err(|e| ClientError::Protocol {
            what: what.to_owned(),
            detail: format!("not JSON: {e}"),
        })
    }

    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// One base URL and a connection pool.
#[derive(Clone)]
pub(crate) struct Transport {
    client: Client<HttpConnector, Full<Bytes>>,
    /// `http://host:port`, no trailing slash.
    base: String,
    timeout: Duration,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("base", &self.base)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// Parses `url` (`http://host:port`, optional trailing slash, no path, query or TLS).
    pub(crate) fn new(url: &str) -> Result<Self, ClientError> {
        let invalid = |reason: &str| ClientError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url.parse().map_err(|_| invalid("not a URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(invalid("the scheme must be http"));
        }
        let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(invalid("a path or query is not supported"));
        }
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build({
                let mut connector = HttpConnector::new();
                connector.set_nodelay(true);
                connector
            }),
            base: format!("http://{authority}"),
            timeout: DEFAULT_TIMEOUT,
        })
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends one request to `{base}{path}` and reads the whole answer (any status).
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Body<'_>,
        headers: &[(HeaderName, HeaderValue)],
    ) -> Result<Answer, ClientError> {
        let what = format!("{method} {path}");
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header(ACCEPT, "application/json");
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let bytes = match body {
            Body::Empty | Body::Json([]) => Bytes::new(),
            Body::Json(json) => {
                builder = builder.header(CONTENT_TYPE, "application/json");
                Bytes::copy_from_slice(json)
            }
            Body::Text(text) => {
                builder = builder.header(CONTENT_TYPE, "text/plain; charset=utf-8");
                Bytes::copy_from_slice(text.as_bytes())
            }
        };
        let request = builder
            .body(Full::new(bytes))
            .map_err(|e| ClientError::InvalidRequest {
                what: what.clone(),
                reason: e.to_string(),
            })?;
        let exchange = async {
            let response =
                self.client
                    .request(request)
                    .await
                    .map_err(|e| ClientError::Transport {
                        what: what.clone(),
                        source: Box::new(e),
                    })?;
            let status = response.status().as_u16();
            let body = match Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
            {
                Ok(collected) => collected.to_bytes(),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    return Err(ClientError::TooLarge {
                        what: what.clone(),
                        limit: MAX_RESPONSE_BYTES,
                    });
                }
                Err(e) => {
                    return Err(ClientError::Transport {
                        what: what.clone(),
                        source: e,
                    });
                }
            };
            Ok(Answer { status, body })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(ClientError::Timeout {
                what,
                timeout: self.timeout,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("abc-._~XYZ019"), "abc-._~XYZ019");
        assert_eq!(segment("a/b c?%#"), "a%2Fb%20c%3F%25%23");
        assert_eq!(segment("é"), "%C3%A9");
        assert_eq!(segment(""), "");
    }

    #[test]
    fn urls_must_be_plain_http_without_a_path() {
        let t = Transport::new("http://127.0.0.1:8080/").expect("url");
        assert_eq!(t.base(), "http://127.0.0.1:8080");
        assert_eq!(
            Transport::new("http://localhost:1").expect("url").base(),
            "http://localhost:1"
        );
        for bad in [
            "https://127.0.0.1:8080",
            "127.0.0.1:8080",
            "http://127.0.0.1:8080/x",
            "http://127.0.0.1:8080/?a=1",
            "",
            "http://",
        ] {
            let e = Transport::new(bad).expect_err(bad);
            assert!(matches!(e, ClientError::InvalidUrl { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn messages_prefer_restate_json_and_are_bounded() {
        let a = Answer {
            status: 409,
            body: Bytes::from_static(br#"{"message":"Cancelled","code":409}"#),
        };
        assert_eq!(a.message(), "Cancelled");
        let e = a.error("GET /x");
        assert_eq!(e.to_string(), "GET /x: HTTP 409: Cancelled");
        assert_eq!(e.status(), Some(409));
        assert!(!e.is_retryable());
        let long = Answer {
            status: 500,
            body: Bytes::from("é".repeat(1000)),
        };
        let m = long.message();
        assert!(m.len() <= 1024 + '…'.len_utf8());
        assert!(m.ends_with('…'));
        assert!(long.error("x").is_retryable());
    }

    #[test]
    fn predicates() {
        let t = ClientError::Timeout {
            what: "GET /".into(),
            timeout: Duration::from_secs(1),
        };
        assert!(t.is_timeout() && t.is_retryable() && !t.is_transport());
        assert_eq!(t.status(), None);
        let nf = ClientError::Status {
            what: "GET /".into(),
            status: 404,
            message: String::new(),
        };
        assert!(nf.is_not_found() && !nf.is_retryable());
    }
}
