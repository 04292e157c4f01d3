//! The circuit breaker: stop compacting after repeated failures.
//!
//! A compaction that fails, or that does not make the context smaller, counts as a failure;
//! after [`CircuitBreaker::LIMIT`] in a row the breaker opens and the driver refuses to try
//! again until a compaction succeeds through another path (or the caller resets it), so a
//! session can never loop on compaction, spending a model call each time.
//!
//! The breaker is a value the caller owns and passes in (one per session): it is the only
//! state compaction keeps, and it is not derived from history because failures leave no
//! message behind.

/// Counts consecutive compaction failures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CircuitBreaker {
    consecutive_failures: u32,
}

impl CircuitBreaker {
    /// Failures in a row after which the breaker opens.
    pub const LIMIT: u32 = 3;

    /// A closed breaker.
    pub fn new() -> Self {
        CircuitBreaker::default()
    }

    /// A breaker that has seen `consecutive_failures` failures in a row (one restored from a
    /// session's state).
    pub fn with_failures(consecutive_failures: u32) -> Self {
        CircuitBreaker {
            consecutive_failures,
        }
    }

    /// Whether compaction must not be tried.
    pub fn is_open(&self) -> bool {
        self.consecutive_failures >= Self::LIMIT
    }

    /// Failures in a row so far.
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// Records a failed or non-shrinking compaction.
    pub fn record_failure(&mut self) {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
    }

    /// Records a compaction that made the context smaller.
    pub fn record_success(&mut self) {
        self.consecutive_failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_three_failures_in_a_row() {
        let mut breaker = CircuitBreaker::new();
        breaker.record_failure();
        breaker.record_failure();
        breaker.record_success();
        breaker.record_failure();
        breaker.record_failure();
        assert!(!breaker.is_open());
        breaker.record_failure();
        assert!(breaker.is_open());
    }
}
