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
    binding_agent_builder(mock, dir, compaction)
        .build()
        .expect("agent")
}

fn binding_agent_builder(
    mock: &MockServer,
    dir: &Path,
    compaction: Compaction,
) -> threadline::AgentBuilder<Client> {
    let workspace = Arc::new(Workspace::new(dir).expect("workspace"));
    Agent::builder(client(mock))
        .model(MODEL)
        .system_prompt("You read files.")
        .workspace(dir)
        .tool(ReadFile::new(workspace))
        .compaction(compaction)
        .today("2026-03-08")
}

/// A mock whose session thinks and reads big.txt and medium.txt, answers the compaction
/// with `summary`, reads notes.txt and medium.txt again, then answers.
async fn four_reads(summary: Step) -> MockServer {
    MockServer::start(Scenario::new([
        think_and_read(0, "big.txt"),
        think_and_read(1, "medium.txt"),
        summary,
        think_and_read(2, "notes.txt"),
        think_and_read(3, "medium.txt"),
        think_and_answer("All four files are read."),
    ]))
    .await
    .expect("mock")
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
    let mock = four_reads(Step::text(
        "<summary>big.txt and medium.txt were read.</summary>",
    ))
    .await;
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
    let mock = four_reads(Step::text(
        "The user asked to read four files; big.txt and medium.txt are read.",
    ))
    .await;
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

/// The loop's keep-recent-turns: the compaction request holds only the older part (up to
/// the latest prompt, a prefix of the request before it), and the next request is the block,
/// then the kept turns as the loop sent them, thinking included, then the note with the
/// workspace context (in front of the kept turns it would edit them); the mock, which checks
/// each kept thinking block against the chain the block recorded, accepts every request.
#[tokio::test(flavor = "current_thread")]
async fn an_on_demand_compaction_in_the_loop_keeps_the_recent_turns_with_their_thinking() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        think_and_read(0, "big.txt"),
        think_and_answer("big.txt is read."),
        think_and_read(1, "medium.txt"),
        Step::text("The user had big.txt read."),
        think_and_answer("medium.txt is read."),
        think_and_answer("You are welcome."),
    ]))
    .await
    .expect("mock");
    let compaction = small_compaction(Some(3_900)).with_server(
        CompactionMode::OnDemand,
        threadline::ServerCompaction::default().keeping_recent_turns(true),
    );
    let mut agent = binding_agent(&mock, dir.path(), compaction);
    let first = run(&mut agent, "Read big.txt.").await;
    assert_eq!(finished(&first).0, Terminal::Completed);
    let events = run(&mut agent, "Now medium.txt.").await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    let last = run(&mut agent, "Thanks.").await;
    assert_eq!(finished(&last).0, Terminal::Completed);
    let requests = mock.requests();
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.status, Some(200), "request {i}: {:?}", request.body);
        let dropped = body(request)
            .get("thinking")
            .and_then(|t| t.get("block_binding"));
        assert!(dropped.is_none(), "request {i} needed drop_block");
    }
    assert_eq!(requests.len(), 6);
    let plain = |v: &Value| threadline::wire::cache_control::without_cache_control(v);
    let messages = |i: usize| -> Vec<Value> {
        plain(&body(&requests[i])["messages"])
            .as_array()
            .expect("list")
            .clone()
    };
    // The compaction request: the older part, a prefix of the request before it that ends
    // before the latest prompt.
    assert_eq!(
        body(&requests[3])["compaction"],
        json!({"type": "summarize"})
    );
    let (before, asked) = (messages(2), messages(3));
    assert!(
        asked.len() < before.len(),
        "only the older part is summarized"
    );
    assert_eq!(&before[..asked.len()], &asked[..]);
    assert!(!json!(asked).to_string().contains("Now medium.txt."));
    // The next request: the block, then the kept turns as they were sent, thinking and all.
    let block = on_demand_block(&events);
    let after = messages(4);
    assert_eq!(after[0]["role"], "assistant");
    assert_eq!(after[0]["content"], json!([block]));
    let kept = &before[asked.len()..];
    assert_eq!(&after[1..=kept.len()], kept);
    assert_eq!(after[2]["content"][0]["type"], "thinking", "{after:?}");
    // The workspace context is in the message that holds the note, after the kept turns.
    let note = after
        .iter()
        .position(|m| m.to_string().contains("summarized above to save"))
        .expect("the note");
    assert!(note > kept.len());
    assert!(after[note].to_string().contains("currentDate"));
    assert!(!json!(after[..note]).to_string().contains("currentDate"));
    assert!(
        !body(&requests[4])
            .to_string()
            .contains("BIG-FILE-LINE-0000")
    );
    // The request after that extends it.
    let next = messages(5);
    assert_eq!(&next[..after.len()], &after[..]);
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

