//! The driver on the in-memory journal: crash at every journal entry (before and after its
//! work), replay, and compare with a crash-free run byte for byte.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use threadline_message::Message;
use threadline_message::determinism::Source;
use threadline_query::recovery::INTERRUPTED;
use threadline_query::{
    AttachmentHook, Permission, QueryConfig, Tool, ToolContext, ToolOutput, ToolStream, tool_result,
};
use threadline_wire::service::{EventStreamFuture, ServiceError};
use threadline_wire::{MessagesRequest, ResponseMessage};

use super::records::message_events;
use super::{PermissionMode, ShowRequest, TurnError, TurnLoop, TurnOutcome, TurnRequest};
use crate::journal::JournalError;
use crate::journal_recording::{Crash, RecordingJournal};
use crate::worker::Worker;

/// A model that answers from the request alone: a fresh prompt gets two tool uses (`write`
/// then `read`), tool results get a text answer. It records every request's bytes.
#[derive(Clone, Default)]
struct Model {
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Input tokens reported per message of the request (0: one).
    tokens_per_message: u64,
    /// Summary requests fail (a failed compaction).
    failing_summaries: bool,
}

impl Model {
    fn requests(&self) -> Vec<Vec<u8>> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

fn answer(request: &Value, tokens_per_message: u64) -> ResponseMessage {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let n = messages.len();
    let input = n as u64 * tokens_per_message.max(1);
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if asks_for_summary(request) {
        // An autocompact summary request.
        let text = format!("<summary>{n} messages of work</summary>");
        let message = json!({"id": format!("msg_summary_{n}"), "type": "message", "role": "assistant",
               "model": "m", "content": [{"type": "text", "text": text}],
               "stop_reason": "end_turn", "usage": {"input_tokens": input, "output_tokens": 7}});
        return serde_json::from_value(message).unwrap_or_else(|e| panic!("a message: {e}"));
    }
    let has_results = last["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    let message = if has_results {
        json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "m",
               "content": [{"type": "text", "text": format!("done after {n} messages")}],
               "stop_reason": "end_turn", "usage": {"input_tokens": input, "output_tokens": 5}})
    } else {
        json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "m",
               "content": [
                   {"type": "text", "text": "working"},
                   {"type": "tool_use", "id": format!("toolu_{n}_w"), "name": "write", "input": {"path": "a"}},
                   {"type": "tool_use", "id": format!("toolu_{n}_r"), "name": "read", "input": {"path": "a"}}],
               "stop_reason": "tool_use", "usage": {"input_tokens": input, "output_tokens": 9}})
    };
    serde_json::from_value(message).unwrap_or_else(|e| panic!("a message: {e}"))
}

impl tower_service::Service<MessagesRequest> for Model {
    type Response = threadline_wire::service::EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: MessagesRequest) -> EventStreamFuture {
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(bytes);
        }
        if self.failing_summaries && asks_for_summary(&value) {
            return Box::pin(async {
                Err(ServiceError::new(
                    threadline_wire::service::ServiceErrorKind::Connection,
                    "the summary failed",
                ))
            });
        }
        let events: Vec<_> = message_events(answer(&value, self.tokens_per_message))
            .into_iter()
            .map(Ok)
            .collect();
        Box::pin(async move {
            let stream: threadline_wire::service::EventStream =
                Box::pin(futures::stream::iter(events));
            Ok(stream)
        })
    }
}

/// Counts its runs per tool use id.
#[derive(Clone)]
struct Counting {
    name: &'static str,
    idempotent: bool,
    ask: bool,
    runs: Arc<Mutex<BTreeMap<String, u32>>>,
}

impl Counting {
    fn new(name: &'static str, idempotent: bool) -> Counting {
        Counting {
            name,
            idempotent,
            ask: false,
            runs: Arc::default(),
        }
    }

