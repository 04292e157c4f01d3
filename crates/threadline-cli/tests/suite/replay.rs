//! `threadline replay FIXTURE` end to end: recorded sessions driven through the loop against
//! the mock over loopback; the summary says how many recorded exchanges were used and which
//! transitions the loop took.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{command, repo, summary};

fn fixture(relative: &str) -> PathBuf {
    repo().join("fixtures/canonical").join(relative)
}

fn replay(path: &Path) -> Output {
    command()
        .arg("replay")
        .arg(path)
        .output()
        .expect("the binary runs")
}

#[test]
fn a_multi_conversation_tool_session_replays_through_the_loop() {
    let output = replay(&fixture(
        "anthropics__anthropic-sdk-typescript/ToolRunner.json",
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let summary = summary(&stdout);
    assert_eq!(summary["exchanges used"], "10 of 10 recorded");
    assert_eq!(summary["terminal"], "completed");
    // Each recorded tool use made the loop go round once with the recorded result.
    let transitions: Vec<&str> = summary["transitions"].split(", ").collect();
    assert!(!transitions.is_empty());
    assert!(
        transitions.iter().all(|t| *t == "next_turn"),
        "{transitions:?}"
    );
    let tool_calls: usize = summary["tool calls"]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(tool_calls >= transitions.len(), "{}", summary["tool calls"]);
    assert!(summary["runs"].parse::<u32>().expect("a count") > 1);
}

#[test]
fn recorded_rate_limits_are_retried_by_the_client_and_the_stream_completes() {
    // Two recorded 429s (x-should-retry: true), then the streamed answer.
    let output = replay(&fixture(
        "anthropics__anthropic-sdk-python/a8b7dbb8-2321-4624-abdb-7ba2136b5c38.json",
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let summary = summary(&stdout);
    assert_eq!(summary["exchanges used"], "3 of 3 recorded");
    assert_eq!(summary["terminal"], "completed");
    assert_eq!(summary["runs"], "1");
}

#[test]
fn the_loop_stops_where_the_recording_did() {
    // The recording ends on a tool use: the loop may not ask for an answer that was never
    // recorded.
    let output = replay(&fixture(
        "anthropics__anthropic-sdk-python/092be1de-d3f8-4c22-a4ea-a7ad54689836.json",
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let summary = summary(&stdout);
    assert_eq!(summary["exchanges used"], "2 of 2 recorded");
}

#[test]
fn a_file_without_messages_exchanges_is_exit_2_in_one_line() {
    let output = replay(&fixture("vercel__ai/anthropic-text.json"));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("records no /v1/messages exchange"));

    let missing = replay(Path::new("/definitely/not/here.json"));
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).starts_with("threadline: replay: cannot read"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}

#[test]
fn a_server_side_compaction_is_kept_and_billed_as_recorded() {
    let output = replay(&fixture(
        "crmne__ruby_llm/chat_anthropic_claude-sonnet-4-6_compacts_a_long_conversation_and_bills_the_summarization_pass.json",
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let summary = summary(&stdout);
    assert_eq!(summary["exchanges used"], "1 of 1 recorded");
    assert_eq!(summary["terminal"], "completed");
    // Billed: both iterations, 99,195 + 162 input and 81 + 11 output; the top level says
    // only 162 / 11.
    assert_eq!(
        summary["tokens"],
        "input 99357, cache write 0, cache read 0, output 92 (billed, as recorded)"
    );
    assert_eq!(
        summary["compaction"],
        "1 server-side compaction iteration: input 99195, output 81 (billed, in the tokens above)"
    );
    assert_eq!(
        summary["compaction blocks"],
        "1 kept in the history, 1 identical to the recording"
    );
    // claude-sonnet-4-6: $3/M input, $15/M output.
    assert_eq!(summary["cost"], "$0.2995");
}

#[test]
fn a_streamed_compaction_is_kept_and_its_message_start_figures_are_not_billed_twice() {
    // message_start carried the compaction pass's figures, message_delta the message pass's
    // and both iterations: the bill is the iterations' sum.
    let output = replay(&fixture(
        "pydantic__pydantic-ai/test_anthropic_compaction_usage_with_cache_streaming.json",
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let summary = summary(&stdout);
    assert_eq!(
        summary["tokens"],
        "input 281, cache write 0, cache read 55096, output 91 (billed, as recorded)"
    );
    assert_eq!(
        summary["compaction"],
        "1 server-side compaction iteration: input 55196, output 83 (billed, in the tokens above)"
    );
    assert_eq!(
        summary["compaction blocks"],
        "1 kept in the history, 1 identical to the recording"
    );
}
