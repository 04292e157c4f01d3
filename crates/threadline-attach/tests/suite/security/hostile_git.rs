//! A repository's own configuration runs nothing when the session context takes its git
//! snapshot, the snapshot never hangs, and it never describes a repository above the workspace.
//! Every repository here is a real one made by `git`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use threadline_attach::git_status_snapshot;

/// Runs `git` for the test's own set-up (before anything hostile is planted).
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A repository at `dir` with one commit of `a.txt`.
fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).expect("dir");
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "aaaa\n").expect("file");
    git(dir, &["add", "a.txt"]);
    git(dir, &["commit", "-q", "-m", "first commit"]);
}

/// An executable script at `path` that creates `marker` (and succeeds, printing nothing).
fn marker_script(path: &Path, marker: &Path) {
    std::fs::write(
        path,
        format!("#!/bin/sh\ntouch '{}'\ncat\n", marker.display()),
    )
    .expect("script");
    let mut permissions = std::fs::metadata(path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(path, permissions).expect("chmod");
}

/// The snapshot of `dir`, taken on a thread so that a hang fails the test instead of holding it.
fn snapshot_within(dir: &Path, limit: Duration) -> Option<String> {
    let (sender, receiver) = mpsc::channel();
    let dir: PathBuf = dir.to_path_buf();
    std::thread::spawn(move || {
        let _ = sender.send(git_status_snapshot(&dir));
    });
    receiver
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the git snapshot did not return within {limit:?}"))
}

/// Makes `a.txt` differ from the index only in content, not size, with a new mtime: git must
/// read it (through any clean filter) to tell whether it changed.
fn touch_same_size(dir: &Path) {
    std::fs::write(dir.join("a.txt"), "bbbb\n").expect("rewrite");
    let file = std::fs::File::options()
        .write(true)
        .open(dir.join("a.txt"))
        .expect("open");
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(60))
        .expect("mtime");
}

#[test]
fn a_planted_fsmonitor_filter_hook_pager_or_gpg_program_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    repository(&ws);
    let marker = |name: &str| dir.path().join(format!("PWNED-{name}"));
    let script = |name: &str| {
        let path = dir.path().join(format!("evil-{name}"));
        marker_script(&path, &marker(name));
        path
    };
    // A signed commit, so that `log.showSignature` would ask the gpg program to verify it.
    let head = git(&ws, &["cat-file", "commit", "HEAD"]);
    let (headers, body) = head.split_once("\n\n").expect("commit object");
    let signed = format!(
        "{headers}\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\n{body}"
    );
    std::fs::write(dir.path().join("signed"), signed).expect("signed commit");
    let object = git(
        &ws,
        &[
            "hash-object",
            "-t",
            "commit",
            "-w",
            &dir.path().join("signed").display().to_string(),
        ],
    );
    git(&ws, &["update-ref", "refs/heads/main", object.trim()]);
    // Everything a hostile repository can name, planted after the set-up.
    let fsmonitor = script("fsmonitor");
    let clean = script("clean");
    let process = script("process");
    let pager = script("pager");
    let gpg = script("gpg");
    let hook = script("hook");
    std::fs::write(ws.join(".gitattributes"), "* filter=evil\n").expect("attributes");
    for (key, value) in [
        ("core.fsmonitor", fsmonitor.display().to_string()),
        ("filter.evil.clean", clean.display().to_string()),
        ("filter.evil.smudge", clean.display().to_string()),
        ("filter.other.process", process.display().to_string()),
        ("core.pager", pager.display().to_string()),
        ("pager.status", "true".to_owned()),
        ("pager.log", "true".to_owned()),
        ("log.showSignature", "true".to_owned()),
        ("gpg.program", gpg.display().to_string()),
        ("status.submoduleSummary", "true".to_owned()),
        ("core.untrackedCache", "true".to_owned()),
    ] {
        git(&ws, &["config", key, &value]);
    }
    std::fs::create_dir_all(ws.join(".git/hooks")).expect("hooks");
    std::fs::copy(&hook, ws.join(".git/hooks/post-index-change")).expect("hook");
    touch_same_size(&ws);

    let snapshot = snapshot_within(&ws, Duration::from_secs(30)).expect("a snapshot");
    assert!(snapshot.contains("Current branch: main"), "{snapshot}");
    assert!(snapshot.contains("first commit"), "{snapshot}");
    for name in ["fsmonitor", "clean", "process", "pager", "gpg", "hook"] {
        assert!(
            !marker(name).exists(),
            "the repository's {name} program ran:\n{snapshot}"
        );
    }
}

