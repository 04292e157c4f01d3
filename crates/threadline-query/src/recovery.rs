//! The recovery ladder's decisions and the fixed texts it writes. Each step is idempotent and
//! leaves a valid history, so the next (dearer) one can always be tried.
//!
//! - `max_tokens` without a tool use: escalate the output limit once (no message; the cut
//!   output is retracted), then up to [`MAX_OUTPUT_RECOVERY_ATTEMPTS`] [`RESUME_DIRECTLY`]
//!   meta messages, then stop with what was produced.
//! - `model_context_window_exceeded` (an output cut at the context window): compaction once
//!   (a higher output limit cannot help), then up to [`MAX_CONTEXT_WINDOW_RECOVERIES`]
//!   [`RESUME_DIRECTLY`] meta messages, then `ContextWindowExceeded`.
//! - `refusal`: the run ends (`Refused`); tool uses of the refused response get [`REFUSED`].
//! - prompt too long, or a body over the API's 32 MB (413 `request_too_large`): drain, then
//!   reactive compaction, then `PromptTooLong`.
//! - `pause_turn`: the paused response is sent back as it is, up to
//!   [`MAX_PAUSE_TURN_RESUMES`] times in a row, then the run stops with what was produced.
//! - a stream that fails or is aborted after tool uses were emitted: every tool use without
//!   a real result gets a synthetic error result ([`STREAM_FAILED`], [`INTERRUPTED`]).
//!
//! Every text is a constant, so the same history gives the same request bytes.

use crate::state::RecoveryCounters;

/// How many "resume directly" messages are injected before giving up.
pub const MAX_OUTPUT_RECOVERY_ATTEMPTS: u32 = 3;

/// How many paused turns (`stop_reason: pause_turn`) in a row are resumed before the run
/// stops. Each pause is a server tool loop that reached the API's own iteration limit (10 by
/// default), so a turn that pauses this often is not converging.
pub const MAX_PAUSE_TURN_RESUMES: u32 = 8;

/// How many "resume directly" messages are injected after outputs cut at the context window
/// before the run stops.
pub const MAX_CONTEXT_WINDOW_RECOVERIES: u32 = 3;

/// The result of a tool use in a response that ended in a refusal (never run).
pub const REFUSED: &str = "[Tool not run: the model's response ended in a refusal]";

/// The meta message injected after an output cut at `max_tokens`.
pub const RESUME_DIRECTLY: &str = "Output token limit hit. Resume directly — no apology, no recap of what you were doing. Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces.";

/// The result of a tool use that the user's abort stopped (or never started).
pub const INTERRUPTED: &str = "[Tool execution interrupted by user]";

/// The result of a tool use that was not run because it could not be written to the
/// transcript first (a side effect never happens before its call is recorded).
pub const NOT_RECORDED: &str =
    "[Tool not run: the call could not be written to the session transcript]";

/// The result of a tool use whose response failed before it was complete.
pub const STREAM_FAILED: &str =
    "[Tool not run: the model's response failed before it was complete]";

/// The result of a tool use that named no known tool.
pub fn unknown_tool(name: &str) -> String {
    format!("Error: no such tool available: {name}")
}

/// The result of a tool use whose input does not fit the schema.
pub fn invalid_input(name: &str, problems: &str) -> String {
    format!("InputValidationError: {name} was called with invalid input: {problems}")
}

/// The result of a tool whose call panicked or ended without a result.
pub const TOOL_FAILED: &str = "Error: the tool failed without a result";

/// The next step after an output cut at `max_tokens` with no tool use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensStep {
    /// Retry once with this output limit, no message injected.
    Escalate(u64),
    /// Inject [`RESUME_DIRECTLY`] and go on.
    Resume,
    /// Stop with what was produced.
    GiveUp,
}

