//! Cache markers (`cache_control`): reading, placing and clearing them on every wire value that
//! can carry one. This is the one implementation; the cache planner and the normalizer use it.
//!
//! A marker lives in a typed slot on most content blocks, on tools, on system text blocks and
//! at the top of a request. Thinking and redacted-thinking blocks have no slot (a marker sent
//! anyway lands in their `extra`), and blocks this version does not know are raw JSON: neither
//! can be given a marker here, but [`ContentBlock::clear_cache_control`] removes one from both.

use crate::cache_control::CacheControl;
use crate::content::{Content, ContentBlock, TextBlock};
use crate::request::{CountTokensRequest, MessageParam, MessagesRequest, SystemPrompt};
use crate::tools::ToolDefinition;

/// The `cache_control` slot of a block, as `&` or `&mut` (one list of block kinds for both).
macro_rules! slot {
    ($block:expr, $($r:tt)+) => {
        match $block {
            ContentBlock::Text(b) => Some($($r)+ b.cache_control),
            ContentBlock::Image(b) => Some($($r)+ b.cache_control),
            ContentBlock::Document(b) => Some($($r)+ b.cache_control),
            ContentBlock::SearchResult(b) => Some($($r)+ b.cache_control),
            ContentBlock::ToolUse(b) => Some($($r)+ b.cache_control),
            ContentBlock::ToolResult(b) => Some($($r)+ b.cache_control),
            ContentBlock::ServerToolUse(b) | ContentBlock::McpToolUse(b) => {
                Some($($r)+ b.cache_control)
            }
            ContentBlock::WebSearchToolResult(b)
            | ContentBlock::WebFetchToolResult(b)
            | ContentBlock::CodeExecutionToolResult(b)
            | ContentBlock::BashCodeExecutionToolResult(b)
            | ContentBlock::TextEditorCodeExecutionToolResult(b)
            | ContentBlock::ToolSearchToolResult(b)
            | ContentBlock::McpToolResult(b) => Some($($r)+ b.cache_control),
            ContentBlock::ContainerUpload(b) => Some($($r)+ b.cache_control),
            ContentBlock::Compaction(b) => Some($($r)+ b.cache_control),
            ContentBlock::ToolReference(b) => Some($($r)+ b.cache_control),
            ContentBlock::ToolAddition(b) | ContentBlock::ToolRemoval(b) => {
                Some($($r)+ b.cache_control)
            }
            ContentBlock::Thinking(_)
            | ContentBlock::RedactedThinking(_)
            | ContentBlock::Unknown(_) => None,
        }
    };
}

impl ContentBlock {
    /// Whether a cache marker may be put on this block (and an automatic one land on it):
    /// never on thinking or redacted thinking, never on an empty text block, never on a block
    /// this version does not know. The one rule the planner and the validator share.
    pub fn is_cache_eligible(&self) -> bool {
        match self {
            ContentBlock::Text(t) => !t.text.is_empty(),
            ContentBlock::Thinking(_)
            | ContentBlock::RedactedThinking(_)
            | ContentBlock::Unknown(_) => false,
            _ => true,
        }
    }

    /// The block's cache marker, if it has one (and can carry one).
    pub fn cache_control(&self) -> Option<&CacheControl> {
        slot!(self, &).and_then(|slot| slot.as_deref())
    }

    /// The block's marker slot, for placing or removing its own marker; `None` for a block
    /// kind that cannot carry one (thinking, redacted thinking, a block this version does not
    /// know).
    pub fn cache_control_mut(&mut self) -> Option<&mut Option<Box<CacheControl>>> {
        slot!(self, &mut)
    }

    /// The block with `marker` on it; unchanged when its kind cannot carry one (see
    /// [`ContentBlock::cache_control_mut`]).
    #[must_use]
    pub fn with_cache_control(mut self, marker: CacheControl) -> Self {
        self.set_cache_control(marker);
        self
    }

