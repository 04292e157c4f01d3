//! Reactive compact: the API said the prompt is too long; compact once, then retry.
//!
//! The estimate can be wrong (a new tokenizer, large images): the API's error names the true
//! count and the limit (`prompt is too long: 213462 tokens > 200000 maximum`). The compaction
//! then aims below the limit *corrected by how far the estimate was off*, so the retry fits
//! even when the estimate undercounts. One reactive compaction per turn: if the retried
//! request is refused again, the error is reported to the user instead of compacting in a
//! loop ([`ReactiveGuard`]).

use threadline_message::{CompactTrigger, Message};
use threadline_wire::service::ServiceError;

use crate::autocompact::{
    AutocompactError, AutocompactOptions, CompactContext, Compacted, autocompact, overhead_of,
};
use crate::breaker::CircuitBreaker;
use crate::estimate::estimate_context;
use crate::summarizer::Summarizer;

/// Remembers whether the current turn already compacted reactively.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReactiveGuard {
    compacted_this_turn: bool,
}

impl ReactiveGuard {
    /// A guard for a new session.
    pub fn new() -> Self {
        ReactiveGuard::default()
    }

    /// A new turn begins: one reactive compaction is allowed again.
    pub fn new_turn(&mut self) {
        self.compacted_this_turn = false;
    }

    /// Whether this turn already compacted reactively.
    pub fn compacted_this_turn(&self) -> bool {
        self.compacted_this_turn
    }
}

/// Why reactive compact did not produce a retryable array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReactiveError {
    /// The error was not `prompt is too long`.
    #[error("not a prompt-too-long error")]
    NotPromptTooLong,
    /// This turn already compacted once and the prompt is still too long: report it.
    #[error("the prompt is still too long after compacting ({actual:?} tokens > {limit:?})")]
    StillTooLongAfterCompaction {
        /// The tokens the API counted, when it said.
        actual: Option<u64>,
        /// The limit, when it said.
        limit: Option<u64>,
    },
    /// The compaction failed.
    #[error("reactive compaction failed: {0}")]
    Compaction(#[from] AutocompactError),
}

impl ReactiveError {
    /// Whether the turn must end with the error shown to the user (no retry will help).
    pub fn is_terminal(&self) -> bool {
        !matches!(self, ReactiveError::NotPromptTooLong)
    }
}

/// `None` when `error` is not a refusal for size (prompt too long, or a body over the API's
/// limit); otherwise its token counts, when the message gives them.
fn prompt_too_long(error: &ServiceError) -> Option<Option<(u64, u64)>> {
    error.is_too_large().then(|| error.prompt_too_long())
}

/// The limit the compaction must get under: `limit` (the autocompact threshold), or lower
/// when the API counted `actual` tokens against its `maximum` for a context estimated at
/// `estimated` (the estimate's shortfall is taken off the maximum).
pub fn reactive_limit(limit: u64, estimated: u64, actual: u64, maximum: u64) -> u64 {
    let shortfall = actual.saturating_sub(estimated);
    limit.min(maximum.saturating_sub(shortfall))
}

/// Handles a prompt-too-long `error` for the request built from `history`: compacts once per
/// turn (trigger `reactive`) and returns the array to retry with.
pub async fn reactive_compact(
    history: &[Message],
    error: &ServiceError,
    summarizer: &dyn Summarizer,
    context: &CompactContext<'_>,
    options: &AutocompactOptions,
    breaker: &mut CircuitBreaker,
    guard: &mut ReactiveGuard,
) -> Result<Compacted, ReactiveError> {
    let Some(counts) = prompt_too_long(error) else {
        return Err(ReactiveError::NotPromptTooLong);
    };
    if guard.compacted_this_turn {
        return Err(ReactiveError::StillTooLongAfterCompaction {
            actual: counts.map(|c| c.0),
            limit: counts.map(|c| c.1),
        });
    }
    guard.compacted_this_turn = true;
    let limit = match counts {
        Some((actual, maximum)) => reactive_limit(
            context.limit,
            estimate_context(history, overhead_of(context.base)),
            actual,
            maximum,
        ),
        None => context.limit,
    };
    let reactive = CompactContext {
        limit,
        trigger: CompactTrigger::Reactive,
        ..*context
    };
    Ok(autocompact(history, summarizer, &reactive, options, breaker).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::send_check::{self, assert_send, empty_base};
    use crate::summarizer::{ScriptedSummarizer, Summarizer};

    /// Compile-time: the driver's future is `Send` (it can be awaited inside the query loop's
    /// `Send` hooks). The future is never polled.
    #[test]
    fn the_reactive_compact_future_is_send() {
        let base = empty_base();
        let context = send_check::context(&base);
        let error = ServiceError::from_api_response(
            400,
            threadline_wire::ApiErrorResponse::new(
                threadline_wire::api_error::ApiErrorType::InvalidRequest,
                "prompt is too long: 213462 tokens > 200000 maximum",
            ),
            None,
        );
        let scripted = ScriptedSummarizer::new([]);
        let summarizer: &dyn Summarizer = &scripted;
        let options = AutocompactOptions::default();
        let mut breaker = CircuitBreaker::new();
        let mut guard = ReactiveGuard::new();
        let future = reactive_compact(
            &[],
            &error,
            summarizer,
            &context,
            &options,
            &mut breaker,
            &mut guard,
        );
        assert_send(&future);
    }

    #[test]
    fn the_limit_is_corrected_by_the_estimates_shortfall() {
        // Estimated 150k, the API counted 213k against 200k: aim below 137k.
        assert_eq!(reactive_limit(167_000, 150_000, 213_000, 200_000), 137_000);
        // An overestimate never raises the limit.
        assert_eq!(reactive_limit(167_000, 250_000, 213_000, 200_000), 167_000);
    }
}
