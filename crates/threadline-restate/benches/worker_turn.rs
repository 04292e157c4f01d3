//! The durable worker's own cost per turn, as ratios read by `cargo xtask bench`.
//!
//! `threadline_restate::run_turn` over the in-memory `RecordingJournal`: what the worker does
//! in a turn (read the session's state, run the loop with journaled steps, write the changed
//! suffix), without a Restate server's round trips (`durable.rs` measures those). Each turn
//! is a prompt, a tool use of `read` whose result is an 8 KB file, and a text answer, from a
//! zero-latency model that answers from the request. Only `run_turn` is timed (the journal's
//! commit between invocations, which stands for the engine, is not). The session is put back
//! to its starting history (untimed, then one untimed turn) when it has grown by a quarter.
//!
//! * `worker_turn_8k_results` — a turn on a worker that keeps its sessions
//!   (`Worker::with_session_cache`, the default): `ours` at a history of 400 such turns,
//!   `baseline` at 50. The turn's fresh cache planner starts from the memo the session's last
//!   turn left, so it flattens only what changed; reading and comparing the stored history
//!   still costs what the history costs.
//! * `worker_turn_kept_vs_loaded` — the turn at 400 turns of history on that worker (`ours`)
//!   vs on a worker that keeps none and loads every turn from the stored bytes
//!   (`with_session_cache(0)`: deserializes and normalizes the whole history) (`baseline`).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use threadline_query::{QueryConfig, Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_restate::{Journal as _, RecordingJournal, TurnRequest, Worker, run_turn};
use threadline_wire::service::{EventStream, EventStreamFuture, ServiceError};
use threadline_wire::{Content, ContentBlock, MessagesRequest, StreamEvent};

const MODEL: &str = "claude-sonnet-4-5";

/// Answers a request whose last message holds tool results with text, any other with a
/// tool use of `read`; ids from the request's length, so every answer has its own.
#[derive(Clone)]
struct Model;

fn answer_events(n: usize, results: bool) -> Vec<StreamEvent> {
    let (block, stop) = if results {
        (json!({"type": "text", "text": "All good."}), "end_turn")
    } else {
        let id = format!("toolu_{n}");
        let block = json!({"type": "tool_use", "id": id, "name": "read", "input": {}});
        (block, "tool_use")
    };
    let usage = json!({"input_tokens": 10, "output_tokens": 5});
    [
        json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "content": [], "model": MODEL, "usage": usage}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]
    .into_iter()
    .map(|value| serde_json::from_value(value).expect("a stream event"))
    .collect()
}

impl tower_service::Service<MessagesRequest> for Model {
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: MessagesRequest) -> EventStreamFuture {
        let n = request.messages.len();
        let results = request.messages.last().is_some_and(|last| {
            matches!(&last.content, Content::Blocks(blocks)
                if blocks.iter().any(|b| matches!(b, ContentBlock::ToolResult(_))))
        });
        let events: Vec<_> = answer_events(n, results).into_iter().map(Ok).collect();
        Box::pin(async move {
            let stream: EventStream = Box::pin(futures::stream::iter(events));
            Ok(stream)
        })
    }
}

/// An instant, idempotent `read` whose result is the same 8 KB file.
struct Read(Arc<str>);

impl Tool for Read {
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "Reads the file."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_idempotent(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        let text = self.0.to_string();
        tool_result(async move { ToolOutput::text(text) })
    }
}

fn eight_kb_file() -> Arc<str> {
    let line = "fn main() { println!(\"the same line of a source file\"); }\n";
    line.repeat(8 * 1024 / line.len()).into()
}

fn worker(cache: Option<usize>) -> Worker {
    let worker = Worker::new(Model, QueryConfig::new(MODEL, 1024)).with_tool(Read(eight_kb_file()));
    match cache {
        Some(bytes) => worker.with_session_cache(bytes),
        None => worker,
    }
}

/// One committed turn; returns how long `run_turn` took.
fn turn(
    runtime: &tokio::runtime::Runtime,
    worker: &Worker,
    journal: &RecordingJournal,
) -> Duration {
    journal.begin();
    let start = Instant::now();
    let outcome = runtime.block_on(run_turn(
        journal,
        worker,
        "s1",
        TurnRequest::new("Read it again."),
    ));
    let took = start.elapsed();
    let outcome = outcome.expect("the turn completes");
    black_box(outcome.messages);
    journal.complete();
    took
}

/// A journal holding `state` as its committed state.
fn journal_with(state: &BTreeMap<String, Vec<u8>>) -> RecordingJournal {
    let journal = RecordingJournal::new();
    journal.begin();
    for (key, value) in state {
        journal.set(key, value.clone());
    }
    journal.complete();
    journal
}

/// Times turns of `worker` on a session of `turns` turns, put back (and warmed by one turn)
/// when it has grown by a quarter.
fn bench_turns(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    worker: &Worker,
    turns: usize,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let mut journal = RecordingJournal::new();
    for _ in 0..turns {
        turn(&runtime, worker, &journal);
    }
    let start = journal.committed();
    let mut done = 0;
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                if done >= turns.div_ceil(4) {
                    journal = journal_with(&start);
                    turn(&runtime, worker, &journal);
                    done = 1;
                }
                timed += turn(&runtime, worker, &journal);
                done += 1;
            }
            timed
        })
    });
}

fn worker_turn_8k_results(c: &mut Criterion) {
    let mut g = c.benchmark_group("worker_turn_8k_results");
    g.sample_size(10);
    for (name, turns) in [("baseline", 50usize), ("ours", 400)] {
        bench_turns(&mut g, name, &worker(None), turns);
    }
    g.finish();
}

fn worker_turn_kept_vs_loaded(c: &mut Criterion) {
    let mut g = c.benchmark_group("worker_turn_kept_vs_loaded");
    g.sample_size(10);
    for (name, cache) in [("baseline", Some(0)), ("ours", None)] {
        bench_turns(&mut g, name, &worker(cache), 400);
    }
    g.finish();
}

criterion_group!(benches, worker_turn_8k_results, worker_turn_kept_vs_loaded);
criterion_main!(benches);
