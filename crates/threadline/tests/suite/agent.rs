//! The `Agent` with its real hooks, over loopback against the mock (HTTP client, simulated
//! usage): autocompact whose summary request goes through the same service, reactive
//! compaction after `prompt is too long`, cache markers, `@` mentions, the transcript, and a
//! session that continues across runs. Every request the mock received passed `validate`.

#[path = "agent/binding.rs"]
mod binding;
#[cfg(feature = "restate")]
#[path = "agent/durable.rs"]
mod durable;
#[path = "agent/feature_flags.rs"]
mod feature_flags;
#[path = "agent/sessions.rs"]
mod sessions;
#[path = "agent/subagents.rs"]
mod subagents;
#[path = "agent/summary_request.rs"]
mod summary_request;

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline::attach::Workspace;
use threadline::client::{ApiKey, Auth, Client, ClientConfig};
use threadline::compact::{ReattachOptions, TailOptions, estimate_context, overhead_of};
use threadline::message::{CompactTrigger, Message, SystemKind};
use threadline::query::{Event, Terminal, Transition};
use threadline::tools::ReadFile;
use threadline::wire::{CountTokensRequest, MessagesRequest, Usage};
use threadline::{Agent, ClientTokenCounter, Compaction};
use threadline_mock::{
    EstimateUsage, MockConfig, MockServer, RecordedRequest, Scenario, Step, UsageModel,
};

/// A workspace with a large and a medium file (about 3,000 and 1,000 tokens).
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
    std::fs::write(dir.path().join("notes.txt"), "NOTE: buy oat milk\n").expect("notes");
    dir
}

fn client(mock: &MockServer) -> Client {
    let auth = Auth::ApiKey(ApiKey::new("sk-ant-test").expect("key"));
    Client::new(ClientConfig::new(mock.base_url(), auth)).expect("client")
}

fn read(path: &str) -> Step {
    Step::tool_use("Read", json!({"path": path}))
}

/// Compaction small enough for a short session: the summary keeps a one-unit tail.
fn small_compaction(autocompact_at: Option<u64>) -> Compaction {
    let mut compaction = Compaction::default().with_tail(TailOptions {
        min_tokens: 100,
        min_text_messages: 1,
        max_tokens: 2_000,
    });
    compaction.autocompact.reattach = ReattachOptions {
        max_files: 0,
        file_tokens: 0,
        total_tokens: 0,
    };
    match autocompact_at {
        Some(tokens) => compaction.autocompact_at(tokens),
        None => compaction,
    }
}

fn agent(mock: &MockServer, dir: &Path, compaction: Compaction) -> Agent<Client> {
    let workspace = Arc::new(Workspace::new(dir).expect("workspace"));
    Agent::builder(client(mock))
        .system_prompt("You read files.")
        .workspace(dir)
        .tool(ReadFile::new(workspace))
        .compaction(compaction)
        .today("2026-03-08")
        .transcript(dir.join("session.jsonl"))
        .build()
        .expect("agent")
}

async fn run(agent: &mut Agent<Client>, prompt: &str) -> Vec<Event> {
    agent.run(prompt).collect().await
}

