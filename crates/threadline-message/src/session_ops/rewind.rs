//! Rewinding a session by typed prompts.

use std::collections::HashMap;

use threadline_wire::{Content, ContentBlock};

use crate::header::Header;
use crate::message::{MISSING_TOOL_RESULT, Message, tool_result_block};
use crate::session_ops::error::SessionOpError;
use crate::session_ops::ids::derive_id;

/// A rewound session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Rewound {
    /// The kept messages, as they were, then (when some tool use was left without a result)
    /// one user message with an error result for each such tool use.
    pub messages: Vec<Message>,
    /// How many messages of the source were kept (a prefix of it).
    pub kept: usize,
    /// The tool uses that were given an error result, in order.
    pub answered: Vec<String>,
}

/// Whether `message` is a prompt the user typed: a user message that is not meta, not
/// virtual, not a compact summary, holds some text and no tool result.
pub fn is_typed_prompt(message: &Message) -> bool {
    let Message::User(user) = message else {
        return false;
    };
    !user.is_meta
        && !user.is_virtual
        && !user.is_compact_summary
        && user
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Text(_)))
        && !user
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult(_)))
}

/// `messages` without the last `turns` typed prompts (see [`is_typed_prompt`]) and everything
/// that followed each: the session as it was before the `turns`-th last prompt was typed.
///
/// The kept messages are a prefix of `messages`, unchanged. A tool use left without a result
/// after the cut (a prompt typed while a tool ran, a stream cut after a tool use) is answered
/// with an error result ([`MISSING_TOOL_RESULT`]): the results go in one user message at the
/// end, with an id derived from the last kept message and the tool-use ids, and the last kept
/// message's timestamp. So no `tool_use` is left without its `tool_result`, and the session
/// normalizes to a request the API accepts. `turns == 0` keeps every message (and answers
/// what is unanswered).
///
/// The error is [`SessionOpError::NotEnoughTurns`] when the session has fewer typed prompts.
pub fn rewind(messages: &[Message], turns: usize) -> Result<Rewound, SessionOpError> {
    let prompts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| is_typed_prompt(m))
        .map(|(n, _)| n)
        .collect();
    let cut = match prompts.len().checked_sub(turns) {
        None => {
            return Err(SessionOpError::NotEnoughTurns {
                asked: turns,
                found: prompts.len(),
            });
        }
        Some(first_dropped) => prompts
            .get(first_dropped)
            .copied()
            .unwrap_or(messages.len()),
    };
    let mut kept = messages[..cut].to_vec();
    let answered = unanswered_tool_uses(&kept);
    if let Some(last) = kept.last()
        && !answered.is_empty()
    {
        let mut parts = vec!["rewind", last.id().as_str()];
        parts.extend(answered.iter().map(String::as_str));
        let header = Header {
            id: derive_id(&parts),
            timestamp: last.header().timestamp.clone(),
        };
        let blocks = answered
            .iter()
            .map(|id| tool_result_block(id, Content::Text(MISSING_TOOL_RESULT.to_owned()), true))
            .collect();
        kept.push(Message::user_blocks(blocks).with_header(header));
    }
    Ok(Rewound {
        messages: kept,
        kept: cut,
        answered,
    })
}

