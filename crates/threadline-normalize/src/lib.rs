//! Turns an agent's internal message array into the `messages` of a Messages API request that
//! the API accepts, and reports every repair it had to make.
//!
//! ```
//! use threadline_message::Message;
//! use threadline_normalize::{normalize, normalize_strict, Options, RepairKind};
//! use threadline_wire::content::ToolUseBlock;
//! use threadline_wire::model::ModelTable;
//! use threadline_validate::validate;
//! use threadline_wire::{ContentBlock, MessagesRequest};
//!
//! let read = ContentBlock::ToolUse(ToolUseBlock::new(
//!     "toolu_01",
//!     "Read",
//!     serde_json::json!({"file_path": "src/lib.rs"}),
//! ));
//! // The stream was cut after the tool use: its result was never recorded.
//! let session = vec![
//!     Message::user_text("What does lib.rs export?"),
//!     Message::assistant_fragment("msg_01", "claude-sonnet-4-5", vec![ContentBlock::text("Let me look.")]),
//!     Message::assistant_fragment("msg_01", "claude-sonnet-4-5", vec![read]),
//! ];
//!
//! let normalized = normalize(&session, &Options::default());
//! assert_eq!(normalized.messages.len(), 3); // user, the merged response, the synthetic result
//! assert_eq!(normalized.report.summary(), "1 repair: 1 synthetic tool result");
//! assert!(matches!(
//!     &normalized.report.repairs[0].kind,
//!     RepairKind::SyntheticToolResult { tool_use_id } if tool_use_id == "toolu_01"
//! ));
//!
//! // The API would accept it.
//! let request = MessagesRequest::new("claude-sonnet-4-5", 1024, normalized.messages);
//! let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
//! assert!(validate(&request, model).is_empty());
//!
//! // Strict mode refuses to repair, and says what would have been repaired.
//! let error = normalize_strict(&session, &Options::default()).unwrap_err();
//! assert_eq!(error.report.len(), 1);
//! ```
//!
//! # The pipeline
//!
//! Ten named passes, in this order (each pass's documentation states what it assumes and
//! guarantees; `src/pipeline.rs` says why the order is what it is, and its tests swap pairs of
//! passes to show what goes wrong):
//!
//! 1. **reorder attachments** — each attachment bubbles up to right after the nearest
//!    assistant message or tool-result message above it (one O(N) pass);
//! 2. **drop what never goes to the API** — virtual messages, progress, tool-use summaries,
//!    tombstones and the messages they retract, replayed copies of a message (same id),
//!    API-error messages, system messages (except local command output, which becomes user
//!    text), stale `cache_control` markers;
//! 3. **render attachments** — as `<system-reminder>` text (see [`render_attachment`]);
//! 4. **merge assistant fragments** sharing an API message id, across tool-result messages;
//! 5. **merge consecutive messages** of one role, tool results first, text blocks kept apart;
//! 6. **thinking hygiene** — unsigned or misplaced thinking dropped, orphaned thinking-only
//!    messages dropped wherever they are (a later answer never changes what was sent before
//!    it), trailing thinking of a final assistant stripped;
//! 7. **empty content** — blank text removed, emptied assistants dropped, empty users given
//!    [`EMPTY_PLACEHOLDER`];
//! 8. **error results text-only** — images and documents removed from `is_error` results;
//! 9. **media cap** — at most [`Options::media_limit`] images and documents, oldest dropped;
//! 10. **ensure tool-result pairing** — the safety net: synthetic results for unanswered tool
//!     uses, orphan and duplicate results removed, duplicate tool uses removed, unanswered
//!     server tool uses removed, results moved first, invalid ids rewritten.
//!
//! Finally the end is settled: a final assistant message (a prefill) loses trailing thinking
//! and trailing whitespace, and an empty request gets one placeholder user message. Then the
//! start: a request whose first message is an assistant message (other than an on-demand
//! compaction block, which must be first) gets that placeholder user message before it, so
//! that the request before the first answer (the placeholder alone, when nothing before the
//! answer reaches the API) is still what every later request starts with.
//!
//! # Guarantees
//!
//! - [`normalize`] never fails and never panics, whatever the input.
//! - Its output passes `threadline_validate::validate` with no violation for a model that accepts
//!   prefill, with no thinking configuration and no tools (the request the pipeline can
//!   vouch for; model-specific rules such as prefill support stay the caller's choice).
//! - Deterministic: the same input gives byte-identical output; every synthetic text is a
//!   constant.
//! - Idempotent: normalizing the output again (see [`to_internal`]) changes nothing and
//!   repairs nothing.
//! - Nothing typed is lost: every non-blank text block of every user message that reaches the
//!   API (not virtual, not retracted, not a replay of a message with the same id) is in the
//!   output, in order.
//! - O(N) in messages and blocks: the input is cloned once; passes move values.
//!
//! Non-local decisions, for anyone normalizing only a suffix: the media cap counts the whole
//! request; duplicate tool use ids are found across the whole array; "the latest assistant
//! message" (thinking hygiene) and "the final message" (settling) depend on the end.
#![forbid(unsafe_code)]

