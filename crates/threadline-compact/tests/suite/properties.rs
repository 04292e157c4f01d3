//! Properties of every layer over arbitrary sessions, valid and hostile
//! (`threadline_testkit::messages`):
//!
//! * after the layer, the array normalizes to a request that passes `validate`;
//! * the latest typed prompt is kept verbatim;
//! * no tool pair and no fragment group is split;
//! * running the layer again changes nothing more (budget, snip, microcompact) — for
//!   autocompact, the result no longer triggers autocompact;
//! * autocompact and reactive compact: the result's estimate is under the limit, it is
//!   smaller than the input, the same input gives the same bytes, and assistant messages
//!   (thinking blocks included) are never modified.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{
    check_no_split, check_prompt_kept, check_valid, epoch, last_thinking, model, request_for,
};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::json as j;
use threadline_compact::budget::{BudgetOptions, MemoryStore, apply_budget};
use threadline_compact::estimate::{
    estimate_context, estimate_context_from, estimate_messages, message_tokens, reported_input,
    trusted_usage_start,
};
use threadline_compact::reattach::ReattachOptions;
use threadline_compact::tail::plan_tail;
use threadline_compact::units::since_last_boundary;
use threadline_compact::{
    AutocompactError, AutocompactOptions, CircuitBreaker, CompactContext, HistoryOnly,
    MicrocompactOptions, ScriptedSummarizer, TailOptions, clear_old_tool_results,
    microcompact_time_based, overhead_of, should_autocompact, snip, snip_oldest,
};
use threadline_compact::{ReactiveError, ReactiveGuard, reactive_compact};
use threadline_message::tool_result_block;
use threadline_message::{CompactTrigger, Message, MessageId};
use threadline_testkit::messages::{
    SessionBuilder, any_session, hostile_session, text, tool_use, valid_session,
};
use threadline_wire::ApiErrorResponse;
use threadline_wire::api_error::ApiErrorType;
use threadline_wire::service::ServiceError;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

fn check_common(input: &[Message], output: &[Message]) -> Result<(), String> {
    check_valid(output)?;
    check_prompt_kept(input, output)?;
    check_no_split(input, output)
}

fn json(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap_or_default()
}

// ---- budget ----

fn tight_budget() -> BudgetOptions {
    BudgetOptions {
        default_limit: 40,
        per_message_limit: 120,
        preview_bytes: 16,
        ..BudgetOptions::default()
    }
}

fn check_budget(session: &[Message]) -> Result<(), String> {
    let mut output = session.to_vec();
    let mut store = MemoryStore::default();
    let report = apply_budget(&mut output, &tight_budget(), &mut store);
    check_common(session, &output)?;
    // Everything up to the last assistant message is untouched (frozen decisions).
    let fresh_from = session
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
        .map_or(0, |i| i + 1);
    if session[..fresh_from] != output[..fresh_from] {
        return Err("a result the model had seen was changed".into());
    }
    if let Some(lost) = report
        .persisted
        .iter()
        .find(|p| !store.files.contains_key(&p.path))
    {
        return Err(format!("{} was replaced but not stored", lost.tool_use_id));
    }
    let mut again = output.clone();
    let second = apply_budget(&mut again, &tight_budget(), &mut MemoryStore::default());
    if !second.persisted.is_empty() || again != output {
        return Err(format!("not idempotent: {:?}", second.persisted));
    }
    Ok(())
}

// ---- snip ----

fn check_snip(session: &[Message], picks: &[Index]) -> Result<(), String> {
    if session.is_empty() {
        return Ok(());
    }
    let selection: BTreeSet<MessageId> = picks
        .iter()
        .map(|i| session[i.index(session.len())].id().clone())
        .collect();
    let snipped = snip(session, &selection);
    check_common(session, &snipped.messages)?;
    let marker = usize::from(!snipped.removed.is_empty());
    if snipped.messages.len() + snipped.removed.len() != session.len() + marker {
        return Err("messages appeared or vanished".into());
    }
    let again = snip(&snipped.messages, &selection);
    if again.messages != snipped.messages {
        return Err("snipping the same selection twice removed more".into());
    }
    Ok(())
}

fn check_snip_oldest(session: &[Message]) -> Result<(), String> {
    let target = estimate_context(session, 0) / 2;
    let snipped = snip_oldest(session, target, 0);
    check_common(session, &snipped.messages)?;
    let again = snip_oldest(&snipped.messages, target, 0);
    let reached = estimate_context(&snipped.messages, 0) <= target;
    if reached && again.messages != snipped.messages {
        return Err("a second snip to the same target removed more".into());
    }
    Ok(())
}

