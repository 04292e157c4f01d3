//! `threadline worker` and who may drive it: without `--identity-key` it refuses a
//! non-loopback `--listen` (exit 2, one line); a malformed key is exit 2; with the key of a real
//! Restate server that signs its requests it registers with that server (even listening on
//! 0.0.0.0), and a worker with another key is refused at discovery.

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use threadline_testkit::restate::{Options, RestateServer, SigningKey};

use crate::common::{self, code, stderr};

/// The worker's model: nothing listens there (no test here gets as far as a model call).
const NO_MODEL: &str = "http://127.0.0.1:9";

/// Runs `threadline worker ARGS`; a worker still running after 20 s is killed and the test
/// fails (a worker that serves instead of refusing).
fn worker(args: &[&str]) -> Output {
    let child = common::command()
        .arg("worker")
        .args(args)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    exited(child, Duration::from_secs(20), &format!("worker {args:?}"))
}

/// Waits for `child` at most `limit`; kills it and fails when it is still running.
fn exited(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "{what}: still running after {limit:?} (it served)\nstdout: {}\nstderr: {}",
                common::stdout(&output),
                stderr(&output)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn a_worker_without_an_identity_key_refuses_a_non_loopback_address() {
    for listen in ["0.0.0.0:0", "[::]:0", "192.0.2.1:9080"] {
        let out = worker(&["--listen", listen, "--base-url", NO_MODEL]);
        assert_eq!(code(&out), 2, "{listen}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "threadline: worker: --listen {}: not a loopback address, and without --identity-key anyone who reaches the worker drives it; give the Restate server's public key (--identity-key publickeyv1_...) or listen on 127.0.0.1\n",
                listen.parse::<std::net::SocketAddr>().expect("an address")
            )
        );
        assert!(out.stdout.is_empty(), "{listen}: it never listened");
    }
}

#[test]
fn a_step_timeout_that_would_wrap_in_milliseconds_is_refused() {
    // 18446744073709552 s is 2^64 ms and a little: advertised in milliseconds, it would wrap
    // to a limit of a few hundred milliseconds that cuts every step.
    for flag in ["--inactivity-timeout", "--abort-timeout"] {
        for value in ["18446744073709552", "0"] {
            let out = worker(&[
                "--listen",
                "127.0.0.1:0",
                flag,
                value,
                "--base-url",
                NO_MODEL,
            ]);
            let err = stderr(&out);
            assert_eq!(code(&out), 2, "{flag} {value}: {err}");
            assert!(err.contains(flag), "{flag} {value}: {err}");
        }
    }
}

#[test]
fn a_malformed_identity_key_is_one_line_and_exit_2() {
    for key in [
        "publickeyv1_nope",
        "ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp",
    ] {
        let out = worker(&[
            "--listen",
            "127.0.0.1:0",
            "--identity-key",
            key,
            "--base-url",
            NO_MODEL,
        ]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{key}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "threadline: worker: --identity-key {key}: not a Restate request identity key"
            )),
            "{err}"
        );
    }
}

#[test]
fn a_worker_with_the_signing_servers_key_registers_and_one_with_another_key_is_refused() {
    let signing = SigningKey::generate().unwrap_or_else(|e| panic!("{e}"));
    let other = SigningKey::generate().unwrap_or_else(|e| panic!("{e}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let server = runtime
        .block_on(RestateServer::start_with(Options {
            signing_key: Some(signing.clone()),
            ..Options::default()
        }))
        .unwrap_or_else(|e| panic!("{e}"));
    let admin = server.admin_url();

    // The right key: a worker on every interface registers (and serves until stopped).
    let mut ours = common::command()
        .args(["worker", "--listen", "0.0.0.0:0", "--identity-key"])
        .arg(signing.public_key())
        .args(["--base-url", NO_MODEL, "--register", &admin])
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the worker starts");
    let start = Instant::now();
    let registered = loop {
        let rows = runtime
            .block_on(server.sql("SELECT id FROM sys_deployment"))
            .unwrap_or_else(|e| panic!("sql: {e}"));
        if !rows.is_empty() {
            break rows;
        }
        if let Some(status) = ours.try_wait().expect("try_wait") {
            let output = ours.wait_with_output().expect("output");
            panic!("the worker exited ({status}): {}", stderr(&output));
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no deployment after 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(registered.len(), 1);
    let _ = ours.kill();
    let _ = ours.wait();

    // Another key: the server's signature does not verify, the worker answers 401 and its
    // registration fails.
    let out = worker(&[
        "--listen",
        "127.0.0.1:0",
        "--identity-key",
        other.public_key(),
        "--base-url",
        NO_MODEL,
        "--register",
        &admin,
    ]);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("cannot register") && err.contains("401"),
        "{err}"
    );
    let rows = runtime
        .block_on(server.sql("SELECT id FROM sys_deployment"))
        .unwrap_or_else(|e| panic!("sql: {e}"));
    assert_eq!(rows, registered, "no second deployment");
}
