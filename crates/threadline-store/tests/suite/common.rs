//! Helpers: blocking on a store's futures, entries, and this binary's child mode.

use std::process::{Child, Command, Stdio};

use threadline_store::{Entry, SessionKey};

/// The variable that puts this binary in one test's child mode (its value: the test's name).
pub(crate) const CHILD: &str = "THREADLINE_STORE_CHILD";
/// The file or database a child appends to.
pub(crate) const CHILD_PATH: &str = "THREADLINE_STORE_CHILD_PATH";
/// The child's appender number.
pub(crate) const CHILD_INDEX: &str = "THREADLINE_STORE_CHILD_INDEX";

pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

pub(crate) fn entry(text: &str) -> Entry {
    Entry::new(text.as_bytes().to_vec()).expect("a valid entry")
}

pub(crate) fn key(project: &str, session: &str) -> SessionKey {
    SessionKey::new(project, session).expect("a valid key")
}

/// Whether this process is `test`'s child.
pub(crate) fn is_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|name| name == test)
}

/// Starts `test` (its path below the binary's root, e.g. `jsonl::four_processes_append_to_one_file`) alone in a
/// child process of this binary with `envs` added.
pub(crate) fn spawn_child(test: &str, envs: &[(&str, &str)]) -> Child {
    let name = test.rsplit("::").next().unwrap_or(test);
    Command::new(std::env::current_exe().expect("current exe"))
        .arg(test)
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("child starts")
}

/// The directory where children and parent meet to start together.
pub(crate) const CHILD_SYNC: &str = "THREADLINE_STORE_CHILD_SYNC";

/// In a child: says it is ready, then waits for the parent's go (so the children's appends
/// overlap instead of running one after the other).
pub(crate) fn child_ready_then_wait() {
    let dir = std::path::PathBuf::from(std::env::var(CHILD_SYNC).expect("sync dir"));
    let index = std::env::var(CHILD_INDEX).expect("index");
    std::fs::write(dir.join(format!("ready-{index}")), b"").expect("ready file");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !dir.join("go").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "no go from the parent"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Starts `count` children of `test` appending to `path`, all at once; waits for them.
pub(crate) fn run_children(test: &str, path: &str, count: usize) {
    let sync = tempfile::tempdir().expect("sync dir");
    let sync_text = sync.path().to_str().expect("utf-8").to_owned();
    let children: Vec<Child> = (0..count)
        .map(|i| {
            spawn_child(
                test,
                &[
                    (CHILD_PATH, path),
                    (CHILD_INDEX, &i.to_string()),
                    (CHILD_SYNC, &sync_text),
                ],
            )
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while (0..count).any(|i| !sync.path().join(format!("ready-{i}")).exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the children never got ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::fs::write(sync.path().join("go"), b"").expect("go file");
    for child in children {
        wait_child(child);
    }
}

/// Waits for `child`; fails the test if it failed.
pub(crate) fn wait_child(child: Child) -> String {
    let output = child.wait_with_output().expect("child runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The entries a child numbered `index` appends: `EACH` of its own (singles and batches of
/// 3, sizes varying) and `SHARED` ids every child appends too.
pub(crate) const EACH: usize = 400;
pub(crate) const SHARED: usize = 40;

pub(crate) fn child_batches(index: usize) -> Vec<Vec<Entry>> {
    let mut batches = Vec::new();
    let mut i = 0;
    while i < EACH {
        let n = if i % 2 == 0 { 1 } else { 3.min(EACH - i) };
        let mut batch: Vec<Entry> = (i..i + n)
            .map(|j| {
                let pad = "p".repeat((index * 131 + j * 17) % 2000);
                entry(&format!(
                    r#"{{"type":"user","uuid":"c{index}-{j}","child":{index},"i":{j},"pad":"{pad}"}}"#
                ))
            })
            .collect();
        if i % 3 == 1 {
            let s = (i / 3) % SHARED;
            batch.push(entry(&format!(
                r#"{{"type":"shared","uuid":"shared-{s}"}}"#
            )));
        }
        batches.push(batch);
        i += n;
    }
    for s in 0..SHARED {
        batches.push(vec![entry(&format!(
            r#"{{"type":"shared","uuid":"shared-{s}"}}"#
        ))]);
    }
    batches
}

/// Checks what `children` children appended to one key: every own entry once, in each
/// child's order, byte-identical; every shared id once.
pub(crate) fn check_children(loaded: &[Entry], children: usize) {
    assert_eq!(loaded.len(), children * EACH + SHARED, "entry count");
    let mut next = vec![0usize; children];
    let mut shared = std::collections::BTreeSet::new();
    for e in loaded {
        let id = e.id().expect("every entry has an id");
        if let Some(s) = id.strip_prefix("shared-") {
            assert!(shared.insert(s.to_owned()), "shared id {id} twice");
            assert_eq!(
                &e.bytes()[..],
                format!(r#"{{"type":"shared","uuid":"{id}"}}"#).as_bytes()
            );
            continue;
        }
        let (c, j) = id[1..].split_once('-').expect("c<child>-<i>");
        let (c, j): (usize, usize) = (c.parse().expect("child"), j.parse().expect("i"));
        assert_eq!(next[c], j, "child {c}'s order");
        next[c] += 1;
        let pad = "p".repeat((c * 131 + j * 17) % 2000);
        assert_eq!(
            &e.bytes()[..],
            format!(r#"{{"type":"user","uuid":"c{c}-{j}","child":{c},"i":{j},"pad":"{pad}"}}"#)
                .as_bytes()
        );
    }
    assert_eq!(next, vec![EACH; children]);
    assert_eq!(shared.len(), SHARED);
}
