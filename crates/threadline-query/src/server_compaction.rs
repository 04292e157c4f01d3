//! What the loop does about server-side compaction (`compact_20260112`, asked for through
//! [`QueryConfig::context_management`](crate::QueryConfig::context_management)):
//!
//! - a response holding a `compaction` block resets the cache planner (the prefix the API
//!   renders now starts at the summary);
//! - the block stays in the history byte-identical, and the loop's normalization
//!   (`from_last_compaction`) sends only the block onward;
//! - `stop_reason: compaction` (with `pause_after_compaction`) is
//!   [`Transition::ServerCompactionPause`](crate::Transition::ServerCompactionPause): the turn
//!   goes back as it is and the model continues;
//! - usage is read through `threadline_wire::Usage::billed` (every iteration) and
//!   `Usage::context_tokens` (the last non-compaction pass).

use threadline_wire::{ContentBlock, ResponseMessage};

/// Whether `message` holds a server-side `compaction` block.
pub(crate) fn compacted(message: &ResponseMessage) -> bool {
    message
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::Compaction(_)))
}
