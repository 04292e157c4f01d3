//! The harness, the failover proxy and the SDK wiring together: a tiny Virtual Object served
//! in-process, registered with the real server, called through the ingress; and a failover: two
//! endpoints behind one `FailoverProxy` address, the one executing a slow step is killed, the
//! invocation finishes on the other, and the step journaled before it does not run again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use restate_sdk::prelude::*;
use threadline_testkit::failover::FailoverProxy;

use crate::common::{LocalEndpoint, eventually, server};

/// How many times each journaled step ran on one endpoint.
#[derive(Default)]
struct Counters {
    first: AtomicUsize,
    slow_started: AtomicUsize,
    slow_done: AtomicUsize,
}

struct Probe {
    tag: &'static str,
    counters: Arc<Counters>,
}

#[restate_sdk::object(name = "Probe", inactivity_timeout = "30s", abort_timeout = "30s")]
impl Probe {
    #[handler]
    async fn put(&self, ctx: ObjectContext<'_>, value: String) -> HandlerResult<()> {
        ctx.set("value", value);
        Ok(())
    }

    #[handler]
    async fn get(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Option<String>> {
        Ok(ctx.get::<String>("value").await?)
    }

    /// A journaled quick step, then a slow one; returns which endpoint ran each.
    #[handler]
    async fn work(&self, ctx: ObjectContext<'_>) -> HandlerResult<String> {
        let tag = self.tag;
        let counters = Arc::clone(&self.counters);
        let first = ctx
            .run(|| async move {
                counters.first.fetch_add(1, Ordering::SeqCst);
                Ok(tag.to_owned())
            })
            .name("first")
            .await?;
        let counters = Arc::clone(&self.counters);
        let slow = ctx
            .run(|| async move {
                counters.slow_started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1500)).await;
                counters.slow_done.fetch_add(1, Ordering::SeqCst);
                Ok(tag.to_owned())
            })
            .name("slow")
            .await?;
        Ok(format!("{first}+{slow}"))
    }
}

fn probe_endpoint(tag: &'static str, counters: &Arc<Counters>) -> LocalEndpoint {
    LocalEndpoint::serve(
        Endpoint::builder()
            .bind(Probe {
                tag,
                counters: Arc::clone(counters),
            })
            .build(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_virtual_object_keeps_state_across_calls() {
    let server = server().await;
    let counters = Arc::new(Counters::default());
    let endpoint = probe_endpoint("A", &counters);
    let id = server
        .register_deployment(&endpoint.url())
        .await
        .expect("register");
    assert!(id.starts_with("dp_"), "{id}");

    let (status, body) = server
        .ingress_post("/Probe/k1/put", br#""hello""#)
        .await
        .expect("put");
    assert_eq!((status, &body[..]), (200, &b""[..]));
    let (status, body) = server
        .ingress_post("/Probe/k1/get", b"")
        .await
        .expect("get");
    assert_eq!((status, &body[..]), (200, &br#""hello""#[..]));
    // Another key is another object (`None` is an empty body).
    let (status, body) = server
        .ingress_post("/Probe/k2/get", b"")
        .await
        .expect("get");
    assert_eq!((status, &body[..]), (200, &b""[..]));

    // The state as the admin SQL sees it.
    let rows = server
        .sql("SELECT service_key, key, value_utf8 FROM state WHERE service_name = 'Probe'")
        .await
        .expect("sql");
    assert_eq!(
        rows,
        vec![serde_json::json!({"service_key": "k1", "key": "value", "value_utf8": "\"hello\""})]
    );
    assert_eq!(counters.first.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_endpoint_fails_over_without_rerunning_journaled_steps() {
    let server = server().await;
    let a_counts = Arc::new(Counters::default());
    let b_counts = Arc::new(Counters::default());
    let mut a = probe_endpoint("A", &a_counts);
    let b = probe_endpoint("B", &b_counts);
    let proxy = FailoverProxy::start(vec![a.addr(), b.addr()])
        .await
        .expect("proxy");
    server
        .register_deployment(&proxy.url())
        .await
        .expect("register");

    let (status, body) = server
        .ingress_post("/Probe/f1/work/send", b"")
        .await
        .expect("send");
    assert_eq!(status, 202, "{}", String::from_utf8_lossy(&body));
    let sent: serde_json::Value = serde_json::from_slice(&body).expect("send answer");
    let invocation = sent["invocationId"]
        .as_str()
        .expect("invocation id")
        .to_owned();

    // Kill A in the middle of the slow step.
    eventually("the slow step on A", Duration::from_secs(20), || async {
        (a_counts.slow_started.load(Ordering::SeqCst) == 1).then_some(())
    })
    .await;
    a.kill();

    let output = eventually("the invocation's output", Duration::from_secs(30), || {
        let server = &server;
        let path = format!("/restate/invocation/{invocation}/output");
        async move {
            match server.ingress_get(&path).await {
                Ok((200, body)) => Some(body),
                Ok((470, _)) | Err(_) => None,
                Ok((status, body)) => {
                    panic!("output: HTTP {status}: {}", String::from_utf8_lossy(&body))
                }
            }
        }
    })
    .await;
    // The quick step's result comes from A's journal; the slow step, never acknowledged, ran
    // again on B.
    assert_eq!(&output[..], br#""A+B""#);
    assert_eq!(a_counts.first.load(Ordering::SeqCst), 1);
    assert_eq!(a_counts.slow_done.load(Ordering::SeqCst), 0);
    assert_eq!(b_counts.first.load(Ordering::SeqCst), 0);
    assert_eq!(b_counts.slow_started.load(Ordering::SeqCst), 1);
    assert_eq!(b_counts.slow_done.load(Ordering::SeqCst), 1);
    let counts = proxy.connections_per_backend();
    assert!(
        counts.get(&a.addr()).copied().unwrap_or(0) >= 1,
        "{counts:?}"
    );
    assert!(
        counts.get(&b.addr()).copied().unwrap_or(0) >= 1,
        "{counts:?}"
    );
}
