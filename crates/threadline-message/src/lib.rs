//! The internal message array of an LLM agent: the session's single source of truth.
//!
//! The array is heterogeneous and append-mostly: user and assistant messages, system events,
//! attachments, tool progress, tombstones and tool-use summaries. The UI, the transcript,
//! compaction and normalization all read it; the request sent to the API is derived from it
//! (by `threadline-normalize`) and never stored.
//!
//! ```
//! use threadline_message::{Message, Attachment};
//! use threadline_wire::Content;
//!
//! let session = vec![
//!     Message::user_text("List the files"),
//!     Message::attachment(Attachment::DateChange { date: "2026-11-29".into() }),
//!     Message::synthetic_error_result("toolu_01", "interrupted by user"),
//! ];
//! let line = serde_json::to_string(&session[0])?;
//! let back: Message = serde_json::from_str(&line)?;
//! assert_eq!(back, session[0]);
//! # Ok::<(), serde_json::Error>(())
//! ```
#![forbid(unsafe_code)]

pub mod attachment;
pub mod claude_code;
pub mod claude_code_project;
pub mod determinism;
pub mod header;
pub mod json_line;
pub mod message;
pub mod response_usage;
pub mod rewrites;
pub mod session_ops;
pub mod system;
pub mod transcript;

pub use attachment::{Attachment, DeltaAnnouncement, DeltaItem, TodoItem};
pub use claude_code::{
    ImportOptions, ImportResult, import_claude_code, import_claude_code_file,
    is_claude_code_transcript,
};
pub use header::{Header, MessageId, Timestamp};
pub use message::{
    AssistantMessage, AttachmentMessage, CONTINUE_AFTER_SUMMARY, MISSING_TOOL_RESULT, Message,
    ProgressMessage, SystemMessage, Tombstone, ToolUseSummary, UserMessage, tool_result_block,
};
pub use response_usage::UsageTotals;
pub use rewrites::{Record, fold_rewrites};
pub use session_ops::{Forked, Rewound, SessionInfo, SessionOpError, fork, rewind, summarize};
pub use system::{CompactTrigger, Level, SystemKind};
pub use transcript::{
    LineProblem, LineProblemKind, ReadOptions, TranscriptError, TranscriptRead, TranscriptWriter,
    WriterOptions, parse_transcript, read_transcript,
};
