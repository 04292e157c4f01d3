//! `threadline run PROMPT` without `--dry-run`, end to end over loopback: the binary's agent
//! against a `threadline mock` child process (`--base-url`), with the real built-in tools, a
//! 529 retried by the client, a transcript, and the API key nowhere in the output.

use crate::common;

use std::path::Path;
use std::process::{Child, Output, Stdio};

use common::{Mock, command};

const SECRET: &str = "sk-ant-api03-secret-never-printed";

fn run(args: &[&str], cwd: &Path, key: Option<&str>) -> Output {
    run_with(args, cwd, key, &[])
}

/// [`run`] with more variables set.
fn run_with(args: &[&str], cwd: &Path, key: Option<&str>, env: &[(&str, &Path)]) -> Output {
    let mut command = command();
    command
        .args(args)
        .current_dir(cwd)
        .env("THREADLINE_DATE", "2026-03-08")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    match key {
        Some(key) => command.env("ANTHROPIC_API_KEY", key),
        None => command.env_remove("ANTHROPIC_API_KEY"),
    };
    command.output().expect("the binary runs")
}

/// A mock child playing the scenario `yaml`, written in `dir`.
fn mock_playing(dir: &Path, yaml: &str) -> Mock {
    let scenario = dir.join("scenario.yaml");
    std::fs::write(&scenario, yaml).expect("scenario");
    Mock::start(&scenario)
}

/// `threadline run ARGS` in `cwd` with piped stdio, no API key, and asking on a piped stdin
/// when `ask_on_pipe`.
fn spawn_run(args: &[&str], cwd: &Path, ask_on_pipe: bool) -> Child {
    command()
        .arg("run")
        .args(args)
        .current_dir(cwd)
        .env("THREADLINE_DATE", "2026-03-08")
        .env_remove("ANTHROPIC_API_KEY")
        .env(
            "THREADLINE_ASK_ON_PIPE",
            if ask_on_pipe { "1" } else { "0" },
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs")
}

/// Writes `input` to the child's stdin and closes it; its output once it has ended.
fn feed_and_wait(mut child: Child, input: &[u8]) -> Output {
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(input).expect("stdin written");
    }
    child.wait_with_output().expect("it ends")
}

#[test]
fn run_drives_the_agent_against_a_mock_with_real_tools_and_a_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    std::fs::write(workspace.join("notes.txt"), "buy oat milk\n").expect("notes");
    let mock = mock_playing(
        dir.path(),
        r#"
steps:
  - kind: message
    content:
      - {type: text, text: "Reading your notes."}
      - {type: tool_use, id: toolu_notes, name: Read, input: {path: notes.txt}}
  - kind: error
    status: 529
    message: Overloaded
  - kind: message
    content:
      - {type: text, text: "You need to buy oat milk."}
"#,
    );
    let transcript = dir.path().join("session.jsonl");
    let output = run(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--transcript",
            transcript.to_str().expect("utf-8 path"),
            "What is in my notes?",
        ],
        &workspace,
        Some(SECRET),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("> Read({\"path\":\"notes.txt\"})"),
        "{stdout}"
    );
    assert!(stdout.contains("result of Read: 1 line"), "{stdout}");
    // The answer after the 529 (the client resent the request) streamed to stdout.
    assert!(stdout.contains("You need to buy oat milk."), "{stdout}");
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));

    // The transcript holds the session (prompt, tool use, the real tool result, the answer).
    let recorded = std::fs::read_to_string(&transcript).expect("the transcript is written");
    assert!(recorded.lines().count() >= 4, "{recorded}");
    assert!(recorded.contains("buy oat milk"));
    assert!(recorded.contains("toolu_notes"));
    assert!(!recorded.contains(SECRET));
}

#[test]
fn a_model_error_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock_playing(
        dir.path(),
        "steps:\n  - {kind: error, status: 400, message: \"messages: bad request\"}\n",
    );
    let output = run(
        &["run", "--base-url", &mock.base_url, "hi"],
        dir.path(),
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("threadline: run: the session ended: model_error"),
        "{stderr}"
    );
}

/// The client's idle timer (5 minutes) restarts at every event, so a stream kept
/// alive, or stalled under it, held `run` for minutes. `--request-timeout SECS` bounds the
/// whole request: the session ends with the timeout, one line, exit 1.
#[test]
fn request_timeout_ends_a_stalled_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock_playing(
        dir.path(),
        r#"
steps:
  - kind: message
    fault: {type: stall, after_events: 3}
    content:
      - {type: text, text: "This answer never ends."}
"#,
    );
    let started = std::time::Instant::now();
    let output = run(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--request-timeout",
            "1",
            "hi",
        ],
        dir.path(),
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the whole request timed out after 1s"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{stderr}"
    );
    let refused = run(&["run", "--request-timeout", "0", "hi"], dir.path(), None);
    assert_eq!(refused.status.code(), Some(2));
}

