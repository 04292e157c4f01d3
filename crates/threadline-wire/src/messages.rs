//! The conversation of a request, its messages shared rather than copied: [`Messages`].
//!
//! A conversation's requests repeat every earlier message. When each request owned a copy,
//! every turn cloned the whole history once for the request and again for each retry, and
//! dropped the copies after: work that grows with the history although almost nothing in it
//! changed. [`Messages`] holds each message behind an [`Arc`]: cloning a request, or building it
//! from the normalizer's output, shares the messages; changing one (a cache marker placed on
//! it) copies that message only ([`Arc::make_mut`]).
//!
//! Sharing also gives a cheap test of sameness: two entries that are the same allocation
//! ([`Messages::same_message`]) hold equal messages, so whoever keeps what it derived from a
//! message (the cache planner's hashes, the client's serialized bytes) can keep the message's
//! `Arc` and compare pointers before comparing contents. An entry is only ever changed through
//! `make_mut`, which copies it when it is shared, so a kept `Arc` never sees its message change.
//!
//! It reads like a `Vec<MessageParam>` (indexing, `iter`, `push`, `last_mut`, …) and serializes
//! as the same JSON array.
//!
//! ```
//! use threadline_wire::{ContentBlock, MessageParam, Messages};
//!
//! let mut messages = Messages::from(vec![MessageParam::user(vec![ContentBlock::text("Hi")])]);
//! let copy = messages.clone(); // shares the message
//! assert!(Messages::same_message(&messages.shared()[0], &copy.shared()[0]));
//! messages[0].content = threadline_wire::content::Content::Text("Hello".into());
//! assert!(!Messages::same_message(&messages.shared()[0], &copy.shared()[0]));
//! assert_eq!(serde_json::to_string(&copy)?, r#"[{"role":"user","content":[{"type":"text","text":"Hi"}]}]"#);
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::request::MessageParam;

/// The messages of a request, each shared behind an [`Arc`]. See the
/// [module documentation](self).
#[derive(Clone, Default)]
pub struct Messages {
    items: Vec<Arc<MessageParam>>,
}

impl Messages {
    /// No messages.
    pub fn new() -> Messages {
        Messages::default()
    }

    /// No messages, with room for `capacity`.
    pub fn with_capacity(capacity: usize) -> Messages {
        Messages {
            items: Vec::with_capacity(capacity),
        }
    }

    /// Whether `a` and `b` are the same shared message (then they are equal; unequal
    /// allocations may still hold equal messages).
    pub fn same_message(a: &Arc<MessageParam>, b: &Arc<MessageParam>) -> bool {
        Arc::ptr_eq(a, b)
    }

    /// Whether `a` and `b` hold equal messages: the same shared message (a pointer
    /// comparison, nothing read), else equal contents. What a cache keyed by messages asks.
    pub fn same_or_equal(a: &Arc<MessageParam>, b: &Arc<MessageParam>) -> bool {
        Arc::ptr_eq(a, b) || a == b
    }

    /// The shared entries, for those who keep what they derived from each message.
    pub fn shared(&self) -> &[Arc<MessageParam>] {
        &self.items
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The message at `index`.
    pub fn get(&self, index: usize) -> Option<&MessageParam> {
        self.items.get(index).map(|m| &**m)
    }

    /// The message at `index`, copied first if it is shared.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut MessageParam> {
        self.items.get_mut(index).map(Arc::make_mut)
    }

    /// The first message.
    pub fn first(&self) -> Option<&MessageParam> {
        self.items.first().map(|m| &**m)
    }

    /// The last message.
    pub fn last(&self) -> Option<&MessageParam> {
        self.items.last().map(|m| &**m)
    }

    /// The first message, copied first if it is shared.
    pub fn first_mut(&mut self) -> Option<&mut MessageParam> {
        self.items.first_mut().map(Arc::make_mut)
    }

    /// The last message, copied first if it is shared.
    pub fn last_mut(&mut self) -> Option<&mut MessageParam> {
        self.items.last_mut().map(Arc::make_mut)
    }

