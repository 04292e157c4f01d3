//! The date moved since the model was last told it.

use threadline_message::Attachment;

use crate::history::attachments_since_last_compaction;
use crate::source::{Phase, Source, SourceContext, SourceFuture, SourceOutput};

/// Attaches the new date when the turn's date differs from the date the model was last told:
/// the latest date-change attachment since the last compaction, or else the session's date
/// (the one the context message carries).
#[derive(Debug, Clone)]
pub struct DateChange {
    session_date: String,
}

impl DateChange {
    /// For a session whose context message told the model `session_date`.
    pub fn new(session_date: impl Into<String>) -> Self {
        DateChange {
            session_date: session_date.into(),
        }
    }
}

impl Source for DateChange {
    fn name(&self) -> &str {
        "date_change"
    }

    fn phase(&self) -> Phase {
        Phase::Environment
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            let Some(today) = cx.turn.today else {
                return Ok(SourceOutput::none());
            };
            let told = attachments_since_last_compaction(cx.turn.history)
                .rev()
                .find_map(|a| match a {
                    Attachment::DateChange { date } => Some(date.as_str()),
                    _ => None,
                })
                .unwrap_or(&self.session_date);
            Ok(SourceOutput::from((today != told).then(|| {
                Attachment::DateChange {
                    date: today.to_owned(),
                }
            })))
        })
    }
}
