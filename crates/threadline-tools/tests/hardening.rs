//! Issue 13's findings against the built-in tools, each on real things: a real `git init`
//! repository, real symbolic links.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline_attach::Workspace;
use threadline_query::tool::Tool;
use threadline_query::{ToolContext, ToolEvent, ToolOutput};
use threadline_tools::{EditFile, Grep, ListDir, ReadFile, WriteFile};
use threadline_wire::Content;

async fn call(tool: &dyn Tool, input: Value) -> ToolOutput {
    let events: Vec<ToolEvent> = tool
        .call(input, ToolContext::new("toolu_1"))
        .collect()
        .await;
    match events.into_iter().last() {
        Some(ToolEvent::Result(output)) => output,
        other => panic!("no result: {other:?}"),
    }
}

fn text(output: &ToolOutput) -> &str {
    match &output.content {
        Content::Text(t) => t,
        Content::Blocks(_) => panic!("text expected"),
    }
}

// ---- finding 1: the file tools never write control paths ----

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
    let out = call(&ReadFile::new(ws), json!({"path": ".git/HEAD"})).await;
    assert!(text(&out).contains("ref: refs/heads/"), "{}", text(&out));
}

// ---- finding 10: no existence oracle outside the workspace ----

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
        (Box::new(ReadFile::new(Arc::clone(&ws))), "path"),
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