/// One scripted answer of a hostile session: it always thinks and says something, and may
/// call the Read tool on one of the workspace's files (or on one that does not exist), a tool
/// of the `docs` server (connected or not), or `reconnect`, which restarts that server in the
/// middle of the run. (A summary request takes whichever answer comes next: its text is the
/// summary.)
#[derive(Debug, Clone)]
struct Answer {
    thinking: String,
    text: String,
    call: Option<Call>,
}

/// The tool an answer calls.
#[derive(Debug, Clone)]
enum Call {
    Read(&'static str),
    Server(&'static str),
    Reconnect,
}

impl Answer {
    fn step(&self, i: usize) -> Step {
        let mut blocks = vec![Block::Thinking {
            thinking: self.thinking.clone(),
            signature: format!("scenario-{i}"),
        }];
        blocks.push(Block::Text {
            text: self.text.clone(),
        });
        let (name, input) = match self.call {
            None => return Step::message(blocks),
            Some(Call::Read(path)) => ("Read", json!({"path": path})),
            Some(Call::Server(name)) => (name, json!({"q": "binding"})),
            Some(Call::Reconnect) => ("reconnect", json!({})),
        };
        blocks.push(Block::ToolUse {
            id: None,
            name: name.to_owned(),
            input,
        });
        Step::message(blocks)
    }
}

fn answer() -> impl proptest::strategy::Strategy<Value = Answer> {
    use proptest::prelude::*;
    // Blank answers and answers with edge whitespace included: the API refuses blank text,
    // so such an answer goes back holding only its thinking, and whether that message is
    // sent must not change once a later answer's thinking is bound to the prefix (found by
    // CI's seed 20261130 before the normalizer dropped thinking-only answers wherever they
    // are).
    let hostile_text = prop_oneof![
        "[a-z ]{1,40}",
        Just("\u{0}\u{1b}[2J\"quotes\" and \\backslashes\\".to_owned()),
        Just("emoji 🦀 and </summary> tags".to_owned()),
    ];
    let call = prop_oneof![
        4 => prop_oneof![
            Just("big.txt"),
            Just("medium.txt"),
            Just("notes.txt"),
            Just("missing.txt"),
        ]
        .prop_map(Call::Read),
        1 => prop_oneof![Just("docs_search"), Just("docs_fetch")].prop_map(Call::Server),
        1 => Just(Call::Reconnect),
    ];
    (
        hostile_text.clone(),
        hostile_text,
        proptest::option::of(call),
    )
        .prop_map(|(thinking, text, call)| Answer {
            thinking,
            text,
            call,
        })
}

/// A tool of the `docs` server, or the `reconnect` tool (`server: None`) that restarts the
/// server the way `threadline-mcp` reports it: a disconnect, then a connect whose tool list
/// may differ.
struct DocsTool {
    name: &'static str,
    changes: threadline::query::ToolChanges,
    reconnects: Arc<std::sync::atomic::AtomicUsize>,
}

impl threadline::query::Tool for DocsTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "A tool of the docs server."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"q": {"type": "string"}}})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    fn call(
        &self,
        _input: Value,
        _ctx: threadline::query::ToolContext,
    ) -> threadline::query::ToolStream {
        if self.name == "reconnect" {
            let n = self
                .reconnects
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.changes.disconnect_server("docs");
            self.changes.connect_server(
                "docs",
                docs_tools(n.is_multiple_of(2), &self.changes, &self.reconnects),
            );
        }
        let answer = format!("{} answered", self.name);
        threadline::query::tool_result(async move { threadline::query::ToolOutput::text(answer) })
    }
}

/// The `docs` server's tools: `docs_search`, and `docs_fetch` when `both`.
fn docs_tools(
    both: bool,
    changes: &threadline::query::ToolChanges,
    reconnects: &Arc<std::sync::atomic::AtomicUsize>,
) -> Vec<Arc<dyn threadline::query::Tool>> {
    let names: &[&'static str] = if both {
        &["docs_search", "docs_fetch"]
    } else {
        &["docs_search"]
    };
    names
        .iter()
        .map(|name| {
            Arc::new(DocsTool {
                name,
                changes: changes.clone(),
                reconnects: Arc::clone(reconnects),
            }) as Arc<dyn threadline::query::Tool>
        })
        .collect()
}

/// What happens to the `docs` server before a prompt.
#[derive(Debug, Clone, Copy)]
enum ServerChange {
    /// It connects (again), listing one tool or both.
    Connect { both: bool },
    /// It goes away.
    Disconnect,
}

/// A prompt of a hostile session: plain, or mentioning a file (an attachment), whether the
/// file read before it changed on disk first (a changed-file reminder), and what the `docs`
/// server did before it (a server reconnect).
#[derive(Debug, Clone)]
struct Prompt {
    mention: bool,
    edit_notes: bool,
    server: Option<ServerChange>,
}