// ---- microcompact ----

fn check_microcompact(session: &[Message], keep: usize) -> Result<(), String> {
    let options = MicrocompactOptions {
        keep_recent: keep,
        ..MicrocompactOptions::default()
    };
    let Some(out) = clear_old_tool_results(session, &options, epoch()) else {
        return Ok(());
    };
    check_common(session, &out.messages)?;
    // Only tool results change: every assistant message is as it was.
    let assistants = |h: &[Message]| -> Vec<Message> {
        h.iter()
            .filter(|m| matches!(m, Message::Assistant(_)))
            .cloned()
            .collect()
    };
    if assistants(session) != assistants(&out.messages) {
        return Err("an assistant message was modified".into());
    }
    if estimate_messages(&out.messages) > estimate_messages(session) {
        return Err("microcompact made the context larger".into());
    }
    if clear_old_tool_results(&out.messages, &options, epoch()).is_some() {
        return Err("a second microcompact cleared more".into());
    }
    Ok(())
}

// ---- autocompact ----

fn small_options() -> AutocompactOptions {
    AutocompactOptions {
        tail: TailOptions {
            min_tokens: 100,
            min_text_messages: 2,
            max_tokens: 400,
        },
        reattach: ReattachOptions {
            max_files: 2,
            file_tokens: 50,
            total_tokens: 100,
        },
        ..AutocompactOptions::default()
    }
}

/// The estimate of what autocompact must keep whatever the limit: the summary, the restated
/// prompt and the tail.
fn mandatory_tokens(session: &[Message], options: &AutocompactOptions, summary: &str) -> u64 {
    let visible = since_last_boundary(session);
    let plan = plan_tail(visible, &options.tail);
    let summary = Message::compact_summary(threadline_compact::summarizer::summary_message_text(
        summary,
    ));
    estimate_messages(&[summary])
        + estimate_messages(&visible[plan.restated_prompt])
        + estimate_messages(&visible[plan.start..])
}

const SUMMARY: &str = "The user asked for changes to the parser; they are in progress.";

/// Autocompact, or reactive compact after a prompt-too-long error whose counts put the
/// corrected limit at the same place (three quarters of the estimate).
fn run_layer(
    session: &[Message],
    context: &CompactContext<'_>,
    options: &AutocompactOptions,
    reactive: bool,
) -> Result<threadline_compact::Compacted, AutocompactError> {
    let summarizer = ScriptedSummarizer::new([Ok(format!("<summary>{SUMMARY}</summary>"))]);
    let mut breaker = CircuitBreaker::new();
    if !reactive {
        return futures::executor::block_on(threadline_compact::autocompact(
            session,
            &summarizer,
            context,
            options,
            &mut breaker,
        ));
    }
    // The API counted a third more than the estimate, against a maximum equal to the
    // estimate: the corrected limit is 3/4 of the estimate, as for autocompact.
    let pre = estimate_context(session, overhead_of(context.base));
    let (actual, maximum) = (pre + pre / 4, pre);
    let error = ServiceError::from_api_response(
        400,
        ApiErrorResponse::new(
            ApiErrorType::InvalidRequest,
            format!("prompt is too long: {actual} tokens > {maximum} maximum"),
        ),
        None,
    );
    let unlimited = CompactContext {
        limit: u64::MAX,
        ..*context
    };
    match futures::executor::block_on(reactive_compact(
        session,
        &error,
        &summarizer,
        &unlimited,
        options,
        &mut breaker,
        &mut ReactiveGuard::new(),
    )) {
        Ok(compacted) => Ok(compacted),
        Err(ReactiveError::Compaction(e)) => Err(e),
        Err(other) => Err(AutocompactError::Summarize(
            threadline_compact::SummarizeError::Failed {
                message: other.to_string(),
            },
        )),
    }
}

/// `Ok(true)` when it compacted, `Ok(false)` on a justified refusal.
fn check_autocompact(session: &[Message]) -> Result<bool, String> {
    check_compaction(session, false)
}

fn check_compaction(session: &[Message], reactive: bool) -> Result<bool, String> {
    check_compaction_for(session, reactive, model())
}

/// The model the binding properties compact for (it binds thinking to its prefix).
const BINDING_MODEL: &str = "claude-opus-5-5";

