//! One agent, one request: the autocompact summary request is the main request plus the
//! summary instruction — the same model, system prompt, tools (deferrals and the `Task` tool
//! included), `tool_choice`, thinking, `context_management` and betas, with the main request's
//! messages as its prefix — so it reads the main request's cached prefix. And
//! `Agent::first_request` is the request a run sends first.

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline::Agent;
use threadline::cache::{Estimate, Prefix, TokenCounter};
use threadline::compact::summarizer::SUMMARY_PROMPT;
use threadline::query::tool_search::ToolSearchConfig;
use threadline::query::{QueryConfig, SubagentConfig, Terminal};
use threadline::wire::MessagesRequest;
use threadline::wire::request::{ThinkingConfig, ThinkingEnabled};
use threadline_mock::{MockServer, RecordedRequest, Scenario, Step};

use threadline_testkit::request_json::message_blocks;

use super::{body, client, finished, workspace};

fn parsed(request: &RecordedRequest) -> MessagesRequest {
    serde_json::from_value(body(request).clone()).expect("a request")
}

/// `summary` is `main` plus the summary instruction: every field the cache and the betas
/// depend on is `main`'s, byte for byte; `main`'s messages are its prefix; the cache entry of
/// `main`'s last marker is a prefix of it (so it is read); only `max_tokens` and the appended
/// instruction differ.
pub(crate) fn assert_summary_extends(main: &RecordedRequest, summary: &RecordedRequest) {
    let (m, s) = (body(main), body(summary));
    for field in [
        "model",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "context_management",
        "stream",
    ] {
        assert_eq!(m.get(field), s.get(field), "`{field}` differs");
    }
    assert_eq!(
        main.headers.get("anthropic-beta"),
        summary.headers.get("anthropic-beta"),
        "the betas differ"
    );
    let (main_blocks, summary_blocks) = (message_blocks(m), message_blocks(s));
    assert!(
        summary_blocks.len() > main_blocks.len()
            && summary_blocks[..main_blocks.len()] == main_blocks[..],
        "the main request's messages are not a prefix of the summary request's"
    );
    let last = summary_blocks.last().expect("a block");
    assert_eq!(last.0, "user");
    assert_eq!(last.1["text"], SUMMARY_PROMPT);
    // The cache: the entry `main` wrote at its last marker is a prefix of the summary request.
    let counter = &Estimate as &dyn TokenCounter;
    let main_prefix = Prefix::of(&parsed(main), counter, Default::default());
    let summary_prefix = Prefix::of(&parsed(summary), counter, Default::default());
    let marked = main_prefix
        .pieces
        .iter()
        .rposition(|p| p.marker.is_some())
        .expect("the main request has a marker");
    assert_eq!(
        summary_prefix.pieces.get(marked).map(|p| p.prefix_hash),
        Some(main_prefix.pieces[marked].prefix_hash),
        "the summary request does not extend the main request's cached prefix"
    );
}

/// A few thousand tokens of text.
fn big_text() -> String {
    (0..300)
        .map(|i| format!("PASTED-LINE-{i:04} the quick brown fox\n"))
        .collect()
}

/// Thinking, tool search deferring every tool, the `Task` tool, the caller's own context
/// edit, cache markers and an autocompact threshold a second prompt passes.
fn agent(mock: &MockServer, dir: &std::path::Path) -> Agent<threadline::client::Client> {
    let mut config = QueryConfig::new("claude-sonnet-4-5", 4_096);
    config.thinking = Some(ThinkingConfig::Enabled(ThinkingEnabled::new(1_024)));
    let edits = serde_json::from_value(json!({"edits": [{"type": "clear_tool_uses_20250919"}]}))
        .expect("edits");
    Agent::builder(client(mock))
        .query_config(config)
        .system_prompt("You read files.")
        .workspace(dir)
        .tool_search(ToolSearchConfig::always())
        .tool(threadline::tools::ReadFile::new(std::sync::Arc::new(
            threadline::attach::Workspace::new(dir).expect("workspace"),
        )))
        .subagents(SubagentConfig::default())
        .context_management(edits)
        .compaction(super::small_compaction(None))
        .autocompact_at(1_500)
        .today("2026-03-08")
        .build()
        .expect("agent")
}

#[tokio::test(flavor = "current_thread")]
async fn the_autocompact_summary_request_is_the_main_request_plus_the_instruction() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        Step::text("Noted."),
        Step::text("<summary>A long text was pasted.</summary>"),
        Step::text("Done."),
    ]))
    .await
    .expect("mock");
    let mut agent = agent(&mock, dir.path());
    let first = format!("Keep this in mind:\n{}", big_text());
    let events: Vec<_> = agent.run(first).collect().await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    let events: Vec<_> = agent.run("Now say done.").collect().await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    let warnings: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            threadline::query::Event::Warning(w) => Some(w.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        super::compactions(&events).len(),
        1,
        "one autocompact: {warnings:?}"
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.status == Some(200)));
    let (main, summary) = (&requests[0], &requests[1]);
    // What the settings put on the main request is there, on both.
    let tools = body(main)["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "Task"), "the Task tool");
    assert!(
        tools.iter().any(|t| t["defer_loading"] == true),
        "deferred tools"
    );
    assert_eq!(body(main)["thinking"]["type"], "enabled");
    assert!(body(main)["context_management"].is_object());
    assert_summary_extends(main, summary);
    // The summary request holds the second prompt, as the main request would have.
    assert!(body(summary).to_string().contains("Now say done."));
    assert!(!body(&requests[2]).to_string().contains("PASTED-LINE-0000"));
}

#[tokio::test(flavor = "current_thread")]
async fn the_first_request_is_the_one_a_run_sends_and_the_session_is_untouched() {
    let dir = workspace();
    std::fs::write(dir.path().join("AGENTS.md"), "Be careful.\n").expect("agents");
    let mock = MockServer::start(Scenario::new([Step::text("Noted.")]))
        .await
        .expect("mock");
    let mut agent = agent(&mock, dir.path());
    let prompt = "Look at @notes.txt and @../outside.txt please.";
    let first = agent.first_request(prompt).await.expect("a request");
    assert!(agent.state().messages.is_empty(), "nothing appended");
    assert!(mock.requests().is_empty(), "nothing sent");
    assert_eq!(first.notes.len(), 1, "{:?}", first.notes);
    assert!(
        first.notes[0].contains("@../outside.txt: refused"),
        "{:?}",
        first.notes
    );

    let events: Vec<_> = agent.run(prompt).collect().await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    // The body the client sent is the request, serialized as the client serializes it.
    let sent = body(&requests[0]);
    let printed: Value =
        serde_json::from_slice(&threadline::client::messages_body(&first.request).expect("body"))
            .expect("json");
    assert_eq!(&printed, sent);
    assert!(sent.to_string().contains("buy oat milk"));
    assert!(sent.to_string().contains("Be careful."));
}
