//! One turn, driven durably: load the session's state, run the existing query loop with the
//! bridge's service, tools and permission callback, serve the bridge's requests as journaled
//! steps in arrival order, and persist the changed suffix of the history after `Finished`.
//!
//! Journal writes happen only while serving a bridge request or after `Finished`, never in
//! response to the loop's events (their interleaving with requests depends on timing, and a
//! replay would then not match the journal).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::{Duration, SystemTime};

use futures::FutureExt as _;
use futures::StreamExt as _;
use futures::channel::mpsc;
use serde_json::{Value, json};
use threadline_message::Message;
use threadline_message::determinism::Source;
use threadline_query::recovery::INTERRUPTED;
use threadline_query::{
    CancellationToken, Event, Permission, Query, Tool, ToolContext, ToolEvent, ToolOutput,
};
use threadline_wire::service::{ServiceError, ServiceErrorKind};
use threadline_wire::{ContentBlock, MessagesRequest};

use super::bridge::{
    Bridge, BridgePermission, JournaledAttachments, JournaledService, JournaledTool, Request,
};
use super::memo::MemoSlot;
use super::records::{ModelRecord, StepRecord, ToolRecord};
use super::state::{self, keys};
use super::{Settings, TurnError, TurnOutcome, TurnRequest};
use crate::journal::{Journal, JournalError};

/// Runs one turn of session `session` on `journal`.
pub(crate) async fn run_turn<J: Journal>(
    journal: &J,
    settings: &Settings,
    session: &str,
    request: TurnRequest,
) -> Result<TurnOutcome, TurnError> {
    if request.prompt.len() > settings.max_step_bytes {
        return Err(TurnError::PromptTooLarge {
            bytes: request.prompt.len(),
            limit: settings.max_step_bytes,
        });
    }
    let mut loaded = state::load(journal, settings.sessions.take(session)).await?;
    settings.sessions.count(loaded.warm);
    if let (Some(id), Some(last)) = (&request.turn_id, &loaded.last_turn)
        && last.turn_id.as_ref() == Some(id)
    {
        let last = last.clone();
        // Nothing is written: the state read is the state stored, worth keeping.
        settings.sessions.put(session, loaded.session);
        return Ok(last);
    }
    // The turn's time, journaled once: every message of the turn carries it. (The wall
    // clock, or the clock of a determinism scope the caller runs the turn in.)
    let clock = journal
        .step(
            "clock",
            async {
                let millis = threadline_message::determinism::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                millis.to_string().into_bytes()
            }
            .boxed(),
        )
        .await?;
    let millis: u64 = std::str::from_utf8(&clock)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(millis);
    let seed = format!("{session}/turn/{}", loaded.turns);
    let source = Source::new(seed.clone(), at);

    for k in 0..loaded.steps {
        journal.clear(&keys::step(k));
    }
    journal.set(keys::STEPS, b"0".to_vec());
    journal.set(keys::STATUS, json_bytes(&json!("running")));
    let mut server = Server {
        journal,
        settings,
        steps: 0,
        models: 0,
        attachments: 0,
        cancelled: false,
        cancel: CancellationToken::new(),
        seed,
        at,
    };
    server.log("clock", "clock", true, clock.len());
    server.pause().await;

    let input = server
        .input(&source, &loaded.session.state.messages, &request.prompt)
        .await?;
    let (bridge, mut requests) = Bridge::new();
    let memo = MemoSlot::default();
    let query = build_query(settings, &bridge, server.cancel.clone())
        .map_cache_planner(|p| memo.carry(p, std::mem::take(&mut loaded.session.memo)));
    drop(bridge);
    let old_messages = loaded.session.message_bytes;
    let mut run = source.enter(|| query.run(loaded.session.state, input));

    let finished = loop {
        match next(&source, &mut run, &mut requests).await {
            Next::Event(Some(Event::Finished(finished))) => break *finished,
            Next::Event(Some(_)) => {}
            Next::Event(None) => {
                return Err(TurnError::Loop(
                    "the loop ended without a Finished event".into(),
                ));
            }
            Next::Request(Some(request)) => server.serve(request).await?,
            Next::Request(None) => {}
        }
    };
    // Dropping the loop drops its planner, which leaves its memo in `memo`.
    drop(run);
    let outcome = TurnOutcome {
        terminal: finished.terminal.clone(),
        turns: loaded.turns.saturating_add(1),
        text: last_assistant_text(&finished.state.messages),
        messages: finished.state.messages.len(),
        turn_id: request.turn_id.clone(),
    };
    if let Some(mut kept) = state::persist(journal, old_messages, finished.state, &outcome)? {
        kept.memo = memo.take();
        settings.sessions.put(session, kept);
    }
    Ok(outcome)
}

