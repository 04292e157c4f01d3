//! One failure of each cause the command line distinguishes, through the binary: its exit
//! code and its one line on stderr (`main` prints the error once; `CliError::exit_code` maps
//! it). The lines and codes are the documented ones and must not drift.

use crate::common::{code, stderr, stdout, temp_file, threadline};

/// Runs `args` and returns (exit code, stderr, stdout).
fn run(args: &[&str]) -> (i32, String, String) {
    let output = threadline(args);
    (code(&output), stderr(&output), stdout(&output))
}

#[test]
fn each_cause_exits_with_its_code_and_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().expect("utf-8 path");
    let not_json = temp_file("exit-codes-not-json.json", "{");
    let not_json = not_json.to_str().expect("utf-8 path");
    let not_utf8 = temp_file("exit-codes-not-utf8.jsonl", [0xff, 0xfe]);
    let not_utf8 = not_utf8.to_str().expect("utf-8 path");
    let empty_fixture = temp_file(
        "exit-codes-empty-fixture.json",
        r#"{"format":"threadline-fixture/1","exchanges":[]}"#,
    );
    let empty_fixture = empty_fixture.to_str().expect("utf-8 path");
    let io_missing = std::fs::File::open(missing).expect_err("missing");
    let cases: Vec<(Vec<&str>, i32, String)> = vec![
        // Usage: arguments that do not fit together.
        (
            vec!["run", "--dry-run"],
            2,
            "threadline: run: --dry-run needs a PROMPT".to_owned(),
        ),
        (
            vec!["run", "--dry-run", "--date", "30/11/2026", "hi"],
            2,
            r#"threadline: run: "30/11/2026" is not a date of the form YYYY-MM-DD"#.to_owned(),
        ),
        // Input: unreadable, not UTF-8.
        (
            vec!["normalize", missing],
            2,
            format!("threadline: cannot read {missing}: {io_missing}"),
        ),
        (
            vec!["inspect", not_utf8],
            2,
            format!("threadline: {not_utf8}: not UTF-8 text"),
        ),
        // Rejected: check cannot read the body as a request.
        (
            vec!["check", not_json],
            2,
            format!(
                "threadline: {not_json}: not JSON: EOF while parsing an object at line 1 column 1"
            ),
        ),
        // Read (replay's fixture) and Unusable (not JSON).
        (
            vec!["replay", missing],
            2,
            format!("threadline: replay: cannot read {missing}: {io_missing}"),
        ),
        (
            vec!["replay", not_json],
            2,
            format!(
                "threadline: replay: {not_json} is not JSON: EOF while parsing an object at line 1 column 1"
            ),
        ),
        // Project: a directory that cannot be listed.
        (
            vec!["sessions", missing],
            2,
            format!("threadline: cannot list {missing}: {io_missing}"),
        ),
        // Scenario: the mock's scenario cannot be loaded.
        (
            vec!["mock", "--addr", "127.0.0.1:0", "--scenario", missing],
            2,
            format!("threadline: cannot read {missing}: {io_missing}"),
        ),
        // Broken: a fixture with no SSE response.
        (
            vec!["accumulate", empty_fixture],
            1,
            format!("threadline: {empty_fixture}: the fixture holds no SSE response"),
        ),
    ];
    for (args, expected_code, expected_line) in cases {
        let (code, err, _) = run(&args);
        assert_eq!(code, expected_code, "{args:?}: {err}");
        assert_eq!(err, format!("{expected_line}\n"), "{args:?}");
    }
}

#[test]
fn found_problems_exit_1_with_nothing_more_on_stderr() {
    // check: the violation on stdout, no error line on stderr.
    let body = temp_file(
        "exit-codes-prefill.json",
        r#"{"model":"claude-opus-4-7","max_tokens":1024,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello "}]}"#,
    );
    let (code, err, out) = run(&["check", body.to_str().expect("utf-8 path")]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out,
        "messages.1: This model does not support assistant message prefill. The conversation must end with a user message.\n"
    );
    assert_eq!(err, "");
}

#[test]
fn an_invalid_dry_run_request_is_one_line_per_violation() {
    let workspace = tempfile::tempdir().expect("tempdir");
    let cwd = workspace.path().to_str().expect("utf-8 path");
    let (code, err, out) = run(&[
        "run",
        "--dry-run",
        "--cwd",
        cwd,
        "--date",
        "2026-03-08",
        "--max-tokens",
        "10000000",
        "hi",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.starts_with('{'), "the request is printed: {out}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("threadline: run: the request is invalid: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("max_tokens"), "{err}");
}
