//! The service contract the query loop is generic over.
//!
//! A model backend is any [`tower_service::Service`] that takes a [`MessagesRequest`] and
//! answers with a stream of [`StreamEvent`]s; [`MessagesService`] names that bound. The HTTP
//! client implements it, tests implement it with scripted streams, and middleware (retry,
//! timeout, concurrency) wraps it. Failures are one opaque [`ServiceError`] that answers the
//! questions a caller asks: may I retry, when, was it an overload, was the prompt too long and
//! by how much.
//!
//! No secret survives in a [`ServiceError`]: every text it is given (message, request id,
//! error type, the `Display` and `Debug` of every cause) passes through the key-shape
//! redactor ([`secret::redact_key_shapes`](crate::secret::redact_key_shapes)), so an `sk-ant-`
//! key a server echoes never reaches a log, a terminal or a transcript through an error; a
//! service that knows its own credential removes it too with [`ServiceError::redacted`].
//!
//! ```
//! use std::time::Duration;
//! use threadline_wire::service::ServiceError;
//! use threadline_wire::{ApiErrorResponse, ApiErrorType};
//!
//! let body = ApiErrorResponse::new(ApiErrorType::InvalidRequest, "prompt is too long: 213462 tokens > 200000 maximum");
//! let err = ServiceError::from_api_response(400, body, None);
//! assert_eq!(err.prompt_too_long(), Some((213_462, 200_000)));
//! assert!(!err.is_retryable());
//!
//! let busy = ServiceError::from_api_response(529, ApiErrorResponse::new(ApiErrorType::Overloaded, "Overloaded"), None);
//! assert!(busy.is_overloaded() && busy.is_retryable());
//! let limited = ServiceError::from_api_response(429, ApiErrorResponse::new(ApiErrorType::RateLimit, "slow down"), Some(Duration::from_secs(3)));
//! assert_eq!(limited.retry_after(), Some(Duration::from_secs(3)));
//! ```

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;

use crate::api_error::{ApiErrorResponse, ApiErrorType};
use crate::request::MessagesRequest;
use crate::secret::{KeyShapes, Redact, redact_error_chain};
use crate::stream_event::StreamEvent;

/// The response of a [`MessagesService`]: the events of one streamed message.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ServiceError>> + Send>>;

/// The boxed future of a [`MessagesService`] call: what a service of the contract (or a
/// middleware wrapping one) names as its `Future` when its own future type cannot be named.
pub type EventStreamFuture =
    Pin<Box<dyn std::future::Future<Output = Result<EventStream, ServiceError>> + Send>>;

/// A model backend: a `tower::Service` from a request to a stream of events.
pub trait MessagesService:
    tower_service::Service<MessagesRequest, Response = EventStream, Error = ServiceError>
{
}

impl<S> MessagesService for S where
    S: tower_service::Service<MessagesRequest, Response = EventStream, Error = ServiceError>
{
}

/// What kind of failure a [`ServiceError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceErrorKind {
    /// The API answered with an error status (or an `error` event mid-stream).
    Api,
    /// The connection failed or was reset.
    Connection,
    /// A timeout (connect, first byte, or idle between events).
    Timeout,
    /// The stream ended before `message_stop`, or inside a block.
    Truncated,
    /// The response could not be decoded.
    Decode,
    /// The model stopped at `max_tokens`: the output is cut.
    MaxTokens,
}

/// A failure of a model backend. Opaque: ask it questions with the predicates.
pub struct ServiceError {
    kind: ServiceErrorKind,
    status: Option<u16>,
    api_type: Option<ApiErrorType>,
    message: String,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    should_retry: Option<bool>,
    events_delivered: bool,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ServiceError {
    /// An error of the given kind with a message (key-shaped secrets redacted).
    pub fn new(kind: ServiceErrorKind, message: impl Into<String>) -> Self {
        ServiceError {
            kind,
            status: None,
            api_type: None,
            message: redact_string(message.into(), &KeyShapes),
            request_id: None,
            retry_after: None,
            should_retry: None,
            events_delivered: false,
            source: None,
        }
    }

    /// An error response from the API: its status, its envelope, and its `retry-after`.
    pub fn from_api_response(
        status: u16,
        body: ApiErrorResponse,
        retry_after: Option<Duration>,
    ) -> Self {
        ServiceError {
            status: Some(status),
            api_type: Some(redact_api_type(body.error.kind, &KeyShapes)),
            request_id: body.request_id.map(|id| redact_string(id, &KeyShapes)),
            retry_after,
            ..ServiceError::new(ServiceErrorKind::Api, body.error.message)
        }
    }

    /// A mid-stream `error` event (after a 200): the API's error type and message, no status.
    pub fn from_error_event(
        error: crate::api_error::ApiErrorBody,
        request_id: Option<String>,
    ) -> Self {
        ServiceError {
            api_type: Some(redact_api_type(error.kind, &KeyShapes)),
            request_id: request_id.map(|id| redact_string(id, &KeyShapes)),
            ..ServiceError::new(ServiceErrorKind::Api, error.message)
        }
    }

    /// Attaches the underlying cause. If any text of its chain holds a key-shaped secret, the
    /// chain is kept as redacted text instead (and can no longer be downcast).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(redact_error_chain(Box::new(source), &KeyShapes));
        self
    }

