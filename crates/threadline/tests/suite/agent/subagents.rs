//! Subagents over loopback: the `Task` tool's nested loops against the mock, each
//! conversation scripted by a route (a marker in its system prompt or first message). Every
//! request the mock received passed `validate` (with its recorded `anthropic-beta` header),
//! and every transcript, the parent's and each subagent's, reads back and normalizes to a
//! valid request.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline::cache::Simulator;
use threadline::message::Message;
use threadline::message::transcript::read_transcript;
use threadline::normalize::{Options, normalize};
use threadline::query::{AllowAll, CancellationToken, Event, SubagentConfig, Terminal, Transition};
use threadline::query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline::validate::{ValidateOptions, validate_with};
use threadline::wire::model::ModelTable;
use threadline::wire::{Content, ContentBlock, MessagesRequest};
use threadline::{Agent, Compaction};
use threadline_mock::{Block, MockServer, RecordedRequest, Route, Scenario, Step};

use super::client;

/// A tool that waits until `parties` calls are inside it at once (a barrier), or says it
/// waited alone after five seconds: two subagents only both answer `met` if they ran at the
/// same time.
struct Rendezvous(Arc<tokio::sync::Barrier>);

impl Tool for Rendezvous {
    fn name(&self) -> &str {
        "Rendezvous"
    }
    fn description(&self) -> &str {
        "Waits for the other subagent."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        let barrier = Arc::clone(&self.0);
        tool_result(async move {
            match tokio::time::timeout(Duration::from_secs(5), barrier.wait()).await {
                Ok(_) => ToolOutput::text("met"),
                Err(_) => ToolOutput::error("alone"),
            }
        })
    }
}

/// A tool answering `answer`, counting its calls.
struct Counted {
    name: &'static str,
    calls: Arc<AtomicUsize>,
}

impl Tool for Counted {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "A tool."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tool_result(async { ToolOutput::text("ok") })
    }
}

/// A tool that says it started, then waits for the abort.
struct UntilAborted(Arc<tokio::sync::Notify>);

impl Tool for UntilAborted {
    fn name(&self) -> &str {
        "Wait"
    }
    fn description(&self) -> &str {
        "Waits."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, ctx: ToolContext) -> ToolStream {
        let started = Arc::clone(&self.0);
        tool_result(async move {
            started.notify_one();
            ctx.cancel.cancelled().await;
            ToolOutput::error("aborted")
        })
    }
}

fn task(id: &str, description: &str, prompt: &str, kind: Option<&str>) -> Block {
    let mut input = json!({"description": description, "prompt": prompt});
    if let Some(kind) = kind {
        input["subagent_type"] = json!(kind);
    }
    Block::ToolUse {
        id: Some(id.into()),
        name: "Task".into(),
        input,
    }
}

fn call(id: &str, name: &str) -> Block {
    Block::ToolUse {
        id: Some(id.into()),
        name: name.into(),
        input: json!({}),
    }
}

fn text(text: &str) -> Step {
    Step::message(vec![Block::Text { text: text.into() }])
}

fn builder(mock: &MockServer, dir: &Path) -> threadline::AgentBuilder<threadline::client::Client> {
    Agent::builder(client(mock))
        .system_prompt("You delegate.")
        .workspace(dir)
        .compaction(Compaction::default())
        .today("2026-03-08")
        .permission(AllowAll)
        .transcript(dir.join("session.jsonl"))
}

fn finished(events: &[Event]) -> (Terminal, Vec<Transition>, Vec<Message>) {
    match events.last() {
        Some(Event::Finished(f)) => (
            f.terminal.clone(),
            f.state.path.clone(),
            f.state.messages.clone(),
        ),
        other => panic!("the last event is Finished, got {other:?}"),
    }
}

/// Every recorded request: `POST /v1/messages`, answered 200, valid with its beta header.
fn valid_requests(mock: &MockServer) -> Vec<MessagesRequest> {
    mock.requests()
        .iter()
        .map(|r: &RecordedRequest| {
            assert_eq!(
                (r.method.as_str(), r.path.as_str(), r.status),
                ("POST", "/v1/messages", Some(200))
            );
            let parsed: MessagesRequest =
                serde_json::from_value(r.body.clone().expect("a body")).expect("a request");
            let header = r.headers.get("anthropic-beta").map_or("", String::as_str);
            let model = ModelTable::builtin().resolve(&parsed.model);
            let options = ValidateOptions::default().with_beta_header(header);
            let violations = validate_with(&parsed, model.model(), &options);
            assert!(violations.is_empty(), "invalid request: {violations:?}");
            parsed
        })
        .collect()
}

