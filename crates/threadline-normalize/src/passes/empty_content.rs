//! Pass 7: no empty text, no empty message.

use threadline_wire::{Content, ContentBlock};

use super::merge_consecutive_users::merge_consecutive_users;
use crate::EMPTY_PLACEHOLDER;
use crate::draft::{Draft, is_blank, is_blank_text};
use crate::report::{Pass, RepairKind, Report};

/// Drafts with no empty or whitespace-only text and no empty message.
///
/// - Empty and whitespace-only text blocks are removed (`EmptyTextRemoved`): in messages, in
///   `tool_result` content and in `search_result` content. A `tool_result` whose content is
///   left empty (`""`, whitespace, `[]`) loses its `content` field, which is optional.
/// - An assistant message left empty is dropped (`EmptyAssistantDropped`) and the user
///   messages it separated are merged (results first, see
///   [`merge_consecutive_users`](super::merge_consecutive_users)). An empty assistant message
///   never has to stay: it holds no `tool_use` that a following result would need, so the
///   placeholder such a message could take is never needed.
/// - A user message left empty gets [`EMPTY_PLACEHOLDER`] (`PlaceholderInserted`); user
///   messages are never dropped, so nothing typed disappears and roles keep alternating.
///
/// Assumes consecutive messages merged. Guarantees: every text block non-blank; every
/// message non-empty; no two consecutive drafts of one role.
pub(crate) fn empty_content<'a>(mut drafts: Vec<Draft<'a>>, report: &mut Report) -> Vec<Draft<'a>> {
    let mut dropped = false;
    for draft in &mut drafts {
        remove_blank_text(&mut draft.blocks, draft.origin, report);
        if draft.is_assistant() && draft.blocks.is_empty() {
            report.push(
                Pass::EmptyContent,
                RepairKind::EmptyAssistantDropped,
                draft.origin,
            );
            dropped = true;
        }
    }
    if dropped {
        drafts.retain(|d| !(d.is_assistant() && d.blocks.is_empty()));
        drafts = merge_consecutive_users(drafts);
    }
    fill_empty_users(&mut drafts, Pass::EmptyContent, report);
    drafts
}

/// Removes the blank text blocks of `blocks` and of the content nested in them.
fn remove_blank_text(blocks: &mut Vec<ContentBlock>, origin: Option<usize>, report: &mut Report) {
    blocks.retain_mut(|block| {
        match block {
            ContentBlock::Text(text) if is_blank(&text.text) => {
                report.push(Pass::EmptyContent, RepairKind::EmptyTextRemoved, origin);
                return false;
            }
            ContentBlock::ToolResult(result) => {
                let emptied = match &mut result.content {
                    Some(Content::Text(text)) if is_blank(text) => {
                        report.push(Pass::EmptyContent, RepairKind::EmptyTextRemoved, origin);
                        true
                    }
                    Some(Content::Blocks(nested)) => {
                        remove_blank_text(nested, origin, report);
                        nested.is_empty()
                    }
                    _ => false,
                };
                if emptied {
                    result.content = None;
                }
            }
            ContentBlock::SearchResult(search) => {
                search.content.retain(|b| {
                    let blank = is_blank_text(b);
                    if blank {
                        report.push(Pass::EmptyContent, RepairKind::EmptyTextRemoved, origin);
                    }
                    !blank
                });
            }
            _ => {}
        }
        true
    });
}