/// The ids of the client tool uses of `messages` that no later (non-virtual) user message
/// answers, in the order of their first use (a use answered and then made again counts from
/// its new use). Each use and each result is one map look-up, so an assistant message with
/// many tool uses costs time linear in them.
fn unanswered_tool_uses(messages: &[Message]) -> Vec<String> {
    // One slot per use, in order, emptied when the use is answered; and the slot of each use
    // still pending.
    let mut uses: Vec<Option<&str>> = Vec::new();
    let mut pending: HashMap<&str, usize> = HashMap::new();
    for message in messages {
        match message {
            Message::Assistant(assistant) => {
                for block in &assistant.content {
                    if let ContentBlock::ToolUse(tool_use) = block {
                        pending.entry(tool_use.id.as_str()).or_insert_with(|| {
                            uses.push(Some(tool_use.id.as_str()));
                            uses.len() - 1
                        });
                    }
                }
            }
            Message::User(user) if !user.is_virtual => {
                for block in &user.content {
                    if let ContentBlock::ToolResult(result) = block
                        && let Some(slot) = pending.remove(result.tool_use_id.as_str())
                    {
                        uses[slot] = None;
                    }
                }
            }
            _ => {}
        }
    }
    uses.into_iter().flatten().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::content::ToolUseBlock;

    fn at(n: u32) -> Header {
        Header::with(format!("m{n}"), format!("2026-01-01T00:00:{n:02}Z"))
    }

    fn tool_use(id: &str) -> ContentBlock {
        ContentBlock::ToolUse(ToolUseBlock::new(id, "Read", serde_json::json!({})))
    }

    #[test]
    fn a_prompt_typed_during_a_tool_call_leaves_an_answered_tool_use() {
        let session = vec![
            Message::user_text("read it").with_header(at(1)),
            Message::assistant(vec![tool_use("toolu_1")]).with_header(at(2)),
            Message::user_text("stop, do something else").with_header(at(3)),
            Message::tool_result("toolu_1", Content::Text("late".into()), false).with_header(at(4)),
        ];
        let rewound = rewind(&session, 1).expect("two prompts");
        assert_eq!(rewound.kept, 2);
        assert_eq!(rewound.answered, vec!["toolu_1".to_owned()]);
        assert_eq!(&rewound.messages[..2], &session[..2]);
        let Message::User(results) = &rewound.messages[2] else {
            panic!("the results message")
        };
        assert!(
            matches!(&results.content[0], ContentBlock::ToolResult(r) if r.tool_use_id == "toolu_1" && r.is_error == Some(true))
        );
        assert_eq!(results.header.timestamp, session[1].header().timestamp);
        // Deterministic.
        assert_eq!(rewind(&session, 1).expect("again"), rewound);
    }

    #[test]
    fn only_typed_prompts_count() {
        let session = vec![
            Message::meta_user_text("<system-reminder>ctx</system-reminder>").with_header(at(1)),
            Message::user_text("one").with_header(at(2)),
            Message::compact_summary("summary").with_header(at(3)),
            Message::tool_result("toolu_9", Content::Text("x".into()), false).with_header(at(4)),
            Message::user_text("two").with_header(at(5)),
        ];
        assert_eq!(rewind(&session, 1).expect("ok").kept, 4);
        assert_eq!(rewind(&session, 2).expect("ok").kept, 1);
        assert_eq!(rewind(&session, 0).expect("ok").kept, 5);
        let error = rewind(&session, 3).expect_err("only two");
        assert!(error.is_not_enough_turns());
        assert_eq!(
            error.to_string(),
            "cannot rewind 3 turns: the session has 2 typed prompts"
        );
        assert!(rewind(&[], 0).expect("empty").messages.is_empty());
    }

    // Hostile sessions, at sizes where a quadratic rewind takes far longer than a linear one.

    /// One assistant message with many tool uses, half of them answered: each use and each
    /// result is one look-up (a pass over the pending uses for each would be about 5·10⁹
    /// string comparisons at this size). Unanswered uses keep their order, and a use answered
    /// then made again counts from its new use.
    #[test]
    fn many_parallel_tool_uses_are_answered_in_linear_time() {
        const USES: usize = 80_000;
        let id = |n: usize| format!("toolu_{n}");
        let session = vec![
            Message::user_text("do it all").with_header(at(1)),
            Message::assistant((0..USES).map(|n| tool_use(&id(n))).collect()).with_header(at(2)),
            Message::user_blocks(
                (0..USES)
                    .rev()
                    .filter(|n| n % 2 == 0)
                    .map(|n| tool_result_block(id(n), Content::Text("ok".into()), false))
                    .collect(),
            )
            .with_header(at(3)),
            Message::assistant(vec![tool_use(&id(0)), tool_use(&id(1))]).with_header(at(4)),
        ];
        let rewound = rewind(&session, 0).expect("no turns dropped");
        let mut expected: Vec<String> = (0..USES).filter(|n| n % 2 == 1).map(id).collect();
        expected.push(id(0));
        assert_eq!(rewound.answered, expected);
        assert_eq!(rewound.messages.len(), session.len() + 1);
    }
}
