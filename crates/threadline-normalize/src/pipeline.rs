//! The pipeline: the ten passes in their documented order, then the settling of the end of
//! the request.
//!
//! | # | pass | runs after … because |
//! |---|------|----------------------|
//! | 1 | `reorder_attachments` | — it must see attachment messages, which pass 3 turns into ordinary user messages it could no longer tell from typed ones |
//! | 2 | `drop_non_api` | 1; before 3–5 so that a dropped message (progress, a retracted fragment, a replayed copy) neither separates messages that must merge nor gets merged |
//! | 3 | `render_attachments` | 2; before 5, which merges the rendered messages with their neighbours |
//! | 4 | `merge_assistant_fragments` | 3; before 5 (merging fragments leaves tool-result messages adjacent) and before 6 (the thinking fragment of a streamed response is thinking-only until merged) |
//! | 5 | `merge_consecutive_users` | 4; before 10, which pairs a result only with the message *immediately* before it |
//! | 6 | `thinking_hygiene` | 5 (the first-block rule applies to merged messages); before 7, which drops a final assistant message emptied by stripping its trailing thinking |
//! | 7 | `empty_content` | 6; before 10, so that an emptied assistant is dropped and its neighbours merged before results are paired |
//! | 8 | `error_results_text_only` | 7; before 9, so error results' media do not use up the media budget |
//! | 9 | `media_cap` | 8 |
//! | 10 | `ensure_tool_result_pairing` | everything: the safety net sees the final shape |
//!
//! Then the end of the request is settled, because passes 7 and 10 can change which message
//! is last: a final assistant message loses its trailing thinking (pass 6's rule 5) and its
//! trailing whitespace, and is dropped when nothing is left. Last, the request starts with a
//! user message: the placeholder goes first when it is empty or opens with an answer (at the
//! array's start only, see `start_with_user`). The order is tested below: each test runs two passes swapped and
//! shows what goes wrong.

use threadline_message::Message;

use crate::draft::Draft;
use crate::passes::{
    drop_non_api, empty_content, ensure_tool_result_pairing, error_results_text_only, media_cap,
    merge_assistant_fragments, merge_consecutive_users, render_attachments, reorder_attachments,
    start_with_user, strip_final_trailing_thinking, thinking_hygiene, trim_final_assistant,
};
use crate::report::Report;
use crate::{Normalized, Options};

/// Runs the pipeline over `messages`.
pub(crate) fn run(messages: &[Message], options: &Options) -> Normalized {
    let mut report = Report::default();
    let drafts = run_drafts(messages, options, &mut report, true, |_| {});
    Normalized {
        messages: drafts.into_iter().map(Draft::into_param).collect(),
        report,
    }
}

/// The passes in their order, then the settling of the end, leaving drafts. `before_media_cap`
/// sees the drafts just before the media cap (the incremental normalizer tags media there to
/// follow each block through the last passes).
pub(crate) fn run_drafts<'a>(
    messages: &'a [Message],
    options: &Options,
    report: &mut Report,
    at_start: bool,
    before_media_cap: impl FnOnce(&mut [Draft<'a>]),
) -> Vec<Draft<'a>> {
    let order = reorder_attachments(messages);
    let items = drop_non_api(messages, &order, options, report);
    let drafts = render_attachments(items);
    let drafts = merge_assistant_fragments(drafts);
    let mut drafts = merge_consecutive_users(drafts);
    if options.from_last_compaction {
        crate::from_compaction::trim_before_compaction(&mut drafts);
    }
    let drafts = thinking_hygiene(drafts, report);
    let mut drafts = empty_content(drafts, report);
    error_results_text_only(&mut drafts, report);
    before_media_cap(&mut drafts);
    media_cap(&mut drafts, options.media_limit, report);
    let mut drafts = ensure_tool_result_pairing(drafts, options.resume_paused_turn, report);
    settle(&mut drafts, report);
    if at_start {
        start_with_user(&mut drafts, report);
    }
    drafts
}

