//! The conversation of a request, its messages shared rather than copied: [`Messages`].
//!
//! A conversation's requests repeat every earlier message. When each request owned a copy,
//! every turn cloned the whole history once for the request and again for each retry, and
//! dropped the copies after: work that grows with the history although almost nothing in it
//! changed. Even a list of shared messages costs a reference count per message to clone and
//! to drop. [`Messages`] holds its messages, each behind an [`Arc`], in chunks of 64 that are
//! themselves shared and copied on write (the list of full chunks, and the last, partly
//! filled one): cloning a request, or building it from the normalizer's output, costs two
//! reference counts at any length; appending copies at most the last chunk (and, once per 64
//! messages, the list of chunks); changing a message (a cache marker placed on it) copies
//! that message, its chunk and the list of chunks ([`Arc::make_mut`]). Inserting or removing
//! in the middle rebuilds the chunks, as a `Vec` moves its elements.
//!
//! (A persistent vector crate would do the same in a tree; `imbl` 7.0.2, the maintained one,
//! corrupted the heap in our property test — `Vector::retain` after `Vector::skip` — and the
//! history's access pattern, appends and a shared prefix, needs no more than two levels. This
//! one is safe code only.)
//!
//! Sharing also gives a cheap test of sameness: two entries that are the same allocation
//! ([`Arc::ptr_eq`]) hold equal messages, and two requests that share a chunk share
//! every message in it, so [`Messages::common_prefix`] finds how many leading messages two
//! requests share by comparing chunks, not messages. Whoever keeps what it derived from each
//! message (the cache planner's hashes, the client's serialized bytes) keeps the messages it
//! derived them from and redoes only what follows the shared prefix. An entry is only ever
//! changed through `make_mut`, which copies it when it is shared, so a kept `Arc` never sees
//! its message change.
//!
//! It reads like a `Vec<MessageParam>` (indexing, `iter`, `push`, `last_mut`, …) and serializes
//! as the same JSON array.
//!
//! ```
//! use threadline_wire::{ContentBlock, MessageParam, Messages};
//!
//! let mut messages = Messages::from(vec![MessageParam::user(vec![ContentBlock::text("Hi")])]);
//! let copy = messages.clone(); // shares the message
//! assert_eq!(messages.common_prefix(&copy), 1);
//! messages[0].content = threadline_wire::content::Content::Text("Hello".into());
//! assert_eq!(messages.common_prefix(&copy), 0);
//! messages.push(MessageParam::assistant(vec![ContentBlock::text("Hello.")]));
//! assert_eq!(messages.clone().common_prefix(&messages), 2);
//! assert_eq!(serde_json::to_string(&copy)?, r#"[{"role":"user","content":[{"type":"text","text":"Hi"}]}]"#);
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::request::MessageParam;

/// One entry: a shared message.
type Entry = Arc<MessageParam>;

/// One chunk of entries, shared and copied on write.
type Chunk = Arc<Vec<Entry>>;

/// How many entries a full chunk holds.
const CHUNK: usize = 64;

/// The messages of a request, each shared behind an [`Arc`], in chunks shared between the
/// copies. See the [module documentation](self).
#[derive(Clone, Default)]
pub struct Messages {
    /// Full chunks of exactly [`CHUNK`] entries (the list itself shared).
    chunks: Arc<Vec<Chunk>>,
    /// The entries after them: fewer than [`CHUNK`].
    tail: Chunk,
}

impl Messages {
    /// No messages.
    pub fn new() -> Messages {
        Messages::default()
    }

    /// Whether `a` and `b` hold equal messages: the same shared message (a pointer
    /// comparison, nothing read), else equal contents. What a cache keyed by messages asks.
    pub fn same_or_equal(a: &Arc<MessageParam>, b: &Arc<MessageParam>) -> bool {
        Arc::ptr_eq(a, b) || a == b
    }

