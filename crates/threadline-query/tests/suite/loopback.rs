//! The loop over real loopback HTTP: `Query<threadline_client::Client>` against a
//! `threadline_mock::MockServer` playing a scenario, with `threadline-cache`'s `Planner` as the
//! cache planner (so the `cache_control` markers are real). One test per [`Transition`] and per
//! [`Terminal`] variant; each asserts the exact transition path and terminal (never message
//! text), then [`check`]s what the mock received:
//!
//! * the exact sequence of statuses the mock answered, so no unscripted 400 (the mock answers
//!   400 to a request `validate` rejects) and no other surprise slipped through;
//! * (a) every recorded body passes `threadline_validate::validate` again, here;
//! * (b) [`assert_prefix_stable`]: for consecutive requests N, N+1 with no compaction between
//!   them, everything up to and including N's last `cache_control` marker is byte-identical
//!   in N+1;
//! * the history left behind normalizes to a valid request.
//!
//! | Variant                                   | Test                                                  |
//! |-------------------------------------------|-------------------------------------------------------|
//! | `Transition::NextTurn`                    | `next_turn_over_a_slow_stream`                        |
//! | `Transition::CollapseDrainRetry`          | `collapse_drain_retry_after_prompt_too_long`          |
//! | `Transition::ReactiveCompactRetry`        | `reactive_compact_retry_after_prompt_too_long`        |
//! | `Transition::MaxOutputTokensEscalate`     | `max_output_tokens_escalate`                          |
//! | `Transition::MaxOutputTokensRecovery`     | `max_output_tokens_recovery_until_the_loop_gives_up`  |
//! | `Transition::StopHookBlocking`            | `stop_hook_blocking` (hook set locally)               |
//! | `Transition::TokenBudgetContinuation`     | `token_budget_continuation`                           |
//! | `Transition::ContextWindowCompact`        | `context_window_compact_after_model_context_window_exceeded` |
//! | `Transition::ContextWindowRecovery`       | `context_window_recovery_after_model_context_window_exceeded`, `context_window_recoveries_are_bounded` |
//! | `Transition::PauseTurnResume`             | `pause_turn_resume` (and the recorded pause: `pause_turn_resume_matches_the_recorded_continuation`) |
//! | `Terminal::Completed`                     | `completed_after_the_client_retried_429_529_500_and_a_reset` (and most others) |
//! | `Terminal::MaxTurns`                      | `max_turns`                                           |
//! | `Terminal::AbortedStreaming`              | `aborted_streaming_during_a_stalled_stream`           |
//! | `Terminal::AbortedTools`                  | `aborted_tools`                                       |
//! | `Terminal::PromptTooLong`                 | `prompt_too_long_when_nothing_helps`                  |
//! | `Terminal::ModelError`                    | `model_error_after_retries_are_exhausted`, `model_error_from_a_mid_stream_error_event`, `model_error_when_the_stream_is_cut_inside_a_tool_input`, `model_error_after_tool_uses_were_streamed`, `model_error_when_a_stalled_stream_hits_the_idle_timeout` |
//! | `Terminal::BlockingLimit`                 | `blocking_limit_after_a_turn` (policy set locally)    |
//! | `Terminal::Refused`                       | `refused_with_category_and_explanation`, `refused_after_a_tool_turn`, `a_refusal_after_partial_output_is_never_sent_back` |
//! | `Terminal::ContextWindowExceeded`         | `context_window_recoveries_are_bounded`               |
//! | (a server-side `fallback` block)          | `a_fallback_block_is_sent_back_in_place`              |
//! | (mid-conversation tool changes)           | `tool_changes::*` (`loopback/tool_changes.rs`)        |
//! | `Transition::ServerCompactionPause`       | `server_compaction::a_paused_compaction_continues_the_turn` (and the trigger crossed twice: `server_compaction::the_trigger_is_crossed_twice_and_the_session_finishes`) |
//! | `Transition::ThinkingDropBlockRetry`      | the facade's `agent::binding::a_thinking_block_bound_elsewhere_is_retried_with_drop_block_as_a_last_resort` (a binding model over the binding-enforcing mock) |
//! | `Terminal::HookStopped`                   | `hook_stopped`, `hook_stopped_after_too_many_blocks`  |
//! | (tool search, deferred tools)             | `tool_search::three_hundred_deferred_tools_the_model_searches_finds_and_calls_one`, `tool_search::a_search_beside_a_client_tool_is_answered_at_the_start_of_the_next_response` |
//! | (cache diagnostics: `Event::CacheDiagnosis`) | `cache_diagnosis::*` (`loopback/cache_diagnosis.rs`) |
//!
//! The tests run on the real clock (real sockets), each bounded by [`RUN_TIMEOUT`]; the
//! client retries with millisecond backoffs.

#[path = "loopback/cache_diagnosis.rs"]
mod cache_diagnosis;
use crate::common;
#[path = "loopback/server_compaction.rs"]
mod server_compaction;
#[path = "loopback/tool_changes.rs"]
mod tool_changes;
#[path = "loopback/tool_search.rs"]
mod tool_search;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{
    Calls, Log, Outcome, assert_history_valid, cut_short, prompt, reactive_compaction, sleep_input,
    tool_result_texts, tools, with_web_search,
};
use futures::StreamExt as _;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use threadline_client::{ApiKey, Auth, Client, ClientConfig, RetryConfig};
use threadline_message::Message;
use threadline_mock::{Block, MockServer, RecordedRequest, Scenario, Step, StreamFault};
use threadline_query::recovery::{
    INTERRUPTED, MAX_CONTEXT_WINDOW_RECOVERIES, MAX_OUTPUT_RECOVERY_ATTEMPTS, RESUME_DIRECTLY,
    STREAM_FAILED,
};
use threadline_query::{
    CachePlanner, CancellationToken, ContextPolicy, Event, PolicyError, Query, QueryConfig, State,
    StepInput, StepOutcome, StopContext, StopDecision, Terminal, TokenBudget, ToolSet, Transition,
};
use threadline_validate::validate;
use threadline_wire::model::ModelTable;
use threadline_wire::service::ServiceError;
use threadline_wire::{Content, ContentBlock, Fallbacks, MessagesRequest};