fn check_compaction_for(
    session: &[Message],
    reactive: bool,
    compacting_for: &threadline_wire::model::Model,
) -> Result<bool, String> {
    let binds = threadline_compact::binding::binds_thinking(compacting_for);
    let base = request_for(session);
    let overhead = overhead_of(&base);
    let pre = estimate_context(session, overhead);
    let limit = pre - pre / 4;
    let options = small_options();
    let context = CompactContext {
        model: compacting_for,
        base: &base,
        limit,
        now: epoch(),
        trigger: CompactTrigger::Auto,
        files: &HistoryOnly,
    };
    let compacted = match run_layer(session, &context, &options, reactive) {
        Ok(c) => c,
        Err(AutocompactError::NothingToCompact) => {
            let plan = plan_tail(since_last_boundary(session), &options.tail);
            return if plan.start == 0 {
                Ok(false)
            } else {
                Err("NothingToCompact with a tail that leaves something".into())
            };
        }
        Err(
            e @ (AutocompactError::StillTooLarge { .. }
            | AutocompactError::NotShrinking { .. }
            | AutocompactError::KeptTooLarge { .. }),
        ) => {
            let mandatory = overhead + mandatory_tokens(session, &options, SUMMARY);
            return if mandatory >= limit - limit / 10 {
                Ok(false)
            } else {
                Err(format!(
                    "{e}, yet what must be kept is only {mandatory} tokens (limit {limit})"
                ))
            };
        }
        Err(e) => return Err(format!("unexpected error: {e}")),
    };
    let output = &compacted.messages;
    check_common(session, output)?;
    if compacted.post_tokens >= limit {
        return Err(format!("post {} >= limit {limit}", compacted.post_tokens));
    }
    if compacted.post_tokens >= compacted.pre_tokens {
        return Err("compaction grew the context".into());
    }
    let after_base = request_for(output);
    if should_autocompact(output, &after_base, limit) {
        return Err("the result still triggers autocompact".into());
    }
    // Assistant messages are copied, never modified — on a binding model, copied without
    // their thinking, and no thinking block at all reaches the API after the new summary
    // (each was bound to a prefix the summary replaced).
    for m in output {
        let Message::Assistant(a) = m else { continue };
        if !binds {
            if !session.contains(m) {
                return Err(format!("assistant message {} was modified", m.id()));
            }
            continue;
        }
        let original = session
            .iter()
            .map(threadline_compact::binding::without_thinking)
            .any(|o| &o == m);
        if !original {
            return Err(format!(
                "assistant message {} was changed beyond its thinking",
                m.id()
            ));
        }
        if a.content
            .iter()
            .any(threadline_wire::ContentBlock::is_thinking)
        {
            return Err(format!(
                "assistant message {} kept a bound thinking block",
                m.id()
            ));
        }
    }
    if binds {
        // The rest of the checks are about the tail's thinking, which is gone by design.
        let again = run_layer(session, &context, &options, reactive).map_err(|e| e.to_string())?;
        if json(&again.messages) != json(output) {
            return Err("two runs gave different bytes".into());
        }
        return Ok(true);
    }
    // The latest assistant message (as the request sees it: a retracted one is not sent),
    // when kept, reaches the API with the same thinking.
    let retracted: Vec<&threadline_message::MessageId> = session
        .iter()
        .filter_map(|m| match m {
            Message::Tombstone(t) => Some(&t.retracts),
            _ => None,
        })
        .collect();
    let last_assistant = since_last_boundary(session).iter().rev().find(|m| {
        matches!(m, Message::Assistant(a) if !a.is_api_error) && !retracted.contains(&m.id())
    });
    // (When the input needed repairs, normalization may have dropped misplaced thinking the
    // compacted array no longer misplaces; every block sent must still be an original one.)
    let needed_repairs =
        !threadline_normalize::normalize(since_last_boundary(session), &Default::default())
            .report
            .repairs
            .is_empty();
    if let Some(last) = last_assistant
        && output.contains(last)
    {
        let (before, after) = (last_thinking(session), last_thinking(output));
        let originals: Vec<&threadline_wire::ContentBlock> = session
            .iter()
            .filter_map(|m| match m {
                Message::Assistant(a) => Some(a.content.iter()),
                _ => None,
            })
            .flatten()
            .collect();
        let all_original = after.iter().flatten().all(|b| originals.contains(&b));
        if !all_original || (!needed_repairs && before != after) {
            return Err("the latest assistant message's thinking changed".into());
        }
    }
    // Deterministic: the same input gives the same bytes.
    let again = run_layer(session, &context, &options, reactive).map_err(|e| e.to_string())?;
    if json(&again.messages) != json(output) {
        return Err("two runs gave different bytes".into());
    }
    Ok(true)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn budget_keeps_requests_valid(session in any_session()) {
        if let Err(problem) = check_budget(&session) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }

    #[test]
    fn snip_keeps_requests_valid(
        session in any_session(),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        if let Err(problem) = check_snip(&session, &picks) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }

    #[test]
    fn snip_oldest_keeps_requests_valid(session in any_session()) {
        if let Err(problem) = check_snip_oldest(&session) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }

    #[test]
    fn microcompact_keeps_requests_valid(session in any_session(), keep in 0usize..7) {
        if let Err(problem) = check_microcompact(&session, keep) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }

    #[test]
    fn time_based_microcompact_waits_for_the_cache(session in valid_session()) {
        // Generated timestamps are on 2026-01-01; a minute after the last assistant message
        // the five-minute cache is warm, the next day it is not.
        let options = MicrocompactOptions { keep_recent: 0, ..MicrocompactOptions::default() };
        let last_assistant = session.iter().rev().find_map(|m| match m {
            Message::Assistant(a) => a.header.timestamp.to_system_time(),
            _ => None,
        });
        if let Some(at) = last_assistant {
            let warm = at + Duration::from_secs(60);
            prop_assert!(microcompact_time_based(&session, &options, warm).is_none());
            let cold = at + Duration::from_secs(24 * 3600);
            prop_assert_eq!(
                microcompact_time_based(&session, &options, cold).map(|m| m.messages),
                clear_old_tool_results(&session, &options, cold).map(|m| m.messages)
            );
        }
    }

    #[test]
    fn autocompact_for_a_binding_model_carries_no_bound_thinking(session in any_session()) {
        let binding = threadline_wire::model::ModelTable::builtin().resolve(BINDING_MODEL).model();
        if let Err(problem) = check_compaction_for(&session, false, binding) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }

    #[test]
    fn reactive_compact_for_a_binding_model_carries_no_bound_thinking(session in any_session()) {
        let binding = threadline_wire::model::ModelTable::builtin().resolve(BINDING_MODEL).model();
        if let Err(problem) = check_compaction_for(&session, true, binding) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }

    #[test]
    fn reactive_compact_keeps_requests_valid_and_under_the_corrected_limit(session in any_session()) {
        if let Err(problem) = check_compaction(&session, true) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }

    #[test]
    fn the_estimate_from_the_end_equals_its_definition(
        session in any_session(),
        usages in prop::collection::vec(prop::option::of(0u64..300_000), 1..8),
        errors in prop::collection::vec(any::<bool>(), 1..5),
        carried in prop::option::of(any::<Index>()),
        overhead in 0u64..50_000,
    ) {
        let history = with_usage_and_carried(session, &usages, &errors, carried);
        let start = history.len() - since_last_boundary(&history).len();
        let expected = estimate_by_definition(&history, overhead);
        prop_assert_eq!(estimate_context_from(&history, start, overhead), expected);
        prop_assert_eq!(estimate_context(&history, overhead), expected);
    }

    #[test]
    fn autocompact_keeps_requests_valid_and_under_the_limit(session in any_session()) {
        if let Err(problem) = check_autocompact(&session) {
            prop_assert!(false, "{problem}\ninput: {}", json(&session));
        }
    }
}

