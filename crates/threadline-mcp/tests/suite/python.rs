//! A second implementation: a server on the official Python SDK (`tests/fixtures/fastmcp_server.py`).

use serde_json::json;
use threadline_query::Permission;

use crate::common::{call, connect, python_server, text, tool};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_server_answers_a_call() {
    let server = connect("py", &python_server(0)).await;
    let names: Vec<&str> = server
        .tool_infos()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["mcp__py__add", "mcp__py__shout"]);
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