    /// Appends `message`.
    pub fn push(&mut self, message: MessageParam) {
        self.items.push(Arc::new(message));
    }

    /// Appends a shared message.
    pub fn push_shared(&mut self, message: Arc<MessageParam>) {
        self.items.push(message);
    }

    /// Removes the last message (copied out if it is shared).
    pub fn pop(&mut self) -> Option<MessageParam> {
        self.items.pop().map(Arc::unwrap_or_clone)
    }

    /// Inserts `message` at `index`, shifting the rest. Panics when `index > len`, as
    /// `Vec::insert` does.
    pub fn insert(&mut self, index: usize, message: MessageParam) {
        self.items.insert(index, Arc::new(message));
    }

    /// Removes the message at `index` (copied out if it is shared). Panics when out of
    /// bounds, as `Vec::remove` does.
    pub fn remove(&mut self, index: usize) -> MessageParam {
        Arc::unwrap_or_clone(self.items.remove(index))
    }

    /// Swaps two messages. Panics when either is out of bounds, as `slice::swap` does.
    pub fn swap(&mut self, a: usize, b: usize) {
        self.items.swap(a, b);
    }

    /// Keeps the first `len` messages.
    pub fn truncate(&mut self, len: usize) {
        self.items.truncate(len);
    }

    /// Removes every message.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Keeps the messages `keep` says to keep.
    pub fn retain(&mut self, mut keep: impl FnMut(&MessageParam) -> bool) {
        self.items.retain(|m| keep(m));
    }

    /// The messages in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inner: self.items.iter(),
        }
    }

    /// The messages at the indices in `range` (panics when out of bounds, as slicing does).
    pub fn range(
        &self,
        range: impl std::slice::SliceIndex<[Arc<MessageParam>], Output = [Arc<MessageParam>]>,
    ) -> Iter<'_> {
        Iter {
            inner: self.items[range].iter(),
        }
    }

    /// The messages in order, each copied first if it is shared.
    pub fn iter_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = &mut MessageParam> + ExactSizeIterator {
        self.items.iter_mut().map(Arc::make_mut)
    }

    /// The messages as an owned `Vec` (each copied if it is shared).
    pub fn to_vec(&self) -> Vec<MessageParam> {
        self.iter().cloned().collect()
    }

    /// The messages as an owned `Vec`, copying only the shared ones.
    pub fn into_vec(self) -> Vec<MessageParam> {
        self.items.into_iter().map(Arc::unwrap_or_clone).collect()
    }

    /// The messages from `from` on (sharing them).
    pub fn tail(&self, from: usize) -> Messages {
        Messages {
            items: self.items.get(from..).unwrap_or_default().to_vec(),
        }
    }
}

/// The messages of a [`Messages`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    inner: std::slice::Iter<'a, Arc<MessageParam>>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a MessageParam;

    fn next(&mut self) -> Option<&'a MessageParam> {
        self.inner.next().map(|m| &**m)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }

    fn nth(&mut self, n: usize) -> Option<&'a MessageParam> {
        self.inner.nth(n).map(|m| &**m)
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|m| &**m)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl std::iter::FusedIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a MessageParam;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Messages {
    type Item = &'a mut MessageParam;
    type IntoIter = std::iter::Map<
        std::slice::IterMut<'a, Arc<MessageParam>>,
        fn(&'a mut Arc<MessageParam>) -> &'a mut MessageParam,
    >;

    /// Each message copied first if it is shared.
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter_mut().map(Arc::make_mut)
    }
}

impl IntoIterator for Messages {
    type Item = MessageParam;
    type IntoIter = std::iter::Map<
        std::vec::IntoIter<Arc<MessageParam>>,
        fn(Arc<MessageParam>) -> MessageParam,
    >;

    /// Each message moved out, copied only when it is shared.
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().map(Arc::unwrap_or_clone)
    }
}

impl std::ops::Index<usize> for Messages {
    type Output = MessageParam;

