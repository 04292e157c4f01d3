//! Hash sets and maps of borrowed ids (tool use ids, message ids), with a fast hasher.
//!
//! Ids are short and looked up once per block, so SipHash's per-call setup would dominate:
//! `foldhash`, randomly seeded per collection so that crafted ids cannot force collisions.
//! Nothing iterates these collections to produce output, so the random seeds never make the
//! output vary.

use std::collections::{HashMap, HashSet};

/// Builds the hashers of the id collections.
pub(crate) type IdHasherBuilder = foldhash::fast::RandomState;

/// A set of borrowed ids.
pub(crate) type IdSet<'a> = HashSet<&'a str, IdHasherBuilder>;

/// A map from borrowed ids.
pub(crate) type IdMap<'a, V> = HashMap<&'a str, V, IdHasherBuilder>;

/// An empty [`IdSet`] with room for `capacity` ids.
pub(crate) fn id_set<'a>(capacity: usize) -> IdSet<'a> {
    HashSet::with_capacity_and_hasher(capacity, IdHasherBuilder::default())
}

/// An empty [`IdMap`] with room for `capacity` ids.
pub(crate) fn id_map<'a, V>(capacity: usize) -> IdMap<'a, V> {
    HashMap::with_capacity_and_hasher(capacity, IdHasherBuilder::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_tell_ids_apart() {
        let mut set = id_set(4);
        for id in [
            "toolu_1",
            "toolu_10",
            "toolu_01",
            "",
            "a_very_long_tool_use_identifier_x",
        ] {
            assert!(set.insert(id), "{id}");
        }
        assert!(!set.insert("toolu_10"));
        assert!(set.contains(""));
        assert!(!set.contains("toolu_2"));
    }
}
