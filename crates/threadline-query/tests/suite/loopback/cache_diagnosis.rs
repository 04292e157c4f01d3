//! Cache diagnostics (beta `cache-diagnosis-2026-04-07`) over loopback HTTP: the loop threads
//! `previous_message_id` (`null` first), the mock computes `diagnostics` from what it received,
//! and each `Event::CacheDiagnosis` compares it with `threadline-cache`'s own break detection
//! (`RequestDivergence`). Every request is checked as in [`super::check`], with the beta
//! header the body names.

use std::sync::atomic::{AtomicUsize, Ordering};

use threadline_cache::breaks::RequestDivergence;
use threadline_message::SystemKind;
use threadline_query::{Agreement, CacheDiagnosisReport, Prediction};
use threadline_validate::ValidateOptions;
use threadline_wire::betas::CACHE_DIAGNOSIS;
use threadline_wire::diagnostics::{CacheDiagnosis, CacheMissReason, PromptPart};

use super::*;

/// `threadline-cache`'s detection, at the level the API reports.
fn detector() -> impl threadline_query::BreakDetector {
    let mut along = RequestDivergence::new();
    move |request: &MessagesRequest| match along.observe(request) {
        None => Prediction::Unknown,
        Some(None) => Prediction::NoDivergence,
        Some(Some(found)) => found
            .cause
            .prompt_part()
            .map_or(Prediction::NoDivergence, Prediction::Changed),
    }
}

/// The loop with diagnostics asked for and the detector plugged in.
fn diagnosed(t: &Setup) -> Query<Client> {
    t.query(0, config().with_cache_diagnostics())
        .with_break_detector(detector())
}

fn reports(out: &Outcome) -> Vec<CacheDiagnosisReport> {
    out.events
        .iter()
        .filter_map(|e| match e {
            Event::CacheDiagnosis(report) => Some(report.clone()),
            _ => None,
        })
        .collect()
}

