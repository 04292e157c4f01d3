//! A second implementation: a server on the official Python SDK (`tests/fixtures/fastmcp_server.py`).

use std::time::{Duration, Instant};

use serde_json::json;
use threadline_mcp::McpServer;
use threadline_query::{Permission, ToolContext};

use crate::common::{call, call_with, connect, options, python_server, text, tool};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_server_answers_a_call() {
    let server = connect("py", &python_server(0)).await;
    let names: Vec<&str> = server
        .tool_infos()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["mcp__py__add", "mcp__py__shout", "mcp__py__wait"]);
    assert_eq!(server.instructions(), Some("Use add for sums."));
    let add = tool(&server, "mcp__py__add");
    assert_eq!(add.input_schema()["required"], json!(["a", "b"]));
    // Not read-only: asks, like the shell; `shout` is read-only: allowed, concurrency-safe.
    assert!(matches!(
        add.check_permission(&json!({})),
        Permission::Ask { .. }
    ));
    let shout = tool(&server, "mcp__py__shout");
    assert!(shout.is_concurrency_safe(&json!({})));
    assert_eq!(shout.check_permission(&json!({})), Permission::Allow);
    let (_, output) = call(&*add, json!({"a": 2, "b": 3})).await;
    assert!(!output.is_error);
    assert_eq!(text(&output), "5");
    // A schema-invalid call is the server's error result, `isError` → `is_error`.
    let (_, output) = call(&*add, json!({"a": "x", "b": 3})).await;
    assert!(output.is_error, "{:?}", output.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_sends_notifications_cancelled_to_the_server() {
    let server = connect("py", &python_server(0)).await;
    let wait = tool(&server, "mcp__py__wait");
    let ctx = ToolContext::new("toolu_wait");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let (_, output) = call_with(&*wait, json!({"seconds": 30}), ctx, |_| {}).await;
    assert_eq!(text(&output), "The MCP call was cancelled.");
    // The server's handler saw the cancellation (it says so on its stderr, which we keep).
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.stderr().contains("wait: cancelled") {
        assert!(Instant::now() < deadline, "stderr: {}", server.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_an_error_result() {
    let options = options().with_call_timeout(Duration::from_millis(300));
    let server = McpServer::connect("py", &python_server(0), options)
        .await
        .expect("connects");
    let (_, output) = call(&*tool(&server, "mcp__py__wait"), json!({"seconds": 30})).await;
    assert!(output.is_error);
    assert_eq!(
        text(&output),
        "MCP server `py`: `wait` did not answer within 0.3s."
    );
    let (_, output) = call(&*tool(&server, "mcp__py__add"), json!({"a": 1, "b": 1})).await;
    assert_eq!(text(&output), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_server_leaves_no_process_behind() {
    let server = connect("py", &python_server(0)).await;
    let pid = server.pid().expect("a child");
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).expect("pid")).expect("pid");
    drop(server);
    // Killed and reaped: not even a zombie answers signal 0.
    let deadline = Instant::now() + Duration::from_secs(5);
    while rustix::process::test_kill_process(pid).is_ok() {
        assert!(Instant::now() < deadline, "the child is still there");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
