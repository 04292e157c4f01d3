//! `threadline run`: the dry run prints the exact first request, byte-stable, and sends
//! nothing; without `--dry-run` and without a key it sends nothing either (the live run is
//! tested against the mock in `run_mock.rs`).

use crate::common;

use common::{code, command, git, stderr, stdout, threadline_in};

/// A small workspace: instructions at the root and beside a source file, a binary, a secret
/// next door.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("project");
    std::fs::create_dir_all(ws.join("src/parser")).expect("dirs");
    std::fs::write(
        ws.join("AGENTS.md"),
        "Run `cargo test` before you say you are done.\n",
    )
    .expect("agents");
    std::fs::write(
        ws.join("src/parser/CLAUDE.md"),
        "The parser never allocates per token.\n",
    )
    .expect("nested");
    std::fs::write(
        ws.join("src/parser/lexer.rs"),
        "pub fn lex(input: &str) -> usize {\n    input.len()\n}\n",
    )
    .expect("lexer");
    std::fs::write(ws.join("logo.png"), b"\x89PNG\r\n\x1a\n\x00\x00").expect("png");
    std::fs::write(dir.path().join("secret.txt"), "TOP SECRET").expect("secret");
    dir
}

fn project(dir: &tempfile::TempDir) -> std::path::PathBuf {
    std::fs::canonicalize(dir.path().join("project")).expect("canonical")
}

#[test]
fn the_dry_run_prints_the_first_request_byte_stable() {
    let dir = workspace();
    let root = project(&dir);
    let args = [
        "run",
        "--dry-run",
        "--date",
        "2026-11-30",
        "--cwd",
        root.to_str().expect("utf-8 path"),
        "Why is @src/parser/lexer.rs so short? Also see @src and ask @agent-reviewer.",
    ];
    let first = threadline_in(&args, dir.path());
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(stderr(&first), "");
    // Byte-identical on a second run.
    let second = threadline_in(&args, dir.path());
    assert_eq!(stdout(&first), stdout(&second));

    // It is a request the API accepts.
    let body = stdout(&first);
    let request: threadline_wire::MessagesRequest =
        serde_json::from_str(&body).expect("a request body");
    let model = threadline_wire::model::ModelTable::builtin();
    assert!(
        threadline_validate::validate(&request, model.resolve(&request.model).model()).is_empty()
    );

    // The temporary path is the only thing that varies; it appears, and is redacted.
    let root_text = root.display().to_string();
    assert!(body.contains(&root_text));
    let redacted = body.replace(&root_text, "[WORKSPACE]");
    assert!(!redacted.contains("TOP SECRET"));
    // Printed as the client sends it (one line); pretty for the snapshot.
    assert_eq!(body.lines().count(), 1);
    let pretty: serde_json::Value = serde_json::from_str(&redacted).expect("json");
    let pretty = serde_json::to_string_pretty(&pretty).expect("json");
    insta::assert_snapshot!("dry_run_first_request", pretty);
}

#[test]
fn the_date_comes_from_the_environment_when_not_given() {
    let dir = workspace();
    let root = project(&dir);
    let output = command()
        .args(["run", "--dry-run", "hello"])
        .current_dir(&root)
        .env("THREADLINE_DATE", "2031-01-02")
        .output()
        .expect("runs");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(stdout(&output).contains("Today's date is 2031-01-02."));
    let bad = command()
        .args(["run", "--dry-run", "hello"])
        .current_dir(&root)
        .env("THREADLINE_DATE", "tomorrow")
        .output()
        .expect("runs");
    assert_eq!(code(&bad), 2);
    assert_eq!(
        stderr(&bad),
        "threadline: run: \"tomorrow\" is not a date of the form YYYY-MM-DD\n"
    );
}

#[test]
fn refused_mentions_are_reported_and_never_read() {
    let dir = workspace();
    let root = project(&dir);
    let output = threadline_in(
        &[
            "run",
            "--dry-run",
            "--date",
            "2026-11-30",
            "--cwd",
            root.to_str().expect("utf-8"),
            "read @../secret.txt and @/etc/passwd and @logo.png",
        ],
        dir.path(),
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "threadline: run: attachment source `file_mentions`: @../secret.txt: refused: `..` is \
         not allowed: paths must stay inside the workspace\n\
         threadline: run: attachment source `file_mentions`: @/etc/passwd: refused: the \
         absolute path is outside the workspace\n\
         threadline: run: attachment source `file_mentions`: @logo.png: refused: a binary file \
         (a NUL byte in its first 8192 bytes)\n"
    );
    let body = stdout(&output);
    assert!(!body.contains("TOP SECRET"));
    assert!(!body.contains("root:"));
    assert!(!body.contains("Called the Read tool"));
}

#[test]
fn without_dry_run_and_without_a_key_nothing_is_sent_and_the_exit_code_says_so() {
    let dir = workspace();
    let output = command()
        .args(["run", "hello"])
        .current_dir(project(&dir))
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("the binary runs");
    assert_eq!(code(&output), 2);
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).contains("ANTHROPIC_API_KEY is not set")
            && stderr(&output).contains("--dry-run"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_missing_workspace_is_a_usage_error() {
    let dir = workspace();
    let output = threadline_in(
        &["run", "--dry-run", "--cwd", "/definitely/not/here", "hi"],
        dir.path(),
    );
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output)
            .starts_with("threadline: run: /definitely/not/here: not a usable workspace")
    );
}

#[test]
fn a_planted_fsmonitor_does_not_run_when_the_session_starts() {
    let dir = workspace();
    let root = project(&dir);
    git(&root, &["init", "-q"]);
    git(&root, &["add", "AGENTS.md"]);
    git(&root, &["commit", "-q", "-m", "instructions"]);
    let marker = dir.path().join("PWNED");
    git(
        &root,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch '{}'; false", marker.display()),
        ],
    );
    let output = threadline_in(
        &[
            "run",
            "--dry-run",
            "--cwd",
            root.to_str().expect("utf-8 path"),
            "hi",
        ],
        dir.path(),
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    // The agent sends no git status (the old dry run added one the live agent never sent).
    assert!(
        !stdout(&output).contains("gitStatus"),
        "{}",
        stdout(&output)
    );
    assert!(!marker.exists(), "the repository's fsmonitor ran");
}
