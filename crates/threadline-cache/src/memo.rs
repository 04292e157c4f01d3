//! What flattening each message of a request gave, kept so that the next request of the same
//! conversation flattens only the messages that changed: [`PrefixMemo`].
//!
//! Flattening a message ([`Prefix::of`](crate::Prefix::of)) serializes each of its blocks and
//! hashes the bytes, and estimates its tokens: work proportional to the message's size. A
//! conversation's requests repeat every earlier message, so without a memo a turn costs as
//! much as the whole history. The memo keeps, for each message index, the message as it was
//! flattened and what each block gave: its own hash, its tokens, whether a marker may go on it,
//! whether it is thinking. The message is kept shared (a request's
//! [`Messages`] hold each behind an `Arc`), not copied. A later
//! request whose message at the same index is the same shared message (a pointer comparison),
//! or else an equal one (`==`, no serialization, no allocation), reuses them; any other message
//! is flattened again. Nothing is trusted: a message edited in the middle, a changed role, a
//! block moved, is simply not equal, and the result is always what flattening from scratch
//! gives (a property test in `tests/suite/planner_props.rs` checks it over hostile sessions).
//!
//! What depends on the request as a whole (the model, `tool_choice`, the thinking and effort
//! settings, which earlier thinking the model strips, the markers) is not in the memo's
//! per-message facts: it is mixed in when the pieces are assembled. The memo also keeps the
//! pieces the last flattening gave for its messages, with the running state they started
//! from: when everything before the messages flattens to that same state, the leading
//! messages that are still the same (and whose thinking is stripped as it was) take their
//! pieces as they are, and only the rest is assembled again. A turn then costs a pointer
//! comparison per earlier message and the work on what changed.

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

/// One message as it was flattened, and what its blocks gave.
#[derive(Clone)]
pub(crate) struct MessageFacts {
    pub(crate) message: Arc<MessageParam>,
    pub(crate) blocks: Vec<BlockFacts>,
    /// Whether `message` has no cache marker.
    pub(crate) clean: bool,
}

impl MessageFacts {
    /// The facts of `message`, whose blocks gave `blocks`.
    pub(crate) fn of(message: &Arc<MessageParam>, blocks: Vec<BlockFacts>) -> MessageFacts {
        MessageFacts {
            message: Arc::clone(message),
            blocks,
            clean: !message.has_cache_control(),
        }
    }

    /// Whether these are the facts of `message`: the same shared message, else an equal one.
    pub(crate) fn holds(&self, message: &Arc<MessageParam>) -> bool {
        Messages::same_or_equal(&self.message, message)
    }
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
    /// tokens after it, and whether its thinking was stripped.
    pub(crate) after: Vec<PiecesEnd>,
}

/// Where one message's pieces end, and the flattening's running state there.
#[derive(Clone, Copy)]
pub(crate) struct PiecesEnd {
    pub(crate) end: usize,
    pub(crate) state: u64,
    pub(crate) cumulative: u64,
    pub(crate) stripped: bool,
}

/// The flattened messages of the last request recorded, by index. Valid for one token counter
/// (the planner's is always the estimate).
#[derive(Clone, Default)]
pub struct PrefixMemo {
    pub(crate) messages: Vec<MessageFacts>,
    pub(crate) pieces: Option<MessagePieces>,
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
        self.messages.clear();
        self.pieces = None;
    }

    /// What the message at `index` gave, if the memo holds that very message there.
    pub(crate) fn get(&self, index: usize, message: &Arc<MessageParam>) -> Option<&[BlockFacts]> {
        self.messages
            .get(index)
            .filter(|kept| kept.holds(message))
            .map(|kept| kept.blocks.as_slice())
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
