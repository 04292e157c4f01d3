//! The agent over real HTTP against `threadline-mock`: the model reads two files, the
//! context passes the small autocompact threshold (a summary through the same client, a
//! compaction boundary in the path), and the model answers from the compacted context.

use serde_json::{Value, json};
use threadline_client::{ApiKey, Auth, Client, ClientConfig};
use threadline_message::{CompactTrigger, Message, SystemKind};
use threadline_mock::{MockServer, RecordedRequest, Scenario, Step};
use threadline_query::{Event, Terminal, Transition};
use threadline_wire::MessagesRequest;
use threadline_wire::model::ModelTable;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let big: String = (0..300)
        .map(|i| format!("BIG-FILE-LINE-{i:04} the quick brown fox\n"))
        .collect();
    let medium: String = (0..100)
        .map(|i| format!("medium line {i:03} jumps over the dog\n"))
        .collect();
    std::fs::write(dir.path().join("big.txt"), big).expect("big");
    std::fs::write(dir.path().join("medium.txt"), medium).expect("medium");
    dir
}

fn body(request: &RecordedRequest) -> &Value {
    request.body.as_ref().expect("a JSON body")
}

fn compactions(events: &[Event]) -> Vec<CompactTrigger> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Message(Message::System(s)) => match &s.kind {
                SystemKind::CompactBoundary { trigger, .. } => Some(*trigger),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn two_tool_calls_and_an_autocompact_against_the_mock() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        Step::tool_use("Read", json!({"path": "big.txt"})),
        Step::tool_use("Read", json!({"path": "medium.txt"})),
        Step::text("<summary>Two files were read: big.txt and medium.txt.</summary>"),
        Step::text("Both files are read."),
    ]))
    .await
    .expect("mock");
    let auth = Auth::ApiKey(ApiKey::new("sk-ant-test").expect("key"));
    let client = Client::new(ClientConfig::new(mock.base_url(), auth)).expect("client");
    let compaction = solo_loop::compaction(4_800);
    let prompt = "Read big.txt, then medium.txt.";
    let events = solo_loop::run(client, dir.path(), compaction, prompt)
        .await
        .expect("a usable directory");

    let Some(Event::Finished(finished)) = events.last() else {
        panic!("the last event is Finished: {events:?}");
    };
    assert_eq!(finished.terminal, Terminal::Completed);
    assert_eq!(
        finished.state.path,
        [Transition::NextTurn, Transition::NextTurn]
    );
    // The autocompact ran once, between the second tool result and the last request (it
    // is a step of the turn, not a transition: the boundary is in the history).
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    assert_eq!(finished.state.compaction.compactions, 1);
    let boundary = finished.state.messages.iter().position(
        |m| matches!(m, Message::System(s) if matches!(s.kind, SystemKind::CompactBoundary { .. })),
    );
    // The prompt, then twice a response (its tool use and its stop: two messages) and the
    // tool result.
    assert_eq!(boundary, Some(7));

    let requests = mock.requests();
    let statuses: Vec<Option<u16>> = requests.iter().map(|r| r.status).collect();
    let ok = Some(200);
    assert_eq!(statuses, [ok, ok, ok, ok]);
    // The summary request went through the same client: the main request plus the summary
    // instruction, its `tool_choice` the main request's (it was `none`, which breaks the
    // cached messages).
    let summary_asks: Vec<bool> = requests
        .iter()
        .map(|r| {
            body(r)["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_array())
                .and_then(|b| b.last())
                .is_some_and(|b| b["text"] == threadline_compact::summarizer::SUMMARY_PROMPT)
        })
        .collect();
    assert_eq!(summary_asks, [false, false, true, false]);
    assert!(requests.iter().all(|r| body(r)["tool_choice"].is_null()));
    // threadline-cache's markers on every request, the summary requests included.
    for (i, request) in requests.iter().enumerate() {
        assert!(
            body(request).to_string().contains("\"cache_control\""),
            "request {i}"
        );
    }
    // Every request passed the validator (the mock checks too: it answers 400 otherwise).
    let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
    for (i, request) in requests.iter().enumerate() {
        let request: MessagesRequest =
            serde_json::from_value(body(request).clone()).expect("parses");
        assert_eq!(
            threadline_validate::validate(&request, model),
            [],
            "request {i}"
        );
    }
    // After the autocompact, the big file is gone from what the model sees.
    assert!(
        body(&requests[1])
            .to_string()
            .contains("BIG-FILE-LINE-0000")
    );
    let last = body(&requests[3]).to_string();
    assert!(!last.contains("BIG-FILE-LINE-0000"), "{last}");
    assert!(last.contains("Two files were read"), "{last}");
}
