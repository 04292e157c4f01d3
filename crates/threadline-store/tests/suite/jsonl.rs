//! JsonlStore: the layout on disk, reopening, a torn tail, hostile keys under the root, and four
//! processes appending to one file.

use std::fs;
use std::io::Write;
use std::path::{Component, Path};

use threadline_store::{JsonlStore, SessionKey, SessionStore, StoreError};

use crate::common::{
    CHILD_INDEX, CHILD_PATH, block_on, check_children, child_batches, child_ready_then_wait, entry,
    is_child, key, run_children,
};

#[test]
fn the_layout_is_claude_codes_with_encoded_segments() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    let main = key("-home-me-proj", "6f1c");
    let sub = main.with_subpath("subagents/agent-1").expect("subkey");
    block_on(store.append(&main, &[entry(r#"{"uuid":"a","type":"user"}"#)])).expect("append");
    block_on(store.append(&sub, &[entry(r#"{ "uuid":"b" }"#), entry(r#"{"x":1}"#)]))
        .expect("append");
    let main_file = dir.path().join("-home-me-proj/6f1c.jsonl");
    let sub_file = dir
        .path()
        .join("-home-me-proj/6f1c/subagents%2Fagent-1.jsonl");
    assert_eq!(store.path_of(&main).expect("path"), main_file);
    assert_eq!(store.path_of(&sub).expect("path"), sub_file);
    assert_eq!(
        fs::read(&main_file).expect("main file"),
        b"{\"uuid\":\"a\",\"type\":\"user\"}\n"
    );
    assert_eq!(
        fs::read(&sub_file).expect("sub file"),
        b"{ \"uuid\":\"b\" }\n{\"x\":1}\n"
    );
    assert_eq!(
        block_on(store.list_subkeys(&main)).expect("subkeys"),
        vec!["subagents/agent-1".to_owned()]
    );
}

#[test]
fn a_reopened_store_has_the_same_data_and_ids() {
    let dir = tempfile::tempdir().expect("temp dir");
    let k = key("p", "s");
    let sub = k.with_subpath("subagents/a").expect("subkey");
    let batch = [
        entry(r#"{"uuid":"1"}"#),
        entry(r#"{"uuid":"2", "n": 1.0e10}"#),
    ];
    {
        let store = JsonlStore::new(dir.path());
        block_on(store.append(&k, &batch)).expect("append");
        block_on(store.append(&sub, &batch[..1])).expect("append");
    }
    let store = JsonlStore::new(dir.path());
    assert_eq!(
        block_on(store.load(&k)).expect("load"),
        Some(batch.to_vec())
    );
    assert_eq!(
        block_on(store.load(&sub)).expect("load"),
        Some(batch[..1].to_vec())
    );
    // The ids come from the file, not from this process's memory.
    let again = block_on(store.append(&k, &batch)).expect("append");
    assert_eq!((again.written, again.duplicates), (0, 2));
    let listed = block_on(store.list_sessions("p")).expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].session, "s");
}

#[test]
fn a_torn_tail_is_left_out_reported_and_dropped_by_the_next_append() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    let k = key("p", "s");
    block_on(store.append(&k, &[entry(r#"{"uuid":"1"}"#)])).expect("append");
    let path = store.path_of(&k).expect("path");
    // A crash in the middle of the second append's write.
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open")
        .write_all(br#"{"uuid":"2","cut":"he"#)
        .expect("write");
    assert_eq!(store.torn_tail(&k).expect("torn tail"), 21);
    assert_eq!(
        block_on(store.load(&k)).expect("load"),
        Some(vec![entry(r#"{"uuid":"1"}"#)])
    );
    // Another store (another process) sees the same, and its retry of the torn entry writes it.
    let other = JsonlStore::new(dir.path());
    let retried =
        block_on(other.append(&k, &[entry(r#"{"uuid":"2","cut":"here"}"#)])).expect("append");
    assert_eq!((retried.written, retried.duplicates), (1, 0));
    assert_eq!(store.torn_tail(&k).expect("torn tail"), 0);
    assert_eq!(
        fs::read(&path).expect("file"),
        b"{\"uuid\":\"1\"}\n{\"uuid\":\"2\",\"cut\":\"here\"}\n"
    );
    // The first store's cached ids follow the file (it shrank, then grew).
    let dup = block_on(store.append(&k, &[entry(r#"{"uuid":"2"}"#)])).expect("append");
    assert_eq!((dup.written, dup.duplicates), (0, 1));
}

#[test]
fn a_complete_last_entry_without_its_newline_is_kept_known_and_terminated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    let k = key("p", "s");
    block_on(store.append(&k, &[entry(r#"{"uuid":"1"}"#)])).expect("append");
    let path = store.path_of(&k).expect("path");
    // A crash just before the second append's newline: the entry itself is whole.
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open")
        .write_all(br#"{"uuid":"2"}"#)
        .expect("write");
    assert_eq!(store.torn_tail(&k).expect("torn tail"), 0);
    let both = Some(vec![entry(r#"{"uuid":"1"}"#), entry(r#"{"uuid":"2"}"#)]);
    assert_eq!(block_on(store.load(&k)).expect("load"), both);
    // Another store (another process) knows its id, and terminates it before appending.
    let other = JsonlStore::new(dir.path());
    let again = block_on(other.append(&k, &[entry(r#"{"uuid":"2"}"#), entry(r#"{"uuid":"3"}"#)]))
        .expect("append");
    assert_eq!((again.written, again.duplicates), (1, 1));
    assert_eq!(
        fs::read(&path).expect("file"),
        b"{\"uuid\":\"1\"}\n{\"uuid\":\"2\"}\n{\"uuid\":\"3\"}\n"
    );
}

#[cfg(unix)]
#[test]
fn session_files_and_directories_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("sessions");
    let store = JsonlStore::new(&root);
    let k = key("p", "s").with_subpath("subagents/a").expect("subkey");
    block_on(store.append(&k, &[entry(r#"{"uuid":"1"}"#)])).expect("append");
    let path = store.path_of(&k).expect("path");
    let mode = |p: &std::path::Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600, "{}", path.display());
    let mut parent = path.parent();
    while let Some(p) = parent {
        if !p.starts_with(&root) {
            break;
        }
        assert_eq!(mode(p), 0o700, "{}", p.display());
        parent = p.parent();
    }
}

#[test]
fn a_torn_only_file_loads_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    let k = key("p", "s");
    let path = store.path_of(&k).expect("path");
    fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    fs::write(&path, br#"{"uuid":"1""#).expect("write");
    assert_eq!(block_on(store.load(&k)).expect("load"), None);
    assert_eq!(store.torn_tail(&k).expect("torn tail"), 11);
}

#[test]
fn a_corrupt_or_overlong_line_is_reported_with_its_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    let k = key("p", "s");
    let path = store.path_of(&k).expect("path");
    fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    fs::write(&path, b"{\"uuid\":\"1\"}\n\nnot json\n").expect("write");
    match block_on(store.load(&k)) {
        Err(StoreError::Corrupt { location, .. }) => {
            assert_eq!(location, format!("{}:3", path.display()))
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // The append refuses to add to a file it cannot read either.
    assert!(matches!(
        block_on(store.append(&k, &[entry(r#"{"uuid":"2"}"#)])),
        Err(StoreError::Corrupt { .. })
    ));
    let mut long = vec![b'{'; 1];
    long.extend(std::iter::repeat_n(b' ', threadline_store::MAX_ENTRY_BYTES));
    long.extend_from_slice(b"}\n");
    fs::write(&path, &long).expect("write");
    match block_on(store.load(&k)) {
        Err(StoreError::Corrupt { location, reason }) => {
            assert_eq!(location, format!("{}:1", path.display()));
            assert_eq!(reason, "a line longer than 8388608 bytes");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// Every file the store writes for a hostile key is below the root, and the key lists back.
#[test]
fn hostile_keys_stay_under_the_root() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    let store = JsonlStore::new(&root);
    let hostile = [
        "..",
        "../..",
        "../x",
        "/etc/passwd",
        "a/../../b",
        ".",
        ".jsonl",
        "x.jsonl",
        "%2E%2E",
        "C:\\x",
        ":",
        "~",
        "\u{202e}gnp.exe",
        "中/文",
        " ",
    ];
    for (i, part) in hostile.iter().enumerate() {
        let k = SessionKey::new(*part, *part).expect("valid key");
        let sub = k.with_subpath(*part).expect("valid subkey");
        for target in [&k, &sub] {
            let path = store.path_of(target).expect("path");
            let below = path.strip_prefix(&root).expect("under the root");
            let parts: Vec<Component<'_>> = below.components().collect();
            assert_eq!(
                parts.len(),
                if target.is_main() { 2 } else { 3 },
                "{path:?}"
            );
            assert!(
                parts.iter().all(|c| matches!(c, Component::Normal(_))),
                "{path:?}"
            );
            block_on(store.append(target, &[entry(&format!(r#"{{"i":{i}}}"#))])).expect("append");
        }
        assert_eq!(
            block_on(store.list_sessions(part)).expect("list").len(),
            1,
            "{part:?}"
        );
        assert_eq!(
            block_on(store.list_subkeys(&k)).expect("subkeys"),
            vec![(*part).to_owned()]
        );
    }
    // Nothing was written outside the root.
    let outside: Vec<_> = fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("root")]);
    assert_all_regular_below(&root, 0);
    for part in &hostile {
        block_on(store.delete(&SessionKey::new(*part, *part).expect("key"))).expect("delete");
    }
    assert_eq!(fs::read_dir(&root).expect("list").count(), 0);
}

fn assert_all_regular_below(dir: &Path, depth: usize) {
    assert!(depth < 3, "too deep: {dir:?}");
    for e in fs::read_dir(dir).expect("list") {
        let e = e.expect("entry");
        let kind = e.file_type().expect("type");
        assert!(!kind.is_symlink(), "{:?}", e.path());
        if kind.is_dir() {
            assert_all_regular_below(&e.path(), depth + 1);
        }
    }
}

#[test]
fn a_key_part_too_long_for_a_file_name_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    let fits = key("p", &"a".repeat(249));
    block_on(store.append(&fits, &[entry("{}")])).expect("249 plain bytes fit");
    let long = key("p", &"/".repeat(84));
    match block_on(store.append(&long, &[entry("{}")])) {
        Err(
            e @ StoreError::InvalidKey {
                part: "session", ..
            },
        ) => assert!(e.is_invalid_input()),
        other => panic!("expected InvalidKey, got {other:?}"),
    }
}

/// Four processes append to one file at once (singles, batches, shared ids): exact counts, each
/// process's order, no torn line.
#[test]
fn four_processes_append_to_one_file() {
    const NAME: &str = "four_processes_append_to_one_file";
    if is_child(NAME) {
        let root = std::env::var(CHILD_PATH).expect("path");
        let index: usize = std::env::var(CHILD_INDEX)
            .expect("index")
            .parse()
            .expect("number");
        let store = JsonlStore::new(root);
        child_ready_then_wait();
        for batch in child_batches(index) {
            block_on(store.append(&key("p", "s"), &batch)).expect("append");
        }
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().to_str().expect("utf-8");
    run_children(&format!("jsonl::{NAME}"), root, 4);
    let store = JsonlStore::new(dir.path());
    let k = key("p", "s");
    let loaded = block_on(store.load(&k)).expect("load").expect("entries");
    check_children(&loaded, 4);
    assert_eq!(store.torn_tail(&k).expect("torn tail"), 0);
    let text = fs::read(store.path_of(&k).expect("path")).expect("file");
    assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), loaded.len());
}

/// Another store (another process) deletes and rewrites a session: this store's cached ids
/// follow the new file, even when it grew past the length this store had scanned.
#[test]
fn a_file_replaced_by_another_store_is_scanned_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = JsonlStore::new(dir.path());
    let other = JsonlStore::new(dir.path());
    let k = key("p", "s");
    let one = entry(r#"{"uuid":"1"}"#);
    block_on(first.append(&k, std::slice::from_ref(&one))).expect("append");
    block_on(other.delete(&k)).expect("delete");
    let long = entry(&format!(r#"{{"uuid":"2","pad":"{}"}}"#, "x".repeat(100)));
    block_on(other.append(&k, std::slice::from_ref(&long))).expect("append");
    let again = block_on(first.append(&k, std::slice::from_ref(&one))).expect("append");
    assert_eq!((again.written, again.duplicates), (1, 0));
    assert_eq!(
        block_on(first.load(&k)).expect("load"),
        Some(vec![long, one])
    );
}

/// Four threads of one process append to one key, through clones (one id cache) and
/// separate stores (their own caches): exact count, each thread's order, shared ids once.
#[test]
fn threads_append_to_one_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = JsonlStore::new(dir.path());
    let threads: Vec<_> = (0..4)
        .map(|index| {
            let store = if index % 2 == 0 {
                shared.clone()
            } else {
                JsonlStore::new(dir.path())
            };
            std::thread::spawn(move || {
                for batch in child_batches(index) {
                    block_on(store.append(&key("p", "s"), &batch)).expect("append");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
    let loaded = block_on(shared.load(&key("p", "s")))
        .expect("load")
        .expect("entries");
    check_children(&loaded, 4);
}

#[test]
fn a_file_converted_to_crlf_line_endings_reads_and_appends_as_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    let k = key("p", "s");
    let path = store.path_of(&k).expect("path");
    fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    fs::write(
        &path,
        b"{\"uuid\":\"1\"}\r\n{\"uuid\":\"2\",\"t\":\"a\\r\\nb\"}\r\n",
    )
    .expect("write");
    let first = vec![
        entry(r#"{"uuid":"1"}"#),
        entry(r#"{"uuid":"2","t":"a\r\nb"}"#),
    ];
    assert_eq!(block_on(store.load(&k)).expect("load"), Some(first.clone()));
    // Known by their ids: appended again, they are duplicates; a new entry follows them.
    let appended =
        block_on(store.append(&k, &[first[1].clone(), entry(r#"{"uuid":"3"}"#)])).expect("append");
    assert_eq!((appended.written, appended.duplicates), (1, 1));
    let mut all = first;
    all.push(entry(r#"{"uuid":"3"}"#));
    assert_eq!(block_on(store.load(&k)).expect("load"), Some(all));
}
