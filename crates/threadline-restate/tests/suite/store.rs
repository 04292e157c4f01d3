//! `RestateStore` on the real server: the whole `threadline_store::conformance` suite, the
//! entry bytes as the server's `state` table holds them, and the request-size guard.

use std::time::Instant;

use restate_sdk::prelude::Endpoint;
use threadline_restate::{Admin, Ingress, MAX_APPEND_REQUEST_BYTES, RestateStore, bind_store};
use threadline_store::{Entry, MAX_ENTRY_BYTES, SessionKey, SessionStore, conformance};

use crate::common::{LocalEndpoint, server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restate_store_passes_the_conformance_suite() {
    let server = server().await;
    let endpoint = LocalEndpoint::serve(bind_store(Endpoint::builder()).build());
    server
        .register_deployment(&endpoint.url())
        .await
        .expect("register");
    let store = RestateStore::new(Ingress::new(&server.ingress_url()).expect("ingress"));

    let started = Instant::now();
    let report = match conformance::run_all(&store, "restate").await {
        Ok(report) => report,
        Err(failures) => panic!("{failures}"),
    };
    eprintln!(
        "RestateStore conformance: {} contracts in {:?}",
        report.passed.len(),
        started.elapsed()
    );
    assert_eq!(report.passed, conformance::CONTRACTS.to_vec());

    // The bytes in Restate's state are the entry's bytes, one state key per entry.
    let key = SessionKey::new("sql-project", "s1").expect("key");
    let line = r#"{ "uuid":"u1" ,"type":"user","n":1.0e10,"s":"\u00e9"}"#;
    let entry = Entry::new(line.as_bytes().to_vec()).expect("entry");
    store.append(&key, &[entry]).await.expect("append");
    let admin = Admin::new(&server.admin_url()).expect("admin");
    let rows = admin
        .sql(
            "SELECT service_key, key, value_utf8 FROM state \
             WHERE service_name = 'SessionLog' AND service_key = 'sql-project/s1' \
             AND key LIKE 'e/%'",
        )
        .await
        .expect("sql");
    assert_eq!(
        rows,
        vec![serde_json::json!({
            "service_key": "sql-project/s1",
            "key": "e/-/00000000000000000000",
            "value_utf8": line,
        })]
    );
}

/// 1000 entries in 10 appends of 100 ids, loaded back in order (pages of 16 reads). A handler
/// awaiting many state reads with one waker each stalled 15 s per append; this bounds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_entries_round_trip_without_stalling() {
    let server = server().await;
    let endpoint = LocalEndpoint::serve(bind_store(Endpoint::builder()).build());
    server
        .register_deployment(&endpoint.url())
        .await
        .expect("register");
    let store = RestateStore::new(Ingress::new(&server.ingress_url()).expect("ingress"));
    let key = SessionKey::new("big", "s").expect("key");
    let started = Instant::now();
    let mut all = Vec::new();
    for batch in 0..10 {
        let entries: Vec<Entry> = (0..100)
            .map(|i| {
                let line = format!(
                    r#"{{"type":"user","uuid":"u{batch}-{i}","pad":"{}"}}"#,
                    "x".repeat(i)
                );
                Entry::new(line.into_bytes()).expect("entry")
            })
            .collect();
        let done = store.append(&key, &entries).await.expect("append");
        assert_eq!((done.written, done.duplicates), (100, 0));
        all.extend(entries);
    }
    let again = store
        .append(&key, &all[450..550])
        .await
        .expect("append again");
    assert_eq!((again.written, again.duplicates), (0, 100));
    let appended = started.elapsed();
    let loaded = store.load(&key).await.expect("load").expect("exists");
    assert_eq!(loaded, all);
    let total = started.elapsed();
    eprintln!(
        "11 appends of 100: {appended:?}; load of 1000: {:?}",
        total - appended
    );
    assert!(total.as_secs() < 60, "stalled: {total:?}");
}

#[tokio::test]
async fn an_append_over_the_request_limit_is_refused_before_sending() {
    // Nothing listens there: the guard must answer first.
    let store = RestateStore::new(Ingress::new("http://127.0.0.1:9").expect("ingress"));
    let key = SessionKey::new("p", "s").expect("key");
    let big = {
        let head = br#"{"type":"big","pad":""#;
        let mut bytes = head.to_vec();
        bytes.resize(MAX_ENTRY_BYTES - 2, b'a');
        bytes.extend_from_slice(br#""}"#);
        Entry::new(bytes).expect("an entry of MAX_ENTRY_BYTES")
    };
    let entries = vec![big; MAX_APPEND_REQUEST_BYTES / MAX_ENTRY_BYTES + 1];
    let err = store.append(&key, &entries).await.expect_err("too large");
    assert!(err.is_invalid_input(), "{err}");
    assert!(
        err.to_string().contains("append fewer entries per call"),
        "{err}"
    );
    // An empty append sends nothing either.
    let done = store.append(&key, &[]).await.expect("no-op");
    assert_eq!((done.written, done.duplicates), (0, 0));
}