/// A model the mock knows.
const MODEL: &str = threadline_query::scripted::SCRIPTED_MODEL;

/// The longest any run may take: generous, for a loaded 2-core CI machine.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------------------

async fn mock(steps: impl IntoIterator<Item = Step>) -> MockServer {
    MockServer::start(Scenario::new(steps))
        .await
        .expect("the mock starts")
}

/// A client for `mock`: up to `retries` retries with millisecond backoffs (a `retry-after`
/// from the mock is honoured as sent).
fn client(mock: &MockServer, retries: u32) -> Client {
    client_with(mock, retries, |config| config)
}

fn client_with(
    mock: &MockServer,
    retries: u32,
    adjust: impl FnOnce(ClientConfig) -> ClientConfig,
) -> Client {
    let auth = Auth::ApiKey(ApiKey::new("sk-ant-loopback").expect("a key"));
    let retry = RetryConfig::default()
        .with_max_retries(retries)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(5));
    let config = ClientConfig::new(mock.base_url(), auth).with_retry(retry);
    Client::new(adjust(config)).expect("a client")
}

fn config() -> QueryConfig {
    QueryConfig::new(MODEL, 1024).with_system("You are a loopback test.")
}

/// `threadline-cache`'s planner as the loop's cache planner, counting resets.
#[derive(Default)]
struct Markers {
    planner: threadline_cache::Planner,
    resets: Arc<AtomicUsize>,
}

impl CachePlanner for Markers {
    fn plan(&mut self, request: &mut MessagesRequest) {
        self.planner.plan(request);
    }
    fn reset(&mut self) {
        self.resets.fetch_add(1, Ordering::SeqCst);
        self.planner.reset();
    }
}

/// The loop over HTTP to `mock`, with the test tools and real cache markers.
fn query(client: Client, config: QueryConfig, tools: &ToolSet) -> Query<Client> {
    Query::new(client, config)
        .with_tools(tools.clone())
        .with_cache_planner(Markers::default())
}

/// A test's world: the mock playing its scenario, and the test tools with their log.
struct Setup {
    mock: MockServer,
    log: Log,
    tools: ToolSet,
}

/// The mock playing `steps`, and fresh test tools.
async fn setup(steps: impl IntoIterator<Item = Step>) -> Setup {
    let log = Log::default();
    let tools = tools(&log);
    Setup {
        mock: mock(steps).await,
        log,
        tools,
    }
}

impl Setup {
    /// [`query`] with a [`client`] of the mock (up to `retries` retries) and the test tools.
    fn query(&self, retries: u32, config: QueryConfig) -> Query<Client> {
        query(client(&self.mock, retries), config, &self.tools)
    }

    /// [`check`] against the mock and the test tools.
    fn check(&self, out: &Outcome, statuses: &[Option<u16>], compacted_before: &[usize]) {
        check(&self.mock, out, &self.tools, statuses, compacted_before);
    }

    /// The requests' bodies, as recorded.
    fn bodies(&self) -> Vec<Value> {
        self.mock
            .requests()
            .into_iter()
            .map(|r| r.body.expect("a JSON body"))
            .collect()
    }
}

fn text(text: &str) -> Block {
    Block::Text {
        text: text.to_owned(),
    }
}

fn tool_use(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse {
        id: Some(id.to_owned()),
        name: name.to_owned(),
        input,
    }
}

/// A message step reporting exactly `output_tokens` of output.
fn with_output_tokens(mut step: Step, output_tokens: u64) -> Step {
    if let Step::Message(message) = &mut step {
        message.usage = Some(json!({"input_tokens": 50, "output_tokens": output_tokens}));
    }
    step
}

/// Runs `query` to its end (within [`RUN_TIMEOUT`]), showing each event to `on_event`
/// first. Checks that the `Transition` events agree with the recorded path.
async fn drive(query: Query<Client>, mut on_event: impl FnMut(&Event)) -> Outcome {
    let run = async {
        let mut stream = query.run(State::default(), prompt());
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            on_event(&event);
            events.push(event);
        }
        events
    };
    let mut events = tokio::time::timeout(RUN_TIMEOUT, run)
        .await
        .expect("the run ends in time");
    let Some(Event::Finished(finished)) = events.pop() else {
        panic!("the last event is Finished");
    };
    let outcome = Outcome {
        events,
        terminal: finished.terminal,
        state: finished.state,
    };
    let reported: Vec<Transition> = outcome
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Transition(t) => Some(*t),
            _ => None,
        })
        .collect();
    assert_eq!(reported, outcome.path(), "transition events and path agree");
    outcome
}

async fn run(query: Query<Client>) -> Outcome {
    drive(query, |_| {}).await
}

// ---------------------------------------------------------------------------------------
// The checks every test makes
// ---------------------------------------------------------------------------------------

/// What the mock received, and what the run left behind:
///
/// * the mock answered exactly `statuses` (`None`: the scenario reset the connection), so
///   there was no 400 but the scripted ones;
/// * (a) every request passes `validate`;
/// * (b) [`assert_prefix_stable`], except across the requests listed in `compacted_before`
///   (request `i` there: a compaction or an in-place rewrite came between `i - 1` and `i`);
/// * the visible history normalizes to a valid request.
fn check(
    mock: &MockServer,
    out: &Outcome,
    tools: &ToolSet,
    statuses: &[Option<u16>],
    compacted_before: &[usize],
) {
    let recorded = mock.requests();
    let answered: Vec<Option<u16>> = recorded.iter().map(|r| r.status).collect();
    assert_eq!(answered, statuses, "the statuses the mock answered");
    let bodies: Vec<Value> = recorded.iter().map(valid_body).collect();
    assert_prefix_stable(&bodies, compacted_before);
    assert_history_valid(out.state.visible(), tools);
}

