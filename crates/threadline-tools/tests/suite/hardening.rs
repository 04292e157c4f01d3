//! A security review's findings against the built-in tools, each on real things: a real `git init`
//! repository, real symbolic links, a real `sh` child, and peak memory measured on a real
//! child process (this test binary re-run in one test's child mode).

use crate::common;

use common::{call, text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use threadline_query::Tool;
use threadline_tools::{EditFile, Grep, ListDir, MAX_TOOL_CALL_BYTES, ReadFile, Shell, WriteFile};
use threadline_workspace::Workspace;

/// The variable that puts this binary in one test's child mode (its value: the test's name).
const CHILD: &str = "THREADLINE_TOOLS_HARDENING_CHILD";

/// The file a child-mode test works on.
const CHILD_FILE: &str = "THREADLINE_TOOLS_HARDENING_FILE";

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// Whether this process is `test`'s child.
fn is_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|name| name == test)
}

/// `test`'s name as the harness filters it: its module path below the test binary's root
/// (the same in a binary of its own and as a module of a larger one).
fn harness_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

/// Runs `test` alone in a child process of this binary with `envs` added; its stdout.
fn run_child(test: &str, envs: &[(&str, &str)]) -> String {
    let output = Command::new(std::env::current_exe().expect("current exe"))
        .arg(harness_name(test))
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .envs(envs.iter().copied())
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "child {test} failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The value a child printed as `KEY=value` to the end of a line (the test harness may have
/// printed the test's name before it on the same line).
fn printed<'a>(stdout: &'a str, key: &str) -> &'a str {
    let marker = format!("{key}=");
    stdout
        .lines()
        .find_map(|line| Some(line.split_once(&marker)?.1))
        .unwrap_or_else(|| panic!("the child printed no {key}: {stdout}"))
}

// ---- memory bounded on long lines ----

/// A 200 MB file of one line (`a`s, then `needle` and the only newline), written in 1 MiB
/// chunks.
fn one_long_line(dir: &Path) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join("long.txt");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..200 {
        file.write_all(&chunk).expect("write");
    }
    file.write_all(b"needle\n").expect("write");
    file.flush().expect("flush");
    path
}

/// The peak resident memory of this process so far, in bytes (`VmHWM`).
#[cfg(target_os = "linux")]
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kb * 1024
}

/// In the child: the tool call on `CHILD_FILE`'s workspace, then the answer's head and the
/// peak RSS printed.
#[cfg(target_os = "linux")]
fn child_tool_call(tool: fn(Arc<Workspace>) -> Box<dyn Tool>, input: Value) {
    let file = PathBuf::from(std::env::var(CHILD_FILE).expect("file"));
    let ws = Arc::new(Workspace::new(file.parent().expect("dir")).expect("workspace"));
    let output = block_on(call(tool(ws).as_ref(), input));
    let head: String = text(&output).chars().take(300).collect();
    println!("ANSWER={}", head.replace('\n', "\\n"));
    println!("PEAK={}", peak_rss());
}

/// In the parent: the child's answer and peak RSS for one tool call on a 200 MB line.
#[cfg(target_os = "linux")]
fn measured(test: &str) -> (String, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = one_long_line(dir.path());
    let stdout = run_child(test, &[(CHILD_FILE, file.to_str().expect("utf-8"))]);
    let peak = printed(&stdout, "PEAK").parse().expect("a number");
    (printed(&stdout, "ANSWER").to_owned(), peak)
}

#[cfg(target_os = "linux")]
#[test]
fn grep_on_a_200_mb_single_line_file_stays_under_the_memory_bound() {
    const NAME: &str = "grep_on_a_200_mb_single_line_file_stays_under_the_memory_bound";
    if is_child(NAME) {
        return child_tool_call(|ws| Box::new(Grep::new(ws)), json!({"pattern": "needle"}));
    }
    let (answer, peak) = measured(NAME);
    assert!(
        peak < MAX_TOOL_CALL_BYTES as u64,
        "peak RSS {peak} bytes, over {MAX_TOOL_CALL_BYTES}"
    );
    // The file was not searched, and the answer says why.
    assert!(
        answer.starts_with("(no matches)\\n[not searched: a line longer than"),
        "{answer}"
    );
    assert!(answer.contains("long.txt"), "{answer}");
}

