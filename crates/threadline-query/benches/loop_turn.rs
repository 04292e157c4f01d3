//! Loop overhead per turn, as a ratio read by `cargo xtask bench`:
//!
//! Every loop here runs with the default context policy (`CompactionPolicy` with
//! `Compaction::default()`), as the facade and the CLI do: its steps (the tool-result budget,
//! microcompact, the autocompact check, the blocking limit) run before every request, and must
//! cost what was appended, not the history. Every run must end `Completed` (the answers report
//! small usage, so nothing compacts).
//!
//! * `query_turn_overhead` — one run of the loop against a zero-latency in-process service
//!   and an instant tool: the user's message is appended, the model answers with a tool use,
//!   the tool's result is appended, the model answers with text. Everything the loop does is
//!   timed (context steps, incremental normalization, building the request, accumulating the
//!   stream, the executor, the events) except the model (canned events) and the tool (returns
//!   at once). `ours` at a history of 100,000 messages, `baseline` at 1,000
//!   (`threadline_testkit::messages::long_session` with its compaction boundaries removed, so
//!   the model sees the whole history). The history is put back to its starting size
//!   (untimed) when it has doubled.
//!
//! * `query_turn_traced` — the same turn with a `tracing` subscriber listening at INFO (as
//!   `threadline run --log` and any embedder exporting spans): the spans are opened and the
//!   compaction events' estimates made, recorded by a subscriber that writes nothing. `ours` at
//!   100,000 messages, `baseline` at 1,000.
//!
//! * `query_turn_vs_request_clones` — the same turn at 100,000 messages (`ours`) vs
//!   deep-cloning and dropping the normalized messages twice (`baseline`): what the two model
//!   calls cost when each request owned a copy of the history, before the requests shared
//!   their messages (`threadline_wire::Messages`). Kept as the measure of what sharing saved.
//!
//! * `loop_turn_8k_results` — the loop's per-turn cost as the facade runs it (a new loop per
//!   prompt sharing one cache planner, `SharedPlanner::default()`): process the model's
//!   answer, run a trivial tool whose result is an 8 KB file, build the next request, place
//!   its markers and serialize it to the bytes the client sends (`BodyFragments`, as
//!   `threadline-client` assembles them). `ours` with a history
//!   of 400 such turns, `baseline` with 50; the history is put back to its starting size
//!   (untimed) when it has grown by a quarter.

use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline_compact::Compaction;
use threadline_message::Message;
use threadline_query::{
    CompactionPolicy, Event, Query, QueryConfig, SharedPlanner, State, Terminal,
};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_wire::service::{EventStream, ServiceError};
use threadline_wire::{MessagesRequest, StreamEvent};

const MODEL: &str = "claude-sonnet-4-5";

fn events(values: &[Value]) -> Vec<StreamEvent> {
    values
        .iter()
        .map(|v| serde_json::from_value(v.clone()).expect("a stream event"))
        .collect()
}

fn tool_use_response(turn: u64) -> Vec<StreamEvent> {
    events(&[
        json!({"type": "message_start", "message": {"id": format!("msg_b{turn}a"), "type": "message", "role": "assistant", "content": [], "model": MODEL, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me check."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": format!("toolu_bench_{turn}"), "name": "noop", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"x\": 1}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 20}}),
        json!({"type": "message_stop"}),
    ])
}

fn text_response(turn: u64) -> Vec<StreamEvent> {
    events(&[
        json!({"type": "message_start", "message": {"id": format!("msg_b{turn}b"), "type": "message", "role": "assistant", "content": [], "model": MODEL, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "All good."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ])
}

/// Answers canned events at once: a tool use on odd calls, text on even ones. With
/// `bodies`, each request is first serialized to the bytes the client sends (assembled from
/// the fragments of the previous requests, as `threadline-client` does).
struct Canned {
    calls: u64,
    bodies: Option<Arc<std::sync::Mutex<threadline_client::BodyFragments>>>,
}

impl tower_service::Service<MessagesRequest> for Canned {
    type Response = EventStream;
    type Error = ServiceError;
    type Future = futures::future::Ready<Result<EventStream, ServiceError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: MessagesRequest) -> Self::Future {
        black_box(request.messages.len());
        if let Some(bodies) = &self.bodies {
            let body = bodies
                .lock()
                .expect("not poisoned")
                .body(&mut request)
                .expect("a request serializes");
            black_box(body.len());
        }
        self.calls += 1;
        let turn = self.calls / 2;
        let events = if self.calls % 2 == 1 {
            tool_use_response(turn)
        } else {
            text_response(turn)
        };
        futures::future::ready(Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed()))
    }
}

/// A tool that returns its text at once.
struct Noop(Arc<str>);

impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"x": {"type": "integer"}}})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        tool_result(std::future::ready(ToolOutput::text(self.0.to_string())))
    }
}

/// The loop over `service` with `tool` and the default context policy, as the facade builds
/// it (the policy's own model calls, summaries, would go to a service that answers nothing
/// useful: none happens, the usage reported stays far under every threshold).
fn query(service: Canned, tool: Noop) -> Query<Canned> {
    let config = QueryConfig::new(MODEL, 1024);
    let summaries = Canned {
        calls: 0,
        bodies: None,
    };
    Query::new(service, config.clone())
        .with_tool(tool)
        .with_policy(CompactionPolicy::new(
            summaries,
            Compaction::default(),
            &config,
        ))
}

/// The state a run finished with; panics unless it completed.
fn finished(last: Option<Event>) -> State {
    match last {
        Some(Event::Finished(finished)) if finished.terminal == Terminal::Completed => {
            finished.state
        }
        Some(Event::Finished(finished)) => panic!("the run ended {:?}", finished.terminal),
        _ => panic!("the run ends with Finished"),
    }
}

