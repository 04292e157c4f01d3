//! Text from peers (a transcript's ids and model, a file name in a project directory, an API
//! server's error message, a refusal's explanation, an MCP server's name) reaches the terminal
//! escaped, on stdout and on stderr, in every command that shows it: no escape sequence can
//! retitle the window, clear or move over a line, reverse the text, or print a line of its own.

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};

use common::{Mock, command, repo};
use serde_json::json;

/// An OSC window title, a line clear, a carriage return, a cursor move up, a right-to-left
/// override, and a newline that would start a line of its own.
const HOSTILE: &str = "\u{1b}]0;PWNED\u{7}\u{1b}[2K\r\u{1b}[1A\u{202e}\nFAKE ROW";
/// [`HOSTILE`] as the terminal must show it.
const ESCAPED: &str = "\\u{1b}]0;PWNED\\u{7}\\u{1b}[2K\\u{d}\\u{1b}[1A\\u{202e}\\u{a}FAKE ROW";

/// `threadline ARGS` in `cwd`, without a key or a date from the environment.
fn threadline_in(args: &[&str], cwd: &Path) -> Output {
    command()
        .args(args)
        .current_dir(cwd)
        .env_remove("ANTHROPIC_API_KEY")
        .env("THREADLINE_DATE", "2026-03-08")
        .env("HOME", cwd)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// Asserts [`assert_no_raw`], and that `stream` (`"stdout"` or `"stderr"`) shows the escaped
/// form after `before`.
fn assert_escaped(what: &str, output: &Output, stream: &str, before: &str) {
    assert_no_raw(what, output);
    let shown = if stream == "stdout" {
        common::stdout(output)
    } else {
        common::stderr(output)
    };
    let expected = format!("{before}{ESCAPED}");
    assert!(
        shown.contains(&expected),
        "{what}: {stream} does not show {expected:?}:\n{shown}"
    );
}

/// Asserts that neither stream of `output` holds a byte a terminal acts on (ESC, CR, BEL,
/// U+202E), a line the hostile newline started, or a panic.
fn assert_no_raw(what: &str, output: &Output) {
    let out = common::stdout(output);
    let err = common::stderr(output);
    for (name, text) in [("stdout", &out), ("stderr", &err)] {
        let raw: Vec<char> = text
            .chars()
            .filter(|c| matches!(c, '\u{1b}' | '\r' | '\u{7}' | '\u{202e}'))
            .collect();
        assert!(
            raw.is_empty(),
            "{what}: raw {raw:?} on {name}:\n{}",
            text.escape_debug()
        );
        assert!(
            !text.lines().any(|line| line.starts_with("FAKE ROW")),
            "{what}: a line of its own on {name}:\n{text}"
        );
        assert!(
            !text.contains("panicked"),
            "{what}: a panic on {name}:\n{text}"
        );
    }
}

/// A Claude Code transcript whose ids and model are hostile: an assistant record whose parent
/// is not in the file, a record that names itself as its parent, an unknown model, a response
/// id.
fn hostile_transcript(dir: &Path) -> String {
    let records = [
        json!({"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s",
               "timestamp": "2026-01-01T00:00:00Z",
               "message": {"role": "user", "content": "hello"}}),
        json!({"type": "assistant", "uuid": "a1", "parentUuid": format!("gone{HOSTILE}"),
               "sessionId": "s", "timestamp": "2026-01-01T00:00:01Z",
               "message": {"id": format!("msg{HOSTILE}"), "type": "message", "role": "assistant",
                           "model": format!("claude-x{HOSTILE}"),
                           "content": [{"type": "text", "text": "hi"}],
                           "stop_reason": "end_turn",
                           "usage": {"input_tokens": 10, "output_tokens": 2}}}),
        json!({"type": "user", "uuid": format!("self{HOSTILE}"),
               "parentUuid": format!("self{HOSTILE}"), "sessionId": "s",
               "timestamp": "2026-01-01T00:00:02Z",
               "message": {"role": "user", "content": "again"}}),
    ];
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    let path = dir.join("hostile.jsonl");
    std::fs::write(&path, text).expect("transcript written");
    path.to_str().expect("utf-8 path").to_owned()
}

/// A mock child playing `scenario` (JSON, which YAML reads), written in `dir`.
fn mock_playing(dir: &Path, scenario: &serde_json::Value) -> Mock {
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, scenario.to_string()).expect("scenario written");
    Mock::start(&path)
}