    /// How many leading entries `self` and `other` share: the same shared message at each
    /// index ([`Arc::ptr_eq`]). Chunks the two share are skipped whole, so two
    /// requests of one conversation compare in time proportional to their chunks (a 64th of
    /// their messages) and what differs, not to their messages. Equal messages in different
    /// allocations end the prefix ([`Messages::equal_prefix`] goes on past them).
    pub fn common_prefix(&self, other: &Messages) -> usize {
        self.shared_until(other, 0)
    }

    /// How many leading entries of `self` and `other` hold equal messages: those they share
    /// (skipped chunk by chunk, as [`Messages::common_prefix`] does), and each pair of equal
    /// messages in different allocations (compared by value) between them. What a cache keyed
    /// by messages keeps: a request whose first message was rebuilt equal (a context message
    /// prepended again) still finds the rest by chunk.
    pub fn equal_prefix(&self, other: &Messages) -> usize {
        let n = self.len().min(other.len());
        let mut at = 0;
        loop {
            at = self.shared_until(other, at);
            if at >= n || self.entry(at) != other.entry(at) {
                return at.min(n);
            }
            at += 1;
        }
    }

    /// The first index from `from` on where `self` and `other` do not hold the same shared
    /// message (the shorter length when there is none).
    fn shared_until(&self, other: &Messages, from: usize) -> usize {
        let n = self.len().min(other.len());
        let mut at = from;
        if at == 0 && Arc::ptr_eq(&self.chunks, &other.chunks) {
            at = self.full();
        }
        while at < n {
            // A chunk shared whole (a chunk is only changed after it is copied): skip it.
            if at.is_multiple_of(CHUNK)
                && let (Some(a), Some(b)) = (self.chunk(at / CHUNK), other.chunk(at / CHUNK))
                && Arc::ptr_eq(a, b)
            {
                at += a.len().max(1);
                continue;
            }
            if !Arc::ptr_eq(self.entry(at), other.entry(at)) {
                return at;
            }
            at += 1;
        }
        n
    }

    /// The chunk at `index` (the tail after the full ones).
    #[inline]
    fn chunk(&self, index: usize) -> Option<&Chunk> {
        match index.cmp(&self.chunks.len()) {
            std::cmp::Ordering::Less => Some(&self.chunks[index]),
            std::cmp::Ordering::Equal => Some(&self.tail),
            std::cmp::Ordering::Greater => None,
        }
    }

    /// How many entries the full chunks hold.
    #[inline]
    fn full(&self) -> usize {
        self.chunks.len() * CHUNK
    }

    /// The entry at `index`, which is in bounds.
    #[inline]
    fn entry(&self, index: usize) -> &Entry {
        let full = self.full();
        if index < full {
            &self.chunks[index / CHUNK][index % CHUNK]
        } else {
            &self.tail[index - full]
        }
    }

    /// The entry at `index`, its chunk (and the list of chunks) copied first if shared.
    fn entry_mut(&mut self, index: usize) -> Option<&mut Entry> {
        let full = self.full();
        if index < full {
            let chunks = Arc::make_mut(&mut self.chunks);
            Some(&mut Arc::make_mut(&mut chunks[index / CHUNK])[index % CHUNK])
        } else {
            Arc::make_mut(&mut self.tail).get_mut(index - full)
        }
    }