/// One hostile session: the model, the answers, the prompts, the compaction and the
/// threshold. The models are Opus 5.5, which takes tool changes as appended `system`
/// messages, and Haiku 5.5, which does not claim them, so a server that comes or goes
/// changes its `tools`.
type Session = (&'static str, Vec<Answer>, Vec<Prompt>, Compacting, u64);

/// How a hostile session compacts.
#[derive(Debug, Clone, Copy)]
enum Compacting {
    Local,
    /// On demand, summarizing the whole history.
    OnDemand,
    /// On demand, keeping the recent turns verbatim.
    KeepingRecentTurns,
}

fn session() -> impl proptest::strategy::Strategy<Value = Session> {
    use proptest::prelude::*;
    let server = proptest::option::of(prop_oneof![
        proptest::bool::ANY.prop_map(|both| ServerChange::Connect { both }),
        Just(ServerChange::Disconnect),
    ]);
    (
        prop_oneof![Just(MODEL), Just("claude-haiku-5-5")],
        proptest::collection::vec(answer(), 2..14),
        proptest::collection::vec(
            (proptest::bool::ANY, proptest::bool::ANY, server).prop_map(
                |(mention, edit_notes, server)| Prompt {
                    mention,
                    edit_notes,
                    server,
                },
            ),
            1..4,
        ),
        prop_oneof![
            Just(Compacting::Local),
            Just(Compacting::OnDemand),
            Just(Compacting::KeepingRecentTurns),
        ],
        // Around the largest round (a read of big.txt and the prompt before it, about 3,900
        // tokens): below it, what a compaction keeps is already over the threshold, and
        // the session goes on to the blocking limit, where it compacts.
        2_500u64..5_500,
    )
}

/// Runs one hostile session; `Ok(compactions)`, or the first request refused.
fn run_session(
    (model, answers, prompts, compacting, autocompact_at): &Session,
) -> Result<Outcome, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = workspace();
    // The first answers read the big file, then another: every session goes over the
    // threshold with a round before the latest to summarize.
    let mut steps = vec![
        think_and_read(0, "big.txt"),
        think_and_read(1, "medium.txt"),
    ];
    steps.extend(answers.iter().enumerate().map(|(i, a)| a.step(i + 2)));
    let (requests, outcome) = rt.block_on(async {
        let mock = MockServer::start(Scenario::new(steps)).await.expect("mock");
        let (mode, keep) = match compacting {
            Compacting::Local => (CompactionMode::Local, false),
            Compacting::OnDemand => (CompactionMode::OnDemand, false),
            Compacting::KeepingRecentTurns => (CompactionMode::OnDemand, true),
        };
        let compaction = small_compaction(Some(*autocompact_at)).with_server(
            mode,
            threadline::ServerCompaction::default().keeping_recent_turns(keep),
        );
        let changes = threadline::query::ToolChanges::new();
        let reconnects = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut agent = binding_agent_builder(&mock, dir.path(), compaction)
            .model(*model)
            .tool(DocsTool {
                name: "reconnect",
                changes: changes.clone(),
                reconnects: Arc::clone(&reconnects),
            })
            .tool_changes(changes.clone())
            .build()
            .expect("agent");
        let mut outcome = Outcome::default();
        for (i, prompt) in prompts.iter().enumerate() {
            match prompt.server {
                Some(ServerChange::Connect { both }) => {
                    changes.connect_server("docs", docs_tools(both, &changes, &reconnects));
                }
                Some(ServerChange::Disconnect) => changes.disconnect_server("docs"),
                None => {}
            }
            if prompt.edit_notes {
                std::fs::write(dir.path().join("notes.txt"), format!("NOTE {i}: changed\n"))
                    .expect("edit");
            }
            let text = if prompt.mention {
                format!("Prompt {i}: what does @notes.txt say?")
            } else {
                format!("Prompt {i}: go on.")
            };
            let events = run(&mut agent, &text).await;
            let (terminal, _) = finished(&events);
            // A run of reads of big.txt refills this small window every turn: three such
            // compactions in a row stop the run by name, by design; any other end but
            // completion (the blocking limit above all) fails.
            assert!(
                matches!(
                    terminal,
                    Terminal::Completed
                        | Terminal::MaxTurns { .. }
                        | Terminal::CompactionThrashing { .. }
                ),
                "run {i} ended {terminal:?}"
            );
            outcome.compactions += compactions(&events).len();
            for event in &events {
                match event {
                    Event::ToolsChanged(changed) => match changed.via {
                        threadline::query::ToolChangeVia::SystemMessage => {
                            outcome.announced += 1;
                        }
                        _ => outcome.thinking_left_out += changed.thinking_left_out,
                    },
                    Event::Warning(warning) => outcome.warnings.push(warning.clone()),
                    _ => {}
                }
            }
        }
        (mock.requests(), outcome)
    });
    for (i, request) in requests.iter().enumerate() {
        if request.status.is_none_or(|s| s >= 400) {
            // What the validator says of it (empty: the binding refused it).
            let violations: Vec<String> = request
                .body
                .as_ref()
                .and_then(|b| serde_json::from_value::<MessagesRequest>(b.clone()).ok())
                .map(|r| {
                    let table = threadline::wire::model::ModelTable::builtin();
                    threadline::validate::validate(&r, table.resolve(&r.model).model())
                        .iter()
                        .map(|v| v.to_string())
                        .collect()
                })
                .unwrap_or_default();
            return Err(format!(
                "request {i} answered {:?}: {:?}; the validator: {violations:#?}; the loop's \
                 warnings: {:#?}",
                request.status, request.refusal, outcome.warnings
            ));
        }
    }
    // Kept turns sent with their thinking after an on-demand block (keep-recent-turns).
    let mut outcome = outcome;
    outcome.kept_thinking = requests.iter().any(|r| {
        let Some(messages) = r.body.as_ref().and_then(|b| b["messages"].as_array()) else {
            return false;
        };
        messages
            .first()
            .is_some_and(|m| m["content"][0]["type"] == "compaction")
            && messages[1..]
                .iter()
                .filter(|m| m["role"] == "assistant")
                .any(|m| m["content"][0]["type"] == "thinking")
            && r.body
                .as_ref()
                .is_some_and(|b| b.get("compaction").is_none())
    });
    Ok(outcome)
}

