//! Server tool calls carried across a client tool round.
//!
//! When the model calls a server tool (tool search) and a client tool in one response, the
//! response ends `stop_reason: "tool_use"` with the `server_tool_use` unanswered. The client
//! answers with a user message of only `tool_result`s, and the *next* response begins with the
//! pending server result (docs/api-notes.md#tool-search, recorded in vercel/ai's
//! `anthropic-tool-search-deferred-regex` streams 1–2). Such a call is not an orphan: the API
//! accepts it, and dropping it (or its result) makes the tools it found undefined again.

use std::collections::HashSet;

use threadline_wire::ContentBlock;

use crate::draft::{Draft, server_result_id};

/// The ids of the server tool uses that stay although their result is not in their own
/// message: the message also calls client tools that stay (not `duplicates`, the
/// `(message, block)` positions the pass removes) and the next message is a user message of
/// only `tool_result`s that answers one of them, and the one after it is an assistant message
/// that begins with the result, or — with `resume`
/// ([`Options::resume_paused_turn`](crate::Options): every request defines the same tools,
/// so the server tool is still there) — absent: the API answers in the coming response.
pub(super) fn carried_server_uses(
    drafts: &[Draft<'_>],
    duplicates: &[(usize, usize)],
    resume: bool,
) -> HashSet<String> {
    let duplicates: HashSet<(usize, usize)> = duplicates.iter().copied().collect();
    let mut carried = HashSet::new();
    for (n, draft) in drafts.iter().enumerate() {
        if !draft.is_assistant() {
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
        // A client call that stays and is answered there: without one, the answer is dropped
        // or emptied and the server call would be left pending before a plain user turn.
        let answered_client_call = draft.blocks.iter().enumerate().any(|(k, b)| {
            let ContentBlock::ToolUse(call) = b else {
                return false;
            };
            !duplicates.contains(&(n, k))
                && answer.blocks.iter().any(
                    |r| matches!(r, ContentBlock::ToolResult(result) if result.tool_use_id == call.id),
                )
        });
        if !answered_client_call {
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
