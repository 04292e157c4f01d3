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

use crate::accumulate::{AccumulateError, MessageAccumulator, StreamIncomplete};
use crate::api_error::{ApiErrorResponse, ApiErrorType};
use crate::request::{CountTokensRequest, MessagesRequest};
use crate::response::ResponseMessage;
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

/// The boxed future of a [`CountTokens`] call: the input tokens, as the API counts them.
pub type CountFuture<'a> =
    Pin<Box<dyn std::future::Future<Output = Result<u64, ServiceError>> + Send + 'a>>;

/// The API's exact token count (`POST /v1/messages/count_tokens`), the second half of the
/// service contract beside [`MessagesService`].
///
/// The HTTP client implements it; compaction asks it when an estimate is too close to a
/// threshold to trust (`threadline_compact::count_or_estimate`), and falls back to the
/// estimate ([`crate::tokens`]) when it fails. A counter costs a round trip and has its own
/// rate limits, so nothing counts unless one is given.
///
/// ```
/// use threadline_wire::service::{CountFuture, CountTokens};
/// use threadline_wire::{ContentBlock, CountTokensRequest, MessageParam, MessagesRequest};
///
/// /// Answers with the number of messages, for a test.
/// struct ByMessages;
///
/// impl CountTokens for ByMessages {
///     fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_> {
///         Box::pin(std::future::ready(Ok(request.messages.len() as u64)))
///     }
/// }
///
/// let request = MessagesRequest::new("m", 1, vec![MessageParam::user(vec![ContentBlock::text("hi")])]);
/// let counted = futures::executor::block_on(ByMessages.count_tokens((&request).into()));
/// assert_eq!(counted.ok(), Some(1));
/// ```
pub trait CountTokens {
    /// The input tokens of `request`, as the API counts them.
    fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_>;
}

impl<T: CountTokens + ?Sized> CountTokens for std::sync::Arc<T> {
    fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_> {
        (**self).count_tokens(request)
    }
}

impl<T: CountTokens + ?Sized> CountTokens for &T {
    fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_> {
        (**self).count_tokens(request)
    }
}

/// Folds a stream of events into its message: the one fold every consumer of a
/// [`MessagesService`] uses (the client's `message`, the compaction's summary call, the durable
/// worker's journaled model step). The query loop, which acts on each block as it completes,
/// drives the same [`MessageAccumulator`] and reports its failures with the same
/// [`ServiceError::from_accumulate`] and [`ServiceError::from_incomplete`].
///
/// Reading stops at `message_stop` (the message is complete; whatever follows is no part of
/// it). A stream item that is an error is returned as it is; an `error` event is the API's
/// error ([`ServiceError::from_error_event`]); any other broken rule of the protocol is a
/// [`Decode`](ServiceErrorKind::Decode) error, and a stream that ends before the message is
/// complete a [`Truncated`](ServiceErrorKind::Truncated) one, both marked as after events
/// (not retryable). The message is bounded by [`DEFAULT_MAX_MESSAGE_BYTES`].
///
/// [`DEFAULT_MAX_MESSAGE_BYTES`]: crate::accumulate::DEFAULT_MAX_MESSAGE_BYTES
pub async fn collect_message<S>(stream: S) -> Result<ResponseMessage, ServiceError>
where
    S: Stream<Item = Result<StreamEvent, ServiceError>>,
{
    collect_message_bounded(stream, crate::accumulate::DEFAULT_MAX_MESSAGE_BYTES).await
}