fn finished(events: &[Event]) -> (Terminal, Vec<Transition>) {
    match events.last() {
        Some(Event::Finished(finished)) => (finished.terminal.clone(), finished.state.path.clone()),
        other => panic!("the last event is Finished, got {other:?}"),
    }
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

fn body(request: &RecordedRequest) -> &Value {
    request.body.as_ref().expect("a JSON body")
}

fn all_accepted(mock: &MockServer) {
    for (i, request) in mock.requests().iter().enumerate() {
        assert!(
            request.status == Some(200) || request.status == Some(400),
            "request {i} answered {:?}",
            request.status
        );
    }
}

/// The model reads big.txt, then medium.txt (the second read passes `small_compaction`'s
/// threshold of 3,900 tokens), summarizes when asked, then answers.
async fn two_reads_and_a_summary() -> MockServer {
    MockServer::start(Scenario::new([
        read("big.txt"),
        read("medium.txt"),
        Step::text("<summary>Two files were read: big.txt and medium.txt.</summary>"),
        Step::text("Both files are read."),
    ]))
    .await
    .expect("mock")
}

#[tokio::test(flavor = "current_thread")]
async fn autocompact_asks_the_model_for_the_summary_through_the_same_service() {
    let dir = workspace();
    let mock = two_reads_and_a_summary().await;
    let mut agent = agent(&mock, dir.path(), small_compaction(Some(3_900)));
    let events = run(&mut agent, "Read big.txt, then medium.txt.").await;
    let (terminal, path) = finished(&events);
    assert_eq!(terminal, Terminal::Completed);
    assert_eq!(path, [Transition::NextTurn, Transition::NextTurn]);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);

    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.status == Some(200)));
    // The third request is the summary request: the main request plus the instruction (it
    // used to differ in `tool_choice: none`, which invalidates the cached messages).
    let summary = body(&requests[2]);
    summary_request::assert_summary_extends(&requests[1], &requests[2]);
    assert!(summary.to_string().contains("BIG-FILE-LINE-0000"));
    // After it, the model sees the summary and the tail, not the big file.
    let after = body(&requests[3]).to_string();
    assert!(after.contains("Two files were read"), "{after}");
    assert!(!after.contains("BIG-FILE-LINE-0000"));
    assert!(after.contains("medium line 000"));
    // Cache markers from threadline-cache's planner.
    assert!(
        requests
            .iter()
            .all(|r| body(r).to_string().contains("cache_control"))
    );

    // Every message went to the transcript as it was produced.
    let transcript = std::fs::read_to_string(dir.path().join("session.jsonl")).expect("transcript");
    assert!(transcript.contains("compact_boundary"));
    assert!(transcript.lines().count() >= 8);
}

/// A compaction keeps the latest messages after its summary as copies, under their ids.
/// Read back from the transcript and from a session store, the session is the one the
/// agent holds — copies included (they are what the next request sends) — and an agent
/// resumed from the store sends them: the session is not lost at its first compaction.
#[tokio::test(flavor = "current_thread")]
async fn a_compacted_session_reads_back_with_the_messages_the_compaction_kept() {
    use std::collections::HashSet;
    use threadline::store::{MemoryStore, SessionKey, SessionStore};

    let dir = workspace();
    let mock = two_reads_and_a_summary().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let key = SessionKey::new("-work-project", "session-compacted").expect("key");
    let workspace_handle = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let builder = |mock: &MockServer| {
        Agent::builder(client(mock))
            .system_prompt("You read files.")
            .workspace(dir.path())
            .tool(ReadFile::new(Arc::clone(&workspace_handle)))
            .compaction(small_compaction(Some(3_900)))
            .today("2026-03-08")
            .shared_store(Arc::clone(&store), key.clone())
    };
    let mut agent = builder(&mock)
        .transcript(dir.path().join("session.jsonl"))
        .build()
        .expect("agent");
    let events = run(&mut agent, "Read big.txt, then medium.txt.").await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    let live = agent.state().messages.clone();
    let mut ids = HashSet::new();
    assert!(
        !live.iter().all(|m| ids.insert(m.id().clone())),
        "the compaction kept copies under their ids (else this test shows nothing)"
    );

    let transcript =
        threadline::message::read_transcript(dir.path().join("session.jsonl")).expect("reads");
    assert_eq!(transcript.problems, []);
    assert_eq!(
        transcript.messages, live,
        "the transcript reads back as the session"
    );
    let stored = threadline::load_session(store.as_ref(), &key)
        .await
        .expect("loads");
    assert_eq!(stored, live, "the store reads back as the session");

    // Resumed from the store, the next request carries what the compaction kept.
    let next = MockServer::start(Scenario::new([Step::text("Resumed.")]))
        .await
        .expect("mock");
    let mut resumed = builder(&next).resume().await.expect("resumes");
    assert_eq!(resumed.state().messages, live);
    let events = run(&mut resumed, "Go on.").await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    let sent = body(&next.requests()[0]).to_string();
    assert!(sent.contains("Two files were read"), "{sent}");
    assert!(sent.contains("medium line 000"), "the kept tail: {sent}");
    all_accepted(&mock);
    all_accepted(&next);
}

