//! A message's content blocks, shared by every copy of the message: [`Blocks`].
//!
//! The same blocks are held by the session's internal message, by the request message the
//! normalizer makes of it, and by every copy of either. A deep copy of each message's blocks
//! for each request (strings, tool inputs, results) was most of what normalizing a session
//! cost, and it grew faster than the session once the session no longer fit the caches.
//! [`Blocks`] keeps the list behind an [`Arc`]: cloning it counts a reference; changing it
//! ([`DerefMut`], [`Extend`]) first copies the list when another holder shares it
//! ([`Arc::make_mut`]), so a change made through one holder is never seen by another.
//!
//! It reads as the `Vec<ContentBlock>` it derefs to, compares, prints (`Debug`) and
//! serializes exactly as that `Vec` does.
//!
//! ```
//! use threadline_wire::{Blocks, ContentBlock};
//!
//! let mut mine = Blocks::from(vec![ContentBlock::text("a")]);
//! let theirs = mine.clone(); // shares the list
//! assert!(Blocks::ptr_eq(&mine, &theirs));
//! mine.push(ContentBlock::text("b")); // copies it first
//! assert_eq!(theirs.len(), 1);
//! assert_eq!(mine, vec![ContentBlock::text("a"), ContentBlock::text("b")]);
//! assert_eq!(serde_json::to_string(&theirs)?, r#"[{"type":"text","text":"a"}]"#);
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::content::ContentBlock;

/// A list of content blocks shared by the messages that hold it, copied on write. See the
/// [module documentation](self).
#[derive(Clone, Default)]
pub struct Blocks(Arc<Vec<ContentBlock>>);

impl Blocks {
    /// No blocks.
    pub fn new() -> Blocks {
        Blocks::default()
    }

    /// Whether `a` and `b` are the same shared list (a pointer comparison, nothing read).
    pub fn ptr_eq(a: &Blocks, b: &Blocks) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// The blocks as an owned `Vec`: taken when no one else holds them, else copied.
    pub fn into_vec(self) -> Vec<ContentBlock> {
        Arc::unwrap_or_clone(self.0)
    }
}

impl Deref for Blocks {
    type Target = Vec<ContentBlock>;

    #[inline]
    fn deref(&self) -> &Vec<ContentBlock> {
        &self.0
    }
}

impl DerefMut for Blocks {
    /// The list to change: copied first when another holder shares it.
    #[inline]
    fn deref_mut(&mut self) -> &mut Vec<ContentBlock> {
        Arc::make_mut(&mut self.0)
    }
}

impl From<Vec<ContentBlock>> for Blocks {
    fn from(blocks: Vec<ContentBlock>) -> Blocks {
        Blocks(Arc::new(blocks))
    }
}

impl From<Blocks> for Vec<ContentBlock> {
    fn from(blocks: Blocks) -> Vec<ContentBlock> {
        blocks.into_vec()
    }
}

impl FromIterator<ContentBlock> for Blocks {
    fn from_iter<I: IntoIterator<Item = ContentBlock>>(iter: I) -> Blocks {
        Blocks::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl Extend<ContentBlock> for Blocks {
    /// Appends in place when the list is not shared; when it is, the copy is made with room
    /// for what is appended (one allocation, not a copy and then a reallocation).
    fn extend<I: IntoIterator<Item = ContentBlock>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        if let Some(blocks) = Arc::get_mut(&mut self.0) {
            blocks.extend(iter);
            return;
        }
        let mut blocks = Vec::with_capacity(self.0.len() + iter.size_hint().0);
        blocks.extend(self.0.iter().cloned());
        blocks.extend(iter);
        self.0 = Arc::new(blocks);
    }
}

impl IntoIterator for Blocks {
    type Item = ContentBlock;
    type IntoIter = std::vec::IntoIter<ContentBlock>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Blocks {
    type Item = &'a ContentBlock;
    type IntoIter = std::slice::Iter<'a, ContentBlock>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Blocks {
    type Item = &'a mut ContentBlock;
    type IntoIter = std::slice::IterMut<'a, ContentBlock>;

    fn into_iter(self) -> Self::IntoIter {
        Arc::make_mut(&mut self.0).iter_mut()
    }
}

impl PartialEq for Blocks {
    fn eq(&self, other: &Blocks) -> bool {
        Blocks::ptr_eq(self, other) || self.0 == other.0
    }
}

impl PartialEq<Vec<ContentBlock>> for Blocks {
    fn eq(&self, other: &Vec<ContentBlock>) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<Blocks> for Vec<ContentBlock> {
    fn eq(&self, other: &Blocks) -> bool {
        *self == *other.0
    }
}

impl PartialEq<[ContentBlock]> for Blocks {
    fn eq(&self, other: &[ContentBlock]) -> bool {
        self.0.as_slice() == other
    }
}

impl<const N: usize> PartialEq<[ContentBlock; N]> for Blocks {
    fn eq(&self, other: &[ContentBlock; N]) -> bool {
        self.0.as_slice() == other
    }
}

impl fmt::Debug for Blocks {
    /// As the `Vec` of blocks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Blocks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Blocks, D::Error> {
        Vec::<ContentBlock>::deserialize(deserializer).map(Blocks::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_through_one_holder_is_not_seen_by_another() {
        let mut a = Blocks::from(vec![ContentBlock::text("x")]);
        let b = a.clone();
        a[0] = ContentBlock::text("y");
        assert_eq!(b, vec![ContentBlock::text("x")]);
        assert_eq!(a, vec![ContentBlock::text("y")]);
        assert!(!Blocks::ptr_eq(&a, &b));
        let mut c = b.clone();
        c.extend([ContentBlock::text("z")]);
        assert_eq!(b.len(), 1);
        for block in &mut c {
            *block = ContentBlock::text("w");
        }
        assert_eq!(b, vec![ContentBlock::text("x")]);
        assert_eq!(c.into_vec(), vec![ContentBlock::text("w"); 2]);
    }

    #[test]
    fn it_prints_and_serializes_as_its_vec() -> Result<(), serde_json::Error> {
        let vec = vec![ContentBlock::text("x")];
        let blocks = Blocks::from(vec.clone());
        assert_eq!(format!("{blocks:?}"), format!("{vec:?}"));
        assert_eq!(
            serde_json::to_string(&blocks)?,
            serde_json::to_string(&vec)?
        );
        let back: Blocks = serde_json::from_str(r#"[{"type":"text","text":"x"}]"#)?;
        assert_eq!(back, blocks);
        Ok(())
    }

    #[test]
    fn an_unshared_list_is_taken_not_copied() {
        let blocks = Blocks::from(vec![ContentBlock::text("x")]);
        let address = blocks.as_ptr();
        let taken = blocks.into_vec();
        assert_eq!(taken.as_ptr(), address);
    }
}
