//! A hostile workspace and a hostile server: nothing starts unapproved, no `ANTHROPIC_*`
//! variable is expanded into a workspace server, a broken or unreadable `.mcp.json` is a
//! warning and never a hang, a `tools/list` whose pages never end costs a bounded amount, and
//! a server's huge error message is cut wherever it is shown.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use threadline_mcp::content::MAX_OUTPUT_BYTES;
use threadline_mcp::{
    Approvals, ConnectError, MAX_ERROR_MESSAGE_BYTES, MAX_TOOL_PAGES, MAX_TOOLS_PER_SERVER,
    McpOptions, McpServer, ServerConfig, WorkspaceServers,
};

use crate::common::stdio;

/// A canonical workspace holding `.mcp.json` with `text`.
fn workspace(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".mcp.json"), text).expect("write");
    let root = dir.path().canonicalize().expect("canonical");
    (dir, root)
}

/// Loads the workspace's servers on a thread, failing the test if that takes over 10 s.
fn load_within(root: &Path, approvals: &Approvals, file: Option<&Path>) -> WorkspaceServers {
    let (sender, receiver) = std::sync::mpsc::channel();
    let (root, approvals, file) = (root.to_owned(), approvals.clone(), file.map(Path::to_owned));
    std::thread::spawn(move || {
        let _ = sender.send(WorkspaceServers::load(&root, &approvals, file.as_deref()));
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("loading the workspace's servers returned within 10 s")
}

/// Approves every entry the workspace has pending.
fn approve_all(root: &Path) -> Approvals {
    let found = WorkspaceServers::load(root, &Approvals::default(), None);
    let mut approvals = Approvals::default();
    for pending in &found.pending {
        approvals.approve(root, &pending.name, &pending.entry);
    }
    approvals
}

#[test]
fn nothing_starts_unapproved_and_an_approval_is_per_workspace_and_entry() {
    let text = r#"{"mcpServers": {"a": {"command": "run-a"}, "b": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#;
    let (_dir, root) = workspace(text);
    let found = load_within(&root, &Approvals::default(), None);
    assert!(found.approved.servers.is_empty());
    let names: Vec<&str> = found.pending.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(found.pending[0].entry.describe(), "run-a");
    assert_eq!(found.pending[1].entry.describe(), "http://127.0.0.1:9/mcp");

    let approvals = approve_all(&root);
    let found = load_within(&root, &approvals, None);
    assert_eq!(found.approved.servers.len(), 2);
    assert!(found.pending.is_empty() && found.warnings.is_empty());

    // The same approvals in another checkout approve nothing there.
    let (_other_dir, other) = workspace(text);
    assert!(
        load_within(&other, &approvals, None)
            .approved
            .servers
            .is_empty()
    );

    // The same name running something else is pending again, marked as changed.
    std::fs::write(
        root.join(".mcp.json"),
        r#"{"mcpServers": {"a": {"command": "sh", "args": ["-c", "evil"]}}}"#,
    )
    .expect("rewrite");
    let found = load_within(&root, &approvals, None);
    assert!(found.approved.servers.is_empty());
    assert!(found.pending[0].changed);
}

#[test]
fn an_approvals_file_inside_the_workspace_counts_for_nothing() {
    let (_dir, root) = workspace(r#"{"mcpServers": {"a": {"command": "run-a"}}}"#);
    let approvals = approve_all(&root);
    let planted = root.join(".threadline/mcp-approvals.json");
    approvals
        .save(&planted)
        .expect("saved inside the workspace");
    let loaded = Approvals::load(&planted).expect("loads");
    let found = load_within(&root, &loaded, Some(&planted));
    assert!(found.approved.servers.is_empty(), "{:?}", found.approved);
    assert!(
        found.warnings[0].contains("lies inside the workspace"),
        "{:?}",
        found.warnings
    );
}

#[test]
fn anthropic_variables_are_never_expanded_into_a_workspace_server() {
    let text = r#"{"mcpServers": {
        "env": {"command": "srv", "env": {"LEAK": "${ANTHROPIC_API_KEY}"}},
        "args": {"command": "srv", "args": ["--key=${ANTHROPIC_AUTH_TOKEN}"]},
        "url": {"type": "http", "url": "http://127.0.0.1:9/mcp?k=${ANTHROPIC_API_KEY}"},
        "header": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-K": "${ANTHROPIC_API_KEY}"}},
        "default": {"command": "srv", "args": ["${ANTHROPIC_API_KEY:-none}", "${PATH}"]}
    }}"#;
    let (_dir, root) = workspace(text);
    let approvals = approve_all(&root);
    let found = load_within(&root, &approvals, None);
    let started: Vec<&String> = found.approved.servers.keys().collect();
    assert_eq!(started, ["default"], "{:?}", found.warnings);
    assert_eq!(found.warnings.len(), 4, "{:?}", found.warnings);
    assert!(
        found
            .warnings
            .iter()
            .all(|w| w.contains("is never expanded"))
    );
    let ServerConfig::Stdio { args, .. } = &found.approved.servers["default"] else {
        panic!("a stdio server");
    };
    // The default is taken for the protected name; other variables still expand.
    assert_eq!(args[0], "none");
    assert_eq!(args[1], std::env::var("PATH").expect("PATH"));
}

#[test]
fn a_broken_entry_is_a_warning_and_the_others_go_on() {
    let text = r#"{"mcpServers": {
        "unset": {"command": "x", "args": ["${THREADLINE_TEST_SURELY_UNSET}"]},
        "shape": {"command": 7},
        "transport": {"type": "carrier-pigeon"},
        "good": {"command": "run-good"}
    }}"#;
    let (_dir, root) = workspace(text);
    // Unapproved, nothing is expanded or validated: three pending, one broken shape.
    let found = load_within(&root, &Approvals::default(), None);
    assert_eq!(found.pending.len(), 3);
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(
        found.warnings[0].contains("server `shape`"),
        "{:?}",
        found.warnings
    );
    // Approved, each broken one is its own warning and the good one starts.
    let approvals = approve_all(&root);
    let found = load_within(&root, &approvals, None);
    assert_eq!(found.approved.servers.keys().collect::<Vec<_>>(), ["good"]);
    assert_eq!(found.warnings.len(), 3, "{:?}", found.warnings);
}