/// After an autocompact, the loop's estimate of the next request is its own count
/// of the compacted context, not the usage the kept tail recorded for the longer context
/// before it (which would make the next turn compact again). The estimate is what the policy
/// computes (`estimate_context` with the system prompt's and tools' `overhead_of`) for the
/// history as it stood when the request was sent; the mock counts the request it received.
#[tokio::test(flavor = "current_thread")]
async fn after_autocompact_the_next_request_is_estimated_within_a_fifth_of_the_mock_count() {
    let dir = workspace();
    let mock = two_reads_and_a_summary().await;
    let mut agent = agent(&mock, dir.path(), small_compaction(Some(3_900)));
    let events = run(&mut agent, "Read big.txt, then medium.txt.").await;
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    // The history before the last answer: what the loop held when it sent request 3.
    let history: Vec<Message> = events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    let last_answer = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
        .expect("an answer");
    let sent = &history[..last_answer];
    assert!(sent.iter().any(|m| matches!(m, Message::System(s)
        if matches!(s.kind, SystemKind::CompactBoundary { .. }))));
    let mut request: MessagesRequest =
        serde_json::from_value(body(&requests[3]).clone()).expect("a request");
    request.messages.clear();
    let estimate = estimate_context(sent, overhead_of(&request));
    let counted = EstimateUsage
        .usage(&request, requests[3].body_bytes, 0)
        .input_tokens
        .expect("counted");
    let error = (estimate as f64 - counted as f64).abs() / counted as f64;
    assert!(
        error <= 0.2,
        "estimate {estimate} vs the mock's {counted}: {:.0}% off",
        error * 100.0
    );
}

/// The mock's usage, with `count_tokens` answering a fixed count.
struct FixedCount(u64);

impl UsageModel for FixedCount {
    fn usage(&self, request: &MessagesRequest, request_bytes: usize, output_tokens: u64) -> Usage {
        EstimateUsage.usage(request, request_bytes, output_tokens)
    }
    fn count_tokens(&self, _request: &CountTokensRequest, _request_bytes: usize) -> u64 {
        self.0
    }
}

async fn mock_counting(steps: Vec<Step>, count: u64) -> MockServer {
    let config =
        MockConfig::new(Scenario::new(steps)).with_usage_model(Arc::new(FixedCount(count)));
    MockServer::start_with(config).await.expect("mock")
}

fn count_requests(mock: &MockServer) -> usize {
    mock.requests()
        .iter()
        .filter(|r| r.path.ends_with("/count_tokens"))
        .count()
}

/// The estimate says the threshold is reached; the API's exact count says it is not, and no
/// compaction (no summary call) happens.
#[tokio::test(flavor = "current_thread")]
async fn an_exact_count_under_the_threshold_spares_a_compaction() {
    let dir = workspace();
    let steps = vec![
        read("big.txt"),
        read("medium.txt"),
        Step::text("Both files are read."),
    ];
    let mock = mock_counting(steps, 1_000).await;
    let counter = ClientTokenCounter::new(client(&mock));
    let compaction = small_compaction(Some(3_900)).with_token_counter(counter);
    let mut agent = agent(&mock, dir.path(), compaction);
    let events = run(&mut agent, "Read big.txt, then medium.txt.").await;
    let (terminal, path) = finished(&events);
    assert_eq!(terminal, Terminal::Completed);
    assert_eq!(path, [Transition::NextTurn, Transition::NextTurn]);
    assert!(compactions(&events).is_empty());
    assert!(count_requests(&mock) >= 1, "the count was asked for");
    all_accepted(&mock);
}

