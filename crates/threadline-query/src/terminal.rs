//! Why the loop stopped.

use serde::{Deserialize, Serialize};

/// Every way the loop can end. Whatever the reason, the history left behind normalizes to a
/// valid request: every tool use has a result (real or synthetic).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "terminal", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Terminal {
    /// The model ended its turn without asking for a tool, and nothing asked it to go on.
    Completed,
    /// The configured number of turns was reached (after the last turn's tool results were
    /// recorded).
    MaxTurns {
        /// The limit.
        limit: u32,
    },
    /// The cancellation token fired while the model was streaming (or before a request).
    AbortedStreaming,
    /// The cancellation token fired while tools were running.
    AbortedTools,
    /// The prompt was too long and neither draining nor reactive compaction helped.
    PromptTooLong {
        /// The API's counts `(actual, maximum)`, when it gave them.
        tokens: Option<(u64, u64)>,
    },
    /// The model call failed (after the service's own retries).
    ModelError {
        /// The error, as one line.
        message: String,
        /// The HTTP status, when there was one.
        status: Option<u16>,
    },
    /// The context policy judged the history over the hard limit before sending it.
    BlockingLimit {
        /// The estimated tokens.
        tokens: u64,
        /// The limit.
        limit: u64,
    },
    /// A stop hook ended the session.
    HookStopped {
        /// What the hook said.
        reason: String,
    },
    /// The model declined (`stop_reason: refusal`). The refused response stays in the
    /// history as the API sent it (often no content at all; normalization drops an empty
    /// assistant message from the next request).
    Refused {
        /// `stop_details.category` (`cyber`, `bio`, …), when given.
        category: Option<String>,
        /// `stop_details.explanation` (display text, not stable), when given.
        explanation: Option<String>,
    },
    /// Outputs kept being cut at the context window (`model_context_window_exceeded`) after
    /// compaction and every "resume directly" attempt.
    ContextWindowExceeded {
        /// The resume attempts made.
        attempts: u32,
    },
    /// The context refilled to the compaction threshold within one turn of each of the last
    /// [`MAX_REFILLS_IN_A_ROW`](crate::MAX_REFILLS_IN_A_ROW) compactions (a tool returning
    /// more than the window holds, say): the loop stops rather than pay for a compaction
    /// every turn. The history holds the last compaction and normalizes to a valid request.
    CompactionThrashing {
        /// The compactions in a row.
        compactions: u32,
    },
    /// The run did not start: another run of the same session was in progress (the
    /// facade's `Agent` runs one at a time). Nothing was sent or appended. The loop itself
    /// never ends with it.
    Busy,
}

impl Terminal {
    /// The stable snake-case name (the serialized `terminal` tag).
    pub fn name(&self) -> &'static str {
        match self {
            Terminal::Completed => "completed",
            Terminal::MaxTurns { .. } => "max_turns",
            Terminal::AbortedStreaming => "aborted_streaming",
            Terminal::AbortedTools => "aborted_tools",
            Terminal::PromptTooLong { .. } => "prompt_too_long",
            Terminal::ModelError { .. } => "model_error",
            Terminal::BlockingLimit { .. } => "blocking_limit",
            Terminal::HookStopped { .. } => "hook_stopped",
            Terminal::Refused { .. } => "refused",
            Terminal::ContextWindowExceeded { .. } => "context_window_exceeded",
            Terminal::CompactionThrashing { .. } => "compaction_thrashing",
            Terminal::Busy => "busy",
        }
    }

    /// Whether the user (the cancellation token) ended it.
    pub fn is_abort(&self) -> bool {
        matches!(self, Terminal::AbortedStreaming | Terminal::AbortedTools)
    }
}

impl std::fmt::Display for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Terminal::MaxTurns { limit } => write!(f, "max_turns ({limit})"),
            Terminal::PromptTooLong {
                tokens: Some((actual, maximum)),
            } => write!(f, "prompt_too_long ({actual} > {maximum} tokens)"),
            Terminal::ModelError { message, .. } => write!(f, "model_error: {message}"),
            Terminal::BlockingLimit { tokens, limit } => {
                write!(f, "blocking_limit ({tokens} > {limit} tokens)")
            }
            Terminal::HookStopped { reason } => write!(f, "hook_stopped: {reason}"),
            Terminal::Refused {
                category,
                explanation,
            } => {
                f.write_str("refused")?;
                if let Some(category) = category {
                    write!(f, " ({category})")?;
                }
                if let Some(explanation) = explanation {
                    write!(f, ": {explanation}")?;
                }
                Ok(())
            }
            Terminal::ContextWindowExceeded { attempts } => {
                write!(f, "context_window_exceeded ({attempts} resumes)")
            }
            Terminal::CompactionThrashing { compactions } => write!(
                f,
                "compaction_thrashing (the context refilled after each of {compactions} compactions in a row)"
            ),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serialized_reason_is_the_name() {
        let all = [
            Terminal::Completed,
            Terminal::MaxTurns { limit: 3 },
            Terminal::AbortedStreaming,
            Terminal::AbortedTools,
            Terminal::PromptTooLong { tokens: None },
            Terminal::ModelError {
                message: "x".into(),
                status: Some(500),
            },
            Terminal::BlockingLimit {
                tokens: 2,
                limit: 1,
            },
            Terminal::HookStopped { reason: "r".into() },
            Terminal::Refused {
                category: Some("cyber".into()),
                explanation: None,
            },
            Terminal::ContextWindowExceeded { attempts: 3 },
            Terminal::CompactionThrashing { compactions: 3 },
            Terminal::Busy,
        ];
        for t in all {
            let json = serde_json::to_value(&t).expect("serializes");
            assert_eq!(json["terminal"], t.name());
            let back: Terminal = serde_json::from_value(json).expect("parses");
            assert_eq!(back, t);
        }
        assert!(Terminal::AbortedTools.is_abort());
        assert!(!Terminal::Completed.is_abort());
        let refused = Terminal::Refused {
            category: Some("bio".into()),
            explanation: Some("Declined.".into()),
        };
        assert_eq!(refused.to_string(), "refused (bio): Declined.");
    }
}
