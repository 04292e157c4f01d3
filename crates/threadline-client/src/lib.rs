//! The Anthropic Messages API over HTTP, as threadline's [service contract]: a
//! `tower::Service` from a [`MessagesRequest`] to a stream of [`StreamEvent`]s.
//!
//! hyper 1 + hyper-util with rustls (the `ring` provider, webpki roots compiled in: no system
//! certificates needed), HTTP/1.1 and HTTP/2. The stack, outermost first:
//!
//! - [`concurrency`]: at most N requests in flight, streams included until they end;
//! - [`timeout::Deadline`]: the whole request, retries included, over by its last event within
//!   [`Timeouts::total`] (10 minutes by default), however often the server sends a `ping`;
//! - [`retry`]: resends 429, 5xx, 529, connection failures and timeouts — only before the
//!   first event, with exponential backoff and jitter, honouring `retry-after` and
//!   `x-should-retry`;
//! - [`timeout`]: the first event within a deadline, no gap between events longer than another
//!   (the connect timeout is the connector's);
//! - [`HttpTransport`]: one HTTP exchange (its body assembled from the serialized messages of
//!   the last requests, [`BodyFragments`]), the body decoded incrementally and yielded as it
//!   arrives.
//!
//! Over it, at the caller's choice, [`meter`]: a [`MeterLayer`] counting requests, tokens and
//! the cost by the model table into a shared [`Meter`].
//!
//! The same client speaks to Amazon Bedrock, Google Vertex AI and Microsoft Foundry
//! ([`Provider`], set with [`ClientConfig::with_provider`]): the platform's path, body fields,
//! credential ([`Auth::Aws`] signs each attempt with SigV4) and stream framing (Bedrock's AWS
//! event stream) are the provider's; the events, errors, retries and guarantees are the same.
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

pub mod body;
pub mod concurrency;
pub mod config;
mod events;
pub mod meter;
pub mod provider;
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

pub use body::BodyFragments;
pub use config::{ClientConfig, Limits, MAX_REQUEST_BYTES, RetryConfig, Timeouts};
pub use meter::{Meter, MeterLayer, MeterTotals, Metered};
pub use provider::{Platform, Provider};
pub use secret::{ApiKey, Auth, AwsCredentials, InvalidApiKey};
pub use threadline_wire::StreamEvent;
#[cfg(feature = "compact")]
pub use token_counter::ClientTokenCounter;
pub use transport::{BuildError, HttpTransport, messages_body};

/// The variable [`Client::from_env`] reads the API key from.
pub const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// The variable [`Client::from_env`] reads the base URL from (optional).
pub const BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";