/// (a): the request went to `POST /v1/messages` and its body passes `validate`.
fn valid_body(request: &RecordedRequest) -> Value {
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/messages")
    );
    let body = request.body.clone().expect("a JSON body");
    let parsed: MessagesRequest = serde_json::from_value(body.clone()).expect("a request");
    // The betas are the ones the body needs (`threadline_wire::betas`), and only those.
    assert_eq!(
        request.headers.get("anthropic-beta").cloned(),
        threadline_wire::betas::header_value(&[], &parsed),
        "the betas the body needs"
    );
    let model = ModelTable::builtin().resolve(&parsed.model);
    assert!(model.is_known(), "model {}", parsed.model);
    // The client derives `anthropic-beta` from the body; the mock validated with it.
    let header = request
        .headers
        .get("anthropic-beta")
        .map_or("", String::as_str);
    let options = threadline_validate::ValidateOptions::default().with_beta_header(header);
    let violations = threadline_validate::validate_with(&parsed, model.model(), &options);
    assert!(violations.is_empty(), "invalid request: {violations:?}");
    body
}

/// One piece of a request's cacheable prefix: where it is, its JSON, and whether it carries
/// a `cache_control` marker.
struct Piece {
    key: String,
    marked: bool,
}

/// Removes every `cache_control` in `value`; whether there was one.
fn strip_markers(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut found = map.remove("cache_control").is_some();
            for v in map.values_mut() {
                found |= strip_markers(v);
            }
            found
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |found, v| strip_markers(v) | found),
        _ => false,
    }
}

/// The prefix in the API's cache order: each tool, each system block, each message's
/// blocks. Tools and system are compared with their markers (their markers are stable);
/// message blocks without them, since the planner moves the last-message marker forward on
/// every request by design (the API's prefix hash, like `threadline-cache`'s, ignores it).
fn pieces(body: &Value) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut stable = |label: String, value: &Value| {
        let mut stripped = value.clone();
        out.push((label, value.to_string(), strip_markers(&mut stripped)));
    };
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        // Deferred tools are not in the API's cached prefix (docs/api-notes.md#tool-search).
        if tool["defer_loading"] != json!(true) {
            stable(format!("tools[{i}]"), tool);
        }
    }
    match &body["system"] {
        Value::Array(blocks) => {
            for (i, block) in blocks.iter().enumerate() {
                stable(format!("system[{i}]"), block);
            }
        }
        Value::Null => {}
        system => stable("system".to_owned(), system),
    }
    let mut pieces: Vec<Piece> = out
        .into_iter()
        .map(|(label, json, marked)| Piece {
            key: format!("{label} {json}"),
            marked,
        })
        .collect();
    for (m, message) in body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .enumerate()
    {
        let role = message["role"].as_str().expect("a role");
        let blocks = match &message["content"] {
            Value::Array(blocks) => blocks.clone(),
            other => vec![other.clone()],
        };
        for (b, mut block) in blocks.into_iter().enumerate() {
            let marked = strip_markers(&mut block);
            pieces.push(Piece {
                key: format!("messages[{m}].content[{b}] ({role}) {block}"),
                marked,
            });
        }
    }
    pieces
}

/// (b) Prefix stability. For every pair of consecutive requests N, N+1 (N+1 not listed in
/// `compacted_before`), everything up to and including the last `cache_control` marker of N
/// is byte-identical in N+1. Every request carries a marker (the planner always places one:
/// the check is never vacuous), and every listed pair really did change before the marker
/// (an exemption hides nothing that was not a compaction).
fn assert_prefix_stable(bodies: &[Value], compacted_before: &[usize]) {
    let all: Vec<Vec<Piece>> = bodies.iter().map(pieces).collect();
    for (i, request) in all.iter().enumerate() {
        assert!(
            request.iter().any(|p| p.marked),
            "request {i} carries no cache_control marker"
        );
    }
    for (n, pair) in all.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        let last = before
            .iter()
            .rposition(|p| p.marked)
            .expect("checked above");
        let same = after.len() > last
            && before[..=last]
                .iter()
                .zip(&after[..=last])
                .all(|(a, b)| a.key == b.key);
        if compacted_before.contains(&(n + 1)) {
            assert!(
                !same,
                "request {} is listed as after a compaction but kept the prefix",
                n + 1
            );
            continue;
        }
        if !same {
            let at = before[..=last]
                .iter()
                .zip(after.iter())
                .position(|(a, b)| a.key != b.key)
                .unwrap_or(after.len());
            panic!(
                "the cached prefix changed between requests {n} and {} at piece {at} of {}:\n  \
                 before: {}\n  after:  {}",
                n + 1,
                last + 1,
                before[at].key,
                after.get(at).map_or("(missing)", |p| p.key.as_str()),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Transitions
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "current_thread")]
async fn next_turn_over_a_slow_stream() {
    let t = setup([
        // A slow stream (5 ms between events) with a parallel batch of reads.
        Step::message(vec![
            text("Reading both."),
            tool_use("toolu_a", "read", sleep_input(5)),
            tool_use("toolu_b", "read", sleep_input(5)),
        ])
        .with_delay_ms(5),
        Step::message(vec![tool_use("toolu_c", "write", sleep_input(1))]),
        Step::text("Done."),
    ])
    .await;
    let out = run(t.query(0, config())).await;
    assert_eq!(out.path(), [Transition::NextTurn, Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    let ids: Vec<String> = tool_result_texts(&out.state.messages)
        .into_iter()
        .map(|(id, _, is_error)| {
            assert!(!is_error);
            id
        })
        .collect();
    assert_eq!(ids, ["toolu_a", "toolu_b", "toolu_c"]);
    t.check(&out, &[Some(200); 3], &[]);
}

/// Answers the prompt-too-long steps as scripted and trips the blocking limit past a
/// history length. Its drain rewrites every tool result in place (what a context collapse
/// does to staged ranges); its reactive compaction appends a boundary and a summary.
#[derive(Default)]
struct Policy {
    drains: bool,
    compacts: bool,
    blocking_from: Option<usize>,
    calls: Calls,
}

impl ContextPolicy for Policy {
    fn drain(&mut self, input: StepInput<'_>) -> StepOutcome {
        self.calls.push("drain");
        if !self.drains {
            return StepOutcome::unchanged();
        }
        let mut collapsed = 0;
        for message in input.history.iter_mut() {
            if let Message::User(user) = message {
                for block in &mut user.content {
                    if let ContentBlock::ToolResult(result) = block {
                        result.content = Some(Content::Text("[collapsed]".to_owned()));
                        collapsed += 1;
                    }
                }
            }
        }
        assert!(
            collapsed > 0,
            "the scenario staged a tool result to collapse"
        );
        StepOutcome::rewritten()
    }

    fn reactive_compact<'a>(
        &'a mut self,
        _input: StepInput<'a>,
        _error: &'a ServiceError,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        reactive_compaction(
            &self.calls,
            self.compacts,
            210_000,
            "Summary: a file was read.",
        )
    }

    fn blocking_limit(&self, history: &[Message], _boundary: usize) -> Option<(u64, u64)> {
        self.blocking_from
            .filter(|&from| history.len() >= from)
            .map(|_| (300_000, 200_000))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn collapse_drain_retry_after_prompt_too_long() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::prompt_too_long(210_000, 200_000),
        Step::text("Done."),
    ])
    .await;
    let policy = Policy {
        drains: true,
        ..Policy::default()
    };
    let calls = policy.calls.clone();
    let q = t.query(2, config()).with_policy(policy);
    let out = run(q).await;
    assert_eq!(
        out.path(),
        [Transition::NextTurn, Transition::CollapseDrainRetry]
    );
    assert_eq!(out.terminal, Terminal::Completed);
    assert_eq!(calls.take(), ["drain"]);
    // The rewrite reached the wire: the retry carries the collapsed result.
    let sent = t.bodies();
    assert!(!sent[1].to_string().contains("[collapsed]"));
    assert!(sent[2].to_string().contains("[collapsed]"));
    // The 400 is the scripted prompt-too-long, not a validation failure (it is not retried).
    t.check(&out, &[Some(200), Some(400), Some(200)], &[2]);
}