    /// The shared entries in order, for those who keep what they derived from each message.
    #[inline]
    pub fn shared(&self) -> SharedIter<'_> {
        self.shared_from(0)
    }

    /// The shared entries as a `Vec` (a reference count each, no message copied), for code
    /// that wants a slice of them.
    pub fn to_shared_vec(&self) -> Vec<Arc<MessageParam>> {
        self.shared().cloned().collect()
    }

    /// The shared entries from `from` on (none when `from` is past the end).
    #[inline]
    pub fn shared_from(&self, from: usize) -> SharedIter<'_> {
        SharedIter {
            inner: Cursor::new(self, from.min(self.len()), self.len()),
        }
    }

    /// The shared entry at `index`.
    #[inline]
    pub fn shared_at(&self, index: usize) -> Option<&Arc<MessageParam>> {
        (index < self.len()).then(|| self.entry(index))
    }

    /// Whether the entry at `index` holds `message`: the same shared message, else an equal
    /// one ([`Messages::same_or_equal`]; `false` past the end). What a cache that kept this
    /// request asks of a message at the same index in the next.
    #[inline]
    pub fn holds(&self, index: usize, message: &Arc<MessageParam>) -> bool {
        self.shared_at(index)
            .is_some_and(|kept| Messages::same_or_equal(kept, message))
    }

    /// How many messages.
    #[inline]
    pub fn len(&self) -> usize {
        self.full() + self.tail.len()
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message at `index`.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&MessageParam> {
        self.shared_at(index).map(|m| &**m)
    }

    /// The message at `index`, copied first if it is shared.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut MessageParam> {
        self.entry_mut(index).map(Arc::make_mut)
    }

    /// The first message.
    #[inline]
    pub fn first(&self) -> Option<&MessageParam> {
        self.get(0)
    }

    /// The last message.
    #[inline]
    pub fn last(&self) -> Option<&MessageParam> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The first message, copied first if it is shared.
    pub fn first_mut(&mut self) -> Option<&mut MessageParam> {
        self.get_mut(0)
    }

    /// The last message, copied first if it is shared.
    pub fn last_mut(&mut self) -> Option<&mut MessageParam> {
        self.len().checked_sub(1).and_then(|i| self.get_mut(i))
    }

    /// Appends `message`.
    pub fn push(&mut self, message: MessageParam) {
        self.push_shared(Arc::new(message));
    }

    /// Appends a shared message.
    pub fn push_shared(&mut self, message: Arc<MessageParam>) {
        let tail = Arc::make_mut(&mut self.tail);
        tail.push(message);
        if tail.len() == CHUNK {
            let full = std::mem::replace(&mut self.tail, Arc::new(Vec::with_capacity(CHUNK)));
            Arc::make_mut(&mut self.chunks).push(full);
        }
    }

    /// Removes the last message (copied out if it is shared).
    pub fn pop(&mut self) -> Option<MessageParam> {
        if self.tail.is_empty() {
            self.tail = Arc::make_mut(&mut self.chunks).pop()?;
        }
        Arc::make_mut(&mut self.tail)
            .pop()
            .map(Arc::unwrap_or_clone)
    }

    /// Inserts `message` at `index`, shifting the rest. Panics when `index > len`, as
    /// `Vec::insert` does.
    pub fn insert(&mut self, index: usize, message: MessageParam) {
        let len = self.len();
        assert!(
            index <= len,
            "insertion index (is {index}) should be <= len (is {len})"
        );
        if index == len {
            return self.push(message);
        }
        let mut entries = self.to_shared_vec();
        entries.insert(index, Arc::new(message));
        *self = entries.into_iter().collect();
    }

    /// Removes the message at `index` (copied out if it is shared). Panics when out of
    /// bounds, as `Vec::remove` does.
    pub fn remove(&mut self, index: usize) -> MessageParam {
        let len = self.len();
        assert!(
            index < len,
            "removal index (is {index}) should be < len (is {len})"
        );
        let mut entries = self.to_shared_vec();
        let removed = entries.remove(index);
        *self = entries.into_iter().collect();
        Arc::unwrap_or_clone(removed)
    }

    /// Swaps two messages. Panics when either is out of bounds, as `slice::swap` does.
    pub fn swap(&mut self, a: usize, b: usize) {
        let len = self.len();
        assert!(a < len && b < len, "swap index out of bounds (len {len})");
        if a != b {
            let first = Arc::clone(self.entry(a));
            let second = Arc::clone(self.entry(b));
            if let Some(entry) = self.entry_mut(a) {
                *entry = second;
            }
            if let Some(entry) = self.entry_mut(b) {
                *entry = first;
            }
        }
    }

    /// Keeps the first `len` messages.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        let full = self.full();
        if len >= full {
            Arc::make_mut(&mut self.tail).truncate(len - full);
            return;
        }
        let (keep, rest) = (len / CHUNK, len % CHUNK);
        let mut tail = if rest == 0 {
            Arc::new(Vec::with_capacity(CHUNK))
        } else {
            Arc::clone(&self.chunks[keep])
        };
        match Arc::get_mut(&mut self.chunks) {
            Some(chunks) => chunks.truncate(keep),
            None => self.chunks = Arc::new(self.chunks[..keep].to_vec()),
        }
        if rest > 0 {
            Arc::make_mut(&mut tail).truncate(rest);
        }
        self.tail = tail;
    }

    /// Removes every message.
    pub fn clear(&mut self) {
        *self = Messages::default();
    }

    /// Keeps the messages `keep` says to keep.
    pub fn retain(&mut self, mut keep: impl FnMut(&MessageParam) -> bool) {
        let entries: Vec<Entry> = self.shared().filter(|m| keep(m)).cloned().collect();
        if entries.len() != self.len() {
            *self = entries.into_iter().collect();
        }
    }

    /// The messages in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inner: self.shared(),
        }
    }

    /// The messages at the indices in `range` (panics when out of bounds, as slicing does).
    #[inline]
    pub fn range(&self, range: impl RangeBounds<usize>) -> Iter<'_> {
        let len = self.len();
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.checked_add(1).expect("range start overflows"),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.checked_add(1).expect("range end overflows"),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => len,
        };
        assert!(
            start <= end && end <= len,
            "range {start}..{end} out of bounds for {len} messages"
        );
        Iter {
            inner: SharedIter {
                inner: Cursor::new(self, start, end),
            },
        }
    }

    /// The messages in order, each copied first if it is shared.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        let chunks: fn(&mut Chunk) -> std::slice::IterMut<'_, Entry> =
            |chunk| Arc::make_mut(chunk).iter_mut();
        IterMut {
            inner: Arc::make_mut(&mut self.chunks)
                .iter_mut()
                .flat_map(chunks)
                .chain(Arc::make_mut(&mut self.tail).iter_mut()),
        }
    }

    /// The messages as an owned `Vec` (each copied if it is shared).
    pub fn to_vec(&self) -> Vec<MessageParam> {
        self.iter().cloned().collect()
    }

    /// The messages as an owned `Vec`, copying only the shared ones.
    pub fn into_vec(self) -> Vec<MessageParam> {
        self.into_iter().collect()
    }

    /// The messages from `from` on (sharing them; none when `from` is past the end).
    pub fn tail(&self, from: usize) -> Messages {
        self.shared_from(from).cloned().collect()
    }
}

