//! System messages: events of the session that the UI and the transcript record. Only
//! `local_command` ever reaches the model (as user text).

use serde::{Deserialize, Serialize};

use crate::header::MessageId;

/// How serious an informational message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// For information.
    Info,
    /// Something the user should notice.
    Warning,
    /// Something failed.
    Error,
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The context passed the threshold.
    Auto,
    /// The user asked.
    Manual,
    /// The API answered `prompt is too long`.
    Reactive,
}

/// The kinds of system message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SystemKind {
    /// A note for the user.
    Informational {
        /// How serious.
        level: Level,
        /// The text.
        content: String,
    },
    /// The output of a local command; the model sees it as user text.
    LocalCommand {
        /// The output.
        content: String,
    },
    /// Everything before this was compacted.
    CompactBoundary {
        /// What started it.
        trigger: CompactTrigger,
        /// Estimated tokens before compaction.
        pre_tokens: u64,
        /// The last message before the compaction.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_message_id: Option<MessageId>,
    },
    /// Old tool results were cleared.
    MicrocompactBoundary {
        /// The tool uses whose results were cleared.
        cleared_tool_use_ids: Vec<String>,
        /// Estimated tokens saved.
        tokens_saved: u64,
    },
    /// The API failed and the request will be retried.
    ApiError {
        /// What failed.
        message: String,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// The wait before the next attempt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
    },
    /// A tool is retried after the user granted permission.
    PermissionRetry {
        /// What is retried.
        content: String,
    },
    /// What the stop hooks said.
    StopHookSummary {
        /// Their output.
        content: String,
        /// Whether a hook kept the turn going.
        prevented_continuation: bool,
    },
    /// How long the turn took.
    TurnDuration {
        /// Milliseconds.
        duration_ms: u64,
    },
    /// This session was forked from another one (see [`crate::session_ops::fork`]): the
    /// first record of a fork. Never sent to the model.
    ForkedFrom {
        /// The source session's id (its transcript's file stem).
        session: String,
        /// The source message the fork ends with (its id in the source session).
        message: MessageId,
    },
    /// A title given to the session (the last one wins in a listing). Never sent to the
    /// model.
    Title {
        /// The title.
        title: String,
    },
    /// The API's cache diagnostics for a response (beta `cache-diagnosis-2026-04-07`) beside
    /// the loop's own break detection for its request. Never sent to the model.
    CacheDiagnosis {
        /// The response (`msg_…`) the diagnostics came with.
        api_message_id: String,
        /// The response's `diagnostics`, as the API sent it: `null` (no divergence),
        /// `{"cache_miss_reason": null}` (pending) or `{"cache_miss_reason": {...}}`.
        diagnostics: serde_json::Value,
        /// Where the loop's own detection saw the request first diverge from the previous one
        /// (`model`, `system`, `tools`, `messages`, `other`; `none`: no divergence); absent
        /// when it had nothing to compare with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        predicted: Option<String>,
        /// `agrees`, `disagrees` or `inconclusive` (pending, `unavailable`, not found, or no
        /// prediction).
        agreement: String,
    },
}