/// With a transcript that cannot be written (`/dev/full` opens, every write fails)
/// the loop warned and ran no tool whose call was not recorded, but the run exited 0. A
/// session that cannot be recorded fails: exit 1, one line on stderr.
#[cfg(target_os = "linux")]
#[test]
fn a_transcript_that_cannot_be_written_fails_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    std::fs::write(workspace.join("notes.txt"), "buy oat milk\n").expect("notes");
    let mock = mock_playing(
        dir.path(),
        r#"
steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_notes, name: Read, input: {path: notes.txt}}
  - kind: message
    content:
      - {type: text, text: "Done."}
"#,
    );
    let output = run(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--transcript",
            "/dev/full",
            "read my notes",
        ],
        &workspace,
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stderr}\n{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("threadline: run: the session could not be recorded: transcript: "),
        "{stderr}"
    );
    // The warnings were shown, and the unrecorded call did not run.
    assert!(stdout.contains("warning: transcript: "), "{stdout}");
    assert!(!stdout.contains("buy oat milk"), "{stdout}");
}

#[test]
fn without_a_key_or_a_base_url_nothing_is_sent_and_the_exit_code_is_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = run(&["run", "hi"], dir.path(), None);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY is not set"), "{stderr}");
}

#[test]
fn without_a_prompt_requests_are_read_from_stdin_until_exit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock_playing(
        dir.path(),
        "steps:\n  - {kind: message, content: [{type: text, text: \"First answer.\"}]}\n  - {kind: message, content: [{type: text, text: \"Second answer.\"}]}\n",
    );
    let child = spawn_run(&["--base-url", &mock.base_url], dir.path(), false);
    let output = feed_and_wait(child, b"one\ntwo\nexit\n");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    let first = stdout.find("First answer.").expect("the first answer");
    let second = stdout.find("Second answer.").expect("the second answer");
    assert!(first < second);
    // Two requests in the session, the totals printed at the end.
    assert!(String::from_utf8_lossy(&output.stderr).contains("2 requests"));
}

/// Runs the prompt loop with `stdin` against a mock whose model asks for one shell command,
/// then answers; the transcript.
fn shell_session(stdin: &[u8], ask_on_pipe: bool) -> (Output, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock_playing(
        dir.path(),
        r#"
steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_sh, name: Bash, input: {command: "echo granted-$((40+2))"}}
  - kind: message
    content:
      - {type: text, text: "Done."}
"#,
    );
    let transcript = dir.path().join("session.jsonl");
    let transcript_arg = transcript.to_str().expect("utf-8 path");
    let args = ["--base-url", &mock.base_url, "--transcript", transcript_arg];
    let output = feed_and_wait(spawn_run(&args, dir.path(), ask_on_pipe), stdin);
    let recorded = std::fs::read_to_string(&transcript).expect("the transcript is written");
    (output, recorded)
}

#[test]
fn a_shell_command_runs_once_the_user_answers_yes() {
    let (output, recorded) = shell_session(b"say hi\ny\nexit\n", true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("threadline: Run `echo granted-$((40+2))` in "),
        "{stderr}"
    );
    assert!(stderr.contains("[y/N]"), "{stderr}");
    assert!(recorded.contains("granted-42"), "{recorded}");
    assert!(!recorded.contains("was not granted"), "{recorded}");
}

#[test]
fn a_shell_command_is_denied_on_no_and_on_end_of_input() {
    for stdin in [&b"say hi\nn\nexit\n"[..], &b"say hi\n"[..]] {
        let (output, recorded) = shell_session(stdin, true);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("[y/N]"), "{stderr}");
        assert!(!recorded.contains("granted-42"), "{recorded}");
        assert!(
            recorded.contains("Permission to use this tool was not granted."),
            "{recorded}"
        );
    }
}

/// Without a terminal (a piped script), nothing is asked: the shell call is refused as
/// before, and every line stays a request.
#[test]
fn a_piped_script_is_never_asked_and_its_lines_stay_requests() {
    let (output, recorded) = shell_session(b"say hi\ny\nexit\n", false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("[y/N]"), "{stderr}");
    assert!(!recorded.contains("granted-42"), "{recorded}");
    assert!(
        recorded.contains("Permission to use this tool was not granted."),
        "{recorded}"
    );
    // `y` was the second request, not an answer.
    assert!(recorded.contains("\"y\""), "{recorded}");
}

