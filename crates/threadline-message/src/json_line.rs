//! Fields added to a serialized JSON object in place: the marks a transcript writer puts on
//! every line, the mark of a rewrite, the `"uuid"` of a session store's entry. The message is
//! serialized once; the field goes in before its closing brace.

use serde::Serialize;

/// Adds `"key": value` inside the JSON object `object` holds, before its closing brace. An
/// `object` that does not end with `}` is left as it is; so is one whose value does not
/// serialize (the error is returned).
///
/// ```
/// use threadline_message::json_line::add_field;
///
/// let mut line = br#"{"type":"user"}"#.to_vec();
/// add_field(&mut line, "uuid", "u-1")?;
/// assert_eq!(line, br#"{"type":"user","uuid":"u-1"}"#);
/// let mut empty = b"{}".to_vec();
/// add_field(&mut empty, "n", &1)?;
/// assert_eq!(empty, br#"{"n":1}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn add_field<T: Serialize + ?Sized>(
    object: &mut Vec<u8>,
    key: &str,
    value: &T,
) -> Result<(), serde_json::Error> {
    if object.last() != Some(&b'}') {
        return Ok(());
    }
    let len = object.len();
    object.pop();
    if object.last() != Some(&b'{') {
        object.push(b',');
    }
    let written = serde_json::to_writer(&mut *object, key).and_then(|()| {
        object.push(b':');
        serde_json::to_writer(&mut *object, value)
    });
    if written.is_err() {
        object.truncate(len - 1);
    }
    object.push(b'}');
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_does_not_serialize_leaves_the_object_as_it_was() {
        struct Fails;
        impl Serialize for Fails {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        let mut line = br#"{"a":1}"#.to_vec();
        assert!(add_field(&mut line, "b", &Fails).is_err());
        assert_eq!(line, br#"{"a":1}"#);
        let mut not_an_object = b"[1]".to_vec();
        add_field(&mut not_an_object, "b", &2).expect("no-op");
        assert_eq!(not_an_object, b"[1]");
    }
}
