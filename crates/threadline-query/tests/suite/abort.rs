//! Abort at any instant (a property over the abort time, on tokio's paused clock): the
//! transcript on disk always normalizes to a valid request, equals the history the run hands
//! back, holds every message the run reported, and keeps every piece of text the model
//! streamed before the abort.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Log, Sleeper, assert_history_valid, run, sleep_input};
use proptest::prelude::*;
use threadline_message::{Message, TranscriptWriter, read_transcript};
use threadline_query::scripted::{Reply, Response, ScriptedService};
use threadline_query::{CancellationToken, Event, Query, QueryConfig, State, Terminal, ToolSet};
use threadline_wire::{ContentDelta, StopReason, StreamEvent};

const MODEL: &str = threadline_query::scripted::SCRIPTED_MODEL;
const MS: fn(u64) -> Duration = Duration::from_millis;

fn script() -> Vec<Reply> {
    vec![
        Reply::stream(
            Response::new("msg_1")
                .sleep(MS(20))
                .slow_text("Let me look around the project first.", MS(40))
                .tool_use("toolu_1", "read", sleep_input(200))
                .sleep(MS(50))
                .tool_use("toolu_2", "write", sleep_input(300))
                .sleep(MS(50))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new("msg_2")
                .sleep(MS(100))
                .slow_text("Now both reads, in parallel.", MS(30))
                .tool_use("toolu_3", "read", sleep_input(100))
                .tool_use("toolu_4", "read", sleep_input(150))
                .sleep(MS(20))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new("msg_3")
                .sleep(MS(100))
                .slow_text("All done: the files are in place.", MS(100))
                .stop(StopReason::EndTurn),
        ),
    ]
}

/// Text streamed per API message id, from the run's events.
fn streamed_text(events: &[Event]) -> BTreeMap<String, String> {
    let mut text = BTreeMap::<String, String>::new();
    let mut current = String::new();
    for event in events {
        if let Event::Stream(e) = event {
            match &**e {
                StreamEvent::MessageStart(start) => current = start.message.id.clone(),
                StreamEvent::ContentBlockDelta(d) => {
                    if let ContentDelta::Text(t) = &d.delta {
                        text.entry(current.clone()).or_default().push_str(&t.text);
                    }
                }
                _ => {}
            }
        }
    }
    text
}

/// Text kept per API message id in the history.
fn kept_text(history: &[Message]) -> BTreeMap<String, String> {
    let mut text = BTreeMap::<String, String>::new();
    for m in history {
        if let Message::Assistant(a) = m
            && let Some(id) = &a.api_message_id
        {
            for block in &a.content {
                if let threadline_wire::ContentBlock::Text(t) = block {
                    text.entry(id.clone()).or_default().push_str(&t.text);
                }
            }
        }
    }
    text
}

fn abort_at(abort_ms: u64) -> Result<Terminal, TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("session.jsonl");
    let log = Log::default();
    let tools = ToolSet::new()
        .with(Sleeper::new("read", true, &log))
        .with(Sleeper::new("write", false, &log));
    let service = ScriptedService::new(script());
    let cancel = CancellationToken::new();
    let query = Query::new(service.clone(), QueryConfig::new(MODEL, 1024))
        .with_tools(tools.clone())
        .with_transcript(TranscriptWriter::open(&path).expect("transcript"))
        .with_cancellation(cancel.clone());
    let out = common::paused_runtime().block_on(async move {
        let abort = tokio::spawn(async move {
            tokio::time::sleep(MS(abort_ms)).await;
            cancel.cancel();
        });
        let out = run(
            query,
            State::default(),
            vec![Message::user_text("Set up the project.")],
        )
        .await;
        abort.abort();
        out
    });
    prop_assert!(
        matches!(
            out.terminal,
            Terminal::Completed | Terminal::AbortedStreaming | Terminal::AbortedTools
        ),
        "{:?}",
        out.terminal
    );
    prop_assert!(service.violations().is_empty());

    let read = read_transcript(&path).expect("readable");
    prop_assert!(read.problems.is_empty(), "{:?}", read.problems);
    // The transcript is the history, message for message.
    prop_assert_eq!(&read.messages, &out.state.messages);
    // Every reported message is on disk, in order.
    let reported: Vec<&Message> = out.messages();
    let on_disk: Vec<&Message> = read.messages.iter().collect();
    prop_assert_eq!(reported, on_disk);
    // It normalizes to a valid request.
    assert_history_valid(&read.messages, &tools);
    // No streamed text was lost.
    prop_assert_eq!(streamed_text(&out.events), kept_text(&read.messages));
    Ok(out.terminal)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn aborting_at_any_instant_leaves_a_valid_complete_transcript(abort_ms in 0u64..2_000) {
        abort_at(abort_ms)?;
    }
}