/// Gives every empty user draft [`EMPTY_PLACEHOLDER`], reported under `pass`.
pub(crate) fn fill_empty_users(drafts: &mut [Draft<'_>], pass: Pass, report: &mut Report) {
    for draft in drafts
        .iter_mut()
        .filter(|d| d.is_user() && d.blocks.is_empty())
    {
        draft.blocks.push(ContentBlock::text(EMPTY_PLACEHOLDER));
        report.push(pass, RepairKind::PlaceholderInserted, draft.origin);
    }
}

/// Settles the end of the request after the last pass: a final assistant message loses its
/// trailing whitespace (`TrailingWhitespaceTrimmed`; prefill models reject "final assistant
/// content cannot end with trailing whitespace") and is dropped when nothing is left.
pub(crate) fn trim_final_assistant(drafts: &mut Vec<Draft<'_>>, report: &mut Report) {
    if let Some(last) = drafts.last_mut().filter(|d| d.is_assistant()) {
        while let Some(ContentBlock::Text(text)) = last.blocks.last_mut() {
            let kept = text.text.trim_end().len();
            if kept == text.text.len() {
                break;
            }
            text.text.truncate(kept);
            report.push(
                Pass::EmptyContent,
                RepairKind::TrailingWhitespaceTrimmed,
                last.origin,
            );
            if kept > 0 {
                break;
            }
            last.blocks.pop();
        }
        if last.blocks.is_empty() {
            report.push(
                Pass::EmptyContent,
                RepairKind::EmptyAssistantDropped,
                last.origin,
            );
            drafts.pop();
        }
    }
}

/// The request starts with a user message: one with no message at all gets a user message
/// holding [`EMPTY_PLACEHOLDER`] (`PlaceholderInserted`; the API rejects an empty `messages`),
/// and so does one whose first message is an assistant message, before it, unless that
/// message opens with an on-demand compaction block, which must come first.
///
/// A history with nothing the API accepts before its first answer was sent as the placeholder
/// alone; the answer to it must find that placeholder still first, or the request edits what
/// the answer's thinking is bound to. The decision reads the first message only, so appending
/// never changes it. Only at the start of the array: a tail the incremental normalizer
/// re-runs from an assistant message is not a request's start.
pub(crate) fn start_with_user(drafts: &mut Vec<Draft<'_>>, report: &mut Report) {
    let needed = drafts.first().is_none_or(|first| {
        first.is_assistant() && !matches!(first.blocks.first(), Some(ContentBlock::Compaction(_)))
    });
    if needed {
        drafts.insert(
            0,
            Draft::user(vec![ContentBlock::text(EMPTY_PLACEHOLDER)], None),
        );
        report.push(Pass::EmptyContent, RepairKind::PlaceholderInserted, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::{Message, tool_result_block};

    fn emptied(messages: &[Message]) -> (String, Report) {
        let mut report = Report::default();
        let out = empty_content(drafts(messages), &mut report);
        (drafts_shape(&out), report)
    }

    #[test]
    fn blank_text_goes_and_an_emptied_assistant_is_dropped() {
        let (out, report) = emptied(&[
            user("q1"),
            asst(vec![text(""), text(" \n\t")]),
            user("q2"),
            asst(vec![text("a"), text(" ")]),
        ]);
        assert_eq!(out, "U: text(q1) text(q2) | A: text(a)");
        assert_eq!(report.count(|k| *k == RepairKind::EmptyTextRemoved), 3);
        assert_eq!(report.count(|k| *k == RepairKind::EmptyAssistantDropped), 1);
    }

    #[test]
    fn an_emptied_user_message_gets_the_placeholder() {
        let (out, report) = emptied(&[asst_text("a"), user(" "), asst_text("b")]);
        assert_eq!(out, "A: text(a) | U: text((no content)) | A: text(b)");
        assert_eq!(
            report.repairs.last().map(|r| &r.kind),
            Some(&RepairKind::PlaceholderInserted)
        );
        assert_eq!(report.repairs.last().and_then(|r| r.message_index), Some(1));
    }

    #[test]
    fn blank_tool_result_content_is_omitted() {
        let nested = tool_result_block(
            "t2",
            threadline_wire::Content::Blocks(vec![text(" "), text("kept")]),
            false,
        );
        let blank = tool_result_block(
            "t3",
            threadline_wire::Content::Blocks(vec![text("")]),
            false,
        );
        let mut report = Report::default();
        let messages = [
            asst(vec![tool_use("t1"), tool_use("t2"), tool_use("t3")]),
            user_blocks(vec![result("t1", "  "), nested, blank]),
        ];
        let out = empty_content(drafts(&messages), &mut report);
        let ContentBlock::ToolResult(first) = &out[1].blocks[0] else {
            panic!("a tool result")
        };
        assert_eq!(first.content, None);
        let ContentBlock::ToolResult(second) = &out[1].blocks[1] else {
            panic!("a tool result")
        };
        assert_eq!(second.content, Some(Content::Blocks(vec![text("kept")])));
        let ContentBlock::ToolResult(third) = &out[1].blocks[2] else {
            panic!("a tool result")
        };
        assert_eq!(third.content, None);
        assert_eq!(report.len(), 3);
    }

    #[test]
    fn the_final_assistant_loses_trailing_whitespace() {
        let mut report = Report::default();
        let messages = [
            user("q"),
            asst(vec![thinking("t"), text("The answer is  \n")]),
        ];
        let mut out = drafts(&messages);
        trim_final_assistant(&mut out, &mut report);
        assert_eq!(
            drafts_shape(&out),
            "U: text(q) | A: thinking text(The answer is)"
        );
        assert_eq!(report.len(), 1);

        let mut report = Report::default();
        let messages = [user("q"), asst(vec![text("  ")])];
        let mut out = drafts(&messages);
        trim_final_assistant(&mut out, &mut report);
        assert_eq!(drafts_shape(&out), "U: text(q)");

        let mut report = Report::default();
        let mut out = Vec::new();
        trim_final_assistant(&mut out, &mut report);
        start_with_user(&mut out, &mut report);
        assert_eq!(drafts_shape(&out), "U: text((no content))");
    }
}
