//! The loop over loopback HTTP (`threadline-client` against the `threadline-mock` model,
//! which validates every request and answers 400 to an invalid one) with real MCP tools.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use threadline_client::{ApiKey, Auth, Client, ClientConfig, RetryConfig};
use threadline_mcp::McpServer;
use threadline_message::Message;
use threadline_mock::{Block, MockServer, Scenario, Step};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};

use threadline_query::{
    AllowAll, Event, Query, QueryConfig, State, Terminal, ToolChanges, ToolSet,
};

use crate::common::{connect, everything_stdio, options, python_server};

async fn mock(steps: impl IntoIterator<Item = Step>) -> MockServer {
    MockServer::start(Scenario::new(steps))
        .await
        .expect("the mock starts")
}

fn client(mock: &MockServer) -> Client {
    let auth = Auth::ApiKey(ApiKey::new("sk-ant-loopback").expect("a key"));
    let retry = RetryConfig::default()
        .with_max_retries(0)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(5));
    Client::new(ClientConfig::new(mock.base_url(), auth).with_retry(retry)).expect("a client")
}

fn tool_use(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse {
        id: Some(id.to_owned()),
        name: name.to_owned(),
        input,
    }
}

/// Runs `query` to its end; the terminal and every recorded body (all answered 200: each
/// passed the mock's `validate`).
async fn drive(query: Query<Client>, mock: &MockServer, requests: usize) -> (Terminal, Vec<Value>) {
    let run = async {
        let mut stream = query.run(State::default(), vec![Message::user_text("Go.")]);
        let mut last = None;
        while let Some(event) = stream.next().await {
            last = Some(event);
        }
        last
    };
    let last = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the run ends in time");
    let Some(Event::Finished(finished)) = last else {
        panic!("the last event is Finished")
    };
    let recorded = mock.requests();
    let statuses: Vec<Option<u16>> = recorded.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![Some(200); requests],
        "every request valid, none unscripted"
    );
    let bodies = recorded
        .iter()
        .map(|r| r.body.clone().expect("a JSON body"))
        .collect();
    (finished.terminal, bodies)
}