/// `session` with usage on its assistant messages (`usages`, cycled: `None` leaves one
/// without), some marked as API errors (`errors`, cycled), and, with `carried`, the last
/// compaction boundary's `last_message_id` naming a message after it (a carried-over tail).
fn with_usage_and_carried(
    mut session: Vec<Message>,
    usages: &[Option<u64>],
    errors: &[bool],
    carried: Option<Index>,
) -> Vec<Message> {
    let mut k = 0usize;
    for message in &mut session {
        if let Message::Assistant(a) = message {
            a.usage = usages[k % usages.len()].map(|input| {
                Box::new(
                    serde_json::from_value(j!({"input_tokens": input, "output_tokens": 7}))
                        .expect("a usage"),
                )
            });
            a.is_api_error = errors[k % errors.len()];
            k += 1;
        }
    }
    let boundary = session
        .iter()
        .rposition(threadline_compact::units::is_compact_boundary);
    if let (Some(b), Some(pick)) = (boundary, carried)
        && b + 1 < session.len()
    {
        let id = session[b + 1 + pick.index(session.len() - b - 1)]
            .id()
            .clone();
        if let Message::System(s) = &mut session[b]
            && let threadline_message::SystemKind::CompactBoundary {
                last_message_id, ..
            } = &mut s.kind
        {
            *last_message_id = Some(id);
        }
    }
    session
}

