//! One entry of a session: an opaque JSON object kept byte for byte.

use bytes::Bytes;

use crate::error::StoreError;

/// The largest entry a store accepts, in bytes (8 MiB). Restate's journal refuses messages
/// over 32 MiB and retries them forever, so every backend refuses bigger entries up front.
pub const MAX_ENTRY_BYTES: usize = 8 * 1024 * 1024;

/// One entry: the bytes of one JSON object on one line (a transcript line), and its id.
///
/// The store never re-serializes an entry: what [`SessionStore::load`](crate::SessionStore::load)
/// returns is byte-identical to what was appended (key order, spacing, number spelling and
/// unknown fields included). The id is the object's top-level `"uuid"` string when it has
/// one; appending an entry whose id the key already holds is a no-op (idempotent append, so a
/// retried append never duplicates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    bytes: Bytes,
    id: Option<String>,
}

impl Entry {
    /// Checks and wraps `bytes`: one JSON object, no line break, at most [`MAX_ENTRY_BYTES`].
    pub fn new(bytes: impl Into<Bytes>) -> Result<Self, StoreError> {
        let bytes = bytes.into();
        if bytes.len() > MAX_ENTRY_BYTES {
            return Err(StoreError::EntryTooLarge {
                bytes: bytes.len(),
                max: MAX_ENTRY_BYTES,
            });
        }
        if bytes.iter().any(|&b| b == b'\n' || b == b'\r') {
            return Err(StoreError::InvalidEntry {
                reason: "contains a line break".into(),
            });
        }
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::InvalidEntry {
                reason: format!("not JSON: {e}"),
            })?;
        let Some(object) = value.as_object() else {
            return Err(StoreError::InvalidEntry {
                reason: "not a JSON object".into(),
            });
        };
        let id = object
            .get("uuid")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        Ok(Entry { bytes, id })
    }

    /// The entry of a JSON value, serialized compactly.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, StoreError> {
        let bytes = serde_json::to_vec(value).map_err(|e| StoreError::InvalidEntry {
            reason: format!("not serializable: {e}"),
        })?;
        Entry::new(bytes)
    }

    /// The bytes, exactly as appended.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The id (the top-level `"uuid"`), if the entry has one.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The entry parsed (a fresh parse each call).
    pub fn to_value(&self) -> serde_json::Value {
        // `new` parsed these bytes already, so this cannot fail; keep the no-panic rule anyway.
        serde_json::from_slice(&self.bytes).unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_id_are_kept_and_bad_entries_refused() {
        let e = Entry::new(&br#"{ "uuid":"u1", "n": 1.0e10,"x":{}}"#[..]).expect("valid");
        assert_eq!(e.id(), Some("u1"));
        assert_eq!(&e.bytes()[..], br#"{ "uuid":"u1", "n": 1.0e10,"x":{}}"#);
        assert!(Entry::new(&b"[1]"[..]).is_err());
        assert!(Entry::new(&b"{\n}"[..]).is_err());
        assert!(Entry::new(&b"{"[..]).is_err());
        assert_eq!(Entry::new(&br#"{"uuid":7}"#[..]).expect("valid").id(), None);
    }
}
