//! Where an array may be cut: between units that must stay together.
//!
//! A tool use and its result must stay together (a lone half is a 400, or a repair that
//! invents a result), and so must the fragments of one streamed response (they share an API
//! message id and are merged into one message by normalization). Every layer that removes or
//! keeps a range of messages — snip, the verbatim tail of autocompact — cuts only at the
//! points this module calls safe.

use std::collections::HashMap;

/// Maps from borrowed ids with a fast hasher: ids are short and looked up once per block, so
/// SipHash's setup would dominate; randomly seeded, so crafted ids cannot force collisions
/// (nothing iterates these maps to produce output).
pub(crate) type IdMap<'a, V> = HashMap<&'a str, V, foldhash::fast::RandomState>;

use threadline_message::{Message, SystemKind};
use threadline_wire::ContentBlock;

/// The messages after the last compaction boundary (all of them when there is none): what
/// the model sees of the session.
pub fn since_last_boundary(history: &[Message]) -> &[Message] {
    let start = history
        .iter()
        .rposition(is_compact_boundary)
        .map_or(0, |boundary| boundary + 1);
    &history[start..]
}

/// Whether `message` is a `compact_boundary` system message.
pub fn is_compact_boundary(message: &Message) -> bool {
    matches!(message, Message::System(s) if matches!(s.kind, SystemKind::CompactBoundary { .. }))
}

/// For each cut point `i` in `0..=messages.len()` (the point before message `i`), whether
/// cutting there separates no tool use from its result and no fragments of one response.
///
/// Every message naming a tool use id (the use, its result — server tools' too — and any
/// duplicate or misplaced copy a damaged or resumed session holds) is tied from the first
/// to the last; so are the fragments sharing an API message id, and assistant messages with
/// no sent user message between them (only messages the request leaves out, or
/// attachments): the request merges them into one assistant turn, so a cut between them
/// would change that turn. The ends are always safe.
/// O(N) in messages and blocks.
pub fn safe_cut_points(messages: &[Message]) -> Vec<bool> {
    let n = messages.len();
    // depth[i] > 0: some tie spans the cut before message i.
    let mut diff = vec![0i64; n + 2];
    let mut tie = |from: usize, to: usize| {
        if from < to {
            diff[from + 1] += 1;
            diff[to + 1] -= 1;
        }
    };
    let mut first_seen: IdMap<'_, usize> = IdMap::default();
    let mut first_fragment: IdMap<'_, usize> = IdMap::default();
    // The last assistant message with no sent user message after it yet: the request merges
    // it with the next assistant message into one turn, whatever their ids.
    let mut open_assistant: Option<usize> = None;
    for (i, message) in messages.iter().enumerate() {
        let blocks: &[ContentBlock] = match message {
            Message::Assistant(a) => {
                if let Some(id) = a.api_message_id.as_deref() {
                    let first = *first_fragment.entry(id).or_insert(i);
                    tie(first, i);
                }
                if let Some(previous) = open_assistant {
                    tie(previous, i);
                }
                open_assistant = Some(i);
                &a.content
            }
            Message::User(u) => {
                if !u.is_virtual {
                    open_assistant = None;
                }
                &u.content
            }
            _ => &[],
        };
        for block in blocks {
            let id = match block {
                ContentBlock::ToolUse(u) => Some(u.id.as_str()),
                ContentBlock::ServerToolUse(u) | ContentBlock::McpToolUse(u) => Some(u.id.as_str()),
                ContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
                other => other.server_tool_result().map(|r| r.tool_use_id.as_str()),
            };
            if let Some(id) = id {
                let first = *first_seen.entry(id).or_insert(i);
                tie(first, i);
            }
        }
    }
    let mut safe = Vec::with_capacity(n + 1);
    let mut depth = 0i64;
    for d in diff.iter().take(n + 1) {
        depth += d;
        safe.push(depth == 0);
    }
    if let Some(first) = safe.first_mut() {
        *first = true;
    }
    if let Some(last) = safe.last_mut() {
        *last = true;
    }
    safe
}