/// The `tool_result` blocks of the last user message of `body`.
fn tool_results(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().expect("messages");
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    user["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_a_server_everything_tool_and_its_result_reaches_the_next_request() {
    let server = connect("everything", &everything_stdio()).await;
    let mock = mock([
        Step::message(vec![tool_use(
            "toolu_01",
            "mcp__everything__echo",
            json!({"message": "from the model"}),
        )]),
        Step::text("Done."),
    ])
    .await;
    let mut tools = ToolSet::new();
    for tool in server.tools() {
        tools.insert(tool);
    }
    let config = QueryConfig::new("claude-sonnet-4-5", 1024).with_system("MCP loopback.");
    let query = Query::new(client(&mock), config).with_tools(tools);
    let (terminal, bodies) = drive(query, &mock, 2).await;
    assert!(matches!(terminal, Terminal::Completed), "{terminal:?}");
    let names: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    assert_eq!(
        tool_results(&bodies[1]),
        [
            json!({"type": "tool_result", "tool_use_id": "toolu_01", "content": "Echo: from the model"})
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_mcp_tools_are_deferred_behind_tool_search() {
    let server = connect("py", &python_server(300)).await;
    assert_eq!(server.tool_infos().len(), 303);
    let mock = mock([Step::text("Nothing to do.")]).await;
    let mut tools = ToolSet::new();
    for tool in server.tools() {
        tools.insert(tool);
    }
    let config = QueryConfig::new("claude-sonnet-4-5", 1024).with_system("MCP loopback.");
    let query = Query::new(client(&mock), config).with_tools(tools);
    let (terminal, bodies) = drive(query, &mock, 1).await;
    assert!(matches!(terminal, Terminal::Completed), "{terminal:?}");
    let declared = bodies[0]["tools"].as_array().expect("tools");
    let mcp: Vec<&Value> = declared
        .iter()
        .filter(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("mcp__py__"))
        })
        .collect();
    assert_eq!(mcp.len(), 303);
    assert!(mcp.iter().all(|t| t["defer_loading"] == json!(true)));
    let search: Vec<&Value> = declared
        .iter()
        .filter(|t| {
            t["type"]
                .as_str()
                .is_some_and(|k| k.starts_with("tool_search_tool"))
        })
        .collect();
    assert_eq!(search.len(), 1, "{search:?}");
    assert_eq!(search[0]["name"], "tool_search_tool_bm25");
}

/// `connect`: connects the Python server mid-session and offers its tools.
struct Connect {
    changes: ToolChanges,
    /// The connected server, kept alive for the session (and for `kill`).
    server: Arc<Mutex<Option<McpServer>>>,
}

impl Tool for Connect {
    fn name(&self) -> &str {
        "connect"
    }
    fn description(&self) -> &str {
        "Connects the calculator MCP server."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        let changes = self.changes.clone();
        let slot = Arc::clone(&self.server);
        tool_result(async move {
            match McpServer::connect("calc", &python_server(0), options()).await {
                Ok(server) => {
                    server.connect_to(&changes);
                    *slot.lock().expect("lock") = Some(server);
                    ToolOutput::text("connected")
                }
                Err(error) => ToolOutput::error(error.to_string()),
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_connecting_mid_session_reaches_the_model_as_tool_additions() {
    let mock = mock([
        Step::message(vec![tool_use("toolu_1", "connect", json!({}))]),
        Step::message(vec![tool_use(
            "toolu_2",
            "mcp__calc__add",
            json!({"a": 2, "b": 3}),
        )]),
        Step::text("2 + 3 = 5."),
    ])
    .await;
    let changes = ToolChanges::new();
    let tools = ToolSet::new().with(Connect {
        changes: changes.clone(),
        server: Arc::default(),
    });
    let config = QueryConfig::new("claude-opus-4-8", 1024).with_system("MCP loopback.");
    let query = Query::new(client(&mock), config)
        .with_tools(tools)
        .with_tool_changes(changes)
        .with_permission(AllowAll);
    let (terminal, bodies) = drive(query, &mock, 3).await;
    assert!(matches!(terminal, Terminal::Completed), "{terminal:?}");
    let system: Vec<&Value> = bodies[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "system")
        .collect();
    assert_eq!(
        system,
        [&json!({"role": "system", "content": [
            {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "mcp__calc__add"}},
            {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "mcp__calc__shout"}},
            {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "mcp__calc__wait"}}
        ]})]
    );
    let declared: Vec<&str> = bodies[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        declared,
        [
            "connect",
            "mcp__calc__add",
            "mcp__calc__shout",
            "mcp__calc__wait"
        ]
    );
    assert_eq!(
        tool_results(&bodies[2]),
        [json!({"type": "tool_result", "tool_use_id": "toolu_2", "content": "5"})]
    );
}

/// `kill`: SIGKILLs the connected server and waits until its connection is closed.
struct Kill {
    server: Arc<Mutex<Option<McpServer>>>,
    /// When given, `kill` also waits until the server's leaving is queued there (the
    /// connection's poll noticed it), so the next request withdraws its tools.
    changes: Option<ToolChanges>,
}

impl Tool for Kill {
    fn name(&self) -> &str {
        "kill"
    }
    fn description(&self) -> &str {
        "Kills the calculator MCP server."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        let server = self.server.lock().expect("lock").clone();
        let changes = self.changes.clone();
        tool_result(async move {
            let Some(server) = server else {
                return ToolOutput::error("not connected");
            };
            let pid = server.pid().and_then(|p| i32::try_from(p).ok());
            let pid = pid.and_then(rustix::process::Pid::from_raw).expect("a pid");
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            while !server.is_closed() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if let Some(changes) = changes {
                let queued = async {
                    while changes.pending() == 0 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                };
                tokio::time::timeout(Duration::from_secs(30), queued)
                    .await
                    .expect("the leaving is noticed");
            }
            ToolOutput::text("killed")
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_session_has_its_tools_withdrawn_as_tool_removals() {
    let mock = mock([
        Step::message(vec![tool_use("toolu_1", "connect", json!({}))]),
        Step::message(vec![tool_use("toolu_2", "kill", json!({}))]),
        Step::message(vec![tool_use(
            "toolu_3",
            "mcp__calc__add",
            json!({"a": 1, "b": 2}),
        )]),
        Step::text("The calculator is gone."),
    ])
    .await;
    let changes = ToolChanges::new();
    let slot: Arc<Mutex<Option<McpServer>>> = Arc::default();
    let tools = ToolSet::new()
        .with(Connect {
            changes: changes.clone(),
            server: Arc::clone(&slot),
        })
        .with(Kill {
            server: Arc::clone(&slot),
            changes: None,
        });
    let config = QueryConfig::new("claude-opus-4-8", 1024).with_system("MCP loopback.");
    let query = Query::new(client(&mock), config)
        .with_tools(tools)
        .with_tool_changes(changes.clone())
        .with_permission(AllowAll);
    let (terminal, bodies) = drive(query, &mock, 4).await;
    assert!(matches!(terminal, Terminal::Completed), "{terminal:?}");
    // Whether the poll or the failed call noticed first, the last request withdraws all
    // three tools in a system message, and the call of `add` was answered with an error.
    let last = &bodies[3];
    let removals: Vec<&Value> = last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "system")
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_removal")
        .collect();
    let removed: Vec<&str> = removals
        .iter()
        .filter_map(|b| b["tool"]["name"].as_str())
        .collect();
    assert_eq!(
        removed,
        ["mcp__calc__add", "mcp__calc__shout", "mcp__calc__wait"]
    );
    let results = tool_results(last);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tool_use_id"], "toolu_3");
    assert_eq!(results[0]["is_error"], true);
    assert!(
        changes
            .offered()
            .iter()
            .all(|n| !n.starts_with("mcp__calc__"))
    );
    drop(slot);
}

/// A step that thinks, then calls `name`.
fn think_then_call(i: usize, name: &str, input: Value) -> Step {
    Step::message(vec![
        Block::Thinking {
            thinking: format!("Step {i}: call {name}."),
            signature: format!("scenario-{i}"),
        },
        tool_use(&format!("toolu_{i}"), name, input),
    ])
}

/// A real server connects, is SIGKILLed and connects again, on Haiku 5.5: a model that binds
/// thinking to its prefix and does not claim tool changes in place, so each change is a
/// changed `tools`. The mock enforces the binding; every request is accepted because the
/// thinking written before a change is no longer sent, while the thinking after the last
/// change is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_and_reconnected_on_a_binding_model_never_breaks_the_binding() {
    let mock = mock([
        think_then_call(1, "connect", json!({})),
        think_then_call(2, "mcp__calc__add", json!({"a": 1, "b": 2})),
        think_then_call(3, "kill", json!({})),
        think_then_call(4, "connect", json!({})),
        think_then_call(5, "mcp__calc__add", json!({"a": 3, "b": 4})),
        Step::text("1 + 2 = 3 and 3 + 4 = 7."),
    ])
    .await;
    let changes = ToolChanges::new();
    let slot: Arc<Mutex<Option<McpServer>>> = Arc::default();
    let tools = ToolSet::new()
        .with(Connect {
            changes: changes.clone(),
            server: Arc::clone(&slot),
        })
        .with(Kill {
            server: Arc::clone(&slot),
            changes: Some(changes.clone()),
        });
    let config = QueryConfig::new("claude-haiku-5-5", 1024)
        .with_system("MCP loopback.")
        .with_thinking(threadline_wire::ThinkingConfig::adaptive(None));
    let query = Query::new(client(&mock), config)
        .with_tools(tools)
        .with_tool_changes(changes.clone())
        .with_permission(AllowAll);
    let (terminal, bodies) = drive(query, &mock, 6).await;
    assert!(matches!(terminal, Terminal::Completed), "{terminal:?}");
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    // The tools changed three times: connected, withdrawn, connected again.
    assert_eq!(names(&bodies[0]), ["connect", "kill"]);
    assert!(names(&bodies[1]).contains(&"mcp__calc__add".to_owned()));
    assert!(!names(&bodies[3]).contains(&"mcp__calc__add".to_owned()));
    assert!(names(&bodies[4]).contains(&"mcp__calc__add".to_owned()));
    // The last request sends only the thinking written after the last change.
    let thinking: Vec<bool> = bodies[5]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| {
            m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|b| b["type"] == "thinking")
        })
        .collect();
    assert_eq!(thinking, [false, false, false, false, true]);
    drop(slot);
}
