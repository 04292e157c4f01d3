//! `threadline normalize` and `inspect` on the transcripts threadline's subagents write
//! (`<session>/subagents/agent-<id>.jsonl`, every line marked `isSidechain` / `agentId`): an
//! agent with the `Task` tool runs against the mock, then the binary reads the subagent's
//! file as it reads any transcript.

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline::Agent;
use threadline::client::{ApiKey, Auth, Client, ClientConfig};
use threadline::mock::{Block, MockServer, Route, Scenario, Step};
use threadline::query::{Event, SubagentConfig, Terminal};
use threadline::wire::MessagesRequest;
use threadline::wire::model::ModelTable;

use crate::common::{code, stderr, stdout, threadline};

fn text(text: &str) -> Step {
    Step::message(vec![Block::Text { text: text.into() }])
}

#[test]
fn normalize_and_inspect_read_a_subagent_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let events: Vec<Event> = runtime.block_on(async {
        let scenario = Scenario::new([
            Step::message(vec![Block::ToolUse {
                id: Some("toolu_task".into()),
                name: "Task".into(),
                input: json!({"description": "Count", "prompt": "[route-S] count the files"}),
            }]),
            text("There are three."),
        ])
        .with_route(Route::new("[route-S]", [text("three files")]));
        let mock = MockServer::start(scenario).await.expect("mock");
        let auth = Auth::ApiKey(ApiKey::new("sk-ant-test").expect("key"));
        let client = Client::new(ClientConfig::new(mock.base_url(), auth)).expect("client");
        let mut agent = Agent::builder(client)
            .today("2026-03-08")
            .transcript(dir.path().join("session.jsonl"))
            .subagents(SubagentConfig::default())
            .build()
            .expect("agent");
        agent.run("How many files?").collect().await
    });
    let Some(Event::Finished(finished)) = events.last() else {
        panic!("the last event is Finished")
    };
    assert_eq!(finished.terminal, Terminal::Completed);
    let subagents = dir.path().join("session").join("subagents");
    let file = std::fs::read_dir(&subagents)
        .expect("subagents dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a subagent transcript");
    let path = file.to_str().expect("UTF-8 path");

    let out = threadline(&["normalize", path, "--next", "Thanks."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("threadline transcript, 2 messages -> 3 request messages"),
        "{}",
        stderr(&out)
    );
    let request: MessagesRequest = serde_json::from_str(&stdout(&out)).expect("a request");
    let roles: Vec<Value> = request
        .messages
        .iter()
        .map(|m| serde_json::to_value(&m.content).expect("content"))
        .collect();
    assert_eq!(
        roles,
        [
            json!([{"type": "text", "text": "[route-S] count the files"}]),
            json!([{"type": "text", "text": "three files"}]),
            json!([{"type": "text", "text": "Thanks."}]),
        ]
    );
    let model = ModelTable::builtin().resolve(&request.model).model();
    assert!(threadline_validate::validate(&request, model).is_empty());

    let out = threadline(&["inspect", path, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(report.is_object(), "{report}");
}