#[test]
fn a_fifo_a_device_or_a_huge_file_is_a_warning_never_a_hang() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::os::unix::fs::symlink("/dev/zero", root.join(".mcp.json")).expect("symlink");
    let found = load_within(&root, &Approvals::default(), None);
    assert!(
        found.warnings[0].contains("not a regular file"),
        "{:?}",
        found.warnings
    );

    std::fs::remove_file(root.join(".mcp.json")).expect("rm");
    let made = std::process::Command::new("mkfifo")
        .arg(root.join(".mcp.json"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let found = load_within(&root, &Approvals::default(), None);
    assert!(
        found.warnings[0].contains("not a regular file"),
        "{:?}",
        found.warnings
    );

    std::fs::remove_file(root.join(".mcp.json")).expect("rm");
    let huge = vec![b' '; 2 * 1024 * 1024];
    std::fs::write(root.join(".mcp.json"), huge).expect("write");
    let found = load_within(&root, &Approvals::default(), None);
    assert!(
        found.warnings[0].contains("bytes read"),
        "{:?}",
        found.warnings
    );

    // A user-named file gets the same bounded read, as an error.
    let error = threadline_mcp::McpConfig::load(Path::new("/dev/zero")).expect_err("a device");
    assert!(error.to_string().contains("not a regular file"), "{error}");
    // And so do approvals kept at a hostile path.
    assert!(Approvals::load(Path::new("/dev/zero")).is_err());
}

/// The hostile paging server, in `mode`.
fn endless(mode: &str) -> ServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/endless_pages.py");
    stdio(
        "python3",
        [script.display().to_string(), mode.to_owned()],
        [],
    )
}

