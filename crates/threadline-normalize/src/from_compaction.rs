//! Sending only what follows the last server-side `compaction` block
//! ([`Options::from_last_compaction`](crate::Options::from_last_compaction)).
//!
//! The API ignores every content block before the last `compaction` block of a request; a
//! client may send the full history or drop what precedes the block. Dropping keeps the
//! requests small. The request then starts with the assistant message whose first block is
//! that `compaction` block, kept as it came (its `content`, `null` included, and its
//! `encrypted_content`).
//!
//! Two steps: the input is cut at the last assistant message holding a `compaction` block
//! that no tombstone retracts ([`last_compaction_start`]), and after fragments and
//! consecutive messages are merged, the first message loses the blocks before its last
//! `compaction` block (`trim_before_compaction`). The messages before the cut never reach
//! a pass, so nothing they hold (a tool use whose result came after, say) can leak into the
//! request: the pairing pass settles what the cut leaves.

use std::collections::HashSet;

use threadline_message::Message;
use threadline_wire::ContentBlock;

use crate::draft::Draft;

/// Whether `message` is an assistant message with a `compaction` block.
fn has_compaction(message: &Message) -> bool {
    matches!(message, Message::Assistant(a)
        if a.content.iter().any(|b| matches!(b, ContentBlock::Compaction(_))))
}

/// The index of the last assistant message of `messages` holding a `compaction` block that no
/// later tombstone retracts; 0 when there is none. One backward walk, stopping at the first
/// such message.
pub fn last_compaction_start(messages: &[Message]) -> usize {
    let mut retracted = HashSet::new();
    for (i, message) in messages.iter().enumerate().rev() {
        match message {
            Message::Tombstone(t) => {
                retracted.insert(t.retracts.clone());
            }
            m if has_compaction(m) && !retracted.contains(m.id()) => return i,
            _ => {}
        }
    }
    0
}

/// Whether `messages` (new since the last scan) may move the cut: a compaction block or a
/// tombstone (which may retract the block the cut is at).
pub(crate) fn may_move_cut(messages: &[Message]) -> bool {
    messages
        .iter()
        .any(|m| matches!(m, Message::Tombstone(_)) || has_compaction(m))
}

/// Drops the blocks of the first draft before its last `compaction` block (fragments of the
/// same response merged into it, or an imported message holding text before the block). A
/// first draft without one is left alone.
pub(crate) fn trim_before_compaction(drafts: &mut [Draft<'_>]) {
    let Some(first) = drafts.first_mut().filter(|d| d.is_assistant()) else {
        return;
    };
    if let Some(at) = first
        .blocks
        .iter()
        .rposition(|b| matches!(b, ContentBlock::Compaction(_)))
    {
        first.blocks.drain(..at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, normalize};
    use threadline_wire::Role;
    use threadline_wire::content::CompactionBlock;

    fn compaction(summary: Option<&str>) -> ContentBlock {
        let mut value = serde_json::json!({"type": "compaction", "content": summary});
        if summary.is_none() {
            value["encrypted_content"] = "E==".into();
        }
        let block: ContentBlock = serde_json::from_value(value).expect("a compaction block");
        assert!(matches!(
            block,
            ContentBlock::Compaction(CompactionBlock { .. })
        ));
        block
    }

    #[test]
    fn everything_before_the_last_compaction_block_is_dropped() {
        let first = compaction(Some("one"));
        let last = compaction(None);
        let history = vec![
            Message::user_text("long ago"),
            Message::assistant_fragment("msg_1", "m", vec![first]),
            Message::assistant_fragment("msg_1", "m", vec![ContentBlock::text("a1")]),
            Message::user_text("then"),
            Message::assistant_fragment("msg_2", "m", vec![ContentBlock::text("before")]),
            Message::assistant_fragment("msg_2", "m", vec![last.clone()]),
            Message::assistant_fragment("msg_2", "m", vec![ContentBlock::text("a2")]),
            Message::user_text("now"),
        ];
        assert_eq!(last_compaction_start(&history), 5);
        let options = Options::default().with_from_last_compaction(true);
        let messages = normalize(&history, &options).messages;
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].role, Role::Assistant);
        let blocks = messages[0].content.to_blocks();
        assert_eq!(blocks, vec![last, ContentBlock::text("a2")]);
        // Off, the whole history goes.
        assert_eq!(normalize(&history, &Options::default()).messages.len(), 5);
    }

    #[test]
    fn a_retracted_compaction_block_does_not_cut() {
        let history = vec![
            Message::user_text("q"),
            Message::assistant_fragment("msg_1", "m", vec![compaction(Some("s"))]),
        ];
        let id = history[1].id().clone();
        let mut history = history;
        history.push(Message::tombstone(id));
        assert_eq!(last_compaction_start(&history), 0);
        assert_eq!(last_compaction_start(&[]), 0);
    }
}
