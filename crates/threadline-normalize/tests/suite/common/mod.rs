//! Checks shared by the normalizer's integration tests: the normalizer's properties (ARCHITECTURE.md, `threadline-normalize`), each as a
//! function returning the first problem found, so that a failing case says what broke.

#![allow(dead_code, reason = "each test crate uses a subset of the checks")]

use std::collections::HashSet;

use threadline_message::Message;
use threadline_validate::validate;
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{Content, ContentBlock, MessageParam, MessagesRequest, Role};

/// The model the properties validate against: it accepts prefill, so a request may end with
/// an assistant message.
pub(crate) const MODEL: &str = "claude-sonnet-4-5";

/// The model table's row for `id`, or [`MODEL`]'s when the table does not know `id`.
pub(crate) fn model(id: &str) -> &'static Model {
    let table = ModelTable::builtin();
    table
        .get(id)
        .unwrap_or_else(|| table.resolve(MODEL).model())
}

/// (a) The request made of `messages` for `model_id` passes `validate` with no violation.
pub(crate) fn check_valid(messages: &[MessageParam], model_id: &str) -> Result<(), String> {
    check_valid_with_tools(messages, model_id, None)
}

/// [`check_valid`] for a request that defines `tools`.
pub(crate) fn check_valid_with_tools(
    messages: &[MessageParam],
    model_id: &str,
    tools: Option<Vec<threadline_wire::ToolDefinition>>,
) -> Result<(), String> {
    let mut request = MessagesRequest::new(model_id, 4096, messages.to_vec());
    request.tools = tools;
    let violations = validate(&request, model(model_id));
    if violations.is_empty() {
        Ok(())
    } else {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        Err(format!(
            "{} violation(s):\n  {}",
            list.len(),
            list.join("\n  ")
        ))
    }
}

/// The blocks of a request message (string content as one text block).
pub(crate) fn blocks(message: &MessageParam) -> Vec<ContentBlock> {
    match &message.content {
        Content::Text(text) => vec![ContentBlock::text(text.clone())],
        Content::Blocks(blocks) => blocks.clone(),
    }
}

/// The typed user texts of `input`, the subject of property (c), in order.
///
/// A typed user text is the text of a `text` block of a user message that
///  * is not `is_meta` (injected context) and not `is_virtual` (never sent);
///  * is the first occurrence of its message id (a message re-appearing with the same id — a
///    resumed session replaying history — is the same text, not new text);
///  * is not retracted by a tombstone anywhere in the array (the normalizer drops retracted
///    messages: a tombstone retracts an earlier message);
///  * holds something other than whitespace (blank text is removed: the API rejects it).
///
/// Each is returned trimmed of surrounding whitespace: joining text seams may trim.
pub(crate) fn typed_user_texts(input: &[Message]) -> Vec<&str> {
    let retracted: HashSet<&str> = input
        .iter()
        .filter_map(|m| match m {
            Message::Tombstone(t) => Some(t.retracts.as_str()),
            _ => None,
        })
        .collect();
    let mut seen = HashSet::new();
    let mut texts = Vec::new();
    for message in input {
        let Message::User(user) = message else {
            continue;
        };
        if !seen.insert(user.header.id.as_str())
            || user.is_meta
            || user.is_virtual
            || retracted.contains(user.header.id.as_str())
        {
            continue;
        }
        for block in &user.content {
            if let ContentBlock::Text(t) = block
                && !t.text.trim().is_empty()
            {
                texts.push(t.text.trim());
            }
        }
    }
    texts
}

/// Every text of the output's user messages (top-level `text` blocks and string contents),
/// in order, joined by `\n`.
pub(crate) fn output_user_text(messages: &[MessageParam]) -> String {
    let mut all = String::new();
    for message in messages.iter().filter(|m| m.role == Role::User) {
        for block in blocks(message) {
            if let ContentBlock::Text(t) = block {
                all.push_str(&t.text);
                all.push('\n');
            }
        }
    }
    all
}

/// (c) Every typed user text of `input` ([`typed_user_texts`]) appears in the output, in
/// order: each is a substring of [`output_user_text`] starting at or after the end of the
/// previous one's match. (Greedy leftmost matching finds such an embedding whenever one
/// exists, since all matches of one text have the same length.)
pub(crate) fn check_texts_kept(input: &[Message], messages: &[MessageParam]) -> Result<(), String> {
    let all = output_user_text(messages);
    let mut from = 0;
    for text in typed_user_texts(input) {
        match all[from..].find(text) {
            Some(at) => from += at + text.len(),
            None => {
                return Err(format!(
                    "typed user text {text:?} is missing from the output's user text after byte \
                     {from} (output user text: {all:?})"
                ));
            }
        }
    }
    Ok(())
}

/// (d) Every `tool_use` of the output has exactly one `tool_result`, in the immediately
/// following message (a user message), and the results come first in it; every
/// `tool_result` answers a `tool_use` of the immediately preceding message; no `tool_use` id
/// appears twice in the request.
pub(crate) fn check_pairing(messages: &[MessageParam]) -> Result<(), String> {
    let mut all_uses = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        let uses: Vec<String> = blocks(message)
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse(u) if message.role == Role::Assistant => Some(u.id.clone()),
                _ => None,
            })
            .collect();
        for id in &uses {
            if !all_uses.insert(id.clone()) {
                return Err(format!("messages.{i}: tool_use id {id} appears twice"));
            }
        }
        let next = messages.get(i + 1);
        let next_blocks = next.map(blocks).unwrap_or_default();
        let results: Vec<&str> = next_blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let leading = next_blocks
            .iter()
            .take_while(|b| matches!(b, ContentBlock::ToolResult(_)))
            .count();
        if message.role == Role::Assistant {
            if !uses.is_empty() && next.is_none_or(|n| n.role != Role::User) {
                return Err(format!(
                    "messages.{i}: tool uses {uses:?} and no user message after"
                ));
            }
            for id in &uses {
                let count = results.iter().filter(|r| **r == id.as_str()).count();
                if count != 1 {
                    return Err(format!(
                        "messages.{i}: tool_use {id} has {count} results in messages.{}",
                        i + 1
                    ));
                }
            }
            if leading != results.len() || results.len() != uses.len() {
                return Err(format!(
                    "messages.{}: the results of messages.{i} are not all first, or other results are mixed in ({results:?}, {leading} leading)",
                    i + 1
                ));
            }
        } else if message.role == Role::User {
            // Results in the next message when this one is a user message: orphans.
            if next.is_some_and(|n| n.role == Role::User) && !results.is_empty() {
                return Err(format!(
                    "messages.{}: tool results after a user message",
                    i + 1
                ));
            }
        }
    }
    if let Some(first) = messages.first()
        && blocks(first)
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult(_)))
    {
        return Err("messages.0: tool results with no assistant message before".to_owned());
    }
    for (i, message) in messages.iter().enumerate() {
        if message.role == Role::Assistant
            && blocks(message)
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult(_)))
        {
            return Err(format!("messages.{i}: tool_result in an assistant message"));
        }
    }
    Ok(())
}
