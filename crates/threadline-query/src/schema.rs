//! Checks a tool's input against its JSON schema before the call.
//!
//! The subset tools use: `type` (one or a list), `properties`, `required`,
//! `additionalProperties: false`, `enum`, `items`, `minimum`/`maximum`, `minLength`/`maxLength`,
//! `minItems`/`maxItems`. Keywords outside it are ignored (never a rejection). A full
//! validator (the `jsonschema` crate) brings a regex engine, a URI resolver and an HTTP client
//! to check five keywords; this is the few dozen lines the loop needs.
//!
//! ```
//! use serde_json::json;
//! use threadline_query::schema::check;
//!
//! let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
//! assert!(check(&schema, &json!({"path": "a.rs"})).is_ok());
//! let problems = check(&schema, &json!({"path": 3})).unwrap_err();
//! assert_eq!(problems.to_string(), "/path: expected string, got integer");
//! ```

use std::fmt;

use serde_json::Value;

/// How deep a schema is followed (a bound against self-similar inputs and schemas).
pub const MAX_DEPTH: usize = 64;

/// At most this many problems are reported.
pub const MAX_PROBLEMS: usize = 16;

/// One way the input does not fit the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A JSON pointer to the offending value (`""` for the root).
    pub path: String,
    /// What is wrong, for the model.
    pub message: String,
}

/// The problems of an input, in document order (at most [`MAX_PROBLEMS`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct SchemaErrors {
    /// The problems.
    pub problems: Vec<Problem>,
}

impl fmt::Display for SchemaErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let path = if p.path.is_empty() { "input" } else { &p.path };
            write!(f, "{path}: {}", p.message)?;
        }
        Ok(())
    }
}

/// Checks `input` against `schema`.
pub fn check(schema: &Value, input: &Value) -> Result<(), SchemaErrors> {
    let mut problems = Vec::new();
    walk(schema, input, &mut String::new(), 0, &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(SchemaErrors { problems })
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        other => kind_of(value) == other,
    }
}

fn push(problems: &mut Vec<Problem>, path: &str, message: String) {
    if problems.len() < MAX_PROBLEMS {
        problems.push(Problem {
            path: path.to_owned(),
            message,
        });
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn walk(
    schema: &Value,
    value: &Value,
    path: &mut String,
    depth: usize,
    problems: &mut Vec<Problem>,
) {
    let Some(schema) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            push(problems, path, "no value is allowed here".into());
        }
        return;
    };
    if depth >= MAX_DEPTH || problems.len() >= MAX_PROBLEMS {
        return;
    }
    if let Some(expected) = schema.get("type") {
        let names: Vec<&str> = match expected {
            Value::String(s) => vec![s.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|t| type_matches(t, value)) {
            push(
                problems,
                path,
                format!("expected {}, got {}", names.join(" or "), kind_of(value)),
            );
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        push(
            problems,
            path,
            format!("must be one of {}", list.join(", ")),
        );
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(required)) = schema.get("required") {
                for key in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(key) {
                        push(problems, path, format!("missing required property `{key}`"));
                    }
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&escape(key));
                match properties.and_then(|p| p.get(key)) {
                    Some(sub) => walk(sub, item, path, depth + 1, problems),
                    None if closed => {
                        path.truncate(len);
                        push(problems, path, format!("unknown property `{key}`"));
                        continue;
                    }
                    None => {}
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            bounds(
                schema,
                "minItems",
                "maxItems",
                items.len(),
                "items",
                path,
                problems,
            );
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&i.to_string());
                    walk(item_schema, item, path, depth + 1, problems);
                    path.truncate(len);
                }
            }
        }
        Value::String(s) => {
            bounds(
                schema,
                "minLength",
                "maxLength",
                s.chars().count(),
                "characters",
                path,
                problems,
            );
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                push(problems, path, format!("must be at least {min}"));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                push(problems, path, format!("must be at most {max}"));
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

fn bounds(
    schema: &serde_json::Map<String, Value>,
    min_key: &str,
    max_key: &str,
    len: usize,
    unit: &str,
    path: &str,
    problems: &mut Vec<Problem>,
) {
    let len = len as u64;
    if let Some(min) = schema.get(min_key).and_then(Value::as_u64)
        && len < min
    {
        push(problems, path, format!("must have at least {min} {unit}"));
    }
    if let Some(max) = schema.get(max_key).and_then(Value::as_u64)
        && len > max
    {
        push(problems, path, format!("must have at most {max} {unit}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "mode": {"enum": ["a", "b"]},
                "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 2},
                "n": {"type": ["integer", "null"], "maximum": 10}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn a_fitting_input_passes() {
        assert_eq!(
            check(
                &schema(),
                &json!({"path": "a", "mode": "b", "lines": [1, 2], "n": null})
            ),
            Ok(())
        );
    }

    #[test]
    fn each_keyword_reports_with_a_pointer() {
        let cases = [
            (json!([]), "input: expected object, got array"),
            (json!({}), "input: missing required property `path`"),
            (
                json!({"path": ""}),
                "/path: must have at least 1 characters",
            ),
            (
                json!({"path": "a", "mode": "c"}),
                "/mode: must be one of \"a\", \"b\"",
            ),
            (
                json!({"path": "a", "lines": [0]}),
                "/lines/0: must be at least 1",
            ),
            (
                json!({"path": "a", "lines": [1, 2, 3]}),
                "/lines: must have at most 2 items",
            ),
            (
                json!({"path": "a", "lines": ["x"]}),
                "/lines/0: expected integer, got string",
            ),
            (json!({"path": "a", "n": 11}), "/n: must be at most 10"),
            (
                json!({"path": "a", "extra": 1}),
                "input: unknown property `extra`",
            ),
        ];
        for (input, expected) in cases {
            let err = check(&schema(), &input).expect_err("rejected");
            assert_eq!(err.to_string(), expected, "{input}");
        }
    }

    #[test]
    fn a_pointer_escapes_slashes_and_tildes() {
        let schema = json!({"properties": {"a/b~": {"type": "string"}}});
        let err = check(&schema, &json!({"a/b~": 1})).expect_err("rejected");
        assert_eq!(err.problems[0].path, "/a~1b~0");
    }

    fn nested(depth: usize) -> Value {
        (0..depth).fold(json!(1), |inner, _| json!([inner]))
    }

    #[test]
    fn deep_inputs_and_schemas_stop_at_the_depth_bound() {
        let mut schema = json!({"type": "integer"});
        for _ in 0..(MAX_DEPTH * 2) {
            schema = json!({"type": "array", "items": schema});
        }
        // Passes the bound without recursing further, and without a panic.
        assert!(check(&schema, &nested(MAX_DEPTH * 2)).is_ok());
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            threadline_testkit::strategies::hostile_text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("path".to_owned()),
                        Just("mode".to_owned()),
                        Just("lines".to_owned()),
                        Just("n".to_owned()),
                        "[a-z/~]{0,4}"
                    ],
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn never_panics_and_bounds_the_report(input in any_json()) {
            if let Err(errors) = check(&schema(), &input) {
                prop_assert!(!errors.problems.is_empty());
                prop_assert!(errors.problems.len() <= MAX_PROBLEMS);
            }
        }
    }
}