#[tokio::test(flavor = "current_thread")]
async fn reactive_compact_retry_after_prompt_too_long() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::prompt_too_long(210_000, 200_000),
        Step::message(vec![tool_use("toolu_2", "read", sleep_input(1))]),
        Step::text("Done."),
    ])
    .await;
    let policy = Policy {
        compacts: true,
        ..Policy::default()
    };
    let calls = policy.calls.clone();
    let planner = Markers::default();
    let resets = Arc::clone(&planner.resets);
    let q = t
        .query(2, config())
        .with_policy(policy)
        .with_cache_planner(planner);
    let out = run(q).await;
    assert_eq!(
        out.path(),
        [
            Transition::NextTurn,
            Transition::ReactiveCompactRetry,
            Transition::NextTurn
        ]
    );
    assert_eq!(out.terminal, Terminal::Completed);
    // Drain first (nothing staged), then the compaction.
    assert_eq!(calls.take(), ["drain", "reactive_compact"]);
    assert_eq!(out.state.compaction.compactions, 1);
    assert_eq!(resets.load(Ordering::SeqCst), 1, "the planner was reset");
    // The retry sends what follows the boundary: the summary alone.
    assert_eq!(t.bodies()[2]["messages"].as_array().map(Vec::len), Some(1));
    // After the compaction the prefix is stable again (requests 2 → 3 are checked).
    t.check(&out, &[Some(200), Some(400), Some(200), Some(200)], &[2]);
}