/// The loop of one attempt of a turn: the turn loop's query over the journaled service, its
/// tools, collector and permission callback bridged to journaled steps.
fn build_query(
    settings: &Settings,
    bridge: &Bridge,
    cancel: CancellationToken,
) -> Query<JournaledService> {
    let turn_loop = settings.turn_loop();
    let mut query = turn_loop
        .query(JournaledService::new(bridge.clone()))
        .map_tools(|tool| Arc::new(JournaledTool::new(tool, bridge.clone())));
    if let Some(hook) = turn_loop.attachments() {
        query = query.with_attachments(JournaledAttachments::new(hook, bridge.clone()));
    }
    query
        .with_permission(BridgePermission::new(settings.permission, bridge.clone()))
        .with_cancellation(cancel)
}

/// Polls `future` inside `source`'s determinism scope.
async fn scoped<T>(source: &Source, future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| source.enter(|| future.as_mut().poll(cx))).await
}

/// The journal value of a turn's input or of a collection: the messages, or (over `max`
/// bytes, or not serializable) the first `keep` of them alone.
fn messages_bytes(messages: &[Message], keep: usize, max: usize) -> Vec<u8> {
    match serde_json::to_vec(messages) {
        Ok(bytes) if bytes.len() <= max => bytes,
        other => {
            tracing::warn!(
                max,
                problem = ?other.map(|b| b.len()).map_err(|e| e.to_string()),
                "the collected attachments cannot be journaled whole; left out"
            );
            serde_json::to_vec(&messages[..keep.min(messages.len())]).unwrap_or_default()
        }
    }
}

enum Next {
    Event(Option<Event>),
    Request(Option<Request>),
}