#[test]
fn transcript_problem_lines_and_model_warnings_are_escaped_in_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path();
    let t = hostile_transcript(cwd);
    let out = |name: &str| cwd.join(name).to_str().expect("utf-8 path").to_owned();
    let (fork, rewind, compacted) = (out("fork.jsonl"), out("rewind.jsonl"), out("c.jsonl"));
    let parent = "parent gone";
    let itself = "record self";
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("normalize", vec!["normalize", &t]),
        ("inspect", vec!["inspect", &t]),
        ("check", vec!["check", &t]),
        ("session show", vec!["session", "show", &t]),
        (
            "session fork",
            vec!["session", "fork", &t, "--at", "u1", "--out", &fork],
        ),
        (
            "session rewind",
            vec!["session", "rewind", &t, "--turns", "1", "--out", &rewind],
        ),
        (
            "compact",
            vec![
                "compact",
                &t,
                "--model",
                "claude-sonnet-4-6",
                "--out",
                &compacted,
            ],
        ),
    ];
    for (what, args) in cases {
        let output = threadline_in(&args, cwd);
        assert_escaped(what, &output, "stderr", parent);
        assert_escaped(what, &output, "stderr", itself);
    }
    // The model the transcript names is unknown: `inspect` warns, quoting it.
    let output = threadline_in(&["inspect", &t], cwd);
    assert_escaped("inspect", &output, "stderr", "unknown model `claude-x");
    // Its table quotes the request ids, one row each.
    assert_escaped("inspect", &output, "stdout", "msg");

    // `run --resume` reports the problems, and warns about the model it continues with.
    let mock = mock_playing(
        cwd,
        &json!({"steps": [{"kind": "message", "content": [{"type": "text", "text": "ok"}]}]}),
    );
    let resumed = out("resumed.jsonl");
    let output = threadline_in(
        &[
            "run",
            "--resume",
            &t,
            "--out",
            &resumed,
            "--base-url",
            &mock.base_url,
            "next",
        ],
        cwd,
    );
    assert_escaped("run --resume", &output, "stderr", parent);
    assert_escaped("run --resume", &output, "stderr", itself);
    assert_escaped(
        "run --resume",
        &output,
        "stderr",
        "threadline: run: unknown model `claude-x",
    );
}

#[test]
fn file_names_of_a_project_directory_are_escaped_one_line_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    let session = "0b0e6c2e-4b8e-4d6f-9c3a-1e2f3a4b5c6d";
    let subagents = project.join(session).join("subagents");
    std::fs::create_dir_all(&subagents).expect("project");
    let transcript = std::fs::read(hostile_transcript(dir.path())).expect("transcript");
    std::fs::write(project.join(format!("{session}.jsonl")), &transcript).expect("session");
    // A subagent whose file name would print a row of its own.
    std::fs::write(
        subagents.join(format!("agent-zz{HOSTILE}.jsonl")),
        &transcript,
    )
    .expect("agent");
    let output = threadline_in(&["sessions", project.to_str().expect("utf-8")], dir.path());
    assert_eq!(common::code(&output), 0, "{}", common::stderr(&output));
    assert_escaped("sessions", &output, "stdout", "  agent zz");

    // `session list` names each file it skipped.
    let threadline_dir = dir.path().join("threadline");
    std::fs::create_dir_all(&threadline_dir).expect("dir");
    std::fs::write(
        threadline_dir.join(format!("notes{HOSTILE}.jsonl")),
        "not a transcript\n",
    )
    .expect("file");
    let output = threadline_in(
        &["session", "list", threadline_dir.to_str().expect("utf-8")],
        dir.path(),
    );
    assert_escaped("session list", &output, "stderr", "notes");
    assert!(
        common::stderr(&output).contains(": skipped: "),
        "{}",
        common::stderr(&output)
    );
}

