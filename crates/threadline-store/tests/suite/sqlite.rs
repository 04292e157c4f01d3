//! SqliteStore: WAL, reopening, and four processes appending to one database.

use threadline_store::{SessionStore, SqliteStore};

use crate::common::{
    CHILD_INDEX, CHILD_PATH, block_on, check_children, child_batches, child_ready_then_wait, entry,
    is_child, key, run_children,
};

#[test]
fn a_reopened_database_has_the_same_data_and_ids_in_wal_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.db");
    let k = key("p", "s");
    let sub = k.with_subpath("subagents/a").expect("subkey");
    let batch = [
        entry(r#"{"uuid":"1"}"#),
        entry(r#"{ "uuid":"2", "n": 1.0e10 }"#),
        entry("{}"),
    ];
    {
        let store = SqliteStore::open(&path).expect("open");
        block_on(store.append(&k, &batch)).expect("append");
        block_on(store.append(&sub, &batch[..1])).expect("append");
    }
    assert!(dir.path().join("s.db-wal").exists() || dir.path().join("s.db").exists());
    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(
        block_on(store.load(&k)).expect("load"),
        Some(batch.to_vec())
    );
    assert_eq!(
        block_on(store.load(&sub)).expect("load"),
        Some(batch[..1].to_vec())
    );
    let again = block_on(store.append(&k, &batch)).expect("append");
    assert_eq!((again.written, again.duplicates), (1, 2));
    assert_eq!(
        block_on(store.list_subkeys(&k)).expect("subkeys"),
        vec!["subagents/a"]
    );
    // A clone shares the connection.
    let clone = store.clone();
    drop(store);
    assert_eq!(
        block_on(clone.load(&sub)).expect("load"),
        Some(batch[..1].to_vec())
    );
}

#[test]
fn a_path_that_cannot_be_a_database_is_a_backend_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("junk.db"), vec![b'x'; 4096]).expect("write");
    let err = SqliteStore::open(dir.path().join("junk.db")).expect_err("not a database");
    assert!(err.is_transient(), "{err}");
    assert!(err.to_string().starts_with("sqlite failed: "), "{err}");
}

/// Four processes append to one database at once: exact counts, each process's order.
#[test]
fn four_processes_append_to_one_database() {
    const NAME: &str = "four_processes_append_to_one_database";
    if is_child(NAME) {
        let path = std::env::var(CHILD_PATH).expect("path");
        let index: usize = std::env::var(CHILD_INDEX)
            .expect("index")
            .parse()
            .expect("number");
        let store = SqliteStore::open(path).expect("open");
        child_ready_then_wait();
        for batch in child_batches(index) {
            block_on(store.append(&key("p", "s"), &batch)).expect("append");
        }
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.db");
    // Created first, so the children do not race to create the schema.
    drop(SqliteStore::open(&path).expect("open"));
    let path_text = path.to_str().expect("utf-8");
    run_children(&format!("sqlite::{NAME}"), path_text, 4);
    let store = SqliteStore::open(&path).expect("open");
    let loaded = block_on(store.load(&key("p", "s")))
        .expect("load")
        .expect("entries");
    check_children(&loaded, 4);
}

#[cfg(unix)]
#[test]
fn the_database_and_its_wal_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("private.db");
    let store = SqliteStore::open(&path).expect("open");
    block_on(store.append(&key("p", "s"), &[entry(r#"{"uuid":"1"}"#)])).expect("append");
    for file in ["private.db", "private.db-wal", "private.db-shm"] {
        let file = dir.path().join(file);
        if let Ok(meta) = std::fs::metadata(&file) {
            assert_eq!(
                meta.permissions().mode() & 0o777,
                0o600,
                "{}",
                file.display()
            );
        }
    }
    assert!(path.exists());
}
