//! An MCP `tools/call` result as tool_result content.
//!
//! Text stays text; an image becomes an image block (base64); an embedded resource becomes
//! its text (a text resource) or a document (a PDF blob), a linked resource one line naming
//! its URI; anything else (audio, unknown kinds) one line saying what was left out. The text
//! is bounded by [`MAX_OUTPUT_BYTES`], the built-in shell tool's limit.

use serde_json::Value;
use threadline_query::ToolOutput;
use threadline_wire::{Content, ContentBlock, TextBlock};

/// The most text kept from one result (the built-in shell tool's limit).
/// (the same figure as `threadline_tools::shell::MAX_OUTPUT_BYTES`, not a dependency here).
pub const MAX_OUTPUT_BYTES: usize = 30_000;

/// The most image or document bytes (base64) kept from one result; larger ones are left out
/// with a note.
pub const MAX_MEDIA_BYTES: usize = 5 * 1024 * 1024;

/// Maps the JSON of a `CallToolResult` (`content`, `isError`, `structuredContent`).
pub fn to_output(result: &Value) -> ToolOutput {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut blocks: Vec<ContentBlock> = Vec::new();
    let mut text_budget = MAX_OUTPUT_BYTES;
    let mut push_text = |blocks: &mut Vec<ContentBlock>, text: &str| {
        let mut text = text.to_owned();
        if cut_output(&mut text, text_budget) {
            text_budget = 0;
        } else {
            text_budget -= text.len();
        }
        blocks.push(ContentBlock::Text(TextBlock::new(text)));
    };
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for item in &items {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => push_text(&mut blocks, item["text"].as_str().unwrap_or("")),
            "image" => {
                let data = item["data"].as_str().unwrap_or("");
                let mime = item["mimeType"].as_str().unwrap_or("");
                if data.len() <= MAX_MEDIA_BYTES && is_image_type(mime) {
                    blocks.push(media("image", mime, data));
                } else {
                    push_text(
                        &mut blocks,
                        &format!("[image {mime} of {} base64 bytes left out]", data.len()),
                    );
                }
            }
            "resource" => {
                let resource = &item["resource"];
                let uri = resource["uri"].as_str().unwrap_or("");
                let mime = resource["mimeType"].as_str().unwrap_or("");
                if let Some(text) = resource["text"].as_str() {
                    push_text(&mut blocks, &format!("[resource {uri}]\n{text}"));
                } else if let Some(blob) = resource["blob"].as_str() {
                    if mime == "application/pdf" && blob.len() <= MAX_MEDIA_BYTES {
                        blocks.push(media("document", mime, blob));
                    } else if is_image_type(mime) && blob.len() <= MAX_MEDIA_BYTES {
                        blocks.push(media("image", mime, blob));
                    } else {
                        push_text(
                            &mut blocks,
                            &format!(
                                "[resource {uri} ({mime}, {} base64 bytes) left out]",
                                blob.len()
                            ),
                        );
                    }
                }
            }
            "resource_link" => {
                let uri = item["uri"].as_str().unwrap_or("");
                let name = item["name"].as_str().unwrap_or("");
                let mime = item["mimeType"]
                    .as_str()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                push_text(&mut blocks, &format!("[resource link {name}: {uri}{mime}]"));
            }
            other => push_text(&mut blocks, &format!("[{other} content left out]")),
        }
    }
    if blocks.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        push_text(&mut blocks, &structured.to_string());
    }
    let content = match blocks.as_slice() {
        [] => Content::Text(String::new()),
        [ContentBlock::Text(text)] => Content::Text(text.text.clone()),
        _ => Content::Blocks(blocks),
    };
    ToolOutput::content(content).with_is_error(is_error)
}

/// The longest start of `text` of at most `max` bytes that ends at a character boundary.
/// With [`suffix`] and [`cut`], the one way this crate cuts a peer's text: results, error
/// messages, stderr lines, instructions, permission questions.
pub(crate) fn prefix(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// The longest end of `text` of at most `max` bytes that starts at a character boundary.
pub(crate) fn suffix(text: &str, max: usize) -> &str {
    &text[text.ceil_char_boundary(text.len().saturating_sub(max))..]
}

/// Cuts `text` to its [`prefix`] of `max` bytes; how many bytes were cut (0: none).
pub(crate) fn cut(text: &mut String, max: usize) -> usize {
    let kept = prefix(text, max).len();
    let dropped = text.len() - kept;
    text.truncate(kept);
    dropped
}

/// Cuts `text` to `max` bytes as a result's text is cut, a last line saying how much went
/// (`… [N bytes of MCP output cut]`); whether it cut.
pub(crate) fn cut_output(text: &mut String, max: usize) -> bool {
    let dropped = cut(text, max);
    if dropped > 0 {
        text.push_str(&format!("\n… [{dropped} bytes of MCP output cut]"));
    }
    dropped > 0
}

/// Cuts `text`, one line, to `max` bytes, marking a cut with `…`.
pub(crate) fn cut_line(text: &mut String, max: usize) {
    if cut(text, max) > 0 {
        text.push('…');
    }
}

fn is_image_type(mime: &str) -> bool {
    matches!(
        mime,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    )
}

fn media(kind: &str, mime: &str, data: &str) -> ContentBlock {
    let block = serde_json::json!({
        "type": kind,
        "source": {"type": "base64", "media_type": mime, "data": data},
    });
    serde_json::from_value(block).unwrap_or_else(|_| ContentBlock::text("[media left out]"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_bounded_like_the_shell_tool() {
        let big = "é".repeat(MAX_OUTPUT_BYTES);
        let output = to_output(&json!({"content": [{"type": "text", "text": big}]}));
        let Content::Text(text) = &output.content else {
            panic!("one text")
        };
        let kept = MAX_OUTPUT_BYTES;
        assert!(text.starts_with(&"é".repeat(kept / 2)));
        assert!(text.ends_with(&format!(
            "\n… [{} bytes of MCP output cut]",
            2 * kept - kept
        )));
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        assert_eq!(prefix("aé", 2), "a");
        assert_eq!(prefix("ab", 9), "ab");
        assert_eq!(suffix("éa", 2), "a");
        assert_eq!(suffix("ab", 9), "ab");
        let mut text = "aéb".to_owned();
        assert_eq!(cut(&mut text, 2), 3);
        assert_eq!(text, "a");
        let mut line = "abc".to_owned();
        cut_line(&mut line, 3);
        assert_eq!(line, "abc");
        cut_line(&mut line, 2);
        assert_eq!(line, "ab…");
    }

    #[test]
    fn is_error_audio_and_structured_content() {
        let output =
            to_output(&json!({"isError": true, "content": [{"type": "text", "text": "no"}]}));
        assert!(output.is_error);
        let output = to_output(
            &json!({"content": [{"type": "audio", "data": "AA", "mimeType": "audio/wav"}]}),
        );
        assert_eq!(
            output.content,
            Content::Text("[audio content left out]".into())
        );
        let output = to_output(&json!({"content": [], "structuredContent": {"n": 1}}));
        assert_eq!(output.content, Content::Text("{\"n\":1}".into()));
    }

    #[test]
    fn a_pdf_resource_is_a_document() {
        let output = to_output(&json!({"content": [{"type": "resource", "resource":
            {"uri": "file:///a.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="}}]}));
        let blocks = output.content.to_blocks();
        assert_eq!(
            serde_json::to_value(&blocks[0]).expect("json"),
            json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}})
        );
    }
}