#[tokio::test(flavor = "current_thread")]
async fn max_output_tokens_escalate() {
    let t = setup([
        Step::text("A long answer that was cut").with_stop_reason("max_tokens"),
        Step::text("A short answer."),
    ])
    .await;
    let out = run(t.query(0, config())).await;
    assert_eq!(out.path(), [Transition::MaxOutputTokensEscalate]);
    assert_eq!(out.terminal, Terminal::Completed);
    let sent = t.bodies();
    assert_eq!(sent[0]["max_tokens"], 1024);
    assert_eq!(sent[1]["max_tokens"], config().escalated_limit());
    // The cut output was retracted: the retry is the same conversation.
    assert_eq!(sent[0]["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(sent[1]["messages"].as_array().map(Vec::len), Some(1));
    t.check(&out, &[Some(200); 2], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn max_output_tokens_recovery_until_the_loop_gives_up() {
    let cut = || Step::text("Cut again").with_stop_reason("max_tokens");
    let t = setup([
        cut(),
        cut(),
        cut(),
        cut(),
        cut(),
        Step::text("never asked for"),
    ])
    .await;
    let q = t.query(0, config().with_escalated_max_tokens(16_000));
    let out = run(q).await;
    let mut expected = vec![Transition::MaxOutputTokensEscalate];
    expected.extend(std::iter::repeat_n(
        Transition::MaxOutputTokensRecovery,
        MAX_OUTPUT_RECOVERY_ATTEMPTS as usize,
    ));
    assert_eq!(out.path(), expected);
    // After the last resume attempt the loop stops with what was produced.
    assert_eq!(out.terminal, Terminal::Completed);
    let sent = t.bodies();
    assert!(sent[1..].iter().all(|b| b["max_tokens"] == 16_000));
    // Each resume adds the cut answer and one meta message.
    let lengths: Vec<usize> = sent
        .iter()
        .map(|b| b["messages"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(lengths, [1, 1, 3, 5, 7]);
    t.check(&out, &[Some(200); 5], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn stop_hook_blocking() {
    let t = setup([Step::text("First."), Step::text("Second.")]).await;
    let hook = |ctx: StopContext<'_>| {
        if ctx.stop_hook_active {
            StopDecision::Allow
        } else {
            StopDecision::Block {
                message: "Run the tests before you stop.".into(),
            }
        }
    };
    let q = t.query(0, config()).with_stop_hook(hook);
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::StopHookBlocking]);
    assert_eq!(out.terminal, Terminal::Completed);
    t.check(&out, &[Some(200); 2], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn token_budget_continuation() {
    let t = setup([
        with_output_tokens(Step::text("Part one."), 2_000),
        with_output_tokens(Step::text("Part two."), 8_000),
        Step::text("never asked for"),
    ])
    .await;
    let q = t.query(0, config().with_token_budget(TokenBudget::new(10_000)));
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::TokenBudgetContinuation]);
    assert_eq!(out.terminal, Terminal::Completed);
    assert_eq!(out.state.output_tokens, 10_000);
    t.check(&out, &[Some(200); 2], &[]);
}

/// A response the API paused in a server tool loop: text, a web search with its result, and
/// a second search still running (no result yet), as the recorded pause below ends.
fn paused(n: usize) -> Step {
    let done = format!("srvtoolu_{n:02}a");
    let running = format!("srvtoolu_{n:02}b");
    Step::message(vec![
        text("Searching."),
        Block::Verbatim {
            block: json!({"type": "server_tool_use", "id": done, "name": "web_search",
                "input": {"query": "rust release"}}),
        },
        Block::Verbatim {
            block: json!({"type": "web_search_tool_result", "tool_use_id": done,
                "content": [{"type": "web_search_result", "title": "Rust",
                    "url": "https://www.rust-lang.org/", "encrypted_content": "ZW5j"}]}),
        },
        Block::Verbatim {
            block: json!({"type": "server_tool_use", "id": running, "name": "web_search",
                "input": {"query": "rust 1.95"}}),
        },
    ])
    .with_stop_reason("pause_turn")
}

/// The types of the blocks of `body`'s last message, which must be an assistant message.
fn last_assistant_blocks(body: &Value) -> Vec<Value> {
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("messages");
    assert_eq!(last["role"], "assistant");
    last["content"].as_array().expect("blocks").clone()
}

fn types(blocks: &[Value]) -> Vec<&str> {
    blocks.iter().filter_map(|b| b["type"].as_str()).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn pause_turn_resume() {
    let t = setup([paused(1), Step::text("Rust 1.95 is out.")]).await;
    let out = run(t.query(0, config()).with_shaper(with_web_search)).await;
    assert_eq!(out.path(), [Transition::PauseTurnResume]);
    assert_eq!(out.terminal, Terminal::Completed);
    // The paused response went back as it came, the running search included.
    let sent = t.bodies();
    let blocks = last_assistant_blocks(&sent[1]);
    assert_eq!(
        types(&blocks),
        [
            "text",
            "server_tool_use",
            "web_search_tool_result",
            "server_tool_use"
        ]
    );
    assert_eq!(blocks[3]["id"], "srvtoolu_01b");
    assert_eq!(out.state.run_turns, 1);
    t.check(&out, &[Some(200); 2], &[]);
}

/// The recorded pause (pydantic-ai's web search run against the real API): the loop sends
/// the paused response back as it came — block for block what the official Python SDK
/// accumulates from the recorded stream — and with the same blocks, ids and pending search
/// as the recorded continuation, which the API answered with 200.
#[tokio::test(flavor = "current_thread")]
async fn pause_turn_resume_matches_the_recorded_continuation() {
    let name = "pydantic__pydantic-ai/test_pause_turn_web_search_streaming_vcr";
    let fixture = threadline_testkit::fixtures::fixture(name);
    let [first, second] = fixture.exchanges.as_slice() else {
        panic!("two recorded exchanges");
    };
    let sse = first.response.body.as_sse().expect("a streamed pause");
    let first_request = &first.request.as_ref().expect("the first request").body;
    let continuation = &second.request.as_ref().expect("the continuation").body;
    let sdk_path = threadline_testkit::fixtures::repo_root()
        .join(format!("fixtures/sdk-accumulated/{name}.0.json"));
    let sdk: Value = serde_json::from_str(
        &std::fs::read_to_string(&sdk_path).expect("the SDK's accumulated message"),
    )
    .expect("JSON");

    let sse_end = second
        .response
        .body
        .as_sse()
        .expect("a streamed continuation");
    let t = setup([Step::replay_sse(sse), Step::replay_sse(sse_end)]).await;
    let tools: Vec<threadline_wire::ToolDefinition> =
        serde_json::from_value(first_request["tools"].clone()).expect("recorded tools");
    let mut config = QueryConfig::new(
        first_request["model"].as_str().expect("a model"),
        first_request["max_tokens"].as_u64().expect("max_tokens"),
    );
    config.thinking =
        serde_json::from_value(first_request["thinking"].clone()).expect("recorded thinking");
    let q = t
        .query(0, config)
        .with_shaper(move |request: &mut MessagesRequest| {
            request.tools = Some(tools.clone());
        });
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::PauseTurnResume]);
    assert_eq!(out.terminal, Terminal::Completed);

    let mut sent = t.bodies()[1].clone();
    strip_markers(&mut sent);
    let ours = last_assistant_blocks(&sent);
    // As it came.
    assert_eq!(Some(&ours), sdk["message"]["content"].as_array());
    // As the recorded continuation sent it (pydantic-ai rebuilds each block from its own
    // types, so only types and ids are compared): ending with the search still running.
    let theirs = last_assistant_blocks(continuation);
    let ids = |blocks: &[Value]| -> Vec<String> {
        blocks
            .iter()
            .map(|b| format!("{} {} {}", b["type"], b["id"], b["tool_use_id"]))
            .collect()
    };
    assert_eq!(ids(&ours), ids(&theirs));
    assert_eq!(types(&ours).last(), Some(&"server_tool_use"));
    t.check(&out, &[Some(200); 2], &[]);

    // The recorded continuation begins with the result of the search the pause left
    // running. When the user writes next, the call and its result stay, as one pair of the
    // merged assistant turn, and the request is valid.
    let pending = ours
        .last()
        .and_then(|b| b["id"].as_str())
        .expect("the running search");
    let mut history = out.state.messages.clone();
    history.push(Message::user_text("Thanks."));
    let next = threadline_normalize::normalize(&history, &threadline_normalize::Options::default());
    let json = serde_json::to_value(&next.messages).expect("json");
    let pair: Vec<String> = json
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["id"] == pending || b["tool_use_id"] == pending)
        .map(|b| b["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(pair, ["server_tool_use", "web_search_tool_result"]);
    let mut request = MessagesRequest::new(
        first_request["model"].as_str().expect("a model"),
        1024,
        next.messages,
    );
    request.tools = serde_json::from_value(first_request["tools"].clone()).expect("tools");
    let model = ModelTable::builtin().resolve(&request.model).model();
    assert_eq!(validate(&request, model), []);
}

#[tokio::test(flavor = "current_thread")]
async fn pause_turn_resumes_are_bounded() {
    let limit = threadline_query::recovery::MAX_PAUSE_TURN_RESUMES as usize;
    let t = setup((1..=limit + 2).map(paused)).await;
    let out = run(t.query(0, config()).with_shaper(with_web_search)).await;
    assert_eq!(out.path(), vec![Transition::PauseTurnResume; limit]);
    assert_eq!(out.terminal, Terminal::Completed);
    t.check(&out, &vec![Some(200); limit + 1], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn pause_turns_count_toward_max_turns() {
    let t = setup([paused(1), paused(2), Step::text("never asked for")]).await;
    let q = t
        .query(0, config().with_max_turns(2))
        .with_shaper(with_web_search);
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::PauseTurnResume]);
    assert_eq!(out.terminal, Terminal::MaxTurns { limit: 2 });
    t.check(&out, &[Some(200); 2], &[]);
}

// ---------------------------------------------------------------------------------------
// Terminals
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "current_thread")]
async fn completed_after_the_client_retried_429_529_500_and_a_reset() {
    let t = setup([
        Step::rate_limited(0.01),
        Step::overloaded(),
        Step::internal_error(),
        Step::Reset,
        Step::text("Hello."),
    ])
    .await;
    let out = run(t.query(4, config())).await;
    assert!(out.path().is_empty());
    assert_eq!(out.terminal, Terminal::Completed);
    // One model call, five attempts: the same request each time (its prefix is stable).
    t.check(
        &out,
        &[Some(429), Some(529), Some(500), None, Some(200)],
        &[],
    );
    let sent = t.bodies();
    assert!(sent.windows(2).all(|pair| pair[0] == pair[1]));
}

#[tokio::test(flavor = "current_thread")]
async fn max_turns() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::text("never asked for"),
    ])
    .await;
    let q = t.query(0, config().with_max_turns(1));
    let out = run(q).await;
    assert!(out.path().is_empty());
    assert_eq!(out.terminal, Terminal::MaxTurns { limit: 1 });
    // The last turn's result was recorded before stopping.
    assert_eq!(tool_result_texts(&out.state.messages).len(), 1);
    t.check(&out, &[Some(200)], &[]);
}

