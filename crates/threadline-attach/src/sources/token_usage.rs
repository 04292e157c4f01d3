//! How much of the context window the conversation uses (main thread only).

use threadline_message::{Attachment, Message};

use crate::history::since_last_compaction;
use crate::source::{Phase, Source, SourceContext, SourceFuture, SourceOutput};

/// Attaches the context used by the latest response since the last compaction (input, cache
/// reads and writes, and output tokens, as the API reported them) against the window. Nothing
/// before the first response.
#[derive(Debug, Clone, Copy)]
pub struct TokenUsage {
    context_window: u64,
}

impl TokenUsage {
    /// For a model with this context window.
    pub fn new(context_window: u64) -> Self {
        TokenUsage { context_window }
    }

    /// The tokens the latest response in `history` reported, if any.
    pub fn used(history: &[Message]) -> Option<u64> {
        since_last_compaction(history)
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant(a) if !a.is_api_error => a.usage.as_deref(),
                _ => None,
            })
            .map(|u| {
                [
                    u.input_tokens,
                    u.cache_creation_input_tokens,
                    u.cache_read_input_tokens,
                    u.output_tokens,
                ]
                .into_iter()
                .flatten()
                .fold(0u64, u64::saturating_add)
            })
    }
}

impl Source for TokenUsage {
    fn name(&self) -> &str {
        "token_usage"
    }

    fn phase(&self) -> Phase {
        Phase::MainThread
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            Ok(SourceOutput::from(TokenUsage::used(cx.turn.history).map(
                |used| Attachment::TokenUsage {
                    used,
                    total: self.context_window,
                },
            )))
        })
    }
}
