//! The workspace's one token estimate: what a request's pieces cost, from their sizes alone.
//!
//! Every estimate in threadline goes through here: the cache simulator's per-piece counts
//! (`threadline_cache::tokens::Estimate`), the compaction's thresholds and context estimate
//! (`threadline_compact::estimate`, which adds the internal message kinds on top of these
//! functions), tool search's threshold and the loop's telemetry. It lives in the wire crate
//! because it is a function of wire values only and is the lowest crate all of those use.
//!
//! The model, per piece the API reads:
//! - text: one token per [`BYTES_PER_TOKEN`] bytes, rounded up ([`text_tokens`]); counting
//!   bytes, not characters, errs on the high side for non-ASCII text, the safe side for a
//!   threshold;
//! - JSON (tool inputs, server tool results, unknown blocks): the length it would have as
//!   compact JSON, walked without serializing ([`json_len`]); a tool definition: its serialized
//!   length;
//! - an image, or a document whose size is not known offline (a URL, a file id): a fixed
//!   [`MEDIA_TOKENS`]; a base64 document: its decoded bytes as text; a text document: its text;
//! - every content block, system block and tool definition: [`BLOCK_OVERHEAD_TOKENS`] more for
//!   its framing (type tags, ids); every message [`MESSAGE_OVERHEAD_TOKENS`] more for its role.
//!
//! The estimate is additive (a request is the sum of its tools, system blocks and messages, a
//! message the sum of its blocks and its overhead) and monotone (more text never costs less).
//!
//! ```
//! use threadline_wire::tokens::{self, BLOCK_OVERHEAD_TOKENS, MESSAGE_OVERHEAD_TOKENS};
//! use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
//!
//! let request = MessagesRequest::new(
//!     "claude-sonnet-5",
//!     1024,
//!     vec![MessageParam::user(vec![ContentBlock::text("x".repeat(400))])],
//! );
//! assert_eq!(
//!     tokens::estimate_request(&request),
//!     MESSAGE_OVERHEAD_TOKENS + BLOCK_OVERHEAD_TOKENS + 100
//! );
//! ```

use serde_json::Value;

use crate::content::{Content, ContentBlock, MediaSource, TextBlock};
use crate::request::{MessageParam, MessagesRequest, SystemPrompt};
use crate::tools::ToolDefinition;

/// Bytes of text per token, the rough ratio for English prose and code.
pub const BYTES_PER_TOKEN: u64 = 4;

/// The fixed cost of one image, or of a document whose size is not known offline (a ~1.15
/// megapixel image is about 1,600 tokens by the API's `width × height / 750`).
pub const MEDIA_TOKENS: u64 = 1_600;

/// Tokens a block (content block, system block, tool definition) costs beyond its text: type
/// tags, ids, the structure around it.
pub const BLOCK_OVERHEAD_TOKENS: u64 = 3;

/// Tokens a message costs beyond its blocks: its role and framing.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Tokens for `bytes` bytes of text: one per [`BYTES_PER_TOKEN`], rounded up.
pub fn text_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// The length `value` would have as compact JSON, without serializing it (strings are counted
/// unescaped; numbers at a fixed plausible width of 8).
pub fn json_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 1 + items.iter().map(|v| json_len(v) + 1).sum::<usize>().max(1),
        Value::Object(map) => {
            1 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + json_len(v))
                .sum::<usize>()
                .max(1)
        }
    }
}

/// Tokens of a JSON value: [`text_tokens`] of its [`json_len`].
pub fn json_tokens(value: &Value) -> u64 {
    text_tokens(json_len(value))
}

fn media_tokens(source: &MediaSource) -> u64 {
    match source {
        MediaSource::Text(text) => text_tokens(text.data.len()),
        MediaSource::Content(inner) => content_tokens(&inner.content),
        // Decoded, base64 is three bytes for every four.
        MediaSource::Base64(data) => text_tokens(data.data.len() / 4 * 3),
        _ => MEDIA_TOKENS,
    }
}