/// Below the threshold but within the band, the estimate alone would not compact; the exact
/// count says the threshold is reached, and the history is compacted.
#[tokio::test(flavor = "current_thread")]
async fn an_exact_count_over_the_threshold_compacts_before_the_estimate_would() {
    let steps = || {
        vec![
            read("big.txt"),
            read("medium.txt"),
            Step::text("<summary>Two files were read: big.txt and medium.txt.</summary>"),
            Step::text("Both files are read."),
        ]
    };
    // Without a counter: no compaction at this threshold.
    let dir = workspace();
    let mock = mock_counting(steps(), 1_000_000).await;
    let mut plain = agent(&mock, dir.path(), small_compaction(Some(BAND_THRESHOLD)));
    let events = run(&mut plain, "Read big.txt, then medium.txt.").await;
    assert!(compactions(&events).is_empty());
    assert_eq!(count_requests(&mock), 0);

    // With one that counts more than the threshold: compacted.
    let dir = workspace();
    let mock = mock_counting(steps(), 1_000_000).await;
    let counter = ClientTokenCounter::new(client(&mock));
    let compaction = small_compaction(Some(BAND_THRESHOLD)).with_token_counter(counter);
    let mut counting = agent(&mock, dir.path(), compaction);
    let events = run(&mut counting, "Read big.txt, then medium.txt.").await;
    let (terminal, _) = finished(&events);
    assert_eq!(terminal, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    assert!(count_requests(&mock) >= 1);
    all_accepted(&mock);
}

/// A counter that always fails: the estimate decides, as if there were no counter.
struct Unreachable;

impl threadline::wire::service::CountTokens for Unreachable {
    fn count_tokens(
        &self,
        _request: CountTokensRequest,
    ) -> threadline::wire::service::CountFuture<'_> {
        Box::pin(async {
            Err(threadline::wire::service::ServiceError::new(
                threadline::wire::service::ServiceErrorKind::Connection,
                "no route to the API",
            ))
        })
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_count_leaves_the_decision_to_the_estimate() {
    let dir = workspace();
    let mock = mock_counting(
        vec![
            read("big.txt"),
            read("medium.txt"),
            Step::text("<summary>Two files were read: big.txt and medium.txt.</summary>"),
            Step::text("Both files are read."),
        ],
        1,
    )
    .await;
    let compaction = small_compaction(Some(3_900)).with_token_counter(Unreachable);
    let mut counting = agent(&mock, dir.path(), compaction);
    let events = run(&mut counting, "Read big.txt, then medium.txt.").await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    assert_eq!(compactions(&events), [CompactTrigger::Auto]);
    all_accepted(&mock);
}

/// A threshold just above the largest estimate of the session above (a little over 5,000
/// tokens: 5,100 is not reached, 5,000 is), so that only the exact count reaches it, while
/// the estimate is within the band (90 % of it, 4,860).
const BAND_THRESHOLD: u64 = 5_400;

#[tokio::test(flavor = "current_thread")]
async fn prompt_too_long_is_recovered_by_a_reactive_compaction() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        read("big.txt"),
        read("medium.txt"),
        // The estimate is ~4,400 tokens; the API counts 5,000 against a 4,000 maximum.
        Step::prompt_too_long(5_000, 4_000),
        Step::text("<summary>Two files were read.</summary>"),
        Step::text("Done."),
    ]))
    .await
    .expect("mock");
    let mut agent = agent(&mock, dir.path(), small_compaction(None));
    let events = run(&mut agent, "Read big.txt, then medium.txt.").await;
    let (terminal, path) = finished(&events);
    assert_eq!(terminal, Terminal::Completed);
    assert_eq!(
        path,
        [
            Transition::NextTurn,
            Transition::NextTurn,
            Transition::ReactiveCompactRetry
        ]
    );
    assert_eq!(compactions(&events), [CompactTrigger::Reactive]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    // The summary request is the refused main request plus the instruction.
    summary_request::assert_summary_extends(&requests[2], &requests[3]);
    assert!(
        !body(&requests[4])
            .to_string()
            .contains("BIG-FILE-LINE-0000")
    );
    all_accepted(&mock);
}

