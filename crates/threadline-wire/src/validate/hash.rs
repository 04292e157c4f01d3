//! A fast keyed hasher for the id sets: a folded 64×64→128-bit multiply per 8 bytes, keyed per
//! validation from std's randomly seeded `RandomState` (so crafted ids cannot force
//! collisions the way they could with an unkeyed hash). Ids are short; SipHash's per-call setup
//! would dominate.

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// A set of borrowed ids.
pub(super) type IdSet<'a> = HashSet<&'a str, IdHasherBuilder>;

/// Builds [`IdHasher`]s with this validation's keys.
#[derive(Debug, Clone, Copy)]
pub(super) struct IdHasherBuilder {
    start: u64,
    multiplier: u64,
}

impl Default for IdHasherBuilder {
    fn default() -> Self {
        let random = RandomState::new();
        IdHasherBuilder {
            start: random.hash_one(0x7468_7265_6164_u64),
            // Odd, so that the multiply loses no information.
            multiplier: random.hash_one(0x6c69_6e65_u64) | 1,
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
pub(super) struct IdHasher {
    state: u64,
    multiplier: u64,
}

fn fold(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

impl IdHasher {
    fn mix(&mut self, word: u64) {
        self.state = fold(self.state ^ word, self.multiplier);
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
            // The length keeps "a" and "a\0" apart.
            self.mix(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.mix(u64::from(byte) | 0x100);
    }

    fn finish(&self) -> u64 {
        fold(self.state, self.multiplier ^ 0x9e37_79b9_7f4a_7c15)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_ids_hash_equal_and_near_ids_differ() {
        let builder = IdHasherBuilder::default();
        let ids = [
            "toolu_01A09q90qw90lq917835lq9",
            "toolu_01A09q90qw90lq917835lq8",
            "toolu_01",
            "toolu_01\0",
            "",
            "a",
        ];
        let hashes: Vec<u64> = ids.iter().map(|id| builder.hash_one(id)).collect();
        for (i, a) in hashes.iter().enumerate() {
            assert_eq!(*a, builder.hash_one(ids[i]));
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let mut set = IdSet::default();
        assert!(set.insert("toolu_1"));
        assert!(!set.insert("toolu_1"));
        assert!(set.insert("toolu_2"));
    }
}