/// [`collect_message`] with a bound of `max_message_bytes` on the accumulated message.
pub async fn collect_message_bounded<S>(
    stream: S,
    max_message_bytes: usize,
) -> Result<ResponseMessage, ServiceError>
where
    S: Stream<Item = Result<StreamEvent, ServiceError>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut accumulator = MessageAccumulator::with_max_message_bytes(max_message_bytes);
    while !accumulator.is_stopped() {
        let Some(event) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await else {
            break;
        };
        accumulator
            .push(&event?)
            .map_err(ServiceError::from_accumulate)?;
    }
    accumulator.finish().map_err(ServiceError::from_incomplete)
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
///
/// Its text (`Display`, [`message`](Self::message)) may quote what the server wrote — an
/// error message, an unknown type's name, a request id — unescaped: it is the server's, kept
/// exact. Escape it before a terminal shows it, as the `threadline` command line does; a key
/// it held is already redacted by the client.
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
    /// A stream that broke the protocol, as every consumer reports it: an `error` event is
    /// the API's error ([`ServiceError::from_error_event`]), anything else a
    /// [`Decode`](ServiceErrorKind::Decode) error; after events either way.
    pub fn from_accumulate(error: AccumulateError) -> Self {
        match error {
            AccumulateError::Api { error, request_id } => {
                ServiceError::from_error_event(error, request_id).after_events()
            }
            other => ServiceError::new(ServiceErrorKind::Decode, other.to_string())
                .with_source(other)
                .after_events(),
        }
    }

    /// A stream that ended before its message was complete: a
    /// [`Truncated`](ServiceErrorKind::Truncated) error, after events.
    pub fn from_incomplete(incomplete: StreamIncomplete) -> Self {
        ServiceError::new(ServiceErrorKind::Truncated, incomplete.to_string())
            .with_source(incomplete)
            .after_events()
    }

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

    /// Whether the API refused the request because the prompt is too long (`prompt is too
    /// long`, with or without the token counts): the one place that recognizes the API's
    /// wording. Only an API error qualifies; a connection, timeout or decoding failure whose
    /// text happens to contain the words does not.
    pub fn is_prompt_too_long(&self) -> bool {
        self.kind == ServiceErrorKind::Api && mentions_prompt_too_long(&self.message)
    }

    /// Whether the API refused the request for its body's size: a 413 or an error of type
    /// `request_too_large` (the body over the API's 32 MB).
    pub fn is_request_too_large(&self) -> bool {
        self.kind == ServiceErrorKind::Api
            && (self.status == Some(413)
                || matches!(self.api_error_type(), Some(ApiErrorType::RequestTooLarge)))
    }

    /// Whether the API refused a thinking block as bound to a different conversation (on a
    /// model that binds thinking to its prefix, after something before the block changed):
    /// the one place that recognizes the API's wording.
    pub fn is_thinking_bound_elsewhere(&self) -> bool {
        self.kind == ServiceErrorKind::Api && self.message.contains(BOUND_ELSEWHERE)
    }

    /// Whether the request was refused for its size, in tokens
    /// ([`is_prompt_too_long`](Self::is_prompt_too_long)) or in bytes
    /// ([`is_request_too_large`](Self::is_request_too_large)): what compaction answers.
    pub fn is_too_large(&self) -> bool {
        self.is_prompt_too_long() || self.is_request_too_large()
    }

    /// For `prompt is too long: N tokens > M maximum`, the two counts `(N, M)`; `None` when
    /// the error is not [`is_prompt_too_long`](Self::is_prompt_too_long) or gives no counts.
    pub fn prompt_too_long(&self) -> Option<(u64, u64)> {
        if !self.is_prompt_too_long() {
            return None;
        }
        parse_prompt_too_long(&self.message)
    }
}

/// The API's wording of a prompt over the context window.
const PROMPT_TOO_LONG: &str = "prompt is too long";

/// The API's wording of a thinking block whose prefix changed.
const BOUND_ELSEWHERE: &str = "The block is bound to a different conversation";