/// A body over the API's size limit (the mock's, set to 40 kB here, 32 MB by default) is
/// answered 413 `request_too_large`, and recovered like a prompt too long: a reactive
/// compaction whose own summary request, too large as well, drops its oldest round first.
#[tokio::test(flavor = "current_thread")]
async fn a_body_over_the_size_limit_is_recovered_by_a_reactive_compaction() {
    let dir = workspace();
    let limits = threadline_mock::ServerLimits::default().with_max_body_bytes(40_000);
    let scenario = Scenario::new([
        read("big.txt"),
        Step::text("First."),
        read("big.txt"),
        Step::text("Second."),
        read("big.txt"),
        Step::text("<summary>big.txt was read three times.</summary>"),
        Step::text("Third."),
    ]);
    let mock = MockServer::start_with(MockConfig::new(scenario).with_limits(limits))
        .await
        .expect("mock");
    let mut agent = agent(&mock, dir.path(), small_compaction(None));
    for prompt in ["Read big.txt.", "Again.", "Once more."] {
        let events = run(&mut agent, prompt).await;
        assert_eq!(finished(&events).0, Terminal::Completed, "{prompt}");
        if prompt == "Once more." {
            assert_eq!(compactions(&events), [CompactTrigger::Reactive]);
            assert_eq!(
                finished(&events).1,
                [Transition::NextTurn, Transition::ReactiveCompactRetry]
            );
        }
    }
    let statuses: Vec<Option<u16>> = mock.requests().iter().map(|r| r.status).collect();
    // The main request and the first summary request are refused for their size; the
    // summary request without its oldest round, and the retry, are accepted.
    assert_eq!(
        statuses.iter().filter(|s| **s == Some(413)).count(),
        2,
        "{statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&Some(200)));
    let last = mock.requests().last().map(|r| r.body_bytes).unwrap_or(0);
    assert!(last < 40_000, "{last}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_session_continues_across_runs_with_mentions_attached() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        Step::text("Hello, how can I help?"),
        Step::text("You need oat milk."),
    ]))
    .await
    .expect("mock");
    let mut agent = agent(&mock, dir.path(), Compaction::default());
    let first = run(&mut agent, "Hi").await;
    assert_eq!(finished(&first).0, Terminal::Completed);
    let second = run(&mut agent, "What does @notes.txt say?").await;
    assert_eq!(finished(&second).0, Terminal::Completed);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let second = body(&requests[1]).to_string();
    // The first exchange is still there, and the mention was attached from the workspace.
    assert!(second.contains("Hello, how can I help?"));
    assert!(second.contains("NOTE: buy oat milk"));
    // The workspace's context: its directory in the system prompt, the date up front.
    assert!(
        body(&requests[0])["system"]
            .to_string()
            .contains("workingDirectory")
    );
    assert!(body(&requests[0]).to_string().contains("2026-03-08"));
    assert_eq!(
        agent
            .state()
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant(_)))
            .count(),
        2
    );
    all_accepted(&mock);
}

#[test]
fn a_bad_workspace_or_date_is_a_build_error() {
    let service = threadline::query::scripted::ScriptedService::new([]);
    let error = Agent::builder(service.clone())
        .workspace("/definitely/not/here")
        .build()
        .expect_err("no such directory");
    assert!(
        error
            .to_string()
            .starts_with("/definitely/not/here: not a usable workspace")
    );
    let error = Agent::builder(service)
        .today("March 8")
        .build()
        .expect_err("not a date");
    assert!(error.to_string().contains("YYYY-MM-DD"));
}

