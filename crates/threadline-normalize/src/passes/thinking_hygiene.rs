//! Pass 6: thinking blocks only where the API accepts them.

use threadline_wire::ContentBlock;

use super::merge_consecutive_users::merge_consecutive_users;
use crate::draft::{Draft, is_blank_text};
use crate::report::{Pass, RepairKind, Report};

/// Drafts whose thinking the API accepts.
///
/// The API's rules (docs/api-notes.md#thinking), and this crate's own "strip trailing
/// thinking from the last assistant message, never modify or reorder thinking blocks of the
/// latest assistant message", read together:
///
/// 1. a `thinking` block without its `signature` is dropped, wherever it is
///    (`UnsignedThinkingDropped`): the API rejects it in any message, so keeping it is not
///    an option even in the latest one;
/// 2. thinking blocks in a user message are dropped (`MisplacedThinkingDropped`);
/// 3. in an assistant message holding thinking, the first block must be thinking: when it is
///    not (fragments or adjacent messages merged out of order), that message's thinking
///    blocks are dropped (`MisplacedThinkingDropped`) — reordering them would be the
///    modification the API forbids, and the request would be rejected as it is;
/// 4. an assistant message left with only thinking (and blank text, which
///    [`empty_content`](super::empty_content) would remove) is *orphaned thinking* and is
///    dropped (`OrphanThinkingDropped`), wherever it is, the latest assistant message
///    included. The decision depends on the message alone, never on what comes after it: a
///    message kept while it was the latest and dropped once a later answer arrived would
///    edit the prefix that later answer's thinking is bound to, which the models that bind
///    thinking to its prefix refuse (docs/api-notes.md#thinking-bound-to-its-prefix).
///    Dropping a whole message touches no block of the assistant message that is then the
///    latest;
/// 5. when the request ends with an assistant message (a prefill), the thinking blocks at
///    its end are stripped (`TrailingThinkingStripped`): a response cannot continue from
///    inside its own thinking. Thinking blocks followed by other content in that message are
///    left exactly as they are.
///
/// Assumes fragments and consecutive messages merged. Guarantees: every assistant message
/// with thinking starts with thinking; no thinking-only assistant message; a final
/// assistant message does not end with thinking; no two consecutive drafts of one role
/// (user drafts that a drop made adjacent are merged again).
pub(crate) fn thinking_hygiene<'a>(
    mut drafts: Vec<Draft<'a>>,
    report: &mut Report,
) -> Vec<Draft<'a>> {
    let mut orphaned: Vec<usize> = Vec::new();
    for (n, draft) in drafts.iter_mut().enumerate() {
        if !draft.blocks.iter().any(ContentBlock::is_thinking) {
            continue;
        }
        let origin = draft.origin;
        if draft.is_user() {
            draft.blocks.retain(|block| {
                let keep = !block.is_thinking();
                if !keep {
                    report.push(
                        Pass::ThinkingHygiene,
                        RepairKind::MisplacedThinkingDropped,
                        origin,
                    );
                }
                keep
            });
            continue;
        }
        draft.blocks.retain(|block| {
            let unsigned = matches!(block, ContentBlock::Thinking(t) if t.signature.is_none());
            if unsigned {
                report.push(
                    Pass::ThinkingHygiene,
                    RepairKind::UnsignedThinkingDropped,
                    origin,
                );
            }
            !unsigned
        });
        let has_thinking = draft.blocks.iter().any(ContentBlock::is_thinking);
        if has_thinking && !draft.blocks.first().is_some_and(ContentBlock::is_thinking) {
            draft.blocks.retain(|block| {
                let keep = !block.is_thinking();
                if !keep {
                    report.push(
                        Pass::ThinkingHygiene,
                        RepairKind::MisplacedThinkingDropped,
                        origin,
                    );
                }
                keep
            });
        }
        if is_thinking_only(&draft.blocks) {
            report.push(
                Pass::ThinkingHygiene,
                RepairKind::OrphanThinkingDropped,
                origin,
            );
            orphaned.push(n);
        }
    }
    strip_final_trailing_thinking(&mut drafts, report);
    if orphaned.is_empty() {
        return drafts;
    }
    let mut n = 0;
    let mut next = orphaned.iter().copied().peekable();
    drafts.retain(|_| {
        let drop = next.next_if_eq(&n).is_some();
        n += 1;
        !drop
    });
    merge_consecutive_users(drafts)
}

/// Whether `blocks` hold thinking and nothing else but blank text.
pub(crate) fn is_thinking_only(blocks: &[ContentBlock]) -> bool {
    blocks.iter().any(ContentBlock::is_thinking)
        && blocks.iter().all(|b| b.is_thinking() || is_blank_text(b))
}