/// The transcript read back (no problem lines) normalizes to a request `validate` accepts
/// (a finished one with a next user message).
fn assert_transcript_valid(path: &Path) -> Vec<Message> {
    let read = read_transcript(path).expect("transcript");
    assert!(
        read.problems.is_empty(),
        "{}: {:?}",
        path.display(),
        read.problems
    );
    let mut messages = read.messages.clone();
    if matches!(messages.last(), Some(Message::Assistant(_))) {
        messages.push(Message::user_text("next"));
    }
    let normalized = normalize(&messages, &Options::default());
    let request = MessagesRequest::new("claude-sonnet-4-5", 1024, normalized.messages);
    let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
    let violations = threadline::validate::validate(&request, model);
    assert!(violations.is_empty(), "{}: {violations:?}", path.display());
    read.messages
}

/// The subagent transcripts of the session, sorted; each line marked as Claude Code marks
/// its subagents' records.
fn subagent_transcripts(dir: &Path) -> Vec<PathBuf> {
    let sub = dir.join("session").join("subagents");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&sub)
        .expect("subagents dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    for path in &paths {
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("name");
        let id = stem.strip_prefix("agent-").expect("agent-<id>");
        let text = std::fs::read_to_string(path).expect("read");
        assert!(!text.is_empty());
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).expect("JSON");
            assert_eq!(
                (&record["isSidechain"], &record["agentId"]),
                (&json!(true), &json!(id))
            );
        }
        let meta: Value = serde_json::from_str(
            &std::fs::read_to_string(sub.join(format!("{stem}.meta.json"))).expect("meta"),
        )
        .expect("meta JSON");
        assert!(
            meta["toolUseId"]
                .as_str()
                .is_some_and(|t| t.starts_with("toolu_"))
        );
    }
    paths
}