#[cfg(target_os = "linux")]
#[test]
fn read_on_a_200_mb_single_line_file_stays_under_the_memory_bound() {
    const NAME: &str = "read_on_a_200_mb_single_line_file_stays_under_the_memory_bound";
    if is_child(NAME) {
        return child_tool_call(
            |ws| Box::new(ReadFile::new(ws).with_max_bytes(u64::MAX)),
            json!({"file_path": "long.txt"}),
        );
    }
    let (answer, peak) = measured(NAME);
    assert!(
        peak < MAX_TOOL_CALL_BYTES as u64,
        "peak RSS {peak} bytes, over {MAX_TOOL_CALL_BYTES}"
    );
    assert!(answer.starts_with("     1\taaaa"), "{answer}");
}

#[tokio::test]
async fn grep_cuts_long_matching_lines_before_copying_and_still_finds_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A 1 MiB line (under the heap limit) with the match at its end, and a short one.
    let mut long = "b".repeat(1 << 20);
    long.push_str("needle\nneedle short\n");
    std::fs::write(dir.path().join("f.txt"), long).expect("write");
    let ws = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let out = call(&Grep::new(ws), json!({"pattern": "needle"})).await;
    let lines: Vec<&str> = text(&out).lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let cut = format!(
        "f.txt:1:{}…",
        "b".repeat(threadline_tools::grep::MAX_GREP_LINE_BYTES)
    );
    assert_eq!(lines[0], cut);
    assert_eq!(lines[1], "f.txt:2:needle short");
}

// ---- the file tools never write control paths ----

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// Every file below `root` with its bytes, and every link with its target.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let kind = std::fs::symlink_metadata(&path).expect("lstat").file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).expect("readlink");
                out.insert(path, target.to_string_lossy().as_bytes().to_vec());
            } else if kind.is_dir() {
                out.insert(path.clone(), b"/".to_vec());
                pending.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

#[cfg(unix)]
#[tokio::test]
async fn write_and_edit_refuse_control_paths_of_a_real_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", "first"]);
    // A worktree inside the workspace: its `.git` is a file pointing at the repository.
    git(root, &["worktree", "add", "-q", "wt"]);
    std::fs::create_dir(root.join("sub")).expect("sub");
    git(&root.join("sub"), &["init", "-q"]);
    std::os::unix::fs::symlink(".git", root.join("link")).expect("link");
    std::os::unix::fs::symlink(".git/hooks", root.join("hooks")).expect("link");
    std::fs::create_dir_all(root.join(".claude")).expect("claude");
    std::fs::write(root.join(".claude/settings.json"), "{}\n").expect("settings");
    assert!(root.join("wt/.git").is_file());
    let ws = Arc::new(Workspace::new(root).expect("workspace"));
    let write = WriteFile::new(Arc::clone(&ws));
    let edit = EditFile::new(Arc::clone(&ws));
    let before = snapshot(root);
    let planted = "[core]\n\tfsmonitor = touch PWNED; false\n";
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/new-dir/file",
        "sub/.git/config",
        "link/config",
        "link/hooks/post-checkout",
        "hooks/pre-commit",
        ".GIT/config",
        "wt/.git",
        ".claude/settings.json",
        ".mcp.json",
    ] {
        let out = call(&write, json!({"path": path, "content": planted})).await;
        assert!(out.is_error, "Write {path}: {}", text(&out));
        assert!(
            text(&out).contains("a control path of the workspace"),
            "Write {path}: {}",
            text(&out)
        );
    }
    for (path, old) in [
        (".git/config", "[core]"),
        ("sub/.git/config", "[core]"),
        ("link/config", "[core]"),
        (".git/HEAD", "ref"),
        ("wt/.git", "gitdir"),
        (".claude/settings.json", "{}"),
    ] {
        let out = call(
            &edit,
            json!({"path": path, "old_string": old, "new_string": "[core]\n\tfsmonitor = touch PWNED; false\n["}),
        )
        .await;
        assert!(out.is_error, "Edit {path}: {}", text(&out));
        assert!(
            text(&out).contains("a control path of the workspace"),
            "Edit {path}: {}",
            text(&out)
        );
    }
    assert_eq!(snapshot(root), before, "nothing changed on disk");
    // Ordinary files of the same repository are written, and control files can be read.
    let out = call(&write, json!({"path": "src/git.rs", "content": "x\n"})).await;
    assert!(!out.is_error, "{}", text(&out));
    let out = call(&ReadFile::new(ws), json!({"file_path": ".git/HEAD"})).await;
    assert!(text(&out).contains("ref: refs/heads/"), "{}", text(&out));
}