/// Decides the `max_tokens` step: escalation first (when the escalated limit is higher than
/// the current one), then resumes, then give up.
pub fn max_tokens_step(counters: &RecoveryCounters, current: u64, escalated: u64) -> MaxTokensStep {
    if !counters.escalated && escalated > current {
        MaxTokensStep::Escalate(escalated)
    } else if counters.max_output_tokens_recovery_count < MAX_OUTPUT_RECOVERY_ATTEMPTS {
        MaxTokensStep::Resume
    } else {
        MaxTokensStep::GiveUp
    }
}

/// The next step after an output cut at the context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextWindowStep {
    /// Compact the history (once per turn).
    Compact,
    /// Inject [`RESUME_DIRECTLY`] and go on.
    Resume,
    /// Stop: `ContextWindowExceeded`.
    GiveUp,
}

/// Decides the context-window step: compaction first, then resumes, then give up.
pub fn context_window_step(counters: &RecoveryCounters) -> ContextWindowStep {
    if !counters.has_attempted_window_compact {
        ContextWindowStep::Compact
    } else if counters.context_window_recoveries < MAX_CONTEXT_WINDOW_RECOVERIES {
        ContextWindowStep::Resume
    } else {
        ContextWindowStep::GiveUp
    }
}

/// The next step after `prompt is too long`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptTooLongStep {
    /// Drain staged removals.
    Drain,
    /// Compact.
    ReactiveCompact,
    /// Stop: `PromptTooLong`.
    GiveUp,
}

/// Decides the prompt-too-long step, cheapest first, each at most once per turn.
pub fn prompt_too_long_step(counters: &RecoveryCounters) -> PromptTooLongStep {
    if !counters.has_attempted_drain {
        PromptTooLongStep::Drain
    } else if !counters.has_attempted_reactive_compact {
        PromptTooLongStep::ReactiveCompact
    } else {
        PromptTooLongStep::GiveUp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_tokens_escalates_once_then_resumes_three_times_then_gives_up() {
        let mut c = RecoveryCounters::default();
        assert_eq!(
            max_tokens_step(&c, 8192, 64_000),
            MaxTokensStep::Escalate(64_000)
        );
        c.escalated = true;
        for n in 0..MAX_OUTPUT_RECOVERY_ATTEMPTS {
            c.max_output_tokens_recovery_count = n;
            assert_eq!(max_tokens_step(&c, 64_000, 64_000), MaxTokensStep::Resume);
        }
        c.max_output_tokens_recovery_count = MAX_OUTPUT_RECOVERY_ATTEMPTS;
        assert_eq!(max_tokens_step(&c, 64_000, 64_000), MaxTokensStep::GiveUp);
    }

    #[test]
    fn no_escalation_when_the_limit_is_already_the_highest() {
        let c = RecoveryCounters::default();
        assert_eq!(max_tokens_step(&c, 64_000, 64_000), MaxTokensStep::Resume);
    }

    #[test]
    fn context_window_compacts_then_resumes_three_times_then_gives_up() {
        let mut c = RecoveryCounters::default();
        assert_eq!(context_window_step(&c), ContextWindowStep::Compact);
        c.has_attempted_window_compact = true;
        for n in 0..MAX_CONTEXT_WINDOW_RECOVERIES {
            c.context_window_recoveries = n;
            assert_eq!(context_window_step(&c), ContextWindowStep::Resume);
        }
        c.context_window_recoveries = MAX_CONTEXT_WINDOW_RECOVERIES;
        assert_eq!(context_window_step(&c), ContextWindowStep::GiveUp);
    }

    #[test]
    fn prompt_too_long_goes_cheapest_first() {
        let mut c = RecoveryCounters::default();
        assert_eq!(prompt_too_long_step(&c), PromptTooLongStep::Drain);
        c.has_attempted_drain = true;
        assert_eq!(prompt_too_long_step(&c), PromptTooLongStep::ReactiveCompact);
        c.has_attempted_reactive_compact = true;
        assert_eq!(prompt_too_long_step(&c), PromptTooLongStep::GiveUp);
    }
}
