//! Mid-conversation tool changes over loopback HTTP: a tool added (a
//! server connecting) and one removed mid-session. On a model with the feature the `tools`
//! bytes never change, the change is an appended `system` message, and `threadline-cache`'s
//! simulator reads ≥ 95 % of the next request from the cache; the model then calls the added
//! tool and it runs, and its call of the withdrawn one gets an error result. On a model
//! without the feature the same session sends a changed `tools` array and the loop reports
//! the break the simulator finds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use threadline_cache::Simulator;
use threadline_mock::Step;
use threadline_query::offered_tools;
use threadline_query::{
    Event, Query, QueryConfig, Terminal, ToolChangeVia, ToolChanges, ToolSet, ToolsChanged,
    Transition,
};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_validate::{ValidateOptions, validate_with};
use threadline_wire::model::ModelTable;
use threadline_wire::{MessagesRequest, ToolDefinition};

use super::{Markers, assert_prefix_stable, client, drive, mock, text, tool_use};
use crate::common::tool_result_texts;

/// A tool answering `answer`, counting its calls.
struct Fixed {
    name: &'static str,
    answer: &'static str,
    calls: Arc<AtomicUsize>,
}

impl Tool for Fixed {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "A loopback test tool."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = self.answer;
        tool_result(async move { ToolOutput::text(answer) })
    }
}

/// `connect`: the `deployer` server connects (bringing `deploy`) and `weather` is disabled.
struct Connect {
    changes: ToolChanges,
    deploy: Arc<dyn Tool>,
}

impl Tool for Connect {
    fn name(&self) -> &str {
        "connect"
    }
    fn description(&self) -> &str {
        "Connects the deployer server."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        self.changes
            .connect_server("deployer", vec![Arc::clone(&self.deploy)]);
        self.changes.disable("weather");
        tool_result(async { ToolOutput::text("connected") })
    }
}

/// What one session left behind.
struct Session {
    bodies: Vec<Value>,
    requests: Vec<MessagesRequest>,
    headers: Vec<Option<String>>,
    changed: Vec<ToolsChanged>,
    results: Vec<(String, String, bool)>,
    deploys: usize,
    path: Vec<Transition>,
    terminal: Terminal,
}

/// The session: `connect`, then `deploy` and (withdrawn) `weather`, then a final answer.
async fn session(model: &str) -> Session {
    let mock = mock([
        Step::message(vec![tool_use("toolu_1", "connect", json!({}))]),
        Step::message(vec![
            text("Deploying."),
            tool_use("toolu_2", "deploy", json!({})),
            tool_use("toolu_3", "weather", json!({})),
        ]),
        Step::text("Deployed."),
    ])
    .await;
    let changes = ToolChanges::new();
    let deploys = Arc::new(AtomicUsize::new(0));
    let deploy: Arc<dyn Tool> = Arc::new(Fixed {
        name: "deploy",
        answer: "deployed",
        calls: Arc::clone(&deploys),
    });
    let weather = Fixed {
        name: "weather",
        answer: "20°C",
        calls: Arc::new(AtomicUsize::new(0)),
    };
    let tools = ToolSet::new().with(weather).with(Connect {
        changes: changes.clone(),
        deploy,
    });
    // A long system prompt: the cached prefix is what a real agent's is, most of the request.
    let system = "You deploy services carefully and report what you did. ".repeat(800);
    let config = QueryConfig::new(model, 1024).with_system(system);
    let query = Query::new(client(&mock, 0), config)
        .with_tools(tools)
        .with_cache_planner(Markers::default())
        .with_tool_changes(changes);
    let out = drive(query, |_| {}).await;
    let recorded = mock.requests();
    let statuses: Vec<Option<u16>> = recorded.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(200); 3], "no unscripted 400");
    let bodies: Vec<Value> = recorded
        .iter()
        .map(|r| r.body.clone().expect("a JSON body"))
        .collect();
    let headers: Vec<Option<String>> = recorded
        .iter()
        .map(|r| r.headers.get("anthropic-beta").cloned())
        .collect();
    let requests: Vec<MessagesRequest> = bodies
        .iter()
        .map(|b| serde_json::from_value(b.clone()).expect("a request"))
        .collect();
    // Every request the mock received passes `validate`, with the header it came with.
    let row = ModelTable::builtin().resolve(model);
    assert!(row.is_known());
    for (request, header) in requests.iter().zip(&headers) {
        let options = ValidateOptions::default().with_beta_header(header.as_deref().unwrap_or(""));
        let violations = validate_with(request, row.model(), &options);
        assert!(violations.is_empty(), "invalid request: {violations:?}");
    }
    let changed = out
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolsChanged(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    Session {
        bodies,
        requests,
        headers,
        changed,
        results: tool_result_texts(&out.state.messages),
        deploys: deploys.load(Ordering::SeqCst),
        path: out.path().to_vec(),
        terminal: out.terminal,
    }
}

fn tool_json(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let mut tool = tool.clone();
            if let Some(map) = tool.as_object_mut() {
                map.remove("cache_control");
            }
            tool.to_string()
        })
        .collect()
}