    /// This error with every text it holds passed through `redact`: the message, the request
    /// id, an unknown error type, and the `Display` and `Debug` of every cause (a cause whose
    /// texts change is replaced by its redacted text). A service that holds a credential
    /// calls this on every error it builds from what a server sent.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use threadline_wire::secret::{Redact, redact_exact};
    /// use threadline_wire::service::{ServiceError, ServiceErrorKind};
    ///
    /// struct Token;
    /// impl Redact for Token {
    ///     fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
    ///         redact_exact(text, b"proxy-token-0123456789")
    ///     }
    /// }
    /// let echoed = ServiceError::new(ServiceErrorKind::Api, "bad token proxy-token-0123456789");
    /// assert_eq!(echoed.redacted(&Token).message(), "bad token [redacted]");
    /// ```
    pub fn redacted(mut self, redact: &dyn Redact) -> Self {
        self.message = redact_string(self.message, redact);
        self.request_id = self.request_id.map(|id| redact_string(id, redact));
        self.api_type = self.api_type.map(|kind| redact_api_type(kind, redact));
        self.source = self.source.map(|source| redact_error_chain(source, redact));
        self
    }

    /// Records the server's `x-should-retry` header.
    pub fn with_should_retry(mut self, should_retry: bool) -> Self {
        self.should_retry = Some(should_retry);
        self
    }

    /// Records that events were already delivered to the caller when this happened: such a
    /// failure is never retried by resending the request, because output was already used.
    pub fn after_events(mut self) -> Self {
        self.events_delivered = true;
        self
    }

    /// Records the request id (key-shaped secrets redacted).
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(redact_string(request_id.into(), &KeyShapes));
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ServiceErrorKind {
        self.kind
    }

    /// The HTTP status, for API errors.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The API's error type, for API errors.
    pub fn api_error_type(&self) -> Option<&ApiErrorType> {
        self.api_type.as_ref()
    }

    /// The message (the API's own text for API errors). Not a stable interface.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The request id, when known.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// Whether events had already been delivered when this happened.
    pub fn events_delivered(&self) -> bool {
        self.events_delivered
    }

    /// Whether resending the same request may succeed: 408, 409, 429, 5xx and 529, connection
    /// failures and timeouts — but only before any event was delivered, and never when the
    /// server said `x-should-retry: false`.
    pub fn is_retryable(&self) -> bool {
        if self.events_delivered {
            return false;
        }
        if let Some(should) = self.should_retry {
            return should;
        }
        match self.kind {
            ServiceErrorKind::Connection | ServiceErrorKind::Timeout => true,
            ServiceErrorKind::Api => match self.status {
                Some(status) => matches!(status, 408 | 409 | 429) || status >= 500,
                // A mid-stream `error` event: overloads and internal errors are transient.
                None => matches!(
                    self.api_type,
                    Some(ApiErrorType::Overloaded | ApiErrorType::Api | ApiErrorType::RateLimit)
                ),
            },
            ServiceErrorKind::Truncated
            | ServiceErrorKind::Decode
            | ServiceErrorKind::MaxTokens => false,
        }
    }

    /// How long the server asked to wait (`retry-after`).
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether this is a rate limit (429).
    pub fn is_rate_limit(&self) -> bool {
        self.status == Some(429) || self.api_type == Some(ApiErrorType::RateLimit)
    }

    /// Whether the API is overloaded (529).
    pub fn is_overloaded(&self) -> bool {
        self.status == Some(529) || self.api_type == Some(ApiErrorType::Overloaded)
    }

    /// Whether the output was cut at `max_tokens`.
    pub fn is_max_tokens(&self) -> bool {
        self.kind == ServiceErrorKind::MaxTokens
    }

    /// For `prompt is too long: N tokens > M maximum`, the two counts `(N, M)`.
    pub fn prompt_too_long(&self) -> Option<(u64, u64)> {
        if self.kind != ServiceErrorKind::Api {
            return None;
        }
        parse_prompt_too_long(&self.message)
    }
}

