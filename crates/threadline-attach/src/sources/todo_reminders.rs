//! A reminder of the todo list when the model has not looked at it for a while.

use std::sync::Arc;

use threadline_message::{Attachment, Message, TodoItem};
use threadline_wire::ContentBlock;

use crate::history::since_last_compaction;
use crate::source::{Phase, Source, SourceContext, SourceFuture, SourceOutput};

/// The default cadence: a reminder after this many model responses without the todo tool.
pub const DEFAULT_TODO_CADENCE: usize = 10;

/// Attaches the current todo list once the model has answered `cadence` times since it last
/// used the todo tool or was last reminded (counted in the history since the last
/// compaction, so a reminder repeats at most every `cadence` responses and never from hidden
/// state).
pub struct TodoReminders {
    todos: Arc<dyn Fn() -> Vec<TodoItem> + Send + Sync>,
    cadence: usize,
    tool_name: String,
}

impl std::fmt::Debug for TodoReminders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TodoReminders")
            .field("cadence", &self.cadence)
            .field("tool_name", &self.tool_name)
            .finish_non_exhaustive()
    }
}

impl TodoReminders {
    /// Reminds of `todos()` every [`DEFAULT_TODO_CADENCE`] responses that did not use the
    /// `TodoWrite` tool.
    pub fn new(todos: impl Fn() -> Vec<TodoItem> + Send + Sync + 'static) -> Self {
        TodoReminders {
            todos: Arc::new(todos),
            cadence: DEFAULT_TODO_CADENCE,
            tool_name: "TodoWrite".to_owned(),
        }
    }

    /// With another cadence (at least 1).
    pub fn with_cadence(mut self, cadence: usize) -> Self {
        self.cadence = cadence.max(1);
        self
    }

    /// With another name for the todo tool.
    pub fn with_tool_name(mut self, name: impl Into<String>) -> Self {
        self.tool_name = name.into();
        self
    }

    /// How many model responses `history` has had since the todo tool was used or the list
    /// was last shown.
    pub fn responses_since_last_look(&self, history: &[Message]) -> usize {
        let mut count = 0;
        let mut last_id: Option<&str> = None;
        for message in since_last_compaction(history).iter().rev() {
            match message {
                Message::Attachment(a)
                    if matches!(a.attachment, Attachment::TodoReminder { .. }) =>
                {
                    break;
                }
                Message::Assistant(a) if !a.is_api_error => {
                    let used_tool = a
                        .content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::ToolUse(t) if t.name == self.tool_name));
                    if used_tool {
                        break;
                    }
                    // Fragments of one streamed response count once.
                    let id = a.api_message_id.as_deref();
                    if id.is_none() || id != last_id {
                        count += 1;
                    }
                    last_id = id;
                }
                _ => {}
            }
        }
        count
    }
}

impl Source for TodoReminders {
    fn name(&self) -> &str {
        "todo_reminders"
    }

    fn phase(&self) -> Phase {
        Phase::Environment
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            if self.responses_since_last_look(cx.turn.history) < self.cadence {
                return Ok(SourceOutput::none());
            }
            Ok(SourceOutput::from(Some(Attachment::TodoReminder {
                items: (self.todos)(),
            })))
        })
    }
}