/// The estimated tokens of one content block, its [`BLOCK_OVERHEAD_TOKENS`] included.
pub fn block_tokens(block: &ContentBlock) -> u64 {
    let own = match block {
        ContentBlock::Text(b) => text_tokens(b.text.len()),
        ContentBlock::Image(_) => MEDIA_TOKENS,
        ContentBlock::Document(d) => media_tokens(&d.source),
        ContentBlock::SearchResult(s) => {
            text_tokens(s.source.len() + s.title.len())
                + s.content.iter().map(block_tokens).sum::<u64>()
        }
        ContentBlock::ToolUse(u) => text_tokens(u.name.len() + u.id.len()) + json_tokens(&u.input),
        ContentBlock::ToolResult(r) => {
            text_tokens(r.tool_use_id.len()) + r.content.as_ref().map_or(0, content_tokens)
        }
        ContentBlock::Thinking(t) => text_tokens(t.thinking.len()),
        ContentBlock::RedactedThinking(r) => text_tokens(r.data.len()),
        ContentBlock::ServerToolUse(u) | ContentBlock::McpToolUse(u) => {
            text_tokens(u.name.len() + u.id.len()) + u.input.as_ref().map_or(0, json_tokens)
        }
        ContentBlock::ContainerUpload(c) => text_tokens(c.file_id.len()),
        ContentBlock::Compaction(c) => text_tokens(
            c.content.as_ref().map_or(0, String::len)
                + c.encrypted_content.as_ref().map_or(0, String::len),
        ),
        ContentBlock::Unknown(value) => json_tokens(value),
        other => other
            .server_tool_result()
            .map_or(0, |r| r.content.as_ref().map_or(0, json_tokens)),
    };
    own.saturating_add(BLOCK_OVERHEAD_TOKENS)
}

/// The estimated tokens of a message's or a tool result's content (a string is one text
/// block).
pub fn content_tokens(content: &Content) -> u64 {
    match content {
        Content::Text(text) => text_tokens(text.len()) + BLOCK_OVERHEAD_TOKENS,
        Content::Blocks(blocks) => blocks.iter().map(block_tokens).sum(),
    }
}

/// The estimated tokens of one request message, its [`MESSAGE_OVERHEAD_TOKENS`] included.
pub fn param_tokens(message: &MessageParam) -> u64 {
    MESSAGE_OVERHEAD_TOKENS + content_tokens(&message.content)
}

/// The estimated tokens of request messages.
pub fn estimate_params<'a>(messages: impl IntoIterator<Item = &'a MessageParam>) -> u64 {
    messages.into_iter().map(param_tokens).sum()
}

/// The estimated tokens of one system block.
pub fn system_block_tokens(block: &TextBlock) -> u64 {
    text_tokens(block.text.len()) + BLOCK_OVERHEAD_TOKENS
}

/// The estimated tokens of a system prompt (a string is one block).
pub fn system_tokens(system: &SystemPrompt) -> u64 {
    match system {
        SystemPrompt::Text(text) => text_tokens(text.len()) + BLOCK_OVERHEAD_TOKENS,
        SystemPrompt::Blocks(blocks) => blocks.iter().map(system_block_tokens).sum(),
    }
}

/// The estimated tokens of one tool definition (name, description and schema, as sent).
pub fn tool_tokens(tool: &ToolDefinition) -> u64 {
    let bytes = serde_json::to_vec(tool).map_or(0, |json| json.len());
    text_tokens(bytes) + BLOCK_OVERHEAD_TOKENS
}

/// The estimated tokens of tool definitions.
pub fn tools_tokens(tools: &[ToolDefinition]) -> u64 {
    tools.iter().map(tool_tokens).sum()
}