#[test]
fn a_stalling_fsmonitor_does_not_hold_the_start_of_a_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    repository(&ws);
    git(&ws, &["config", "core.fsmonitor", "sleep 1000"]);
    touch_same_size(&ws);
    let snapshot = snapshot_within(&ws, Duration::from_secs(30)).expect("a snapshot");
    assert!(snapshot.contains("first commit"), "{snapshot}");
}

#[test]
fn a_repository_above_the_workspace_is_never_described() {
    let dir = tempfile::tempdir().expect("tempdir");
    let parent = dir.path().join("parent");
    repository(&parent);
    std::fs::write(parent.join("parent_secret.txt"), "s").expect("secret");
    git(&parent, &["add", "parent_secret.txt"]);
    git(
        &parent,
        &["commit", "-q", "-m", "the parent's private history"],
    );
    std::fs::write(parent.join("parent_secret.txt"), "changed").expect("modified");
    let ws = parent.join("ws");
    std::fs::create_dir(&ws).expect("ws");
    std::fs::write(ws.join("mine.txt"), "x").expect("file");
    assert_eq!(snapshot_within(&ws, Duration::from_secs(30)), None);

    // A repository of the workspace's own inside the parent's describes only itself.
    repository(&ws);
    let snapshot = snapshot_within(&ws, Duration::from_secs(30)).expect("a snapshot");
    assert!(!snapshot.contains("parent"), "{snapshot}");
    assert!(snapshot.contains("?? mine.txt"), "{snapshot}");
}

#[test]
fn a_work_tree_configured_elsewhere_is_not_described() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    repository(&ws);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("elsewhere");
    std::fs::write(elsewhere.join("private.txt"), "p").expect("private");
    git(
        &ws,
        &["config", "core.worktree", &elsewhere.display().to_string()],
    );
    assert_eq!(snapshot_within(&ws, Duration::from_secs(30)), None);
}

/// A partial clone whose HEAD tree is missing: any read of it makes git fetch the object from
/// the promisor remote, and that fetch runs what the repository's own configuration names —
/// `remote.origin.uploadpack` for a `file://` remote, the command of an `ext::` URL (allowed by
/// the repository's `protocol.ext.allow`). The snapshot must fetch nothing and run neither.
#[test]
fn a_partial_clone_never_fetches_its_missing_objects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    repository(&ws);
    git(&ws, &["config", "core.repositoryformatversion", "1"]);
    git(&ws, &["config", "extensions.partialClone", "origin"]);
    git(&ws, &["config", "remote.origin.promisor", "true"]);
    let tree = git(&ws, &["rev-parse", "HEAD^{tree}"]);
    let tree = tree.trim();
    std::fs::remove_file(ws.join(".git/objects").join(&tree[..2]).join(&tree[2..]))
        .expect("the tree object is a loose object");

    let uploadpack_marker = dir.path().join("uploadpack-ran");
    let nowhere = dir.path().join("nowhere");
    git(
        &ws,
        &[
            "config",
            "remote.origin.url",
            &format!("file://{}", nowhere.display()),
        ],
    );
    git(
        &ws,
        &[
            "config",
            "remote.origin.uploadpack",
            &format!("sh -c 'touch {}; exit 1' #", uploadpack_marker.display()),
        ],
    );
    // The set-up is sound: plain git, reading the missing tree, runs the upload-pack command.
    let plain = Command::new("git")
        .arg("-C")
        .arg(&ws)
        .arg("status")
        .output()
        .expect("git runs");
    assert!(
        uploadpack_marker.exists(),
        "plain git did not lazily fetch, so this test proves nothing: {}",
        String::from_utf8_lossy(&plain.stderr)
    );
    std::fs::remove_file(&uploadpack_marker).expect("reset the marker");

    let _ = snapshot_within(&ws, Duration::from_secs(30));
    assert!(
        !uploadpack_marker.exists(),
        "the repository's remote.origin.uploadpack ran"
    );

    let ext_marker = dir.path().join("ext-ran");
    git(&ws, &["config", "--unset", "remote.origin.uploadpack"]);
    git(
        &ws,
        &[
            "config",
            "remote.origin.url",
            &format!("ext::sh -c touch% {}", ext_marker.display()),
        ],
    );
    git(&ws, &["config", "protocol.ext.allow", "always"]);
    let _ = snapshot_within(&ws, Duration::from_secs(30));
    assert!(!ext_marker.exists(), "the repository's ext:: command ran");
}
