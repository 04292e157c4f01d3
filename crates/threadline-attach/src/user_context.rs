//! Channel 2: the synthetic context message at the front of `messages` — project
//! instructions and the date — built at request time, never persisted, stable for the session.

use threadline_message::Message;
use threadline_wire::{Content, ContentBlock, MessageParam, Messages, Role};

use crate::context_entries::ContextEntries;
use threadline_workspace::{Limits, PathKind, Workspace};

/// The caveat that keeps the model from answering the context itself.
pub const CONTEXT_CAVEAT: &str = "IMPORTANT: this context may or may not be relevant to your \
tasks. You should not respond to this context unless it is highly relevant to your task.";

/// The instruction files read from the workspace root, in this order.
pub const ROOT_INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Session-stable context for the synthetic message, as `# key` / value sections in the
/// order pushed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserContext {
    entries: ContextEntries,
}

impl UserContext {
    /// No context.
    pub fn new() -> Self {
        UserContext::default()
    }

    /// The context for a session in `workspace` on `date` (`YYYY-MM-DD`): the root's
    /// instruction files (read within `limits`; unreadable ones left out) and the date.
    pub fn for_workspace(workspace: &Workspace, date: &str, limits: &Limits) -> Self {
        let mut sections = Vec::new();
        for name in ROOT_INSTRUCTION_FILES {
            let Ok(file) = workspace.resolve(name) else {
                continue;
            };
            if file.kind != PathKind::File {
                continue;
            }
            let Ok(read) = workspace.read_text_blocking(&file, limits) else {
                continue;
            };
            if read.content.trim().is_empty() {
                continue;
            }
            let mut section = format!(
                "Contents of {name} (project instructions, checked into the codebase):\n\n{}",
                read.content.trim_end()
            );
            if read.truncated.is_some() {
                section.push_str("\n[truncated: the file is longer than shown]");
            }
            sections.push(section);
        }
        let mut context = UserContext::new();
        if !sections.is_empty() {
            context.push(
                "projectInstructions",
                format!(
                    "Instructions for this codebase are shown below. Be sure to follow them.\n\n{}",
                    sections.join("\n\n")
                ),
            );
        }
        context.push("currentDate", format!("Today's date is {date}."));
        context
    }

    /// Adds a section; a blank value is left out.
    pub fn push(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.entries
            .push(key.into(), value.into(), std::convert::identity);
        self
    }