/// A question still waiting when its call is aborted (the stream failed after the shell
/// call was complete) does not keep a one-shot run from ending, even with stdin left open.
#[test]
fn a_pending_question_never_keeps_the_run_from_ending() {
    let dir = tempfile::tempdir().expect("tempdir");
    // message_start, content_block_start, ping, four input deltas, content_block_stop: then
    // an error event instead of the rest of the message.
    let mock = mock_playing(
        dir.path(),
        r#"
steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_sh, name: Bash, input: {command: "echo granted-$((40+2))"}}
      - {type: text, text: "never arrives"}
    fault: {type: error_event, after_events: 8}
"#,
    );
    let mut child = spawn_run(&["--base-url", &mock.base_url, "say hi"], dir.path(), true);
    // Stdin stays open (nobody answers) until the child has ended or the wait gave up.
    let stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let status = status.expect("the run ended on its own");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("[y/N]"), "the question was asked: {stderr}");
}

/// A response that writes `w.txt`, then stalls in the text after the call: the Write's tool
/// has run (or is running) while the response is still open.
const WRITE_THEN_STALL: &str = r#"
steps:
  - kind: message
    delay_ms: 20
    fault: {type: stall, after_events: 14}
    content:
      - {type: text, text: "Writing the file."}
      - {type: tool_use, id: toolu_write, name: Write, input: {path: w.txt, content: "hello"}}
      - {type: text, text: "And now a long explanation of what was written."}
"#;

/// Starts `threadline run` writing `w.txt` in a fresh workspace, calls `kill` with the child
/// and the workspace, SIGKILLs the child, and checks what it left: a file the Write created
/// has its call in the transcript, and the transcript is a session `check` accepts.
fn killed_run(
    kill: impl FnOnce(&mut Child, &Path),
) -> Result<bool, proptest::test_runner::TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let mock = mock_playing(dir.path(), WRITE_THEN_STALL);
    let transcript = dir.path().join("session.jsonl");
    let mut child = command()
        .args(["run", "--base-url", &mock.base_url, "--transcript"])
        .arg(&transcript)
        .arg("Write w.txt.")
        .current_dir(&workspace)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary runs");
    kill(&mut child, &workspace);
    // `Child::kill` is SIGKILL on unix: no destructor, no flush, no signal handler runs.
    let _ = child.kill();
    let _ = child.wait();
    let wrote = workspace.join("w.txt").exists();
    let text = std::fs::read_to_string(&transcript).unwrap_or_default();
    let read = threadline_message::transcript::parse_transcript(&text);
    let recorded = read.messages.iter().any(|m| {
        matches!(m, threadline_message::Message::Assistant(a) if a.content.iter().any(|b| matches!(
            b,
            threadline_wire::ContentBlock::ToolUse(t) if t.id == "toolu_write"
        )))
    });
    proptest::prop_assert!(
        !wrote || recorded,
        "w.txt was written but its call is not in the transcript:\n{text}"
    );
    if !read.messages.is_empty() {
        let checked = command()
            .arg("check")
            .arg(&transcript)
            .output()
            .expect("check runs");
        proptest::prop_assert_eq!(
            checked.status.code(),
            Some(0),
            "{}{}\n{}",
            String::from_utf8_lossy(&checked.stdout),
            String::from_utf8_lossy(&checked.stderr),
            text
        );
    }
    Ok(wrote)
}

