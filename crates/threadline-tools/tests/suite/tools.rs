//! Each built-in tool on a real directory: what it answers, its limits, and its refusals
//! (the security cases: `..`, absolute paths outside, links leading out).

use crate::common;

use common::{call, text};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use threadline_query::Permission;
use threadline_query::Tool;
use threadline_tools::{EditFile, Glob, Grep, ListDir, ReadFile, Shell, WriteFile};
use threadline_workspace::Workspace;

struct Fixture {
    _dir: tempfile::TempDir,
    outside: tempfile::TempDir,
    ws: Arc<Workspace>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/nested")).expect("mkdir");
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    )
    .expect("write");
    std::fs::write(
        root.join("src/nested/deep.rs"),
        "// deep\nfn answer_deep() {}\n",
    )
    .expect("write");
    std::fs::write(root.join("README.md"), "# Project\nanswer here\n").expect("write");
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
    std::fs::create_dir_all(root.join("target")).expect("mkdir");
    std::fs::write(root.join("target/built.rs"), "fn answer_built() {}\n").expect("write");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "answer: the secret\n").expect("write");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), root.join("escape")).expect("link");
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("secret-link"))
            .expect("link");
    }
    let ws = Arc::new(Workspace::new(root).expect("workspace"));
    Fixture {
        _dir: dir,
        outside,
        ws,
    }
}

fn outside_path(f: &Fixture) -> String {
    f.outside
        .path()
        .join("secret.txt")
        .to_string_lossy()
        .into_owned()
}

// ---- Read ----

#[tokio::test]
async fn read_numbers_lines_and_reads_ranges() {
    let f = fixture();
    let read = ReadFile::new(Arc::clone(&f.ws));
    let out = call(&read, json!({"path": "src/lib.rs"})).await;
    assert_eq!(
        text(&out),
        "     1\tpub fn answer() -> u32 {\n     2\t    42\n     3\t}\n"
    );
    let out = call(
        &read,
        json!({"path": "src/lib.rs", "offset": 2, "limit": 1}),
    )
    .await;
    assert_eq!(
        text(&out),
        "     2\t    42\n[1 more lines; read on with offset 3]\n"
    );
    assert!(read.is_concurrency_safe(&json!({})));
}

#[tokio::test]
async fn read_stops_at_the_byte_limit() {
    let f = fixture();
    std::fs::write(f.ws.root().join("big.txt"), "x\n".repeat(100_000)).expect("write");
    let read = ReadFile::new(Arc::clone(&f.ws)).with_max_bytes(1_000);
    let out = call(&read, json!({"path": "big.txt"})).await;
    assert!(!out.is_error);
    assert!(text(&out).ends_with("[truncated: only the first 1000 bytes of the file were read]\n"));
    assert!(text(&out).len() < 20_000);
}

