//! The exact length of a value's compact JSON, counted without building it.

use serde::Serialize;

/// The number of bytes `serde_json::to_vec(value)` would produce, counted as they are written
/// (nothing is allocated). A value that cannot be serialized counts what was written before
/// the failure.
///
/// ```
/// use threadline_wire::json_size::serialized_len;
///
/// let value = serde_json::json!({"type": "text", "text": "héllo\n"});
/// assert_eq!(serialized_len(&value), serde_json::to_vec(&value).expect("serializes").len());
/// ```
pub fn serialized_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter(0);
    // Writing to a counter cannot fail; a value that refuses to serialize counts what it wrote.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(bytes.len());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn counts_what_serializing_writes(
            text in ".{0,40}",
            numbers in prop::collection::vec(any::<f64>(), 0..4),
            flag in any::<bool>(),
        ) {
            let value = serde_json::json!({"text": text, "numbers": numbers, "flag": flag, "none": null});
            prop_assert_eq!(serialized_len(&value), serde_json::to_vec(&value).expect("serializes").len());
        }
    }
}