#[test]
fn a_run_killed_after_its_write_ran_has_the_call_in_the_transcript() {
    let wrote = killed_run(|_child, workspace| {
        // Kill as soon as the side effect is visible (the response is stalled after it).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !workspace.join("w.txt").exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(wrote, "the Write never ran");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]

    /// SIGKILL at a random instant: before the request, while the text streams, around the
    /// Write, in the stall.
    #[test]
    fn a_run_killed_at_any_instant_loses_no_tool_record(kill_ms in 0u64..900) {
        killed_run(|_child, _workspace| {
            std::thread::sleep(std::time::Duration::from_millis(kill_ms));
        })?;
    }
}

#[test]
fn a_model_repeating_a_tool_call_forever_stops_at_the_default_turn_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    std::fs::write(workspace.join("notes.txt"), "again\n").expect("notes");
    // More tool calls than the default limit allows; the mock would answer every one.
    let step = "  - kind: message\n    content:\n      - {type: tool_use, name: List, input: {}}\n";
    let yaml = format!("steps:\n{}", step.repeat(130));
    let mock = mock_playing(dir.path(), &yaml);
    let output = run(
        &["run", "--base-url", &mock.base_url, "Loop."],
        &workspace,
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("max_turns (100)"), "{stderr}");
}

/// A server that echoes the key back — in a 401's message, or in an `error` event after some
/// text — gets it neither on stderr, nor on stdout, nor into the transcript: for an `sk-ant-`
/// key and for a key of no known shape (which only the client knows to remove).
#[test]
fn a_key_the_server_echoes_is_printed_nowhere_and_never_recorded() {
    const PLAIN_KEY: &str = "cli-proxy-token-THEKEY-0123456789";
    for key in [SECRET, PLAIN_KEY] {
        for answer in [
            format!("  - {{kind: error, status: 401, message: \"invalid x-api-key: {key}\"}}\n"),
            format!(
                "  - kind: message\n    content:\n      - {{type: text, text: \"Some text before the echo.\"}}\n    fault: {{type: error_event, after_events: 4, error_type: authentication_error, message: \"invalid x-api-key: {key}\"}}\n"
            ),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let mock = mock_playing(dir.path(), &format!("steps:\n{answer}"));
            let transcript = dir.path().join("session.jsonl");
            let output = run(
                &[
                    "run",
                    "--base-url",
                    &mock.base_url,
                    "--transcript",
                    transcript.to_str().expect("utf-8 path"),
                    "hi",
                ],
                dir.path(),
                Some(key),
            );
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(1),
                "{answer}\n{stdout}\n{stderr}"
            );
            assert!(stderr.contains("invalid x-api-key: "), "{stderr}");
            assert!(stderr.contains("[redacted]"), "{stderr}");
            let recorded = std::fs::read_to_string(&transcript).expect("the transcript is written");
            for (what, text) in [
                ("stdout", &*stdout),
                ("stderr", &*stderr),
                ("transcript", &*recorded),
            ] {
                assert!(
                    !text.contains(key)
                        && !text.contains("THEKEY")
                        && !text.contains("secret-never"),
                    "the key is in {what}:\n{text}"
                );
            }
        }
    }
}

/// The `usage.input_tokens` (all input, cache included) of the last assistant line of a
/// transcript.
fn last_input_tokens(transcript: &str) -> u64 {
    let line = transcript
        .lines()
        .rev()
        .find(|l| l.contains(r#""type":"assistant""#))
        .expect("an assistant line");
    let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
    let usage = &value["usage"];
    [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ]
    .iter()
    .filter_map(|k| usage[k].as_u64())
    .sum()
}

#[test]
fn run_resume_appends_to_a_threadline_transcript_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock_playing(
        dir.path(),
        "steps:\n  - {kind: message, content: [{type: text, text: \"Fresh answer.\"}]}\n  - {kind: message, content: [{type: text, text: \"Resumed answer.\"}]}\n  - {kind: message, content: [{type: text, text: \"Copied answer.\"}]}\n",
    );
    // A fresh session, for comparison.
    let fresh = dir.path().join("fresh.jsonl");
    let fresh_arg = fresh.to_str().expect("utf-8 path");
    let output = run(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--transcript",
            fresh_arg,
            "What next?",
        ],
        dir.path(),
        None,
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let fresh_tokens = last_input_tokens(&std::fs::read_to_string(&fresh).expect("written"));

    // A session with a long earlier exchange, resumed.
    let long = "the history that a resumed request carries ".repeat(100);
    let before = format!(
        "{}\n{}\n",
        serde_json::json!({"type":"user","id":"u1","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"text","text": long}]}),
        serde_json::json!({"type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z","api_message_id":"msg_old","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Noted."}]}),
    );
    let session = dir.path().join("session.jsonl");
    std::fs::write(&session, &before).expect("written");
    let session_arg = session.to_str().expect("utf-8 path");
    let output = run(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--resume",
            session_arg,
            "What next?",
        ],
        dir.path(),
        None,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Resumed answer."), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "resuming {session_arg} (2 messages); the session is appended to it"
        )),
        "{stderr}"
    );
    let after = std::fs::read_to_string(&session).expect("still there");
    // Appended in place: the old lines are untouched, the new prompt and answer follow.
    assert!(after.starts_with(&before), "{after}");
    assert!(after[before.len()..].contains("What next?"), "{after}");
    assert!(after[before.len()..].contains("Resumed answer."), "{after}");
    // The history was not written again.
    assert_eq!(
        after
            .lines()
            .filter(|l| l.contains("the history that a resumed"))
            .count(),
        1
    );
    // The request carried the history: about 900 more input tokens than the fresh one.
    let resumed_tokens = last_input_tokens(&after);
    assert!(
        resumed_tokens > fresh_tokens + 500,
        "resumed {resumed_tokens} vs fresh {fresh_tokens}"
    );

    // With `--out` the session continues in a new file that starts with the history; the
    // source is left as it was, and an existing `--out` is refused.
    let copy = dir.path().join("copy.jsonl");
    let copy_arg = copy.to_str().expect("utf-8 path");
    let args = [
        "run",
        "--base-url",
        &mock.base_url,
        "--resume",
        session_arg,
        "--out",
        copy_arg,
        "And then?",
    ];
    let output = run(&args, dir.path(), None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&format!("in {copy_arg}")), "{stderr}");
    assert_eq!(std::fs::read_to_string(&session).expect("read"), after);
    let copied = std::fs::read_to_string(&copy).expect("written");
    assert!(copied.starts_with(&after), "{copied}");
    assert!(copied[after.len()..].contains("And then?"), "{copied}");
    let refused = run(&args, dir.path(), None);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&copy).expect("read"), copied);
}