/// The estimated input tokens of a whole request: system prompt, tools and messages.
pub fn estimate_request(request: &MessagesRequest) -> u64 {
    request.system.as_ref().map_or(0, system_tokens)
        + request.tools.as_deref().map_or(0, tools_tokens)
        + estimate_params(&request.messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn text_counts_by_bytes_rounded_up() {
        assert_eq!(text_tokens(0), 0);
        assert_eq!(text_tokens(1), 1);
        assert_eq!(text_tokens(8), 2);
        assert_eq!(text_tokens(9), 3);
        // Bytes, not characters: four three-byte characters are three tokens.
        assert_eq!(
            block_tokens(&ContentBlock::text("日本語だ")),
            3 + BLOCK_OVERHEAD_TOKENS
        );
    }

    #[test]
    fn json_len_matches_compact_serialization_for_plain_values() {
        let value = json!({"file_path": "src/lib.rs", "list": ["a", "bc"], "ok": true});
        let serialized = serde_json::to_string(&value).expect("serializes").len();
        // Numbers are counted at a fixed width; there are none here, so it is exact.
        assert_eq!(json_len(&value), serialized);
    }

    #[test]
    fn images_cost_a_fixed_amount_and_strings_are_one_block() {
        let image: ContentBlock = serde_json::from_value(json!({"type": "image", "source": {
            "type": "url", "url": "https://example.com/cat.png"}}))
        .expect("an image block");
        assert_eq!(block_tokens(&image), MEDIA_TOKENS + BLOCK_OVERHEAD_TOKENS);
        let text = "x".repeat(400);
        assert_eq!(
            content_tokens(&Content::Text(text.clone())),
            content_tokens(&Content::Blocks(vec![ContentBlock::text(text)]))
        );
    }

    #[test]
    fn a_request_is_the_sum_of_its_parts() {
        let tool: ToolDefinition = serde_json::from_value(json!({
            "name": "Read", "description": "Reads a file.",
            "input_schema": {"type": "object"}}))
        .expect("a tool");
        let messages = vec![
            MessageParam::user(vec![ContentBlock::text("x".repeat(40))]),
            MessageParam::assistant(vec![ContentBlock::text("ok")]),
        ];
        let request = MessagesRequest::new("m", 1, messages.clone())
            .with_system(SystemPrompt::Text("be brief".into()))
            .with_tools(vec![tool.clone()]);
        assert_eq!(
            estimate_request(&request),
            (text_tokens(8) + BLOCK_OVERHEAD_TOKENS)
                + tool_tokens(&tool)
                + estimate_params(&messages)
        );
        assert_eq!(
            estimate_params(&messages),
            2 * MESSAGE_OVERHEAD_TOKENS + 2 * BLOCK_OVERHEAD_TOKENS + 10 + 1
        );
    }

    fn block() -> impl Strategy<Value = ContentBlock> {
        prop_oneof![
            "\\PC{0,200}".prop_map(ContentBlock::text),
            ("[a-z]{1,12}", "toolu_[a-z0-9]{1,12}", "\\PC{0,60}").prop_map(|(name, id, arg)| {
                serde_json::from_value(json!({"type": "tool_use", "id": id, "name": name,
                    "input": {"arg": arg, "n": 3, "flags": [true, null]}}))
                .expect("a tool_use block")
            }),
            ("toolu_[a-z0-9]{1,12}", "\\PC{0,200}").prop_map(|(id, text)| {
                serde_json::from_value(json!({"type": "tool_result", "tool_use_id": id,
                    "content": text}))
                .expect("a tool_result block")
            }),
            "\\PC{0,200}".prop_map(|thinking| {
                serde_json::from_value(json!({"type": "thinking", "thinking": thinking,
                    "signature": "sig"}))
                .expect("a thinking block")
            }),
        ]
    }

    proptest! {
        /// Additive: a message costs its overhead plus the sum of its blocks, a request the sum
        /// of its messages; and never less than the overheads alone.
        #[test]
        fn the_estimate_is_additive(
            first in proptest::collection::vec(block(), 0..6),
            second in proptest::collection::vec(block(), 0..6),
        ) {
            let a = MessageParam::user(first.clone());
            let b = MessageParam::assistant(second.clone());
            prop_assert_eq!(
                param_tokens(&a),
                MESSAGE_OVERHEAD_TOKENS + first.iter().map(block_tokens).sum::<u64>()
            );
            prop_assert_eq!(estimate_params(&[a.clone(), b.clone()]), param_tokens(&a) + param_tokens(&b));
            let request = MessagesRequest::new("m", 1, vec![a, b]);
            prop_assert_eq!(estimate_request(&request), estimate_params(&request.messages));
            for block in first.iter().chain(&second) {
                prop_assert!(block_tokens(block) >= BLOCK_OVERHEAD_TOKENS);
            }
        }

        /// Monotone: appending text to a block, or a block to a message, never lowers the
        /// estimate; text is subadditive within one token per split.
        #[test]
        fn the_estimate_is_monotone(
            text in "\\PC{0,300}",
            more in "\\PC{0,300}",
            blocks in proptest::collection::vec(block(), 0..6),
            extra in block(),
        ) {
            let longer = format!("{text}{more}");
            prop_assert!(
                block_tokens(&ContentBlock::text(longer.clone()))
                    >= block_tokens(&ContentBlock::text(text.clone()))
            );
            let joined = text_tokens(longer.len());
            let split = text_tokens(text.len()) + text_tokens(more.len());
            prop_assert!(joined <= split && split <= joined + 1);
            let before = content_tokens(&Content::Blocks(blocks.clone()));
            let mut grown = blocks;
            grown.push(extra);
            prop_assert!(content_tokens(&Content::Blocks(grown)) > before);
        }
    }
}
