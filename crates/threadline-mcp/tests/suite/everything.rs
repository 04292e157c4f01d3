//! `@modelcontextprotocol/server-everything` (npm, pinned), over stdio and streamable HTTP.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use threadline_mcp::{McpConfig, McpOptions, McpServers};
use threadline_query::{Permission, ToolContext};
use threadline_wire::{Content, ContentBlock};

use crate::common::{
    call, call_with, connect, everything_http, everything_stdio, http, options, stdio, text, tool,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_lists_tools_with_schemas_annotations_and_instructions() {
    let server = connect("everything", &everything_stdio()).await;
    let names: Vec<&str> = server
        .tool_infos()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    for expected in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
        "mcp__everything__trigger-long-running-operation",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let echo = tool(&server, "mcp__everything__echo");
    assert_eq!(
        echo.input_schema()["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(echo.input_schema()["required"], json!(["message"]));
    // trigger-long-running-operation is annotated read-only and not destructive.
    let long = tool(&server, "mcp__everything__trigger-long-running-operation");
    assert!(long.is_concurrency_safe(&json!({})));
    assert_eq!(long.check_permission(&json!({})), Permission::Allow);
    let instructions = server.instructions().expect("instructions");
    assert!(!instructions.trim().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_call_with_arguments_and_an_image_result() {
    let server = connect("everything", &everything_stdio()).await;
    let (_, output) = call(
        &*tool(&server, "mcp__everything__echo"),
        json!({"message": "hi"}),
    )
    .await;
    assert!(!output.is_error);
    assert_eq!(text(&output), "Echo: hi");
    let (_, output) = call(
        &*tool(&server, "mcp__everything__get-sum"),
        json!({"a": 2, "b": 40}),
    )
    .await;
    assert!(text(&output).contains("42"), "{:?}", output.content);

    let (_, output) = call(
        &*tool(&server, "mcp__everything__get-tiny-image"),
        json!({}),
    )
    .await;
    let Content::Blocks(blocks) = &output.content else {
        panic!("blocks: {:?}", output.content)
    };
    let kinds: Vec<&str> = blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["text", "image", "text"]);
    let image = serde_json::to_value(&blocks[1]).expect("json");
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert!(
        image["source"]["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("iVBOR"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_progress_notifications_become_progress_events() {
    let server = connect("everything", &everything_stdio()).await;
    let long = tool(&server, "mcp__everything__trigger-long-running-operation");
    let (progress, output) = call(&*long, json!({"duration": 0.3, "steps": 3})).await;
    // The last notification and the result leave the server back to back; rmcp may deliver
    // the result first (the progress after it is then dropped: the call is over). The
    // earlier ones come 100 ms apart and arrive, in order.
    let expected = [
        json!({"progress": 1.0, "total": 3.0}),
        json!({"progress": 2.0, "total": 3.0}),
        json!({"progress": 3.0, "total": 3.0}),
    ];
    assert!(progress.len() >= 2, "{progress:?}");
    assert_eq!(progress, expected[..progress.len()]);
    assert_eq!(
        text(&output),
        "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_cancels_a_long_call_and_the_server_goes_on() {
    let server = connect("everything", &everything_stdio()).await;
    let long = tool(&server, "mcp__everything__trigger-long-running-operation");
    let ctx = ToolContext::new("toolu_long");
    let cancel = ctx.cancel.clone();
    let started = Instant::now();
    let (progress, output) = call_with(&*long, json!({"duration": 30, "steps": 300}), ctx, |_| {
        cancel.cancel();
    })
    .await;
    assert_eq!(progress.len(), 1, "cancelled at the first progress");
    assert!(output.is_error);
    assert_eq!(text(&output), "The MCP call was cancelled.");
    assert!(started.elapsed() < Duration::from_secs(5));
    let (_, output) = call(
        &*tool(&server, "mcp__everything__echo"),
        json!({"message": "after"}),
    )
    .await;
    assert_eq!(text(&output), "Echo: after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_is_an_error_result_and_the_session_goes_on() {
    let config: McpConfig = McpConfig::parse(
        &json!({"mcpServers": {
            "doomed": {"command": "node", "args": [crate::common::everything_js(), "stdio"]},
            "other": {"command": "node", "args": [crate::common::everything_js(), "stdio"]},
        }})
        .to_string(),
        "t.json".as_ref(),
        &|_| None,
    )
    .expect("config");
    let servers = McpServers::connect(&config, options()).await;
    assert!(servers.failures.is_empty(), "{:?}", servers.warnings());
    let doomed = &servers.servers[0];
    assert_eq!(doomed.name(), "doomed");
    let pid = doomed.pid().expect("a child");
    let long = tool(doomed, "mcp__doomed__trigger-long-running-operation");
    let (_, output) = call_with(
        &*long,
        json!({"duration": 30, "steps": 300}),
        ToolContext::new("t"),
        |_| {
            let pid =
                rustix::process::Pid::from_raw(i32::try_from(pid).expect("pid")).expect("pid");
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        },
    )
    .await;
    assert!(output.is_error);
    assert!(
        text(&output).starts_with(
            "MCP server `doomed`: the server closed the connection during `trigger-long-running-operation`"
        ),
        "{}",
        text(&output)
    );
    // Its tools are withdrawn; the other server's remain and answer.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !doomed.is_closed() {
        assert!(Instant::now() < deadline, "the session noticed the exit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let names: Vec<String> = servers
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("mcp__other__")),
        "{names:?}"
    );
    let (_, output) = call(
        &*tool(&servers.servers[1], "mcp__other__echo"),
        json!({"message": "on"}),
    )
    .await;
    assert_eq!(text(&output), "Echo: on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_and_hanging_servers_are_one_line_each() {
    let config = McpConfig::parse(
        &json!({"mcpServers": {
            "absent": {"command": "/nonexistent/threadline-mcp-server"},
            "good": {"command": "node", "args": [crate::common::everything_js(), "stdio"]},
            "hangs": {"command": "sleep", "args": ["30"]},
            "exits": {"command": "sh", "args": ["-c", "echo 'fatal: no token' >&2; exit 3"]},
        }})
        .to_string(),
        "t.json".as_ref(),
        &|_| None,
    )
    .expect("config");
    let started = Instant::now();
    let options = McpOptions::default().with_connect_timeout(Duration::from_secs(3));
    let servers = McpServers::connect(&config, options).await;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "concurrent, bounded"
    );
    assert_eq!(servers.servers.len(), 1);
    assert_eq!(servers.servers[0].name(), "good");
    let warnings = servers.warnings();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "MCP server `absent`: cannot start `/nonexistent/threadline-mcp-server`: No such file or directory (os error 2)"
    );
    assert!(
        warnings[1].starts_with("MCP server `exits`: handshake failed: "),
        "{}",
        warnings[1]
    );
    assert!(
        warnings[1].ends_with(" (stderr: fatal: no token)"),
        "{}",
        warnings[1]
    );
    assert_eq!(warnings[2], "MCP server `hangs`: no answer within 3s");
    assert!(warnings.iter().all(|w| !w.contains('\n')));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_never_gets_anthropic_variables() {
    let config = stdio(
        "node",
        [
            crate::common::everything_js().display().to_string(),
            "stdio".into(),
        ],
        [
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("VISIBLE_TO_SERVER", "yes"),
        ],
    );
    let server = connect("env", &config).await;
    let (_, output) = call(&*tool(&server, "mcp__env__get-env"), json!({})).await;
    let env: Value = serde_json::from_str(text(&output)).expect("the env as JSON");
    assert_eq!(env["VISIBLE_TO_SERVER"], "yes");
    assert!(
        env.as_object()
            .expect("object")
            .keys()
            .all(|k| !k.starts_with("ANTHROPIC_")),
        "{env}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_lists_calls_and_reports_progress() {
    let running = everything_http().await;
    let server = connect("web", &http(running.url.clone())).await;
    assert!(server.pid().is_none());
    let names: Vec<&str> = server
        .tool_infos()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(names.contains(&"mcp__web__echo"), "{names:?}");
    let (_, output) = call(
        &*tool(&server, "mcp__web__echo"),
        json!({"message": "over http"}),
    )
    .await;
    assert_eq!(text(&output), "Echo: over http");
    let long = tool(&server, "mcp__web__trigger-long-running-operation");
    let (progress, output) = call(&*long, json!({"duration": 0.3, "steps": 3})).await;
    let expected = [
        json!({"progress": 1.0, "total": 3.0}),
        json!({"progress": 2.0, "total": 3.0}),
        json!({"progress": 3.0, "total": 3.0}),
    ];
    assert!(progress.len() >= 2, "{progress:?}");
    assert_eq!(progress, expected[..progress.len()]);
    assert!(!output.is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_and_linked_resources_become_text() {
    let server = connect("everything", &everything_stdio()).await;
    let (_, output) = call(
        &*tool(&server, "mcp__everything__get-resource-reference"),
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await;
    assert!(!output.is_error, "{:?}", output.content);
    let texts: Vec<String> = output
        .content
        .to_blocks()
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts.iter().any(
            |t| t.starts_with("[resource demo://resource/static/document/")
                || t.starts_with("[resource ")
        ),
        "{texts:?}"
    );
    let (_, output) = call(
        &*tool(&server, "mcp__everything__get-resource-links"),
        json!({"count": 2}),
    )
    .await;
    let links: Vec<String> = output
        .content
        .to_blocks()
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) if t.text.starts_with("[resource link ") => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(links.len(), 2, "{:?}", output.content);
}