/// Whether `message` is a prompt the user typed: a user message that is not injected
/// context, not UI-only, not a compaction summary, holds non-blank text and no tool result.
pub fn is_typed_prompt(message: &Message) -> bool {
    match message {
        Message::User(u) => {
            !u.is_meta
                && !u.is_virtual
                && !u.is_compact_summary
                && !u
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult(_)))
                && u.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Text(t) if !t.text.trim().is_empty()))
        }
        _ => false,
    }
}

/// The index of the latest typed prompt (see [`is_typed_prompt`]).
pub fn latest_prompt(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(is_typed_prompt)
}

/// The latest typed prompt and what came with it: the meta user messages (an expanded
/// command, injected context) and attachments (its mentions) right after it. This is the
/// task, and every layer keeps it verbatim.
pub fn latest_prompt_group(messages: &[Message]) -> Option<std::ops::Range<usize>> {
    let start = latest_prompt(messages)?;
    let extra = messages[start + 1..]
        .iter()
        .take_while(|m| match m {
            Message::User(u) => {
                u.is_meta
                    && !u
                        .content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::ToolResult(_)))
            }
            Message::Attachment(_) => true,
            _ => false,
        })
        .count();
    Some(start..start + 1 + extra)
}

/// Whether `message` holds text the model reads as conversation (a user or assistant text
/// block that is not blank).
pub(crate) fn has_text(message: &Message) -> bool {
    let blocks = match message {
        Message::User(u) if !u.is_virtual => &u.content,
        Message::Assistant(a) if !a.is_api_error => &a.content,
        _ => return false,
    };
    blocks
        .iter()
        .any(|b| matches!(b, ContentBlock::Text(t) if !t.text.trim().is_empty()))
}

/// The tool name of every client tool use, by id (the first use of an id wins).
pub(crate) fn tool_names(messages: &[Message]) -> IdMap<'_, &str> {
    let mut names = IdMap::default();
    for message in messages {
        if let Message::Assistant(a) = message {
            for block in &a.content {
                if let ContentBlock::ToolUse(u) = block {
                    names.entry(u.id.as_str()).or_insert(u.name.as_str());
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_message::tool_result_block;
    use threadline_testkit::messages::{SessionBuilder, text, tool_use};

    #[test]
    fn a_tool_pair_and_a_fragment_group_are_never_cut() {
        let mut b = SessionBuilder::new();
        b.user("read it"); // 0
        let msg = b.response_id();
        b.assistant(&msg, vec![text("Reading.")]); // 1
        b.assistant(&msg, vec![tool_use("toolu_1", "Read", json!({}))]); // 2
        b.tool_results(vec![tool_result_block("toolu_1", "x".into(), false)]); // 3
        let msg2 = b.response_id();
        b.assistant(&msg2, vec![text("Done.")]); // 4
        let safe = safe_cut_points(b.messages());
        assert_eq!(safe, vec![true, true, false, false, true, true]);
    }

    #[test]
    fn assistant_messages_the_request_merges_are_never_cut_apart() {
        let mut b = SessionBuilder::new();
        b.user("think"); // 0
        let cut_off = b.response_id();
        let thinking = b.thinking("let me think");
        b.assistant(&cut_off, vec![thinking]); // 1: a response cut after its thinking
        b.system(SystemKind::Informational {
            level: threadline_message::Level::Info,
            content: "retrying".into(),
        }); // 2: not sent
        let answer = b.response_id();
        b.assistant(&answer, vec![text("Done.")]); // 3: merged with 1 into one turn
        b.user("thanks"); // 4
        let safe = safe_cut_points(b.messages());
        assert_eq!(safe, vec![true, true, false, false, true, true]);
    }

    #[test]
    fn the_latest_prompt_skips_results_and_injected_context() {
        let mut b = SessionBuilder::new();
        b.user("first");
        b.user("second");
        b.meta("<system-reminder>x</system-reminder>");
        b.tool_results(vec![tool_result_block("toolu_1", "x".into(), false)]);
        assert_eq!(latest_prompt(b.messages()), Some(1));
    }
}
