//! `threadline mcp list` and `run --dry-run` with MCP servers: the Python SDK fixture server of
//! threadline-mcp (installed by `cargo xtask mcp-servers`), configured in a workspace's
//! `.mcp.json` or through `--mcp-config`.

use std::path::PathBuf;

use serde_json::json;

use std::path::Path;
use std::process::Output;

use crate::common::{code, command, repo, stderr, stdout};

/// The binary in `cwd` with `HOME` an empty directory below it (no user settings approve
/// anything).
fn threadline_in(args: &[&str], cwd: &Path) -> Output {
    command()
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd.join("no-home"))
        .env_remove("THREADLINE_DATE")
        .output()
        .expect("the binary runs")
}

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
    approve(
        dir.path(),
        json!({"enabledMcpjsonServers": ["py", "broken"]}),
    );
    dir
}

/// Writes the workspace's `.claude/settings.local.json`.
fn approve(workspace: &Path, settings: serde_json::Value) {
    std::fs::create_dir_all(workspace.join(".claude")).expect("dir");
    std::fs::write(
        workspace.join(".claude/settings.local.json"),
        settings.to_string(),
    )
    .expect("written");
}

#[test]
fn a_workspace_server_runs_only_when_approved_like_claude_code() {
    let dir = workspace();
    // Not approved: nothing starts, one line each.
    approve(dir.path(), json!({}));
    // A committed settings.json approving everything does not count.
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        json!({"enableAllProjectMcpServers": true}).to_string(),
    )
    .expect("written");
    let out = threadline_in(&["mcp", "list"], dir.path());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "no MCP servers configured\n");
    assert_eq!(
        stderr(&out),
        "threadline: mcp: MCP server `broken` of .mcp.json is not approved: add it to \
         `enabledMcpjsonServers` in .claude/settings.local.json (or pass --mcp-config)\n\
         threadline: mcp: MCP server `py` of .mcp.json is not approved: add it to \
         `enabledMcpjsonServers` in .claude/settings.local.json (or pass --mcp-config)\n"
    );
    // All approved but one disabled.
    approve(
        dir.path(),
        json!({"enableAllProjectMcpServers": true, "disabledMcpjsonServers": ["broken"]}),
    );
    let out = threadline_in(&["mcp", "list"], dir.path());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("py: connected, 3 tools\n"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("broken"));
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
