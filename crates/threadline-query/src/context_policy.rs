//! The per-iteration context steps (tool-result budget → snip → microcompact → autocompact),
//! the pre-flight blocking limit, and the prompt-too-long recovery steps (drain, reactive
//! compact), behind one trait whose every method defaults to "nothing to do".

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use threadline_message::Message;
use threadline_wire::service::ServiceError;

use crate::request_builder::RequestBuilder;

/// What a step did to the history.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StepOutcome {
    /// Messages to append (a compaction's boundary and summary, a microcompact boundary);
    /// the loop appends them to the history and the transcript and emits them.
    pub append: Vec<Message>,
    /// Whether the step changed messages already in the history in place (keeping their
    /// ids). The loop then re-normalizes from scratch.
    pub rewritten: bool,
    /// With `rewritten`, the index of the first message the step changed (or any index
    /// before it): the messages before it are untouched. 0, the default, claims nothing.
    /// The loop reports it as [`State::unchanged_prefix`](crate::State::unchanged_prefix),
    /// which lets a caller storing the history message by message write only from there.
    pub first_rewritten: usize,
    /// With `rewritten`, the indices of the messages the step changed, when it lists them
    /// (empty: any message from `first_rewritten` on may have changed). The loop records
    /// each changed message again, as it now is ([`Event::Rewritten`](crate::Event::Rewritten),
    /// the transcript), so that what was recorded reads back as the history it holds.
    pub changed: Vec<usize>,
}

impl StepOutcome {
    /// Nothing changed.
    pub fn unchanged() -> StepOutcome {
        StepOutcome::default()
    }

    /// Messages to append.
    pub fn appended(messages: Vec<Message>) -> StepOutcome {
        StepOutcome {
            append: messages,
            ..StepOutcome::default()
        }
    }

    /// Messages were changed in place (anywhere). The loop then records every message of
    /// the history again (transcript, [`Event::Rewritten`](crate::Event::Rewritten), so a
    /// session store): a step that knows what it changed says so with
    /// [`rewritten_at`](Self::rewritten_at).
    pub fn rewritten() -> StepOutcome {
        StepOutcome::rewritten_from(0)
    }

    /// Messages were changed in place, none before index `first`. The loop records every
    /// message from `first` on again (see [`rewritten`](Self::rewritten)).
    pub fn rewritten_from(first: usize) -> StepOutcome {
        StepOutcome {
            append: Vec::new(),
            rewritten: true,
            first_rewritten: first,
            changed: Vec::new(),
        }
    }

    /// The messages at `indices` (in increasing order) were changed in place, and no other.
    pub fn rewritten_at(indices: Vec<usize>) -> StepOutcome {
        StepOutcome {
            first_rewritten: indices.first().copied().unwrap_or(0),
            rewritten: !indices.is_empty(),
            changed: indices,
            append: Vec::new(),
        }
    }

    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.rewritten || !self.append.is_empty()
    }
}

/// A failure of a context step. The loop reports it and goes on without the step.
///
/// Built with [`PolicyError::from_source`], it keeps the step's own error as its
/// [`source`](std::error::Error::source). Two errors are equal when their step and message
/// are (the source is not compared).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PolicyError {
    /// The step (`autocompact`, `reactive_compact`, …).
    pub step: &'static str,
    /// What went wrong.
    pub message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl PolicyError {
    /// An error of `step`.
    pub fn new(step: &'static str, message: impl Into<String>) -> PolicyError {
        PolicyError {
            step,
            message: message.into(),
            source: None,
        }
    }

    /// An error of `step` caused by `source`: the message is the source's text, and
    /// [`source`](std::error::Error::source) returns it.
    pub fn from_source(
        step: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> PolicyError {
        PolicyError {
            step,
            message: source.to_string(),
            source: Some(Arc::new(source)),
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.message)
    }
}

impl std::error::Error for PolicyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl PartialEq for PolicyError {
    fn eq(&self, other: &Self) -> bool {
        self.step == other.step && self.message == other.message
    }
}

impl Eq for PolicyError {}

/// The history as a step sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepInput<'a> {
    /// The whole history; steps may rewrite messages in place (and say so).
    pub history: &'a mut Vec<Message>,
    /// Where the visible window starts (after the last compaction boundary).
    pub boundary: usize,
    /// Completed turns in the session.
    pub turn_count: u32,
    /// Compactions that failed in a row in this session (the circuit breaker's count, kept in
    /// the loop's state); a policy that compacts reads and updates it.
    pub failures_in_a_row: &'a mut u32,
    /// The loop's request builder: [`RequestBuilder::preview`] is the request the loop
    /// would send for the visible history (a summary request's base).
    pub request: &'a mut RequestBuilder,
}