/// When the last draft is an assistant message, strips the thinking blocks at its end (rule
/// 5 of [`thinking_hygiene`]); run again after the passes that can change what ends the
/// request.
pub(crate) fn strip_final_trailing_thinking(drafts: &mut [Draft<'_>], report: &mut Report) {
    let Some(last) = drafts.last_mut().filter(|d| d.is_assistant()) else {
        return;
    };
    while last.blocks.last().is_some_and(ContentBlock::is_thinking) {
        last.blocks.pop();
        report.push(
            Pass::ThinkingHygiene,
            RepairKind::TrailingThinkingStripped,
            last.origin,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::Message;

    fn hygiene(messages: &[Message]) -> (String, Report) {
        let mut report = Report::default();
        let out = thinking_hygiene(drafts(messages), &mut report);
        (drafts_shape(&out), report)
    }

    fn kinds(report: &Report) -> Vec<&RepairKind> {
        report.repairs.iter().map(|r| &r.kind).collect()
    }

    #[test]
    fn orphaned_thinking_is_dropped_and_users_rejoined() {
        let (out, report) = hygiene(&[
            user("q"),
            asst(vec![thinking("a"), text(" ")]),
            user("q2"),
            asst(vec![thinking("b"), text("answer")]),
            user("q3"),
        ]);
        assert_eq!(
            out,
            "U: text(q) text(q2) | A: thinking text(answer) | U: text(q3)"
        );
        assert_eq!(kinds(&report), [&RepairKind::OrphanThinkingDropped]);
        assert_eq!(report.repairs[0].message_index, Some(1));
    }

    #[test]
    fn the_latest_thinking_only_assistant_goes_too() {
        let (out, report) =
            hygiene(&[user("q"), asst(vec![thinking("a"), redacted()]), user("q2")]);
        assert_eq!(out, "U: text(q) text(q2)");
        assert_eq!(kinds(&report), [&RepairKind::OrphanThinkingDropped]);
    }

    /// Whether a thinking-only answer goes never depends on what comes after it: the same
    /// history with a later answer appended normalizes to the same messages before it (a
    /// later answer's thinking is bound to that prefix).
    #[test]
    fn a_later_answer_never_changes_what_came_before() {
        let before = [user("q"), asst(vec![thinking("a"), text("  ")]), user("q2")];
        let (short, _) = hygiene(&before);
        let mut longer = before.to_vec();
        longer.extend([asst(vec![thinking("b"), text("answer")]), user("q3")]);
        let (long, _) = hygiene(&longer);
        assert_eq!(short, "U: text(q) text(q2)");
        assert!(long.starts_with(&short), "{long}");
    }

    #[test]
    fn a_final_prefill_loses_only_its_trailing_thinking() {
        let (out, report) = hygiene(&[
            user("q"),
            asst(vec![thinking("a"), text("x"), thinking("b"), redacted()]),
        ]);
        assert_eq!(out, "U: text(q) | A: thinking text(x)");
        assert_eq!(
            kinds(&report),
            [
                &RepairKind::TrailingThinkingStripped,
                &RepairKind::TrailingThinkingStripped
            ]
        );
        let (out, _) = hygiene(&[
            user("q"),
            asst(vec![thinking("a"), text("x"), thinking("b"), text("y")]),
        ]);
        assert_eq!(out, "U: text(q) | A: thinking text(x) thinking text(y)");
    }

    #[test]
    fn unsigned_and_misplaced_thinking_is_dropped() {
        let (out, report) = hygiene(&[
            user_blocks(vec![text("q"), thinking("in a user message")]),
            asst(vec![unsigned_thinking("u"), thinking("s"), text("a")]),
            user("q2"),
            asst(vec![text("merged out of order"), thinking("late")]),
            user("q3"),
        ]);
        assert_eq!(
            out,
            "U: text(q) | A: thinking text(a) | U: text(q2) | A: text(merged out of order) | \
             U: text(q3)"
        );
        assert_eq!(
            kinds(&report),
            [
                &RepairKind::MisplacedThinkingDropped,
                &RepairKind::UnsignedThinkingDropped,
                &RepairKind::MisplacedThinkingDropped
            ]
        );
    }

    /// Adaptive thinking with `display: "omitted"` returns `thinking: ""` and a full
    /// signature; the API needs those blocks back exactly as they came (docs/api-notes.md#thinking), in earlier turns (kept by newer models) and in the latest one, and with a tool use
    /// interleaved. The whole pipeline leaves every one byte-identical.
    #[test]
    fn omitted_and_summarized_adaptive_thinking_keep_their_signatures_through_the_pipeline() {
        let omitted = |sig: &str| {
            ContentBlock::Thinking(
                threadline_wire::content::ThinkingBlock::new(String::new()).with_signature(sig),
            )
        };
        let messages = [
            user("q"),
            asst(vec![omitted("EqQBsigA"), text("first answer")]),
            user("q2"),
            asst(vec![
                omitted("EqQBsigB"),
                thinking("a summary"),
                tool_use("toolu_1"),
            ]),
            results(&["toolu_1"]),
            asst(vec![omitted("EqQBsigC"), text("done")]),
            user("q3"),
        ];
        let out = crate::normalize(&messages, &crate::Options::default());
        assert!(out.report.is_empty(), "{}", out.report);
        let thinking: Vec<serde_json::Value> = out
            .messages
            .iter()
            .flat_map(|m| match &m.content {
                threadline_wire::Content::Blocks(blocks) => blocks.clone(),
                threadline_wire::Content::Text(_) => Vec::new(),
            })
            .filter(ContentBlock::is_thinking)
            .map(|b| serde_json::to_value(&b).expect("serializes"))
            .collect();
        assert_eq!(
            thinking,
            [
                serde_json::json!({"type": "thinking", "thinking": "", "signature": "EqQBsigA"}),
                serde_json::json!({"type": "thinking", "thinking": "", "signature": "EqQBsigB"}),
                serde_json::to_value(thinking_block_of(&messages[3], 1)).expect("serializes"),
                serde_json::json!({"type": "thinking", "thinking": "", "signature": "EqQBsigC"}),
            ]
        );
    }

    fn thinking_block_of(message: &Message, index: usize) -> ContentBlock {
        match message {
            Message::Assistant(a) => a.content[index].clone(),
            _ => panic!("an assistant message"),
        }
    }
}
