//! Deterministic ids: a 128-bit hash of length-prefixed parts, formatted as a UUID (version
//! 8, the "custom" version), stable across platforms and Rust releases.

use crate::header::MessageId;

/// The id derived from `parts`: the same parts always give the same id, different parts a
/// different one (barring a 128-bit collision). Each part is length-prefixed, so
/// `["ab", "c"]` and `["a", "bc"]` differ.
///
/// ```
/// use threadline_message::session_ops::derive_id;
///
/// let id = derive_id(&["session", "m2", "m1"]);
/// assert_eq!(id, derive_id(&["session", "m2", "m1"]));
/// assert_ne!(id, derive_id(&["session", "m2m", "1"]));
/// assert_eq!(id.as_str().len(), 36);
/// assert_eq!(&id.as_str()[14..15], "8"); // UUID version 8
/// ```
pub fn derive_id(parts: &[&str]) -> MessageId {
    // Two FNV-1a 64-bit lanes with different offset bases, each finished with a
    // SplitMix64-style avalanche.
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    let mut feed = |bytes: &[u8]| {
        for &byte in bytes {
            a = (a ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            b = (b ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            b = b.rotate_left(5);
        }
    };
    feed(b"threadline-session-ops\0");
    for part in parts {
        feed(&(part.len() as u64).to_le_bytes());
        feed(part.as_bytes());
    }
    let hi = avalanche(a ^ b.rotate_left(32));
    let lo = avalanche(b ^ hi);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hi.to_be_bytes());
    bytes[8..].copy_from_slice(&lo.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    MessageId(uuid::Uuid::from_bytes(bytes).to_string())
}

fn avalanche(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        // Pinned: a change of the derivation changes every fork's bytes.
        assert_eq!(
            derive_id(&["s", "m"]).as_str(),
            "0c07ae32-91b2-8357-8e3b-03c9d71851b0"
        );
        let ids: std::collections::HashSet<_> = (0..1000)
            .map(|n| derive_id(&["s", "at", &n.to_string()]))
            .collect();
        assert_eq!(ids.len(), 1000);
        assert_ne!(derive_id(&["ab", "c"]), derive_id(&["a", "bc"]));
        assert!(uuid::Uuid::parse_str(derive_id(&[]).as_str()).is_ok());
    }
}
