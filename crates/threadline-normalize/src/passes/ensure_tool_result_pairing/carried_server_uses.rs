//! Server tool calls carried across a client tool round.
//!
//! When the model calls a server tool (tool search) and a client tool in one response, the
//! response ends `stop_reason: "tool_use"` with the `server_tool_use` unanswered. The client
//! answers with a user message of only `tool_result`s, and the *next* response begins with the
//! pending server result (api-2026-additions.md §2, recorded in vercel/ai's
//! `anthropic-tool-search-deferred-regex` streams 1–2). Such a call is not an orphan: the API
//! accepts it, and dropping it (or its result) makes the tools it found undefined again.

use std::collections::HashSet;

use threadline_wire::ContentBlock;

use crate::draft::{Draft, server_result_id};

/// The ids of the server tool uses that stay although their result is not in their own
/// message: the message also calls client tools, the next message is a user message of only
/// `tool_result`s, and the one after it is an assistant message that begins with the result,
/// or — with `resume` ([`Options::resume_paused_turn`](crate::Options): every request
/// defines the same tools, so the server tool is still there) — absent: the API answers in
/// the coming response.
pub(super) fn carried_server_uses(drafts: &[Draft<'_>], resume: bool) -> HashSet<String> {
    let mut carried = HashSet::new();
    for (n, draft) in drafts.iter().enumerate() {
        if !draft.is_assistant()
            || !draft
                .blocks
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolUse(_)))
        {
            continue;
        }
        let Some(answer) = drafts.get(n + 1) else {
            continue;
        };
        let only_results = !answer.is_assistant()
            && !answer.blocks.is_empty()
            && answer
                .blocks
                .iter()
                .all(|b| matches!(b, ContentBlock::ToolResult(_)));
        if !only_results {
            continue;
        }
        let next = drafts.get(n + 2);
        for (k, block) in draft.blocks.iter().enumerate() {
            let ContentBlock::ServerToolUse(server_use) = block else {
                continue;
            };
            let id = server_use.id.as_str();
            let answered_here = draft.blocks[k + 1..]
                .iter()
                .any(|b| server_result_id(b) == Some(id));
            if answered_here {
                continue;
            }
            let answered_next = match next {
                None => resume,
                Some(following) if following.is_assistant() => following
                    .blocks
                    .iter()
                    .take_while(|b| server_result_id(b).is_some())
                    .any(|b| server_result_id(b) == Some(id)),
                Some(_) => false,
            };
            if answered_next {
                carried.insert(id.to_owned());
            }
        }
    }
    carried
}