    fn index(&self, index: usize) -> &MessageParam {
        &self.items[index]
    }
}

impl std::ops::IndexMut<usize> for Messages {
    fn index_mut(&mut self, index: usize) -> &mut MessageParam {
        Arc::make_mut(&mut self.items[index])
    }
}

impl From<Vec<MessageParam>> for Messages {
    fn from(messages: Vec<MessageParam>) -> Messages {
        messages.into_iter().collect()
    }
}

impl From<&[MessageParam]> for Messages {
    fn from(messages: &[MessageParam]) -> Messages {
        messages.iter().cloned().collect()
    }
}

impl From<Messages> for Vec<MessageParam> {
    fn from(messages: Messages) -> Vec<MessageParam> {
        messages.into_vec()
    }
}

impl FromIterator<MessageParam> for Messages {
    fn from_iter<I: IntoIterator<Item = MessageParam>>(iter: I) -> Messages {
        Messages {
            items: iter.into_iter().map(Arc::new).collect(),
        }
    }
}

impl FromIterator<Arc<MessageParam>> for Messages {
    fn from_iter<I: IntoIterator<Item = Arc<MessageParam>>>(iter: I) -> Messages {
        Messages {
            items: iter.into_iter().collect(),
        }
    }
}

impl Extend<MessageParam> for Messages {
    fn extend<I: IntoIterator<Item = MessageParam>>(&mut self, iter: I) {
        self.items.extend(iter.into_iter().map(Arc::new));
    }
}

impl PartialEq for Messages {
    /// Message by message, the same shared message being equal without a look inside.
    fn eq(&self, other: &Messages) -> bool {
        self.items.len() == other.items.len()
            && self
                .items
                .iter()
                .zip(&other.items)
                .all(|(a, b)| Messages::same_or_equal(a, b))
    }
}

impl PartialEq<[MessageParam]> for Messages {
    fn eq(&self, other: &[MessageParam]) -> bool {
        self.items.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b)
    }
}

impl PartialEq<Vec<MessageParam>> for Messages {
    fn eq(&self, other: &Vec<MessageParam>) -> bool {
        *self == **other
    }
}

impl PartialEq<Messages> for Vec<MessageParam> {
    fn eq(&self, other: &Messages) -> bool {
        other == self
    }
}

impl std::fmt::Debug for Messages {
    /// As the list of messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Messages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Messages, D::Error> {
        Vec::<MessageParam>::deserialize(deserializer).map(Messages::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContentBlock;

    fn user(text: &str) -> MessageParam {
        MessageParam::user(vec![ContentBlock::text(text)])
    }

    #[test]
    fn a_clone_shares_and_a_change_copies_only_the_changed_message() {
        let mut messages = Messages::from(vec![user("a"), user("b")]);
        let kept = messages.clone();
        messages[1] = user("B");
        assert!(Messages::same_message(
            &messages.shared()[0],
            &kept.shared()[0]
        ));
        assert!(!Messages::same_message(
            &messages.shared()[1],
            &kept.shared()[1]
        ));
        assert_eq!(kept[1], user("b"));
        assert_ne!(messages, kept);
    }

    #[test]
    fn it_serializes_and_reads_as_an_array_of_messages() {
        let messages = Messages::from(vec![user("a"), user("b \"q\"")]);
        let json = serde_json::to_string(&messages).expect("serializes");
        let plain = serde_json::to_string(&messages.to_vec()).expect("serializes");
        assert_eq!(json, plain);
        let back: Messages = serde_json::from_str(&json).expect("reads");
        assert_eq!(back, messages);
        assert_eq!(back, messages.to_vec());
    }

    #[test]
    fn equal_messages_in_different_allocations_are_equal() {
        let a = Messages::from(vec![user("a")]);
        let b = Messages::from(vec![user("a")]);
        assert!(!Messages::same_message(&a.shared()[0], &b.shared()[0]));
        assert_eq!(a, b);
    }
}
