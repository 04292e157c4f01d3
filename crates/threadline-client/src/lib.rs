//! The Anthropic Messages API over HTTP, as threadline's [service contract]: a
//! `tower::Service` from a [`MessagesRequest`] to a stream of [`StreamEvent`]s.
//!
//! hyper 1 + hyper-util with rustls (the `ring` provider, webpki roots compiled in: no system
//! certificates needed), HTTP/1.1 and HTTP/2. The stack, outermost first:
//!
//! - [`concurrency`]: at most N requests in flight, streams included until they end;
//! - [`retry`]: resends 429, 5xx, 529, connection failures and timeouts — only before the
//!   first event, with exponential backoff and jitter, honouring `retry-after` and
//!   `x-should-retry`;
//! - [`timeout`]: the first event within a deadline, no gap between events longer than another
//!   (the connect timeout is the connector's);
//! - [`HttpTransport`]: one HTTP exchange, the body decoded incrementally and yielded as it
//!   arrives.
//!
//! The API key never appears in logs, `Debug`, `Display` or errors ([`ApiKey`]), not even when
//! a server echoes it back: every error built from a response, a header or a transport
//! failure has the key (and any `sk-ant-` shaped secret) redacted before it is logged or
//! returned, and so have the server-sent values recorded in the span. Every request
//! runs in a `tracing` span `anthropic.messages` whose attributes carry the OpenTelemetry
//! GenAI names ([`threadline_wire::telemetry`]): `gen_ai.provider.name`,
//! `gen_ai.request.model`, `http.response.status_code`, `anthropic.request_id`,
//! `gen_ai.response.id`, `gen_ai.response.finish_reasons`, the `gen_ai.usage.*` token counts
//! (input counting cache reads and writes) and `error.type` (an error class, never its text).
//! Message content and the key are never recorded. Under the query loop this span is a child
//! of the loop's `chat` span, the GenAI inference span.
//!
//! ```no_run
//! use futures::StreamExt;
//! use threadline_client::{ApiKey, Auth, Client, ClientConfig};
//! use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let key = ApiKey::new(&std::env::var("ANTHROPIC_API_KEY")?)?;
//! let client = Client::new(ClientConfig::new("https://api.anthropic.com", Auth::ApiKey(key)))?;
//! let request = MessagesRequest::new(
//!     "claude-sonnet-4-6",
//!     1024,
//!     vec![MessageParam::user(vec![ContentBlock::text("Hello")])],
//! );
//! let mut events = client.stream(request).await?;
//! while let Some(event) = events.next().await {
//!     println!("{}", event?.tag());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! [service contract]: threadline_wire::service
#![forbid(unsafe_code)]

pub mod concurrency;
pub mod config;
mod events;
pub mod retry;
mod secret;
pub mod timeout;
#[cfg(feature = "compact")]
mod token_counter;
mod transport;

use std::task::{Context, Poll};

use threadline_wire::service::{
    CountFuture, CountTokens, EventStream, EventStreamFuture, ServiceError,
};
use threadline_wire::{CountTokensRequest, MessagesRequest, ResponseMessage};
use tower_layer::Layer;

pub use config::{ClientConfig, Limits, RetryConfig, Timeouts};
pub use secret::{ApiKey, Auth, InvalidApiKey};
pub use threadline_wire::StreamEvent;
#[cfg(feature = "compact")]
pub use token_counter::ClientTokenCounter;
pub use transport::{BuildError, HttpTransport};

type Stack = concurrency::ConcurrencyLimit<
    tower::retry::Retry<retry::RetryPolicy, timeout::Timeout<HttpTransport>>,
>;

/// The client: the whole stack, cheap to clone (clones share the connection pool and the
/// concurrency slots).
#[derive(Clone)]
pub struct Client {
    stack: Stack,
    transport: HttpTransport,
    config: ClientConfig,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `config`. Calls need a Tokio runtime (with the time driver).
    pub fn new(config: ClientConfig) -> Result<Self, BuildError> {
        let transport = HttpTransport::new(&config)?;
        let timed = timeout::TimeoutLayer::new(config.timeouts.first_byte, config.timeouts.idle)
            .layer(transport.clone());
        let retried = retry::RetryPolicy::new(config.retry).layer().layer(timed);
        let stack =
            concurrency::ConcurrencyLimitLayer::new(config.max_concurrent_requests).layer(retried);
        Ok(Client {
            stack,
            transport,
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Sends `request` (streamed) and returns its events once the first has arrived.
    pub async fn stream(&self, request: MessagesRequest) -> Result<EventStream, ServiceError> {
        let mut stack = self.stack.clone();
        tower_service::Service::call(&mut stack, request).await
    }

    /// Sends `request` and accumulates the whole message.
    pub async fn message(&self, request: MessagesRequest) -> Result<ResponseMessage, ServiceError> {
        let stream = self.stream(request).await?;
        collect_message(stream)
            .await
            .map_err(|e| self.transport.redactor().error(e))
    }

    /// `POST /v1/messages/count_tokens` (not retried, not limited).
    pub async fn count_tokens(&self, request: &CountTokensRequest) -> Result<u64, ServiceError> {
        self.transport.count_tokens(request).await
    }
}

/// Folds an event stream into its message: the workspace's one fold,
/// [`threadline_wire::service::collect_message`] (a stream that breaks the protocol is a
/// `Decode` error, an `error` event the API's error, one that ends incomplete `Truncated`).
pub async fn collect_message(stream: EventStream) -> Result<ResponseMessage, ServiceError> {
    threadline_wire::service::collect_message(stream).await
}

/// The service contract's exact count: [`Client::count_tokens`] (not retried, not limited).
impl CountTokens for Client {
    fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_> {
        Box::pin(async move { Client::count_tokens(self, &request).await })
    }
}

impl tower_service::Service<MessagesRequest> for Client {
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        tower_service::Service::poll_ready(&mut self.stack, cx)
    }

    fn call(&mut self, request: MessagesRequest) -> Self::Future {
        tower_service::Service::call(&mut self.stack, request)
    }
}
