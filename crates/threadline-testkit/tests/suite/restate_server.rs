//! The Restate harness against the pinned server (feature `restate`; needs
//! `cargo xtask restate-server`): it starts healthy on loopback, answers SQL, reports a failed
//! registration with the server's status, and `kill` stops it and drop removes its base dir.

use std::time::{Duration, Instant};

use threadline_testkit::restate::{HarnessError, Options, RestateServer};

#[tokio::test]
async fn starts_answers_sql_and_cleans_up() {
    let started = Instant::now();
    let mut server = RestateServer::start_with(Options {
        inactivity_timeout: Duration::from_secs(5),
        abort_timeout: Duration::from_secs(5),
        ..Options::default()
    })
    .await
    .expect("start");
    let startup = started.elapsed();
    assert!(startup < Duration::from_secs(30), "{startup:?}");
    eprintln!("restate-server healthy after {startup:?}");

    assert!(server.ingress_url().starts_with("http://127.0.0.1:"));
    assert!(server.admin_url().starts_with("http://127.0.0.1:"));
    assert_ne!(server.ingress_url(), server.admin_url());
    let rows = server.sql("SELECT 1 AS one").await.expect("sql");
    assert_eq!(rows, vec![serde_json::json!({"one": 1})]);
    let rows = server
        .sql("SELECT id FROM sys_deployment")
        .await
        .expect("sql");
    assert_eq!(rows, Vec::<serde_json::Value>::new());

    // Nothing listens there: the admin API refuses the deployment (discovery fails).
    let err = server
        .register_deployment("http://127.0.0.1:1")
        .await
        .expect_err("no endpoint at that uri");
    match &err {
        HarnessError::Status { status, .. } => assert!(*status >= 400, "{err}"),
        other => panic!("expected a status error, got {other}"),
    }

    let log = server.log_path().to_path_buf();
    let base = server.base_dir().to_path_buf();
    assert!(log.starts_with(&base));
    let tail = server.log_tail();
    assert!(tail.contains("\"level\":"), "JSON log lines: {tail}");
    assert!(
        std::fs::read_to_string(&log)
            .expect("log")
            .contains("Starting Restate Server 1.7.12")
    );
    assert!(server.pid().is_some());
    server.kill();
    assert_eq!(server.pid(), None);
    server.kill();
    drop(server);
    assert!(!base.exists(), "base dir removed on drop");
}
