//! A JSON object's top-level fields edited without touching its values: each value is kept as
//! the exact bytes it was written with (`serde_json`'s `RawValue`), so a body's messages are
//! neither parsed into values nor written again — only scanned once.

use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

/// The top-level fields of an object, in order, each value as written.
struct Fields<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Fields<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Each)
    }
}

/// `body` (a JSON object) without the fields named in `dropped`, then with `added` (each a
/// name and its value's JSON) after the rest.
pub(crate) fn top_level(
    body: &[u8],
    dropped: &[&str],
    added: &[(&str, Vec<u8>)],
) -> Result<Vec<u8>, serde_json::Error> {
    let Fields(fields) = serde_json::from_slice(body)?;
    let extra: usize = added.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    let mut out = Vec::with_capacity(body.len() + extra);
    out.push(b'{');
    let mut first = true;
    let mut field = |out: &mut Vec<u8>, name: &str, value: &[u8]| -> serde_json::Result<()> {
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut *out, name)?;
        out.push(b':');
        out.extend_from_slice(value);
        Ok(())
    };
    for (name, value) in &fields {
        if dropped.contains(&name.as_str()) || added.iter().any(|(k, _)| k == name) {
            continue;
        }
        field(&mut out, name, value.get().as_bytes())?;
    }
    for (name, value) in added {
        field(&mut out, name, value)?;
    }
    out.push(b'}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_kept_byte_for_byte() {
        let body = br#"{"a":{"x":[1,2.50,"\u00e9"]},"drop":1,"b":"q\"uote","keep":null}"#;
        let out = top_level(body, &["drop"], &[("c", b"true".to_vec())]).expect("an object");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            r#"{"a":{"x":[1,2.50,"\u00e9"]},"b":"q\"uote","keep":null,"c":true}"#
        );
    }

    #[test]
    fn an_added_field_replaces_one_of_the_same_name() {
        let out = top_level(br#"{"v":1,"w":2}"#, &[], &[("v", b"3".to_vec())]).expect("object");
        assert_eq!(out, br#"{"w":2,"v":3}"#);
    }

    #[test]
    fn what_is_not_an_object_is_an_error() {
        assert!(top_level(b"[1]", &[], &[]).is_err());
        assert!(top_level(b"{\"a\":", &[], &[]).is_err());
        assert_eq!(top_level(b"{}", &["x"], &[]).expect("empty"), b"{}");
    }

    mod properties {
        use proptest::prelude::*;
        use serde_json::{Map, Value, json};

        use super::*;

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|n| json!(n)),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(|f| json!(f)),
                "\\PC{0,12}".prop_map(Value::String),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            /// The edited body is the object with the dropped fields gone and the added ones
            /// set, every other value the same.
            #[test]
            fn edits_change_only_the_fields_named(
                fields in prop::collection::btree_map("[a-z_\\\\\"\\u{e9}]{0,8}", value(), 0..8),
                dropped in prop::collection::vec("[a-z_]{0,8}", 0..3),
                added in prop::collection::btree_map("[a-z_]{0,8}", value(), 0..3),
            ) {
                let object: Map<String, Value> = fields.into_iter().collect();
                let body = serde_json::to_vec(&Value::Object(object.clone())).expect("serializes");
                let dropped: Vec<&str> = dropped.iter().map(String::as_str).collect();
                let added_json: Vec<(&str, Vec<u8>)> = added
                    .iter()
                    .map(|(k, v)| (k.as_str(), serde_json::to_vec(v).expect("serializes")))
                    .collect();
                let out = top_level(&body, &dropped, &added_json).expect("an object");
                let read: Value = serde_json::from_slice(&out).expect("valid JSON");
                let mut expected = object;
                expected.retain(|k, _| !dropped.contains(&k.as_str()));
                for (k, v) in &added {
                    expected.insert(k.clone(), v.clone());
                }
                prop_assert_eq!(read, Value::Object(expected));
            }
        }
    }
}