/// Events of a stream with one tool use of `{"ms": N}` (N < 10^11) before its stall:
/// `message_start`, `content_block_start`, `ping`, two `input_json_delta`s,
/// `content_block_stop`.
const EVENTS_THROUGH_ONE_TOOL_USE: usize = 6;

#[tokio::test(flavor = "current_thread")]
async fn aborted_streaming_during_a_stalled_stream() {
    let t = setup([Step::message(vec![
        tool_use("toolu_1", "write", sleep_input(60_000)),
        text("never arrives"),
    ])
    .with_fault(StreamFault::Stall {
        after_events: EVENTS_THROUGH_ONE_TOOL_USE,
    })])
    .await;
    let cancel = CancellationToken::new();
    let q = t.query(0, config()).with_cancellation(cancel.clone());
    // Abort once the tool has started: the stream is stalled, so the model is still
    // "streaming".
    let out = drive(q, |event| {
        if matches!(event, Event::ToolStarted { .. }) {
            cancel.cancel();
        }
    })
    .await;
    assert!(out.path().is_empty());
    assert_eq!(out.terminal, Terminal::AbortedStreaming);
    assert_eq!(t.log.order("start"), ["toolu_1"]);
    assert_eq!(
        tool_result_texts(&out.state.messages),
        cut_short(&["toolu_1"], INTERRUPTED)
    );
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn aborted_tools() {
    let t = setup([Step::message(vec![
        tool_use("toolu_1", "write", sleep_input(60_000)),
        tool_use("toolu_2", "write", sleep_input(60_000)),
    ])])
    .await;
    let cancel = CancellationToken::new();
    let q = t.query(0, config()).with_cancellation(cancel.clone());
    // Abort once the response is complete (its last fragment, carrying the stop reason, is
    // appended only after `message_stop`): the loop is waiting for the tools.
    let out = drive(q, |event| {
        if let Event::Message(Message::Assistant(assistant)) = event
            && assistant.stop_reason.is_some()
        {
            cancel.cancel();
        }
    })
    .await;
    assert!(out.path().is_empty());
    assert_eq!(out.terminal, Terminal::AbortedTools);
    // The second (unsafe) call never started; both have an interrupted result.
    assert_eq!(t.log.order("start"), ["toolu_1"]);
    assert_eq!(
        tool_result_texts(&out.state.messages),
        cut_short(&["toolu_1", "toolu_2"], INTERRUPTED)
    );
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn prompt_too_long_when_nothing_helps() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::prompt_too_long(210_000, 200_000),
        Step::text("never asked for"),
    ])
    .await;
    let policy = Policy::default();
    let calls = policy.calls.clone();
    let q = t.query(2, config()).with_policy(policy);
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(
        out.terminal,
        Terminal::PromptTooLong {
            tokens: Some((210_000, 200_000))
        }
    );
    assert_eq!(calls.take(), ["drain", "reactive_compact"]);
    t.check(&out, &[Some(200), Some(400)], &[]);
}

