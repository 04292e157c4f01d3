//! An agent as the loop of a durable worker's turns (`Worker::with_turn_loop`): a durable
//! turn sends the agent's own first request byte for byte (system prompt and workspace
//! context, built-in tools, the `@` mention and `AGENTS.md` attached, cache markers), its
//! input is one journaled step, and the next turn continues from the session's history.

use threadline::Agent;
use threadline::client::messages_body;
use threadline::query::scripted::{Reply, Response, ScriptedService};
use threadline::restate::{RecordingJournal, TurnRequest, Worker, run_turn};
use threadline::tools::ShellAccess;
use threadline::wire::StopReason;

use super::workspace;

const PROMPT: &str = "What do I have to buy? See @notes.txt.";

#[tokio::test]
async fn a_durable_turn_of_an_agent_sends_the_agents_first_request_byte_for_byte() {
    let dir = workspace();
    std::fs::write(dir.path().join("AGENTS.md"), "Run the tests first.\n").expect("agents");
    let model = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .text("Oat milk.")
                .stop(StopReason::EndTurn),
        ),
        Reply::stream(
            Response::new("msg_2")
                .text("Bread.")
                .stop(StopReason::EndTurn),
        ),
    ]);
    let agent = Agent::builder(model.clone())
        .workspace(dir.path())
        .builtin_tools(ShellAccess::Ask)
        .today("2026-11-30")
        .build()
        .expect("agent");
    let expected = agent.first_request(PROMPT).await.expect("a first request");
    let worker = Worker::new(model.clone(), agent.config().clone()).with_turn_loop(agent);
    assert!(worker.has_tool("Read") && worker.has_tool("Bash"));

    let journal = RecordingJournal::new();
    journal.begin();
    let outcome = run_turn(&journal, &worker, "s1", TurnRequest::new(PROMPT))
        .await
        .expect("the turn");
    journal.complete();
    assert_eq!(outcome.text, "Oat milk.");
    assert_eq!(journal.executed(), ["clock", "input", "model#0"]);

    let sent = model.requests();
    let body = messages_body(&sent[0]).expect("a body");
    assert_eq!(
        String::from_utf8_lossy(&body),
        String::from_utf8_lossy(&messages_body(&expected.request).expect("a body"))
    );
    let text = String::from_utf8_lossy(&body);
    for needle in [
        "NOTE: buy oat milk",
        "Run the tests first.",
        "2026-11-30",
        "cache_control",
    ] {
        assert!(text.contains(needle), "{needle} is not in {text}");
    }

    // The next turn continues from the session's history (the journal's), not the agent's.
    journal.begin();
    let second = run_turn(&journal, &worker, "s1", TurnRequest::new("And then?"))
        .await
        .expect("the second turn");
    journal.complete();
    assert_eq!((second.text.as_str(), second.turns), ("Bread.", 2));
    let sent = model.requests();
    assert_eq!(sent.len(), 2);
    let second_body =
        String::from_utf8_lossy(&messages_body(&sent[1]).expect("a body")).into_owned();
    assert!(second_body.contains("Oat milk.") && second_body.contains("And then?"));
}