    /// Puts `marker` on the block in place, replacing its own; whether it could (false, and
    /// the block unchanged, for a kind that cannot carry one).
    pub fn set_cache_control(&mut self, marker: CacheControl) -> bool {
        match self.cache_control_mut() {
            Some(slot) => {
                *slot = Some(Box::new(marker));
                true
            }
            None => false,
        }
    }

    /// Removes every marker from the block: its own, those of the blocks nested in it
    /// (`tool_result` and `search_result` content, a tool search result's
    /// `tool_references`), and a raw one on a thinking block or an unknown block.
    pub fn clear_cache_control(&mut self) {
        match self {
            ContentBlock::SearchResult(b) => clear_blocks(&mut b.content),
            ContentBlock::ToolResult(b) => {
                if let Some(content) = &mut b.content {
                    content.clear_cache_control();
                }
            }
            ContentBlock::ToolSearchToolResult(b) => {
                let references = b
                    .content
                    .as_mut()
                    .and_then(|c| c.get_mut("tool_references"))
                    .and_then(|r| r.as_array_mut());
                for reference in references.into_iter().flatten() {
                    if let Some(map) = reference.as_object_mut() {
                        map.remove("cache_control");
                    }
                }
            }
            ContentBlock::Thinking(b) => {
                b.extra.remove("cache_control");
            }
            ContentBlock::RedactedThinking(b) => {
                b.extra.remove("cache_control");
            }
            ContentBlock::Unknown(value) => {
                if let Some(map) = value.as_object_mut() {
                    map.remove("cache_control");
                }
            }
            _ => {}
        }
        if let Some(slot) = self.cache_control_mut() {
            *slot = None;
        }
    }
}

impl ContentBlock {
    /// Whether [`ContentBlock::clear_cache_control`] would change the block: it has a marker
    /// of its own, a nested one, or a raw one. (A property test ties the two together.)
    pub fn has_cache_control(&self) -> bool {
        let nested = match self {
            ContentBlock::SearchResult(b) => b.content.iter().any(ContentBlock::has_cache_control),
            ContentBlock::ToolResult(b) => {
                b.content.as_ref().is_some_and(Content::has_cache_control)
            }
            ContentBlock::ToolSearchToolResult(b) => b
                .content
                .as_ref()
                .and_then(|c| c.get("tool_references"))
                .and_then(|r| r.as_array())
                .is_some_and(|references| {
                    references.iter().any(|r| {
                        r.as_object()
                            .is_some_and(|m| m.contains_key("cache_control"))
                    })
                }),
            ContentBlock::Thinking(b) => b.extra.contains_key("cache_control"),
            ContentBlock::RedactedThinking(b) => b.extra.contains_key("cache_control"),
            ContentBlock::Unknown(value) => value
                .as_object()
                .is_some_and(|m| m.contains_key("cache_control")),
            _ => false,
        };
        nested || slot!(self, &).is_some_and(Option::is_some)
    }
}

fn clear_blocks(blocks: &mut [ContentBlock]) {
    blocks
        .iter_mut()
        .for_each(ContentBlock::clear_cache_control);
}

impl Content {
    /// Removes every marker from the blocks (the string shorthand has none).
    pub fn clear_cache_control(&mut self) {
        if let Content::Blocks(blocks) = self {
            clear_blocks(blocks);
        }
    }

    /// Whether [`Content::clear_cache_control`] would change it.
    pub fn has_cache_control(&self) -> bool {
        matches!(self, Content::Blocks(blocks) if blocks.iter().any(ContentBlock::has_cache_control))
    }
}

impl ToolDefinition {
    /// The tool with `marker` on it.
    #[must_use]
    pub fn with_cache_control(mut self, marker: CacheControl) -> Self {
        self.set_cache_control(marker);
        self
    }

    /// Puts `marker` on the tool in place, replacing its own.
    pub fn set_cache_control(&mut self, marker: CacheControl) {
        *self.cache_control_mut() = Some(Box::new(marker));
    }

    /// Removes the tool's marker.
    pub fn clear_cache_control(&mut self) {
        *self.cache_control_mut() = None;
    }
}