/// The context estimate as `estimate_context` documents it: the last usage in the visible
/// history at or after [`trusted_usage_start`], plus the estimate of every message after it
/// (fragments of that response excluded); with none, `overhead` plus every visible message.
fn estimate_by_definition(history: &[Message], overhead: u64) -> u64 {
    let visible = since_last_boundary(history);
    let trusted_from = trusted_usage_start(history, visible);
    let anchor = visible
        .iter()
        .enumerate()
        .skip(trusted_from)
        .rev()
        .find_map(|(i, m)| match m {
            Message::Assistant(a) if !a.is_api_error => a.usage.as_ref().and_then(|u| {
                let total = reported_input(u)?.saturating_add(u.output_tokens.unwrap_or(0));
                Some((i, total, a.api_message_id.clone()))
            }),
            _ => None,
        });
    match anchor {
        Some((i, reported, api_id)) => reported.saturating_add(
            visible[i + 1..]
                .iter()
                .filter(|m| {
                    !matches!(m, Message::Assistant(a)
                        if api_id.is_some() && a.api_message_id == api_id)
                })
                .map(message_tokens)
                .sum::<u64>(),
        ),
        None => overhead.saturating_add(estimate_messages(visible)),
    }
}

/// The autocompact property is not vacuous: most generated sessions do compact.
#[test]
fn most_sessions_compact() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    for (name, strategy) in [
        ("valid", valid_session().boxed()),
        ("hostile", hostile_session().boxed()),
    ] {
        let mut runner = TestRunner::deterministic();
        let mut compacted = 0;
        let n = 200;
        for _ in 0..n {
            let session = strategy.new_tree(&mut runner).expect("a session").current();
            if check_autocompact(&session).expect("the property holds") {
                compacted += 1;
            }
        }
        assert!(
            compacted * 2 > n,
            "{name}: only {compacted} of {n} sessions compacted"
        );
    }
}

// ---- regressions: the shapes of shrunk failures met while building the layers ----

/// A resumed session repeats a tool result (same id): the duplicate must stay tied to the
/// use, or snip removes the pair and leaves the copy.
#[test]
fn regression_a_duplicated_result_stays_with_its_use() {
    let mut b = SessionBuilder::new();
    b.user("a");
    let msg = b.response_id();
    let the_use = b.assistant(&msg, vec![tool_use("toolu_1", "Bash", j!({}))]);
    let result = tool_result_block("toolu_1", "out".into(), false);
    b.tool_results(vec![result]);
    let copy = b.messages().last().cloned().expect("the result");
    b.push_as_is(copy);
    let msg = b.response_id();
    b.assistant(&msg, vec![text("done")]);
    b.user("next");
    let session = b.into_messages();
    // Selecting the tool use takes the result and its copy along.
    let snipped = snip(&session, &BTreeSet::from([the_use]));
    assert_eq!(snipped.removed.len(), 3, "{:?}", snipped.removed);
    check_common(&session, &snipped.messages).expect("no split");
    check_snip_oldest(&session).expect("no split");
}

/// Results recorded before their tool use (a damaged session): every message naming the id
/// is one unit, so the tail cannot start between them.
#[test]
fn regression_a_result_before_its_use_is_not_split() {
    let mut b = SessionBuilder::new();
    b.user("a");
    b.tool_results(vec![tool_result_block("toolu_1", "early".into(), false)]);
    let msg = b.response_id();
    b.assistant(&msg, vec![tool_use("toolu_1", "Bash", j!({}))]);
    let msg = b.response_id();
    b.assistant(&msg, vec![text("done")]);
    let session = b.into_messages();
    check_autocompact(&session).expect("the property holds");
    check_snip_oldest(&session).expect("the property holds");
}

/// A result smaller than the placeholder is left alone: clearing it would grow the context.
#[test]
fn regression_tiny_results_are_not_cleared() {
    let mut b = SessionBuilder::new();
    b.user("a");
    for i in 0..3 {
        let id = format!("toolu_{i}");
        let msg = b.response_id();
        b.assistant(&msg, vec![tool_use(&id, "Bash", j!({}))]);
        b.tool_results(vec![tool_result_block(&id, "0".into(), false)]);
    }
    let session = b.into_messages();
    check_microcompact(&session, 0).expect("the property holds");
    assert!(
        clear_old_tool_results(
            &session,
            &MicrocompactOptions {
                keep_recent: 0,
                ..MicrocompactOptions::default()
            },
            epoch()
        )
        .is_none()
    );
}