fn expected_results() -> Vec<(String, String, bool)> {
    vec![
        ("toolu_1".to_owned(), "connected".to_owned(), false),
        ("toolu_2".to_owned(), "deployed".to_owned(), false),
        (
            "toolu_3".to_owned(),
            "Error: no such tool available: weather".to_owned(),
            true,
        ),
    ]
}

/// The simulator over the requests the mock received, one second apart.
fn simulate(model: &str, requests: &[MessagesRequest]) -> Vec<threadline_cache::Step> {
    let row = ModelTable::builtin().resolve(model).model();
    let mut sim = Simulator::new(row);
    requests
        .iter()
        .enumerate()
        .map(|(i, r)| sim.step(i as u64 * 1000, r))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_added_and_one_removed_mid_session_keep_the_cached_prefix() {
    let model = "claude-opus-4-8";
    let s = session(model).await;
    assert_eq!(s.path, [Transition::NextTurn, Transition::NextTurn]);
    assert_eq!(s.terminal, Terminal::Completed);
    // The change went out once, as a system message.
    assert_eq!(s.changed.len(), 1);
    assert_eq!(s.changed[0].added, ["deploy"]);
    assert_eq!(s.changed[0].removed, ["weather"]);
    assert_eq!(s.changed[0].via, ToolChangeVia::SystemMessage);
    assert_eq!(s.changed[0].cache_break(), None);
    // `tools`: the first request's bytes, then `deploy` appended, deferred; never edited.
    let (first, second, third) = (
        tool_json(&s.bodies[0]),
        tool_json(&s.bodies[1]),
        tool_json(&s.bodies[2]),
    );
    assert_eq!(second[..first.len()], first[..]);
    assert_eq!(second.len(), first.len() + 1);
    assert_eq!(s.bodies[1]["tools"][2]["defer_loading"], json!(true));
    assert_eq!(third, second);
    // The system message: after the tool result, repeated at its place.
    let announcement = json!({"role": "system", "content": [
        {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "weather"}},
        {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "deploy"}}
    ]});
    let roles = |body: &Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["role"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(roles(&s.bodies[1]), ["user", "assistant", "user", "system"]);
    assert_eq!(
        roles(&s.bodies[2]),
        ["user", "assistant", "user", "system", "assistant", "user"]
    );
    let mut sent = s.bodies[2]["messages"][3].clone();
    super::strip_markers(&mut sent);
    assert_eq!(sent, announcement);
    // The header the client derived from the body.
    assert_eq!(s.headers[0], None);
    assert_eq!(
        s.headers[1].as_deref(),
        Some("mid-conversation-tool-changes-2026-07-01")
    );
    // Everything up to each request's last marker is byte-identical in the next one.
    assert_prefix_stable(&s.bodies, &[]);
    // What the model is offered: the fold over the last request.
    let last = &s.requests[2];
    let now = offered_tools(last.tools.as_deref().unwrap_or(&[]), &last.messages);
    assert_eq!(now.into_iter().collect::<Vec<_>>(), ["connect", "deploy"]);
    // The added tool ran; the withdrawn one was answered with an error, not dropped.
    assert_eq!(s.deploys, 1);
    assert_eq!(s.results, expected_results());
    // The simulator: the request carrying the change reads its prefix from the cache.
    let steps = simulate(model, &s.requests);
    let share = steps[1].usage.read_share();
    println!(
        "opus-4-8 cache-read share after the change: {share:.4} ({:?})",
        steps[1].usage
    );
    assert!(share >= 0.95, "read share {share}");
    assert_eq!(steps[1].cache_break, None);
    assert_eq!(steps[2].cache_break, None);
    assert!(steps[2].usage.read_share() >= 0.95);
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_feature_the_tools_array_changes_and_the_break_is_reported() {
    let model = "claude-sonnet-4-6";
    let s = session(model).await;
    assert_eq!(s.path, [Transition::NextTurn, Transition::NextTurn]);
    assert_eq!(s.terminal, Terminal::Completed);
    assert!(
        s.headers.iter().all(Option::is_none),
        "no beta: {:?}",
        s.headers
    );
    let names = |r: &MessagesRequest| -> Vec<String> {
        r.tools
            .iter()
            .flatten()
            .map(ToolDefinition::name)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(names(&s.requests[0]), ["connect", "weather"]);
    assert_eq!(names(&s.requests[1]), ["connect", "deploy"]);
    assert_eq!(names(&s.requests[2]), ["connect", "deploy"]);
    assert!(
        s.bodies
            .iter()
            .all(|b| !b.to_string().contains("\"system\","))
    );
    // The loop names the break the simulator finds, in its words.
    assert_eq!(s.changed.len(), 1);
    let reported = s.changed[0].cache_break();
    assert_eq!(
        reported.as_deref(),
        Some("tools.1: tools changed (`deploy`)")
    );
    let steps = simulate(model, &s.requests);
    let found = steps[1]
        .cache_break
        .as_ref()
        .expect("the simulator finds a break");
    assert_eq!(Some(found.to_string()), reported);
    let share = steps[1].usage.read_share();
    println!("sonnet-4-6 cache-read share after the change: {share:.4}");
    assert!(share < 0.05, "read share {share}");
    // The prefix holds everywhere but across the change.
    assert_prefix_stable(&s.bodies, &[1]);
    assert_eq!(s.deploys, 1);
    assert_eq!(s.results, expected_results());
}
