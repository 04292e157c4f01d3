//! The normalizer's properties (ARCHITECTURE.md, `threadline-normalize`), over valid and hostile internal arrays
//! from `threadline_testkit::messages`:
//!
//! * (a) the output passes `validate` (for `claude-sonnet-4-5`, which accepts prefill) with no
//!   violation;
//! * (b) normalizing the output again (`to_internal`) gives the same output;
//! * (c) every typed user text of the input is in the output's user text, in order (defined
//!   in `common::typed_user_texts` and `common::check_texts_kept`);
//! * (d) every surviving `tool_use` has exactly one `tool_result`, first in the immediately
//!   following message (`common::check_pairing`);
//! * (e) normalizing twice gives byte-identical JSON;
//! * (f) an answer never edits what was sent before it: cut a session after a user message
//!   that an assistant answer follows, and the normalized cut (`cache_control` aside) is
//!   what the whole session's normalized messages start with, its last user message
//!   possibly extended by what follows when the answer goes (`check_prefix_kept`). The
//!   models that bind thinking to its prefix refuse a request that breaks it.
//!
//! The session operations' properties (fork, rewind) are in `properties/session_ops/mod.rs`.
//!
//! Shrunk failures are pasted below the properties as regression tests.

use crate::common;
#[path = "properties/session_ops/mod.rs"]
mod session_ops;

use common::{MODEL, check_pairing, check_texts_kept, check_valid_with_tools};
use proptest::prelude::*;
use threadline_message::Message;
use threadline_normalize::{Options, normalize, normalize_strict, to_internal};
use threadline_testkit::messages::{hostile_session, valid_session};

/// Every property on one input; the first that fails, with the output, as the error.
fn check_all(input: &[Message]) -> Result<(), String> {
    check_all_with(input, &Options::default(), None)
}

/// [`check_all`] with `options`, validating against a request that defines `tools`.
fn check_all_with(
    input: &[Message],
    options: &Options,
    tools: Option<Vec<threadline_wire::ToolDefinition>>,
) -> Result<(), String> {
    let once = normalize(input, options);
    let out = &once.messages;
    let json = serde_json::to_string(out).map_err(|e| e.to_string())?;
    let context = |what: &str, why: String| format!("({what}) {why}\noutput: {json}");

    if !out.is_empty() {
        check_valid_with_tools(out, MODEL, tools).map_err(|e| context("a: valid", e))?;
    }
    let again = normalize(&to_internal(out), options);
    if &again.messages != out {
        let again_json = serde_json::to_string(&again.messages).map_err(|e| e.to_string())?;
        return Err(context(
            "b: idempotent",
            format!("normalizing the output gives {again_json}"),
        ));
    }
    check_texts_kept(input, out).map_err(|e| context("c: typed text kept", e))?;
    check_pairing(out).map_err(|e| context("d: pairing", e))?;
    let twice =
        serde_json::to_string(&normalize(input, options).messages).map_err(|e| e.to_string())?;
    if twice != json {
        return Err(context("e: deterministic", format!("second run: {twice}")));
    }
    Ok(())
}

/// Every message of `messages` as JSON without `cache_control` (markers move freely).
fn without_markers(messages: &[threadline_wire::MessageParam]) -> Vec<serde_json::Value> {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    messages
        .iter()
        .map(|m| {
            let mut value = serde_json::to_value(m).unwrap_or_default();
            strip(&mut value);
            value
        })
        .collect()
}

/// Property (f) at every cut of `session` after a user message an assistant follows.
fn check_prefix_kept(session: &[Message], options: &Options) -> Result<(), String> {
    let whole = normalize(session, options);
    // The cap on images and documents per request omits the oldest once more arrive: an
    // edit of what was sent, made on purpose (Claude Code does the same), so a session that
    // goes over the cap is not an append-only one.
    if whole
        .report
        .repairs
        .iter()
        .any(|r| matches!(r.kind, threadline_normalize::RepairKind::MediaDropped))
    {
        return Ok(());
    }
    let whole = without_markers(&whole.messages);
    // A tombstone removes a message (already sent, or, in a hostile session, one that comes
    // after it): an edit, not an append.
    if session.iter().any(|m| matches!(m, Message::Tombstone(_))) {
        return Ok(());
    }
    for cut in 1..session.len() {
        // A new answer: not a fragment of a response already begun (fragments of one
        // response share its id, with tool results between them in Claude Code's
        // transcripts).
        let answered = matches!(session[cut - 1], Message::User(_))
            && matches!(&session[cut], Message::Assistant(a)
                if !session[..cut].iter().any(|m| matches!(m, Message::Assistant(b)
                    if b.api_message_id.is_some() && b.api_message_id == a.api_message_id)));
        if !answered {
            continue;
        }
        // An answer the normalizer drops whole (nothing in it the API accepts) binds
        // nothing: the next answer's cut checks what it leaves.
        let with_answer = normalize(&session[..=cut], options).messages;
        if with_answer
            .last()
            .is_none_or(|m| m.role != threadline_wire::Role::Assistant)
        {
            continue;
        }
        let sent = normalize(&session[..cut], options);
        // A tool result that had not come when the cut was sent was filled in as missing;
        // a hostile session's late result then replaces it, as it should.
        if sent.report.repairs.iter().any(|r| {
            matches!(
                r.kind,
                threadline_normalize::RepairKind::SyntheticToolResult { .. }
            )
        }) {
            continue;
        }
        let sent = without_markers(&sent.messages);
        let Some((last, before)) = sent.split_last() else {
            continue;
        };
        let kept = whole.len() >= sent.len()
            && whole[..before.len()] == *before
            && (whole[before.len()] == *last
                || whole[before.len()]["content"]
                    .as_array()
                    .zip(last["content"].as_array())
                    .is_some_and(|(grown, sent)| grown.starts_with(sent)));
        if !kept {
            return Err(format!(
                "cut at {cut}: sent {}\nwhole {}",
                serde_json::Value::from(sent.clone()),
                serde_json::Value::from(whole.clone())
            ));
        }
    }
    Ok(())
}