/// Settles the end of the request (see the module documentation); repeats until nothing
/// changes, which takes at most a few rounds: each round that changes something removes a
/// block or a message.
fn settle(drafts: &mut Vec<Draft<'_>>, report: &mut Report) {
    loop {
        let before = report.len();
        strip_final_trailing_thinking(drafts, report);
        trim_final_assistant(drafts, report);
        if report.len() == before {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::Attachment;
    use threadline_wire::MessageParam;

    fn params(drafts: Vec<Draft<'_>>) -> Vec<MessageParam> {
        drafts.into_iter().map(Draft::into_param).collect()
    }

    #[test]
    fn merging_users_must_come_before_pairing() {
        // A hook's meta message recorded between a tool use and its result.
        let messages = [
            user("q"),
            asst(vec![tool_use("t1")]),
            meta("<system-reminder>\nhook output\n</system-reminder>"),
            results(&["t1"]),
        ];
        let right = run(&messages, &Options::default());
        assert_eq!(
            shape(&right.messages),
            "U: text(q) | A: use(t1) | U: result(t1) text(<system-reminder>\nhook output\n\
             </system-reminder>)"
        );
        assert!(right.report.is_empty());

        // Swapped: the pairing pass sees the meta message as the answer, gives it a synthetic
        // error result and removes the real result as an orphan.
        let mut report = Report::default();
        let drafts = ensure_tool_result_pairing(drafts(&messages), false, &mut report);
        let wrong = params(merge_consecutive_users(drafts));
        assert_eq!(
            shape(&wrong),
            "U: text(q) | A: use(t1) | U: result!(t1) text(<system-reminder>\nhook output\n\
             </system-reminder>)"
        );
        assert_eq!(report.len(), 2, "{report}");
    }

    #[test]
    fn reordering_attachments_must_come_before_rendering() {
        let messages = [
            user("q1"),
            asst_text("a1"),
            user("q2"),
            reminder("context for q2"),
        ];
        let right = run(&messages, &Options::default());
        assert_eq!(
            shape(&right.messages),
            "U: text(q1) | A: text(a1) | U: text(<system-reminder>\ncontext for q2\n\
             </system-reminder>) text(q2)"
        );

        // Swapped: once rendered, the attachment is an ordinary user message and stays after
        // the prompt it was collected for.
        let identity: Vec<usize> = (0..messages.len()).collect();
        let items = drop_non_api(
            &messages,
            &identity,
            &Options::default(),
            &mut Report::default(),
        );
        let rendered = render_attachments(items);
        let wrong = params(merge_consecutive_users(rendered));
        assert_eq!(
            shape(&wrong),
            "U: text(q1) | A: text(a1) | U: text(q2) text(<system-reminder>\ncontext for q2\n\
             </system-reminder>)"
        );
    }

    #[test]
    fn merging_fragments_must_come_before_thinking_hygiene() {
        // A streamed response recorded as one fragment per block.
        let messages = [
            user("q"),
            frag("msg_1", vec![thinking("plan")]),
            frag("msg_1", vec![text("answer")]),
            user("thanks"),
        ];
        let right = run(&messages, &Options::default());
        assert_eq!(
            shape(&right.messages),
            "U: text(q) | A: thinking text(answer) | U: text(thanks)"
        );

        // Swapped: the thinking fragment alone looks like orphaned thinking and is dropped,
        // losing the signed thinking of the response.
        let mut report = Report::default();
        let drafts = thinking_hygiene(drafts(&messages), &mut report);
        let wrong = params(merge_consecutive_users(merge_assistant_fragments(drafts)));
        assert_eq!(
            shape(&wrong),
            "U: text(q) | A: text(answer) | U: text(thanks)"
        );
        assert_eq!(report.len(), 1);
    }

    #[test]
    fn error_results_must_be_text_only_before_the_media_cap() {
        let failed = threadline_message::tool_result_block(
            "t1",
            threadline_wire::Content::Blocks(vec![text("crashed"), image()]),
            true,
        );
        let messages = [
            user_blocks(vec![text("what is this?"), image()]),
            asst(vec![tool_use("t1")]),
            user_blocks(vec![failed]),
        ];
        let options = Options::default().with_media_limit(1);
        let right = run(&messages, &options);
        assert_eq!(
            shape(&right.messages[..1]),
            "U: text(what is this?) image",
            "the user's image survives"
        );

        // Swapped: the error result's image uses up the budget, the user's image is dropped,
        // and then the error result's image is removed anyway: no image is left.
        let mut report = Report::default();
        let mut drafts = drafts(&messages);
        media_cap(&mut drafts, 1, &mut report);
        error_results_text_only(&mut drafts, &mut report);
        let wrong = params(drafts);
        assert!(
            !serde_json::to_string(&wrong)
                .expect("serializes")
                .contains("\"image\"")
        );
    }

    #[test]
    fn attachments_never_land_between_a_tool_use_and_its_result() {
        let messages = [
            user("q"),
            asst(vec![tool_use("t1")]),
            att(Attachment::TokenUsage { used: 1, total: 2 }),
            results(&["t1"]),
            reminder("after the result"),
        ];
        let out = check(&messages);
        assert!(
            shape(&out.messages).starts_with("U: text(q) | A: use(t1) | U: result(t1) text("),
            "{}",
            shape(&out.messages)
        );
        assert!(out.report.is_empty(), "{}", out.report);
    }

    #[test]
    fn settling_the_end_repeats_until_stable() {
        let messages = [
            user("q"),
            asst(vec![
                thinking("t"),
                text("a"),
                thinking("u"),
                tool_use("t0"),
            ]),
            results(&["t0"]),
            // Replayed tool use: removed by the last pass, which leaves thinking at the end.
            asst(vec![
                thinking("v"),
                text("done "),
                thinking("w"),
                tool_use("t0"),
            ]),
        ];
        let out = check(&messages);
        assert_eq!(
            shape(&out.messages),
            "U: text(q) | A: thinking text(a) thinking use(t0) | U: result(t0) | \
             A: thinking text(done)"
        );
        let kinds: Vec<_> = out
            .report
            .repairs
            .iter()
            .map(|r| r.kind.to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "duplicate tool use removed (t0)",
                "trailing thinking block stripped",
                "trailing whitespace trimmed"
            ]
        );
    }
}