/// A session of `n` generated messages, all visible (no compaction boundary).
fn history(n: usize) -> Vec<Message> {
    threadline_testkit::messages::long_session(n, 42)
        .into_iter()
        .filter(|m| !threadline_query::is_compact_boundary(m))
        .collect()
}

/// One run: prompt, tool use, result, answer. Returns the state.
fn turn(state: State, calls: &mut u64) -> State {
    let service = Canned {
        calls: *calls,
        bodies: None,
    };
    let run =
        query(service, Noop("ok".into())).run(state, vec![Message::user_text("Check it again.")]);
    let last = futures::executor::block_on(run.fold(None, |_, event| async move { Some(event) }));
    *calls += 2;
    finished(last)
}

/// The time `iters` turns take, each from the state the previous one left in `state`; once
/// the history reaches `2 * n` messages it starts again from `warm` (untimed).
fn timed_turns(
    iters: u64,
    state: &mut Option<State>,
    warm: &State,
    n: usize,
    calls: &mut u64,
) -> Duration {
    let mut timed = Duration::ZERO;
    for _ in 0..iters {
        let mut current = state.take().expect("state");
        if current.messages.len() >= 2 * n {
            current = warm.clone();
        }
        let start = Instant::now();
        let next = turn(current, calls);
        timed += start.elapsed();
        *state = Some(next);
    }
    timed
}

/// Benchmarks the turn of `query_turn_overhead` at `n` messages as `name` in `g`.
fn bench_turn(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    n: usize,
) {
    let base = history(n);
    let mut calls = 0u64;
    // Warm: the normalizer holds the history's normalized prefix.
    let warm = turn(State::new(base), &mut calls);
    let mut state = Some(warm.clone());
    g.bench_function(name, |b| {
        b.iter_custom(|iters| timed_turns(iters, &mut state, &warm, n, &mut calls))
    });
}

fn query_turn(c: &mut Criterion) {
    let mut g = c.benchmark_group("query_turn_overhead");
    g.sample_size(10);
    for (name, n) in [("baseline", 1_000), ("ours", 100_000)] {
        bench_turn(&mut g, name, n);
    }
    g.finish();
}

fn query_turn_traced(c: &mut Criterion) {
    use tracing_subscriber::layer::SubscriberExt as _;
    let mut g = c.benchmark_group("query_turn_traced");
    g.sample_size(10);
    for (name, n) in [("baseline", 1_000), ("ours", 100_000)] {
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::INFO)
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink));
        tracing::subscriber::with_default(subscriber, || bench_turn(&mut g, name, n));
    }
    g.finish();
}

fn versus_clone_floor(c: &mut Criterion) {
    let n = 100_000;
    let mut g = c.benchmark_group("query_turn_vs_request_clones");
    g.sample_size(10);
    let mut calls = 1_000_000u64;
    let warm = turn(State::new(history(n)), &mut calls);
    let normalized =
        threadline_normalize::normalize(&warm.messages, &threadline_normalize::Options::default())
            .messages;
    g.bench_function("baseline", |b| {
        b.iter(|| {
            for _ in 0..2 {
                let copy = black_box(&normalized).clone();
                black_box(copy.len());
                drop(copy);
            }
        })
    });
    let mut state = Some(warm.clone());
    g.bench_function("ours", |b| {
        b.iter_custom(|iters| timed_turns(iters, &mut state, &warm, n, &mut calls))
    });
    g.finish();
}

/// An 8 KB file (text with quotes, backslashes and newlines, which the serializer escapes,
/// like source code).
fn eight_kb_file() -> Arc<str> {
    let line = "    let path = \"src/lib.rs\"; // a \\ line of code\n";
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 8 * 1024 {
        text.push_str(&format!("{i:>5} {line}"));
        i += 1;
    }
    text.into()
}

/// One facade-like run: a new loop over the shared planner, prompt, a Read of 8 KB, answer.
fn planned_turn(
    state: State,
    calls: &mut u64,
    planner: &SharedPlanner,
    bodies: &Arc<std::sync::Mutex<threadline_client::BodyFragments>>,
    file: &Arc<str>,
) -> State {
    let service = Canned {
        calls: *calls,
        bodies: Some(Arc::clone(bodies)),
    };
    let run = query(service, Noop(Arc::clone(file)))
        .with_cache_planner(planner.clone())
        .run(state, vec![Message::user_text("Read it again.")]);
    let last = futures::executor::block_on(run.fold(None, |_, event| async move { Some(event) }));
    *calls += 2;
    finished(last)
}

fn loop_turn_8k_results(c: &mut Criterion) {
    let mut g = c.benchmark_group("loop_turn_8k_results");
    g.sample_size(10);
    let file = eight_kb_file();
    for (name, turns) in [("baseline", 50usize), ("ours", 400)] {
        let planner = SharedPlanner::default();
        let bodies = Arc::default();
        let mut calls = 0u64;
        let mut warm = State::new(Vec::new());
        for _ in 0..turns {
            warm = planned_turn(warm, &mut calls, &planner, &bodies, &file);
        }
        let start_len = warm.messages.len();
        let grown = start_len + start_len / 4;
        let mut state = Some(warm.clone());
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let mut current = state.take().expect("state");
                    if current.messages.len() >= grown {
                        current = warm.clone();
                    }
                    let start = Instant::now();
                    let next = planned_turn(current, &mut calls, &planner, &bodies, &file);
                    timed += start.elapsed();
                    state = Some(next);
                }
                timed
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    query_turn,
    query_turn_traced,
    versus_clone_floor,
    loop_turn_8k_results
);
criterion_main!(benches);