/// Runs `git -C dir status` as a shell prompt or an editor would, with no configuration but
/// the repository's own (git's defaults: `safe.bareRepository=all`), discovery stopped at
/// `ceiling`.
fn git_status_in(dir: &Path, ceiling: &Path) {
    let _ = Command::new("git")
        .arg("-C")
        .arg(dir)
        .arg("status")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git runs");
}

/// The four files of a git directory whose `config` runs `fsmonitor`, writing `marker`.
fn embedded_repository(marker: &Path) -> [(&'static str, String); 4] {
    [
        ("vendor/x/HEAD", "ref: refs/heads/main\n".to_owned()),
        ("vendor/x/objects/k", "k\n".to_owned()),
        ("vendor/x/refs/k", "k\n".to_owned()),
        (
            "vendor/x/config",
            format!(
                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch '{}'; false\"\n",
                marker.display()
            ),
        ),
    ]
}

#[cfg(unix)]
#[tokio::test]
async fn write_cannot_plant_a_git_directory_whose_config_runs_a_program() {
    // The attack is real in this git: the four files, written directly, make `git status`
    // inside `vendor/x` run the planted fsmonitor.
    let control = tempfile::tempdir().expect("tempdir");
    let marker = control.path().join("PWNED");
    for (path, content) in embedded_repository(&marker) {
        let path = control.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    git_status_in(&control.path().join("vendor/x"), control.path());
    assert!(
        marker.exists(),
        "the planted repository ran nothing: no attack to refuse"
    );

    // Through the Write tool, HEAD is refused, and git finds no repository to run.
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("PWNED");
    let ws = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let write = WriteFile::new(Arc::clone(&ws));
    for (path, content) in embedded_repository(&marker) {
        let out = call(&write, json!({"path": path, "content": content})).await;
        if path.ends_with("HEAD") {
            assert!(out.is_error, "Write {path}: {}", text(&out));
            assert!(
                text(&out).contains("a control path of the workspace (`HEAD`"),
                "Write {path}: {}",
                text(&out)
            );
        }
    }
    assert!(!dir.path().join("vendor/x/HEAD").exists());
    git_status_in(&dir.path().join("vendor/x"), dir.path());
    assert!(!marker.exists(), "git ran the planted fsmonitor");

    // A git directory already in the project (a committed bare repository) cannot be
    // changed either: neither its config nor a hook, by Write or by Edit.
    let bare = dir.path().join("fixture.git");
    std::fs::create_dir_all(bare.join("objects")).expect("mkdir");
    std::fs::create_dir_all(bare.join("refs")).expect("mkdir");
    std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    std::fs::write(
        bare.join("config"),
        "[core]\n\trepositoryformatversion = 0\n",
    )
    .expect("config");
    let before = snapshot(&bare);
    let planted = &embedded_repository(&marker)[3].1;
    for path in ["fixture.git/config", "fixture.git/hooks/post-index-change"] {
        let out = call(&write, json!({"path": path, "content": planted})).await;
        assert!(out.is_error, "Write {path}: {}", text(&out));
        assert!(text(&out).contains("`fixture.git/HEAD`"), "{}", text(&out));
    }
    let edit = EditFile::new(Arc::clone(&ws));
    let out = call(
        &edit,
        json!({"path": "fixture.git/config", "old_string": "[core]\n", "new_string": planted}),
    )
    .await;
    assert!(out.is_error, "Edit: {}", text(&out));
    assert_eq!(snapshot(&bare), before, "the git directory is unchanged");
    git_status_in(&bare, dir.path());
    assert!(!marker.exists(), "git ran the planted fsmonitor");
}

// ---- no existence oracle outside the workspace ----

#[cfg(unix)]
#[tokio::test]
async fn a_link_out_gets_one_error_whether_the_outside_target_exists_or_not() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "s\n").expect("secret");
    let root = dir.path();
    symlink(outside.path(), root.join("out")).expect("link");
    symlink(outside.path().join("secret.txt"), root.join("there")).expect("link");
    symlink(outside.path().join("missing.txt"), root.join("gone")).expect("link");
    let ws = Arc::new(Workspace::new(root).expect("workspace"));
    let tools: Vec<(Box<dyn Tool>, &str)> = vec![
        (Box::new(ReadFile::new(Arc::clone(&ws))), "file_path"),
        (Box::new(ListDir::new(Arc::clone(&ws))), "path"),
        (Box::new(WriteFile::new(Arc::clone(&ws))), "path"),
        (Box::new(EditFile::new(Arc::clone(&ws))), "path"),
        (Box::new(Grep::new(Arc::clone(&ws))), "path"),
    ];
    let pairs = [("out/secret.txt", "out/missing.txt"), ("there", "gone")];
    for (tool, key) in &tools {
        for (exists, missing) in pairs {
            let answer = |path: &str| {
                let mut input = json!({
                    "content": "x", "old_string": "s", "new_string": "t", "pattern": "s"
                });
                input[*key] = json!(path);
                if let Some(object) = input.as_object_mut() {
                    let allowed = tool.input_schema()["properties"].clone();
                    object.retain(|k, _| allowed.get(k).is_some());
                }
                input
            };
            let a = call(tool.as_ref(), answer(exists)).await;
            let b = call(tool.as_ref(), answer(missing)).await;
            let a_text = text(&a).strip_prefix(exists).unwrap_or(text(&a)).to_owned();
            let b_text = text(&b)
                .strip_prefix(missing)
                .unwrap_or(text(&b))
                .to_owned();
            assert!(
                a.is_error && b.is_error,
                "{}: {a_text} / {b_text}",
                tool.name()
            );
            assert_eq!(a_text, b_text, "{} on {exists} / {missing}", tool.name());
            assert!(a_text.contains("symbolic link leads outside"), "{a_text}");
        }
    }
    assert!(!outside.path().join("missing.txt").exists());
}

