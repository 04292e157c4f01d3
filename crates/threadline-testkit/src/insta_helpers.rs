//! insta redactions that check the shape of what they hide.
//!
//! A plain static redaction would hide a regression such as an id that
//! became `null` or a signature that became empty. These helpers assert the
//! shape first and panic with the selector path and the offending value when
//! it is wrong.
//!
//! ```
//! use threadline_testkit::insta_helpers::{redact_id, redact_signature};
//!
//! let message = serde_json::json!({
//!     "id": "msg_01Fg1JVgvCYUHWsxrj9GkpEv",
//!     "content": [{"type": "thinking", "thinking": "…", "signature": "EqQBCkYIBxgC"}],
//! });
//! insta::assert_json_snapshot!(message, {
//!     ".id" => redact_id("msg_"),
//!     ".content[].signature" => redact_signature(),
//! }, @r#"
//! {
//!   "content": [
//!     {
//!       "signature": "[signature]",
//!       "thinking": "…",
//!       "type": "thinking"
//!     }
//!   ],
//!   "id": "[msg_id]"
//! }
//! "#);
//! ```

use insta::internals::{Content, ContentPath, Redaction};

/// Whether `value` is `prefix` followed by a non-empty run of ASCII letters,
/// digits, `_` or `-` (the shape of `msg_…`, `toolu_…`, `srvtoolu_…`, `req_…`).
pub fn is_id_with_prefix(value: &str, prefix: &str) -> bool {
    value.strip_prefix(prefix).is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    })
}

/// Whether `value` looks like a thinking signature: non-empty base64 text.
pub fn is_signature(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '-' | '_'))
}

fn describe(content: &Content) -> String {
    match content.as_str() {
        Some(s) => format!("string {s:?}"),
        None => format!("non-string {content:?}"),
    }
}

/// A redaction that asserts the value is a string accepted by `check` and
/// replaces it with `replacement`. `expected` describes the shape for the panic message.
pub fn redact_checked(
    replacement: impl Into<String>,
    expected: impl Into<String>,
    check: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> Redaction {
    let replacement = replacement.into();
    let expected = expected.into();
    insta::dynamic_redaction(move |value: Content, path: ContentPath<'_>| {
        let ok = value.as_str().is_some_and(&check);
        assert!(
            ok,
            "redaction at {path}: expected {expected}, found {}",
            describe(&value)
        );
        replacement.clone()
    })
}

/// Redacts an id that must be a string starting with `prefix` (`"msg_"`,
/// `"toolu_"`, `"srvtoolu_"`, `"req_"`, ...) followed by id characters; it
/// becomes `"[<prefix>id]"`, e.g. `"[msg_id]"`. Panics on any other shape.
pub fn redact_id(prefix: &'static str) -> Redaction {
    redact_checked(
        format!("[{prefix}id]"),
        format!("an id string starting with {prefix:?}"),
        move |s| is_id_with_prefix(s, prefix),
    )
}

/// Redacts a thinking `signature` (non-empty base64) as `"[signature]"`.
pub fn redact_signature() -> Redaction {
    redact_checked("[signature]", "a non-empty base64 signature", is_signature)
}

/// Redacts any non-empty string as `"[<label>]"` (e.g. encrypted content,
/// opaque `redacted_thinking` data). Panics on empty strings and non-strings.
pub fn redact_nonempty_string(label: &'static str) -> Redaction {
    redact_checked(
        format!("[{label}]"),
        format!("a non-empty string ({label})"),
        |s| !s.is_empty(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes() {
        assert!(is_id_with_prefix("msg_01Fg1JVgvCYUHWsxrj9GkpEv", "msg_"));
        assert!(is_id_with_prefix("req_011CVEA3SF7rnb3DuBZytqQa", "req_"));
        assert!(!is_id_with_prefix("msg_", "msg_"));
        assert!(!is_id_with_prefix("toolu_01", "msg_"));
        assert!(!is_id_with_prefix("msg_01 x", "msg_"));
        assert!(is_signature("EqQBCkYIBxgCKkA+/="));
        assert!(!is_signature(""));
        assert!(!is_signature("not base64!"));
    }

    #[test]
    fn redacts_well_shaped_values() {
        let value = json!({
            "id": "msg_01ALwQ87pTS7hH1PjSdC9wJD",
            "content": [
                {"type": "tool_use", "id": "toolu_011LF2VkWpAfJnTKJcmh1PNf"},
                {"type": "tool_use", "id": "toolu_012"},
            ],
            "request_id": "req_1",
        });
        insta::assert_json_snapshot!(value, {
            ".id" => redact_id("msg_"),
            ".content[].id" => redact_id("toolu_"),
            ".request_id" => redact_nonempty_string("request_id"),
        }, @r#"
        {
          "content": [
            {
              "id": "[toolu_id]",
              "type": "tool_use"
            },
            {
              "id": "[toolu_id]",
              "type": "tool_use"
            }
          ],
          "id": "[msg_id]",
          "request_id": "[request_id]"
        }
        "#);
    }

    #[test]
    #[should_panic(expected = "expected an id string starting with \"msg_\"")]
    fn wrong_prefix_panics() {
        let value = json!({"id": "toolu_01"});
        insta::assert_json_snapshot!(value, {".id" => redact_id("msg_")}, @"");
    }

    #[test]
    #[should_panic(expected = "found non-string")]
    fn non_string_panics() {
        let value = json!({"id": null});
        insta::assert_json_snapshot!(value, {".id" => redact_id("msg_")}, @"");
    }

    #[test]
    #[should_panic(expected = "a non-empty base64 signature")]
    fn empty_signature_panics() {
        let value = json!({"signature": ""});
        insta::assert_json_snapshot!(value, {".signature" => redact_signature()}, @"");
    }
}
