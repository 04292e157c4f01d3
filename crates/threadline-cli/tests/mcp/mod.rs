//! `threadline mcp list` and `run --dry-run` with MCP servers: the Python SDK fixture server of
//! threadline-mcp (installed by `cargo xtask mcp-servers`), configured in a workspace's
//! `.mcp.json` or through `--mcp-config`.

use std::path::PathBuf;

use serde_json::json;

use crate::common::{code, repo, stderr, stdout, threadline_in};

/// A workspace whose `.mcp.json` has the Python server `py` and a `broken` one.
fn workspace() -> tempfile::TempDir {
    let python = repo().join("target/test-servers/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: install the test servers with `cargo xtask mcp-servers`",
        python.display()
    );
    let script: PathBuf = repo().join("crates/threadline-mcp/tests/fixtures/fastmcp_server.py");
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = json!({"mcpServers": {
        "py": {"command": python, "args": [script], "env": {"UNUSED": "${NOT_SET:-x}"}},
        "broken": {"command": "/nonexistent/threadline-test-server"},
    }});
    std::fs::write(dir.path().join(".mcp.json"), config.to_string()).expect("written");
    dir
}

#[test]
fn mcp_list_shows_servers_tools_instructions_and_a_failed_server_in_one_line() {
    let dir = workspace();
    let out = threadline_in(&["mcp", "list"], dir.path());
    assert_eq!(code(&out), 1, "a server failed: {}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "py: connected, 3 tools\n\
         \x20 | Use add for sums.\n\
         \x20 mcp__py__add [asks] Adds two integers.\n\
         \x20 mcp__py__shout [read-only] Upper-cases text.\n\
         \x20 mcp__py__wait [asks] Waits, then answers; says on stderr when it was cancelled.\n\
         broken: failed: MCP server `broken`: cannot start `/nonexistent/threadline-test-server`: \
         No such file or directory (os error 2)\n"
    );
}

#[test]
fn run_dry_run_prints_the_mcp_tools_and_warns_of_a_failed_server() {
    let dir = workspace();
    let out = threadline_in(
        &["run", "--dry-run", "--date", "2026-12-01", "Add 2 and 3."],
        dir.path(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let request: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the request");
    let tools = request["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["mcp__py__add", "mcp__py__shout", "mcp__py__wait"]);
    assert_eq!(tools[0]["input_schema"]["required"], json!(["a", "b"]));
    assert_eq!(tools[0]["description"], "Adds two integers.");
    assert_eq!(
        stderr(&out),
        "threadline: run: MCP server `broken`: cannot start `/nonexistent/threadline-test-server`: \
         No such file or directory (os error 2)\n"
    );
}

#[test]
fn run_takes_mcp_config_beside_the_workspace_file() {
    let dir = workspace();
    let empty = tempfile::tempdir().expect("a temp dir");
    let extra = dir.path().join(".mcp.json");
    let out = threadline_in(
        &[
            "run",
            "--dry-run",
            "--date",
            "2026-12-01",
            "--mcp-config",
            extra.to_str().expect("utf-8"),
            "Hi.",
        ],
        empty.path(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let request: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the request");
    assert_eq!(request["tools"].as_array().map(Vec::len), Some(3));
    let bad = threadline_in(
        &["mcp", "list", "--mcp-config", "/no/such.json"],
        empty.path(),
    );
    assert_eq!(code(&bad), 2);
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
}