// ---- the shell's child does not inherit the API's credentials ----

#[cfg(unix)]
#[test]
fn the_shell_child_does_not_inherit_the_api_key_unless_asked() {
    const NAME: &str = "the_shell_child_does_not_inherit_the_api_key_unless_asked";
    if is_child(NAME) {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Arc::new(Workspace::new(dir.path()).expect("workspace"));
        let command = "echo key=${ANTHROPIC_API_KEY-unset} token=${ANTHROPIC_AUTH_TOKEN-unset} \
                       aws=${AWS_SECRET_ACCESS_KEY-unset} mine=${MY_SECRET-unset} \
                       other=${OTHER-unset} headers=${ANTHROPIC_CUSTOM_HEADERS-unset}";
        let input = json!({ "command": command });
        let shells = [
            ("DEFAULT", Shell::new(Arc::clone(&ws))),
            (
                "LISTED",
                Shell::new(Arc::clone(&ws)).withhold_env("MY_SECRET"),
            ),
            (
                "PASSED",
                Shell::new(Arc::clone(&ws)).with_withheld_env(Vec::<String>::new()),
            ),
        ];
        for (label, shell) in shells {
            let shell = shell.allow_without_asking(true);
            let out = block_on(call(&shell, input.clone()));
            println!("{label}={}", text(&out).replace('\n', " ").trim_end());
        }
        return;
    }
    let stdout = run_child(
        NAME,
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-api03-test-key"),
            ("ANTHROPIC_AUTH_TOKEN", "token-value"),
            ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
            ("MY_SECRET", "mine-value"),
            ("OTHER", "kept"),
            // Named in no list: withheld as every `ANTHROPIC_*` variable is.
            ("ANTHROPIC_CUSTOM_HEADERS", "x"),
        ],
    );
    assert_eq!(
        printed(&stdout, "DEFAULT"),
        "exit code: 0 key=unset token=unset aws=unset mine=mine-value other=kept headers=unset"
    );
    assert_eq!(
        printed(&stdout, "LISTED"),
        "exit code: 0 key=unset token=unset aws=unset mine=unset other=kept headers=unset"
    );
    assert_eq!(
        printed(&stdout, "PASSED"),
        "exit code: 0 key=sk-ant-api03-test-key token=token-value aws=aws-secret mine=mine-value \
         other=kept headers=x"
    );
}