impl MessageParam {
    /// Removes every marker from the message's blocks, nested ones included.
    pub fn clear_cache_control(&mut self) {
        self.content.clear_cache_control();
    }

    /// Whether [`MessageParam::clear_cache_control`] would change it.
    pub fn has_cache_control(&self) -> bool {
        self.content.has_cache_control()
    }
}

impl TextBlock {
    /// Puts `marker` on the block in place, replacing its own (a system block's, or a text
    /// block's outside a [`ContentBlock`]).
    pub fn set_cache_control(&mut self, marker: CacheControl) {
        self.cache_control = Some(Box::new(marker));
    }

    /// Removes the block's marker (a system block's, or a text block's outside a
    /// [`ContentBlock`]).
    pub fn clear_cache_control(&mut self) {
        self.cache_control = None;
    }
}

impl SystemPrompt {
    /// Removes every marker from the system prompt's blocks.
    pub fn clear_cache_control(&mut self) {
        if let SystemPrompt::Blocks(blocks) = self {
            blocks.iter_mut().for_each(TextBlock::clear_cache_control);
        }
    }
}

/// Clears the markers of a request's parts (both request types hold the same ones).
fn clear_request_parts(
    tools: &mut Option<Vec<ToolDefinition>>,
    system: &mut Option<SystemPrompt>,
    messages: &mut crate::Messages,
    automatic: &mut Option<Box<CacheControl>>,
    maybe_marked: impl IntoIterator<Item = usize>,
) {
    tools
        .iter_mut()
        .flatten()
        .for_each(ToolDefinition::clear_cache_control);
    if let Some(system) = system {
        system.clear_cache_control();
    }
    // Only the messages that have one are touched (a shared message is copied when changed).
    for index in maybe_marked {
        if messages
            .get(index)
            .is_some_and(MessageParam::has_cache_control)
        {
            messages[index].clear_cache_control();
        }
    }
    *automatic = None;
}

impl MessagesRequest {
    /// Sets the top-level `cache_control` (automatic caching) in place.
    pub fn set_cache_control(&mut self, marker: CacheControl) {
        self.cache_control = Some(Box::new(marker));
    }

    /// Removes every marker from the request: tools, system blocks, message blocks (nested
    /// ones included) and the top-level automatic-caching marker.
    pub fn clear_cache_control(&mut self) {
        self.clear_cache_control_of(0..self.messages.len());
    }

    /// [`MessagesRequest::clear_cache_control`], looking only into the messages at the
    /// indices `maybe_marked` gives (others are left as they are; indices past the end are
    /// skipped): a caller that knows which messages have no marker (the cache planner keeps
    /// the messages it saw without one) spares reading the whole history.
    pub fn clear_cache_control_of(&mut self, maybe_marked: impl IntoIterator<Item = usize>) {
        clear_request_parts(
            &mut self.tools,
            &mut self.system,
            &mut self.messages,
            &mut self.cache_control,
            maybe_marked,
        );
    }
}

