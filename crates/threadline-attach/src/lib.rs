//! Context injection for an LLM agent: what goes into a request besides the conversation, on
//! three channels chosen by how often the content changes, so that the stable parts stay in
//! the prompt cache.
//!
//! | channel | where | refreshed | here |
//! |---|---|---|---|
//! | system-prompt append | end of `system` | once per session | [`SystemContext`], [`git_status_snapshot`] |
//! | synthetic context message | front of `messages`, `<system-reminder>` wrapped, with a "may or may not be relevant" caveat | once per session, built at request time, never stored | [`UserContext`] |
//! | attachment messages | after the latest turn | every turn | [`Source`]s run by a [`Collector`] |
//!
//! Attachments are typed data ([`threadline_message::Attachment`]); how each is shown to the
//! model is decided by `threadline_normalize::render_attachment`.
//!
//! ```
//! use threadline_attach::{Collector, DeltaSource, FileMentions, NestedInstructions, Turn, Workspace};
//! use threadline_message::{Attachment, DeltaItem, Message};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("src"))?;
//! std::fs::write(dir.path().join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n")?;
//! std::fs::write(dir.path().join("src/AGENTS.md"), "Keep functions short.\n")?;
//! let workspace = Workspace::new(dir.path())?;
//!
//! let collector = Collector::new()
//!     .with(FileMentions::new())
//!     .with(NestedInstructions::new())
//!     .with(DeltaSource::deferred_tools(|| vec![DeltaItem {
//!         name: "WebSearch".into(),
//!         description: "search the web".into(),
//!     }]));
//! let history = vec![Message::user_text("What does @src/lib.rs do? And @../secret?")];
//! let turn = Turn::new(&history)
//!     .with_input("What does @src/lib.rs do? And @../secret?")
//!     .with_workspace(&workspace);
//! let collected = collector.collect_blocking(&turn)?;
//!
//! // Phase 1 read the file; phase 2 found the instructions beside it and announced the tools.
//! assert!(matches!(&collected.attachments[0], Attachment::File { path, .. } if path == "src/lib.rs"));
//! assert!(matches!(&collected.attachments[1], Attachment::NestedInstructions { path, .. } if path == "src/AGENTS.md"));
//! assert!(matches!(&collected.attachments[2], Attachment::Delta(d) if d.initial));
//! // `..` was refused, and said so.
//! assert_eq!(
//!     collected.report[0].to_string(),
//!     "attachment source `file_mentions`: @../secret?: refused: `..` is not allowed: paths must stay inside the workspace",
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Guarantees
//!
//! - A source that fails, panics or runs past its timeout adds nothing and is reported; the
//!   other sources' attachments are unaffected ([`Collector`]).
//! - Nothing outside the workspace is read: `..`, absolute paths outside the root and symbolic
//!   links leading out are refused before any content is read — and before anything outside
//!   is even looked at, so a link out gets the same refusal whether its target exists or
//!   not; no file is read past its byte limit ([`Workspace`]).
//! - A write resolved by [`Workspace::resolve_for_write`] never lands on a control path
//!   (`.git` at any depth, agent and tool configuration: [`ControlPaths`]), through a link,
//!   a case alias or otherwise.
//! - Delta announcements are derived from the history alone ([`delta`]).
//! - The same state gives the same attachments, in the same order, byte for byte: sources are
//!   reported in the order they were added, listings and sets are sorted, and no clock is read
//!   (the date is an input).
#![forbid(unsafe_code)]

pub mod agent_definitions;
pub mod collector;
mod context_entries;
pub mod delta;
pub mod history;
pub mod mention;
pub mod source;
pub mod sources;
pub mod system_context;
mod today;
pub mod user_context;

pub use collector::{
    Collected, Collector, DEFAULT_SOURCE_TIMEOUT, EntryKind, Failure, ReportEntry,
};
pub use delta::{AGENT_LISTING, DEFERRED_TOOLS, DeltaSource, MCP_INSTRUCTIONS};
pub use mention::{AgentMentions, FileMentions, mentions};
pub use source::{
    Note, Phase, Source, SourceContext, SourceError, SourceFuture, SourceOutput, Thread, Turn,
};
pub use sources::date_change::DateChange;
pub use sources::nested_instructions::NestedInstructions;
pub use sources::queued_commands::QueuedCommands;
pub use sources::todo_reminders::TodoReminders;
pub use sources::token_usage::TokenUsage;
pub use system_context::{SystemContext, git_status_snapshot};
pub use today::{is_iso_date, utc_today};
pub use user_context::{CONTEXT_CAVEAT, UserContext};
// The workspace types of this crate's API (`Turn::with_workspace`, sources' limits and
// refusals), from `threadline-workspace`, which owns them.
pub use threadline_workspace::{
    ControlPaths, DEFAULT_CONTROL_PATHS, Limits, PathKind, Refusal, Resolved, Truncation, Workspace,
};
