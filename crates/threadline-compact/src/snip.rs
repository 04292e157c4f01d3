//! Snip: remove chosen messages, widened to whole units.
//!
//! The selection is a set of message ids, so snipping the same selection twice removes
//! nothing more. Each selected message takes its whole unit with it (a tool use with its
//! result, the fragments of one response; see [`crate::units`]). Never removed: the latest
//! typed prompt with the meta messages and attachments that came with it (the task), the
//! last unit (the model is in the middle of it) and a compaction summary.
//!
//! A snip that removes something appends a `microcompact_boundary` (the message model's
//! kind for a local removal; its ids are the removed tool uses, stamped with the last
//! message's time): the usage the API reported before it described a longer context, so
//! [`estimate_context`] stops trusting it.

use std::collections::BTreeSet;

use threadline_message::{Header, Message, MessageId, SystemKind, Timestamp};
use threadline_wire::ContentBlock;

use crate::estimate::{estimate_context, message_tokens};
use crate::units::{is_compact_boundary, latest_prompt_group, safe_cut_points};

/// The array after a snip.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Snipped {
    /// The remaining messages, and a `microcompact_boundary` when anything was removed.
    pub messages: Vec<Message>,
    /// The ids of the removed messages, in array order.
    pub removed: Vec<MessageId>,
    /// The estimated tokens removed.
    pub tokens_freed: u64,
}

/// The units of `history` as `start..end` ranges between safe cut points, each with whether
/// it may be snipped: not a unit holding part of the latest prompt group (the task, see
/// [`latest_prompt_group`]), not the unit of the last user or assistant message (the model
/// is in the middle of it), not a compaction summary.
fn units(history: &[Message]) -> Vec<(std::ops::Range<usize>, bool)> {
    let safe = safe_cut_points(history);
    let task = latest_prompt_group(history).unwrap_or(0..0);
    let last = history
        .iter()
        .rposition(|m| matches!(m, Message::User(_) | Message::Assistant(_)));
    let mut out = Vec::new();
    let mut start = 0;
    for end in 1..=history.len() {
        if !safe[end] {
            continue;
        }
        let holds_prompt = start < task.end && task.start < end;
        let holds_summary = history[start..end]
            .iter()
            .any(|m| matches!(m, Message::User(u) if u.is_compact_summary));
        let holds_last = last.is_some_and(|l| (start..end).contains(&l));
        let removable = !holds_prompt && !holds_summary && !holds_last;
        out.push((start..end, removable));
        start = end;
    }
    out
}

/// Removes the units holding a message whose id is in `selection`, except the unit of the
/// latest prompt, the last unit and compaction summaries.
///
/// Removing units can join what is left into other units (a hostile history's tool result
/// before its call, a tombstone whose message went), so the removal is repeated on what
/// stays, with the boundary it gets, until it removes nothing more: snipping the result
/// again with the same selection changes nothing.
pub fn snip(history: &[Message], selection: &BTreeSet<MessageId>) -> Snipped {
    let mut remove = vec![false; history.len()];
    let mut staying: Vec<usize> = (0..history.len()).collect();
    let mut view: Vec<Message> = history.to_vec();
    // Each round removes at least one message more, or ends.
    for _ in 0..=history.len() {
        let mut changed = false;
        for (range, removable) in units(&view) {
            if removable
                && view[range.clone()]
                    .iter()
                    .any(|m| selection.contains(m.id()))
            {
                for j in range.filter(|&j| j < staying.len()) {
                    changed |= !std::mem::replace(&mut remove[staying[j]], true);
                }
            }
        }
        if !changed {
            break;
        }
        let settled = settle(history, &remove);
        staying = (0..history.len()).filter(|&i| !settled[i]).collect();
        view = staying.iter().map(|&i| history[i].clone()).collect();
        // The boundary a removal appends (its figures do not change the units).
        view.push(Message::system(SystemKind::MicrocompactBoundary {
            cleared_tool_use_ids: Vec::new(),
            tokens_saved: 0,
        }));
    }
    split(history, &remove)
}

/// `remove` as a snip carries it out: a tombstone stays while the message it retracts stays,
/// wherever the two stand.
fn settle(history: &[Message], remove: &[bool]) -> Vec<bool> {
    let staying = history
        .iter()
        .zip(remove)
        .filter(|(_, gone)| !**gone)
        .map(|(m, _)| m);
    let keep_anyway: Vec<&Message> = crate::retractions::missing_tombstones(history, staying);
    history
        .iter()
        .zip(remove)
        .map(|(m, gone)| *gone && !keep_anyway.iter().any(|t| std::ptr::eq(*t, m)))
        .collect()
}