/// A Read whose result is over the tool-result budget is sent as a preview; the transcript
/// records the preview (the result's line written again under its id), and a run resumed
/// from it sends the preview again, not the whole file: its request is the live one's plus
/// the new exchange, not 20,000 tokens more.
#[test]
fn run_resume_sends_the_preview_the_live_run_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let line = format!("{}\n", "log line with some words in it, ".repeat(3));
    std::fs::write(workspace.join("big.log"), line.repeat(800)).expect("log");
    let mock = mock_playing(
        dir.path(),
        r#"
steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_log, name: Read, input: {path: big.log}}
  - kind: message
    content:
      - {type: text, text: "The log is long."}
  - kind: message
    content:
      - {type: text, text: "Resumed answer."}
"#,
    );
    let session = dir.path().join("session.jsonl");
    let session_arg = session.to_str().expect("utf-8 path");
    let output = run(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--transcript",
            session_arg,
            "Read big.log",
        ],
        &workspace,
        None,
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let live = std::fs::read_to_string(&session).expect("written");
    let result_lines: Vec<&str> = live
        .lines()
        .filter(|l| l.contains(r#""tool_use_id":"toolu_log""#))
        .collect();
    assert_eq!(
        result_lines.len(),
        2,
        "the result, then its preview: {live}"
    );
    assert!(
        result_lines[1].contains("<persisted-output>"),
        "{}",
        result_lines[1]
    );
    let live_tokens = last_input_tokens(&live);

    let output = run(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--resume",
            session_arg,
            "Thanks",
        ],
        &workspace,
        None,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Resumed answer."), "{stdout}");
    let resumed_tokens = last_input_tokens(&std::fs::read_to_string(&session).expect("read"));
    // The file is about 80,000 characters (some 20,000 tokens); the new exchange a few dozen.
    assert!(
        resumed_tokens < live_tokens + 500,
        "resumed {resumed_tokens} vs live {live_tokens}"
    );
}

#[test]
fn run_resume_imports_a_claude_code_transcript_into_a_new_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = common::repo().join(
        "fixtures/recorded/d-kimuson__claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    );
    let source = dir.path().join("cc.jsonl");
    std::fs::copy(&fixture, &source).expect("copied");
    let original = std::fs::read(&source).expect("read");
    let mock = mock_playing(
        dir.path(),
        "steps:\n  - {kind: message, content: [{type: text, text: \"Continuing.\"}]}\n",
    );
    let source_arg = source.to_str().expect("utf-8 path");
    let args = [
        "run",
        "--base-url",
        &mock.base_url,
        "--model",
        "claude-sonnet-4-5",
        "--resume",
        source_arg,
        "Go on",
    ];
    let output = run(&args, dir.path(), None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let imported = dir.path().join("cc.threadline.jsonl");
    assert!(
        stderr.contains(&format!("into {}", imported.display())),
        "{stderr}"
    );
    // The Claude Code file is untouched; the new threadline transcript holds the import and
    // the new exchange.
    assert_eq!(std::fs::read(&source).expect("read"), original);
    let written = std::fs::read_to_string(&imported).expect("the import is written");
    assert!(
        written.contains("Go on") && written.contains("Continuing."),
        "{written}"
    );

    // A second resume of the Claude Code file would overwrite the import: refused.
    let again = run(&args, dir.path(), None);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("exists"), "{stderr}");
}

#[test]
fn run_resume_refuses_what_it_cannot_resume() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, expected) in [
        (
            vec![
                "run",
                "--resume",
                "/no/such/file.jsonl",
                "--base-url",
                "http://127.0.0.1:9",
                "hi",
            ],
            "cannot read",
        ),
        (
            vec!["run", "--resume", "x.jsonl", "--dry-run", "hi"],
            "cannot be used with",
        ),
        (vec!["run", "--out", "x.jsonl", "hi"], "--resume"),
    ] {
        let output = run(&args, dir.path(), None);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "not json\n").expect("written");
    let output = run(
        &[
            "run",
            "--resume",
            empty.to_str().expect("utf-8 path"),
            "--base-url",
            "http://127.0.0.1:9",
            "hi",
        ],
        dir.path(),
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no messages to resume"), "{stderr}");

    // Without a key (and no --base-url) the run cannot start: a Claude Code transcript is not
    // imported first, so a retry with the key is not refused for the file it left behind.
    let claude = dir.path().join("claude.jsonl");
    std::fs::copy(
        common::repo().join("fixtures/recorded/lanegrid__agtrace/claude_session.jsonl"),
        &claude,
    )
    .expect("copied");
    let output = run(
        &[
            "run",
            "--resume",
            claude.to_str().expect("utf-8 path"),
            "hi",
        ],
        dir.path(),
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("listed")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("claude") && name != "claude.jsonl")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The workspace `.mcp.json` of the MCP test: threadline-mcp's Python SDK fixture server
/// (installed by `cargo xtask mcp-servers`), approved by the user whose home is `home`.
fn python_mcp_config(workspace: &Path, home: &Path) {
    let repo = common::repo();
    let python = repo.join("target/test-servers/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: install the test servers with `cargo xtask mcp-servers`",
        python.display()
    );
    let script = repo.join("crates/threadline-mcp/tests/fixtures/fastmcp_server.py");
    let config = serde_json::json!({"mcpServers": {"py": {"command": python, "args": [script]}}});
    std::fs::write(workspace.join(".mcp.json"), config.to_string()).expect(".mcp.json");
    let approved = run_with(
        &["mcp", "approve", "py"],
        workspace,
        None,
        &[("HOME", home)],
    );
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
}

#[test]
fn run_offers_the_workspace_mcp_tools_and_announces_their_instructions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let home = dir.path().join("home");
    python_mcp_config(&workspace, &home);
    let mock = mock_playing(
        dir.path(),
        r#"
steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_mcp, name: mcp__py__shout, input: {text: "hello mcp"}}
  - kind: message
    content:
      - {type: text, text: "Shouted."}
"#,
    );
    let transcript = dir.path().join("session.jsonl");
    let output = run_with(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--transcript",
            transcript.to_str().expect("utf-8 path"),
            "Shout it.",
        ],
        &workspace,
        None,
        &[("HOME", &home)],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Shouted."), "{stdout}");
    let recorded = std::fs::read_to_string(&transcript).expect("the transcript is written");
    // The read-only MCP tool ran (no question) and its result is in the session.
    assert!(recorded.contains("HELLO MCP"), "{recorded}");
    // The server's instructions were announced once, as an `mcp_instructions` delta.
    let announcements: Vec<&str> = recorded
        .lines()
        .filter(|l| l.contains("\"mcp_instructions\""))
        .collect();
    assert_eq!(announcements.len(), 1, "{recorded}");
    assert!(
        announcements[0].contains("Use add for sums."),
        "{}",
        announcements[0]
    );
}

