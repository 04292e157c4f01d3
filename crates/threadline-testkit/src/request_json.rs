//! Request bodies as JSON, compared the way the prompt cache sees them: without their cache
//! markers (markers move between requests; what is cached does not).
//!
//! ```
//! use serde_json::json;
//! use threadline_testkit::request_json::message_blocks;
//!
//! let request = json!({"messages": [
//!     {"role": "user", "content": "Hi"},
//!     {"role": "assistant", "content": [{"type": "text", "text": "Hello", "cache_control": {"type": "ephemeral"}}]}
//! ]});
//! assert_eq!(
//!     message_blocks(&request),
//!     [
//!         (json!("user"), json!({"type": "text", "text": "Hi"})),
//!         (json!("assistant"), json!({"type": "text", "text": "Hello"})),
//!     ]
//! );
//! ```

use serde_json::{Value, json};

/// `value` without any `cache_control` field, at any depth (the wire crate's rule).
pub use threadline_wire::cache_control::without_cache_control;

/// The blocks of `request`'s messages in order, each with its message's role, without cache
/// markers; a string content is one text block (as the API reads it).
///
/// # Panics
///
/// When `request` has no `messages` array (a test's request always has one).
pub fn message_blocks(request: &Value) -> Vec<(Value, Value)> {
    let mut out = Vec::new();
    for message in request["messages"].as_array().expect("messages") {
        let role = message["role"].clone();
        match &message["content"] {
            Value::Array(items) => {
                out.extend(
                    items
                        .iter()
                        .map(|b| (role.clone(), without_cache_control(b))),
                );
            }
            text => out.push((role, json!({"type": "text", "text": text}))),
        }
    }
    out
}