async fn connect_endless(mode: &str) -> (McpServer, Duration) {
    let started = Instant::now();
    let options = McpOptions::default().with_connect_timeout(Duration::from_secs(20));
    let server = McpServer::connect("endless", &endless(mode), options)
        .await
        .unwrap_or_else(|e| panic!("an endless listing is cut, not a failure: {e}"));
    (server, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_that_never_end_stop_at_the_tool_cap() {
    let (server, _) = connect_endless("full").await;
    assert_eq!(server.tool_infos().len(), MAX_TOOLS_PER_SERVER);
    // 1000 tools a page: the cap is reached with the second page, and no page is asked after.
    let pages = server.stderr().matches("page ").count();
    assert_eq!(pages, 2, "{}", server.stderr());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_pages_that_never_end_stop_at_the_page_cap() {
    let (server, _) = connect_endless("empty").await;
    assert!(server.tool_infos().is_empty());
    // The stderr tail is bounded; its last line names the last page asked.
    let deadline = Instant::now() + Duration::from_secs(5);
    let last = format!("page {MAX_TOOL_PAGES}");
    while !server.stderr().contains(&last) {
        assert!(Instant::now() < deadline, "{}", server.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !server
            .stderr()
            .contains(&format!("page {}", MAX_TOOL_PAGES + 1))
    );
}

/// The server whose JSON-RPC errors carry a 1 MiB message, in `mode` (`initialize`, `list`,
/// `call`).
fn huge_errors(mode: &str) -> ServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/huge_errors.py");
    stdio(
        "python3",
        [script.display().to_string(), mode.to_owned()],
        [],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_error_message_is_cut_in_a_connect_error() {
    for mode in ["initialize", "list"] {
        let error = McpServer::connect("huge", &huge_errors(mode), crate::common::options())
            .await
            .expect_err("an error answer");
        assert!(
            matches!(
                (mode, &error),
                ("initialize", ConnectError::Handshake { .. })
                    | ("list", ConnectError::ListTools { .. })
            ),
            "{mode}: {error:?}"
        );
        let line = error.to_string();
        assert!(
            line.len() < MAX_ERROR_MESSAGE_BYTES + 200,
            "{mode}: {} bytes",
            line.len()
        );
        assert!(line.contains("EEEE…"), "{mode}: {line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_error_message_is_cut_in_a_call_result() {
    let server = crate::common::connect("huge", &huge_errors("call")).await;
    let write = crate::common::tool(&server, "mcp__huge__write_file");
    let (_, output) =
        crate::common::call(&*write, serde_json::json!({"path": "a", "content": "b"})).await;
    assert!(output.is_error);
    let text = crate::common::text(&output);
    assert!(
        text.len() < MAX_OUTPUT_BYTES + 100,
        "{} bytes of error",
        text.len()
    );
    assert!(
        text.starts_with("MCP server `huge`: `write_file` failed: EEEE"),
        "{}",
        &text[..80]
    );
    assert!(
        text.ends_with(" bytes of MCP output cut]"),
        "{}",
        &text[text.len() - 80..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_question_shows_every_key_of_the_input() {
    let server = crate::common::connect("huge", &huge_errors("call")).await;
    let write = crate::common::tool(&server, "mcp__huge__write_file");
    // serde_json sorts keys: a long `content` came first and hid the `path`.
    let input =
        serde_json::json!({"content": "x".repeat(190), "path": "../../.ssh/authorized_keys"});
    let threadline_query::Permission::Ask { prompt } = write.check_permission(&input) else {
        panic!("a tool not marked read-only asks");
    };
    assert!(
        prompt.starts_with("Call `write_file` of MCP server `huge` with {\"content\": \"xxx"),
        "{prompt}"
    );
    assert!(
        prompt.ends_with(r#"", "path": "../../.ssh/authorized_keys"}?"#),
        "{prompt}"
    );
}
