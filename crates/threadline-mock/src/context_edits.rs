//! `context_management.applied_edits` in the mock's answers: what it applied of a request's
//! `clear_thinking_20251015` and `clear_tool_uses_20250919` edits, with the API's cleared
//! counts. A request with `context_management` always gets the field (`[]` when nothing was
//! applied: a compaction is not reported there, as the recordings show).
//!
//! The mock reports; it does not shrink the usage it bills (the usage model sees the request
//! as sent).
//!
//! - `clear_thinking_20251015`: keeps the thinking of the last `keep.value` assistant turns
//!   (default 1; `"all"` keeps everything) and clears the rest: `cleared_thinking_turns`,
//!   `cleared_input_tokens`.
//! - `clear_tool_uses_20250919`: once the input reaches `trigger` (`input_tokens`, default
//!   100,000), clears every tool result but the last `keep.value` (default 3), leaving the
//!   `exclude_tools`' results; applied only if it clears at least `clear_at_least` tokens:
//!   `cleared_tool_uses`, `cleared_input_tokens`.

use std::collections::{BTreeSet, HashMap};
use threadline_wire::json_size::serialized_len;

use serde_json::{Value, json};
use threadline_wire::request::{ClearThinkingEdit, ClearToolUsesEdit, ContextEdit};
use threadline_wire::{Content, ContentBlock, MessageParam, MessagesRequest, Role};

use crate::usage::estimate_tokens;

fn value_of(v: Option<&Value>) -> Option<u64> {
    v.and_then(|v| v.get("value")).and_then(Value::as_u64)
}

fn blocks(content: &Content) -> &[ContentBlock] {
    match content {
        Content::Blocks(blocks) => blocks,
        Content::Text(_) => &[],
    }
}

/// What `clear_thinking_20251015` clears: (turns, tokens).
fn clear_thinking(
    edit: &ClearThinkingEdit,
    messages: &[std::sync::Arc<MessageParam>],
) -> (u64, u64) {
    if edit.keep.as_ref().and_then(Value::as_str) == Some("all") {
        return (0, 0);
    }
    let keep = value_of(edit.keep.as_ref()).unwrap_or(1) as usize;
    let turns: Vec<u64> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| {
            blocks(&m.content)
                .iter()
                .filter(|b| b.is_thinking())
                .map(|b| estimate_tokens(serialized_len(b)))
                .sum::<u64>()
        })
        .filter(|&tokens| tokens > 0)
        .collect();
    let cleared = &turns[..turns.len().saturating_sub(keep)];
    (cleared.len() as u64, cleared.iter().sum())
}

/// What `clear_tool_uses_20250919` clears: (tool uses, tokens), or `None` below its trigger
/// or its `clear_at_least`.
fn clear_tool_uses(
    edit: &ClearToolUsesEdit,
    messages: &[std::sync::Arc<MessageParam>],
    input: u64,
) -> Option<(u64, u64)> {
    if input < value_of(edit.trigger.as_ref()).unwrap_or(100_000) {
        return None;
    }
    let keep = value_of(edit.keep.as_ref()).unwrap_or(3) as usize;
    let excluded: BTreeSet<&str> = edit
        .exclude_tools
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut results: Vec<u64> = Vec::new();
    for message in messages {
        for block in blocks(&message.content) {
            match block {
                ContentBlock::ToolUse(t) => {
                    names.insert(t.id.as_str(), t.name.as_str());
                }
                ContentBlock::ToolResult(r) => {
                    let name = names.get(r.tool_use_id.as_str()).copied().unwrap_or("");
                    if !excluded.contains(name) {
                        results.push(estimate_tokens(serialized_len(&r.content)));
                    }
                }
                _ => {}
            }
        }
    }
    let cleared = &results[..results.len().saturating_sub(keep)];
    let tokens: u64 = cleared.iter().sum();
    let at_least = value_of(edit.clear_at_least.as_ref()).unwrap_or(0);
    (!cleared.is_empty() && tokens >= at_least).then_some((cleared.len() as u64, tokens))
}

/// The `context_management` of the answer to `request` (whose input the mock counted as
/// `input` tokens): `None` when the request has none.
pub(crate) fn applied(request: &MessagesRequest, input: u64) -> Option<Value> {
    let management = request.context_management.as_ref()?;
    let mut applied = Vec::new();
    for edit in &management.edits {
        match edit {
            ContextEdit::ClearThinking(edit) => {
                let (turns, tokens) = clear_thinking(edit, &request.messages.to_shared_vec());
                if turns > 0 {
                    applied.push(json!({"type": "clear_thinking_20251015",
                        "cleared_thinking_turns": turns, "cleared_input_tokens": tokens}));
                }
            }
            ContextEdit::ClearToolUses(edit) => {
                if let Some((uses, tokens)) =
                    clear_tool_uses(edit, &request.messages.to_shared_vec(), input)
                {
                    applied.push(json!({"type": "clear_tool_uses_20250919",
                        "cleared_tool_uses": uses, "cleared_input_tokens": tokens}));
                }
            }
            _ => {}
        }
    }
    Some(json!({"applied_edits": applied}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleared_counts_follow_keep_trigger_and_exclusions() {
        let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "r".repeat(4000)});
        let use_ =
            |id: &str, name: &str| json!({"type": "tool_use", "id": id, "name": name, "input": {}});
        let thinking = json!({"type": "thinking", "thinking": "t".repeat(400), "signature": "s"});
        let request: MessagesRequest = serde_json::from_value(json!({
            "model": "claude-sonnet-4-6", "max_tokens": 1024,
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [thinking, use_("a", "read"), use_("b", "keep_me")]},
                {"role": "user", "content": [result("a"), result("b")]},
                {"role": "assistant", "content": [thinking, use_("c", "read")]},
                {"role": "user", "content": [result("c")]},
                {"role": "assistant", "content": [thinking, use_("d", "read")]},
                {"role": "user", "content": [result("d")]}
            ],
            "context_management": {"edits": [
                {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}},
                {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 1000},
                 "keep": {"type": "tool_uses", "value": 1}, "exclude_tools": ["keep_me"]},
                {"type": "compact_20260112"}
            ]}
        }))
        .expect("a request");
        let applied = applied(&request, 5_000).expect("reported");
        let edits = applied["applied_edits"].as_array().expect("a list");
        assert_eq!(edits.len(), 2);
        assert_eq!(edits[0]["type"], "clear_thinking_20251015");
        assert_eq!(edits[0]["cleared_thinking_turns"], 2);
        assert_eq!(edits[1]["type"], "clear_tool_uses_20250919");
        // a and c cleared; b excluded; d kept.
        assert_eq!(edits[1]["cleared_tool_uses"], 2);
        assert_eq!(edits[1]["cleared_input_tokens"], 2 * 1001);
        // Under the trigger: only the thinking is cleared.
        let under = super::applied(&request, 999).expect("reported");
        assert_eq!(under["applied_edits"].as_array().map(Vec::len), Some(1));
        let mut bare = request.clone();
        bare.context_management = None;
        assert_eq!(super::applied(&bare, 5_000), None);
    }
}
