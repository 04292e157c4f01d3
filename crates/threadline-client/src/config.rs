//! The client's settings: where to send requests, how long to wait, how often to retry.

use std::time::Duration;

use crate::secret::Auth;

/// The API's production base URL (the workspace default, `threadline_wire::defaults`).
pub use threadline_wire::defaults::DEFAULT_BASE_URL;
/// The `anthropic-version` header value.
pub const DEFAULT_API_VERSION: &str = "2023-06-01";

/// Everything the client needs to know. Build it with [`ClientConfig::new`] and the `with_*`
/// methods; every knob has a default suited to the real API.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Scheme, host, port and optional path prefix (`https://api.anthropic.com`,
    /// `http://127.0.0.1:8080`, a proxy). `/v1/messages` is appended.
    pub base_url: String,
    /// The credential.
    pub auth: Auth,
    /// `anthropic-version`.
    pub api_version: String,
    /// `anthropic-beta` values, joined with commas when sent.
    pub betas: Vec<String>,
    /// The timeouts.
    pub timeouts: Timeouts,
    /// The retry policy.
    pub retry: RetryConfig,
    /// How many requests may be in flight at once (streams included, until they end).
    pub max_concurrent_requests: usize,
    /// Bounds on what a response may make the client hold.
    pub limits: Limits,
    /// Speak HTTP/2 without negotiating it (for `http://` servers that support it, such as
    /// the mock). Over `https://`, HTTP/2 or HTTP/1.1 is negotiated with ALPN either way.
    pub http2_prior_knowledge: bool,
    /// The platform the requests go to (the Claude API by default): its paths, body fields,
    /// credential and stream framing ([`Provider`](crate::Provider)).
    pub provider: crate::provider::Provider,
}

/// How long the client waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// Establishing the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to the response's first event (or its error body).
    pub first_byte: Duration,
    /// The longest gap between two events of a stream.
    pub idle: Duration,
    /// The longest a whole request may take, from the call to its last event, retries and
    /// their waits included (default 10 minutes): a server that keeps a stream alive with a
    /// `ping` every few minutes cannot hold the caller forever. This default is the one the
    /// command line uses unless `threadline run --request-timeout` overrides it.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(600),
            idle: Duration::from_secs(300),
            total: Duration::from_secs(600),
        }
    }
}

/// When and how the client retries a failed request.
///
/// A request is retried when its error says so ([`ServiceError::is_retryable`]): 408, 409, 429,
/// 5xx and 529, connection failures and timeouts, but only before any event was delivered and
/// never when the server sent `x-should-retry: false`. The wait honours `retry-after`
/// (`retry-after-ms` too); otherwise it is exponential from `initial_backoff`, capped at
/// `max_backoff`, with jitter that shortens it by up to `jitter` (a fraction).
///
/// [`ServiceError::is_retryable`]: threadline_wire::service::ServiceError::is_retryable
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The first wait.
    pub initial_backoff: Duration,
    /// The longest computed wait.
    pub max_backoff: Duration,
    /// The fraction (0.0–1.0) by which jitter may shorten a wait.
    pub jitter: f64,
    /// A `retry-after` longer than this is not waited for: the error is returned instead.
    pub max_retry_after: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            jitter: 0.25,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryConfig {
    /// No retries at all.
    pub fn none() -> Self {
        RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        }
    }

    /// This policy with another number of retries.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// This policy with other backoff bounds.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// This policy with another cap on `retry-after`.
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }
}

/// The API's limit on a request body: 32 MiB.
pub const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;

/// Bounds on what one response may make the client hold or read, and on the body it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest single SSE event (default 16 MiB).
    pub max_event_bytes: usize,
    /// The most bytes one response body may have (default 256 MiB).
    pub max_response_bytes: u64,
    /// The most bytes of an error body that are read (default 64 KiB).
    pub max_error_body_bytes: usize,
    /// The largest request body sent (default 32 MiB, the API's limit): a larger one is not
    /// sent and fails as the API would answer it, 413 `request_too_large`
    /// ([`ServiceError::is_request_too_large`](threadline_wire::service::ServiceError::is_request_too_large)),
    /// which the query loop recovers by compacting.
    pub max_request_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_event_bytes: threadline_wire::sse::DEFAULT_MAX_EVENT_SIZE,
            max_response_bytes: 256 * 1024 * 1024,
            max_error_body_bytes: 64 * 1024,
            max_request_bytes: MAX_REQUEST_BYTES,
        }
    }
}

impl ClientConfig {
    /// Settings for `base_url` with `auth` and every default.
    pub fn new(base_url: impl Into<String>, auth: Auth) -> Self {
        ClientConfig {
            base_url: base_url.into(),
            auth,
            api_version: DEFAULT_API_VERSION.to_owned(),
            betas: Vec::new(),
            timeouts: Timeouts::default(),
            retry: RetryConfig::default(),
            max_concurrent_requests: 64,
            limits: Limits::default(),
            http2_prior_knowledge: false,
            provider: crate::provider::Provider::Anthropic,
        }
    }

    /// These settings for another platform (the base URL stays: set it with
    /// [`with_base_url`](Self::with_base_url), e.g. to
    /// [`Provider::default_base_url`](crate::Provider::default_base_url)).
    pub fn with_provider(mut self, provider: crate::provider::Provider) -> Self {
        self.provider = provider;
        self
    }

    /// These settings speaking HTTP/2 from the first byte (no HTTP/1.1 fallback).
    pub fn with_http2_prior_knowledge(mut self, on: bool) -> Self {
        self.http2_prior_knowledge = on;
        self
    }

    /// These settings with another base URL.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// These settings with another credential.
    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// These settings with one more `anthropic-beta` value.
    pub fn with_beta(mut self, beta: impl Into<String>) -> Self {
        self.betas.push(beta.into());
        self
    }

    /// These settings with other connect, first-event and idle timeouts (the total deadline
    /// is kept: [`with_total_timeout`](Self::with_total_timeout)).
    pub fn with_timeouts(
        mut self,
        connect: Duration,
        first_byte: Duration,
        idle: Duration,
    ) -> Self {
        self.timeouts = Timeouts {
            connect,
            first_byte,
            idle,
            total: self.timeouts.total,
        };
        self
    }

    /// These settings with another deadline for a whole request ([`Timeouts::total`]).
    pub fn with_total_timeout(mut self, total: Duration) -> Self {
        self.timeouts.total = total;
        self
    }

    /// These settings with another retry policy.
    pub fn with_retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// These settings with another concurrency limit (at least 1).
    pub fn with_max_concurrent_requests(mut self, max: usize) -> Self {
        self.max_concurrent_requests = max.max(1);
        self
    }

    /// These settings with other response bounds.
    pub fn with_limits(mut self, max_event_bytes: usize, max_response_bytes: u64) -> Self {
        self.limits.max_event_bytes = max_event_bytes;
        self.limits.max_response_bytes = max_response_bytes;
        self
    }

    /// These settings with another bound on the request body sent (default
    /// [`MAX_REQUEST_BYTES`], the API's).
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_request_bytes = bytes;
        self
    }
}
