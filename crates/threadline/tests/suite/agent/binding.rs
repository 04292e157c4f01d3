//! A long thinking session on a model that binds thinking to its prefix (`claude-opus-5-5`),
//! over loopback against the mock, compacted locally and on demand: every request is
//! accepted, and after an on-demand compaction every request starts with the block the API
//! returned, byte for byte.

use super::*;
use threadline::CompactionMode;
use threadline_mock::Block;

const MODEL: &str = "claude-opus-5-5";

/// A step that thinks, then reads `path`.
fn think_and_read(i: usize, path: &str) -> Step {
    Step::message(vec![
        Block::Thinking {
            thinking: format!("Step {i}: I should read {path} next."),
            signature: format!("scenario-signature-{i}"),
        },
        Block::ToolUse {
            id: None,
            name: "Read".to_owned(),
            input: json!({"path": path}),
        },
    ])
}

/// A final answer, after thinking.
fn think_and_answer(text: &str) -> Step {
    Step::message(vec![
        Block::Thinking {
            thinking: "Everything is read; time to answer.".to_owned(),
            signature: "scenario-signature-end".to_owned(),
        },
        Block::Text {
            text: text.to_owned(),
        },
    ])
}

fn binding_agent(mock: &MockServer, dir: &Path, compaction: Compaction) -> Agent<Client> {
    let workspace = Arc::new(Workspace::new(dir).expect("workspace"));
    Agent::builder(client(mock))
        .model(MODEL)
        .system_prompt("You read files.")
        .workspace(dir)
        .tool(ReadFile::new(workspace))
        .compaction(compaction)
        .today("2026-03-08")
        .build()
        .expect("agent")
}

/// The one compaction block the session's messages hold.
fn on_demand_block(events: &[Event]) -> Value {
    let blocks: Vec<Value> = events
        .iter()
        .filter_map(|e| match e {
            Event::Message(Message::Assistant(a)) => a.content.iter().find_map(|b| match b {
                threadline::wire::ContentBlock::Compaction(_) => {
                    Some(serde_json::to_value(b).expect("json"))
                }
                _ => None,
            }),
            _ => None,
        })
        .collect();
    assert_eq!(blocks.len(), 1, "one compaction block: {blocks:?}");
    blocks[0].clone()
}

#[tokio::test(flavor = "current_thread")]
async fn a_long_thinking_session_on_a_binding_model_compacts_locally_without_a_refusal() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        think_and_read(0, "big.txt"),
        think_and_read(1, "medium.txt"),
        Step::text("<summary>big.txt and medium.txt were read.</summary>"),
        think_and_read(2, "notes.txt"),
        think_and_read(3, "medium.txt"),
        think_and_answer("All four files are read."),
    ]))
    .await
    .expect("mock");
    let mut agent = binding_agent(&mock, dir.path(), small_compaction(Some(3_900)));
    let events = run(
        &mut agent,
        "Read big.txt, medium.txt, notes.txt, then medium.txt again.",
    )
    .await;
    let requests = mock.requests();
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.status, Some(200), "request {i}: {:?}", request.body);
    }
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    // After the summary, no thinking block written before it is sent again.
    let after = body(&requests[3]).to_string();
    assert!(
        after.contains("big.txt and medium.txt were read"),
        "{after}"
    );
    assert!(
        !after.contains("Step 0:") && !after.contains("Step 1:"),
        "{after}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_long_thinking_session_on_a_binding_model_compacts_on_demand() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        think_and_read(0, "big.txt"),
        think_and_read(1, "medium.txt"),
        Step::text("The user asked to read four files; big.txt and medium.txt are read."),
        think_and_read(2, "notes.txt"),
        think_and_read(3, "medium.txt"),
        think_and_answer("All four files are read."),
    ]))
    .await
    .expect("mock");
    let compaction = small_compaction(Some(3_900)).with_mode(CompactionMode::OnDemand);
    let mut agent = binding_agent(&mock, dir.path(), compaction);
    let events = run(
        &mut agent,
        "Read big.txt, medium.txt, notes.txt, then medium.txt again.",
    )
    .await;
    let requests = mock.requests();
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.status, Some(200), "request {i}: {:?}", request.body);
    }
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    assert_eq!(requests.len(), 6);
    // The third request asks for the summary: the loop's request with `compaction`, the
    // header derived from it.
    let summary = body(&requests[2]);
    assert_eq!(summary["compaction"], json!({"type": "summarize"}));
    // It extends the request before it (the same prefix, cache markers aside).
    let plain = |v: &Value| threadline::wire::cache_control::without_cache_control(v);
    let before = plain(&body(&requests[1])["messages"]);
    let asked = plain(&summary["messages"]);
    let (before, asked) = (
        before.as_array().expect("list"),
        asked.as_array().expect("list"),
    );
    assert_eq!(&asked[..before.len()], &before[..]);
    assert_eq!(
        requests[2]
            .headers
            .get("anthropic-beta")
            .map(String::as_str),
        Some("compact-2026-09-04")
    );
    // Every later request starts with the block, byte for byte, and carries the header.
    let block = on_demand_block(&events);
    assert!(block["signature"].is_string());
    for request in &requests[3..] {
        let first = &body(request)["messages"][0];
        assert_eq!(first["role"], "assistant");
        assert_eq!(first["content"][0], block);
        assert!(
            request
                .headers
                .get("anthropic-beta")
                .is_some_and(|b| b.contains("compact-2026-09-04"))
        );
        let text = body(request).to_string();
        assert!(!text.contains("BIG-FILE-LINE-0000"), "summarized away");
        assert!(
            !text.contains("Step 0:"),
            "no thinking from before the swap"
        );
    }
}

/// Where the API gives no summary (`max_tokens`), the local autocompact runs instead.
#[tokio::test(flavor = "current_thread")]
async fn on_demand_compaction_without_a_summary_falls_back_to_the_local_autocompact() {
    let dir = workspace();
    let mut no_summary = Step::text("");
    if let Step::Message(step) = &mut no_summary {
        step.stop_reason = Some("max_tokens".to_owned());
    }
    let mock = MockServer::start(Scenario::new([
        think_and_read(0, "big.txt"),
        think_and_read(1, "medium.txt"),
        no_summary,
        Step::text("<summary>big.txt and medium.txt were read.</summary>"),
        think_and_answer("Both files are read."),
    ]))
    .await
    .expect("mock");
    let compaction = small_compaction(Some(3_900)).with_mode(CompactionMode::OnDemand);
    let mut agent = binding_agent(&mock, dir.path(), compaction);
    let events = run(&mut agent, "Read big.txt, then medium.txt.").await;
    let requests = mock.requests();
    assert!(requests.iter().all(|r| r.status == Some(200)));
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    assert!(body(&requests[2]).get("compaction").is_some());
    assert!(
        body(&requests[3]).get("compaction").is_none(),
        "the local summary request"
    );
    let after = body(&requests[4]).to_string();
    assert!(
        after.contains("big.txt and medium.txt were read"),
        "{after}"
    );
}