/// The context policy. Every method defaults to doing nothing, so `NoPolicy` is the loop
/// without compaction; `threadline-compact` provides the real one.
///
/// The synchronous steps run in the order of the methods; `autocompact` and
/// `reactive_compact` are async because they call a model for the summary.
pub trait ContextPolicy: Send {
    /// Large tool results replaced by a preview (and saved elsewhere).
    fn tool_result_budget(&mut self, input: StepInput<'_>) -> StepOutcome {
        let _ = input;
        StepOutcome::unchanged()
    }
    /// Old ranges removed.
    fn snip(&mut self, input: StepInput<'_>) -> StepOutcome {
        let _ = input;
        StepOutcome::unchanged()
    }
    /// Old tool results cleared.
    fn microcompact(&mut self, input: StepInput<'_>) -> StepOutcome {
        let _ = input;
        StepOutcome::unchanged()
    }
    /// A summary when the context passed the threshold: the outcome appends a
    /// `compact_boundary` and what follows it.
    fn autocompact<'a>(
        &'a mut self,
        input: StepInput<'a>,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        let _ = input;
        Box::pin(std::future::ready(Ok(StepOutcome::unchanged())))
    }
    /// `Some((tokens, limit))` when the visible history is over the hard limit and must not
    /// be sent. `history` is the whole history: the model sees what follows its last
    /// `compact_boundary`, at index `boundary` (the loop tracks it as messages are appended,
    /// so the policy need not look for it), and the boundary tells which messages a
    /// compaction carried over (whose usage reports describe the longer context before it).
    /// Asked before every request: it should cost what was appended, not the history.
    fn blocking_limit(&self, history: &[Message], boundary: usize) -> Option<(u64, u64)> {
        let _ = (history, boundary);
        None
    }
    /// The cheapest prompt-too-long step: drop what was staged for removal. Unchanged means
    /// there was nothing to drain.
    fn drain(&mut self, input: StepInput<'_>) -> StepOutcome {
        let _ = input;
        StepOutcome::unchanged()
    }
    /// Compaction after the API said the prompt is too long. Unchanged means it could not
    /// help.
    fn reactive_compact<'a>(
        &'a mut self,
        input: StepInput<'a>,
        error: &'a ServiceError,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        let _ = (input, error);
        Box::pin(std::future::ready(Ok(StepOutcome::unchanged())))
    }
}

/// The policy that never changes the history.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPolicy;

impl ContextPolicy for NoPolicy {}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[derive(Debug, PartialEq, thiserror::Error)]
    #[error("the summary call failed")]
    struct StepFailure;

    #[test]
    fn from_source_keeps_the_step_error_as_its_source() {
        let error = PolicyError::from_source("autocompact", StepFailure);
        assert_eq!(error.to_string(), "autocompact: the summary call failed");
        let source = error.source().expect("the step error is kept");
        assert_eq!(source.downcast_ref::<StepFailure>(), Some(&StepFailure));
        let cloned = error.clone();
        assert!(cloned.source().is_some_and(|s| s.is::<StepFailure>()));
    }

    #[test]
    fn new_has_no_source() {
        let error = PolicyError::new("snip", "nothing to snip");
        assert_eq!(error.to_string(), "snip: nothing to snip");
        assert!(error.source().is_none());
    }
}
