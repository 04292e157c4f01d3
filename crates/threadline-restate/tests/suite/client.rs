//! `Ingress` and `Admin` against the real server: call, send (with and without an idempotency
//! key), output (pending, done, failed, cancelled, unknown), awakeables resolved and rejected,
//! registration, cancel, kill and SQL; keys with `/`, spaces and `%` stay one object key.

use std::time::Duration;

use restate_sdk::prelude::*;
use threadline_restate::{Admin, ClientError, Ingress, InvocationId, Output};

use crate::common::{LocalEndpoint, eventually, server};

struct Boxed;

#[restate_sdk::object(name = "Box")]
impl Boxed {
    #[handler]
    async fn put(&self, ctx: ObjectContext<'_>, value: String) -> HandlerResult<String> {
        let old = ctx.get::<String>("value").await?.unwrap_or_default();
        ctx.set("value", value);
        Ok(old)
    }

    #[handler]
    async fn get(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Option<String>> {
        Ok(ctx.get::<String>("value").await?)
    }

    #[handler]
    async fn fail(&self, _ctx: ObjectContext<'_>) -> HandlerResult<()> {
        Err(TerminalError::new_with_code(422, "no such thing").into())
    }

    /// Waits for an awakeable whose id it stores in state `awakeable`.
    #[handler]
    async fn wait(&self, ctx: ObjectContext<'_>) -> HandlerResult<String> {
        let (id, answer) = ctx.awakeable::<String>();
        ctx.set("awakeable", id);
        Ok(answer.await?)
    }

    #[handler]
    async fn awakeable(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Option<String>> {
        Ok(ctx.get::<String>("awakeable").await?)
    }
}

async fn output_eventually(ingress: &Ingress, id: &InvocationId) -> Output {
    eventually("an output", Duration::from_secs(20), || async {
        match ingress.output(id).await {
            Ok(Output::Pending) => None,
            Ok(out) => Some(out),
            Err(e) => panic!("output: {e}"),
        }
    })
    .await
}

async fn awakeable_id(ingress: &Ingress, key: &str) -> String {
    eventually("the awakeable id", Duration::from_secs(20), || async {
        let got = ingress
            .call("Box", key, "awakeable", b"")
            .await
            .expect("awakeable");
        if got.is_empty() {
            None
        } else {
            Some(serde_json::from_slice::<String>(&got).expect("a JSON string"))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_and_admin_against_the_server() {
    let server = server().await;
    let endpoint = LocalEndpoint::serve(Endpoint::builder().bind(Boxed).build());
    let admin = Admin::new(&server.admin_url()).expect("admin");
    let ingress = Ingress::new(&format!("{}/", server.ingress_url())).expect("ingress");
    assert_eq!(ingress.url(), server.ingress_url());

    let dp = admin
        .register_deployment(&endpoint.url(), false)
        .await
        .expect("register");
    assert!(dp.starts_with("dp_"), "{dp}");
    let again = admin
        .register_deployment(&endpoint.url(), true)
        .await
        .expect("force");
    assert!(again.starts_with("dp_"), "{again}");

    // call: the handler's serialized output; a hostile key is one key.
    let key = "p/1 %x?";
    let old = ingress
        .call("Box", key, "put", br#""one""#)
        .await
        .expect("put");
    assert_eq!(&old[..], br#""""#);
    let old = ingress
        .call("Box", key, "put", br#""two""#)
        .await
        .expect("put");
    assert_eq!(&old[..], br#""one""#);
    let got = ingress.call("Box", key, "get", b"").await.expect("get");
    assert_eq!(&got[..], br#""two""#);
    let rows = admin
        .sql("SELECT service_key, value_utf8 FROM state WHERE service_name = 'Box' AND key = 'value'")
        .await
        .expect("sql");
    assert_eq!(
        rows,
        vec![serde_json::json!({"service_key": key, "value_utf8": "\"two\""})]
    );

    // send + output; the idempotency key gives the same invocation back.
    let id = ingress
        .send("Box", "k", "put", br#""x""#, Some("idem-1"))
        .await
        .expect("send");
    assert!(id.as_str().starts_with("inv_"), "{id}");
    let same = ingress
        .send("Box", "k", "put", br#""y""#, Some("idem-1"))
        .await
        .expect("send again");
    assert_eq!(same, id);
    assert_eq!(
        output_eventually(&ingress, &id).await,
        Output::Done(bytes::Bytes::from_static(br#""""#))
    );
    let got = ingress.call("Box", "k", "get", b"").await.expect("get");
    assert_eq!(&got[..], br#""x""#, "the second send started nothing");

    // A terminal error.
    let err = ingress
        .call("Box", "k", "fail", b"")
        .await
        .expect_err("fails");
    assert_eq!(err.status(), Some(422));
    assert_eq!(err.to_string(), "POST /Box/k/fail: HTTP 422: no such thing");
    assert!(!err.is_retryable());
    let failed = ingress
        .send("Box", "k", "fail", b"", None)
        .await
        .expect("send");
    let out = output_eventually(&ingress, &failed).await;
    assert_eq!(
        out,
        Output::Failed {
            status: 422,
            message: "no such thing".to_owned()
        }
    );

    // Unknown invocation.
    // Unknown or malformed ids are errors, not outcomes.
    let mut other = failed.as_str().to_owned();
    let last = other.pop().expect("a char");
    other.push(if last == 'a' { 'b' } else { 'a' });
    let unknown = ingress.output(&InvocationId::new(other)).await;
    let unknown = unknown.expect_err("an unknown id");
    assert!(unknown.is_not_found(), "{unknown}");
    let garbage = ingress
        .output(&InvocationId::new("nope/../x"))
        .await
        .expect_err("a malformed id");
    assert_eq!(garbage.status(), Some(400), "{garbage}");

    // Awakeables: resolved, rejected.
    let id = ingress
        .send("Box", "a1", "wait", b"", None)
        .await
        .expect("send");
    assert_eq!(ingress.output(&id).await.expect("output"), Output::Pending);
    let awk = awakeable_id(&ingress, "a1").await;
    ingress
        .resolve_awakeable(&awk, br#""yes""#)
        .await
        .expect("resolve");
    assert_eq!(
        output_eventually(&ingress, &id).await,
        Output::Done(bytes::Bytes::from_static(br#""yes""#))
    );
    let id = ingress
        .send("Box", "a2", "wait", b"", None)
        .await
        .expect("send");
    let awk = awakeable_id(&ingress, "a2").await;
    ingress
        .reject_awakeable(&awk, "no way")
        .await
        .expect("reject");
    assert_eq!(
        output_eventually(&ingress, &id).await,
        Output::Failed {
            status: 500,
            message: "no way".to_owned()
        }
    );
    let bad = ingress
        .resolve_awakeable("sign_nope", b"1")
        .await
        .expect_err("a bad awakeable id");
    assert_eq!(bad.status(), Some(400), "{bad}");

    // Cancel and kill.
    let id = ingress
        .send("Box", "c1", "wait", b"", None)
        .await
        .expect("send");
    awakeable_id(&ingress, "c1").await;
    admin.cancel_invocation(&id).await.expect("cancel");
    assert_eq!(
        output_eventually(&ingress, &id).await,
        Output::Failed {
            status: 409,
            message: "cancelled".to_owned()
        }
    );
    let id = ingress
        .send("Box", "c2", "wait", b"", None)
        .await
        .expect("send");
    awakeable_id(&ingress, "c2").await;
    admin.kill_invocation(&id).await.expect("kill");
    assert_eq!(
        output_eventually(&ingress, &id).await,
        Output::Failed {
            status: 409,
            message: "killed".to_owned()
        }
    );
    let e = admin
        .cancel_invocation(&InvocationId::new("nope"))
        .await
        .expect_err("a malformed id");
    assert_eq!(e.status(), Some(400), "{e}");
    let e = admin.sql("SELEC nonsense").await.expect_err("bad SQL");
    assert_eq!(e.status(), Some(400), "{e}");
    let e = admin
        .register_deployment("http://127.0.0.1:1", false)
        .await
        .expect_err("nothing listens there");
    assert_eq!(e.status(), Some(500), "{e}");
    assert!(e.is_retryable());

    // Nothing listens at the client's own URL: a transport error.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead_url = format!("http://{}", dead.local_addr().expect("addr"));
    drop(dead);
    let e: ClientError = Ingress::new(&dead_url)
        .expect("url")
        .call("Box", "k", "get", b"")
        .await
        .expect_err("refused");
    assert!(e.is_transport() && e.is_retryable(), "{e}");
    let e = Admin::new(&dead_url)
        .expect("url")
        .with_timeout(Duration::from_secs(2))
        .sql("SELECT 1")
        .await
        .expect_err("refused");
    assert!(e.is_transport(), "{e}");
}
