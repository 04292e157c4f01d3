//! Why an iteration of the loop continued instead of stopping.

use serde::{Deserialize, Serialize};

/// Why the loop went round again. Every iteration that does not stop records one, so tests
/// (and journals) assert on the path taken, never on message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Transition {
    /// The model used tools; their results were appended and the model is asked again.
    NextTurn,
    /// The prompt was too long; the context policy drained what it had staged for removal
    /// (the cheapest step) and the request is retried.
    CollapseDrainRetry,
    /// The prompt was too long; the context policy compacted the history and the request is
    /// retried.
    ReactiveCompactRetry,
    /// The output was cut at `max_tokens`; the same request is retried once with a higher
    /// output limit, with no message injected (the cut output is retracted).
    MaxOutputTokensEscalate,
    /// The output was cut at `max_tokens` again; a meta message asks the model to resume
    /// directly, and the model is asked again (at most [`MAX_OUTPUT_RECOVERY_ATTEMPTS`]
    /// times).
    ///
    /// [`MAX_OUTPUT_RECOVERY_ATTEMPTS`]: crate::recovery::MAX_OUTPUT_RECOVERY_ATTEMPTS
    MaxOutputTokensRecovery,
    /// A stop hook refused to let the turn end; its message was injected.
    StopHookBlocking,
    /// The token budget was not spent yet; a meta message asks the model to keep going.
    TokenBudgetContinuation,
    /// The API paused a long-running turn (`stop_reason: pause_turn`, e.g. a server tool loop
    /// that reached its iteration limit); the response is sent back as it is and the model
    /// continues (at most [`MAX_PAUSE_TURN_RESUMES`] times in a row).
    ///
    /// [`MAX_PAUSE_TURN_RESUMES`]: crate::recovery::MAX_PAUSE_TURN_RESUMES
    PauseTurnResume,
    /// The output was cut at the context window (`stop_reason:
    /// model_context_window_exceeded`); the context policy compacted the history (a higher
    /// output limit cannot help: the window is the limit) and the model is asked to resume.
    /// At most once per turn.
    ContextWindowCompact,
    /// The output was cut at the context window and compaction did not help (or was already
    /// tried); a meta message asks the model to resume directly (at most
    /// [`MAX_CONTEXT_WINDOW_RECOVERIES`] times, then
    /// [`Terminal::ContextWindowExceeded`](crate::Terminal::ContextWindowExceeded)).
    ///
    /// [`MAX_CONTEXT_WINDOW_RECOVERIES`]: crate::recovery::MAX_CONTEXT_WINDOW_RECOVERIES
    ContextWindowRecovery,
    /// Server-side compaction paused the turn (`stop_reason: compaction`, asked for with
    /// `pause_after_compaction`): the assistant turn holding the `compaction` block is sent
    /// back as it is and the model continues from the summary (counted with the pauses of
    /// [`Transition::PauseTurnResume`]: at most [`MAX_PAUSE_TURN_RESUMES`] in a row).
    ///
    /// [`MAX_PAUSE_TURN_RESUMES`]: crate::recovery::MAX_PAUSE_TURN_RESUMES
    ServerCompactionPause,
    /// The API refused a thinking block as bound to a different conversation (something
    /// before it changed, on a model that binds thinking to its prefix): the request is
    /// retried asking the API to drop such blocks, and so is every request until the next
    /// compaction (once per context; a second refusal ends the run).
    ThinkingDropBlockRetry,
}

impl Transition {
    /// The stable snake-case name (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            Transition::NextTurn => "next_turn",
            Transition::CollapseDrainRetry => "collapse_drain_retry",
            Transition::ReactiveCompactRetry => "reactive_compact_retry",
            Transition::MaxOutputTokensEscalate => "max_output_tokens_escalate",
            Transition::MaxOutputTokensRecovery => "max_output_tokens_recovery",
            Transition::StopHookBlocking => "stop_hook_blocking",
            Transition::TokenBudgetContinuation => "token_budget_continuation",
            Transition::PauseTurnResume => "pause_turn_resume",
            Transition::ContextWindowCompact => "context_window_compact",
            Transition::ContextWindowRecovery => "context_window_recovery",
            Transition::ServerCompactionPause => "server_compaction_pause",
            Transition::ThinkingDropBlockRetry => "thinking_drop_block_retry",
        }
    }
}

impl std::fmt::Display for Transition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_serialization() {
        for t in [
            Transition::NextTurn,
            Transition::CollapseDrainRetry,
            Transition::ReactiveCompactRetry,
            Transition::MaxOutputTokensEscalate,
            Transition::MaxOutputTokensRecovery,
            Transition::StopHookBlocking,
            Transition::TokenBudgetContinuation,
            Transition::PauseTurnResume,
            Transition::ContextWindowCompact,
            Transition::ContextWindowRecovery,
            Transition::ServerCompactionPause,
        ] {
            let json = serde_json::to_string(&t).expect("serializes");
            assert_eq!(json, format!("\"{}\"", t.name()));
            let back: Transition = serde_json::from_str(&json).expect("parses");
            assert_eq!(back, t);
        }
    }
}