fn split(history: &[Message], remove: &[bool]) -> Snipped {
    let remove = settle(history, remove);
    let mut messages = Vec::with_capacity(history.len() + 1);
    let mut removed = Vec::new();
    let mut cleared = Vec::new();
    let mut tokens_freed = 0;
    for (message, gone) in history.iter().zip(&remove) {
        if *gone {
            removed.push(message.id().clone());
            tokens_freed += message_tokens(message);
            if let Message::Assistant(a) = message {
                cleared.extend(a.content.iter().filter_map(|b| match b {
                    ContentBlock::ToolUse(u) => Some(u.id.clone()),
                    _ => None,
                }));
            }
        } else {
            messages.push(message.clone());
        }
    }
    if !removed.is_empty() {
        // The marker says the usage reported before it no longer describes the context.
        let last = history.last();
        let header = Header {
            id: MessageId(format!("snip-{}", last.map_or("", |m| m.id().as_str()))),
            timestamp: last.map_or_else(
                || Timestamp(String::new()),
                |m| m.header().timestamp.clone(),
            ),
        };
        messages.push(
            Message::system(SystemKind::MicrocompactBoundary {
                cleared_tool_use_ids: cleared,
                tokens_saved: tokens_freed,
            })
            .with_header(header),
        );
    }
    Snipped {
        messages,
        removed,
        tokens_freed,
    }
}

/// Removes the oldest removable units after the last compaction boundary (see [`snip`])
/// until the estimated context ([`estimate_context`] with `overhead`) is at most `target`, or
/// nothing more may go.
pub fn snip_oldest(history: &[Message], target: u64, overhead: u64) -> Snipped {
    let visible_from = history
        .iter()
        .rposition(is_compact_boundary)
        .map_or(0, |b| b + 1);
    let mut excess = estimate_context(history, overhead).saturating_sub(target);
    let mut remove = vec![false; history.len()];
    for (range, removable) in units(history) {
        if excess == 0 {
            break;
        }
        if !removable || range.start < visible_from {
            continue;
        }
        excess = excess.saturating_sub(history[range.clone()].iter().map(message_tokens).sum());
        remove[range].fill(true);
    }
    split(history, &remove)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_message::tool_result_block;
    use threadline_testkit::messages::{SessionBuilder, text, tool_use};

    #[test]
    fn selecting_a_result_removes_its_tool_use_too() {
        let mut b = SessionBuilder::new();
        b.user("first");
        let msg = b.response_id();
        b.assistant(&msg, vec![tool_use("toolu_1", "Read", json!({}))]);
        let result = b.tool_results(vec![tool_result_block("toolu_1", "x".into(), false)]);
        let msg2 = b.response_id();
        b.assistant(&msg2, vec![text("done")]);
        b.user("second");
        let history = b.into_messages();
        let snipped = snip(&history, &BTreeSet::from([result]));
        assert_eq!(snipped.removed.len(), 2);
        assert_eq!(snipped.messages.len(), 4, "three kept and the marker");
        // Idempotent: the ids are gone.
        assert_eq!(
            snip(
                &snipped.messages,
                &BTreeSet::from([history[2].id().clone()])
            )
            .messages,
            snipped.messages
        );
    }

    #[test]
    fn a_tombstone_stays_while_the_message_it_retracts_stays() {
        let mut b = SessionBuilder::new();
        b.user("old");
        let msg = b.response_id();
        b.assistant(&msg, vec![text("cut short")]);
        b.user("later");
        b.user("now");
        let mut history = b.into_messages();
        // A hostile order: the tombstone of the second message stands first.
        let tombstone = Message::Tombstone(threadline_message::Tombstone {
            header: Header::with("tomb", "2026-01-01T00:00:00Z"),
            retracts: history[1].id().clone(),
        });
        history.insert(0, tombstone.clone());
        let snipped = snip(&history, &BTreeSet::from([MessageId("tomb".into())]));
        assert!(
            snipped.messages.contains(&tombstone),
            "{:?}",
            snipped.removed
        );
        assert!(snipped.removed.is_empty());
    }

    #[test]
    fn the_current_turn_is_never_snipped() {
        let mut b = SessionBuilder::new();
        b.user("old");
        let prompt = b.user("now");
        let history = b.into_messages();
        let snipped = snip(&history, &BTreeSet::from([prompt]));
        assert_eq!(snipped.messages, history);
    }
}