/// The transcript's `cache_diagnosis` records: (diagnostics, predicted, agreement).
fn records(out: &Outcome) -> Vec<(Value, Option<String>, String)> {
    out.state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System(s) => match &s.kind {
                SystemKind::CacheDiagnosis {
                    diagnostics,
                    predicted,
                    agreement,
                    ..
                } => Some((diagnostics.clone(), predicted.clone(), agreement.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// [`super::check`] for requests that carry the diagnostics beta: the statuses, each body
/// validated with the options of its `anthropic-beta` header (which must name exactly the
/// diagnostics beta), prefix stability except across `changed_before`, a valid history.
/// Returns each request's `diagnostics`.
fn check_diagnosed(
    t: &Setup,
    out: &Outcome,
    statuses: &[Option<u16>],
    changed_before: &[usize],
) -> Vec<Value> {
    let recorded = t.mock.requests();
    let answered: Vec<Option<u16>> = recorded.iter().map(|r| r.status).collect();
    assert_eq!(answered, statuses, "the statuses the mock answered");
    let mut bodies = Vec::new();
    for request in &recorded {
        let header = request.headers.get("anthropic-beta").map(String::as_str);
        assert_eq!(header, Some(CACHE_DIAGNOSIS), "the body names the beta");
        let body = request.body.clone().expect("a JSON body");
        let parsed: MessagesRequest = serde_json::from_value(body.clone()).expect("a request");
        let model = ModelTable::builtin().resolve(&parsed.model);
        let options = ValidateOptions::default().with_beta_header(CACHE_DIAGNOSIS);
        let violations = threadline_validate::validate_with(&parsed, model.model(), &options);
        assert!(violations.is_empty(), "invalid request: {violations:?}");
        bodies.push(body);
    }
    assert_prefix_stable(&bodies, changed_before);
    assert_history_valid(out.state.visible(), &t.tools);
    bodies.iter().map(|b| b["diagnostics"].clone()).collect()
}

/// The ids of the responses, in order (from the assistant records).
fn response_ids(out: &Outcome) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for m in &out.state.messages {
        if let Message::Assistant(a) = m
            && let Some(id) = &a.api_message_id
            && ids.last() != Some(id)
        {
            ids.push(id.clone());
        }
    }
    ids
}

#[tokio::test(flavor = "current_thread")]
async fn a_system_prompt_change_is_diagnosed_by_the_api_and_by_threadline_alike() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::message(vec![tool_use("toolu_2", "read", sleep_input(1))]),
        Step::text("Done."),
    ])
    .await;
    // The date in the system prompt changes before the third request (midnight passed).
    let requests = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&requests);
    let shaper = move |request: &mut MessagesRequest| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        let date = if n < 2 { "2026-12-01" } else { "2026-12-02" };
        request.system = Some(threadline_wire::SystemPrompt::Text(format!(
            "You are a loopback test. Today is {date}."
        )));
    };
    let out = run(diagnosed(&t).with_shaper(shaper)).await;
    assert_eq!(out.path(), [Transition::NextTurn, Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    let sent = check_diagnosed(&t, &out, &[Some(200); 3], &[2]);
    let ids = response_ids(&out);
    assert_eq!(ids.len(), 3);
    assert_eq!(
        sent,
        [
            json!({"previous_message_id": null}),
            json!({"previous_message_id": ids[0]}),
            json!({"previous_message_id": ids[1]}),
        ]
    );
    let reports = reports(&out);
    assert_eq!(reports.len(), 3);
    assert_eq!(reports[0].reason, CacheDiagnosis::NoDivergence);
    assert_eq!(reports[0].predicted, Prediction::Unknown);
    assert_eq!(reports[0].agreement, Agreement::Inconclusive);
    assert_eq!(reports[1].reason, CacheDiagnosis::NoDivergence);
    assert_eq!(reports[1].agreement, Agreement::Agrees);
    // The change: the mock says `system_changed`, threadline says system, and they agree.
    let Some(reason) = reports[2].miss_reason() else {
        panic!("a reason: {:?}", reports[2]);
    };
    assert!(
        matches!(reason, CacheMissReason::SystemChanged(_)),
        "{reason:?}"
    );
    assert!(reason.missed_input_tokens().is_some_and(|n| n > 0));
    assert_eq!(
        reports[2].predicted,
        Prediction::Changed(PromptPart::System)
    );
    assert_eq!(reports[2].agreement, Agreement::Agrees);
    assert!(reports.iter().all(CacheDiagnosisReport::agrees));
    // The transcript records the same, after each response.
    let recorded = records(&out);
    assert_eq!(recorded.len(), 3);
    assert_eq!(recorded[2].0["cache_miss_reason"]["type"], "system_changed");
    assert_eq!(recorded[2].1.as_deref(), Some("system"));
    assert_eq!(recorded[2].2, "agrees");
    assert_eq!(recorded[0].1, None);
    assert_eq!(recorded[1].1.as_deref(), Some("none"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_reason_threadline_did_not_predict_is_reported_as_a_disagreement() {
    // The mock claims the tools changed while nothing did.
    let forced =
        json!({"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 900}});
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::text("Done.").with_diagnostics(forced.clone()),
    ])
    .await;
    let out = run(diagnosed(&t)).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    check_diagnosed(&t, &out, &[Some(200); 2], &[]);
    let reports = reports(&out);
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[1].predicted, Prediction::NoDivergence);
    assert_eq!(
        reports[1].reason,
        CacheDiagnosis::Miss(CacheMissReason::changed("tools_changed", Some(900)))
    );
    assert_eq!(reports[1].agreement, Agreement::Disagrees);
    assert!(!reports[1].agrees());
    let recorded = records(&out);
    assert_eq!(
        recorded[1],
        (forced, Some("none".to_owned()), "disagrees".to_owned())
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_append_only_session_is_never_diagnosed_across_runs() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::message(vec![tool_use("toolu_2", "write", sleep_input(1))]),
        Step::text("Done."),
        Step::text("Again."),
    ])
    .await;
    let out = run(diagnosed(&t)).await;
    assert_eq!(out.path(), [Transition::NextTurn, Transition::NextTurn]);
    let first_run = response_ids(&out);
    assert_eq!(out.state.previous_message_id.as_ref(), first_run.last());
    // A second run of the same session, from the journaled state: it goes on from the last
    // response's id (the detector is new: nothing to compare with, so inconclusive).
    let json = serde_json::to_string(&out.state).expect("the state serializes");
    let state: State = serde_json::from_str(&json).expect("and loads");
    let second = diagnosed(&t).run(state, vec![Message::user_text("Once more.")]);
    let mut events: Vec<Event> = tokio::time::timeout(RUN_TIMEOUT, second.collect())
        .await
        .expect("the run ends in time");
    let Some(Event::Finished(finished)) = events.pop() else {
        panic!("the last event is Finished");
    };
    assert_eq!(finished.terminal, Terminal::Completed);
    let out2 = Outcome {
        events,
        terminal: finished.terminal,
        state: finished.state,
    };
    let sent = check_diagnosed(&t, &out2, &[Some(200); 4], &[]);
    assert_eq!(sent[0], json!({"previous_message_id": null}));
    assert_eq!(sent[3], json!({"previous_message_id": first_run[2]}));
    // `null` on every turn: nothing but appends.
    let all: Vec<CacheDiagnosisReport> = reports(&out).into_iter().chain(reports(&out2)).collect();
    assert_eq!(all.len(), 4);
    assert!(
        all.iter().all(|r| r.reason == CacheDiagnosis::NoDivergence),
        "{all:?}"
    );
    let agreements: Vec<Agreement> = all.iter().map(|r| r.agreement).collect();
    assert_eq!(
        agreements,
        [
            Agreement::Inconclusive,
            Agreement::Agrees,
            Agreement::Agrees,
            Agreement::Inconclusive
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_option_no_request_asks_and_nothing_is_reported() {
    let t = setup([Step::text("Done.")]).await;
    let out = run(t.query(0, config()).with_break_detector(detector())).await;
    t.check(&out, &[Some(200)], &[]);
    assert!(reports(&out).is_empty());
    assert!(records(&out).is_empty());
    assert!(t.bodies()[0].get("diagnostics").is_none());
    assert_eq!(out.state.previous_message_id, None);
}
