//! What flattening each message of a request gave, kept so that the next request of the same
//! conversation flattens only the messages that changed: [`PrefixMemo`].
//!
//! Flattening a message ([`Prefix::of`](crate::Prefix::of)) serializes each of its blocks and
//! hashes the bytes, and estimates its tokens: work proportional to the message's size. A
//! conversation's requests repeat every earlier message, so without a memo a turn costs as
//! much as the whole history. The memo keeps, for each message index, the message as it was
//! flattened and what each block gave: its own hash, its tokens, whether a marker may go on it,
//! whether it is thinking. The messages are kept shared (a request's [`Messages`] is a
//! persistent vector of shared messages: keeping it costs the same at any length), not
//! copied. A later request finds the leading messages it holds equal to them
//! ([`Messages::equal_prefix`]: those it shares chunk by chunk, without reading them, others by
//! `==`, no serialization, no allocation) and reuses what they gave; after those, a message
//! equal to the one kept at the same index reuses its facts too; any other message is
//! flattened again. Nothing is trusted: a message edited in the middle, a changed role, a
//! block moved, is simply not equal, and the result is always what flattening from scratch
//! gives (a property test in `tests/suite/planner_props.rs` checks it over hostile sessions).
//!
//! What depends on the request as a whole (the model, `tool_choice`, the thinking and effort
//! settings, which earlier thinking the model strips, the markers) is not in the memo's
//! per-message facts: it is mixed in when the pieces are assembled. The memo also keeps the
//! pieces the last flattening gave for its messages, with the running state they started
//! from: when everything before the messages flattens to that same state, the leading
//! messages that are still the same (and whose thinking is stripped as it was) take their
//! pieces as they are, and only the rest is assembled again. A turn then costs a comparison
//! per 64 earlier messages, a copy of the earlier pieces and the work on what changed.

use std::sync::Arc;

use threadline_wire::{MessageParam, Messages};

/// What flattening one block gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockFacts {
    /// Its own hash (markers excluded, its message's role and whether it starts the message
    /// mixed in).
    pub(crate) own_hash: u64,
    /// Its tokens.
    pub(crate) tokens: u64,
    /// Whether a marker may go on it.
    pub(crate) eligible: bool,
    /// Whether it is thinking or redacted thinking.
    pub(crate) thinking: bool,
}

/// What one message's blocks gave when it was flattened.
#[derive(Clone)]
pub(crate) struct MessageFacts {
    pub(crate) blocks: Vec<BlockFacts>,
}

/// The pieces the last flattening gave for its messages.
#[derive(Clone, Default)]
pub(crate) struct MessagePieces {
    /// What the flattening had before the first message: how many pieces, the running
    /// state, the cumulative tokens.
    pub(crate) start: (usize, u64, u64),
    /// The pieces of the messages, in order.
    pub(crate) pieces: Vec<crate::prefix::PrefixPiece>,
    /// Per message: where its pieces end in `pieces`, the running state and cumulative
    /// tokens after it (whether its thinking was stripped follows from
    /// [`PrefixMemo::strip_before`]).
    pub(crate) after: Vec<PiecesEnd>,
}

/// Where one message's pieces end, and the flattening's running state there.
#[derive(Clone, Copy)]
pub(crate) struct PiecesEnd {
    pub(crate) end: usize,
    pub(crate) state: u64,
    pub(crate) cumulative: u64,
}

/// The flattened messages of the last request recorded, by index. Valid for one token counter
/// (the planner's is always the estimate).
#[derive(Clone, Default)]
pub struct PrefixMemo {
    /// The messages flattened (shared with their request: a clone costs the same at any
    /// length, and the next request's shared prefix with them is found chunk by chunk).
    pub(crate) request: Messages,
    /// What each of them gave.
    pub(crate) messages: Vec<MessageFacts>,
    /// The indices of those that carry a cache marker, in order.
    pub(crate) marked: Vec<usize>,
    /// Where the model stripped earlier thinking when they were flattened (the index of the
    /// last user prompt; `None` when it keeps it).
    pub(crate) strip_before: Option<usize>,
    pub(crate) pieces: Option<MessagePieces>,
    /// The buffer of a prefix given back ([`PrefixMemo::recycle`]), for the next flattening.
    pub(crate) spare: Vec<crate::prefix::PrefixPiece>,
}

impl std::fmt::Debug for PrefixMemo {
    /// The number of messages held, not the messages (a planner's `Debug` stays short).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixMemo")
            .field("messages", &self.messages.len())
            .finish()
    }
}

impl PrefixMemo {
    /// An empty memo.
    pub fn new() -> PrefixMemo {
        PrefixMemo::default()
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        *self = PrefixMemo::default();
    }

    /// Takes back the buffer of a prefix no longer needed (the previous request's, once the
    /// next one is flattened): the next flattening writes its pieces there.
    pub fn recycle(&mut self, prefix: crate::Prefix) {
        if prefix.pieces.capacity() > self.spare.capacity() {
            self.spare = prefix.pieces;
        }
    }

    /// What the message at `index` gave, if the memo holds that very message there.
    pub(crate) fn get(&self, index: usize, message: &Arc<MessageParam>) -> Option<&[BlockFacts]> {
        self.messages
            .get(index)
            .filter(|_| self.request.holds(index, message))
            .map(|kept| kept.blocks.as_slice())
    }

    /// The indices of `messages` that may carry a cache marker: those after the prefix they
    /// hold equal to the memo's, and the memo's own marked ones before it. What a caller
    /// clearing the markers has to look at (the rest it knows to be clean without reading
    /// them).
    pub(crate) fn maybe_marked(&self, messages: &Messages) -> Vec<usize> {
        let shared = messages
            .equal_prefix(&self.request)
            .min(self.messages.len());
        self.marked
            .iter()
            .copied()
            .take_while(|&i| i < shared)
            .chain(shared..messages.len())
            .collect()
    }
}

/// How a flattening uses a memo.
pub(crate) enum MemoUse<'a> {
    /// No memo: everything is flattened.
    None,
    /// Reuses what the memo holds and leaves it as it is.
    Read(&'a PrefixMemo),
    /// Reuses what the memo holds and replaces it with the request's messages.
    Update(&'a mut PrefixMemo),
}
