//! The conformance suite on every backend.

use threadline_store::conformance::{CONTRACTS, run_all};
use threadline_store::{JsonlStore, MemoryStore, SessionStore, SqliteStore};

use crate::common::block_on;

fn passes(store: &dyn SessionStore, namespace: &str) {
    match block_on(run_all(store, namespace)) {
        Ok(report) => assert_eq!(report.passed, CONTRACTS),
        Err(failures) => panic!("{failures}"),
    }
}

#[test]
fn memory_store_passes() {
    passes(&MemoryStore::new(), "memory");
}

#[test]
fn jsonl_store_passes() {
    let dir = tempfile::tempdir().expect("temp dir");
    passes(&JsonlStore::new(dir.path()), "jsonl");
}

#[test]
fn jsonl_store_with_fsync_passes() {
    let dir = tempfile::tempdir().expect("temp dir");
    passes(
        &JsonlStore::new(dir.path().join("nested/root")).sync(true),
        "jsonl-sync",
    );
}

#[test]
fn sqlite_file_store_passes() {
    let dir = tempfile::tempdir().expect("temp dir");
    passes(
        &SqliteStore::open(dir.path().join("sessions.db")).expect("open"),
        "sqlite",
    );
}

#[test]
fn sqlite_in_memory_store_passes() {
    passes(&SqliteStore::open_in_memory().expect("open"), "sqlite-mem");
}

/// One shared backend, two runs with fresh namespaces: the second is not disturbed by the
/// first's data.
#[test]
fn a_shared_backend_runs_the_suite_twice_with_fresh_namespaces() {
    let store = MemoryStore::new();
    passes(&store, "run-1");
    passes(&store, "run-2");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlStore::new(dir.path());
    passes(&store, "run-1");
    passes(&store, "run-2");
}

/// A broken store fails, naming the contract and what came back.
#[test]
fn a_store_that_forgets_fails_with_messages() {
    struct Forgetful(MemoryStore);
    impl SessionStore for Forgetful {
        fn append<'a>(
            &'a self,
            key: &'a threadline_store::SessionKey,
            entries: &'a [threadline_store::Entry],
        ) -> futures::future::BoxFuture<
            'a,
            Result<threadline_store::Appended, threadline_store::StoreError>,
        > {
            // Keeps only the first entry of each call.
            self.0.append(key, &entries[..entries.len().min(1)])
        }
        fn load<'a>(
            &'a self,
            key: &'a threadline_store::SessionKey,
        ) -> futures::future::BoxFuture<
            'a,
            Result<Option<Vec<threadline_store::Entry>>, threadline_store::StoreError>,
        > {
            self.0.load(key)
        }
        fn list_sessions<'a>(
            &'a self,
            project: &'a str,
        ) -> futures::future::BoxFuture<
            'a,
            Result<Vec<threadline_store::SessionInfo>, threadline_store::StoreError>,
        > {
            self.0.list_sessions(project)
        }
        fn delete<'a>(
            &'a self,
            key: &'a threadline_store::SessionKey,
        ) -> futures::future::BoxFuture<'a, Result<(), threadline_store::StoreError>> {
            self.0.delete(key)
        }
        fn list_subkeys<'a>(
            &'a self,
            key: &'a threadline_store::SessionKey,
        ) -> futures::future::BoxFuture<'a, Result<Vec<String>, threadline_store::StoreError>>
        {
            self.0.list_subkeys(key)
        }
    }
    let failures = block_on(run_all(&Forgetful(MemoryStore::new()), "broken"))
        .expect_err("a store dropping entries fails");
    let first = &failures.0[0];
    assert_eq!(first.contract, "c01_append_then_load_keeps_order");
    assert_eq!(
        first.message,
        "append of 3 new entries: expected Appended { written: 3, duplicates: 0 }, \
         got Appended { written: 1, duplicates: 0 }"
    );
    let text = failures.to_string();
    assert!(
        text.starts_with(&format!(
            "{} store contract(s) failed\n- c01",
            failures.0.len()
        )),
        "{text}"
    );
    // Contracts of one entry per call still pass.
    assert!(
        !failures
            .0
            .iter()
            .any(|f| f.contract == "c02_unknown_key_loads_none"),
        "{text}"
    );
}
