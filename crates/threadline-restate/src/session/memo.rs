//! The cache planner's memo, carried from a session's turn to its next on the worker that
//! keeps the session.
//!
//! Each turn's planner starts fresh, so that a replay on another worker places the same
//! markers (see [`super::turn_loop`]). A fresh planner flattens the whole history on its first
//! request: it serializes and hashes every block, the one cost of a kept session's turn that
//! still grows with the history. What that flattening gave for each message (its
//! [`PrefixMemo`]) only saves work — the planner takes a message's facts from the memo only
//! when the message is the very one, or an equal one, and its markers and what it records are
//! those of a planner without the memo (the property `the_memo_never_changes_a_flattening_or_a_plan`
//! in `threadline-cache` plans across such turns both ways and compares the bytes). So the
//! kept session carries the memo of its last turn's planner, and the next turn's fresh planner
//! starts from it. A session loaded from its stored bytes starts with none.

use std::sync::{Arc, Mutex, PoisonError};

use threadline_cache::PrefixMemo;
use threadline_query::CachePlanner;
use threadline_wire::MessagesRequest;

/// Where a turn's planner leaves its memo when the turn's loop drops it.
#[derive(Clone, Default)]
pub(crate) struct MemoSlot(Arc<Mutex<Option<PrefixMemo>>>);

impl MemoSlot {
    /// The memo left, if the loop has dropped its planner (an empty one otherwise).
    pub(crate) fn take(&self) -> PrefixMemo {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default()
    }

    /// Wraps a turn's planner: it starts from `memo` and leaves its own in this slot when the
    /// loop drops it.
    pub(crate) fn carry(
        &self,
        mut planner: Box<dyn CachePlanner>,
        memo: PrefixMemo,
    ) -> Box<dyn CachePlanner> {
        planner.give_memo(memo);
        Box::new(Carried {
            planner,
            slot: self.clone(),
        })
    }
}

/// A turn's planner, leaving its memo in `slot` when dropped.
struct Carried {
    planner: Box<dyn CachePlanner>,
    slot: MemoSlot,
}

impl CachePlanner for Carried {
    fn plan(&mut self, request: &mut MessagesRequest) {
        self.planner.plan(request);
    }

    fn reset(&mut self) {
        self.planner.reset();
    }

    fn plan_unrecorded(&mut self, request: &mut MessagesRequest) {
        self.planner.plan_unrecorded(request);
    }

    fn take_memo(&mut self) -> Option<PrefixMemo> {
        self.planner.take_memo()
    }

    fn give_memo(&mut self, memo: PrefixMemo) {
        self.planner.give_memo(memo);
    }
}

impl Drop for Carried {
    fn drop(&mut self) {
        let memo = self.planner.take_memo();
        *self.slot.0.lock().unwrap_or_else(PoisonError::into_inner) = memo;
    }
}