#[tokio::test]
async fn read_refuses_everything_outside_and_binaries() {
    let f = fixture();
    let read = ReadFile::new(Arc::clone(&f.ws));
    std::fs::write(f.ws.root().join("bin.dat"), b"\x00\x01\x02").expect("write");
    let mut cases = vec![
        json!({"path": "../secret.txt"}),
        json!({"path": "src/../../secret.txt"}),
        json!({"path": outside_path(&f)}),
        json!({"path": "bin.dat"}),
        json!({"path": "missing.txt"}),
        json!({"path": "src"}),
    ];
    if cfg!(unix) {
        cases.push(json!({"path": "escape/secret.txt"}));
        cases.push(json!({"path": "secret-link"}));
    }
    for input in cases {
        let out = call(&read, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(!text(&out).contains("the secret"), "{input}");
    }
}

// ---- LS ----

#[tokio::test]
async fn ls_lists_sorted_and_refuses_outside() {
    let f = fixture();
    let ls = ListDir::new(Arc::clone(&f.ws));
    let out = call(&ls, json!({"path": "src"})).await;
    assert_eq!(text(&out), "lib.rs\nnested/\n");
    assert!(call(&ls, json!({"path": ".."})).await.is_error);
    if cfg!(unix) {
        assert!(call(&ls, json!({"path": "escape"})).await.is_error);
    }
}

// ---- Glob ----

#[tokio::test]
async fn glob_matches_respects_gitignore_and_never_follows_links_out() {
    let f = fixture();
    let glob = Glob::new(Arc::clone(&f.ws));
    let out = call(&glob, json!({"pattern": "**/*.rs"})).await;
    assert_eq!(text(&out), "src/lib.rs\nsrc/nested/deep.rs\n");
    let out = call(&glob, json!({"pattern": "*.rs", "path": "src"})).await;
    assert_eq!(text(&out), "src/lib.rs\n");
    let out = call(&glob, json!({"pattern": "**/*.txt"})).await;
    assert_eq!(text(&out), "(no files match)");
    assert!(
        call(&glob, json!({"pattern": "*", "path": "../"}))
            .await
            .is_error
    );
    assert!(call(&glob, json!({"pattern": "a{"})).await.is_error);
}

// ---- Grep ----

#[tokio::test]
async fn grep_finds_lines_with_ripgrep_semantics() {
    let f = fixture();
    let grep = Grep::new(Arc::clone(&f.ws));
    let out = call(&grep, json!({"pattern": "answer"})).await;
    // Sorted walk; ignored (target/), hidden and outside (the link) files are skipped.
    assert_eq!(
        text(&out),
        "README.md:2:answer here\nsrc/lib.rs:1:pub fn answer() -> u32 {\nsrc/nested/deep.rs:2:fn answer_deep() {}\n"
    );
    let out = call(
        &grep,
        json!({"pattern": "ANSWER", "case_insensitive": true, "glob": "*.md"}),
    )
    .await;
    assert_eq!(text(&out), "README.md:2:answer here\n");
    let out = call(&grep, json!({"pattern": "nothing-like-this"})).await;
    assert_eq!(text(&out), "(no matches)");
    assert!(call(&grep, json!({"pattern": "("})).await.is_error);
    assert!(
        call(
            &grep,
            json!({"pattern": "secret", "path": outside_path(&f)})
        )
        .await
        .is_error
    );
    if cfg!(unix) {
        let out = call(&grep, json!({"pattern": "secret", "path": "secret-link"})).await;
        assert!(out.is_error);
    }
}

#[tokio::test]
async fn grep_bounds_its_answer() {
    let f = fixture();
    std::fs::write(f.ws.root().join("many.txt"), "hit\n".repeat(2_000)).expect("write");
    let grep = Grep::new(Arc::clone(&f.ws));
    let out = call(&grep, json!({"pattern": "^hit$", "path": "many.txt"})).await;
    let lines = text(&out).lines().count();
    assert_eq!(lines, threadline_tools::grep::MAX_GREP_MATCHES + 1);
    assert!(text(&out).ends_with("[truncated at 500 matches]\n"));
}

// ---- Write ----

#[tokio::test]
async fn write_creates_files_and_directories_inside() {
    let f = fixture();
    let write = WriteFile::new(Arc::clone(&f.ws));
    let out = call(
        &write,
        json!({"path": "new/dir/file.txt", "content": "hello"}),
    )
    .await;
    assert_eq!(text(&out), "Wrote 5 bytes to new/dir/file.txt");
    assert_eq!(
        std::fs::read_to_string(f.ws.root().join("new/dir/file.txt")).expect("read"),
        "hello"
    );
    assert!(!write.is_concurrency_safe(&json!({})));
}

fn untouched(dir: &Path) {
    let names: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["secret.txt"], "something was written outside");
    assert_eq!(
        std::fs::read_to_string(dir.join("secret.txt")).expect("read"),
        "answer: the secret\n"
    );
}

