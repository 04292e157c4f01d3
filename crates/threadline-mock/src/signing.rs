//! The mock's signatures: a keyed SHA-256 digest over length-prefixed parts.
//!
//! The real API signs thinking and compaction blocks so that it can tell, statelessly, whether
//! a block sent back is one it produced and what it was produced for. The mock does the same
//! with a key only it knows: a signature is the hex digest of the key, a domain (what kind of
//! thing is signed) and the parts, each prefixed by its length so that no two lists of parts
//! share bytes. This is a test double, not a security boundary: it only has to make a block
//! edited or moved by a client detectable, the way the API detects it.

use sha2::{Digest, Sha256};

/// The mock's signing key. Fixed, so that two mock servers (and two runs) sign alike: a
/// client's recorded session replays against a fresh mock.
const KEY: &[u8] = b"threadline-mock signing key, version 1";

/// The hex digest of `domain` and `parts` under the mock's key.
pub(crate) fn digest(domain: &str, parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in std::iter::once(KEY)
        .chain(std::iter::once(domain.as_bytes()))
        .chain(parts.iter().copied())
    {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let out = hasher.finalize();
    out.iter().map(|b| format!("{b:02x}")).collect()
}

/// The canonical bytes of a JSON value with every `cache_control` removed (markers may move
/// between requests without changing what was said).
pub(crate) fn canonical(value: &serde_json::Value) -> Vec<u8> {
    let stripped = threadline_wire::cache_control::without_cache_control(value);
    serde_json::to_vec(&stripped).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_length_prefixed_and_domains_separate() {
        assert_ne!(digest("t", &[b"ab", b"c"]), digest("t", &[b"a", b"bc"]));
        assert_ne!(digest("t", &[b"x"]), digest("u", &[b"x"]));
        assert_eq!(digest("t", &[b"x"]), digest("t", &[b"x"]));
        assert_eq!(digest("t", &[b"x"]).len(), 64);
    }

    #[test]
    fn canonical_bytes_ignore_cache_control() {
        let marked = serde_json::json!({"a": [{"b": 1, "cache_control": {"type": "ephemeral"}}]});
        let plain = serde_json::json!({"a": [{"b": 1}]});
        assert_eq!(canonical(&marked), canonical(&plain));
    }
}