#[tokio::test(flavor = "current_thread")]
async fn stop_hooks_are_kept_across_runs() {
    use threadline::query::scripted::{Reply, Response, ScriptedService};
    use threadline::query::{StopContext, StopDecision};
    use threadline::wire::StopReason;

    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .text("Done.")
                .stop(StopReason::EndTurn),
        ),
        Reply::stream(
            Response::new("msg_2")
                .text("Tests pass.")
                .stop(StopReason::EndTurn),
        ),
        Reply::stream(
            Response::new("msg_3")
                .text("Again.")
                .stop(StopReason::EndTurn),
        ),
    ]);
    // Blocks the first end of turn it sees, allows every later one: the count lives in the
    // hook, so a second run must see the same hook.
    let mut seen = 0u32;
    let hook = move |_ctx: StopContext<'_>| {
        seen += 1;
        if seen == 1 {
            StopDecision::Block {
                message: "Run the tests first.".to_owned(),
            }
        } else {
            StopDecision::Allow
        }
    };
    let mut agent = Agent::builder(service.clone())
        .stop_hook(hook)
        .today("2026-03-08")
        .build()
        .expect("agent");
    let first = agent.run("Fix it.").collect::<Vec<_>>().await;
    assert_eq!(
        finished(&first),
        (Terminal::Completed, vec![Transition::StopHookBlocking])
    );
    let second = agent.run("And again.").collect::<Vec<_>>().await;
    assert_eq!(finished(&second), (Terminal::Completed, vec![]));
    assert_eq!(service.requests().len(), 3);
    assert!(service.violations().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn an_agent_built_with_a_history_resumes_it_and_appends_only_what_it_adds() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([Step::text("It said hello.")]))
        .await
        .expect("mock");
    let history = vec![
        Message::user_text("Say hello"),
        Message::assistant_fragment(
            "msg_old",
            "claude-sonnet-4-5",
            vec![threadline::wire::ContentBlock::text("HELLO-FROM-BEFORE")],
        ),
    ];
    let transcript = dir.path().join("resumed.jsonl");
    let mut agent = Agent::builder(client(&mock))
        .system_prompt("You read files.")
        .today("2026-03-08")
        .history(history.clone())
        .transcript(&transcript)
        .build()
        .expect("agent");
    let events = run(&mut agent, "What did you say?").await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let sent = body(&requests[0]).to_string();
    assert!(sent.contains("HELLO-FROM-BEFORE"), "{sent}");
    assert!(sent.contains("What did you say?"), "{sent}");
    let state = agent.state();
    assert_eq!(&state.messages[..2], &history[..]);
    // The transcript holds only what this run added.
    let written = std::fs::read_to_string(&transcript).expect("written");
    assert!(!written.contains("HELLO-FROM-BEFORE"));
    assert!(written.contains("It said hello."));
    all_accepted(&mock);
}