/// The next thing to do: an event of the run (polled inside the determinism scope) or a
/// request of the bridge.
async fn next(
    source: &Source,
    run: &mut threadline_query::Run,
    requests: &mut mpsc::UnboundedReceiver<Request>,
) -> Next {
    std::future::poll_fn(|cx| {
        if let Poll::Ready(event) = source.enter(|| run.poll_next_unpin(cx)) {
            return Poll::Ready(Next::Event(event));
        }
        match requests.poll_next_unpin(cx) {
            Poll::Ready(request) => Poll::Ready(Next::Request(request)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Serves the bridge's requests as journaled steps.
struct Server<'a, J> {
    journal: &'a J,
    settings: &'a Settings,
    steps: u64,
    models: u64,
    attachments: u64,
    /// The turn's determinism seed and time: a journaled collection's messages take their
    /// ids from a scope of their own derived from them, so that replaying the step (which
    /// does not run the collection) leaves the turn's own ids where they were.
    seed: String,
    at: SystemTime,
    /// The invocation was cancelled: requests are answered without the journal.
    cancelled: bool,
    cancel: CancellationToken,
}

impl<J: Journal> Server<'_, J> {
    async fn serve(&mut self, request: Request) -> Result<(), TurnError> {
        match request {
            Request::Model { request, reply } => {
                let answer = self.model(*request).await?;
                let _ = reply.send(answer);
            }
            Request::Tool {
                tool,
                input,
                ctx,
                reply,
            } => {
                let answer = self.tool(tool, input, ctx).await?;
                let _ = reply.send(answer);
            }
            Request::Attach { work, reply } => {
                let answer = self.attach(work).await?;
                let _ = reply.send(answer);
            }
            Request::Ask {
                tool,
                tool_use_id,
                input,
                prompt,
                reply,
            } => {
                let answer = self.ask(tool, tool_use_id, input, prompt).await?;
                let _ = reply.send(answer);
            }
        }
        Ok(())
    }

    /// A journal error: cancellation aborts the loop (which then writes its own synthetic
    /// results); anything else ends the attempt.
    fn failed(&mut self, error: JournalError) -> Result<(), TurnError> {
        if error.is_cancelled() {
            self.cancelled = true;
            self.cancel.cancel();
            Ok(())
        } else {
            Err(TurnError::Journal(error))
        }
    }

    /// The turn's input: the user's message alone, or what the turn loop's `input` gives,
    /// journaled as the step `input` (a replay takes the journaled messages).
    async fn input(
        &mut self,
        source: &Source,
        history: &[Message],
        prompt: &str,
    ) -> Result<Vec<Message>, TurnError> {
        let Some(work) = self.settings.turn_loop().input(history, prompt) else {
            return Ok(source.enter(|| vec![Message::user_text(prompt)]));
        };
        let max = self.settings.max_step_bytes;
        let scope = self.scope("input");
        let work = async move { messages_bytes(&scoped(&scope, work).await, 1, max) };
        let bytes = match self.journal.step("input", work.boxed()).await {
            Ok(bytes) => bytes,
            Err(error) => {
                // Cancelled: the turn starts from the prompt alone, and the loop aborts.
                self.failed(error)?;
                return Ok(source.enter(|| vec![Message::user_text(prompt)]));
            }
        };
        self.log("input", "input", true, bytes.len());
        self.pause().await;
        let messages: Vec<Message> =
            serde_json::from_slice(&bytes).map_err(|e| corrupt_step("input", e.to_string()))?;
        if messages.is_empty() {
            return Err(corrupt_step("input", "no user message".into()));
        }
        Ok(messages)
    }

    /// A collection of the next-turn attachment collector, journaled as `attach#{n}`.
    async fn attach(
        &mut self,
        work: futures::future::BoxFuture<'static, Vec<Message>>,
    ) -> Result<Vec<Message>, TurnError> {
        if self.cancelled {
            return Ok(Vec::new());
        }
        let name = format!("attach#{}", self.attachments);
        self.attachments += 1;
        let max = self.settings.max_step_bytes;
        let scope = self.scope(&name);
        let work = async move { messages_bytes(&scoped(&scope, work).await, 0, max) };
        match self.journal.step(&name, work.boxed()).await {
            Ok(bytes) => {
                self.log("attach", &name, true, bytes.len());
                self.pause().await;
                serde_json::from_slice(&bytes).map_err(|e| corrupt_step(&name, e.to_string()))
            }
            Err(error) => {
                self.failed(error)?;
                Ok(Vec::new())
            }
        }
    }

    async fn model(
        &mut self,
        request: MessagesRequest,
    ) -> Result<Result<threadline_wire::service::EventStream, ServiceError>, TurnError> {
        let aborted = || {
            Err(ServiceError::new(
                ServiceErrorKind::Connection,
                "the session was cancelled",
            ))
        };
        if self.cancelled {
            return Ok(aborted());
        }
        let name = format!("model#{}", self.models);
        self.models += 1;
        let backend = Arc::clone(&self.settings.backend);
        let max = self.settings.max_step_bytes;
        let work = async move {
            let opened = backend.call(request).await;
            ModelRecord::accumulate(opened, max).await.to_bytes(max)
        };
        match self.journal.step(&name, work.boxed()).await {
            Ok(bytes) => {
                let record = ModelRecord::from_bytes(&bytes);
                let ok = matches!(record, ModelRecord::Message { .. });
                self.log("model", &name, ok, bytes.len());
                self.pause().await;
                Ok(record.into_response())
            }
            Err(error) => {
                self.failed(error)?;
                Ok(aborted())
            }
        }
    }

    async fn tool(
        &mut self,
        tool: Arc<dyn Tool>,
        input: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, TurnError> {
        if self.cancelled {
            return Ok(ToolOutput::error(INTERRUPTED));
        }
        let id = ctx.tool_use_id.clone();
        let max = self.settings.max_step_bytes;
        let mut fresh = true;
        if !self.settings.idempotent.contains(tool.name()) && !tool.is_idempotent(&input) {
            // The marker's work runs only when it was not journaled yet: a replayed marker
            // means an earlier attempt may have run the tool and died before its result was
            // journaled.
            let flag = Arc::new(AtomicBool::new(false));
            let set = Arc::clone(&flag);
            let name = format!("started:{id}");
            let work = async move {
                set.store(true, Ordering::SeqCst);
                b"{}".to_vec()
            };
            match self.journal.step(&name, work.boxed()).await {
                Ok(bytes) => {
                    self.log("marker", &name, true, bytes.len());
                    self.pause().await;
                }
                Err(error) => {
                    self.failed(error)?;
                    return Ok(ToolOutput::error(INTERRUPTED));
                }
            }
            fresh = flag.load(Ordering::SeqCst);
        }
        let name = format!("tool:{id}");
        let work = if fresh {
            async move { ToolRecord::of(&call_tool(tool, input, ctx).await).to_bytes(max) }.boxed()
        } else {
            let interrupted = ToolRecord::of(&ToolOutput::error(INTERRUPTED)).to_bytes(max);
            std::future::ready(interrupted).boxed()
        };
        match self.journal.step(&name, work).await {
            Ok(bytes) => {
                let output = ToolRecord::from_bytes(&bytes);
                self.log("tool", &name, !output.is_error, bytes.len());
                self.pause().await;
                Ok(output)
            }
            Err(error) => {
                self.failed(error)?;
                Ok(ToolOutput::error(INTERRUPTED))
            }
        }
    }

    async fn ask(
        &mut self,
        tool: String,
        tool_use_id: String,
        input: Value,
        prompt: String,
    ) -> Result<Permission, TurnError> {
        let denied = |message: &str| Permission::Deny {
            message: message.to_owned(),
        };
        if self.cancelled {
            return Ok(denied(Permission::NOT_GRANTED));
        }
        let (id, answer) = self.journal.awakeable();
        let ask = json!({"awakeable_id": id, "tool": tool, "tool_use_id": tool_use_id,
                         "input": input, "prompt": prompt});
        self.journal.set(keys::ASK, json_bytes(&ask));
        self.journal
            .set(keys::STATUS, json_bytes(&json!("waiting_for_permission")));
        let answer = answer.await;
        self.journal.clear(keys::ASK);
        self.journal
            .set(keys::STATUS, json_bytes(&json!("running")));
        let bytes = match answer {
            Ok(bytes) => bytes,
            Err(error) => {
                self.failed(error)?;
                return Ok(denied(Permission::NOT_GRANTED));
            }
        };
        let decision = serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null);
        let allowed = decision.get("allow").and_then(Value::as_bool) == Some(true);
        self.log("ask", &format!("ask:{tool_use_id}"), allowed, bytes.len());
        Ok(if allowed {
            Permission::Allow
        } else {
            let reason = decision
                .get("reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty() && r.len() <= 4096)
                .unwrap_or(Permission::NOT_GRANTED);
            denied(reason)
        })
    }

    /// The determinism scope of the journaled step `name`'s own work.
    fn scope(&self, name: &str) -> Source {
        Source::new(format!("{}/{name}", self.seed), self.at)
    }

    /// Appends a step record to the turn's log (for `show`).
    fn log(&mut self, kind: &str, name: &str, ok: bool, bytes: usize) {
        let record = StepRecord {
            kind: kind.to_owned(),
            name: name.to_owned(),
            ok,
            bytes,
        };
        tracing::debug!(kind, name, ok, bytes, "journaled step");
        self.journal
            .set(&keys::step(self.steps), json_bytes(&record));
        if let Some(observer) = &self.settings.observer {
            observer(&record);
        }
        self.steps += 1;
        self.journal
            .set(keys::STEPS, self.steps.to_string().into_bytes());
    }

    /// The test hook: a pause after a journaled step, outside any step.
    async fn pause(&self) {
        if !self.settings.step_delay.is_zero() {
            tokio::time::sleep(self.settings.step_delay).await;
        }
    }
}

async fn call_tool(tool: Arc<dyn Tool>, input: Value, ctx: ToolContext) -> ToolOutput {
    let run = async move {
        let mut events = tool.call(input, ctx);
        while let Some(event) = events.next().await {
            if let ToolEvent::Result(output) = event {
                return output;
            }
        }
        ToolOutput::error("Error: the tool ended without a result")
    };
    std::panic::AssertUnwindSafe(run)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| ToolOutput::error("Error: the tool panicked"))
}

/// A journaled step whose value is not what the driver wrote.
fn corrupt_step(name: &str, message: String) -> TurnError {
    TurnError::CorruptState {
        key: format!("journal step {name}"),
        message,
    }
}

pub(crate) fn json_bytes(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// The text of the last response (its fragments share the API message id).
fn last_assistant_text(messages: &[Message]) -> String {
    let mut last: Option<&Option<String>> = None;
    let mut parts: Vec<&str> = Vec::new();
    for message in messages.iter().rev() {
        let Message::Assistant(assistant) = message else {
            if last.is_some() {
                break;
            }
            continue;
        };
        match last {
            None => last = Some(&assistant.api_message_id),
            Some(id) if *id != assistant.api_message_id => break,
            Some(_) => {}
        }
        for block in assistant.content.iter().rev() {
            if let ContentBlock::Text(text) = block {
                parts.push(&text.text);
            }
        }
    }
    parts.reverse();
    parts.concat()
}