/// What one hostile session did.
#[derive(Default)]
struct Outcome {
    compactions: usize,
    /// Tool changes announced by an appended `system` message (Opus 5.5).
    announced: usize,
    /// Assistant messages whose thinking a changed `tools` left out (Haiku 5.5).
    thinking_left_out: usize,
    /// What the loop warned about (a refused summary request among them).
    warnings: Vec<String>,
    /// Whether a request after an on-demand block sent kept turns with their thinking.
    kept_thinking: bool,
}

/// Hostile sessions on a binding model (thinking in every answer, tool rounds, missing
/// files, mentions, files changed between prompts, an MCP-like server that connects, goes
/// away or restarts between prompts and in the middle of a tool round, hostile text; on Opus
/// 5.5 and on Haiku 5.5, which does not claim tool changes in place; a summary request takes
/// whichever answer comes next, a tool call included) against the mock that enforces the
/// binding, compacted locally, on demand or on demand keeping the recent turns, at a random
/// small threshold: no request draws a
/// 4xx (the mock refuses what `validate` or the binding refuses) and every run completes.
/// Most sessions compact (a compaction that cannot shrink the context enough is skipped, as
/// designed), so at least half of them must have.
#[test]
fn hostile_sessions_on_a_binding_model_never_draw_a_refusal() {
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    let cases: u32 = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        // 48 at least: with 24, one random seed in about thirty drew no session that changed
        // its tools after thinking on Haiku 5.5 (the coverage checks below).
        .map_or(48, |n: u32| (n / 10).max(48));
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let compacting = std::cell::Cell::new(0u32);
    let announcing = std::cell::Cell::new(0u32);
    let leaving_thinking_out = std::cell::Cell::new(0u32);
    let keeping_thinking = std::cell::Cell::new(0u32);
    let result = runner.run(&session(), |session| {
        let outcome = run_session(&session).map_err(TestCaseError::fail)?;
        compacting.set(compacting.get() + u32::from(outcome.compactions > 0));
        announcing.set(announcing.get() + u32::from(outcome.announced > 0));
        leaving_thinking_out
            .set(leaving_thinking_out.get() + u32::from(outcome.thinking_left_out > 0));
        keeping_thinking.set(keeping_thinking.get() + u32::from(outcome.kept_thinking));
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    assert!(
        compacting.get() * 2 >= cases,
        "only {} of {cases} sessions compacted",
        compacting.get()
    );
    // The server's comings and goings reach the requests on both models: announced in place
    // on Opus 5.5, a changed `tools` that leaves earlier thinking out on Haiku 5.5.
    assert!(announcing.get() > 0, "no session announced a tool change");
    assert!(
        leaving_thinking_out.get() > 0,
        "no session changed its tools after thinking on Haiku 5.5"
    );
    // And keep-recent-turns kept thinking past a block in some session.
    assert!(
        keeping_thinking.get() > 0,
        "no session sent kept turns' thinking after an on-demand block"
    );
}

/// Found by the hostile property (seed 186822926 at 2,048 cases), shrunk: after a local
/// compaction whose restated answers were blank (so normalization merged the summary with
/// the prompt after them), a keep-recent cut between the two split a message the API had
/// received whole, and the kept thinking was refused. Such a cut is not taken now.
#[test]
fn a_keep_recent_cut_inside_a_merged_message_is_not_taken() {
    let answer = |thinking: &str, text: &str, read: bool| Answer {
        thinking: thinking.to_owned(),
        text: text.to_owned(),
        call: read.then_some(Call::Read("big.txt")),
    };
    let plain = || Prompt {
        mention: false,
        edit_notes: false,
        server: None,
    };
    let session: Session = (
        MODEL,
        vec![
            answer("a", " ", false),
            answer("a", "a", true),
            answer("a", "a", false),
            answer(" ", "a", true),
            answer("a", "a", false),
            answer("a", " ", false),
            answer("a", " ", true),
            answer("a", "a", false),
        ],
        vec![plain(), plain(), plain()],
        Compacting::KeepingRecentTurns,
        2_500,
    );
    if let Err(refused) = run_session(&session) {
        panic!("{refused}");
    }
}

/// A conversation driven by hand through the client, its requests built from the history as
/// the loop builds them (normalized from the last boundary on), for the keep-recent-turns and
/// background swaps of `threadline_compact::on_demand`.
struct Conversation {
    client: Client,
    history: Vec<Message>,
    drop_block: bool,
}

impl Conversation {
    fn new(mock: &MockServer) -> Conversation {
        Conversation {
            client: client(mock),
            history: Vec::new(),
            drop_block: false,
        }
    }

    fn request_for(&self, history: &[Message]) -> MessagesRequest {
        let visible = threadline::compact::units::since_last_boundary(history);
        let normalized =
            threadline::normalize::normalize(visible, &threadline::normalize::Options::default());
        let mut request: MessagesRequest = serde_json::from_value(json!({
            "model": MODEL, "max_tokens": 4096, "system": "You read files.",
            "tools": [{"name": "Read", "description": "Reads a file.",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
            "messages": []
        }))
        .expect("request");
        request.messages = normalized.messages.into();
        if self.drop_block {
            request.thinking = Some(
                serde_json::from_value(json!({"type": "adaptive",
                    "block_binding": {"prefix_mismatch_behavior": "drop_block"}}))
                .expect("thinking"),
            );
        }
        request
    }

    /// Sends the history; the answer is appended, with a result for its tool call.
    async fn turn(&mut self) -> Result<threadline::wire::ResponseMessage, String> {
        let request = self.request_for(&self.history);
        let answer = self
            .client
            .message(request)
            .await
            .map_err(|e| e.to_string())?;
        self.history
            .push(Message::assistant(answer.content.clone()));
        if let Some(call) = answer.tool_uses().next() {
            self.history.push(Message::tool_result(
                call.id.clone(),
                threadline::wire::Content::Text("file contents".to_owned()),
                false,
            ));
        }
        Ok(answer)
    }

    /// An on-demand compaction of `history[..cut]`, sent now: its block.
    async fn compact(&self, cut: usize) -> threadline::wire::content::CompactionBlock {
        let base = self.request_for(&self.history[..cut]);
        let request = threadline::compact::on_demand::compaction_request(&base, None);
        let answer = self
            .client
            .message(request)
            .await
            .expect("compaction answered");
        threadline::compact::on_demand::read_answer(&answer).expect("a block")
    }

    fn swap(&mut self, cut: usize, block: threadline::wire::content::CompactionBlock) {
        let swapped = threadline::compact::on_demand::swapped_keeping(
            &self.history,
            cut,
            block,
            0,
            CompactTrigger::Manual,
            std::time::SystemTime::UNIX_EPOCH,
        )
        .expect("swapped");
        self.history.extend(swapped.messages);
    }
}

fn dropped(answer: &threadline::wire::ResponseMessage) -> usize {
    answer
        .input_transformations
        .as_ref()
        .map_or(usize::MAX, Vec::len)
}

/// Keep-recent-turns: the older turns are summarized, the recent ones follow the block
/// verbatim with their thinking, and the mock (which enforces the binding) reads that
/// thinking as valid: nothing dropped. An edit of a kept turn breaks it.
#[tokio::test(flavor = "current_thread")]
async fn a_keep_recent_turns_compaction_keeps_the_kept_turns_thinking_valid() {
    let mock = MockServer::start(Scenario::new([
        think_and_read(0, "big.txt"),
        think_and_answer("big.txt is read."),
        think_and_read(1, "medium.txt"),
        think_and_answer("medium.txt is read."),
        Step::text("The user had big.txt read."),
        think_and_answer("Glad to help."),
        think_and_answer("Glad to help again."),
    ]))
    .await
    .expect("mock");
    let mut c = Conversation::new(&mock);
    c.drop_block = true;
    c.history.push(Message::user_text("Read big.txt."));
    c.turn().await.expect("turn");
    c.turn().await.expect("turn");
    c.history.push(Message::user_text("Now medium.txt."));
    c.turn().await.expect("turn");
    c.turn().await.expect("turn");
    // The cut threadline picks: before the latest prompt (roles differ across it).
    let options = TailOptions {
        min_tokens: 1,
        min_text_messages: 2,
        max_tokens: 100_000,
    };
    let cut = threadline::compact::on_demand::keep_recent_cut(&c.history, &options)
        .expect("something to summarize");
    assert_eq!(cut, 4, "the latest prompt starts the kept turns");
    let block = c.compact(cut).await;
    let mut edited = Conversation::new(&mock);
    c.swap(cut, block);
    c.history.push(Message::user_text("Thanks."));
    edited.history = c.history.clone();
    let answer = c.turn().await.expect("accepted");
    assert_eq!(dropped(&answer), 0, "the kept thinking is valid");
    let requests = mock.requests();
    let request = body(requests.last().expect("a request"));
    assert_eq!(request["messages"][0]["content"][0]["type"], "compaction");
    assert_eq!(request["messages"][2]["content"][0]["type"], "thinking");
    // A kept turn edited: its thinking is bound to a different conversation.
    let Some(Message::User(prompt)) = edited.history.iter_mut().rev().find(|m| {
        matches!(m, Message::User(u) if u.content.first() == Some(&threadline::wire::ContentBlock::text("Now medium.txt.")))
    }) else {
        panic!("the kept prompt");
    };
    prompt.content = vec![threadline::wire::ContentBlock::text("Now small.txt.")];
    let refused = edited.turn().await.expect_err("refused");
    assert!(
        refused.contains("The block is bound to a different conversation"),
        "{refused}"
    );
}

/// Background compaction: the history as it stood is compacted while the conversation goes
/// on; the block then replaces exactly that prefix, and what was appended since (its
/// thinking included) stays valid. Swapping a shorter prefix is refused.
#[tokio::test(flavor = "current_thread")]
async fn a_background_compaction_swaps_exactly_the_sent_prefix() {
    let mock = MockServer::start(Scenario::new([
        think_and_read(0, "big.txt"),
        think_and_answer("big.txt is read."),
        Step::text("The user had big.txt read."),
        think_and_read(1, "medium.txt"),
        think_and_answer("medium.txt is read."),
        think_and_answer("Glad to help."),
        think_and_answer("Glad to help again."),
    ]))
    .await
    .expect("mock");
    let mut c = Conversation::new(&mock);
    c.drop_block = true;
    c.history.push(Message::user_text("Read big.txt."));
    c.turn().await.expect("turn");
    c.turn().await.expect("turn");
    // Sent in the background on the history as it stands (4 messages)…
    let sent = c.history.len();
    let block = c.compact(sent).await;
    // …while the conversation goes on, appending only.
    c.history.push(Message::user_text("Now medium.txt."));
    c.turn().await.expect("turn");
    c.turn().await.expect("turn");
    let mut wrong = Conversation::new(&mock);
    wrong.history = c.history.clone();
    c.swap(sent, block.clone());
    c.history.push(Message::user_text("Thanks."));
    let answer = c.turn().await.expect("accepted");
    assert_eq!(dropped(&answer), 0, "the thinking appended since is valid");
    // The block over 4 messages, swapped in for 2 of them: the kept turns no longer follow
    // what the block summarized.
    wrong.swap(sent - 2, block);
    wrong.history.push(Message::user_text("Thanks."));
    let refused = wrong.turn().await.expect_err("refused");
    assert!(
        refused.contains("The block is bound to a different conversation"),
        "{refused}"
    );
}

/// A server-side compaction (`compact_20260112`) that comes with a tool call: the next
/// request starts at the compaction block and the workspace's context goes after the tool
/// results (which the API wants first), so the session goes on. (Found by the compaction
/// bench: the context used to open the results' message.)
#[tokio::test(flavor = "current_thread")]
async fn a_server_compaction_answered_with_a_tool_call_goes_on() {
    let dir = workspace();
    let step = think_and_read(0, "big.txt");
    let mock = MockServer::start(Scenario::new([step]).repeating_last())
        .await
        .expect("mock");
    let compaction = small_compaction(None).with_server(
        CompactionMode::Server,
        threadline::ServerCompaction::default().with_trigger(50_000),
    );
    let workspace_handle = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let mut agent = Agent::builder(client(&mock))
        .model("claude-opus-4-8")
        .system_prompt("You read files.")
        .workspace(dir.path())
        .tool(ReadFile::new(workspace_handle))
        .compaction(compaction)
        .max_turns(22)
        .today("2026-03-08")
        .build()
        .expect("agent");
    let events = run(&mut agent, "Keep reading big.txt.").await;
    assert!(
        matches!(finished(&events).0, Terminal::MaxTurns { .. }),
        "{:?}",
        finished(&events).0
    );
    let requests = mock.requests();
    assert!(requests.iter().all(|r| r.status == Some(200)));
    let compacted = requests
        .iter()
        .position(|r| body(r)["messages"][0]["content"][0]["type"] == "compaction")
        .expect("a request after the server compacted");
    let first_user = &body(&requests[compacted])["messages"][1]["content"];
    assert_eq!(first_user[0]["type"], "tool_result");
    assert!(
        first_user.to_string().contains("2026-03-08"),
        "the context follows the results"
    );
}

/// A tool whose every result refills the window right after a compaction: three such
/// compactions in a row end the run with a named terminal instead of a compaction per turn.
#[tokio::test(flavor = "current_thread")]
async fn compactions_that_refill_the_window_three_times_in_a_row_stop_the_run() {
    let dir = workspace();
    let answer = Answer {
        thinking: "Once more.".to_owned(),
        text: "Reading big.txt again.".to_owned(),
        call: Some(Call::Read("big.txt")),
    };
    let mock = MockServer::start(Scenario::new([answer.step(0)]).repeating_last())
        .await
        .expect("mock");
    let mut agent = binding_agent(&mock, dir.path(), small_compaction(Some(3_900)));
    let events = run(&mut agent, "Keep reading big.txt.").await;
    assert_eq!(
        finished(&events).0,
        Terminal::CompactionThrashing {
            compactions: threadline::query::MAX_REFILLS_IN_A_ROW
        }
    );
    assert_eq!(compactions(&events).len(), 3);
    assert!(mock.requests().iter().all(|r| r.status == Some(200)));
    // What is left is a valid session: the next run goes on from it, and counts its own
    // refills (a run stopped for thrashing does not stop the next at its first compaction).
    let state = agent.state().clone();
    let again = run(&mut agent, "Go on reading.").await;
    assert!(agent.state().messages.len() > state.messages.len());
    assert!(mock.requests().iter().all(|r| r.status == Some(200)));
    assert_eq!(
        finished(&again).0,
        Terminal::CompactionThrashing {
            compactions: threadline::query::MAX_REFILLS_IN_A_ROW
        }
    );
    assert_eq!(compactions(&again).len(), 3);
}

/// Reads of big.txt (about 3,000 tokens each) under a threshold of 2,812: what a compaction
/// keeps (the prompt and the latest read) is already over the threshold, so no summary is
/// asked for there (it could not help) and the breaker is not tripped; at the blocking limit
/// the loop compacts, the result under that limit being enough, and every prompt completes
/// (it stopped at the blocking limit for good, compaction paused, before).
#[tokio::test(flavor = "current_thread")]
async fn a_kept_part_over_the_threshold_waits_for_the_blocking_limit_and_compacts_there() {
    let dir = workspace();
    let step = |i: usize, read: Option<&'static str>| {
        Answer {
            thinking: format!("Step {i}."),
            text: format!("Answer {i}."),
            call: read.map(Call::Read),
        }
        .step(i)
    };
    let mock = MockServer::start(Scenario::new([
        step(0, Some("big.txt")),
        step(1, Some("big.txt")),
        step(2, Some("big.txt")),
        step(3, Some("big.txt")),
        step(4, Some("big.txt")),
        step(5, None),
        step(6, None),
        step(7, None),
    ]))
    .await
    .expect("mock");
    let mut agent = binding_agent(&mock, dir.path(), small_compaction(Some(2_812)));
    let mut compacted = 0;
    let mut kept_too_large = 0;
    for prompt in ["Read the files.", "And now?", "Done?"] {
        let events = run(&mut agent, prompt).await;
        assert_eq!(finished(&events).0, Terminal::Completed, "{prompt}");
        compacted += compactions(&events).len();
        kept_too_large += events
            .iter()
            .filter(|e| matches!(e, Event::Warning(w) if w.contains("a compaction keeps")))
            .count();
    }
    assert!(compacted >= 1, "it compacted at the blocking limit");
    assert!(
        kept_too_large >= 1,
        "no summary was asked for under the threshold"
    );
    assert!(mock.requests().iter().all(|r| r.status == Some(200)));
}

/// A session resumed over the threshold compacts before its first request: the first request
/// the server sees is the summary request, and the next one is under the threshold.
#[tokio::test(flavor = "current_thread")]
async fn a_session_resumed_over_the_limit_compacts_before_its_first_request() {
    let dir = workspace();
    let big = std::fs::read_to_string(dir.path().join("big.txt")).expect("big");
    let mut history = Vec::new();
    for i in 0..4 {
        history.push(Message::user_text(format!(
            "Round {i}: what does the file hold?"
        )));
        history.push(Message::assistant(vec![
            threadline::wire::ContentBlock::text(format!("It holds this ({i}):\n{big}")),
        ]));
    }
    let mock = MockServer::start(Scenario::new([
        Step::text("<summary>Four rounds about big.txt.</summary>"),
        think_and_answer("Resumed."),
    ]))
    .await
    .expect("mock");
    let workspace_handle = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let mut agent = Agent::builder(client(&mock))
        .model(MODEL)
        .system_prompt("You read files.")
        .workspace(dir.path())
        .tool(ReadFile::new(workspace_handle))
        .compaction(small_compaction(Some(6_000)))
        .history(history)
        .today("2026-03-08")
        .build()
        .expect("agent");
    let events = run(&mut agent, "Go on.").await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.status == Some(200)));
    let first = body(&requests[0]).to_string();
    assert!(
        first.contains("BIG-FILE-LINE-0000"),
        "the summary request reads it all"
    );
    let second = body(&requests[1]).to_string();
    assert!(second.contains("Four rounds about big.txt"));
    assert!(
        second.matches("BIG-FILE-LINE-0000").count() <= 1,
        "{second}"
    );
}

/// The last resort: a history whose past was edited (here the first prompt, as a transcript
/// edited by hand would be) draws the binding 400 on the next request; the loop retries once
/// asking the API to drop what it cannot verify (`drop_block`, which the mock then applies
/// and reports in `input_transformations`), says so, and keeps asking until the next
/// compaction.
#[tokio::test(flavor = "current_thread")]
async fn a_thinking_block_bound_elsewhere_is_retried_with_drop_block_as_a_last_resort() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        think_and_answer("First."),
        think_and_answer("Second."),
        think_and_answer("Third."),
    ]))
    .await
    .expect("mock");
    let mut first = binding_agent(&mock, dir.path(), Compaction::default());
    assert_eq!(
        finished(&run(&mut first, "Hello").await).0,
        Terminal::Completed
    );
    let mut history = first.state().messages;
    let edited = history.iter_mut().find_map(|m| match m {
        Message::User(u) => u.content.iter_mut().find_map(|b| match b {
            threadline::wire::ContentBlock::Text(t) if t.text == "Hello" => Some(t),
            _ => None,
        }),
        _ => None,
    });
    edited.expect("the first prompt").text = "Hello, edited".to_owned();
    let workspace = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let mut agent = Agent::builder(client(&mock))
        .model(MODEL)
        .system_prompt("You read files.")
        .workspace(dir.path())
        .tool(ReadFile::new(workspace))
        .today("2026-03-08")
        .history(history)
        .build()
        .expect("agent");
    let events = run(&mut agent, "Go on.").await;
    let (terminal, path) = finished(&events);
    assert_eq!(terminal, Terminal::Completed);
    assert_eq!(path, [Transition::ThinkingDropBlockRetry]);
    assert!(events.iter().any(|e| matches!(e, Event::Warning(w)
        if w.starts_with(threadline::query::DROP_BLOCK_WARNING)
            && w.contains("bound to a different conversation"))));
    let again = run(&mut agent, "And again.").await;
    assert_eq!(finished(&again).0, Terminal::Completed);
    let requests = mock.requests();
    let statuses: Vec<Option<u16>> = requests.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(200), Some(400), Some(200), Some(200)]);
    for request in &requests[2..] {
        assert_eq!(
            body(request)["thinking"]["block_binding"]["prefix_mismatch_behavior"],
            "drop_block"
        );
        assert!(request.headers["anthropic-beta"].contains("thinking-binding-controls-2026-08-01"));
    }
    assert!(body(&requests[0])["thinking"].is_null());
}