fn mentions_prompt_too_long(message: &str) -> bool {
    message.contains(PROMPT_TOO_LONG)
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
    let start = message.find(PROMPT_TOO_LONG)? + PROMPT_TOO_LONG.len();
    let rest = message[start..].strip_prefix(':')?;
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

    fn sse_events(json: &[serde_json::Value]) -> Vec<Result<StreamEvent, ServiceError>> {
        json.iter()
            .map(|v| Ok(serde_json::from_value(v.clone()).expect("an event")))
            .collect()
    }

    fn start() -> serde_json::Value {
        serde_json::json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 1}}})
    }

    #[test]
    fn the_fold_stops_at_message_stop_and_maps_each_failure() {
        use futures::executor::block_on;
        use serde_json::json;
        let text = [
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
            json!({"type": "message_stop"}),
        ];
        // Whatever follows `message_stop` is not read.
        let mut events = sse_events(&text);
        events.push(Err(ServiceError::new(
            ServiceErrorKind::Connection,
            "reset",
        )));
        let message = block_on(collect_message(futures::stream::iter(events))).expect("complete");
        assert_eq!(message.text(), "Hi");

        // A stream error is returned as it is.
        let mut events = sse_events(&text[..2]);
        events.push(Err(ServiceError::new(ServiceErrorKind::Timeout, "idle")));
        let error = block_on(collect_message(futures::stream::iter(events))).expect_err("timeout");
        assert_eq!(error.kind(), ServiceErrorKind::Timeout);

        // An `error` event is the API's error (here: retryable overload, but after events).
        let mut events = sse_events(&text[..2]);
        events.extend(sse_events(&[json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]));
        let error =
            block_on(collect_message(futures::stream::iter(events))).expect_err("error event");
        assert_eq!(error.kind(), ServiceErrorKind::Api);
        assert!(error.is_overloaded() && error.events_delivered());

        // A broken rule is Decode; an early end Truncated; both after events.
        let broken = sse_events(&[text[2].clone()]);
        let error = block_on(collect_message(futures::stream::iter(broken))).expect_err("decode");
        assert_eq!(error.kind(), ServiceErrorKind::Decode);
        assert!(!error.is_retryable());
        let cut = sse_events(&text[..3]);
        let error = block_on(collect_message(futures::stream::iter(cut))).expect_err("cut");
        assert_eq!(error.kind(), ServiceErrorKind::Truncated);
        assert!(!error.is_retryable());

        // The bound holds.
        let error = block_on(collect_message_bounded(
            futures::stream::iter(sse_events(&text)),
            1,
        ))
        .expect_err("over the bound");
        assert_eq!(error.kind(), ServiceErrorKind::Decode);
    }

    #[test]
    fn a_thinking_block_bound_elsewhere_is_recognized_by_the_apis_words() {
        let refused = api(
            400,
            ApiErrorType::InvalidRequest,
            "messages.2.content.0: Invalid `signature` in `thinking` block. The block is bound \
             to a different conversation. Remove the block, or set \
             `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".",
        );
        assert!(refused.is_thinking_bound_elsewhere());
        let tampered = api(
            400,
            ApiErrorType::InvalidRequest,
            "messages.1.content.0: Invalid `signature` in `thinking` block",
        );
        assert!(!tampered.is_thinking_bound_elsewhere());
        let local = ServiceError::new(
            ServiceErrorKind::Connection,
            "The block is bound to a different conversation",
        );
        assert!(!local.is_thinking_bound_elsewhere());
    }

    #[test]
    fn a_body_over_the_limit_is_too_large_but_not_too_long() {
        let body = api(
            413,
            ApiErrorType::RequestTooLarge,
            "Request exceeds the maximum allowed number of bytes.",
        );
        assert!(body.is_request_too_large() && body.is_too_large());
        assert!(!body.is_prompt_too_long());
        assert_eq!(body.prompt_too_long(), None);
        let tokens = api(400, ApiErrorType::InvalidRequest, "prompt is too long");
        assert!(tokens.is_too_large() && !tokens.is_request_too_large());
        let other = api(
            400,
            ApiErrorType::InvalidRequest,
            "messages: at least one message",
        );
        assert!(!other.is_too_large());
        let local = ServiceError::new(ServiceErrorKind::Connection, "request_too_large 413");
        assert!(!local.is_too_large());
    }

    #[test]
    fn prompt_too_long_is_an_api_error_with_or_without_counts() {
        let counted = api(
            400,
            ApiErrorType::InvalidRequest,
            "prompt is too long: 213462 tokens > 200000 maximum",
        );
        assert!(counted.is_prompt_too_long());
        assert_eq!(counted.prompt_too_long(), Some((213_462, 200_000)));
        // Reworded (the counts replaced): still recognized, no counts.
        let bare = api(400, ApiErrorType::InvalidRequest, "prompt is too long");
        assert!(bare.is_prompt_too_long());
        assert_eq!(bare.prompt_too_long(), None);
        // Mid-stream error events are API errors too.
        let event = ServiceError::from_error_event(
            ApiErrorResponse::new(
                ApiErrorType::InvalidRequest,
                "prompt is too long: 5 tokens > 4 maximum",
            )
            .error,
            None,
        );
        assert_eq!(event.prompt_too_long(), Some((5, 4)));
        // A local failure whose text mentions the words is not the API's refusal.
        for kind in [
            ServiceErrorKind::Connection,
            ServiceErrorKind::Timeout,
            ServiceErrorKind::Truncated,
            ServiceErrorKind::Decode,
            ServiceErrorKind::MaxTokens,
        ] {
            let local = ServiceError::new(kind, "prompt is too long: 5 tokens > 4 maximum");
            assert!(!local.is_prompt_too_long(), "{kind:?}");
            assert_eq!(local.prompt_too_long(), None);
        }
        assert!(!api(400, ApiErrorType::InvalidRequest, "prompt is long").is_prompt_too_long());
    }

    proptest::proptest! {
        /// Hostile texts: nothing panics; counts are given only for a recognized refusal; the
        /// wording anywhere in an API error's text is recognized, and only there.
        #[test]
        fn prompt_too_long_on_hostile_texts(
            before in ".{0,40}",
            after in ".{0,40}",
            actual in proptest::prelude::any::<u64>(),
            maximum in proptest::prelude::any::<u64>(),
            noise in "(prompt is too long|prompt is too long:|too long|: | tokens > | maximum|[0-9]{1,25}|sk-ant-|x|\\PC){0,8}",
        ) {
            let noisy = api(400, ApiErrorType::InvalidRequest, &noise);
            // What the error holds is the text with key shapes redacted.
            proptest::prop_assert_eq!(noisy.is_prompt_too_long(), noisy.message().contains(PROMPT_TOO_LONG));
            if noisy.prompt_too_long().is_some() {
                proptest::prop_assert!(noisy.is_prompt_too_long());
            }
            let text = format!("{before}prompt is too long: {actual} tokens > {maximum} maximum{after}");
            let error = api(400, ApiErrorType::InvalidRequest, &text);
            proptest::prop_assert!(error.is_prompt_too_long());
            if !before.contains(PROMPT_TOO_LONG) {
                proptest::prop_assert_eq!(error.prompt_too_long(), Some((actual, maximum)));
            }
            let local = ServiceError::new(ServiceErrorKind::Connection, &text);
            proptest::prop_assert!(!local.is_prompt_too_long());
            proptest::prop_assert_eq!(local.prompt_too_long(), None);
        }
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
