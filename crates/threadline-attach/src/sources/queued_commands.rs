//! Messages the user queued while the model was working.

use threadline_message::Attachment;

use crate::source::{Phase, Source, SourceContext, SourceFuture, SourceOutput};

/// Attaches each non-blank queued command of the turn, in the order queued.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueuedCommands;

impl Source for QueuedCommands {
    fn name(&self) -> &str {
        "queued_commands"
    }

    fn phase(&self) -> Phase {
        Phase::Environment
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            Ok(SourceOutput::attachments(
                cx.turn
                    .queued_commands
                    .iter()
                    .filter(|c| !c.trim().is_empty())
                    .map(|c| Attachment::QueuedCommand { prompt: c.clone() })
                    .collect(),
            ))
        })
    }
}
