//! The request's messages as one flat list of references, gathered once per validation.
//!
//! A [`threadline_wire::Messages`] keeps its messages in shared chunks, so that a turn's
//! requests copy nothing; reaching message `i` there takes a division and two more loads than
//! a slice does. The validator reads every message several times (roles, then each turn's
//! blocks, then the rarer rules), so it gathers the references once — a pass over the chunk
//! slices and 8 bytes per message — and every rule indexes a plain slice.

use threadline_wire::MessageParam;

/// Borrowed references to a request's messages, in order.
#[derive(Debug, Clone, Copy)]
pub(super) struct MessageList<'a> {
    refs: &'a [&'a MessageParam],
}

impl<'a> MessageList<'a> {
    /// The references to `messages`, for [`MessageList::new`] to borrow.
    pub(super) fn gather(messages: &'a threadline_wire::Messages) -> Vec<&'a MessageParam> {
        messages.iter().collect()
    }

    /// A list over references gathered by [`MessageList::gather`].
    pub(super) fn new(refs: &'a [&'a MessageParam]) -> Self {
        MessageList { refs }
    }

    /// How many messages.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.refs.len()
    }

    /// Whether there are none.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// The message at `index`.
    #[inline]
    pub(super) fn get(&self, index: usize) -> Option<&'a MessageParam> {
        self.refs.get(index).copied()
    }

    /// The message at `index` (panics when out of bounds, as indexing does).
    #[inline]
    pub(super) fn at(&self, index: usize) -> &'a MessageParam {
        self.refs[index]
    }

    /// The messages in order.
    #[inline]
    pub(super) fn iter(&self) -> std::iter::Copied<std::slice::Iter<'a, &'a MessageParam>> {
        self.refs.iter().copied()
    }

    /// The messages at the indices in `range` (panics when out of bounds, as slicing does).
    #[inline]
    pub(super) fn range(
        &self,
        range: std::ops::Range<usize>,
    ) -> std::iter::Copied<std::slice::Iter<'a, &'a MessageParam>> {
        self.refs[range].iter().copied()
    }
}
