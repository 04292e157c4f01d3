//! Attachments: context that changes every turn, as typed data.
//!
//! The sources that produce them live in `threadline-attach`; how each kind is shown to the
//! model is decided by the normalizer. Here they are only data, so that the transcript, the
//! UI and the normalizer agree on what was attached.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One item of a todo or task reminder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// What is to be done.
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// One entry of a delta announcement: a name and what the model is told about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaItem {
    /// The entry's name (a tool, an agent, an MCP server).
    pub name: String,
    /// What the model is told about it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// A delta announcement: what changed in a set the model was told about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaAnnouncement {
    /// Which set (`deferred_tools`, `agent_listing`, `mcp_instructions`, or a user's own).
    pub set: String,
    /// Entries added since the last announcement.
    #[serde(default)]
    pub added: Vec<DeltaItem>,
    /// Names removed since the last announcement.
    #[serde(default)]
    pub removed: Vec<String>,
    /// Whether this is the first announcement of the set (since the last compaction).
    #[serde(default)]
    pub initial: bool,
}

/// The payload of an attachment message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Attachment {
    /// An `@`-mentioned file, read within the workspace.
    File {
        /// The path as mentioned (relative to the workspace root).
        path: String,
        /// The text read (possibly cut).
        content: String,
        /// Whether the content was cut at the size or line limit.
        #[serde(default)]
        truncated: bool,
    },
    /// An `@`-mentioned directory.
    Directory {
        /// The path as mentioned.
        path: String,
        /// Its entries (possibly cut).
        entries: Vec<String>,
        /// Whether the listing was cut.
        #[serde(default)]
        truncated: bool,
    },
    /// An instructions file found near a path the user mentioned.
    NestedInstructions {
        /// The file's path.
        path: String,
        /// Its content.
        content: String,
    },
    /// The date changed since the session began.
    DateChange {
        /// The new date.
        date: String,
    },
    /// A command the user queued while the model was working.
    QueuedCommand {
        /// What the user typed.
        prompt: String,
    },
    /// A reminder of the todo list.
    TodoReminder {
        /// The items.
        items: Vec<TodoItem>,
    },
    /// How much of the context window is used.
    TokenUsage {
        /// Tokens used.
        used: u64,
        /// The window.
        total: u64,
    },
    /// A delta announcement.
    Delta(DeltaAnnouncement),
    /// A sub-agent the user mentioned.
    AgentMention {
        /// The agent's name.
        agent: String,
    },
    /// Free text for the model, shown as a system reminder.
    Reminder {
        /// The text.
        text: String,
    },
    /// Something for the UI only: never shown to the model.
    UiOnly {
        /// A label for the UI.
        label: String,
    },
    /// A Claude Code `attachment` record of a kind with no typed variant here, kept as it
    /// was written. The normalizer shows it to the model only for the kinds Claude Code is
    /// known to render (see `threadline_normalize::render_attachment`).
    ClaudeCode {
        /// Claude Code's `attachment.type` (e.g. `skill_listing`, `prompt_snapshot`).
        attachment_type: String,
        /// The whole `attachment` object, `type` included.
        payload: Value,
    },
    /// A Claude Code `attachment` record of a kind with no typed variant here, with the texts
    /// Claude Code rendered for the model (2.1.3xx records carry them as `rendered`): the
    /// normalizer sends exactly those texts.
    ClaudeCodeRendered {
        /// Claude Code's `attachment.type` (e.g. `session_context`, `environment`).
        attachment_type: String,
        /// The rendered texts, in order, as Claude Code wrote them (each usually wrapped in
        /// `<system-reminder>` tags already).
        texts: Vec<String>,
        /// `renderedRole`: where Claude Code places the texts on models that take
        /// mid-conversation system messages (`system`), or `user`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// `renderedBesideToolResult`: placed after the tool results of the user turn.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        beside_tool_result: bool,
        /// The whole `attachment` object, `type` included.
        payload: Value,
    },
}