/// A workspace under `dir` with `notes.txt`, and a logged mock (with `more` arguments) whose
/// scenario reads it, then answers: the workspace, the mock and its request log.
fn notes_session(
    dir: &Path,
    more: &[&std::ffi::OsStr],
) -> (std::path::PathBuf, Mock, std::path::PathBuf) {
    let workspace = dir.join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    std::fs::write(workspace.join("notes.txt"), "buy oat milk\n").expect("notes");
    let scenario = dir.join("scenario.yaml");
    std::fs::write(
        &scenario,
        r#"
steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_notes, name: Read, input: {path: notes.txt}}
  - kind: message
    content:
      - {type: text, text: "You need to buy oat milk."}
"#,
    )
    .expect("scenario");
    let log = dir.join("requests.jsonl");
    let args = [&["--record-log".as_ref(), log.as_os_str()][..], more].concat();
    let mock = Mock::start_with(&scenario, &args);
    (workspace, mock, log)
}

/// Checks that a run of [`notes_session`] answered (exit 0) and returns its request log.
fn answered_notes(output: &Output, log: &Path) -> Vec<serde_json::Value> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("You need to buy oat milk."), "{stdout}");
    std::fs::read_to_string(log)
        .expect("the request log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `threadline run --provider X --base-url MOCK` on each cloud platform: the same
/// tool-using session completes against the mock's Bedrock, Vertex and Foundry fronts, with
/// the credentials read from the variables Claude Code reads, and the mock's request log shows
/// each platform's request shape (Bedrock's signed InvokeModel with the version and betas in
/// the body, Vertex's streamRawPredict, Foundry's `/anthropic/v1/messages` with an `api-key`).
/// A model given by its API id goes out by the platform's id from the model table.
#[test]
fn run_completes_a_tool_session_on_each_cloud_platform() {
    let aws_secret = threadline_mock::MOCK_AWS_SECRET_ACCESS_KEY;
    type Variables = Vec<(&'static str, &'static str)>;
    let aws = || {
        vec![
            ("AWS_REGION", "eu-central-1"),
            ("AWS_ACCESS_KEY_ID", threadline_mock::MOCK_AWS_ACCESS_KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", aws_secret),
        ]
    };
    // The platform, the `--model` given, the id sent there, the credentials.
    let cases: [(&str, &str, &str, Variables); 5] = [
        (
            "bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            aws(),
        ),
        // An API id goes by the platform's id from the model table, behind the region's
        // cross-region inference profile (eu-central-1: `eu.`).
        (
            "bedrock",
            "claude-sonnet-4-5",
            "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
            aws(),
        ),
        // The profile Claude Code's variable names.
        (
            "bedrock",
            "claude-haiku-4-5",
            "global.anthropic.claude-haiku-4-5-20251001-v1:0",
            [aws(), vec![("ANTHROPIC_BEDROCK_REGION_PREFIX", "global")]].concat(),
        ),
        (
            "vertex",
            "claude-sonnet-4-5@20250929",
            "claude-sonnet-4-5@20250929",
            vec![
                ("ANTHROPIC_VERTEX_PROJECT_ID", "team-project"),
                ("CLOUD_ML_REGION", "us-east5"),
                ("ANTHROPIC_VERTEX_ACCESS_TOKEN", "ya29.vertex-secret-token"),
            ],
        ),
        (
            "foundry",
            "claude-sonnet-4-5",
            "claude-sonnet-4-5",
            vec![("ANTHROPIC_FOUNDRY_API_KEY", "foundry-secret-key-0123")],
        ),
    ];
    for (provider, model, sent, vars) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let (workspace, mock, log) = notes_session(dir.path(), &[]);
        let base = match provider {
            "foundry" => format!("{}/anthropic", mock.base_url),
            _ => mock.base_url.clone(),
        };
        let mut command = command();
        command
            .args([
                "run",
                "--provider",
                provider,
                "--base-url",
                &base,
                "--model",
                model,
            ])
            .arg("What is in my notes?")
            .current_dir(&workspace)
            .env("THREADLINE_DATE", "2026-03-08")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(vars.iter().copied())
            .stdin(Stdio::null());
        let output = command.output().expect("the binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{provider}: {stdout}\n{stderr}"
        );
        assert!(
            stdout.contains("result of Read: 1 line"),
            "{provider}: {stdout}"
        );
        assert!(
            stdout.contains("You need to buy oat milk."),
            "{provider}: {stdout}"
        );
        for (_, value) in &vars {
            if value.contains("secret") {
                assert!(
                    !stdout.contains(value) && !stderr.contains(value),
                    "{provider}"
                );
            }
        }
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
            .expect("the request log")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 2, "{provider}: {lines:?}");
        for line in &lines {
            assert_eq!(line["platform"], provider, "{line}");
            assert_eq!(line["status"], 200, "{line}");
            let body: serde_json::Value =
                serde_json::from_str(line["body"].as_str().expect("a body")).expect("JSON");
            let path = line["path"].as_str().expect("a path");
            match provider {
                "bedrock" => {
                    assert_eq!(path, format!("/model/{sent}/invoke-with-response-stream"));
                    assert_eq!(body["anthropic_version"], "bedrock-2023-05-31");
                    assert!(body.get("model").is_none() && body.get("stream").is_none());
                }
                "vertex" => {
                    assert_eq!(
                        path,
                        format!(
                            "/v1/projects/team-project/locations/us-east5/publishers/\
                             anthropic/models/{sent}:streamRawPredict"
                        )
                    );
                    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
                    assert!(body.get("model").is_none());
                }
                _ => {
                    assert_eq!(path, "/anthropic/v1/messages");
                    assert_eq!(body["model"], sent);
                }
            }
        }
        // The second request carries the tool's result back.
        assert!(
            lines[1]["body"]
                .as_str()
                .is_some_and(|b| b.contains("buy oat milk"))
        );
    }
}