#[tokio::test]
async fn write_never_writes_outside() {
    let f = fixture();
    let write = WriteFile::new(Arc::clone(&f.ws));
    let mut cases = vec![
        json!({"path": "../evil.txt", "content": "x"}),
        json!({"path": "a/../../evil.txt", "content": "x"}),
        json!({"path": outside_path(&f), "content": "x"}),
        json!({"path": f.outside.path().join("evil.txt").to_string_lossy(), "content": "x"}),
        json!({"path": "src", "content": "x"}),
    ];
    if cfg!(unix) {
        cases.push(json!({"path": "escape/evil.txt", "content": "x"}));
        cases.push(json!({"path": "secret-link", "content": "x"}));
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            f.outside.path().join("dangling.txt"),
            f.ws.root().join("dangling"),
        )
        .expect("link");
        cases.push(json!({"path": "dangling", "content": "x"}));
    }
    for input in cases {
        let out = call(&write, input.clone()).await;
        assert!(out.is_error, "{input}");
    }
    untouched(f.outside.path());
}

// ---- Edit ----

#[tokio::test]
async fn edit_replaces_exactly_one_occurrence_or_all_when_asked() {
    let f = fixture();
    let edit = EditFile::new(Arc::clone(&f.ws));
    std::fs::write(f.ws.root().join("e.txt"), "a b a\n").expect("write");
    let out = call(
        &edit,
        json!({"path": "e.txt", "old_string": "a", "new_string": "c"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "e.txt: old_string occurs 2 times; add surrounding lines to make it unique, or set replace_all"
    );
    let out = call(
        &edit,
        json!({"path": "e.txt", "old_string": "b", "new_string": "B"}),
    )
    .await;
    assert_eq!(text(&out), "Edited e.txt: 1 replacement");
    let out = call(
        &edit,
        json!({"path": "e.txt", "old_string": "a", "new_string": "c", "replace_all": true}),
    )
    .await;
    assert_eq!(text(&out), "Edited e.txt: 2 replacements");
    assert_eq!(
        std::fs::read_to_string(f.ws.root().join("e.txt")).expect("read"),
        "c B c\n"
    );
    assert!(
        call(
            &edit,
            json!({"path": "e.txt", "old_string": "zzz", "new_string": "y"})
        )
        .await
        .is_error
    );
    assert!(
        call(
            &edit,
            json!({"path": "e.txt", "old_string": "c", "new_string": "c"})
        )
        .await
        .is_error
    );
}

#[tokio::test]
async fn edit_refuses_a_file_that_is_not_utf8_and_leaves_its_bytes() {
    let f = fixture();
    let edit = EditFile::new(Arc::clone(&f.ws));
    let file = f.ws.root().join("latin1.txt");
    // Latin-1 `é`: an invalid byte in UTF-8, after a match that would be replaced.
    let bytes = b"caf\xe9 old\n".to_vec();
    std::fs::write(&file, &bytes).expect("write");
    let out = call(
        &edit,
        json!({"path": "latin1.txt", "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert!(out.is_error, "{}", text(&out));
    assert_eq!(
        text(&out),
        "latin1.txt: not UTF-8 text (an invalid byte at offset 3); Edit changes only UTF-8 files, and this one was left as it was"
    );
    assert_eq!(std::fs::read(&file).expect("read"), bytes);
    // Binary and too large are refused as before, UTF-8 text edited.
    std::fs::write(f.ws.root().join("bin"), b"old\0").expect("write");
    let out = call(
        &edit,
        json!({"path": "bin", "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert!(text(&out).contains("a binary file"), "{}", text(&out));
    std::fs::write(f.ws.root().join("utf8.txt"), "café old\n").expect("write");
    let out = call(
        &edit,
        json!({"path": "utf8.txt", "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert_eq!(text(&out), "Edited utf8.txt: 1 replacement");
    assert_eq!(
        std::fs::read_to_string(f.ws.root().join("utf8.txt")).expect("read"),
        "café new\n"
    );
    let large = vec![b'a'; threadline_tools::write::MAX_WRITE_BYTES + 1];
    std::fs::write(f.ws.root().join("large.txt"), &large).expect("write");
    let out = call(
        &edit,
        json!({"path": "large.txt", "old_string": "a", "new_string": "b", "replace_all": true}),
    )
    .await;
    assert!(text(&out).contains("too large to edit"), "{}", text(&out));
}

#[tokio::test]
async fn edit_never_touches_files_outside() {
    let f = fixture();
    let edit = EditFile::new(Arc::clone(&f.ws));
    let mut cases = vec![
        json!({"path": "../secret.txt", "old_string": "secret", "new_string": "x"}),
        json!({"path": outside_path(&f), "old_string": "secret", "new_string": "x"}),
    ];
    if cfg!(unix) {
        cases.push(json!({"path": "secret-link", "old_string": "secret", "new_string": "x"}));
        cases.push(json!({"path": "escape/secret.txt", "old_string": "secret", "new_string": "x"}));
    }
    for input in cases {
        assert!(call(&edit, input.clone()).await.is_error, "{input}");
    }
    untouched(f.outside.path());
}

// ---- Bash ----

#[tokio::test]
async fn shell_asks_unless_allowed() {
    let f = fixture();
    let input = json!({"command": "echo hi"});
    let asking = Shell::new(Arc::clone(&f.ws));
    assert!(
        matches!(asking.check_permission(&input), Permission::Ask { prompt } if prompt.starts_with("Run `echo hi` in "))
    );
    let allowed = Shell::new(Arc::clone(&f.ws)).allow_without_asking(true);
    assert_eq!(allowed.check_permission(&input), Permission::Allow);
}

#[cfg(unix)]
#[tokio::test]
async fn shell_runs_in_the_workspace_and_reports_exit_codes() {
    let f = fixture();
    let shell = Shell::new(Arc::clone(&f.ws)).allow_without_asking(true);
    let out = call(&shell, json!({"command": "ls src; echo oops >&2; exit 3"})).await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "exit code: 3\nlib.rs\nnested\n\n[stderr]\noops\n"
    );
    let out = call(&shell, json!({"command": "printf ok"})).await;
    assert!(!out.is_error);
    assert_eq!(text(&out), "exit code: 0\nok");
}

#[cfg(unix)]
#[tokio::test]
async fn shell_times_out_and_bounds_output() {
    let f = fixture();
    let shell = Shell::new(Arc::clone(&f.ws)).allow_without_asking(true);
    let started = std::time::Instant::now();
    let out = call(&shell, json!({"command": "sleep 30", "timeout_ms": 200})).await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "the command timed out after 200 ms and was killed"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the timeout did not stop the command"
    );
    let out = call(
        &shell,
        json!({"command": "head -c 200000 /dev/zero | tr '\\0' x"}),
    )
    .await;
    assert!(text(&out).ends_with("[output cut at 30000 bytes]"));
    assert!(text(&out).len() < 30_100);
}

#[test]
fn reads_are_idempotent_and_writes_and_commands_are_not() {
    let f = fixture();
    let tools = threadline_tools::builtin(Arc::clone(&f.ws), threadline_tools::ShellAccess::Allow);
    let input = json!({});
    let idempotent: Vec<(&str, bool)> = tools
        .names()
        .map(|name| {
            let tool = tools.get(name).expect("listed");
            (name, tool.is_idempotent(&input))
        })
        .collect();
    let mut expected = [
        (ReadFile::new(Arc::clone(&f.ws)).name().to_owned(), true),
        (ListDir::new(Arc::clone(&f.ws)).name().to_owned(), true),
        (Glob::new(Arc::clone(&f.ws)).name().to_owned(), true),
        (Grep::new(Arc::clone(&f.ws)).name().to_owned(), true),
        (WriteFile::new(Arc::clone(&f.ws)).name().to_owned(), false),
        (EditFile::new(Arc::clone(&f.ws)).name().to_owned(), false),
        (Shell::new(Arc::clone(&f.ws)).name().to_owned(), false),
    ];
    expected.sort();
    let expected: Vec<(&str, bool)> = expected.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    assert_eq!(idempotent, expected);
}
