//! Pass 4: the fragments of one streamed response become one assistant message.

use crate::draft::{Draft, is_tool_result};

/// Drafts with every assistant fragment appended to the earlier fragment of the same API
/// response (same `api_message_id`), walking back over user messages that hold only tool
/// results.
///
/// Streaming records one response as several fragments, and tools start before the response
/// ends, so their results can be recorded between two fragments: `A1(tool_use t1)`,
/// `U(result t1)`, `A2(tool_use t2)` with `A1` and `A2` of one response. The API must see the
/// response whole, with every result after it: `A1+A2`, `U(result t1)`, then `U(result t2)`,
/// which [`merge_consecutive_users`](super::merge_consecutive_users) joins.
///
/// Assumes drafts in conversation order, attachments rendered. Guarantees: a fragment is
/// merged only into the nearest assistant draft before it, and only across tool-result-only
/// user drafts, so no content moves past anything but tool results; assistants without an
/// API id, or with a different one, are left for
/// [`merge_consecutive_users`](super::merge_consecutive_users). A conversion, never a repair.
/// Cost: O(N) — the walk-back is a remembered position, not a scan.
pub(crate) fn merge_assistant_fragments(mut drafts: Vec<Draft<'_>>) -> Vec<Draft<'_>> {
    // In place: drafts `..kept` are the output so far; a merged fragment's blocks move into
    // its target and the emptied draft is dropped at the end, so no second array is built.
    let mut kept = 0;
    // The last assistant draft kept, while only tool-result-only user drafts follow it.
    let mut open: Option<usize> = None;
    for n in 0..drafts.len() {
        if drafts[n].is_assistant() {
            if let (Some(at), Some(id)) = (open, drafts[n].api_message_id)
                && drafts[at].api_message_id == Some(id)
            {
                let (before, from) = drafts.split_at_mut(n);
                before[at].blocks.append(&mut from[0].blocks);
                continue;
            }
            open = Some(kept);
        } else if !is_tool_result_only(&drafts[n]) {
            open = None;
        }
        drafts.swap(kept, n);
        kept += 1;
    }
    drafts.truncate(kept);
    drafts
}

fn is_tool_result_only(draft: &Draft<'_>) -> bool {
    !draft.blocks.is_empty() && draft.blocks.iter().all(is_tool_result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::Message;

    fn merged(messages: &[Message]) -> String {
        drafts_shape(&merge_assistant_fragments(drafts(messages)))
    }

    #[test]
    fn adjacent_fragments_merge() {
        let messages = [
            user("q"),
            frag("msg_1", vec![thinking("hmm")]),
            frag("msg_1", vec![text("a")]),
            frag("msg_1", vec![tool_use("t1")]),
        ];
        assert_eq!(
            merged(&messages),
            "U: text(q) | A: thinking text(a) use(t1)"
        );
    }

    #[test]
    fn fragments_merge_across_interleaved_tool_results() {
        let messages = [
            user("q"),
            frag("msg_1", vec![tool_use("t1")]),
            results(&["t1"]),
            frag("msg_1", vec![tool_use("t2")]),
            results(&["t2"]),
            frag("msg_2", vec![text("done")]),
        ];
        assert_eq!(
            merged(&messages),
            "U: text(q) | A: use(t1) use(t2) | U: result(t1) | U: result(t2) | A: text(done)"
        );
    }

    #[test]
    fn no_merge_across_other_content_or_other_ids() {
        let messages = [
            frag("msg_1", vec![tool_use("t1")]),
            user_blocks(vec![result("t1", "ok"), text("and this")]),
            frag("msg_1", vec![text("x")]),
            frag("msg_2", vec![text("y")]),
            asst_text("no id"),
            asst_text("no id either"),
        ];
        assert_eq!(
            merged(&messages),
            "A: use(t1) | U: result(t1) text(and this) | A: text(x) | A: text(y) | \
             A: text(no id) | A: text(no id either)"
        );
    }

    #[test]
    fn a_fragment_merges_into_the_nearest_assistant_only() {
        // The duplicate of an earlier response (a resumed session) is not pulled back past a
        // different response.
        let messages = [
            frag("msg_1", vec![tool_use("t1")]),
            results(&["t1"]),
            frag("msg_2", vec![text("a")]),
            frag("msg_1", vec![tool_use("t1")]),
        ];
        assert_eq!(
            merged(&messages),
            "A: use(t1) | U: result(t1) | A: text(a) | A: use(t1)"
        );
    }
}