proptest! {
    // 512 cases each by default; `PROPTEST_CASES` searches longer.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn valid_sessions_normalize_to_valid_requests(session in valid_session()) {
        if let Err(problem) = check_all(&session) {
            prop_assert!(false, "{problem}");
        }
    }

    /// Valid sessions need conversions only, never a repair: strict mode accepts them and
    /// agrees with `normalize`.
    #[test]
    fn valid_sessions_need_no_repair(session in valid_session()) {
        let options = Options::default();
        match normalize_strict(&session, &options) {
            Ok(messages) => prop_assert_eq!(messages, normalize(&session, &options).messages),
            Err(error) => prop_assert!(false, "{error}"),
        }
    }

    #[test]
    fn an_answer_never_edits_what_was_sent_before_it(session in valid_session()) {
        if let Err(problem) = check_prefix_kept(&session, &Options::default()) {
            prop_assert!(false, "{problem}");
        }
    }

    #[test]
    fn an_answer_never_edits_what_was_sent_before_it_in_hostile_sessions(
        session in hostile_session()
    ) {
        if let Err(problem) = check_prefix_kept(&session, &Options::default()) {
            prop_assert!(false, "{problem}");
        }
    }

    #[test]
    fn hostile_sessions_normalize_to_valid_requests(session in hostile_session()) {
        if let Err(problem) = check_all(&session) {
            prop_assert!(false, "{problem}");
        }
    }

    /// Resuming paused turns keeps a final pending server tool call: the request is valid as
    /// long as it defines that server tool (as the query loop's requests do).
    #[test]
    fn hostile_sessions_resuming_paused_turns_normalize_to_valid_requests(
        session in hostile_session()
    ) {
        let options = Options::default().with_resume_paused_turn(true);
        if let Err(problem) = check_all_with(&session, &options, Some(vec![web_search()])) {
            prop_assert!(false, "{problem}");
        }
    }
}

/// The server tool the testkit's server tool uses call.
fn web_search() -> threadline_wire::ToolDefinition {
    serde_json::from_value(serde_json::json!({"type": "web_search_20250305", "name": "web_search"}))
        .expect("a server tool definition")
}

/// The hostile strategy reaches every repair the normalizer can make (so the properties above
/// are exercised on inputs that need each one).
#[test]
fn hostile_sessions_need_every_kind_of_repair() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeSet;

    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeSet::new();
    for _ in 0..1000 {
        let session = hostile_session()
            .new_tree(&mut runner)
            .expect("no filters")
            .current();
        for repair in normalize(&session, &Options::default()).report.repairs {
            let kind = format!("{:?}", repair.kind);
            let name: String = kind
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            seen.insert(name);
        }
    }
    let expected = [
        "SyntheticToolResult",
        "OrphanToolResultRemoved",
        "DuplicateToolUseRemoved",
        "DuplicateToolResultRemoved",
        "ServerToolUseRemoved",
        "OrphanServerToolResultRemoved",
        "ToolResultMovedFirst",
        "MisplacedBlockRemoved",
        "ToolUseIdRewritten",
        "DuplicateMessageRemoved",
        "EmptyTextRemoved",
        "PlaceholderInserted",
        "EmptyAssistantDropped",
        "OrphanThinkingDropped",
        "MisplacedThinkingDropped",
        "UnsignedThinkingDropped",
        "TrailingThinkingStripped",
        "TrailingWhitespaceTrimmed",
        "ImageStrippedFromErrorResult",
        "MediaDropped",
    ];
    let missing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|k| !seen.contains(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "never needed: {missing:?} (seen {seen:?})"
    );
}
