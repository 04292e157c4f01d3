//! For the compile-time checks that the drivers' futures are `Send` (test builds only).

use std::time::SystemTime;

use threadline_message::CompactTrigger;
use threadline_wire::MessagesRequest;
use threadline_wire::model::ModelTable;

use crate::autocompact::CompactContext;
use crate::reattach::{CurrentFiles, HistoryOnly};

/// The model of every check.
const MODEL: &str = "claude-sonnet-4-5";

/// Compiles only when `T` is `Send`.
pub(crate) fn assert_send<T: Send>(_: &T) {}

/// The request the session would send: [`MODEL`], no messages.
pub(crate) fn empty_base() -> MessagesRequest {
    MessagesRequest::new(MODEL, 8192, Vec::new())
}

/// An automatic compaction's context over `base`: [`MODEL`], a 1,000-token limit, the epoch,
/// files from the history only.
pub(crate) fn context(base: &MessagesRequest) -> CompactContext<'_> {
    let files: &dyn CurrentFiles = &HistoryOnly;
    CompactContext {
        model: ModelTable::builtin().resolve(MODEL).model(),
        base,
        limit: 1_000,
        now: SystemTime::UNIX_EPOCH,
        trigger: CompactTrigger::Auto,
        files,
    }
}
