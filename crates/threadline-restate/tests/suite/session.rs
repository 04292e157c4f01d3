//! The `Session` object through a real Restate server: a two-turn session with tool calls,
//! inspection with `show`, a permission question answered through an awakeable, and a
//! worker killed in the middle of a non-idempotent tool (two endpoints behind one failover
//! address) whose session completes on the other without re-running a journaled step.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Value, json};
use threadline_query::recovery::INTERRUPTED;
use threadline_query::{
    Permission, QueryConfig, Tool, ToolContext, ToolOutput, ToolStream, tool_result,
};
use threadline_restate::{PermissionMode, Worker};
use threadline_testkit::failover::FailoverProxy;
use threadline_testkit::restate::RestateServer;
use threadline_wire::service::{EventStream, EventStreamFuture, ServiceError};
use threadline_wire::{MessagesRequest, StreamEvent};

use crate::common::{LocalEndpoint, eventually, server};

/// `(worker, request bytes)` for every model call.
type Requests = Arc<Mutex<Vec<(&'static str, Vec<u8>)>>>;

/// A model answering from the request alone (a fresh prompt: a `write` and a `read` tool
/// use; tool results: a text answer), recording each request and which worker sent it.
#[derive(Clone)]
struct Model {
    worker: &'static str,
    /// How long the answer to tool results takes to stream (a slow model call).
    slow_answer: Duration,
    requests: Requests,
}

fn events(message: Value) -> Vec<Result<StreamEvent, ServiceError>> {
    let mut head = message.clone();
    head["content"] = json!([]);
    head["stop_reason"] = Value::Null;
    let mut values = vec![json!({"type": "message_start", "message": head})];
    for (index, block) in message["content"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        values.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
        values.push(json!({"type": "content_block_stop", "index": index}));
    }
    values.push(
        json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]},
                       "usage": message["usage"]}),
    );
    values.push(json!({"type": "message_stop"}));
    values
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap_or_else(|e| panic!("an event: {e}")))
        .map(Ok)
        .collect()
}

fn answer(request: &Value) -> Value {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let n = messages.len();
    let results = messages.last().is_some_and(|m| {
        m["content"]
            .as_array()
            .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"))
    });
    if results {
        json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "m",
               "content": [{"type": "text", "text": format!("done after {n} messages")}],
               "stop_reason": "end_turn", "usage": {"input_tokens": n, "output_tokens": 5}})
    } else {
        json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "m",
               "content": [
                   {"type": "tool_use", "id": format!("toolu_{n}_w"), "name": "write", "input": {}},
                   {"type": "tool_use", "id": format!("toolu_{n}_r"), "name": "read", "input": {}}],
               "stop_reason": "tool_use", "usage": {"input_tokens": n, "output_tokens": 9}})
    }
}

impl tower_service::Service<MessagesRequest> for Model {
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: MessagesRequest) -> EventStreamFuture {
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if let Ok(mut requests) = self.requests.lock() {
            requests.push((self.worker, bytes));
        }
        let answer = answer(&value);
        let delay = if answer["stop_reason"] == "end_turn" {
            self.slow_answer
        } else {
            Duration::ZERO
        };
        let events = events(answer);
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            let stream: EventStream = Box::pin(futures::stream::iter(events));
            Ok(stream)
        })
    }
}

/// `(worker, tool_use_id, "start" | "done")` for every run of a tool.
type Runs = Arc<Mutex<Vec<(&'static str, String, &'static str)>>>;

struct Recorded {
    name: &'static str,
    worker: &'static str,
    idempotent: bool,
    ask: bool,
    delay: Duration,
    runs: Runs,
}

impl Tool for Recorded {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "records its runs"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_idempotent(&self, _input: &Value) -> bool {
        self.idempotent
    }
    fn check_permission(&self, _input: &Value) -> Permission {
        if self.ask {
            Permission::Ask {
                prompt: "may I?".into(),
            }
        } else {
            Permission::Allow
        }
    }
    fn call(&self, _input: Value, ctx: ToolContext) -> ToolStream {
        let runs = Arc::clone(&self.runs);
        let (worker, name, delay) = (self.worker, self.name, self.delay);
        tool_result(async move {
            let id = ctx.tool_use_id;
            if let Ok(mut r) = runs.lock() {
                r.push((worker, id.clone(), "start"));
            }
            tokio::time::sleep(delay).await;
            if let Ok(mut r) = runs.lock() {
                r.push((worker, id, "done"));
            }
            ToolOutput::text(format!("{name} ok"))
        })
    }
}