fn redact_string(text: String, redact: &dyn Redact) -> String {
    match redact.redact(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(redacted) => redacted,
    }
}

fn redact_api_type(kind: ApiErrorType, redact: &dyn Redact) -> ApiErrorType {
    match kind {
        ApiErrorType::Other(text) => ApiErrorType::Other(redact_string(text, redact)),
        known => known,
    }
}

/// Parses `prompt is too long: 213462 tokens > 200000 maximum` into `(213462, 200000)`.
pub fn parse_prompt_too_long(message: &str) -> Option<(u64, u64)> {
    let rest = &message[message.find("prompt is too long:")? + "prompt is too long:".len()..];
    let mut numbers = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(str::parse::<u64>);
    let actual = numbers.next()?.ok()?;
    let maximum = numbers.next()?.ok()?;
    Some((actual, maximum))
}

impl fmt::Debug for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceError")
            .field("kind", &self.kind)
            .field("status", &self.status)
            .field("api_type", &self.api_type)
            .field("message", &self.message)
            .field("request_id", &self.request_id)
            .field("retry_after", &self.retry_after)
            .field("events_delivered", &self.events_delivered)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status, &self.api_type) {
            (Some(status), Some(kind)) => write!(f, "API error {status} {kind}: {}", self.message)?,
            (None, Some(kind)) => write!(f, "API error {kind} mid-stream: {}", self.message)?,
            _ => write!(f, "{:?}: {}", self.kind, self.message)?,
        }
        if let Some(id) = &self.request_id {
            write!(f, " (request {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ServiceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, kind: ApiErrorType, message: &str) -> ServiceError {
        ServiceError::from_api_response(status, ApiErrorResponse::new(kind, message), None)
    }

    #[test]
    fn retryability_by_status_and_delivery() {
        assert!(api(500, ApiErrorType::Api, "x").is_retryable());
        assert!(api(429, ApiErrorType::RateLimit, "x").is_retryable());
        assert!(!api(400, ApiErrorType::InvalidRequest, "x").is_retryable());
        assert!(
            !api(529, ApiErrorType::Overloaded, "x")
                .after_events()
                .is_retryable()
        );
        assert!(
            !api(500, ApiErrorType::Api, "x")
                .with_should_retry(false)
                .is_retryable()
        );
        assert!(ServiceError::new(ServiceErrorKind::Connection, "reset").is_retryable());
        assert!(!ServiceError::new(ServiceErrorKind::Truncated, "cut").is_retryable());
    }

    #[test]
    fn prompt_too_long_counts() {
        assert_eq!(
            parse_prompt_too_long("prompt is too long: 213462 tokens > 200000 maximum"),
            Some((213_462, 200_000))
        );
        assert_eq!(parse_prompt_too_long("prompt is too long"), None);
        assert_eq!(
            parse_prompt_too_long("prompt is too long: many tokens"),
            None
        );
        assert_eq!(
            api(400, ApiErrorType::InvalidRequest, "other").prompt_too_long(),
            None
        );
    }

    #[test]
    fn no_text_of_an_error_keeps_a_key_shaped_secret() {
        const KEY: &str = "sk-ant-api03-THEKEY-0123456789abcdef";
        let body: ApiErrorResponse = serde_json::from_value(serde_json::json!({
            "type": "error",
            "error": {"type": format!("weird_{KEY}"), "message": format!("invalid x-api-key: {KEY}")},
            "request_id": format!("req_{KEY}"),
        }))
        .expect("an envelope");
        let error = ServiceError::from_api_response(401, body, None)
            .with_source(std::io::Error::other(format!("echo {KEY}")));
        let event = ServiceError::from_error_event(
            ApiErrorResponse::new(ApiErrorType::Authentication, KEY).error,
            Some(KEY.to_owned()),
        );
        let plain =
            ServiceError::new(ServiceErrorKind::Connection, KEY).with_request_id(KEY.to_owned());
        for error in [error, event, plain] {
            let mut text = format!("{error}\n{error:?}\n{:?}", error.api_error_type());
            let mut source = std::error::Error::source(&error);
            while let Some(e) = source {
                text.push_str(&format!("\n{e}\n{e:?}"));
                source = e.source();
            }
            assert!(!text.contains("THEKEY"), "{text}");
            assert!(text.contains("sk-ant-…[redacted]"), "{text}");
        }
    }

    #[test]
    fn display_names_status_type_and_request() {
        let err = api(529, ApiErrorType::Overloaded, "Overloaded").with_request_id("req_1");
        assert_eq!(
            err.to_string(),
            "API error 529 overloaded_error: Overloaded (request req_1)"
        );
    }
}