#[tokio::test(flavor = "current_thread")]
async fn an_agent_with_automatic_caching_and_cache_diagnostics() {
    use threadline::cache::{Automatic, Planner};
    use threadline::query::Agreement;
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([
        Step::text("Hello, how can I help?"),
        Step::text("You need oat milk."),
    ]))
    .await
    .expect("mock");
    let workspace = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let mut agent = Agent::builder(client(&mock))
        .system_prompt("You read files.")
        .workspace(dir.path())
        .tool(ReadFile::new(workspace))
        .today("2026-03-08")
        .cache_planner(Planner::new(Automatic::default()))
        .cache_diagnostics()
        .build()
        .expect("agent");
    let first = run(&mut agent, "Hi").await;
    let second = run(&mut agent, "What now?").await;
    assert_eq!(finished(&second).0, Terminal::Completed);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.status, Some(200));
        assert_eq!(body(request)["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(
            request.headers.get("anthropic-beta").map(String::as_str),
            Some("cache-diagnosis-2026-04-07")
        );
    }
    assert_eq!(
        body(&requests[0])["diagnostics"],
        json!({"previous_message_id": null})
    );
    // The second run goes on from the first run's response, and the shared detector compares
    // with the first run's request: an append, as the mock says too.
    let reports: Vec<_> = first
        .iter()
        .chain(&second)
        .filter_map(|e| match e {
            Event::CacheDiagnosis(report) => Some(report.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reports.len(), 2);
    assert_eq!(
        body(&requests[1])["diagnostics"]["previous_message_id"],
        json!(reports[0].api_message_id)
    );
    assert_eq!(reports[0].agreement, Agreement::Inconclusive);
    assert_eq!(reports[1].agreement, Agreement::Agrees, "{:?}", reports[1]);
}

/// `Compaction::server`: where the model supports it, every request carries the
/// `compact_20260112` edit (and the client its beta) and the local autocompact stays off even
/// over its threshold; where it does not, the request carries no edit and the local
/// autocompact runs as before.
#[tokio::test(flavor = "current_thread")]
async fn server_compaction_replaces_the_local_autocompact_where_the_model_supports_it() {
    for (model, server) in [("claude-sonnet-4-6", true), ("claude-haiku-4-5", false)] {
        let dir = workspace();
        let mut steps = vec![read("big.txt"), read("medium.txt")];
        if !server {
            steps.push(Step::text("<summary>Two files were read.</summary>"));
        }
        steps.push(Step::text("Both files are read."));
        let mock = MockServer::start(Scenario::new(steps)).await.expect("mock");
        let mut compaction = small_compaction(Some(3_900));
        compaction = compaction.with_server(
            threadline::CompactionMode::Server,
            threadline::ServerCompaction::default().with_trigger(60_000),
        );
        let workspace_handle = Arc::new(Workspace::new(dir.path()).expect("workspace"));
        let mut agent = Agent::builder(client(&mock))
            .model(model)
            .system_prompt("You read files.")
            .workspace(dir.path())
            .tool(ReadFile::new(workspace_handle))
            .compaction(compaction)
            .today("2026-03-08")
            .build()
            .expect("agent");
        let events = run(&mut agent, "Read big.txt, then medium.txt.").await;
        let (terminal, path) = finished(&events);
        assert_eq!(terminal, Terminal::Completed, "{model}");
        assert_eq!(
            path,
            [Transition::NextTurn, Transition::NextTurn],
            "{model}"
        );
        let requests = mock.requests();
        assert!(requests.iter().all(|r| r.status == Some(200)), "{model}");
        let edit = json!({"edits": [{"type": "compact_20260112",
            "trigger": {"type": "input_tokens", "value": 60000}, "pause_after_compaction": false}]});
        if server {
            assert_eq!(compactions(&events), [], "{model}: no local autocompact");
            assert_eq!(requests.len(), 3);
            assert!(
                requests
                    .iter()
                    .all(|r| body(r)["context_management"] == edit)
            );
            assert!(requests.iter().all(|r| {
                r.headers.get("anthropic-beta").map(String::as_str) == Some("compact-2026-01-12")
            }));
        } else {
            assert_eq!(compactions(&events), [CompactTrigger::Auto], "{model}");
            assert_eq!(requests.len(), 4);
            assert!(
                requests
                    .iter()
                    .all(|r| body(r).get("context_management").is_none())
            );
            assert!(
                requests
                    .iter()
                    .all(|r| !r.headers.contains_key("anthropic-beta"))
            );
        }
    }
}

/// The caller's own context edits stay beside the server-side compaction edit, in their
/// order and before it (`clear_thinking` must come first).
#[tokio::test(flavor = "current_thread")]
async fn server_compaction_keeps_the_callers_own_context_edits() {
    let dir = workspace();
    let mock = MockServer::start(Scenario::new([Step::text("Hello.")]))
        .await
        .expect("mock");
    let own: threadline_wire::request::ContextManagement = serde_json::from_value(json!({
        "edits": [{"type": "clear_tool_uses_20250919"}, {"type": "compact_20260112"}]
    }))
    .expect("edits");
    let compaction = small_compaction(None).with_server(
        threadline::CompactionMode::Server,
        threadline::ServerCompaction::default().with_trigger(60_000),
    );
    let mut agent = Agent::builder(client(&mock))
        .model("claude-sonnet-4-6")
        .system_prompt("You read files.")
        .workspace(dir.path())
        .context_management(own)
        .compaction(compaction)
        .today("2026-03-08")
        .build()
        .expect("agent");
    let events = run(&mut agent, "Hi").await;
    assert_eq!(finished(&events).0, Terminal::Completed);
    let requests = mock.requests();
    assert_eq!(
        body(&requests[0])["context_management"],
        json!({"edits": [{"type": "clear_tool_uses_20250919"}, {"type": "compact_20260112",
            "trigger": {"type": "input_tokens", "value": 60000}, "pause_after_compaction": false}]})
    );
    assert_eq!(
        requests[0]
            .headers
            .get("anthropic-beta")
            .map(String::as_str),
        Some("context-management-2025-06-27,compact-2026-01-12")
    );
}