struct Shared {
    requests: Requests,
    runs: Runs,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            requests: Arc::default(),
            runs: Arc::default(),
        }
    }

    fn worker(&self, worker: &'static str, slow_write: Duration, ask: bool) -> Worker {
        self.worker_with(worker, slow_write, Duration::ZERO, ask)
    }

    fn worker_with(
        &self,
        worker: &'static str,
        slow_write: Duration,
        slow_answer: Duration,
        ask: bool,
    ) -> Worker {
        let model = Model {
            worker,
            slow_answer,
            requests: Arc::clone(&self.requests),
        };
        let tool = |name, idempotent, delay| Recorded {
            name,
            worker,
            idempotent,
            ask: ask && name == "write",
            delay,
            runs: Arc::clone(&self.runs),
        };
        let permission = if ask {
            PermissionMode::Ask
        } else {
            PermissionMode::Deny
        };
        Worker::new(model, QueryConfig::new("m", 256))
            .with_tool(tool("write", false, slow_write))
            .with_tool(tool("read", true, Duration::ZERO))
            .with_permission(permission)
            .with_timeouts(Duration::from_secs(20), Duration::from_secs(20))
    }

    fn requests(&self) -> Vec<(&'static str, Vec<u8>)> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn runs(&self) -> Vec<(&'static str, String, &'static str)> {
        self.runs.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

async fn post(server: &RestateServer, path: &str, body: Value) -> Value {
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let (status, answer) = server
        .ingress_post(path, &bytes)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(
        status,
        200,
        "{path}: {}\n{}",
        String::from_utf8_lossy(&answer),
        server.log_tail()
    );
    serde_json::from_slice(&answer).unwrap_or_else(|e| panic!("{path}: {e}"))
}

async fn send(server: &RestateServer, path: &str, body: Value) -> String {
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let (status, answer) = server
        .ingress_post(&format!("{path}/send"), &bytes)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(status, 202, "{}", String::from_utf8_lossy(&answer));
    let sent: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
    sent["invocationId"].as_str().unwrap_or_default().to_owned()
}

async fn output(server: &RestateServer, invocation: &str) -> Value {
    let path = format!("/restate/invocation/{invocation}/output");
    let body = eventually("the turn's output", Duration::from_secs(60), || {
        let path = path.clone();
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
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("output: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_turn_session_with_tools_runs_through_the_server_and_can_be_shown() {
    let server = server().await;
    let shared = Shared::new();
    let endpoint = LocalEndpoint::serve(
        shared
            .worker("A", Duration::ZERO, false)
            .endpoint()
            .expect("the worker's endpoint"),
    );
    server
        .register_deployment(&endpoint.url())
        .await
        .unwrap_or_else(|e| panic!("register: {e}"));

    let first = post(&server, "/Session/s1/turn", json!({"prompt": "first"})).await;
    assert_eq!(
        first,
        json!({"terminal": {"terminal": "completed"}, "turns": 1,
               "text": "done after 3 messages", "messages": 7})
    );
    let second = post(
        &server,
        "/Session/s1/turn",
        json!({"prompt": "second", "turn_id": "t2"}),
    )
    .await;
    assert_eq!(second["turns"], 2);
    assert_eq!(second["text"], "done after 7 messages");
    assert_eq!(second["turn_id"], "t2");
    // The same turn id again: the outcome, nothing run.
    let again = post(
        &server,
        "/Session/s1/turn",
        json!({"prompt": "second", "turn_id": "t2"}),
    )
    .await;
    assert_eq!(again, second);
    assert_eq!(shared.requests().len(), 4);
    let runs: Vec<(String, &str)> = shared
        .runs()
        .into_iter()
        .map(|(_, id, what)| (id, what))
        .collect();
    assert_eq!(
        runs,
        [
            ("toolu_1_w".to_owned(), "start"),
            ("toolu_1_w".to_owned(), "done"),
            ("toolu_1_r".to_owned(), "start"),
            ("toolu_1_r".to_owned(), "done"),
            ("toolu_5_w".to_owned(), "start"),
            ("toolu_5_w".to_owned(), "done"),
            ("toolu_5_r".to_owned(), "start"),
            ("toolu_5_r".to_owned(), "done"),
        ]
    );

    let view = post(&server, "/Session/s1/show", json!({"since": 7})).await;
    assert_eq!(view["status"], "idle");
    assert_eq!(view["turns"], 2);
    assert_eq!(view["message_count"], 14);
    assert_eq!(view["since"], 7);
    let types: Vec<&str> = view["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        types,
        [
            "user",
            "assistant",
            "assistant",
            "assistant",
            "user",
            "user",
            "assistant"
        ]
    );
    let steps: Vec<&str> = view["steps"]
        .as_array()
        .map(|s| s.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        steps,
        [
            "clock",
            "model#0",
            "started:toolu_5_w",
            "tool:toolu_5_w",
            "tool:toolu_5_r",
            "model#1"
        ]
    );
    // Another session is another object.
    let other = post(&server, "/Session/s2/show", json!({})).await;
    assert_eq!(
        other,
        json!({"status": "idle", "turns": 0, "message_count": 0, "since": 0,
               "messages": [], "steps": []})
    );
    // The history as the admin SQL sees it: one key per message.
    let rows = server
        .sql("SELECT key FROM state WHERE service_name = 'Session' AND service_key = 's1' AND key LIKE 'm/%'")
        .await
        .unwrap_or_else(|e| panic!("sql: {e}"));
    assert_eq!(rows.len(), 14);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_waits_for_its_awakeable_and_show_sees_it() {
    let server = server().await;
    let shared = Shared::new();
    let endpoint = LocalEndpoint::serve(
        shared
            .worker("A", Duration::ZERO, true)
            .endpoint()
            .expect("the worker's endpoint"),
    );
    server
        .register_deployment(&endpoint.url())
        .await
        .unwrap_or_else(|e| panic!("register: {e}"));
    let invocation = send(&server, "/Session/q1/turn", json!({"prompt": "first"})).await;
    let ask = eventually("the question", Duration::from_secs(30), || async {
        let view = post(&server, "/Session/q1/show", json!({})).await;
        (view["status"] == "waiting_for_permission").then(|| view["ask"].clone())
    })
    .await;
    assert_eq!(ask["tool"], "write");
    assert_eq!(ask["tool_use_id"], "toolu_1_w");
    assert_eq!(ask["prompt"], "may I?");
    let id = ask["awakeable_id"].as_str().unwrap_or_default().to_owned();
    assert!(!id.is_empty(), "{ask}");
    assert!(shared.runs().is_empty());
    let (status, body) = server
        .ingress_post(
            &format!("/restate/awakeables/{id}/resolve"),
            br#"{"allow": false, "reason": "not now"}"#,
        )
        .await
        .unwrap_or_else(|e| panic!("resolve: {e}"));
    assert!(
        status == 200 || status == 202,
        "{status} {}",
        String::from_utf8_lossy(&body)
    );
    let outcome = output(&server, &invocation).await;
    assert_eq!(outcome["text"], "done after 3 messages");
    let view = post(&server, "/Session/q1/show", json!({})).await;
    assert_eq!(view["status"], "idle");
    assert!(view.get("ask").is_none(), "{view}");
    assert!(view["messages"].to_string().contains("not now"));
    let runs: Vec<String> = shared.runs().into_iter().map(|(_, id, _)| id).collect();
    assert_eq!(runs, ["toolu_1_r", "toolu_1_r"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_tool_completes_on_the_other_without_rerunning_journaled_steps() {
    let server = server().await;
    let shared = Shared::new();
    let mut a = LocalEndpoint::serve(
        shared
            .worker("A", Duration::from_secs(3), false)
            .endpoint()
            .expect("the worker's endpoint"),
    );
    let b = LocalEndpoint::serve(
        shared
            .worker("B", Duration::from_secs(3), false)
            .endpoint()
            .expect("the worker's endpoint"),
    );
    let proxy = FailoverProxy::start(vec![a.addr(), b.addr()])
        .await
        .unwrap_or_else(|e| panic!("proxy: {e}"));
    server
        .register_deployment(&proxy.url())
        .await
        .unwrap_or_else(|e| panic!("register: {e}"));

    let invocation = send(&server, "/Session/f1/turn", json!({"prompt": "first"})).await;
    eventually("the slow write on A", Duration::from_secs(30), || async {
        shared
            .runs()
            .contains(&("A", "toolu_1_w".to_owned(), "start"))
            .then_some(())
    })
    .await;
    a.kill();
    let outcome = output(&server, &invocation).await;
    assert_eq!(outcome["terminal"], json!({"terminal": "completed"}));
    assert_eq!(outcome["text"], "done after 3 messages");

    // The write started on A and was never run again; the read (idempotent, never started)
    // ran on B.
    let runs = shared.runs();
    assert_eq!(
        runs,
        [
            ("A", "toolu_1_w".to_owned(), "start"),
            ("B", "toolu_1_r".to_owned(), "start"),
            ("B", "toolu_1_r".to_owned(), "done"),
        ]
    );
    // model#0 ran on A only (journaled); B sent only model#1, whose history says the write
    // was interrupted.
    let requests = shared.requests();
    let by: BTreeMap<&str, usize> = requests.iter().fold(BTreeMap::new(), |mut m, (w, _)| {
        *m.entry(*w).or_default() += 1;
        m
    });
    assert_eq!(by, BTreeMap::from([("A", 1), ("B", 1)]));
    let last = String::from_utf8_lossy(&requests[1].1).into_owned();
    assert!(last.contains(INTERRUPTED), "{last}");
    let view = post(&server, "/Session/f1/show", json!({})).await;
    assert_eq!(view["message_count"], 7);
    let steps: Vec<(&str, bool)> = view["steps"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| Some((s["name"].as_str()?, s["ok"].as_bool()?)))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        steps,
        [
            ("clock", true),
            ("model#0", true),
            ("started:toolu_1_w", true),
            ("tool:toolu_1_w", false),
            ("tool:toolu_1_r", true),
            ("model#1", true)
        ]
    );
    let counts = proxy.connections_per_backend();
    assert!(
        counts.get(&b.addr()).copied().unwrap_or(0) >= 1,
        "{counts:?}"
    );
}

/// Two workers behind one failover address, registered.
async fn pair(
    server: &RestateServer,
    a: Worker,
    b: Worker,
) -> (LocalEndpoint, LocalEndpoint, FailoverProxy) {
    let a = LocalEndpoint::serve(a.endpoint().expect("the worker's endpoint"));
    let b = LocalEndpoint::serve(b.endpoint().expect("the worker's endpoint"));
    let proxy = FailoverProxy::start(vec![a.addr(), b.addr()])
        .await
        .unwrap_or_else(|e| panic!("proxy: {e}"));
    server
        .register_deployment(&proxy.url())
        .await
        .unwrap_or_else(|e| panic!("register: {e}"));
    (a, b, proxy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_model_stream_fails_over_with_the_same_request_bytes() {
    let server = server().await;
    let shared = Shared::new();
    let slow = Duration::from_secs(3);
    let (mut a, _b, _proxy) = pair(
        &server,
        shared.worker_with("A", Duration::ZERO, slow, false),
        shared.worker_with("B", Duration::ZERO, slow, false),
    )
    .await;
    let invocation = send(&server, "/Session/m1/turn", json!({"prompt": "first"})).await;
    eventually("A's second model call", Duration::from_secs(30), || async {
        (shared.requests().len() == 2).then_some(())
    })
    .await;
    a.kill();
    let outcome = output(&server, &invocation).await;
    assert_eq!(outcome["text"], "done after 3 messages");
    let requests = shared.requests();
    let workers: Vec<&str> = requests.iter().map(|(w, _)| *w).collect();
    assert_eq!(workers, ["A", "A", "B"]);
    // The interrupted call is sent again byte for byte (same ids, same timestamps): the
    // prompt cache survives the failover.
    assert_eq!(
        String::from_utf8_lossy(&requests[2].1),
        String::from_utf8_lossy(&requests[1].1)
    );
    let runs: Vec<(&str, String)> = shared
        .runs()
        .into_iter()
        .filter(|(_, _, what)| *what == "done")
        .map(|(w, id, _)| (w, id))
        .collect();
    assert_eq!(
        runs,
        [("A", "toolu_1_w".to_owned()), ("A", "toolu_1_r".to_owned())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_between_steps_fails_over_and_runs_each_step_once() {
    let server = server().await;
    let shared = Shared::new();
    let pause = Duration::from_secs(2);
    let steps: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&steps);
    let (mut a, _b, _proxy) = pair(
        &server,
        shared
            .worker("A", Duration::ZERO, false)
            .with_step_delay(pause)
            .with_step_observer(move |step| {
                if let Ok(mut s) = seen.lock() {
                    s.push(step.name.clone());
                }
            }),
        shared.worker("B", Duration::ZERO, false),
    )
    .await;
    let invocation = send(&server, "/Session/b1/turn", json!({"prompt": "first"})).await;
    // A pauses after each journaled step: kill it in the pause after the first model step.
    eventually(
        "model#0 journaled on A",
        Duration::from_secs(30),
        || async {
            let names = steps.lock().map(|s| s.clone()).unwrap_or_default();
            (names == ["clock", "model#0"]).then_some(())
        },
    )
    .await;
    a.kill();
    let outcome = output(&server, &invocation).await;
    assert_eq!(outcome["text"], "done after 3 messages");
    let workers: Vec<&str> = shared.requests().iter().map(|(w, _)| *w).collect();
    assert_eq!(workers, ["A", "B"]);
    let runs: Vec<(&str, String, &str)> = shared.runs();
    assert_eq!(
        runs,
        [
            ("B", "toolu_1_w".to_owned(), "start"),
            ("B", "toolu_1_w".to_owned(), "done"),
            ("B", "toolu_1_r".to_owned(), "start"),
            ("B", "toolu_1_r".to_owned(), "done"),
        ]
    );
}

/// `PATCH {admin}/invocations/{id}/cancel` (HTTP/1.1 on a plain socket); the status.
async fn cancel(server: &RestateServer, invocation: &str) -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let admin = server.admin_url();
    let host = admin.trim_start_matches("http://").trim_end_matches('/');
    let mut socket = tokio::net::TcpStream::connect(host)
        .await
        .unwrap_or_else(|e| panic!("admin: {e}"));
    let request = format!(
        "PATCH /invocations/{invocation}/cancel HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    socket
        .write_all(request.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("admin: {e}"));
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("admin answered {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_turn_persists_a_valid_history_and_the_session_goes_on() {
    let server = server().await;
    let shared = Shared::new();
    let endpoint = LocalEndpoint::serve(
        shared
            .worker("A", Duration::ZERO, true)
            .endpoint()
            .expect("the worker's endpoint"),
    );
    server
        .register_deployment(&endpoint.url())
        .await
        .unwrap_or_else(|e| panic!("register: {e}"));
    let invocation = send(&server, "/Session/c1/turn", json!({"prompt": "first"})).await;
    eventually("the question", Duration::from_secs(30), || async {
        let view = post(&server, "/Session/c1/show", json!({})).await;
        (view["status"] == "waiting_for_permission").then_some(())
    })
    .await;
    assert_eq!(cancel(&server, &invocation).await, 202);
    let outcome = output(&server, &invocation).await;
    assert_eq!(outcome["terminal"], json!({"terminal": "aborted_tools"}));
    let view = post(&server, "/Session/c1/show", json!({})).await;
    assert_eq!(view["status"], "idle");
    let history = view["messages"].to_string();
    assert_eq!(history.matches(INTERRUPTED).count(), 2, "{history}");
    assert!(shared.runs().is_empty());
    // The next turn starts from the valid history: the tool results and the new prompt
    // are one user message, which the model answers.
    let next = send(&server, "/Session/c1/turn", json!({"prompt": "again"})).await;
    let outcome = output(&server, &next).await;
    assert_eq!(outcome["terminal"], json!({"terminal": "completed"}));
    assert_eq!(outcome["turns"], 2);
    assert_eq!(outcome["text"], "done after 3 messages");
    assert!(shared.runs().is_empty());
}