#[test]
fn the_interesting_instants() {
    // Before the first event, inside the first text, while tools run during streaming, while
    // tools run after the response, inside the last text, and after the end.
    let mut terminals = Vec::new();
    for ms in [0, 1, 30, 100, 250, 400, 600, 900, 1_100, 5_000] {
        let terminal = abort_at(ms).unwrap_or_else(|e| panic!("abort at {ms} ms: {e}"));
        terminals.push(terminal.name());
    }
    // The instants reach every way the run can end here (the timeline: first response
    // 0–160 ms, its tools until 560, second response 560–710, its tools until 840, last
    // response 840–1040).
    assert_eq!(
        terminals,
        [
            "aborted_streaming",
            "aborted_streaming",
            "aborted_streaming",
            "aborted_streaming",
            "aborted_tools",
            "aborted_tools",
            "aborted_streaming",
            "aborted_streaming",
            "completed",
            "completed"
        ]
    );
}

/// A tool that, when it starts, reads the transcript at `path` and logs whether its own call
/// is already there (`"recorded"`) or not (`"unrecorded"`).
struct Witness {
    path: std::path::PathBuf,
    log: Log,
}

impl threadline_query::Tool for Witness {
    fn name(&self) -> &str {
        "witness"
    }
    fn description(&self) -> &str {
        "Checks the transcript."
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    fn call(
        &self,
        _input: serde_json::Value,
        ctx: threadline_query::ToolContext,
    ) -> threadline_query::ToolStream {
        let recorded = read_transcript(&self.path).is_ok_and(|read| {
            read.messages.iter().any(|m| {
                matches!(m, Message::Assistant(a) if a.content.iter().any(|b| matches!(
                    b,
                    threadline_wire::ContentBlock::ToolUse(t) if t.id == ctx.tool_use_id
                )))
            })
        });
        self.log.push(
            &ctx.tool_use_id,
            if recorded { "recorded" } else { "unrecorded" },
        );
        threadline_query::tool_result(async { threadline_query::ToolOutput::text("seen") })
    }
}

/// A response whose first call is followed by a long pause before the next block: the call's
/// tool starts during the pause.
fn witness_script() -> Vec<Reply> {
    vec![
        Reply::stream(
            Response::new("msg_1")
                .slow_text("Checking.", MS(5))
                .tool_use("toolu_w1", "witness", serde_json::json!({}))
                .sleep(MS(500))
                .tool_use("toolu_w2", "witness", serde_json::json!({}))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new("msg_2")
                .slow_text("Done.", MS(5))
                .stop(StopReason::EndTurn),
        ),
    ]
}

#[test]
fn every_tool_starts_only_after_its_call_is_in_the_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("session.jsonl");
    let log = Log::default();
    let tools = ToolSet::new().with(Witness {
        path: path.clone(),
        log: log.clone(),
    });
    let service = ScriptedService::new(witness_script());
    let query = Query::new(service, QueryConfig::new(MODEL, 1024))
        .with_tools(tools.clone())
        .with_transcript(TranscriptWriter::open(&path).expect("transcript"));
    let out = common::paused_runtime().block_on(run(
        query,
        State::default(),
        vec![Message::user_text("Check.")],
    ));
    assert_eq!(out.terminal, Terminal::Completed);
    assert_eq!(log.order("recorded"), ["toolu_w1", "toolu_w2"]);
    assert!(log.order("unrecorded").is_empty());
    let read = read_transcript(&path).expect("readable");
    assert_eq!(read.messages, out.state.messages);
    assert_history_valid(&read.messages, &tools);
}

#[cfg(unix)]
#[test]
fn a_call_that_cannot_be_recorded_is_not_run() {
    let log = Log::default();
    let tools = ToolSet::new().with(Witness {
        path: "/dev/null".into(),
        log: log.clone(),
    });
    let service = ScriptedService::new(witness_script());
    // Every write to /dev/full fails: no call can be recorded.
    let query = Query::new(service, QueryConfig::new(MODEL, 1024))
        .with_tools(tools.clone())
        .with_transcript(TranscriptWriter::open("/dev/full").expect("opens"));
    let out = common::paused_runtime().block_on(run(
        query,
        State::default(),
        vec![Message::user_text("Check.")],
    ));
    assert!(
        log.order("recorded").is_empty() && log.order("unrecorded").is_empty(),
        "a tool ran"
    );
    let results = common::tool_result_texts(&out.state.messages);
    assert_eq!(results.len(), 2, "{results:?}");
    for (_, text, is_error) in results {
        assert_eq!(text, threadline_query::recovery::NOT_RECORDED);
        assert!(is_error);
    }
    assert_history_valid(&out.state.messages, &tools);
}