/// The same session on Amazon Bedrock, which does not offer on-demand compaction: told its
/// platform, the agent compacts locally instead and never sends the `compaction` field or
/// its beta, so no request is refused; the model goes by its Bedrock id.
#[tokio::test(flavor = "current_thread")]
async fn on_bedrock_an_on_demand_setting_compacts_locally_and_nothing_is_refused() {
    use threadline::client::{AwsCredentials, Platform, Provider};
    use threadline_mock::{MOCK_AWS_ACCESS_KEY_ID, MOCK_AWS_SECRET_ACCESS_KEY};

    const BEDROCK_MODEL: &str = "us.anthropic.claude-opus-5-5";
    let dir = workspace();
    let mock = four_reads(Step::text(
        "<summary>big.txt and medium.txt were read.</summary>",
    ))
    .await;
    let credentials = AwsCredentials::new(MOCK_AWS_ACCESS_KEY_ID, MOCK_AWS_SECRET_ACCESS_KEY, None)
        .expect("credentials");
    let provider = Provider::bedrock("us-east-1");
    let platform = provider.platform();
    let config = ClientConfig::new(mock.base_url(), Auth::Aws(credentials)).with_provider(provider);
    let workspace = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let mut agent = Agent::builder(Client::new(config).expect("client"))
        .model(BEDROCK_MODEL)
        .platform(platform)
        .system_prompt("You read files.")
        .workspace(dir.path())
        .tool(ReadFile::new(workspace))
        .compaction(small_compaction(Some(3_900)).with_mode(CompactionMode::OnDemand))
        .today("2026-03-08")
        .build()
        .expect("agent");
    assert_eq!(agent.config().models.platform(), Platform::Bedrock);
    let events = run(
        &mut agent,
        "Read big.txt, medium.txt, notes.txt, then medium.txt again.",
    )
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.status, Some(200), "request {i}: {:?}", request.body);
        assert_eq!(
            request.path,
            format!("/model/{BEDROCK_MODEL}/invoke-with-response-stream"),
            "request {i}"
        );
        let sent = body(request);
        assert!(sent.get("compaction").is_none(), "request {i}: {sent}");
        assert!(
            !sent.to_string().contains("compact-2026-09-04"),
            "request {i}"
        );
    }
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    // The local summary replaced what it summarized.
    let after = body(&requests[3]).to_string();
    assert!(
        after.contains("big.txt and medium.txt were read"),
        "{after}"
    );
    assert!(!after.contains("Step 0:"), "{after}");
}
