//! What flattening each message of a request gave, kept so that the next request of the same
//! conversation flattens only the messages that changed: [`PrefixMemo`].
//!
//! Flattening a message ([`Prefix::of`](crate::Prefix::of)) serializes each of its blocks and
//! hashes the bytes, and estimates its tokens: work proportional to the message's size. A
//! conversation's requests repeat every earlier message, so without a memo a turn costs as
//! much as the whole history. The memo keeps, for each message index, the message as it was
//! flattened (its markers cleared) and what each block gave: its own hash, its tokens, whether
//! a marker may go on it, whether it is thinking. A later request whose message at the same
//! index is equal (`==`, no serialization, no allocation) reuses them; any other message is
//! flattened again. Nothing is trusted: a message edited in the middle, a changed role, a
//! block moved, is simply not equal, and the result is always what flattening from scratch
//! gives (a property test in `tests/suite/planner_props.rs` checks it over hostile sessions).
//!
//! What depends on the request as a whole (the model, `tool_choice`, the thinking and effort
//! settings, which earlier thinking the model strips, the markers) is not in the memo: it is
//! mixed in when the pieces are assembled.

use threadline_wire::MessageParam;

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
    pub(crate) message: MessageParam,
    pub(crate) blocks: Vec<BlockFacts>,
}

/// The flattened messages of the last request recorded, by index. Valid for one token counter
/// (the planner's is always the estimate).
#[derive(Clone, Default)]
pub struct PrefixMemo {
    pub(crate) messages: Vec<MessageFacts>,
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
    }

    /// What the message at `index` gave, if the memo holds that very message there.
    pub(crate) fn get(&self, index: usize, message: &MessageParam) -> Option<&[BlockFacts]> {
        self.messages
            .get(index)
            .filter(|kept| kept.message == *message)
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
