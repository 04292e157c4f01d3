//! The streaming tool executor against a slow stream, on tokio's paused clock (no wall-clock
//! sleeps: time advances only when every task waits).
//!
//! - A tool starts while the response is still streaming: the stream waits for a gate that
//!   only the tool's start opens, so if the tool started after the response ended the run
//!   would never finish (the outer timeout fails the test).
//! - Results are delivered in tool-use order although the calls finish in the opposite
//!   order.
//! - Concurrency-safe calls overlap; an unsafe call runs alone.
//! - Progress arrives while the model is still streaming.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Log, Sleeper, check, run, sleep_input, tool_result_ids, tools};
use threadline_message::Message;
use threadline_query::scripted::{Reply, Response, ScriptedService};
use threadline_query::{Event, Query, QueryConfig, State, Terminal, ToolSet};
use threadline_wire::{StopReason, StreamEvent};
use tokio::sync::Notify;

const MODEL: &str = threadline_query::scripted::SCRIPTED_MODEL;

fn is_message_stop(event: &Event) -> bool {
    matches!(event, Event::Stream(e) if matches!(**e, StreamEvent::MessageStop(_)))
}

/// The answer after the tools: `msg_2`, ending the turn.
fn done() -> Reply {
    Reply::stream(
        Response::new("msg_2")
            .text("Done.")
            .stop(StopReason::EndTurn),
    )
}

/// The loop over `service` with `tools`.
fn query(service: &ScriptedService, tools: &ToolSet) -> Query<ScriptedService> {
    Query::new(service.clone(), QueryConfig::new(MODEL, 1024)).with_tools(tools.clone())
}

#[tokio::test(start_paused = true)]
async fn tools_start_before_the_response_ends_and_results_come_in_tool_use_order() {
    let log = Log::default();
    let started = Arc::new(Notify::new());
    let mut slow = Sleeper::new("slow", true, &log);
    slow.on_start = Some(Arc::clone(&started));
    let fast = Sleeper::new("fast", true, &log);
    let tools = ToolSet::new().with(slow).with(fast);
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .tool_use("toolu_a", "slow", sleep_input(300))
                // The response cannot go on until the first tool has started.
                .wait(&started)
                .tool_use("toolu_b", "fast", sleep_input(50))
                .sleep(Duration::from_millis(1_000))
                .text("Both are running.")
                .stop(StopReason::ToolUse),
        ),
        done(),
    ]);
    let query = query(&service, &tools);
    let begin = tokio::time::Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(3_600),
        run(query, State::default(), vec![Message::user_text("go")]),
    )
    .await
    .expect("the stream waited for a tool that never started");
    assert_eq!(out.terminal, Terminal::Completed);

    // Both tools started while the first response was streaming…
    let stop = out.position(is_message_stop).expect("message_stop");
    for id in ["toolu_a", "toolu_b"] {
        let start = out
            .position(|e| matches!(e, Event::ToolStarted { tool_use_id, .. } if tool_use_id == id))
            .expect("started");
        assert!(start < stop, "{id} started after the response ended");
    }
    // …and finished long before it ended (1 s of streaming after they started).
    assert!(log.at("toolu_a", "finish") - begin < Duration::from_millis(1_000));
    // They finished out of order, yet the results are in tool-use order.
    assert_eq!(log.order("finish"), ["toolu_b", "toolu_a"]);
    assert_eq!(tool_result_ids(&out.state.messages), ["toolu_a", "toolu_b"]);
    // Safe calls overlapped.
    assert!(log.at("toolu_b", "start") < log.at("toolu_a", "finish"));
    // Progress was reported before the response ended.
    let progress = out
        .position(|e| matches!(e, Event::Progress(_)))
        .expect("progress");
    assert!(progress < stop);

    check(&out, &service, &tools);
}

#[tokio::test(start_paused = true)]
async fn an_unsafe_call_runs_alone_and_nothing_overtakes_it() {
    let log = Log::default();
    let tools = tools(&log);
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .tool_use("toolu_1", "read", sleep_input(100))
                .tool_use("toolu_2", "write", sleep_input(100))
                .tool_use("toolu_3", "read", sleep_input(100))
                .tool_use("toolu_4", "read", sleep_input(100))
                .stop(StopReason::ToolUse),
        ),
        done(),
    ]);
    let query = query(&service, &tools);
    let out = run(query, State::default(), vec![Message::user_text("go")]).await;
    assert_eq!(out.terminal, Terminal::Completed);
    // The write waited for the first read, and the later reads waited for the write.
    assert!(log.at("toolu_2", "start") >= log.at("toolu_1", "finish"));
    assert!(log.at("toolu_3", "start") >= log.at("toolu_2", "finish"));
    // The two reads after it ran together.
    assert_eq!(log.at("toolu_3", "start"), log.at("toolu_4", "start"));
    assert_eq!(
        log.order("start"),
        ["toolu_1", "toolu_2", "toolu_3", "toolu_4"]
    );
    assert_eq!(
        tool_result_ids(&out.state.messages),
        ["toolu_1", "toolu_2", "toolu_3", "toolu_4"]
    );
    check(&out, &service, &tools);
}