#[test]
fn a_servers_error_message_and_a_refusal_are_escaped_in_runs_last_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let error = mock_playing(
        dir.path(),
        &json!({"steps": [{"kind": "error", "status": 400,
                           "message": format!("messages: bad{HOSTILE}")}]}),
    );
    let output = threadline_in(&["run", "--base-url", &error.base_url, "hi"], dir.path());
    assert_eq!(common::code(&output), 1, "{}", common::stderr(&output));
    assert_escaped("run (model error)", &output, "stderr", "messages: bad");
    assert!(
        common::stderr(&output).starts_with("threadline: run: the session ended: model_error"),
        "{}",
        common::stderr(&output)
    );
    drop(error);

    let sub = dir.path().join("refusal");
    std::fs::create_dir_all(&sub).expect("dir");
    let refusal = mock_playing(
        &sub,
        &json!({"steps": [{"kind": "message", "content": [], "stop_reason": "refusal",
                           "stop_details": {"type": "refusal", "category": "cyber",
                                            "explanation": format!("Declined{HOSTILE}")}}]}),
    );
    let output = threadline_in(&["run", "--base-url", &refusal.base_url, "hi"], dir.path());
    assert_eq!(common::code(&output), 1, "{}", common::stderr(&output));
    assert_escaped("run (refusal)", &output, "stderr", "Declined");
}

#[test]
fn mcp_list_escapes_server_names_and_a_failed_stdout_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A server that cannot start: its name is on the line that says so.
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {
        format!("srv{HOSTILE}"): {"command": dir.path().join("no-such-server"), "args": []}
    }});
    std::fs::write(&config, servers.to_string()).expect("config");
    let output = threadline_in(
        &[
            "mcp",
            "list",
            "--cwd",
            dir.path().to_str().expect("utf-8"),
            "--mcp-config",
            config.to_str().expect("utf-8"),
        ],
        dir.path(),
    );
    assert_eq!(common::code(&output), 1, "{}", common::stderr(&output));
    assert_escaped("mcp list", &output, "stdout", "srv");

    // Nothing configured, and stdout is full: one line on stderr, exit 1, no panic.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let output = command()
        .args(["mcp", "list", "--cwd", empty.to_str().expect("utf-8")])
        .current_dir(repo())
        .env("HOME", &empty)
        .stdout(Stdio::from(full))
        .output()
        .expect("the binary runs");
    let err = common::stderr(&output);
    assert_eq!(common::code(&output), 1, "{err}");
    assert_eq!(
        err,
        "threadline: cannot write to stdout: No space left on device (os error 28)\n"
    );
}

#[test]
fn json_output_escapes_what_the_serializer_leaves_raw_and_stays_the_same_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path();
    let t = hostile_transcript(cwd);
    let project = cwd.join("project");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::copy(
        &t,
        project.join("0b0e6c2e-4b8e-4d6f-9c3a-1e2f3a4b5c6d.jsonl"),
    )
    .expect("session");
    let project = project.to_str().expect("utf-8");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("normalize", vec!["normalize", &t, "--next", "go on"]),
        ("inspect --json", vec!["inspect", &t, "--json"]),
        ("session show --json", vec!["session", "show", &t, "--json"]),
        ("sessions --json", vec!["sessions", project, "--json"]),
        (
            "compact (stdout)",
            vec!["compact", &t, "--model", "claude-sonnet-4-6"],
        ),
    ];
    for (what, args) in cases {
        let output = threadline_in(&args, cwd);
        let out = common::stdout(&output);
        assert_no_raw(what, &output);
        // The model's name, as JSON writes it: ESC and BEL by the serializer, U+202E by
        // threadline; the value is the same.
        assert!(
            out.contains("claude-x\\u001b]0;PWNED\\u0007\\u001b[2K\\r\\u001b[1A\\u202e\\nFAKE ROW"),
            "{what}: {out}"
        );
        for document in out
            .lines()
            .filter(|l| l.starts_with('{') && l.ends_with('}'))
        {
            serde_json::from_str::<serde_json::Value>(document).expect("a JSON line");
        }
        if !what.starts_with("compact") {
            serde_json::from_str::<serde_json::Value>(&out).expect("one JSON document");
        }
    }
}
