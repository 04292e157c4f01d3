//! The hasher of the id sets: `foldhash`, randomly seeded per set (so crafted ids cannot
//! force collisions the way they could with an unkeyed hash). Ids are short; SipHash's
//! per-call setup would dominate the validation of a long conversation.

use std::collections::HashSet;

/// Builds the hashers of the id sets.
pub(super) type IdHasherBuilder = foldhash::fast::RandomState;

/// A set of borrowed ids.
pub(super) type IdSet<'a> = HashSet<&'a str, IdHasherBuilder>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_of_ids_finds_duplicates() {
        let mut set = IdSet::default();
        assert!(set.insert("toolu_1"));
        assert!(!set.insert("toolu_1"));
        assert!(set.insert("toolu_2"));
        assert!(set.insert("toolu_01\0"));
    }
}