fn results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(u.content.iter().filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some((
                    r.tool_use_id.clone(),
                    match &r.content {
                        Some(Content::Text(t)) => t.clone(),
                        other => format!("{other:?}"),
                    },
                    r.is_error == Some(true),
                )),
                _ => None,
            })),
            _ => None,
        })
        .flatten()
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn two_subagents_run_in_parallel_and_both_reports_reach_the_parent_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = Scenario::new([
        Step::message(vec![
            task(
                "toolu_a",
                "First half",
                "[route-A] look at the first half",
                None,
            ),
            task(
                "toolu_b",
                "Second half",
                "[route-B] look at the second half",
                None,
            ),
        ]),
        text("Both halves are fine."),
    ])
    .with_route(Route::new(
        "[route-A]",
        [
            Step::message(vec![call("toolu_ra", "Rendezvous")]),
            text("report A"),
        ],
    ))
    .with_route(Route::new(
        "[route-B]",
        [
            Step::message(vec![call("toolu_rb", "Rendezvous")]),
            text("report B"),
        ],
    ));
    let mock = MockServer::start(scenario).await.expect("mock");
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut agent = builder(&mock, dir.path())
        .tool(Rendezvous(barrier))
        .subagents(SubagentConfig::default())
        .build()
        .expect("agent");
    let events: Vec<Event> = agent.run("Check both halves.").collect().await;
    let (terminal, path, messages) = finished(&events);
    assert_eq!(
        (terminal, path),
        (Terminal::Completed, vec![Transition::NextTurn])
    );
    // Both subagents met inside the barrier (they overlapped), and the reports reached the
    // parent in tool_use order.
    assert_eq!(
        results(&messages),
        [
            ("toolu_a".to_owned(), "report A".to_owned(), false),
            ("toolu_b".to_owned(), "report B".to_owned(), false),
        ]
    );
    let requests = valid_requests(&mock);
    assert_eq!(requests.len(), 6);
    let last = requests.last().expect("parent's second request");
    let sent: Vec<(String, String, bool)> = last
        .messages
        .iter()
        .flat_map(|m| match &m.content {
            Content::Blocks(blocks) => blocks.clone(),
            Content::Text(_) => Vec::new(),
        })
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some((
                r.tool_use_id.clone(),
                format!("{:?}", r.content),
                r.is_error == Some(true),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["toolu_a", "toolu_b"]
    );
    // Each subagent: its own array (first message its prompt), the met barrier, its report.
    let paths = subagent_transcripts(dir.path());
    assert_eq!(paths.len(), 2);
    let mut reports = Vec::new();
    for path in &paths {
        let messages = assert_transcript_valid(path);
        let r = results(&messages);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].1.as_str(), r[0].2), ("met", false));
        reports.push(last_text(&messages));
    }
    reports.sort();
    assert_eq!(reports, ["report A", "report B"]);
    assert_transcript_valid(&dir.path().join("session.jsonl"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_restricted_subagent_is_refused_a_tool_outside_its_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join(".claude/agents")).expect("agents dir");
    std::fs::write(
        dir.path().join(".claude/agents/reader.md"),
        "---\nname: reader\ndescription: Reads only.\ntools: Echo\nmodel: claude-haiku-4-5\n---\n[route-R] You only read.\n",
    )
    .expect("definition");
    let scenario = Scenario::new([
        Step::message(vec![task(
            "toolu_t",
            "Read",
            "Read then delete",
            Some("reader"),
        )]),
        text("The reader could not delete."),
    ])
    .with_route(Route::new(
        "[route-R]",
        [
            Step::message(vec![call("toolu_e", "Echo"), call("toolu_s", "Secret")]),
            text("I may not delete."),
        ],
    ));
    let mock = MockServer::start(scenario).await.expect("mock");
    let (echo, secret) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut agent = builder(&mock, dir.path())
        .tool(Counted {
            name: "Echo",
            calls: Arc::clone(&echo),
        })
        .tool(Counted {
            name: "Secret",
            calls: Arc::clone(&secret),
        })
        .subagents(SubagentConfig::default())
        .build()
        .expect("agent");
    let events: Vec<Event> = agent.run("Delegate.").collect().await;
    let (terminal, path, messages) = finished(&events);
    assert_eq!(
        (terminal, path),
        (Terminal::Completed, vec![Transition::NextTurn])
    );
    assert_eq!(
        (echo.load(Ordering::SeqCst), secret.load(Ordering::SeqCst)),
        (1, 0)
    );
    assert_eq!(
        results(&messages),
        [("toolu_t".to_owned(), "I may not delete.".to_owned(), false)]
    );
    let requests = valid_requests(&mock);
    assert_eq!(requests.len(), 4);
    // The parent offers Echo, Secret, Task; the reader only Echo, under its own system prompt.
    let names = |r: &MessagesRequest| -> Vec<String> {
        r.tools
            .iter()
            .flatten()
            .map(|t| {
                serde_json::to_value(t).expect("tool")["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(names(&requests[0]), ["Echo", "Secret", "Task"]);
    assert_eq!(names(&requests[1]), ["Echo"]);
    assert_eq!(
        (requests[0].model.as_str(), requests[1].model.as_str()),
        (threadline::DEFAULT_MODEL, "claude-haiku-4-5")
    );
    assert!(
        serde_json::to_string(&requests[1].system)
            .expect("system")
            .contains("[route-R] You only read.")
    );
    let paths = subagent_transcripts(dir.path());
    assert_eq!(paths.len(), 1);
    let sub = assert_transcript_valid(&paths[0]);
    let refused = results(&sub);
    assert_eq!(refused.len(), 2);
    assert_eq!((refused[0].1.as_str(), refused[0].2), ("ok", false));
    assert_eq!(refused[1].0, "toolu_s");
    assert!(refused[1].2, "the call outside the list is an error result");
    assert!(refused[1].1.contains("Secret"), "{}", refused[1].1);
    assert_transcript_valid(&dir.path().join("session.jsonl"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_forked_subagent_reads_the_parents_cached_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = Scenario::new([
        Step::message(vec![task(
            "toolu_f",
            "Fork",
            "Now summarise the notes above.",
            Some("fork"),
        )]),
        text("The fork's summary."),
        text("Done."),
    ]);
    let mock = MockServer::start(scenario).await.expect("mock");
    let mut agent = builder(&mock, dir.path())
        .subagents(SubagentConfig::default().with_fork(true))
        .build()
        .expect("agent");
    let notes: String = (0..800)
        .map(|i| format!("note {i:04}: the parent's long context\n"))
        .collect();
    let events: Vec<Event> = agent.run(notes).collect().await;
    let (terminal, path, messages) = finished(&events);
    assert_eq!(
        (terminal, path),
        (Terminal::Completed, vec![Transition::NextTurn])
    );
    assert_eq!(
        results(&messages),
        [(
            "toolu_f".to_owned(),
            "The fork's summary.".to_owned(),
            false
        )]
    );
    let requests = valid_requests(&mock);
    assert_eq!(requests.len(), 3);
    let (parent, fork) = (&requests[0], &requests[1]);
    // Byte-identical up to the fork point: tools, system, and every block the parent sent
    // (cache markers included) are the fork's first blocks.
    let json = |v: Value| v.to_string();
    assert_eq!(
        json(serde_json::to_value(&parent.tools).expect("tools")),
        json(serde_json::to_value(&fork.tools).expect("tools"))
    );
    assert_eq!(
        json(serde_json::to_value(&parent.system).expect("system")),
        json(serde_json::to_value(&fork.system).expect("system"))
    );
    let blocks = |r: &MessagesRequest| -> Vec<Value> {
        r.messages
            .iter()
            .flat_map(
                |m| match serde_json::to_value(&m.content).expect("content") {
                    Value::Array(blocks) => blocks,
                    text => vec![text],
                },
            )
            .collect()
    };
    let (before, after) = (blocks(parent), blocks(fork));
    assert!(after.len() > before.len());
    for (i, (a, b)) in before.iter().zip(&after).enumerate() {
        let short = |v: &Value| v.to_string().chars().take(120).collect::<String>();
        assert_eq!(a, b, "block {i} differs: {} / {}", short(a), short(b));
    }
    // The simulator over the mock's requests: the fork's first request reads the cache.
    let row = ModelTable::builtin().resolve(&parent.model).model();
    let mut sim = Simulator::new(row);
    let steps: Vec<_> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| sim.step(i as u64 * 1000, r))
        .collect();
    let share = steps[1].usage.read_share();
    println!("forked subagent's first request: cache-read share {share:.4}");
    assert!(share >= 0.9, "read share {share}");
    let paths = subagent_transcripts(dir.path());
    assert_eq!(paths.len(), 1);
    // The fork's file holds the inherited history, then the fork's own turn.
    let fork_messages = assert_transcript_valid(&paths[0]);
    let parent_messages = assert_transcript_valid(&dir.path().join("session.jsonl"));
    assert_eq!(fork_messages[0], parent_messages[0]);
    assert_eq!(fork_messages.len(), 3);
    assert_eq!(last_text(&fork_messages), "The fork's summary.");
}

#[tokio::test(flavor = "current_thread")]
async fn an_abort_during_a_subagent_leaves_every_transcript_valid() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = Scenario::new([Step::message(vec![task(
        "toolu_w",
        "Wait",
        "[route-W] wait",
        None,
    )])])
    .with_route(Route::new(
        "[route-W]",
        [Step::message(vec![call("toolu_ww", "Wait")])],
    ));
    let mock = MockServer::start(scenario).await.expect("mock");
    let started = Arc::new(tokio::sync::Notify::new());
    let cancel = CancellationToken::new();
    let mut agent = builder(&mock, dir.path())
        .tool(UntilAborted(Arc::clone(&started)))
        .subagents(SubagentConfig::default())
        .cancellation(cancel.clone())
        .build()
        .expect("agent");
    let aborter = async {
        started.notified().await;
        cancel.cancel();
    };
    let (events, ()) = tokio::time::timeout(
        Duration::from_secs(10),
        futures::future::join(agent.run("Wait for it.").collect::<Vec<Event>>(), aborter),
    )
    .await
    .expect("the abort ends the run");
    let (terminal, path, messages) = finished(&events);
    assert_eq!((terminal, path), (Terminal::AbortedTools, vec![]));
    let r = results(&messages);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].0.as_str(), r[0].2), ("toolu_w", true));
    assert_eq!(valid_requests(&mock).len(), 2);
    let paths = subagent_transcripts(dir.path());
    assert_eq!(paths.len(), 1);
    let sub = assert_transcript_valid(&paths[0]);
    assert_eq!(
        results(&sub)
            .iter()
            .map(|r| (r.0.as_str(), r.2))
            .collect::<Vec<_>>(),
        [("toolu_ww", true)]
    );
    assert_transcript_valid(&dir.path().join("session.jsonl"));
}

/// The text of the last assistant message.
fn last_text(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant(a) => Some(
                a.content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    })
                    .collect::<String>(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}