    fn runs(&self) -> BTreeMap<String, u32> {
        self.runs.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Tool for Counting {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "counts"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_idempotent(&self, _input: &Value) -> bool {
        self.idempotent
    }
    fn check_permission(&self, _input: &Value) -> Permission {
        if self.ask {
            Permission::Ask {
                prompt: format!("run {}?", self.name),
            }
        } else {
            Permission::Allow
        }
    }
    fn call(&self, _input: Value, ctx: ToolContext) -> ToolStream {
        if let Ok(mut runs) = self.runs.lock() {
            *runs.entry(ctx.tool_use_id.clone()).or_default() += 1;
        }
        let text = format!("{} ok", self.name);
        tool_result(async move { ToolOutput::text(text) })
    }
}

struct Rig {
    model: Model,
    write: Counting,
    read: Counting,
    worker: Worker,
    journal: RecordingJournal,
}

fn rig(permission: PermissionMode, ask: bool) -> Rig {
    let model = Model::default();
    let mut write = Counting::new("write", false);
    write.ask = ask;
    let read = Counting::new("read", true);
    let worker = Worker::new(model.clone(), QueryConfig::new("m", 256))
        .with_tool(write.clone())
        .with_tool(read.clone())
        .with_permission(permission);
    Rig {
        model,
        write,
        read,
        worker,
        journal: RecordingJournal::new(),
    }
}

/// The clock the steps read (the outer scope stands for the wall clock).
fn clock() -> Source {
    Source::new(
        "wall",
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
    )
}

async fn attempt(rig: &Rig, prompt: &str) -> Result<TurnOutcome, TurnError> {
    rig.journal.begin();
    let run = super::run_turn(&rig.journal, &rig.worker, "s1", TurnRequest::new(prompt));
    let outcome = clock().scope(run).await;
    if outcome.is_ok() {
        rig.journal.complete();
    }
    outcome
}

/// Runs turn `prompt` until it completes (each crash costs one attempt).
async fn turn(rig: &Rig, prompt: &str) -> TurnOutcome {
    for _ in 0..5 {
        match attempt(rig, prompt).await {
            Ok(outcome) => return outcome,
            Err(TurnError::Journal(JournalError::Abandoned(_))) => continue,
            Err(other) => panic!("turn failed: {other}"),
        }
    }
    panic!("turn never completed")
}

async fn two_turns(rig: &Rig) -> (TurnOutcome, TurnOutcome) {
    let first = turn(rig, "first").await;
    let second = turn(rig, "second").await;
    (first, second)
}

/// The journal entries of the second turn, crash-free.
const SECOND_TURN_ENTRIES: [&str; 6] = [
    "clock",
    "model#0",
    "started:toolu_5_w",
    "tool:toolu_5_w",
    "tool:toolu_5_r",
    "model#1",
];

#[tokio::test]
async fn a_crash_free_session_journals_each_step_once_and_persists_the_history() {
    let rig = rig(PermissionMode::Deny, false);
    let (first, second) = two_turns(&rig).await;
    assert_eq!(terminal_name(&first.terminal), "completed");
    assert_eq!(first.text, "done after 3 messages");
    assert_eq!(second.turns, 2);
    assert_eq!(second.text, "done after 7 messages");
    assert_eq!(rig.model.requests().len(), 4);
    assert_eq!(
        rig.journal.executed()[6..],
        SECOND_TURN_ENTRIES.map(str::to_owned)
    );
    let committed = rig.journal.committed();
    assert_eq!(committed.get("len").map(Vec::as_slice), Some(&b"16"[..]));
    assert_eq!(committed.get("turns").map(Vec::as_slice), Some(&b"2"[..]));
    assert_eq!(
        committed.get("status").map(Vec::as_slice),
        Some(&b"\"idle\""[..])
    );
    assert!(committed.keys().all(|k| k != "ask"));
    let loop_state: Value =
        serde_json::from_slice(&committed["loop"]).unwrap_or_else(|e| panic!("loop: {e}"));
    assert_eq!(loop_state["messages"], json!([]));
    assert_eq!(loop_state["turn_count"], json!(2));
    assert_eq!(rig.write.runs().values().sum::<u32>(), 2);
    assert_eq!(rig.read.runs().values().sum::<u32>(), 2);

    let view = super::show(&rig.journal, &ShowRequest::since(8))
        .await
        .unwrap_or_else(|e| panic!("show: {e}"));
    assert_eq!(
        (
            view.status.as_str(),
            view.turns,
            view.message_count,
            view.since
        ),
        ("idle", 2, 16, 8)
    );
    assert_eq!(view.messages.len(), 8);
    assert_eq!(view.messages[0]["type"], "user");
    let names: Vec<&str> = view.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, SECOND_TURN_ENTRIES);
    assert!(view.steps.iter().all(|s| s.ok));
    assert_eq!(view.ask, None);
}

#[tokio::test]
async fn a_turn_writes_what_it_added_and_leaves_the_stored_history_as_it_was() {
    let baseline = rig(PermissionMode::Deny, false);
    two_turns(&baseline).await;

    let rig = rig(PermissionMode::Deny, false);
    turn(&rig, "first").await;
    // The first turn's messages stored in another form of the same JSON (pretty-printed):
    // a turn that serialized the history again to find what changed would rewrite them all.
    rig.journal.begin();
    for (key, bytes) in rig.journal.committed() {
        if key.starts_with("m/") {
            let value: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
            let pretty = serde_json::to_vec_pretty(&value).unwrap_or_else(|e| panic!("{e}"));
            assert_ne!(pretty, bytes);
            crate::journal::Journal::set(&rig.journal, &key, pretty);
        }
    }
    rig.journal.complete();
    let stored = rig.journal.committed();
    let first_turn = stored.keys().filter(|k| k.starts_with("m/")).count();
    assert_eq!(first_turn, 8);

    turn(&rig, "second").await;
    let after = rig.journal.committed();
    for (key, bytes) in stored.iter().filter(|(k, _)| k.starts_with("m/")) {
        assert_eq!(&after[key], bytes, "{key} was written again");
    }
    // The same session as the baseline's: the same requests, the same messages.
    assert_eq!(rig.model.requests(), baseline.model.requests());
    let parsed = |journal: &RecordingJournal| -> Vec<Value> {
        messages(journal)
            .iter()
            .map(|m| serde_json::from_str(m).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    };
    assert_eq!(parsed(&rig.journal), parsed(&baseline.journal));
    assert_eq!(
        messages(&rig.journal)[first_turn..],
        messages(&baseline.journal)[first_turn..]
    );
}

fn messages(journal: &RecordingJournal) -> Vec<String> {
    journal
        .committed()
        .into_iter()
        .filter(|(k, _)| k.starts_with("m/"))
        .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
        .collect()
}

#[tokio::test]
async fn a_crash_at_any_entry_replays_to_the_same_history_byte_for_byte() {
    let baseline = rig(PermissionMode::Deny, false);
    two_turns(&baseline).await;
    let expected = messages(&baseline.journal);
    let expected_requests = baseline.model.requests();
    assert_eq!(expected.len(), 16);

    for (index, name) in SECOND_TURN_ENTRIES.iter().enumerate() {
        for crash in [Crash::Before(index), Crash::After(index)] {
            let rig = rig(PermissionMode::Deny, false);
            turn(&rig, "first").await;
            rig.journal.crash(crash);
            let crashed = attempt(&rig, "second").await;
            assert!(
                matches!(crashed, Err(TurnError::Journal(JournalError::Abandoned(_)))),
                "{crash:?}: {crashed:?}"
            );
            turn(&rig, "second").await;
            let requests = rig.model.requests();
            if index == 3 {
                // The marker was journaled, the result was not: the write may have run (it
                // did, after its work), so it is interrupted, never run again.
                let ran = (crash == Crash::After(3)).then_some(&1);
                assert_eq!(rig.write.runs().get("toolu_5_w"), ran, "{crash:?}");
                let history = messages(&rig.journal);
                let same = history
                    .iter()
                    .zip(&expected)
                    .take_while(|(a, b)| a == b)
                    .count();
                let text = history[same..].concat();
                assert!(text.contains(INTERRUPTED), "{text}");
                assert!(text.contains("read ok"), "{text}");
                assert_eq!(requests[..3], expected_requests[..3]);
                assert_eq!(requests.len(), 4);
                continue;
            }
            assert_eq!(messages(&rig.journal), expected, "{crash:?}");
            // A journaled model call is never sent again; one cut mid-step is sent again
            // with the same bytes.
            let resent = usize::from(matches!(crash, Crash::After(1 | 5)));
            assert_eq!(requests.len(), 4 + resent, "{crash:?}");
            let mut deduped = requests.clone();
            deduped.dedup();
            assert_eq!(deduped, expected_requests, "{crash:?}");
            let write_runs = rig.write.runs().get("toolu_5_w").copied();
            assert_eq!(write_runs, Some(1), "{crash:?} {name}");
            let read_runs = rig.read.runs().get("toolu_5_r").copied();
            let rerun = u32::from(crash == Crash::After(4));
            assert_eq!(read_runs, Some(1 + rerun), "{crash:?} {name}");
        }
    }
}

#[tokio::test]
async fn a_cancelled_turn_leaves_a_valid_aborted_history() {
    let rig = rig(PermissionMode::Deny, false);
    turn(&rig, "first").await;
    rig.journal.cancel_at(3);
    let outcome = attempt(&rig, "second")
        .await
        .unwrap_or_else(|e| panic!("a cancelled turn still answers: {e}"));
    assert_eq!(terminal_name(&outcome.terminal), "aborted_tools");
    assert_eq!(rig.write.runs().get("toolu_5_w"), None);
    let history = messages(&rig.journal).concat();
    assert_eq!(history.matches(INTERRUPTED).count(), 2, "{history}");
    // The next turn continues from it.
    let next = turn(&rig, "third").await;
    assert_eq!(terminal_name(&next.terminal), "completed");
}

#[tokio::test]
async fn a_question_is_an_awakeable_and_its_answer_is_replayed() {
    let rig = rig(PermissionMode::Ask, true);
    rig.journal.answer(br#"{"allow": true}"#.to_vec());
    rig.journal.crash(Crash::Before(5));
    assert!(attempt(&rig, "first").await.is_err());
    let state = rig.journal.state();
    assert_eq!(
        state.get("status").map(Vec::as_slice),
        Some(&b"\"running\""[..])
    );
    let outcome = turn(&rig, "first").await;
    assert_eq!(rig.journal.asked(), ["awk_2", "awk_2"]);
    assert_eq!(rig.write.runs().get("toolu_1_w"), Some(&1));
    assert_eq!(outcome.text, "done after 3 messages");

    let denied = self::rig(PermissionMode::Ask, true);
    denied
        .journal
        .answer(br#"{"allow": false, "reason": "not today"}"#.to_vec());
    turn(&denied, "first").await;
    assert_eq!(denied.write.runs().get("toolu_1_w"), None);
    let history = messages(&denied.journal).concat();
    assert_eq!(history.matches("not today").count(), 1, "{history}");

    let default = self::rig(PermissionMode::Deny, true);
    turn(&default, "first").await;
    assert_eq!(default.write.runs().get("toolu_1_w"), None);
    assert!(default.journal.asked().is_empty());
}

#[tokio::test]
async fn a_repeated_turn_id_answers_the_last_outcome_without_running() {
    let rig = rig(PermissionMode::Deny, false);
    rig.journal.begin();
    let request = TurnRequest::new("first").with_turn_id("t1");
    let run = super::run_turn(&rig.journal, &rig.worker, "s1", request.clone());
    let first = clock().scope(run).await.unwrap_or_else(|e| panic!("{e}"));
    rig.journal.complete();
    rig.journal.begin();
    let run = super::run_turn(&rig.journal, &rig.worker, "s1", request);
    let again = clock().scope(run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, first);
    assert_eq!(rig.model.requests().len(), 2);
    let too_big = TurnRequest::new("x".repeat(super::MAX_STEP_BYTES + 1));
    let run = super::run_turn(&rig.journal, &rig.worker, "s1", too_big);
    assert!(matches!(run.await, Err(TurnError::PromptTooLarge { .. })));
}

/// A turn loop whose turn input and next-turn collections say how often they were collected:
/// a replay that collected again instead of taking the journaled messages would show it.
struct Collecting {
    plain: super::ConfigLoop,
    inputs: Arc<AtomicU32>,
    collections: Arc<AtomicU32>,
}

struct Collector(Arc<AtomicU32>);

impl AttachmentHook for Collector {
    fn collect<'a>(&'a mut self, _history: &'a [Message]) -> BoxFuture<'a, Vec<Message>> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        let text = format!("<attachment>collection {n}</attachment>");
        Box::pin(async move { vec![Message::user_text(text)] })
    }
}

impl TurnLoop for Collecting {
    fn query(
        &self,
        service: super::JournaledService,
    ) -> threadline_query::Query<super::JournaledService> {
        self.plain.query(service)
    }
    fn attachments(&self) -> Option<Box<dyn AttachmentHook>> {
        Some(Box::new(Collector(Arc::clone(&self.collections))))
    }
    fn input(
        &self,
        _history: &[Message],
        prompt: &str,
    ) -> Option<BoxFuture<'static, Vec<Message>>> {
        let inputs = Arc::clone(&self.inputs);
        let prompt = prompt.to_owned();
        Some(Box::pin(async move {
            let n = inputs.fetch_add(1, Ordering::SeqCst) + 1;
            vec![
                Message::user_text(prompt),
                Message::user_text(format!("<attachment>input {n}</attachment>")),
            ]
        }))
    }
    fn has_tool(&self, name: &str) -> bool {
        self.plain.has_tool(name)
    }
}

/// A rig whose worker runs a [`Collecting`] loop over the rig's model and tools.
fn collecting_rig() -> (Rig, Arc<AtomicU32>, Arc<AtomicU32>) {
    let rig = rig(PermissionMode::Deny, false);
    let inputs = Arc::new(AtomicU32::new(0));
    let collections = Arc::new(AtomicU32::new(0));
    let mut tools = threadline_query::ToolSet::new();
    tools.insert(Arc::new(rig.write.clone()));
    tools.insert(Arc::new(rig.read.clone()));
    let turn_loop = Collecting {
        plain: super::ConfigLoop {
            config: QueryConfig::new("m", 256),
            tools,
            planner: None,
            compaction: None,
        },
        inputs: Arc::clone(&inputs),
        collections: Arc::clone(&collections),
    };
    let rig = Rig {
        worker: rig.worker.clone().with_turn_loop(turn_loop),
        ..rig
    };
    (rig, inputs, collections)
}

/// The journal entries of a first turn with a [`Collecting`] loop, crash-free.
const COLLECTING_ENTRIES: [&str; 8] = [
    "clock",
    "input",
    "model#0",
    "started:toolu_1_w",
    "tool:toolu_1_w",
    "tool:toolu_1_r",
    "attach#0",
    "model#1",
];

#[tokio::test]
async fn a_turn_loops_input_and_collections_are_journaled_and_replayed_not_collected_again() {
    let (baseline, inputs, collections) = collecting_rig();
    let outcome = turn(&baseline, "first").await;
    assert_eq!(terminal_name(&outcome.terminal), "completed");
    assert_eq!(
        baseline.journal.executed(),
        COLLECTING_ENTRIES.map(str::to_owned)
    );
    assert_eq!(
        (
            inputs.load(Ordering::SeqCst),
            collections.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    let expected = messages(&baseline.journal);
    let requests = baseline.model.requests();
    // What was collected is what the model was sent.
    assert!(String::from_utf8_lossy(&requests[0]).contains("input 1"));
    assert!(String::from_utf8_lossy(&requests[1]).contains("collection 1"));
    // The worker's tools are the loop's.
    assert!(baseline.worker.has_tool("write") && !baseline.worker.has_tool("nope"));

    for (index, name) in COLLECTING_ENTRIES.iter().enumerate() {
        for crash in [Crash::Before(index), Crash::After(index)] {
            let (rig, inputs, collections) = collecting_rig();
            rig.journal.crash(crash);
            assert!(attempt(&rig, "first").await.is_err(), "{crash:?}");
            turn(&rig, "first").await;
            let history = messages(&rig.journal);
            match (crash, *name) {
                // The collection ran and died before it was journaled: it runs again.
                (Crash::After(_), "input") => {
                    assert_eq!(inputs.load(Ordering::SeqCst), 2, "{crash:?}");
                    assert!(history.concat().contains("input 2"), "{crash:?}");
                }
                (Crash::After(_), "attach#0") => {
                    assert_eq!(collections.load(Ordering::SeqCst), 2, "{crash:?}");
                    assert!(history.concat().contains("collection 2"), "{crash:?}");
                }
                // The marker was journaled, the write's result was not: interrupted.
                (_, "tool:toolu_1_w") => {
                    assert!(history.concat().contains(INTERRUPTED), "{crash:?}");
                    assert_eq!(history[..2], expected[..2], "{crash:?}");
                    assert_eq!(inputs.load(Ordering::SeqCst), 1, "{crash:?}");
                    assert_eq!(collections.load(Ordering::SeqCst), 1, "{crash:?}");
                }
                _ => {
                    // Journaled once, replayed after: never collected again.
                    assert_eq!(history, expected, "{crash:?} {name}");
                    assert_eq!(inputs.load(Ordering::SeqCst), 1, "{crash:?} {name}");
                    assert_eq!(collections.load(Ordering::SeqCst), 1, "{crash:?} {name}");
                }
            }
        }
    }
}

fn terminal_name(terminal: &threadline_query::Terminal) -> String {
    serde_json::to_value(terminal)
        .ok()
        .and_then(|v| v.get("terminal").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]

    /// Two independent runs of the same session (any prompt, hostile ones included, with
    /// autocompact rewriting the history or not) send the same request bytes and leave the
    /// same state bytes — one on a worker that keeps its sessions warm between turns, the
    /// other on one that loads every turn from the stored bytes.
    #[test]
    fn the_same_turns_give_byte_identical_requests_and_state_warm_or_cold(
        prompts in proptest::collection::vec("\\PC{0,40}|[\\x00-\\x1f\"\\\\]{1,8}", 1..4),
        compacting in proptest::bool::ANY,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build();
        let runtime = runtime.unwrap_or_else(|e| panic!("a runtime: {e}"));
        let run = |prompts: &[String], cache: usize| {
            let mut rig = if compacting {
                compacting_rig(2_000)
            } else {
                rig(PermissionMode::Deny, false)
            };
            rig.worker = rig.worker.clone().with_session_cache(cache);
            runtime.block_on(async {
                for prompt in prompts {
                    turn(&rig, prompt).await;
                }
            });
            (rig.model.requests(), rig.journal.committed(), rig.worker.session_cache())
        };
        let (a_requests, a_state, warm) = run(&prompts, crate::DEFAULT_SESSION_CACHE_BYTES);
        let (b_requests, b_state, cold) = run(&prompts, 0);
        proptest::prop_assert!(a_requests.len() >= 2 * prompts.len());
        proptest::prop_assert_eq!(a_requests, b_requests);
        proptest::prop_assert_eq!(a_state, b_state);
        let turns = prompts.len() as u64;
        proptest::prop_assert_eq!((warm.warm_turns, warm.cold_turns), (turns - 1, 1));
        proptest::prop_assert_eq!((cold.warm_turns, cold.cold_turns), (0, turns));
    }
}

#[tokio::test]
async fn a_kept_session_is_used_only_while_its_stored_bytes_are_what_the_worker_wrote() {
    let rig = rig(PermissionMode::Deny, false);
    two_turns(&rig).await;
    let stats = rig.worker.session_cache();
    assert_eq!(
        (stats.warm_turns, stats.cold_turns, stats.sessions),
        (1, 1, 1)
    );
    let stored: usize = rig
        .journal
        .committed()
        .iter()
        .filter(|(k, _)| k.starts_with("m/") || *k == "loop")
        .map(|(_, v)| v.len())
        .sum();
    assert_eq!(stats.bytes, stored);

    // Someone else edits the first prompt in the stored state (an operator, another worker):
    // the next turn sees the edit, not what this worker kept.
    let key = "m/00000000";
    let edited = String::from_utf8_lossy(&rig.journal.committed()[key]).replace("first", "edited");
    rig.journal.begin();
    crate::journal::Journal::set(&rig.journal, key, edited.into_bytes());
    rig.journal.complete();
    turn(&rig, "third").await;
    let stats = rig.worker.session_cache();
    assert_eq!((stats.warm_turns, stats.cold_turns), (1, 2));
    let requests = rig.model.requests();
    let third = String::from_utf8_lossy(&requests[4]);
    assert!(
        third.contains("edited") && !third.contains("\"first\""),
        "{third}"
    );

    // A turn repeated by its id answers from the kept session and keeps it.
    let rig = rig_with_turn_ids().await;
    let stats = rig.worker.session_cache();
    assert_eq!(
        (stats.warm_turns, stats.cold_turns, stats.sessions),
        (2, 1, 1)
    );
}

#[tokio::test]
async fn a_kept_session_carries_its_planners_memo_to_the_next_turn() {
    let rig = rig(PermissionMode::Deny, false);
    let memo_after = |rig: &Rig| {
        let kept = rig
            .worker
            .settings()
            .sessions
            .take("s1")
            .expect("the session is kept");
        let len = kept.memo.len();
        rig.worker.settings().sessions.put("s1", kept);
        len
    };
    turn(&rig, "first").await;
    let first = memo_after(&rig);
    // The memo holds the messages of the turn's last request.
    let last = serde_json::from_slice::<Value>(&rig.model.requests()[1]).expect("json");
    assert_eq!(Some(first), last["messages"].as_array().map(Vec::len));
    turn(&rig, "second").await;
    let second = memo_after(&rig);
    let last = serde_json::from_slice::<Value>(&rig.model.requests()[3]).expect("json");
    assert_eq!(Some(second), last["messages"].as_array().map(Vec::len));
    assert!(second > first, "{first} then {second}");
    assert_eq!(rig.worker.session_cache().warm_turns, 1);

    // A worker that keeps no session carries none.
    let rig = rig_cold();
    two_turns(&rig).await;
    assert!(rig.worker.settings().sessions.take("s1").is_none());
}

fn rig_cold() -> Rig {
    let mut rig = rig(PermissionMode::Deny, false);
    rig.worker = rig.worker.clone().with_session_cache(0);
    rig
}

/// A session whose one turn (id `t1`) was sent three times: run once, then answered twice.
async fn rig_with_turn_ids() -> Rig {
    let rig = rig(PermissionMode::Deny, false);
    for _ in 0..3 {
        rig.journal.begin();
        let request = TurnRequest::new("first").with_turn_id("t1");
        let run = super::run_turn(&rig.journal, &rig.worker, "s1", request);
        clock()
            .scope(run)
            .await
            .unwrap_or_else(|e| panic!("turn: {e}"));
        rig.journal.complete();
    }
    assert_eq!(rig.model.requests().len(), 2);
    rig
}

#[tokio::test]
async fn a_worker_keeps_no_session_larger_than_its_cache() {
    let mut rig = rig(PermissionMode::Deny, false);
    rig.worker = rig.worker.clone().with_session_cache(100);
    two_turns(&rig).await;
    let stats = rig.worker.session_cache();
    assert_eq!(
        (stats.warm_turns, stats.cold_turns, stats.sessions),
        (0, 2, 0)
    );
}

/// A `read` whose result is too big to journal.
struct Big;

impl Tool for Big {
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "big"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_idempotent(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        tool_result(async { ToolOutput::text("x".repeat(5000)) })
    }
}

#[tokio::test]
async fn a_result_over_the_journal_limit_is_journaled_as_an_error() {
    let mut rig = rig(PermissionMode::Deny, false);
    rig.worker = rig.worker.clone().with_tool(Big).with_max_step_bytes(4000);
    let outcome = turn(&rig, "first").await;
    assert_eq!(outcome.text, "done after 3 messages");
    let history = messages(&rig.journal).concat();
    assert!(!history.contains(&"x".repeat(4000)));
    assert_eq!(
        history
            .matches("is over the session journal's limit of 4000 bytes")
            .count(),
        1,
        "{history}"
    );
    assert!(history.contains("write ok"));
}

/// The rig with autocompact at `tokens`.
fn compacting_rig(tokens: u64) -> Rig {
    compacting_rig_with(tokens, false)
}

/// The rig with autocompact at `tokens`, whose summary requests fail if `failing_summaries`.
fn compacting_rig_with(tokens: u64, failing_summaries: bool) -> Rig {
    let mut rig = rig(PermissionMode::Deny, false);
    rig.model.tokens_per_message = 1_000;
    rig.model.failing_summaries = failing_summaries;
    rig.worker = Worker::new(
        rig.model.clone(),
        QueryConfig::new("claude-sonnet-4-5", 256),
    )
    .with_tool(rig.write.clone())
    .with_tool(rig.read.clone());
    rig.worker = rig.worker.clone().with_compaction(
        threadline_compact::Compaction::default()
            .autocompact_at(tokens)
            .with_tail(threadline_compact::TailOptions {
                min_tokens: 0,
                min_text_messages: 1,
                max_tokens: 50,
            }),
    );
    rig
}

/// The journal entries of the second turn of [`compacting_rig`]: the autocompact summary is
/// the first model step, then the turn runs on the compacted history.
const COMPACTING_TURN_ENTRIES: [&str; 7] = [
    "clock",
    "model#0",
    "model#1",
    "started:toolu_1_w",
    "tool:toolu_1_w",
    "tool:toolu_1_r",
    "model#2",
];

/// Whether a recorded request is an autocompact summary request.
fn is_summary(request: &[u8]) -> bool {
    serde_json::from_slice::<Value>(request).is_ok_and(|r| asks_for_summary(&r))
}

/// Whether `request` ends with the summary instruction (a summary request is the main
/// request plus it).
fn asks_for_summary(request: &Value) -> bool {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|last| last["content"].as_array())
        .and_then(|blocks| blocks.last())
        .is_some_and(|block| block["text"] == threadline_compact::summarizer::SUMMARY_PROMPT)
}

#[tokio::test]
async fn the_compaction_breaker_is_kept_with_the_session_across_turns() {
    // Every summary request fails: each compaction fails. The breaker's count lives in the
    // session's loop state, so it opens after `LIMIT` failures however many turns (each a
    // fresh loop, possibly on another worker) they are spread over.
    // A turn that reaches the blocking limit makes one last attempt whatever the breaker
    // says (the alternative is stopping there), and stops there when it fails.
    let rig = compacting_rig_with(2_000, true);
    let mut blocked = 0;
    for prompt in ["one", "two", "three", "four"] {
        let outcome = turn(&rig, prompt).await;
        blocked += usize::from(matches!(
            outcome.terminal,
            threadline_query::Terminal::BlockingLimit { .. }
        ));
    }
    let summaries = rig
        .model
        .requests()
        .iter()
        .filter(|r| is_summary(r))
        .count();
    let limit = threadline_compact::CircuitBreaker::LIMIT;
    assert!(blocked >= 1, "the session reached the blocking limit");
    assert_eq!(
        summaries,
        usize::try_from(limit).unwrap_or(usize::MAX) + blocked
    );
    let loop_state: Value = serde_json::from_slice(&rig.journal.committed()["loop"])
        .unwrap_or_else(|e| panic!("loop: {e}"));
    assert_eq!(
        loop_state["compaction"]["failures_in_a_row"],
        json!(limit),
        "{loop_state}"
    );
}

#[tokio::test]
async fn an_autocompact_summary_is_a_journaled_step_replayed_byte_for_byte() {
    let baseline = compacting_rig(2_000);
    two_turns(&baseline).await;
    assert_eq!(
        baseline.journal.executed()[6..],
        COMPACTING_TURN_ENTRIES.map(str::to_owned)
    );
    let expected = messages(&baseline.journal);
    let expected_requests = baseline.model.requests();
    assert_eq!(
        expected_requests.iter().filter(|r| is_summary(r)).count(),
        1
    );
    assert!(
        expected.iter().any(|m| m.contains("compact_boundary")),
        "the history holds the compaction: {expected:?}"
    );

    for index in 0..COMPACTING_TURN_ENTRIES.len() {
        if index == 4 {
            // The non-idempotent write cut between its marker and its result: interrupted,
            // as in the crash test above.
            continue;
        }
        for crash in [Crash::Before(index), Crash::After(index)] {
            let rig = compacting_rig(2_000);
            turn(&rig, "first").await;
            rig.journal.crash(crash);
            assert!(attempt(&rig, "second").await.is_err(), "{crash:?}");
            turn(&rig, "second").await;
            assert_eq!(messages(&rig.journal), expected, "{crash:?}");
            let requests = rig.model.requests();
            // The summary is sent again only when the crash cut its own step.
            let summaries = requests.iter().filter(|r| is_summary(r)).count();
            assert_eq!(
                summaries,
                1 + usize::from(crash == Crash::After(1)),
                "{crash:?}"
            );
            let mut deduped = requests.clone();
            deduped.dedup();
            assert_eq!(deduped, expected_requests, "{crash:?}");
        }
    }
}

#[tokio::test]
async fn a_tool_the_operator_declares_idempotent_gets_no_marker_and_runs_again() {
    let mut rig = rig(PermissionMode::Deny, false);
    rig.worker = rig.worker.clone().with_idempotent_tool("write");
    turn(&rig, "first").await;
    // No marker before the write: the second turn's entries lack `started:…`.
    rig.journal.crash(Crash::After(2));
    assert!(attempt(&rig, "second").await.is_err());
    turn(&rig, "second").await;
    assert!(
        rig.journal
            .executed()
            .iter()
            .all(|e| !e.starts_with("started:"))
    );
    // Cut after its work but before its result was journaled, the write runs again.
    assert_eq!(rig.write.runs().get("toolu_5_w"), Some(&2));
}
