//! Pass 5: consecutive messages of one role become one message, tool results first.

use threadline_wire::ContentBlock;

use crate::draft::{Draft, is_tool_result};

/// Drafts with every run of consecutive user drafts merged into one, its `tool_result`
/// blocks hoisted to the front (in their order, the other blocks after them in theirs), and
/// every run of consecutive assistant drafts concatenated.
///
/// Why: the API merges consecutive same-role messages itself before checking them, so a
/// rendered attachment between an assistant's `tool_use` and the user message with its
/// result would put text before the result in the merged turn — a 400. Merging here, results
/// first, gives the API the turn it would build, in a shape it accepts. Adjacent assistants
/// (left by dropped messages) are concatenated, as the API would.
///
/// Text seams: blocks are kept as they are — adjacent text blocks are *not* joined into one
/// — so a block keeps its identity (and any cache marker), and normalizing the output again
/// changes nothing.
///
/// Assumes nothing. Guarantees: no two consecutive drafts of one role; in a merged user
/// draft, tool results lead. A single user message whose results do not lead is left to
/// [`ensure_tool_result_pairing`](super::ensure_tool_result_pairing), which reports it. A
/// conversion, never a repair; later passes that drop messages run it again. Cost: O(N +
/// blocks), each block moved once (hoisting a merged run moves its blocks once more).
pub(crate) fn merge_consecutive_users(mut drafts: Vec<Draft<'_>>) -> Vec<Draft<'_>> {
    // In place: drafts `..kept` are the output so far; a merged draft's blocks move into the
    // last kept draft and the emptied draft is dropped at the end.
    let mut kept = 0;
    let mut run_merged = false;
    for n in 0..drafts.len() {
        if kept > 0 && drafts[kept - 1].side == drafts[n].side {
            let (before, from) = drafts.split_at_mut(n);
            before[kept - 1].blocks.append(&mut from[0].blocks);
            run_merged = true;
            continue;
        }
        if run_merged {
            finish_run(&mut drafts[..kept]);
            run_merged = false;
        }
        drafts.swap(kept, n);
        kept += 1;
    }
    drafts.truncate(kept);
    if run_merged {
        finish_run(&mut drafts);
    }
    drafts
}

/// Hoists the results of the merged user draft at the end of `out`.
fn finish_run(out: &mut [Draft<'_>]) {
    if let Some(last) = out.last_mut()
        && last.is_user()
    {
        hoist_tool_results(&mut last.blocks);
    }
}

/// Whether some `tool_result` block follows a block of another type.
pub(crate) fn results_lead(blocks: &[ContentBlock]) -> bool {
    let leading = blocks.iter().take_while(|b| is_tool_result(b)).count();
    !blocks[leading..].iter().any(is_tool_result)
}

/// Moves the `tool_result` blocks of `blocks` to the front, both groups keeping their order.
/// Returns whether anything moved.
pub(crate) fn hoist_tool_results(blocks: &mut Vec<ContentBlock>) -> bool {
    if results_lead(blocks) {
        return false;
    }
    let (mut results, rest): (Vec<_>, Vec<_>) =
        std::mem::take(blocks).into_iter().partition(is_tool_result);
    results.extend(rest);
    *blocks = results;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::Message;

    fn merged(messages: &[Message]) -> String {
        drafts_shape(&merge_consecutive_users(drafts(messages)))
    }

    #[test]
    fn consecutive_users_merge_with_results_first() {
        let messages = [
            asst(vec![tool_use("t1"), tool_use("t2")]),
            meta("<system-reminder>\nctx\n</system-reminder>"),
            results(&["t1"]),
            user_blocks(vec![text("typed"), result("t2", "ok")]),
        ];
        assert_eq!(
            merged(&messages),
            "A: use(t1) use(t2) | U: result(t1) result(t2) text(<system-reminder>\nctx\n\
             </system-reminder>) text(typed)"
        );
    }

    #[test]
    fn text_seams_are_kept_as_separate_blocks() {
        let messages = [
            user("a"),
            user("b"),
            asst_text("x"),
            asst_text("y"),
            user("c"),
        ];
        assert_eq!(
            merged(&messages),
            "U: text(a) text(b) | A: text(x) text(y) | U: text(c)"
        );
    }

    #[test]
    fn a_single_message_is_left_as_it_is() {
        let messages = [
            asst(vec![tool_use("t1")]),
            user_blocks(vec![text("first"), result("t1", "ok")]),
        ];
        assert_eq!(merged(&messages), "A: use(t1) | U: text(first) result(t1)");
    }

    #[test]
    fn hoisting_reports_whether_it_moved_anything() {
        let mut blocks = vec![result("a", "1"), text("x")];
        assert!(!hoist_tool_results(&mut blocks));
        let mut blocks = vec![text("x"), result("a", "1"), text("y"), result("b", "2")];
        assert!(hoist_tool_results(&mut blocks));
        let shapes: Vec<_> = blocks.iter().map(block_shape).collect();
        assert_eq!(shapes, ["result(a)", "result(b)", "text(x)", "text(y)"]);
        assert!(results_lead(&[]));
    }
}