/// [`Client::from_env`] could not make a client. No variant holds the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FromEnvError {
    /// `ANTHROPIC_API_KEY` is unset or blank.
    #[error("ANTHROPIC_API_KEY is not set")]
    MissingKey,
    /// `ANTHROPIC_API_KEY` is not a usable key.
    #[error("ANTHROPIC_API_KEY: {0}")]
    InvalidKey(#[source] InvalidApiKey),
    /// `ANTHROPIC_BASE_URL` is not UTF-8.
    #[error("ANTHROPIC_BASE_URL is not valid UTF-8")]
    BaseUrlNotUnicode,
    /// The client cannot be built (the base URL is not an absolute http(s) URL).
    #[error("ANTHROPIC_BASE_URL: {0}")]
    Build(#[source] BuildError),
}

type Stack = concurrency::ConcurrencyLimit<
    timeout::Deadline<tower::retry::Retry<retry::RetryPolicy, timeout::Timeout<HttpTransport>>>,
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
        let bounded = timeout::DeadlineLayer::new(config.timeouts.total).layer(retried);
        let stack =
            concurrency::ConcurrencyLimitLayer::new(config.max_concurrent_requests).layer(bounded);
        Ok(Client {
            stack,
            transport,
            config,
        })
    }

    /// A client for the API from the environment: the key from `ANTHROPIC_API_KEY`
    /// (required), the base URL from `ANTHROPIC_BASE_URL` when it is set and not blank
    /// (default [`config::DEFAULT_BASE_URL`]), every other setting the default.
    ///
    /// ```
    /// # // Not run against the real environment: the variables are the caller's.
    /// use threadline_client::{Client, FromEnvError};
    /// match Client::from_env() {
    ///     Ok(client) => println!("{}", client.config().base_url),
    ///     Err(FromEnvError::MissingKey) => eprintln!("set ANTHROPIC_API_KEY"),
    ///     Err(other) => eprintln!("{other}"),
    /// }
    /// ```
    pub fn from_env() -> Result<Self, FromEnvError> {
        let key = ApiKey::from_env(API_KEY_ENV)
            .map_err(FromEnvError::InvalidKey)?
            .ok_or(FromEnvError::MissingKey)?;
        let base_url = match std::env::var(BASE_URL_ENV) {
            Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
            Ok(_) | Err(std::env::VarError::NotPresent) => config::DEFAULT_BASE_URL.to_owned(),
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(FromEnvError::BaseUrlNotUnicode);
            }
        };
        Client::new(ClientConfig::new(base_url, Auth::ApiKey(key))).map_err(FromEnvError::Build)
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

    /// `POST /v1/messages/count_tokens` (not retried, not limited). The whole call, its
    /// answer's body included, is bounded by [`Timeouts::first_byte`](config::Timeouts) (or
    /// [`Timeouts::total`](config::Timeouts) when that is shorter): the answer is one small
    /// body, and a server that accepts the request and never answers must not hold the
    /// caller (a compaction waits on this count).
    pub async fn count_tokens(&self, request: &CountTokensRequest) -> Result<u64, ServiceError> {
        let timeouts = self.config.timeouts;
        let (phase, limit) = if timeouts.total < timeouts.first_byte {
            (timeout::TimeoutPhase::Total, timeouts.total)
        } else {
            (timeout::TimeoutPhase::FirstByte, timeouts.first_byte)
        };
        match tokio::time::timeout(limit, self.transport.count_tokens(request)).await {
            Ok(answer) => answer,
            Err(_) => Err(timeout::TimeoutError::new(phase, limit).into_service_error()),
        }
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

#[cfg(test)]
mod from_env_tests {
    use std::process::Command;

    use super::*;

    const CHILD: &str = "THREADLINE_CLIENT_FROM_ENV_CHILD";

    /// What `Client::from_env` and `ApiKey::from_env` make of the child's environment, as
    /// one line.
    fn describe() -> String {
        let key = match ApiKey::from_env(API_KEY_ENV) {
            Ok(Some(_)) => "some".to_owned(),
            Ok(None) => "none".to_owned(),
            Err(e) => format!("error({e})"),
        };
        let client = match Client::from_env() {
            Ok(client) => format!("ok({})", client.config().base_url),
            Err(FromEnvError::MissingKey) => "missing".to_owned(),
            Err(FromEnvError::InvalidKey(_)) => "invalid-key".to_owned(),
            Err(FromEnvError::Build(_)) => "bad-url".to_owned(),
            Err(other) => format!("other({other})"),
        };
        format!("key={key} client={client}")
    }

    /// The child's line for `envs` (every other `ANTHROPIC_*` variable removed).
    fn child(envs: &[(&str, &str)]) -> String {
        let exe = std::env::current_exe().expect("current exe");
        let output = Command::new(exe)
            .args([
                "from_env_tests::from_env_reads_the_key_and_the_base_url",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env_remove(API_KEY_ENV)
            .env_remove(BASE_URL_ENV)
            .envs(envs.iter().copied())
            .output()
            .expect("child runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        stdout
            .lines()
            .find_map(|line| line.split_once("RESULT ").map(|(_, r)| r.to_owned()))
            .unwrap_or_else(|| panic!("no result: {stdout}"))
    }

    #[test]
    fn from_env_reads_the_key_and_the_base_url() {
        if std::env::var_os(CHILD).is_some() {
            println!("RESULT {}", describe());
            return;
        }
        assert_eq!(child(&[]), "key=none client=missing");
        assert_eq!(child(&[(API_KEY_ENV, "  ")]), "key=none client=missing");
        assert_eq!(
            child(&[(API_KEY_ENV, "sk-ant-test")]),
            "key=some client=ok(https://api.anthropic.com)"
        );
        assert_eq!(
            child(&[
                (API_KEY_ENV, "sk-ant-test"),
                (BASE_URL_ENV, "http://127.0.0.1:9")
            ]),
            "key=some client=ok(http://127.0.0.1:9)"
        );
        assert_eq!(
            child(&[(API_KEY_ENV, "sk-ant-test"), (BASE_URL_ENV, "not a url")]),
            "key=some client=bad-url"
        );
        let bad = child(&[(API_KEY_ENV, "sk-ant-\u{7f}x")]);
        assert!(
            bad.starts_with("key=error(") && bad.ends_with("client=invalid-key"),
            "{bad}"
        );
        assert!(!bad.contains("sk-ant"), "the key is in no error: {bad}");
    }
}
