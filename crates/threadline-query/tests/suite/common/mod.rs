//! Shared by the integration tests: a run driver on tokio's paused clock, test tools, and the
//! checks every scenario makes (every request valid, prefixes stable, history valid).
#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use threadline_message::{CompactTrigger, Message, SystemKind};
use threadline_normalize::{Options, normalize};
use threadline_query::scripted::{SCRIPTED_MODEL, ScriptedService};
use threadline_query::{
    Event, MessagesService, PolicyError, Query, State, StepOutcome, Terminal, Transition,
};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolSet, ToolStream, tool_with_progress};
use threadline_validate::validate;
use threadline_wire::MessagesRequest;
use threadline_wire::model::ModelTable;
use tokio::time::Instant;

/// What a run produced.
pub struct Outcome {
    pub events: Vec<Event>,
    pub terminal: Terminal,
    pub state: State,
}

impl Outcome {
    pub fn path(&self) -> &[Transition] {
        &self.state.path
    }

    /// The appended messages, in order.
    pub fn messages(&self) -> Vec<&Message> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some(m),
                _ => None,
            })
            .collect()
    }

    /// Position of the first event matching `f`.
    pub fn position(&self, f: impl Fn(&Event) -> bool) -> Option<usize> {
        self.events.iter().position(f)
    }
}

/// The user's opening message.
pub fn prompt() -> Vec<Message> {
    vec![Message::user_text("Do the thing.")]
}

/// The test tools: `read` (concurrency-safe) and `write` (not), both [`Sleeper`]s logging
/// to `log`.
pub fn tools(log: &Log) -> ToolSet {
    ToolSet::new()
        .with(Sleeper::new("read", true, log))
        .with(Sleeper::new("write", false, log))
}

/// Runs to the end and splits off the final event.
pub async fn run<S>(query: Query<S>, state: State, input: Vec<Message>) -> Outcome
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    let mut events: Vec<Event> = query.run(state, input).collect().await;
    let Some(Event::Finished(finished)) = events.pop() else {
        panic!("the last event is Finished");
    };
    let finished = *finished;
    Outcome {
        events,
        terminal: finished.terminal,
        state: finished.state,
    }
}

pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime")
}

/// The history normalizes to a request the API accepts (with `tools` defined).
pub fn assert_history_valid(history: &[Message], tools: &ToolSet) {
    let normalized = normalize(history, &Options::default());
    let mut request = MessagesRequest::new(SCRIPTED_MODEL, 1024, normalized.messages);
    if !tools.is_empty() {
        request.tools = Some(tools.definitions());
    }
    let model = ModelTable::builtin().resolve(SCRIPTED_MODEL).model();
    let violations = validate(&request, model);
    assert!(violations.is_empty(), "invalid history: {violations:?}");
}

/// The checks every run against the scripted service makes: every request valid, prefixes
/// stable ([`assert_requests_valid_and_prefix_stable`]), and the history left behind valid.
pub fn check(outcome: &Outcome, service: &ScriptedService, tools: &ToolSet) {
    assert_requests_valid_and_prefix_stable(service);
    assert_history_valid(&outcome.state.messages, tools);
}

/// Every request passed `validate`; consecutive requests share their previous messages
/// byte for byte (no compaction in between), except that the previous request's last message
/// may have grown at its end (a paused turn the next response continued): its blocks are
/// then the first blocks of the same message, byte for byte.
pub fn assert_requests_valid_and_prefix_stable(service: &ScriptedService) {
    assert!(
        service.violations().is_empty(),
        "{:?}",
        service.violations()
    );
    let requests = service.requests();
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0].messages.to_vec(), &pair[1].messages.to_vec());
        assert!(after.len() >= before.len(), "a request lost messages");
        let Some((last, earlier)) = before.split_last() else {
            continue;
        };
        let a = serde_json::to_string(earlier).expect("json");
        let b = serde_json::to_string(&after[..earlier.len()]).expect("json");
        assert_eq!(a, b, "the prefix changed between two requests");
        let grown = &after[earlier.len()];
        assert_eq!(last.role, grown.role, "the last message changed role");
        let (last_blocks, grown_blocks) = (blocks_json(last), blocks_json(grown));
        assert!(
            grown_blocks.starts_with(&last_blocks[..]),
            "the last message changed, not only grew:\n{last_blocks:?}\n{grown_blocks:?}"
        );
    }
}

/// A message's blocks as JSON strings; string content is one item, the whole content, so
/// that it can only be equal, never grow.
fn blocks_json(message: &threadline_wire::MessageParam) -> Vec<String> {
    match &message.content {
        threadline_wire::Content::Text(_) => {
            vec![serde_json::to_string(&message.content).expect("json")]
        }
        threadline_wire::Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| serde_json::to_string(b).expect("json"))
            .collect(),
    }
}

/// Records when each call started and finished (tokio clock).
#[derive(Debug, Default, Clone)]
pub struct Log(Arc<Mutex<Vec<Entry>>>);

