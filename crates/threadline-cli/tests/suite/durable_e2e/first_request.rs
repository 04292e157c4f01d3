//! One agent, one request, durably: the first request a durable turn sends (`threadline
//! worker` behind a real Restate server, the turn submitted with `run --restate`) is byte for
//! byte the body `run --dry-run` prints for the same workspace, MCP servers, date and prompt,
//! read back from the mock's request log. (The MCP server is the Python SDK fixture server,
//! installed by `cargo xtask mcp-servers`.) The same worker runs on Amazon Bedrock.

use std::process::Stdio;

use super::cluster::{Cluster, DATE, WorkerFlags, finish};
use crate::common;

#[test]
fn a_durable_turns_first_request_is_the_dry_runs_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "steps:\n  - {kind: message, content: [{type: text, text: \"Ship it.\"}]}\n",
    )
    .expect("scenario");
    let mcp_config = dir.path().join("mcp.json");
    let servers = serde_json::json!({"mcpServers": {"py": crate::cli::mcp::python_entry()}});
    std::fs::write(&mcp_config, servers.to_string()).expect("the MCP config");
    let flags = WorkerFlags {
        mcp_config: Some(mcp_config.clone()),
        ..WorkerFlags::default()
    };
    let cluster = Cluster::start_with(&flags, &scenario);
    let workspace = cluster.workspace();
    let root = workspace.to_str().expect("a UTF-8 path");
    let prompt = "What does the note say? See @notes.txt.";

    let dry = common::command()
        .args([
            "run",
            "--dry-run",
            "--allow-shell",
            "--date",
            DATE,
            "--cwd",
            root,
        ])
        .arg("--mcp-config")
        .arg(&mcp_config)
        .arg(prompt)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("THREADLINE_DATE")
        .stdin(Stdio::null())
        .output()
        .expect("the dry run runs");
    assert_eq!(common::code(&dry), 0, "{}", common::stderr(&dry));
    assert_eq!(common::stderr(&dry), "", "nothing to warn of");
    let printed = common::stdout(&dry);

    let answer = finish(cluster.submit(prompt), "the durable turn");
    assert!(answer.contains("Ship it."), "{answer}");
    let requests = cluster.mock_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let sent = requests[0]["body"].as_str().expect("the body, as text");
    assert_eq!(printed.strip_suffix('\n'), Some(sent));
    // The agent of `run`: its tools (the MCP server's too), the workspace's instructions, the
    // mentioned file, the date, cache markers.
    for needle in [
        "\"Read\"",
        "\"Bash\"",
        "\"mcp__py__add\"",
        "Keep the notes short.",
        "ship it",
        DATE,
        "cache_control",
    ] {
        assert!(sent.contains(needle), "{needle} is not in {sent}");
    }
}

/// `threadline worker --provider bedrock`: a durable turn's requests are Bedrock's signed
/// InvokeModel, the model by its Bedrock id, each accepted.
#[test]
fn a_durable_turn_runs_on_bedrock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "steps:\n  - {kind: message, content: [{type: text, text: \"Shipped from Bedrock.\"}]}\n",
    )
    .expect("scenario");
    let flags = WorkerFlags {
        bedrock: true,
        ..WorkerFlags::default()
    };
    let cluster = Cluster::start_with(&flags, &scenario);
    let answer = finish(cluster.submit("Ship it."), "the durable turn");
    assert!(answer.contains("Shipped from Bedrock."), "{answer}");
    let requests = cluster.mock_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0]["platform"], "bedrock");
    assert_eq!(requests[0]["status"], 200);
    assert_eq!(
        requests[0]["path"],
        "/model/eu.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"
    );
    let body: serde_json::Value =
        serde_json::from_str(requests[0]["body"].as_str().expect("a body")).expect("JSON");
    assert_eq!(body["anthropic_version"], "bedrock-2023-05-31");
    assert!(body.get("model").is_none(), "{body}");
}