impl CountTokensRequest {
    /// Removes every marker from the request, as [`MessagesRequest::clear_cache_control`].
    pub fn clear_cache_control(&mut self) {
        let all = 0..self.messages.len();
        clear_request_parts(
            &mut self.tools,
            &mut self.system,
            &mut self.messages,
            &mut self.cache_control,
            all,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache_control::CacheTtl;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// One block of every kind that carries a marker, as JSON without one.
    fn markable_blocks() -> Vec<ContentBlock> {
        let source = json!({"type": "text", "media_type": "text/plain", "data": "d"});
        let result = |kind: &str| json!({"type": kind, "tool_use_id": "srvtoolu_1", "content": []});
        let blocks = json!([
            {"type": "text", "text": "t"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "document", "source": source},
            {"type": "search_result", "source": "s", "title": "t", "content": []},
            {"type": "tool_use", "id": "toolu_1", "name": "n", "input": {}},
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "n", "input": {}},
            result("web_search_tool_result"),
            result("web_fetch_tool_result"),
            result("code_execution_tool_result"),
            result("bash_code_execution_tool_result"),
            result("text_editor_code_execution_tool_result"),
            result("tool_search_tool_result"),
            result("mcp_tool_result"),
            {"type": "container_upload", "file_id": "file_1"},
            {"type": "compaction", "content": "summary"},
            {"type": "tool_reference", "tool_name": "deploy"},
            {"type": "tool_addition", "tool": {"type": "tool", "name": "deploy"}},
            {"type": "tool_removal", "tool": {"type": "tool", "name": "deploy"}},
        ]);
        serde_json::from_value(blocks).expect("parses")
    }

    fn marker() -> CacheControl {
        CacheControl::ephemeral().with_ttl(CacheTtl::OneHour)
    }

    /// Whether a `cache_control` key with a value is anywhere in `value` (an explicit `null`
    /// read from the wire is kept, as every field's is, and is no marker).
    fn has_marker_key(value: &Value) -> bool {
        match value {
            Value::Object(map) => {
                map.get("cache_control").is_some_and(|m| !m.is_null())
                    || map.values().any(has_marker_key)
            }
            Value::Array(items) => items.iter().any(has_marker_key),
            _ => false,
        }
    }

    #[test]
    fn every_markable_kind_reads_back_and_clears_its_marker() {
        let blocks = markable_blocks();
        assert_eq!(blocks.len(), 20);
        for block in blocks {
            assert!(!matches!(block, ContentBlock::Unknown(_)), "{block:?}");
            assert_eq!(block.cache_control(), None);
            let mut marked = block.clone().with_cache_control(marker());
            assert_eq!(marked.cache_control(), Some(&marker()), "{block:?}");
            let mut in_place = block.clone();
            assert!(in_place.set_cache_control(marker()), "{block:?}");
            assert_eq!(in_place, marked);
            let json = serde_json::to_value(&marked).expect("serializes");
            assert_eq!(
                json["cache_control"],
                json!({"type": "ephemeral", "ttl": "1h"})
            );
            marked.clear_cache_control();
            assert_eq!(marked, block);
        }
    }

    #[test]
    fn kinds_without_a_slot_are_left_unchanged_but_raw_markers_are_cleared() {
        let raw = json!({"type": "ephemeral"});
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "thinking", "thinking": "t", "signature": "s", "cache_control": raw},
            {"type": "redacted_thinking", "data": "d", "cache_control": raw},
            {"type": "future_block", "cache_control": raw},
        ]))
        .expect("parses");
        for mut block in blocks {
            assert!(block.cache_control_mut().is_none());
            assert_eq!(block.clone().with_cache_control(marker()), block);
            let mut in_place = block.clone();
            assert!(!in_place.set_cache_control(marker()));
            assert_eq!(in_place, block);
            block.clear_cache_control();
            let json = serde_json::to_value(&block).expect("serializes");
            assert!(!has_marker_key(&json), "{json}");
        }
    }

    #[test]
    fn nested_markers_are_cleared() {
        let cc = json!({"type": "ephemeral"});
        let mut blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "cache_control": cc, "content": [
                {"type": "text", "text": "a", "cache_control": cc},
                {"type": "tool_reference", "tool_name": "deploy", "cache_control": cc},
                {"type": "search_result", "source": "s", "title": "t", "content": [
                    {"type": "text", "text": "deep", "cache_control": cc}]},
            ]},
            {"type": "search_result", "source": "s", "title": "t", "cache_control": cc,
             "content": [{"type": "text", "text": "b", "cache_control": cc}]},
            {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "deploy",
                                     "cache_control": cc}]}},
        ]))
        .expect("parses");
        let before = serde_json::to_value(&blocks).expect("serializes");
        assert!(has_marker_key(&before));
        blocks
            .iter_mut()
            .for_each(ContentBlock::clear_cache_control);
        let after = serde_json::to_value(&blocks).expect("serializes");
        assert!(!has_marker_key(&after), "{after}");
        assert_eq!(after[0]["content"][2]["content"][0]["text"], "deep");
    }

    #[test]
    fn tools_read_back_and_clear_their_marker() {
        let tools: Vec<ToolDefinition> = serde_json::from_value(json!([
            {"name": "n", "input_schema": {"type": "object"}},
            {"type": "bash_20250124", "name": "bash"},
        ]))
        .expect("parses");
        for tool in tools {
            let mut marked = tool.clone().with_cache_control(marker());
            assert_eq!(marked.cache_control(), Some(&marker()));
            let mut in_place = tool.clone();
            in_place.set_cache_control(marker());
            assert_eq!(in_place, marked);
            marked.clear_cache_control();
            assert_eq!(marked, tool);
        }
    }

    /// Puts a marker on every block (nested ones too) whose bit is set, and on raw slots.
    fn sprinkle(blocks: &mut [ContentBlock], bits: &mut impl Iterator<Item = bool>) {
        for block in blocks {
            match block {
                ContentBlock::SearchResult(b) => sprinkle(&mut b.content, bits),
                ContentBlock::ToolResult(b) => {
                    if let Some(Content::Blocks(inner)) = &mut b.content {
                        sprinkle(inner, bits);
                    }
                }
                ContentBlock::Thinking(b) => {
                    b.extra
                        .insert("cache_control".into(), json!({"type": "ephemeral"}));
                }
                ContentBlock::Unknown(Value::Object(map)) => {
                    map.insert("cache_control".into(), json!({"type": "ephemeral"}));
                }
                _ => {}
            }
            if bits.next().unwrap_or(true)
                && let Some(slot) = block.cache_control_mut()
            {
                *slot = Some(Box::new(marker()));
            }
        }
    }

    proptest! {
        #[test]
        fn a_cleared_request_serializes_without_any_marker(
            request in threadline_testkit::strategies::messages_request(),
            bits in prop::collection::vec(any::<bool>(), 0..32),
        ) {
            let Ok(mut request) = serde_json::from_value::<MessagesRequest>(request) else {
                return Ok(());
            };
            let mut bits = bits.into_iter().cycle();
            for tool in request.tools.iter_mut().flatten() {
                if bits.next().unwrap_or(true) {
                    *tool.cache_control_mut() = Some(Box::new(marker()));
                }
            }
            if let Some(SystemPrompt::Blocks(system)) = &mut request.system {
                for block in system {
                    block.cache_control = Some(Box::new(marker()));
                }
            }
            for message in &mut request.messages {
                if let Content::Blocks(blocks) = &mut message.content {
                    blocks.push(serde_json::from_value(json!({
                        "type": "tool_result", "tool_use_id": "toolu_1", "content": [
                            {"type": "search_result", "source": "s", "title": "t",
                             "content": [{"type": "text", "text": "x"}]}]}))
                        .expect("parses"));
                    sprinkle(blocks, &mut bits);
                }
            }
            request.cache_control = Some(Box::new(marker()));
            let mut count_tokens = CountTokensRequest::from(&request);
            for message in &request.messages {
                let mut cleared = message.clone();
                cleared.clear_cache_control();
                prop_assert_eq!(message.has_cache_control(), cleared != *message);
                if let Content::Blocks(blocks) = &message.content {
                    for block in blocks {
                        let mut cleared = block.clone();
                        cleared.clear_cache_control();
                        prop_assert_eq!(block.has_cache_control(), cleared != *block, "{:?}", block);
                        // A block a marker may go on has a slot for it (the simulator's
                        // `markable` is `is_cache_eligible`).
                        if block.is_cache_eligible() {
                            prop_assert!(cleared.cache_control_mut().is_some(), "{:?}", block);
                        }
                    }
                }
            }

            request.clear_cache_control();
            let json = serde_json::to_value(&request).expect("serializes");
            prop_assert!(!has_marker_key(&json), "{}", json);

            count_tokens.clear_cache_control();
            let json = serde_json::to_value(&count_tokens).expect("serializes");
            prop_assert!(!has_marker_key(&json), "{}", json);
        }
    }
}