fn assert_model_error(out: &Outcome, status: Option<u16>) {
    match &out.terminal {
        Terminal::ModelError { status: got, .. } => assert_eq!(*got, status),
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn model_error_after_retries_are_exhausted() {
    let t = setup([
        Step::internal_error(),
        Step::internal_error(),
        Step::internal_error(),
        Step::text("never asked for"),
    ])
    .await;
    let out = run(t.query(2, config())).await;
    assert!(out.path().is_empty());
    assert_model_error(&out, Some(500));
    t.check(&out, &[Some(500); 3], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn model_error_from_a_mid_stream_error_event() {
    let t = setup([
        Step::text("Partial answer, then the API is overloaded.")
            .with_chunk_chars(4)
            .with_fault(StreamFault::ErrorEvent {
                after_events: 5,
                error_type: None,
                message: None,
            }),
        Step::text("never asked for"),
    ])
    .await;
    // Retries are on: a failure after events were delivered is never resent.
    let out = run(t.query(2, config())).await;
    assert!(out.path().is_empty());
    // An `error` event has no HTTP status of its own.
    assert_model_error(&out, None);
    // The text that had arrived is kept.
    assert!(
        out.state
            .messages
            .iter()
            .any(|m| matches!(m, Message::Assistant(_)))
    );
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn model_error_when_the_stream_is_cut_inside_a_tool_input() {
    let t = setup([
        Step::message(vec![
            text("Writing."),
            tool_use("toolu_1", "write", json!({"ms": 1, "pad": "x".repeat(64)})),
        ])
        .with_fault(StreamFault::CutInToolInput),
        Step::text("never asked for"),
    ])
    .await;
    let out = run(t.query(2, config())).await;
    assert!(out.path().is_empty());
    assert_model_error(&out, None);
    // The half-streamed tool use was never run nor kept: no result is owed.
    assert!(t.log.order("start").is_empty());
    assert!(tool_result_texts(&out.state.messages).is_empty());
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn model_error_after_tool_uses_were_streamed() {
    let t = setup([
        Step::message(vec![
            tool_use("toolu_1", "write", sleep_input(60_000)),
            tool_use("toolu_2", "write", sleep_input(60_000)),
            text("never arrives"),
        ])
        // Both tool uses complete (6 events, then 4 more for the second), then the cut.
        .with_fault(StreamFault::CutAfterEvents {
            after_events: EVENTS_THROUGH_ONE_TOOL_USE + 4,
        }),
        Step::text("never asked for"),
    ])
    .await;
    let out = run(t.query(2, config())).await;
    assert!(out.path().is_empty());
    assert_model_error(&out, None);
    // Every tool use already emitted gets a synthetic result.
    assert_eq!(
        tool_result_texts(&out.state.messages),
        cut_short(&["toolu_1", "toolu_2"], STREAM_FAILED)
    );
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn model_error_when_a_stalled_stream_hits_the_idle_timeout() {
    let t = setup([
        Step::text("Starting, then silence.").with_fault(StreamFault::Stall { after_events: 4 }),
        Step::text("never asked for"),
    ])
    .await;
    let client = client_with(&t.mock, 2, |config| {
        config.with_timeouts(
            Duration::from_secs(10),
            Duration::from_secs(30),
            Duration::from_secs(2),
        )
    });
    let out = run(query(client, config(), &t.tools)).await;
    assert!(out.path().is_empty());
    assert_model_error(&out, None);
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_limit_after_a_turn() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::text("never asked for"),
    ])
    .await;
    // Over the limit once the history holds the prompt, the tool use and its result.
    let policy = Policy {
        blocking_from: Some(3),
        ..Policy::default()
    };
    let q = t.query(0, config()).with_policy(policy);
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(
        out.terminal,
        Terminal::BlockingLimit {
            tokens: 300_000,
            limit: 200_000
        }
    );
    // Nothing was sent once over the limit.
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn hook_stopped() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::text("Done."),
        Step::text("never asked for"),
    ])
    .await;
    let hook = |_ctx: StopContext<'_>| StopDecision::Stop {
        reason: "budget exhausted".into(),
    };
    let q = t.query(0, config()).with_stop_hook(hook);
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(
        out.terminal,
        Terminal::HookStopped {
            reason: "budget exhausted".into()
        }
    );
    t.check(&out, &[Some(200); 2], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn hook_stopped_after_too_many_blocks() {
    let t = setup([
        Step::text("One."),
        Step::text("Two."),
        Step::text("Three."),
        Step::text("never asked for"),
    ])
    .await;
    let hook = |_ctx: StopContext<'_>| StopDecision::Block {
        message: "Not yet.".into(),
    };
    let mut cfg = config();
    cfg.max_stop_hook_blocks = 2;
    let q = t.query(0, cfg).with_stop_hook(hook);
    let out = run(q).await;
    assert_eq!(out.path(), [Transition::StopHookBlocking; 2]);
    assert!(matches!(out.terminal, Terminal::HookStopped { .. }));
    t.check(&out, &[Some(200); 3], &[]);
}

/// A server that echoes the key back — in a 401's message, then in an `error` event after
/// some text — over real HTTP: neither the terminal, nor any event, nor the transcript the
/// loop writes holds the key. The key has no `sk-ant-` shape, so only the client's own
/// redaction of its credential can remove it.
#[tokio::test]
async fn a_key_the_server_echoes_reaches_neither_the_transcript_nor_the_terminal() {
    const KEY: &str = "loopback-token-THEKEY-0123456789";
    let dir = tempfile::tempdir().expect("tempdir");
    for (index, step) in [
        Step::error(401, format!("invalid x-api-key: {KEY}")),
        Step::text("Some text, then the server echoes the key.")
            .with_chunk_chars(8)
            .with_fault(StreamFault::ErrorEvent {
                after_events: 4,
                error_type: Some("authentication_error".to_owned()),
                message: Some(format!("invalid x-api-key: {KEY}")),
            }),
    ]
    .into_iter()
    .enumerate()
    {
        let t = setup([step]).await;
        let client = client_with(&t.mock, 2, |mut config| {
            config.auth = Auth::ApiKey(ApiKey::new(KEY).expect("a key"));
            config
        });
        let path = dir.path().join(format!("run-{index}.jsonl"));
        let query = query(client, config(), &t.tools)
            .with_transcript(threadline_message::TranscriptWriter::open(&path).expect("opens"));
        let out = run(query).await;
        assert!(
            matches!(out.terminal, Terminal::ModelError { .. }),
            "{:?}",
            out.terminal
        );
        let shown = format!("{}\n{:?}\n{:?}", out.terminal, out.terminal, out.events);
        let transcript = std::fs::read_to_string(&path).expect("the transcript is written");
        assert!(shown.contains("[redacted]"), "{shown}");
        assert!(transcript.contains("[redacted]"), "{transcript}");
        assert!(!shown.contains("THEKEY"), "{shown}");
        assert!(!transcript.contains("THEKEY"), "{transcript}");
    }
}

// ---------------------------------------------------------------------------------------
// Refusals, server-side fallbacks, outputs cut at the context window
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "current_thread")]
async fn refused_with_category_and_explanation() {
    let t = setup([
        Step::refusal(Some("cyber"), Some("This request was declined.")),
        Step::text("never asked for"),
    ])
    .await;
    let out = run(t.query(0, config())).await;
    assert_eq!(out.path(), []);
    assert_eq!(
        out.terminal,
        Terminal::Refused {
            category: Some("cyber".to_owned()),
            explanation: Some("This request was declined.".to_owned()),
        }
    );
    // The refused response is in the history as sent (no content, `stop_reason: refusal`),
    // then retracted: no later request carries it.
    let messages = &out.state.messages;
    let Some(Message::Tombstone(tombstone)) = messages.last() else {
        panic!("the refused response is retracted: {messages:#?}");
    };
    let Some(Message::Assistant(refused)) = messages.get(messages.len() - 2) else {
        panic!("the refused response is kept before its tombstone");
    };
    assert_eq!(tombstone.retracts, refused.header.id);
    assert!(refused.content.is_empty());
    assert_eq!(
        refused.stop_reason,
        Some(threadline_wire::StopReason::Refusal)
    );
    t.check(&out, &[Some(200)], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_refusal_after_partial_output_is_never_sent_back() {
    // Refused mid-stream: the text streamed before the refusal is incomplete, and the API
    // says to discard it. The next request (the user's next prompt) must not carry it.
    let t = setup([
        Step::text("Here is how to")
            .with_stop_details(json!({
                "type": "refusal", "category": "cyber", "explanation": null
            }))
            .with_stop_reason("refusal"),
        Step::text("Hello."),
    ])
    .await;
    let out = run(t.query(0, config())).await;
    assert!(
        matches!(out.terminal, Terminal::Refused { .. }),
        "{:?}",
        out.terminal
    );
    let mut messages = out.state.messages.clone();
    messages.push(Message::user_text("Something else, then."));
    let normalized = threadline_normalize::normalize(&messages, &Default::default());
    let sent = serde_json::to_string(&normalized.messages).expect("JSON");
    assert!(!sent.contains("Here is how to"), "{sent}");
    assert!(sent.contains("Something else, then."), "{sent}");
}

#[tokio::test(flavor = "current_thread")]
async fn refused_after_a_tool_turn() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::refusal(None, None),
    ])
    .await;
    let out = run(t.query(0, config())).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(
        out.terminal,
        Terminal::Refused {
            category: None,
            explanation: None,
        }
    );
    t.check(&out, &[Some(200); 2], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn context_window_recovery_after_model_context_window_exceeded() {
    let t = setup([
        Step::text("An answer cut at the window").with_stop_reason("model_context_window_exceeded"),
        Step::text("The rest."),
    ])
    .await;
    let out = run(t.query(0, config())).await;
    assert_eq!(out.path(), [Transition::ContextWindowRecovery]);
    assert_eq!(out.terminal, Terminal::Completed);
    let sent = t.bodies();
    // No escalation: the window, not `max_tokens`, was the limit.
    assert_eq!(sent[1]["max_tokens"], sent[0]["max_tokens"]);
    // The cut answer stays and the model is asked to resume.
    let messages = sent[1]["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert!(messages[2].to_string().contains(&RESUME_DIRECTLY[..20]));
    t.check(&out, &[Some(200); 2], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn context_window_compact_after_model_context_window_exceeded() {
    let t = setup([
        Step::message(vec![tool_use("toolu_1", "read", sleep_input(1))]),
        Step::text("Cut at the window").with_stop_reason("model_context_window_exceeded"),
        Step::text("The rest."),
    ])
    .await;
    let policy = Policy {
        compacts: true,
        ..Policy::default()
    };
    let calls = policy.calls.clone();
    let out = run(t.query(0, config()).with_policy(policy)).await;
    assert_eq!(
        out.path(),
        [Transition::NextTurn, Transition::ContextWindowCompact]
    );
    assert_eq!(out.terminal, Terminal::Completed);
    assert_eq!(calls.take(), ["reactive_compact"]);
    assert_eq!(out.state.compaction.compactions, 1);
    t.check(&out, &[Some(200); 3], &[2]);
}

#[tokio::test(flavor = "current_thread")]
async fn context_window_recoveries_are_bounded() {
    let cut = || Step::text("Cut again").with_stop_reason("model_context_window_exceeded");
    let t = setup([cut(), cut(), cut(), cut(), Step::text("never asked for")]).await;
    let out = run(t.query(0, config())).await;
    assert_eq!(
        out.path(),
        vec![Transition::ContextWindowRecovery; MAX_CONTEXT_WINDOW_RECOVERIES as usize]
    );
    assert_eq!(
        out.terminal,
        Terminal::ContextWindowExceeded {
            attempts: MAX_CONTEXT_WINDOW_RECOVERIES
        }
    );
    t.check(&out, &[Some(200); 4], &[]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_fallback_block_is_sent_back_in_place() {
    let fallback = json!({"type": "fallback", "from": {"model": MODEL},
        "to": {"model": "claude-sonnet-4-6"}, "trigger": {"type": "refusal", "category": "cyber"}});
    let mut served = Step::message(vec![
        Block::Verbatim {
            block: fallback.clone(),
        },
        text("Reading it."),
        tool_use("toolu_1", "read", sleep_input(1)),
    ]);
    if let Step::Message(message) = &mut served {
        message.model = Some("claude-sonnet-4-6".to_owned());
        message.usage = Some(
            json!({"input_tokens": 50, "output_tokens": 7, "iterations": [
            {"type": "message", "model": MODEL, "input_tokens": 50, "output_tokens": 0},
            {"type": "fallback_message", "model": "claude-sonnet-4-6", "input_tokens": 50,
                "output_tokens": 7}]}),
        );
    }
    let t = setup([served, Step::text("Done.")]).await;
    let fallbacks = Fallbacks::List(vec![
        serde_json::from_value(json!({"model": "claude-sonnet-4-6"})).expect("an entry"),
    ]);
    let out = run(t.query(0, config().with_fallbacks(fallbacks))).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    // The block went back exactly in place (first), byte for byte.
    let sent = t.bodies();
    let messages = sent[1]["messages"].as_array().expect("messages");
    let assistant = &messages[1];
    assert_eq!(assistant["role"], "assistant");
    let blocks = assistant["content"].as_array().expect("blocks");
    assert_eq!(types(blocks), ["fallback", "text", "tool_use"]);
    let mut echoed = blocks[0].clone();
    if let Some(map) = echoed.as_object_mut() {
        map.remove("cache_control");
    }
    assert_eq!(echoed, fallback);
    // Every request carries the configured fallbacks.
    assert!(
        sent.iter()
            .all(|b| b["fallbacks"] == json!([{"model": "claude-sonnet-4-6"}]))
    );
    t.check(&out, &[Some(200); 2], &[]);
}
