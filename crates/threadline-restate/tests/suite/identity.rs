//! Request identity through a real Restate server: a server signing with an Ed25519 private key
//! (`worker.invoker.request-identity-private-key-pem-file`) drives a worker given its public
//! key; a worker given another key, or a server that does not sign, is refused at discovery
//! (the worker answers 401) and nothing of the worker runs. And `serve` refuses a non-loopback
//! listener to a worker without a key.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use threadline_query::scripted::{Reply, Response, ScriptedService};
use threadline_query::{QueryConfig, Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_restate::{IdentityKey, ServeError, Worker};
use threadline_testkit::restate::{Options, RestateServer, SigningKey};
use threadline_wire::StopReason;
use tokio::sync::oneshot;

/// A fresh key pair and the worker's view of its public key.
fn key_pair() -> (SigningKey, IdentityKey) {
    let signing = SigningKey::generate().unwrap_or_else(|e| panic!("{e}"));
    let public = IdentityKey::new(signing.public_key()).expect("a well-formed key");
    (signing, public)
}

/// A server with the suite's timeouts, signing its requests with `key` when given one.
async fn server_signing(key: Option<SigningKey>) -> RestateServer {
    RestateServer::start_with(Options {
        inactivity_timeout: Duration::from_secs(5),
        abort_timeout: Duration::from_secs(5),
        signing_key: key,
        ..Options::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A tool that counts its runs (a side effect an intruder must not cause).
struct Touch(Arc<AtomicUsize>);

impl Tool for Touch {
    fn name(&self) -> &str {
        "touch"
    }
    fn description(&self) -> &str {
        "counts its runs"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        let runs = Arc::clone(&self.0);
        tool_result(async move {
            runs.fetch_add(1, Ordering::SeqCst);
            ToolOutput::text("touched")
        })
    }
}

/// A worker verifying `key`, whose model asks for `touch` once and then answers "done".
struct Probe {
    model: ScriptedService,
    runs: Arc<AtomicUsize>,
    worker: Worker,
}

fn probe(key: &IdentityKey) -> Probe {
    let model = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .tool_use("toolu_1", "touch", json!({}))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new("msg_2")
                .text("done")
                .stop(StopReason::EndTurn),
        ),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let worker = Worker::new(model.clone(), QueryConfig::new("claude-sonnet-4-5", 1024))
        .with_tool(Touch(Arc::clone(&runs)))
        .with_identity_key(key.clone());
    Probe {
        model,
        runs,
        worker,
    }
}

/// `serve` on `addr` in a task; stopped when the sender is dropped.
async fn serve_on(
    addr: SocketAddr,
    worker: Worker,
) -> (
    String,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), ServeError>>,
) {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .expect("bind a port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(threadline_restate::serve(listener, worker, async move {
        let _ = stopped.await;
    }));
    (url, stop, task)
}

fn loopback() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 0).into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signing_server_drives_the_worker_with_its_key_and_no_worker_with_another() {
    let (signing, key) = key_pair();
    let server = server_signing(Some(signing)).await;
    // The server derives the same public key from the PEM (it logs it at startup).
    let log = std::fs::read_to_string(server.log_path()).expect("the server's log");
    assert!(log.contains(key.as_str()), "{}", server.log_tail());

    let ours = probe(&key);
    let (url, _stop, _task) = serve_on(loopback(), ours.worker.clone()).await;
    server
        .register_deployment(&url)
        .await
        .unwrap_or_else(|e| panic!("register the worker with the server's key: {e}"));
    let (status, body) = server
        .ingress_post("/Session/s1/turn", br#"{"prompt": "touch it"}"#)
        .await
        .unwrap_or_else(|e| panic!("turn: {e}"));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let outcome: Value = serde_json::from_slice(&body).expect("the outcome");
    assert_eq!(outcome["text"], "done", "{outcome}");
    assert_eq!(ours.runs.load(Ordering::SeqCst), 1);
    assert_eq!(ours.model.requests().len(), 2);

    // A worker that trusts another server: this one's signature does not verify.
    let (_, other_key) = key_pair();
    let theirs = probe(&other_key);
    let (url, _stop, _task) = serve_on(loopback(), theirs.worker.clone()).await;
    let refused = server
        .register_deployment(&url)
        .await
        .expect_err("a worker with another key refuses the server");
    assert!(refused.to_string().contains("401"), "{refused}");
    assert_eq!(theirs.runs.load(Ordering::SeqCst), 0);
    assert!(theirs.model.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_a_key_refuses_a_server_that_does_not_sign() {
    let (_, key) = key_pair();
    let server = server_signing(None).await;
    let worker = probe(&key);
    let (url, _stop, _task) = serve_on(loopback(), worker.worker.clone()).await;
    let refused = server
        .register_deployment(&url)
        .await
        .expect_err("the worker refuses an unsigned server");
    assert!(refused.to_string().contains("401"), "{refused}");
    let deployments = server
        .sql("SELECT id FROM sys_deployment")
        .await
        .unwrap_or_else(|e| panic!("sql: {e}"));
    assert!(deployments.is_empty(), "{deployments:?}");
    let (status, _) = server
        .ingress_post("/Session/s1/turn", br#"{"prompt": "touch it"}"#)
        .await
        .unwrap_or_else(|e| panic!("turn: {e}"));
    assert_eq!(status, 404, "no Session service behind the server");
    assert_eq!(worker.runs.load(Ordering::SeqCst), 0);
    assert!(worker.model.requests().is_empty());
}

#[tokio::test]
async fn serve_refuses_a_non_loopback_listener_to_a_worker_without_a_key() {
    let unspecified: SocketAddr = (Ipv4Addr::UNSPECIFIED, 0).into();
    let (_, key) = key_pair();
    let keyless = Worker::new(
        ScriptedService::new([]),
        QueryConfig::new("claude-sonnet-4-5", 1024),
    );
    let (_, _stop, task) = serve_on(unspecified, keyless.clone()).await;
    let refused = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("serve returns at once instead of serving")
        .expect("the serving task");
    assert!(
        matches!(refused, Err(ServeError::Unverified { address }) if !address.ip().is_loopback()),
        "{refused:?}"
    );

    // On loopback, or with a key, it serves (until stopped).
    for (addr, worker) in [
        (loopback(), keyless.clone()),
        (unspecified, keyless.with_identity_key(key)),
    ] {
        let (_, stop, task) = serve_on(addr, worker).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!task.is_finished(), "{addr} stopped serving");
        drop(stop);
        let served = task.await.expect("the serving task");
        assert!(served.is_ok(), "{served:?}");
    }
}
