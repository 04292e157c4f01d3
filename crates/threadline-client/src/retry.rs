//! The retry policy: which failures are resent and how long to wait, for `tower::retry`.
//!
//! A failed call is resent when [`ServiceError::is_retryable`] says so (429, 5xx, 529,
//! connection failures and timeouts before any event; never after `x-should-retry: false`) and
//! retries remain. Failures inside a stream are never resent: the transport answers a call only
//! once the first event has arrived, so by construction the retry layer sees only failures
//! before output. The wait honours `retry-after` up to
//! [`RetryConfig::max_retry_after`]; beyond it the error is returned at once (the server asked
//! for more patience than the caller allowed). Otherwise it is exponential with jitter.

use std::time::Duration;

use threadline_wire::MessagesRequest;
use threadline_wire::service::{EventStream, ServiceError};

use crate::config::RetryConfig;

/// The retry layer of the client's stack.
pub type RetryLayer = tower::retry::RetryLayer<RetryPolicy>;

/// A `tower::retry::Policy` over the service contract. Each request gets its own copy, so
/// the attempt count is per request.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    config: RetryConfig,
    attempts: u32,
}

impl RetryPolicy {
    /// A policy following `config`.
    pub fn new(config: RetryConfig) -> Self {
        RetryPolicy {
            config,
            attempts: 0,
        }
    }

    /// The layer applying this policy.
    pub fn layer(self) -> RetryLayer {
        tower::retry::RetryLayer::new(self)
    }

    /// The wait before retry number `attempt` (0-based) after `error`, or `None` to give up.
    pub fn backoff(&self, attempt: u32, error: &ServiceError) -> Option<Duration> {
        if let Some(after) = error.retry_after() {
            return (after <= self.config.max_retry_after).then_some(after);
        }
        let factor = 2u32.saturating_pow(attempt.min(20));
        let base = self
            .config
            .initial_backoff
            .saturating_mul(factor)
            .min(self.config.max_backoff);
        // `clamp` keeps NaN, and `mul_f64` panics on it: a NaN jitter is none.
        let jitter = match self.config.jitter {
            j if j.is_nan() => 0.0,
            j => j.clamp(0.0, 1.0),
        };
        Some(base.mul_f64(1.0 - jitter * fastrand::f64()))
    }
}

impl tower::retry::Policy<MessagesRequest, EventStream, ServiceError> for RetryPolicy {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _request: &mut MessagesRequest,
        result: &mut Result<EventStream, ServiceError>,
    ) -> Option<Self::Future> {
        let Err(error) = result else {
            return None;
        };
        if !error.is_retryable() || self.attempts >= self.config.max_retries {
            return None;
        }
        let wait = self.backoff(self.attempts, error)?;
        self.attempts += 1;
        tracing::warn!(
            attempt = self.attempts,
            of = self.config.max_retries,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "retrying the request"
        );
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, request: &MessagesRequest) -> Option<MessagesRequest> {
        Some(request.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::service::ServiceErrorKind;
    use threadline_wire::{ApiErrorResponse, ApiErrorType};

    #[test]
    fn backoff_grows_caps_and_honours_retry_after() {
        let config = RetryConfig::default()
            .with_backoff(Duration::from_millis(100), Duration::from_millis(350));
        let policy = RetryPolicy::new(RetryConfig {
            jitter: 0.0,
            ..config
        });
        let reset = ServiceError::new(ServiceErrorKind::Connection, "reset");
        let waits: Vec<_> = (0..4).map(|a| policy.backoff(a, &reset)).collect();
        assert_eq!(
            waits,
            [100, 200, 350, 350].map(|ms| Some(Duration::from_millis(ms)))
        );
        let limited = ServiceError::from_api_response(
            429,
            ApiErrorResponse::new(ApiErrorType::RateLimit, "slow down"),
            Some(Duration::from_secs(3)),
        );
        assert_eq!(policy.backoff(0, &limited), Some(Duration::from_secs(3)));
        let too_long = ServiceError::from_api_response(
            429,
            ApiErrorResponse::new(ApiErrorType::RateLimit, "slow down"),
            Some(Duration::from_secs(3600)),
        );
        assert_eq!(policy.backoff(0, &too_long), None);
    }

    #[test]
    fn a_nan_jitter_is_no_jitter() {
        let policy = RetryPolicy::new(RetryConfig {
            jitter: f64::NAN,
            ..RetryConfig::default()
        });
        let reset = ServiceError::new(ServiceErrorKind::Connection, "reset");
        let base = RetryPolicy::new(RetryConfig {
            jitter: 0.0,
            ..RetryConfig::default()
        })
        .backoff(1, &reset);
        assert_eq!(policy.backoff(1, &reset), base);
    }

    #[test]
    fn jitter_only_shortens() {
        let policy = RetryPolicy::new(RetryConfig::default());
        let reset = ServiceError::new(ServiceErrorKind::Connection, "reset");
        for _ in 0..100 {
            let wait = policy.backoff(1, &reset).expect("retryable");
            assert!(wait <= Duration::from_secs(1) && wait >= Duration::from_millis(750));
        }
    }
}