/// A tool use id, what happened (`start`, `finish`), and when.
type Entry = (String, &'static str, Instant);

impl Log {
    pub fn push(&self, id: &str, what: &'static str) {
        self.0
            .lock()
            .expect("log")
            .push((id.to_owned(), what, Instant::now()));
    }
    pub fn at(&self, id: &str, what: &str) -> Instant {
        self.0
            .lock()
            .expect("log")
            .iter()
            .find(|(i, w, _)| i == id && *w == what)
            .map(|(_, _, t)| *t)
            .unwrap_or_else(|| panic!("no {what} for {id}"))
    }
    pub fn order(&self, what: &str) -> Vec<String> {
        self.0
            .lock()
            .expect("log")
            .iter()
            .filter(|(_, w, _)| *w == what)
            .map(|(i, _, _)| i.clone())
            .collect()
    }
}

/// A tool that sleeps `{"ms": N}` on tokio's clock, reports progress, and logs.
pub struct Sleeper {
    pub name: &'static str,
    pub safe: bool,
    pub log: Log,
    pub on_start: Option<Arc<tokio::sync::Notify>>,
}

impl Sleeper {
    pub fn new(name: &'static str, safe: bool, log: &Log) -> Sleeper {
        Sleeper {
            name,
            safe,
            log: log.clone(),
            on_start: None,
        }
    }
}

impl Tool for Sleeper {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Sleeps."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}, "required": ["ms"]})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        self.safe
    }
    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream {
        let ms = input["ms"].as_u64().unwrap_or(0);
        let log = self.log.clone();
        let on_start = self.on_start.clone();
        tool_with_progress(move |progress| async move {
            log.push(&ctx.tool_use_id, "start");
            if let Some(gate) = on_start {
                gate.notify_one();
            }
            progress.send(json!({"started": ctx.tool_use_id}));
            tokio::time::sleep(Duration::from_millis(ms)).await;
            log.push(&ctx.tool_use_id, "finish");
            ToolOutput::text(format!("slept {ms} ms"))
        })
    }
}

pub fn sleep_input(ms: u64) -> Value {
    json!({"ms": ms})
}

pub fn tool_result_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(u.content.iter().filter_map(|b| match b {
                threadline_wire::ContentBlock::ToolResult(r) => Some(r.tool_use_id.clone()),
                _ => None,
            })),
            _ => None,
        })
        .flatten()
        .collect()
}

pub fn tool_result_texts(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(u.content.iter().filter_map(|b| match b {
                threadline_wire::ContentBlock::ToolResult(r) => Some((
                    r.tool_use_id.clone(),
                    match &r.content {
                        Some(threadline_wire::Content::Text(t)) => t.clone(),
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

/// The results the loop gives tool uses it cut short: `text` for each of `ids`, as errors
/// (in the shape of [`tool_result_texts`]).
pub fn cut_short(ids: &[&str], text: &str) -> Vec<(String, String, bool)> {
    ids.iter()
        .map(|id| ((*id).to_owned(), text.to_owned(), true))
        .collect()
}

/// Records the order in which the loop calls its seams.
#[derive(Debug, Clone, Default)]
pub struct Calls(Arc<Mutex<Vec<&'static str>>>);

impl Calls {
    pub fn push(&self, what: &'static str) {
        self.0.lock().expect("calls").push(what);
    }
    /// The calls so far, leaving none recorded.
    pub fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.0.lock().expect("calls"))
    }
}

/// What a compaction appends: its boundary (`trigger`, `pre_tokens`) and the summary.
pub fn compaction(trigger: CompactTrigger, pre_tokens: u64, summary: &str) -> StepOutcome {
    StepOutcome::appended(vec![
        Message::system(SystemKind::CompactBoundary {
            trigger,
            pre_tokens,
            last_message_id: None,
        }),
        Message::compact_summary(summary),
    ])
}

/// The test policies' reactive compaction, recorded in `calls`: a [`compaction`] of
/// `pre_tokens` and `summary` when `compacts`, else nothing changed.
pub fn reactive_compaction(
    calls: &Calls,
    compacts: bool,
    pre_tokens: u64,
    summary: &str,
) -> BoxFuture<'static, Result<StepOutcome, PolicyError>> {
    calls.push("reactive_compact");
    let outcome = if compacts {
        compaction(CompactTrigger::Reactive, pre_tokens, summary)
    } else {
        StepOutcome::unchanged()
    };
    Box::pin(std::future::ready(Ok(outcome)))
}

/// A request shaper adding the `web_search` server tool (the API runs it): the tool the
/// paused-turn tests' server tool calls name.
pub fn with_web_search(request: &mut threadline_wire::MessagesRequest) {
    let tool = serde_json::from_value(
        serde_json::json!({"type": "web_search_20250305", "name": "web_search"}),
    )
    .expect("a server tool definition");
    request.tools.get_or_insert_with(Vec::new).push(tool);
}