/// `run --provider bedrock` without AWS keys in the environment: the standard AWS chain
/// (`aws-config`) finds the profile `AWS_PROFILE` names in the credentials file
/// `AWS_SHARED_CREDENTIALS_FILE` points at, as the AWS CLI and Claude Code would, and signs
/// with it; a profile with the wrong secret is the platform's 403, its secret in no output.
#[test]
fn run_on_bedrock_signs_with_credentials_from_an_aws_profile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (workspace, mock, log) = notes_session(dir.path(), &[]);
    let wrong = "profile-secret-that-is-wrong-0123456789";
    let credentials = dir.path().join("credentials");
    std::fs::write(
        &credentials,
        format!(
            "[threadline-mock]\naws_access_key_id = {}\naws_secret_access_key = {}\n\n\
             [wrong]\naws_access_key_id = {}\naws_secret_access_key = {wrong}\n",
            threadline_mock::MOCK_AWS_ACCESS_KEY_ID,
            threadline_mock::MOCK_AWS_SECRET_ACCESS_KEY,
            threadline_mock::MOCK_AWS_ACCESS_KEY_ID,
        ),
    )
    .expect("the credentials file");
    let config = dir.path().join("config");
    std::fs::write(&config, "").expect("the config file");
    let run = |profile: &str| {
        let mut command = command();
        command
            .args(["run", "--provider", "bedrock", "--base-url", &mock.base_url])
            .args(["--model", "claude-sonnet-4-5"])
            .arg("What is in my notes?")
            .current_dir(&workspace)
            .env("THREADLINE_DATE", "2026-03-08")
            .env("AWS_REGION", "us-west-2")
            .env("AWS_PROFILE", profile)
            .env("AWS_SHARED_CREDENTIALS_FILE", &credentials)
            .env("AWS_CONFIG_FILE", &config)
            // Nothing but the profile: no instance metadata, no keys in the variables.
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_BEARER_TOKEN_BEDROCK")
            .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE")
            .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
            .env_remove("AWS_CONTAINER_CREDENTIALS_FULL_URI")
            .stdin(Stdio::null());
        command.output().expect("the binary runs")
    };
    let output = run("threadline-mock");
    let lines = answered_notes(&output, &log);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line["platform"], "bedrock", "{line}");
        assert_eq!(line["status"], 200, "{line}");
        assert_eq!(
            line["path"],
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"
        );
    }
    let output = run("wrong");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("InvalidSignatureException"), "{stderr}");
    assert!(!stdout.contains(wrong) && !stderr.contains(wrong));
}