mod draft;
pub mod from_compaction;
mod ids;
pub mod implied;
pub mod incremental;
mod passes;
mod pipeline;
pub mod prefix_change;
mod report;
#[cfg(test)]
mod scenarios;
#[cfg(test)]
mod testing;

use threadline_message::Message;
use threadline_wire::MessageParam;

pub use draft::{INTERNAL_TIMESTAMP, to_internal};
pub use implied::{ImpliedRequest, ImpliedRequests, ImpliedView, implied_requests};
pub use incremental::{FullReason, IncrementalUpdate, Normalizer};
pub use passes::render_attachments::{CLAUDE_CODE_VISIBLE, render_attachment};
pub use prefix_change::{PrefixChange, PrefixWatch};
pub use report::{Pass, Repair, RepairKind, Report};

/// The text of a user message that would otherwise be empty (and of the one message of a
/// request that would otherwise have none).
pub const EMPTY_PLACEHOLDER: &str = "(no content)";

/// The text that replaces an image or document dropped over the media limit.
pub const MEDIA_OMITTED: &str =
    "[image or document omitted: the request's limit on images and documents was reached]";

/// The content of an error tool result whose images and documents were all removed.
pub const ERROR_MEDIA_OMITTED: &str = "[image or document omitted: error results carry text only]";

/// The knobs of the pipeline. `Options::default()` is what the API needs; strict mode is a
/// separate function ([`normalize_strict`]), not an option.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// At most this many image and document blocks per request, nested ones (in tool results)
    /// included; the oldest beyond it are replaced by [`MEDIA_OMITTED`]. Default 100, the
    /// API's limit for 200k-context models (others accept 600).
    pub media_limit: usize,
    /// Keep the `cache_control` markers found on the internal blocks. Default `false`: they
    /// are removed, because markers belong to one request's cache plan and the cache planner
    /// places fresh ones on the normalized request. When `true` they are kept as they are,
    /// and the caller answers for the API's limits on them (at most four, TTL order).
    pub keep_cache_control: bool,
    /// Send a paused turn back as it is. When the array ends with an assistant message (no
    /// client tool uses) whose `server_tool_use` has no result yet — a turn the API paused
    /// with `stop_reason: pause_turn` — that call is kept, which is how the API resumes the
    /// turn. Default `false`: the call is removed (`ServerToolUseRemoved`), because the API
    /// accepts it only while the request still defines that server tool, and the normalizer
    /// does not see the tools. The query loop, which sends the same tools every turn, turns
    /// it on.
    pub resume_paused_turn: bool,
    /// Send only what follows the last server-side `compaction` block: the messages before
    /// the assistant message holding it, and that message's blocks before it, are dropped
    /// (the API ignores them anyway; see [`from_compaction`]). The request may then start with
    /// that assistant message. Default `false`; the query loop turns it on.
    pub from_last_compaction: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            media_limit: 100,
            keep_cache_control: false,
            resume_paused_turn: false,
            from_last_compaction: false,
        }
    }
}

impl Options {
    /// These options with another media limit.
    pub fn with_media_limit(mut self, media_limit: usize) -> Self {
        self.media_limit = media_limit;
        self
    }

    /// These options sending a paused turn back as it is (see [`Options::resume_paused_turn`]).
    pub fn with_resume_paused_turn(mut self, resume: bool) -> Self {
        self.resume_paused_turn = resume;
        self
    }

    /// These options sending only what follows the last `compaction` block (see
    /// [`Options::from_last_compaction`]).
    pub fn with_from_last_compaction(mut self, on: bool) -> Self {
        self.from_last_compaction = on;
        self
    }

    /// These options keeping (or removing) the internal blocks' cache markers.
    pub fn with_keep_cache_control(mut self, keep: bool) -> Self {
        self.keep_cache_control = keep;
        self
    }
}

/// The result of [`normalize`].
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// The request's `messages`.
    pub messages: Vec<MessageParam>,
    /// Every repair made to get there.
    pub report: Report,
}

/// The `messages` of a Messages API request for the internal array `messages`, and the report
/// of the repairs made. Never fails, never panics; see the [crate documentation](crate) for
/// the pipeline and its guarantees.
pub fn normalize(messages: &[Message], options: &Options) -> Normalized {
    let start = if options.from_last_compaction {
        from_compaction::last_compaction_start(messages)
    } else {
        0
    };
    pipeline::run(&messages[start..], options)
}

/// The array needed repairs and strict mode refused to make them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the message array needs repairs before the API accepts it: {report}")]
#[non_exhaustive]
pub struct StrictError {
    /// The repairs [`normalize`] would have made.
    pub report: Report,
}

impl StrictError {
    /// The repairs [`normalize`] would have made.
    pub fn repairs(&self) -> &[Repair] {
        &self.report.repairs
    }
}

/// [`normalize`], but an error instead of any repair: for tests that assert a session is
/// well-formed. The conversions every session goes through (dropping UI-only messages,
/// rendering attachments, merging fragments and consecutive messages, removing stale cache
/// markers) are not repairs and pass.
pub fn normalize_strict(
    messages: &[Message],
    options: &Options,
) -> Result<Vec<MessageParam>, StrictError> {
    let Normalized { messages, report } = normalize(messages, options);
    if report.is_empty() {
        Ok(messages)
    } else {
        Err(StrictError { report })
    }
}