/// The entries of a [`Messages`] between two indices, read from both ends: the rest of the
/// front chunk, the full chunks between, the rest of the back chunk. Reading in order is a
/// slice iterator's step (the loop over a long history stays as tight as over a `Vec`).
#[derive(Clone)]
struct Cursor<'a> {
    front: std::slice::Iter<'a, Entry>,
    middle: std::slice::Iter<'a, Chunk>,
    back: std::slice::Iter<'a, Entry>,
    left: usize,
}

impl<'a> Cursor<'a> {
    /// The entries of `messages` at `start..end` (in bounds, `start <= end`).
    #[inline]
    fn new(messages: &'a Messages, start: usize, end: usize) -> Cursor<'a> {
        let empty: &'a [Entry] = &[];
        if start >= end {
            return Cursor {
                front: empty.iter(),
                middle: [].iter(),
                back: empty.iter(),
                left: 0,
            };
        }
        let (first, last) = (start / CHUNK, (end - 1) / CHUNK);
        let chunk = |index: usize| -> &'a [Entry] {
            messages
                .chunk(index)
                .map_or(empty, |chunk| chunk.as_slice())
        };
        let (from, to) = (start % CHUNK, (end - 1) % CHUNK + 1);
        if first == last {
            return Cursor {
                front: chunk(first)[from..to].iter(),
                middle: [].iter(),
                back: empty.iter(),
                left: end - start,
            };
        }
        Cursor {
            front: chunk(first)[from..].iter(),
            middle: messages.chunks[first + 1..last].iter(),
            back: chunk(last)[..to].iter(),
            left: end - start,
        }
    }

