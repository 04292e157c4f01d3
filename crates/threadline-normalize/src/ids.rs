//! Hash sets and maps of borrowed ids (tool use ids, message ids), with a fast hasher.
//!
//! Ids are short and looked up once per block, so SipHash's per-call setup would dominate. The
//! hasher folds a 64×64→128-bit multiply per 8 bytes, keyed from std's randomly seeded
//! `RandomState` so that crafted ids cannot force collisions. Nothing iterates these
//! collections to produce output, so the random keys never make the output vary.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};

/// A set of borrowed ids.
pub(crate) type IdSet<'a> = HashSet<&'a str, IdHasherBuilder>;

/// A map from borrowed ids.
pub(crate) type IdMap<'a, V> = HashMap<&'a str, V, IdHasherBuilder>;

/// Builds [`IdHasher`]s with one normalization's keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdHasherBuilder {
    start: u64,
    multiplier: u64,
}

impl Default for IdHasherBuilder {
    fn default() -> Self {
        let random = RandomState::new();
        IdHasherBuilder {
            start: random.hash_one(0x6e6f_726d_u64),
            // Odd, so that the multiply loses no information.
            multiplier: random.hash_one(0x0061_6c69_7a65_u64) | 1,
        }
    }
}

impl BuildHasher for IdHasherBuilder {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher {
            state: self.start,
            multiplier: self.multiplier,
        }
    }
}

/// The hasher; see the module documentation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdHasher {
    state: u64,
    multiplier: u64,
}

impl IdHasher {
    fn mix(&mut self, word: u64) {
        let product = u128::from(self.state ^ word) * u128::from(self.multiplier);
        self.state = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        // `str`'s `Hash` ends with a 0xff byte; mixing it separates "ab" + "c" from "a" + "bc".
        self.mix(u64::from(byte) | 0x100);
    }

    fn finish(&self) -> u64 {
        self.state
    }
}

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