    /// This context with a section added.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.push(key, value);
        self
    }

    /// The sections.
    pub fn entries(&self) -> &[(String, String)] {
        self.entries.as_slice()
    }

    /// The message text: the sections inside `<system-reminder>` tags, with the
    /// [caveat](CONTEXT_CAVEAT); `None` when there is no section.
    ///
    /// ```
    /// use threadline_attach::UserContext;
    ///
    /// let text = UserContext::new().with("currentDate", "Today's date is 2026-11-30.").text();
    /// assert_eq!(
    ///     text.as_deref(),
    ///     Some("<system-reminder>\nAs you answer the user's questions, you can use the following \
    ///           context:\n# currentDate\nToday's date is 2026-11-30.\n\nIMPORTANT: this context \
    ///           may or may not be relevant to your tasks. You should not respond to this context \
    ///           unless it is highly relevant to your task.\n</system-reminder>")
    /// );
    /// ```
    pub fn text(&self) -> Option<String> {
        if self.entries.is_empty() {
            return None;
        }
        let mut text = String::from(
            "<system-reminder>\nAs you answer the user's questions, you can use the following \
             context:",
        );
        for (key, value) in self.entries.as_slice() {
            text.push_str("\n# ");
            text.push_str(key);
            text.push('\n');
            text.push_str(value);
        }
        text.push_str("\n\n");
        text.push_str(CONTEXT_CAVEAT);
        text.push_str("\n</system-reminder>");
        Some(text)
    }

    /// The context as an internal `is_meta` user message (for callers that keep a request-time
    /// array); never append it to the session's history.
    pub fn message(&self) -> Option<Message> {
        self.text().map(Message::meta_user_text)
    }

    /// `messages` (a normalized request's) with the context in front: as the first block of
    /// the first message when that is a user message (which is what the API would make of two
    /// user messages in a row; after the tool results it opens with, which the API wants
    /// first), else as a user message of its own. A request that starts with a `compaction`
    /// block keeps it first (the API refuses an on-demand block anywhere else, and reads
    /// nothing before a threshold one): the context goes right after that message, or, when
    /// a later user message holds the note a swap ends with
    /// ([`CONTINUE_AFTER_SUMMARY`](threadline_message::CONTINUE_AFTER_SUMMARY)), into the
    /// first such message: the turns between the block and it were kept verbatim, and
    /// putting anything in front of them would edit what their thinking is bound to. Each
    /// rule looks only at messages before the place it picks, so the place stays the same as
    /// the conversation grows.
    pub fn prepend_to(&self, messages: impl Into<Messages>) -> Messages {
        let mut messages = messages.into();
        let Some(text) = self.text() else {
            return messages;
        };
        let block = ContentBlock::text(text);
        let starts_with_compaction = messages.first().is_some_and(|m| {
            m.role == Role::Assistant
                && matches!(&m.content, Content::Blocks(b)
                    if matches!(b.first(), Some(ContentBlock::Compaction(_))))
        });
        let note = ContentBlock::text(threadline_message::CONTINUE_AFTER_SUMMARY);
        let at = if starts_with_compaction {
            messages
                .iter()
                .position(|m| {
                    m.role == Role::User
                        && match &m.content {
                            Content::Blocks(b) => b.contains(&note),
                            Content::Text(t) => t == threadline_message::CONTINUE_AFTER_SUMMARY,
                        }
                })
                .unwrap_or(1)
        } else {
            0
        };
        match messages.get_mut(at) {
            Some(first) if first.role == Role::User => {
                let mut blocks =
                    match std::mem::replace(&mut first.content, Content::Blocks(Vec::new())) {
                        Content::Text(t) => vec![ContentBlock::text(t)],
                        Content::Blocks(blocks) => blocks,
                    };
                // After the tool results a message opens with (the API wants them first).
                let results = blocks
                    .iter()
                    .take_while(|b| matches!(b, ContentBlock::ToolResult(_)))
                    .count();
                blocks.insert(results, block);
                first.content = Content::Blocks(blocks);
            }
            _ => messages.insert(at, MessageParam::user(vec![block])),
        }
        messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(message: &MessageParam) -> Vec<String> {
        match &message.content {
            Content::Text(t) => vec![t.clone()],
            Content::Blocks(blocks) => blocks
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => t.text.clone(),
                    other => format!("{other:?}"),
                })
                .collect(),
        }
    }

    #[test]
    fn the_root_instruction_files_and_the_date_are_read_confined() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).expect("ws");
        std::fs::write(root.join("AGENTS.md"), "Use tabs.\n").expect("agents");
        std::fs::write(dir.path().join("outside.md"), "TOP SECRET").expect("outside");
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("outside.md"), root.join("CLAUDE.md"))
            .expect("link");
        let workspace = Workspace::new(&root).expect("workspace");
        let context = UserContext::for_workspace(&workspace, "2026-11-30", &Limits::default());
        let text = context.text().expect("context");
        assert!(text.contains("Contents of AGENTS.md"), "{text}");
        assert!(text.contains("Use tabs."), "{text}");
        assert!(!text.contains("TOP SECRET"), "{text}");
        assert!(
            text.contains("# currentDate\nToday's date is 2026-11-30."),
            "{text}"
        );
        assert!(text.starts_with("<system-reminder>\n") && text.ends_with("\n</system-reminder>"));
        assert!(text.contains(CONTEXT_CAVEAT));
        let Some(Message::User(user)) = context.message() else {
            panic!("a user message")
        };
        assert!(user.is_meta);
    }

    #[test]
    fn the_context_goes_first_into_the_first_user_message_or_before_an_assistant() {
        let context = UserContext::new().with("currentDate", "today");
        let messages = context.prepend_to(vec![MessageParam::user(vec![ContentBlock::text("q")])]);
        assert_eq!(messages.len(), 1);
        let texts = text_of(&messages[0]);
        assert!(texts[0].starts_with("<system-reminder>"));
        assert_eq!(texts[1], "q");

        let messages =
            context.prepend_to(vec![MessageParam::assistant(vec![ContentBlock::text("a")])]);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].role, Role::User);

        assert!(context.prepend_to(Vec::new()).len() == 1);

        // After a compaction block, which stays first.
        let block: ContentBlock = serde_json::from_value(
            serde_json::json!({"type": "compaction", "content": "s", "signature": "sig"}),
        )
        .expect("block");
        let compacted = vec![
            MessageParam::assistant(vec![block.clone()]),
            MessageParam::user(vec![ContentBlock::text("q")]),
        ];
        let messages = context.prepend_to(compacted.clone());
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0], compacted[0]);
        let texts = text_of(&messages[1]);
        assert!(texts[0].starts_with("<system-reminder>"));
        assert_eq!(texts[1], "q");
        // A threshold compaction answered with a tool call: its results stay first.
        let result = threadline_message::tool_result_block("toolu_1", "ok".into(), false);
        let with_results = context.prepend_to(vec![
            MessageParam::assistant(vec![block.clone()]),
            MessageParam::user(vec![result.clone()]),
        ]);
        let Content::Blocks(blocks) = &with_results[1].content else {
            panic!("blocks");
        };
        assert_eq!(blocks[0], result);
        assert!(
            matches!(&blocks[1], ContentBlock::Text(t) if t.text.starts_with("<system-reminder>"))
        );
        let alone = context.prepend_to(compacted[..1].to_vec());
        assert_eq!(alone.len(), 2);
        assert_eq!(alone[0], compacted[0]);
        assert_eq!(alone[1].role, Role::User);
        assert_eq!(UserContext::new().prepend_to(Vec::new()), Vec::new());
        assert_eq!(UserContext::new().with("blank", " ").text(), None);
    }

    #[test]
    fn after_kept_turns_the_context_goes_into_the_note_that_follows_them() {
        // A keep-recent-turns swap: the block, the kept turns as they were sent, then the
        // note. In front of the kept prompt the context would edit it (its thinking is bound
        // to it), so it goes into the note's message, and stays there as the turn goes on.
        let context = UserContext::new().with("currentDate", "today");
        let block: ContentBlock = serde_json::from_value(
            serde_json::json!({"type": "compaction", "content": "s", "signature": "sig"}),
        )
        .expect("block");
        let result = threadline_message::tool_result_block("toolu_1", "ok".into(), false);
        let note = ContentBlock::text(threadline_message::CONTINUE_AFTER_SUMMARY);
        let kept = vec![
            MessageParam::assistant(vec![block]),
            MessageParam::user(vec![ContentBlock::text("kept prompt")]),
            MessageParam::assistant(vec![ContentBlock::text("kept answer")]),
            MessageParam::user(vec![result.clone(), note.clone()]),
        ];
        let messages = context.prepend_to(kept.clone());
        assert_eq!(
            messages.to_vec()[..3],
            kept[..3],
            "the kept turns are untouched"
        );
        let Content::Blocks(blocks) = &messages[3].content else {
            panic!("blocks");
        };
        assert_eq!(blocks[0], result);
        assert!(
            matches!(&blocks[1], ContentBlock::Text(t) if t.text.starts_with("<system-reminder>"))
        );
        assert_eq!(blocks[2], note);
        // Later turns do not move it.
        let mut grown = kept.clone();
        grown.push(MessageParam::assistant(vec![ContentBlock::text("more")]));
        grown.push(MessageParam::user(vec![note.clone()]));
        let later = context.prepend_to(grown);
        assert_eq!(later.to_vec()[..4], messages.to_vec()[..]);
        assert_eq!(later[5], MessageParam::user(vec![note]));
    }
}