/// `run --provider vertex` without a token in the environment: Application Default
/// Credentials (`gcp_auth`) read the service account key `GOOGLE_APPLICATION_CREDENTIALS`
/// names, get an access token from its `token_uri` (the mock's token endpoint, which checks
/// the signed grant), and the Vertex requests carry it; a key for another account gets no
/// token and the run stops with one line naming the reason, no key material in it.
#[test]
fn run_on_vertex_gets_its_token_from_application_default_credentials() {
    use threadline_testkit::google::service_account_key;

    let dir = tempfile::tempdir().expect("tempdir");
    // The mock reads the account (its email and key), not where its tokens are asked.
    let account = dir.path().join("account.json");
    std::fs::write(&account, service_account_key("http://unused/token")).expect("the account");
    let (workspace, mock, log) = notes_session(
        dir.path(),
        &["--google-service-account".as_ref(), account.as_os_str()],
    );
    let key = dir.path().join("key.json");
    let token_uri = format!("{}/token", mock.base_url);
    std::fs::write(&key, service_account_key(&token_uri)).expect("the key file");
    let run = |key: &Path| {
        let mut command = command();
        command
            .args(["run", "--provider", "vertex", "--base-url", &mock.base_url])
            .args(["--model", "claude-sonnet-4-5@20250929"])
            .arg("What is in my notes?")
            .current_dir(&workspace)
            .env("THREADLINE_DATE", "2026-03-08")
            .env("ANTHROPIC_VERTEX_PROJECT_ID", "threadline-mock")
            .env("CLOUD_ML_REGION", "us-east5")
            .env("GOOGLE_APPLICATION_CREDENTIALS", key)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_VERTEX_ACCESS_TOKEN")
            .env_remove("CLAUDE_CODE_SKIP_VERTEX_AUTH")
            .stdin(Stdio::null());
        command.output().expect("the binary runs")
    };
    let output = run(&key);
    let lines = answered_notes(&output, &log);
    // One token asked (and kept for the second request), then the two Vertex requests; the
    // grant, a credential, is not written to the log.
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["path"], "/token");
    assert_eq!(lines[0]["body_omitted"], "credential");
    assert!(lines[0].get("body").is_none());
    for line in &lines {
        assert_eq!(line["platform"], "vertex", "{line}");
        assert_eq!(line["status"], 200, "{line}");
    }
    // Another account's key: no token, one line, no key material.
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        service_account_key(&token_uri).replace("threadline-test@", "someone-else@"),
    )
    .expect("the other key");
    let output = run(&other);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("no Google access token"), "{stderr}");
    assert!(!stderr.contains("PRIVATE KEY") && !stdout.contains("PRIVATE KEY"));
}