// ---- a cancelled command leaves nothing running ----

/// Whether process `pid` still runs (a zombie has stopped: it only waits to be reaped).
#[cfg(target_os = "linux")]
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S …`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// The pid a command wrote to `file`, once it has.
#[cfg(target_os = "linux")]
async fn written_pid(file: &Path) -> u32 {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{} was never written", file.display());
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_cancelled_or_dropped_command_leaves_no_process_running() {
    use futures::StreamExt as _;
    use threadline_query::{ToolContext, ToolEvent};
    // A job in the background and a pipeline in the foreground, each a `sleep` of the
    // command's process group that writes its pid.
    let command = "sleep 30 & echo $! > bg; sh -c 'echo $$ > piped; exec sleep 30' | cat; wait";
    for how in ["cancel", "drop"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Arc::new(Workspace::new(dir.path()).expect("workspace"));
        let shell = Shell::new(ws).allow_without_asking(true);
        let ctx = ToolContext::new("toolu_1");
        let cancel = ctx.cancel.clone();
        let stream = shell.call(json!({ "command": command }), ctx);
        let task = tokio::spawn(stream.collect::<Vec<ToolEvent>>());
        let pids = [
            written_pid(&dir.path().join("bg")).await,
            written_pid(&dir.path().join("piped")).await,
        ];
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(pids.iter().all(|&pid| running(pid)), "{how}: started");
        if how == "cancel" {
            cancel.cancel();
            let events = task.await.expect("the call ends");
            match events.last() {
                Some(ToolEvent::Result(out)) => {
                    assert!(
                        out.is_error && text(out).contains("interrupted"),
                        "{}",
                        text(out)
                    );
                }
                other => panic!("no result: {other:?}"),
            }
        } else {
            task.abort();
            assert!(task.await.is_err_and(|e| e.is_cancelled()));
        }
        let mut left = pids.to_vec();
        for _ in 0..500 {
            left.retain(|&pid| running(pid));
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        if !left.is_empty() {
            // Do not leave them behind for the rest of the run.
            for pid in &left {
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            }
            panic!("{how}: still running after 5 s: {left:?}");
        }
    }
}

// ---- one name for the Read tool's file ----

#[test]
fn the_read_schema_names_the_file_as_the_synthetic_read_call_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let schema = ReadFile::new(ws).input_schema();
    let rendered = threadline_normalize::render_attachment(&threadline_message::Attachment::File {
        path: "src/lib.rs".into(),
        content: "x".into(),
        truncated: false,
    });
    let prefix = "Called the Read tool with the following input: ";
    let input: Value = rendered
        .iter()
        .find_map(|block| {
            let start = block.find(prefix)? + prefix.len();
            let end = block[start..].find('\n')? + start;
            serde_json::from_str(&block[start..end]).ok()
        })
        .expect("a synthetic Read input");
    let keys: Vec<&String> = input.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["file_path"]);
    assert!(
        schema["properties"].get("file_path").is_some(),
        "the schema's properties: {}",
        schema["properties"]
    );
    // The synthetic input passes the loop's own check of the schema.
    assert!(threadline_query::schema::check(&schema, &input).is_ok());
}

#[tokio::test]
async fn read_takes_file_path_and_still_accepts_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "one\n").expect("write");
    let ws = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let read = ReadFile::new(ws);
    for input in [json!({"file_path": "a.txt"}), json!({"path": "a.txt"})] {
        assert!(threadline_query::schema::check(&read.input_schema(), &input).is_ok());
        assert_eq!(text(&call(&read, input).await), "     1\tone\n");
    }
    let missing = call(&read, json!({})).await;
    assert!(missing.is_error);
    assert_eq!(text(&missing), "missing required property `file_path`");
}