    #[inline]
    fn next(&mut self) -> Option<&'a Entry> {
        loop {
            if let Some(entry) = self.front.next() {
                self.left -= 1;
                return Some(entry);
            }
            match self.middle.next() {
                Some(chunk) => self.front = chunk.iter(),
                None => break,
            }
        }
        let entry = self.back.next()?;
        self.left -= 1;
        Some(entry)
    }

    #[inline]
    fn next_back(&mut self) -> Option<&'a Entry> {
        loop {
            if let Some(entry) = self.back.next_back() {
                self.left -= 1;
                return Some(entry);
            }
            match self.middle.next_back() {
                Some(chunk) => self.back = chunk.iter(),
                None => break,
            }
        }
        let entry = self.front.next_back()?;
        self.left -= 1;
        Some(entry)
    }

    /// Skips `n` entries, whole chunks at a time, then reads one.
    fn nth(&mut self, mut n: usize) -> Option<&'a Entry> {
        let empty: &'a [Entry] = &[];
        let in_front = self.front.len();
        if n < in_front {
            self.left -= n + 1;
            return self.front.nth(n);
        }
        n -= in_front;
        self.left -= in_front;
        self.front = empty.iter();
        // The middle chunks are full.
        let whole = (n / CHUNK).min(self.middle.len());
        if whole > 0 {
            self.middle.nth(whole - 1);
            n -= whole * CHUNK;
            self.left -= whole * CHUNK;
        }
        if let Some(chunk) = self.middle.next() {
            self.front = chunk.iter();
            return self.nth(n);
        }
        let in_back = self.back.len();
        if n < in_back {
            self.left -= n + 1;
            return self.back.nth(n);
        }
        self.left -= in_back;
        self.back = empty.iter();
        None
    }
}

/// The messages of a [`Messages`], in order: its shared entries, each seen as the message.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    inner: SharedIter<'a>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a MessageParam;

    #[inline]
    fn next(&mut self) -> Option<&'a MessageParam> {
        self.inner.next().map(|m| &**m)
    }

    fn count(self) -> usize {
        self.inner.count()
    }

    fn last(self) -> Option<&'a MessageParam> {
        self.inner.last().map(|m| &**m)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }

    fn nth(&mut self, n: usize) -> Option<&'a MessageParam> {
        self.inner.nth(n).map(|m| &**m)
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|m| &**m)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl std::iter::FusedIterator for Iter<'_> {}

/// The shared entries of a [`Messages`], in order ([`Messages::shared`]).
#[derive(Clone)]
pub struct SharedIter<'a> {
    inner: Cursor<'a>,
}

impl std::fmt::Debug for SharedIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIter")
            .field("remaining", &self.inner.left)
            .finish()
    }
}

impl<'a> Iterator for SharedIter<'a> {
    type Item = &'a Arc<MessageParam>;

    #[inline]
    fn next(&mut self) -> Option<&'a Arc<MessageParam>> {
        self.inner.next()
    }

    fn count(self) -> usize {
        self.inner.left
    }

    fn last(mut self) -> Option<&'a Arc<MessageParam>> {
        self.next_back()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.inner.left, Some(self.inner.left))
    }

    fn nth(&mut self, n: usize) -> Option<&'a Arc<MessageParam>> {
        self.inner.nth(n)
    }
}

impl DoubleEndedIterator for SharedIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back()
    }
}

impl ExactSizeIterator for SharedIter<'_> {}

impl std::iter::FusedIterator for SharedIter<'_> {}

/// The messages of a [`Messages`] in order, each copied first if it is shared
/// ([`Messages::iter_mut`]).
pub struct IterMut<'a> {
    #[allow(clippy::type_complexity)]
    inner: std::iter::Chain<
        std::iter::FlatMap<
            std::slice::IterMut<'a, Chunk>,
            std::slice::IterMut<'a, Entry>,
            fn(&'a mut Chunk) -> std::slice::IterMut<'a, Entry>,
        >,
        std::slice::IterMut<'a, Entry>,
    >,
}

impl std::fmt::Debug for IterMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IterMut").finish_non_exhaustive()
    }
}

impl<'a> Iterator for IterMut<'a> {
    type Item = &'a mut MessageParam;

    fn next(&mut self) -> Option<&'a mut MessageParam> {
        self.inner.next().map(Arc::make_mut)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for IterMut<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(Arc::make_mut)
    }
}

impl std::iter::FusedIterator for IterMut<'_> {}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a MessageParam;
    type IntoIter = Iter<'a>;

    #[inline]
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Messages {
    type Item = &'a mut MessageParam;
    type IntoIter = IterMut<'a>;

    /// Each message copied first if it is shared.
    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}

impl IntoIterator for Messages {
    type Item = MessageParam;
    type IntoIter = std::iter::Map<std::vec::IntoIter<Entry>, fn(Entry) -> MessageParam>;

    /// Each message moved out, copied only when it is shared.
    fn into_iter(self) -> Self::IntoIter {
        let entries: Vec<Entry> = match Arc::try_unwrap(self.chunks) {
            Ok(chunks) => chunks
                .into_iter()
                .flat_map(Arc::unwrap_or_clone)
                .chain(Arc::unwrap_or_clone(self.tail))
                .collect(),
            Err(chunks) => chunks
                .iter()
                .flat_map(|chunk| chunk.iter().cloned())
                .chain(self.tail.iter().cloned())
                .collect(),
        };
        entries.into_iter().map(Arc::unwrap_or_clone)
    }
}

impl std::ops::Index<usize> for Messages {
    type Output = MessageParam;

    #[inline]
    fn index(&self, index: usize) -> &MessageParam {
        match self.get(index) {
            Some(message) => message,
            None => panic!(
                "index out of bounds: the len is {} but the index is {index}",
                self.len()
            ),
        }
    }
}

impl std::ops::IndexMut<usize> for Messages {
    fn index_mut(&mut self, index: usize) -> &mut MessageParam {
        let len = self.len();
        match self.get_mut(index) {
            Some(message) => message,
            None => panic!("index out of bounds: the len is {len} but the index is {index}"),
        }
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
        iter.into_iter().map(Arc::new).collect()
    }
}

impl FromIterator<Arc<MessageParam>> for Messages {
    fn from_iter<I: IntoIterator<Item = Arc<MessageParam>>>(iter: I) -> Messages {
        // All the entries first, then the chunks: the messages' allocations (made by `iter`)
        // stay contiguous, not interleaved with the chunks'.
        let entries: Vec<Entry> = iter.into_iter().collect();
        let mut chunks = entries.chunks_exact(CHUNK);
        let full: Vec<Chunk> = chunks.by_ref().map(|c| Arc::new(c.to_vec())).collect();
        let mut tail = Vec::with_capacity(CHUNK);
        tail.extend_from_slice(chunks.remainder());
        Messages {
            chunks: Arc::new(full),
            tail: Arc::new(tail),
        }
    }
}

impl Extend<MessageParam> for Messages {
    fn extend<I: IntoIterator<Item = MessageParam>>(&mut self, iter: I) {
        for message in iter {
            self.push(message);
        }
    }
}

impl PartialEq for Messages {
    /// Message by message, the shared prefix (compared by chunks) equal without a look inside.
    fn eq(&self, other: &Messages) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let shared = self.common_prefix(other);
        self.shared_from(shared)
            .zip(other.shared_from(shared))
            .all(|(a, b)| Messages::same_or_equal(a, b))
    }
}

impl PartialEq<[MessageParam]> for Messages {
    fn eq(&self, other: &[MessageParam]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b)
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
        assert_eq!(messages.common_prefix(&kept), 1);
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
        assert_eq!(a.common_prefix(&b), 0);
        assert_eq!(a, b);
    }
}
