//! The loop itself: one iteration per model call, each ending in a [`Transition`] or a
//! [`Terminal`].
//!
//! An iteration: tool-result budget → snip → microcompact → autocompact (the
//! [`ContextPolicy`]) → blocking limit → normalize (incremental) → shape and cache-plan the
//! request → stream the model's answer (each completed block is appended as an assistant
//! fragment, and each completed tool use is handed to the executor at once) → tool results
//! in tool-use order → next-turn attachments → the next state.

use std::sync::Arc;
use std::task::Poll;

use futures::channel::mpsc;
use futures::future::{Either, FutureExt as _};
use futures::stream::StreamExt as _;
use threadline_message::{Level, Message, MessageId, SystemKind, TranscriptWriter};
use threadline_normalize::Normalizer;
use threadline_wire::accumulate::MessageAccumulator;
use threadline_wire::request::ThinkingConfig;
use threadline_wire::service::{EventStream, MessagesService, ServiceError, ServiceErrorKind};
use threadline_wire::{ContentBlock, MessagesRequest, StopReason, StreamEvent};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::config::QueryConfig;
use crate::context_policy::{ContextPolicy, NoPolicy, StepInput, StepOutcome};
use crate::event::{Event, Finished, RequestInfo};
use crate::executor::{ExecEvent, Executor};
use crate::hooks::{AttachmentHook, NoAttachments, StopContext, StopDecision, StopHook};
use crate::permission::{NonInteractive, PermissionCallback};
use crate::recovery::{
    self, ContextWindowStep, INTERRUPTED, MAX_PAUSE_TURN_RESUMES, MaxTokensStep, NOT_RECORDED,
    PromptTooLongStep, RESUME_DIRECTLY, STREAM_FAILED,
};
use crate::request_builder::RequestBuilder;
use crate::request_hooks::{CachePlanner, RequestShaper, Unchanged};
use crate::run::Run;
use crate::state::{State, loop_normalize_options};
use crate::telemetry;
use crate::terminal::Terminal;
use crate::token_budget;
use crate::tool::{Tool, ToolOutput, ToolSet};
use crate::tool_changes::ToolChanges;
use crate::transition::Transition;

/// A configured loop, ready to [`run`](Query::run). See the [crate documentation](crate).
pub struct Query<S> {
    service: S,
    config: QueryConfig,
    tools: ToolSet,
    permission: Arc<dyn PermissionCallback>,
    policy: Box<dyn ContextPolicy>,
    shaper: Box<dyn RequestShaper>,
    planner: Box<dyn CachePlanner>,
    attachments: Box<dyn AttachmentHook>,
    stop_hooks: Vec<Box<dyn StopHook>>,
    transcript: Option<TranscriptWriter>,
    cancel: CancellationToken,
    tool_changes: Option<ToolChanges>,
    diagnoser: crate::cache_diagnosis::Diagnoser,
}

impl<S> std::fmt::Debug for Query<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("config", &self.config)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl<S> Query<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    /// A loop over `service` with `config`, no tools, no compaction, no cache planning, no
    /// transcript, and the [`NonInteractive`] permission callback.
    pub fn new(service: S, config: QueryConfig) -> Query<S> {
        Query {
            service,
            config,
            tools: ToolSet::new(),
            permission: Arc::new(NonInteractive),
            policy: Box::new(NoPolicy),
            shaper: Box::new(Unchanged),
            planner: Box::new(Unchanged),
            attachments: Box::new(NoAttachments),
            stop_hooks: Vec::new(),
            transcript: None,
            cancel: CancellationToken::new(),
            tool_changes: None,
            diagnoser: Default::default(),
        }
    }

    /// Lets the offered tools change mid-session through `changes` (see
    /// [`ToolChanges`]).
    pub fn with_tool_changes(mut self, changes: ToolChanges) -> Self {
        self.tool_changes = Some(changes);
        self
    }

    /// Adds a tool.
    pub fn with_tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.insert(Arc::new(tool));
        self
    }

    /// Replaces the tools.
    pub fn with_tools(mut self, tools: ToolSet) -> Self {
        self.tools = tools;
        self
    }

    /// Wraps each tool with `wrap` (a durable worker journals every call this way); the
    /// tools keep their order and names.
    pub fn map_tools(mut self, mut wrap: impl FnMut(Arc<dyn Tool>) -> Arc<dyn Tool>) -> Self {
        let mut tools = ToolSet::new();
        for name in self.tools.names() {
            if let Some(tool) = self.tools.get(name) {
                tools.insert(wrap(Arc::clone(tool)));
            }
        }
        self.tools = tools;
        self
    }

    /// The permission callback.
    pub fn with_permission(mut self, permission: impl PermissionCallback + 'static) -> Self {
        self.permission = Arc::new(permission);
        self
    }

    /// The context policy (budget, snip, microcompact, autocompact, reactive compaction).
    pub fn with_policy(mut self, policy: impl ContextPolicy + 'static) -> Self {
        self.policy = Box::new(policy);
        self
    }

    /// The request shaper (runs after normalization, before cache planning).
    pub fn with_shaper(mut self, shaper: impl RequestShaper + 'static) -> Self {
        self.shaper = Box::new(shaper);
        self
    }

    /// The cache planner.
    pub fn with_cache_planner(mut self, planner: impl CachePlanner + 'static) -> Self {
        self.planner = Box::new(planner);
        self
    }

    /// Wraps the cache planner with `wrap` (a durable worker hands each turn's planner the
    /// memo of the session's last turn this way).
    pub fn map_cache_planner(
        mut self,
        wrap: impl FnOnce(Box<dyn CachePlanner>) -> Box<dyn CachePlanner>,
    ) -> Self {
        let planner = std::mem::replace(&mut self.planner, Box::new(Unchanged));
        self.planner = wrap(planner);
        self
    }

    /// The loop's own break detection, compared with the API's cache diagnostics.
    pub fn with_break_detector(mut self, detector: impl crate::BreakDetector + 'static) -> Self {
        self.diagnoser = crate::cache_diagnosis::Diagnoser::with_detector(Box::new(detector));
        self
    }

    /// The next-turn attachment collector.
    pub fn with_attachments(mut self, attachments: impl AttachmentHook + 'static) -> Self {
        self.attachments = Box::new(attachments);
        self
    }

    /// Adds a stop hook (hooks run in the order added).
    pub fn with_stop_hook(mut self, hook: impl StopHook + 'static) -> Self {
        self.stop_hooks.push(Box::new(hook));
        self
    }

    /// Appends every message of the run to `transcript` as it is produced.
    pub fn with_transcript(mut self, transcript: TranscriptWriter) -> Self {
        self.transcript = Some(transcript);
        self
    }

    /// The token that aborts the run.
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Runs: appends `input` (the user's message and its attachments) to `state`'s history,
    /// then loops until a [`Terminal`]. The last event is always [`Event::Finished`] with the
    /// state to continue from.
    pub fn run(self, state: State, input: Vec<Message>) -> Run {
        let (tx, rx) = mpsc::unbounded();
        let span = telemetry::agent_span(&self.config);
        let driver = async move {
            let mut driver = Driver::new(self, tx);
            let mut state = state;
            let terminal = driver.drive(&mut state, input).await;
            driver.emit(Event::Finished(Box::new(Finished { terminal, state })));
        };
        Run::new(driver.instrument(span).boxed(), rx)
    }
}

/// How a model response ended.
enum Response {
    /// `message_stop` arrived.
    Complete {
        stop_reason: Option<StopReason>,
        /// `stop_details` (a refusal's category and explanation).
        stop_details: Option<threadline_wire::StopDetails>,
        fragments: Vec<MessageId>,
    },
    /// The call or the stream failed (after appending `fragments`).
    Failed {
        error: ServiceError,
        fragments: Vec<MessageId>,
    },
    /// The token fired.
    Aborted,
}

/// What the stream of one response produced so far.
#[derive(Default)]
struct Streamed {
    acc: MessageAccumulator,
    /// A completed block held back: the last one carries the stop reason and usage.
    pending: Option<Message>,
    /// The indices of the completed blocks.
    completed: Vec<usize>,
    /// The ids of the fragments appended.
    fragments: Vec<MessageId>,
}

enum Wake {
    Cancelled,
    Tool(ExecEvent),
    Model(Option<Result<StreamEvent, ServiceError>>),
}

struct Driver<S> {
    q: Query<S>,
    out: mpsc::UnboundedSender<Event>,
    /// Assembles every request (the policy's summary request's base too).
    request: RequestBuilder,
    tools: Arc<ToolSet>,
}

impl<S> Driver<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    fn new(mut q: Query<S>, out: mpsc::UnboundedSender<Event>) -> Driver<S> {
        let shaper = std::mem::replace(&mut q.shaper, Box::new(Unchanged));
        let planner = std::mem::replace(&mut q.planner, Box::new(Unchanged));
        let request = RequestBuilder::new(q.config.clone(), &q.tools)
            .with_boxed_hooks(shaper, planner)
            .with_tool_changes(q.tool_changes.clone());
        let tools = Arc::new(q.tools.clone());
        Driver {
            q,
            out,
            request,
            tools,
        }
    }

    fn emit(&self, event: Event) {
        // A consumer that went away stops reading; the run still finishes its bookkeeping.
        let _ = self.out.unbounded_send(event);
    }

    /// Appends to the history and the transcript, then reports. Whether the message is in
    /// the transcript (written and flushed; `true` when there is no transcript).
    fn append(&mut self, st: &mut State, message: Message) -> bool {
        let mut recorded = true;
        if let Some(writer) = self.q.transcript.as_mut()
            && let Err(error) = writer.append(&message)
        {
            recorded = false;
            self.emit(Event::Warning(format!(
                "{}{error}",
                crate::event::TRANSCRIPT_WARNING
            )));
        }
        st.messages.push(message.clone());
        st.note_appended(st.messages.len() - 1);
        self.emit(Event::Message(message));
        recorded
    }

    /// Records the message a context step changed in place at `index` again, as it now is
    /// (same id): in the transcript, marked as the rewrite of the message at `index`, and as
    /// [`Event::Rewritten`], so that what was recorded reads back as the history the loop
    /// holds ([`threadline_message::fold_rewrites`]).
    fn record_rewrite(&mut self, st: &State, index: usize) {
        let Some(message) = st.messages.get(index) else {
            return;
        };
        if let Some(writer) = self.q.transcript.as_mut()
            && let Err(error) = writer.append_rewrite(message, index)
        {
            self.emit(Event::Warning(format!(
                "{}{error}",
                crate::event::TRANSCRIPT_WARNING
            )));
        }
        self.emit(Event::Rewritten {
            index,
            message: message.clone(),
        });
    }

    async fn drive(&mut self, st: &mut State, input: Vec<Message>) -> Terminal {
        st.begin_run();
        let options = loop_normalize_options(&self.q.config.normalize);
        if st.normalizer.options() != &options {
            st.normalizer = Normalizer::new(options);
        }
        for message in input {
            self.append(st, message);
        }
        loop {
            match self.iterate(st).await {
                Ok(transition) => {
                    st.record(transition);
                    self.emit(Event::Transition(transition));
                }
                Err(terminal) => return terminal,
            }
        }
    }

    async fn iterate(&mut self, st: &mut State) -> Result<Transition, Terminal> {
        if self.q.cancel.is_cancelled() {
            return Err(Terminal::AbortedStreaming);
        }
        let compactions = st.compaction.compactions;
        self.preprocess(st).await;
        let refills = st.compaction.refills_in_a_row;
        if st.compaction.compactions != compactions && refills >= crate::MAX_REFILLS_IN_A_ROW {
            return Err(Terminal::CompactionThrashing {
                compactions: refills,
            });
        }
        if let Some((tokens, limit)) = self
            .q
            .policy
            .blocking_limit(&st.messages, st.compaction.boundary)
        {
            return Err(Terminal::BlockingLimit { tokens, limit });
        }
        let request = self.build_request(st);
        self.emit(Event::Request(RequestInfo {
            turn: st.turn_count,
            messages: request.messages.len(),
            max_tokens: request.max_tokens,
        }));
        let mut executor = self.executor(st);
        match self.stream_response(st, request, &mut executor).await {
            Response::Aborted => {
                executor.abort(INTERRUPTED);
                self.deliver_ready(st, &mut executor);
                Err(Terminal::AbortedStreaming)
            }
            Response::Failed { error, fragments } => {
                self.after_failure(st, &mut executor, error, &fragments)
                    .await
            }
            Response::Complete {
                stop_reason,
                stop_details,
                fragments,
            } => {
                if stop_reason == Some(StopReason::Refusal) {
                    return Err(self.refused(st, &mut executor, stop_details, &fragments));
                }
                self.after_complete(st, &mut executor, stop_reason, &fragments)
                    .await
            }
        }
    }

    /// The executor of this turn's tool uses (with the history, when a tool needs it).
    fn executor(&self, st: &State) -> Executor {
        let mut executor = Executor::new(
            Arc::clone(&self.tools),
            Arc::clone(&self.q.permission),
            self.q.cancel.child_token(),
        );
        if executor.wants_history() {
            executor.set_history(Arc::from(st.visible()));
        }
        executor
    }

    /// After a failed call or stream: the recoveries that apply, else the error terminal.
    async fn after_failure(
        &mut self,
        st: &mut State,
        executor: &mut Executor,
        error: ServiceError,
        fragments: &[MessageId],
    ) -> Result<Transition, Terminal> {
        if executor.has_tool_uses() {
            executor.abort(STREAM_FAILED);
            self.deliver_ready(st, executor);
        } else if error.is_thinking_bound_elsewhere()
            && !st.compaction.drop_unbound_thinking
            && ThinkingConfig::dropping_unbound_blocks(self.q.config.thinking.as_ref()).is_some()
        {
            // The last resort: the API drops what it cannot verify (costing the re-thinking),
            // reported, until the next compaction replaces the prefix.
            st.compaction.drop_unbound_thinking = true;
            self.emit(Event::Warning(format!(
                "{}{error}",
                crate::event::DROP_BLOCK_WARNING
            )));
            return Ok(Transition::ThinkingDropBlockRetry);
        } else if error.is_too_large() {
            // Too many tokens or too many bytes: the same ladder (a compaction shrinks both).
            return self.prompt_too_long(st, &error).await;
        } else if error.is_max_tokens() {
            // A service that reports the cut as an error: the same ladder.
            return self.max_tokens(st, fragments);
        }
        self.append(
            st,
            Message::system(SystemKind::Informational {
                level: Level::Error,
                content: error.to_string(),
            }),
        );
        Err(Terminal::ModelError {
            message: error.to_string(),
            status: error.status(),
        })
    }

    /// A refusal: no usable turn. A tool use in it (a decline with a tool use open) is never
    /// run and gets its result, so the pair stays whole. Without one, what was streamed
    /// before the refusal is incomplete and the API says to discard it: it stays in the
    /// transcript, retracted, so no later request sends it.
    fn refused(
        &mut self,
        st: &mut State,
        executor: &mut Executor,
        stop_details: Option<threadline_wire::StopDetails>,
        fragments: &[MessageId],
    ) -> Terminal {
        if executor.has_tool_uses() {
            executor.abort(recovery::REFUSED);
            self.deliver_ready(st, executor);
        } else {
            for id in fragments {
                self.append(st, Message::tombstone(id.clone()));
            }
        }
        let details = stop_details.filter(|d| d.is_refusal());
        Terminal::Refused {
            category: details.as_ref().and_then(|d| d.category.clone()),
            explanation: details.and_then(|d| d.explanation),
        }
    }

    /// After a complete response (not a refusal): its tools, or what its stop reason asks.
    async fn after_complete(
        &mut self,
        st: &mut State,
        executor: &mut Executor,
        stop_reason: Option<StopReason>,
        fragments: &[MessageId],
    ) -> Result<Transition, Terminal> {
        if executor.has_tool_uses() {
            return self.finish_tools(st, executor).await;
        }
        match stop_reason {
            Some(StopReason::MaxTokens) => self.max_tokens(st, fragments),
            Some(StopReason::PauseTurn) => self.pause_turn(st, Transition::PauseTurnResume),
            Some(StopReason::Compaction) => self.pause_turn(st, Transition::ServerCompactionPause),
            Some(StopReason::ModelContextWindowExceeded) => self.context_window_exceeded(st).await,
            _ => {
                // The pauses counted are the ones in a row.
                st.recovery.pause_turn_resumes = 0;
                self.end_of_turn(st).await
            }
        }
    }

    async fn preprocess(&mut self, st: &mut State) {
        let tokens = st.traced_tokens();
        let outcome = self
            .q
            .policy
            .tool_result_budget(step_input(st, &mut self.request));
        let tokens = self.apply(st, "tool_result_budget", tokens, outcome);
        let outcome = self.q.policy.snip(step_input(st, &mut self.request));
        let tokens = self.apply(st, "snip", tokens, outcome);
        let outcome = self
            .q
            .policy
            .microcompact(step_input(st, &mut self.request));
        let tokens = self.apply(st, "microcompact", tokens, outcome);
        let outcome = self
            .q
            .policy
            .autocompact(step_input(st, &mut self.request))
            .await;
        match outcome {
            Ok(outcome) => {
                self.apply(st, "autocompact", tokens, outcome);
            }
            Err(error) => self.emit(Event::Warning(error.to_string())),
        }
    }

    /// Applies a context step's outcome. `before` is the visible history's estimated tokens
    /// before the step, when compaction events are recorded; the estimate after it is
    /// returned (and recorded in a `threadline.compaction` event when the step changed
    /// something).
    fn apply(
        &mut self,
        st: &mut State,
        step: &'static str,
        before: Option<u64>,
        outcome: StepOutcome,
    ) -> Option<u64> {
        let changed = outcome.changed();
        if outcome.rewritten {
            st.note_rewritten(outcome.first_rewritten);
            let end = st.messages.len();
            let indices: Vec<usize> = if outcome.changed.is_empty() {
                (outcome.first_rewritten.min(end)..end).collect()
            } else {
                outcome.changed.into_iter().filter(|&i| i < end).collect()
            };
            for index in indices {
                self.record_rewrite(st, index);
            }
        }
        st.note_length();
        let compactions = st.compaction.compactions;
        for message in outcome.append {
            self.append(st, message);
        }
        if st.compaction.compactions != compactions {
            self.request.reset_planner();
        }
        match before {
            Some(before) if changed => {
                let after = st.visible_tokens();
                telemetry::compaction(step, st.turn_count, before, after);
                Some(after)
            }
            _ => before,
        }
    }

    fn build_request(&mut self, st: &mut State) -> MessagesRequest {
        let start = st.compaction.boundary.min(st.messages.len());
        let messages = st.normalizer.update(&st.messages[start..]).clone();
        let max_tokens = st
            .max_output_tokens_override
            .unwrap_or(self.q.config.max_tokens);
        let mut request = self.request.unshaped(messages, max_tokens);
        if st.compaction.drop_unbound_thinking {
            request.thinking = ThinkingConfig::dropping_unbound_blocks(request.thinking.as_ref())
                .or(request.thinking);
        }
        if let Some(changes) = &self.q.tool_changes {
            let model = self.q.config.models.resolve(&self.q.config.model);
            let compactions = st.compaction.compactions;
            let applied = changes.apply(&mut request, model.model(), compactions, &self.q.tools);
            if let Some(runnable) = applied.runnable {
                self.tools = Arc::new(runnable);
            }
            if let Some(changed) = applied.changed {
                self.emit(Event::ToolsChanged(changed));
            }
            self.request.note_offered(&request);
        }
        self.request.finish(&mut request);
        let diagnose = self.q.config.cache_diagnostics;
        self.q.diagnoser.prepare(diagnose, st, &mut request);
        request
    }

    /// Calls the model and follows its stream, appending each completed block and queuing
    /// each completed tool use as it arrives. The call runs in a `chat` span
    /// ([`telemetry`](crate::telemetry)).
    async fn stream_response(
        &mut self,
        st: &mut State,
        request: MessagesRequest,
        executor: &mut Executor,
    ) -> Response {
        let conversation = self.q.config.conversation_id.as_deref();
        let span = telemetry::chat_span(&request, st.turn_count, conversation);
        let response = self
            .follow_response(st, request, executor, &span)
            .instrument(span.clone())
            .await;
        match &response {
            Response::Complete { .. } => {}
            Response::Failed { error, .. } => telemetry::record_error(&span, error),
            Response::Aborted => telemetry::record_cancelled(&span),
        }
        response
    }

    async fn follow_response(
        &mut self,
        st: &mut State,
        request: MessagesRequest,
        executor: &mut Executor,
        span: &tracing::Span,
    ) -> Response {
        let mut stream = match self.open_stream(request).await {
            Ok(stream) => stream,
            Err(response) => return response,
        };
        let mut cancelled = self.q.cancel.clone().cancelled_owned().boxed();
        let mut streamed = Streamed::default();
        let failure = loop {
            let wake = futures::future::poll_fn(|cx| {
                if cancelled.poll_unpin(cx).is_ready() {
                    return Poll::Ready(Wake::Cancelled);
                }
                if let Poll::Ready(event) = executor.poll_event(cx) {
                    return Poll::Ready(Wake::Tool(event));
                }
                stream.poll_next_unpin(cx).map(Wake::Model)
            })
            .await;
            match wake {
                Wake::Cancelled => {
                    self.keep_what_was_streamed(st, &mut streamed);
                    return Response::Aborted;
                }
                Wake::Tool(event) => self.report_tool_event(executor, event),
                Wake::Model(None) => break None,
                Wake::Model(Some(Err(error))) => break Some(error),
                Wake::Model(Some(Ok(event))) => {
                    if let Err(error) = self.on_stream_event(st, executor, &mut streamed, event) {
                        break Some(error);
                    }
                }
            }
        };
        let failure = failure.or_else(|| {
            (!streamed.acc.is_stopped()).then(|| {
                ServiceError::new(
                    ServiceErrorKind::Truncated,
                    "the stream ended before `message_stop`",
                )
                .after_events()
            })
        });
        if let Some(error) = failure {
            self.keep_what_was_streamed(st, &mut streamed);
            return Response::Failed {
                error,
                fragments: streamed.fragments,
            };
        }
        self.finish_response(st, streamed, span)
    }

    /// Calls the service; the cancellation token may stop the call before it answers.
    async fn open_stream(&mut self, request: MessagesRequest) -> Result<EventStream, Response> {
        let cancel = self.q.cancel.clone();
        let service = &mut self.q.service;
        let call = async move {
            futures::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(request).await
        };
        match futures::future::select(call.boxed(), cancel.cancelled_owned().boxed()).await {
            Either::Left((Ok(stream), _)) => Ok(stream),
            Either::Left((Err(error), _)) => Err(Response::Failed {
                error,
                fragments: Vec::new(),
            }),
            Either::Right(_) => Err(Response::Aborted),
        }
    }

    /// One event of the stream: accumulated and reported; a completed block is appended (a
    /// text block held back for the stop reason), a completed tool use handed to the
    /// executor. An error event or an undecodable stream is the error returned.
    fn on_stream_event(
        &mut self,
        st: &mut State,
        executor: &mut Executor,
        streamed: &mut Streamed,
        event: StreamEvent,
    ) -> Result<(), ServiceError> {
        let pushed = streamed.acc.push(&event);
        self.emit(Event::Stream(Box::new(event)));
        match pushed {
            Ok(None) => Ok(()),
            Ok(Some(done)) => {
                self.flush(st, &mut streamed.pending, &mut streamed.fragments);
                streamed.completed.push(done.index);
                let tool_use = done.as_tool_use().cloned();
                let message = fragment(&streamed.acc, done.block);
                match tool_use {
                    // A call is in the transcript before its tool can start (an invariant of
                    // the loop, in ARCHITECTURE.md): a crash after the side effect still leaves
                    // its record. One that cannot be recorded is not run.
                    Some(tool_use) => {
                        streamed.fragments.push(message.id().clone());
                        if self.append(st, message) {
                            executor.enqueue(&tool_use);
                        } else {
                            executor.refuse(&tool_use, NOT_RECORDED);
                        }
                    }
                    None => streamed.pending = Some(message),
                }
                Ok(())
            }
            Err(error) => Err(ServiceError::from_accumulate(error)),
        }
    }

    /// After a stream that stopped early: the held-back block and the partial text are kept.
    fn keep_what_was_streamed(&mut self, st: &mut State, streamed: &mut Streamed) {
        self.flush(st, &mut streamed.pending, &mut streamed.fragments);
        self.keep_partial_text(
            st,
            &streamed.acc,
            &streamed.completed,
            &mut streamed.fragments,
        );
    }

    /// After `message_stop`: the last fragment carries the stop reason and usage, the output
    /// tokens are counted, the cache diagnosis compared, the `chat` span completed.
    fn finish_response(
        &mut self,
        st: &mut State,
        mut streamed: Streamed,
        span: &tracing::Span,
    ) -> Response {
        let message = match std::mem::take(&mut streamed.acc).finish() {
            Ok(message) => message,
            Err(incomplete) => {
                self.flush(st, &mut streamed.pending, &mut streamed.fragments);
                return Response::Failed {
                    error: ServiceError::from_incomplete(incomplete),
                    fragments: streamed.fragments,
                };
            }
        };
        telemetry::record_response(span, &message);
        if crate::server_compaction::compacted(&message) {
            // The server summarised: the prefix the cache planner knew is gone.
            self.request.reset_planner();
        }
        let usage = message.usage.clone();
        if let Some(output) = usage.as_ref().and_then(|u| u.output_tokens) {
            st.output_tokens = st.output_tokens.saturating_add(output);
        }
        let mut last = streamed.pending.take().unwrap_or_else(|| {
            Message::assistant_fragment(&message.id, &message.model, Vec::new())
        });
        if let Message::Assistant(assistant) = &mut last {
            assistant.stop_reason = message.stop_reason.clone();
            assistant.usage = usage.map(Box::new);
        }
        streamed.fragments.push(last.id().clone());
        self.append(st, last);
        if let Some(report) = self.q.diagnoser.answer(st, &message) {
            self.append(st, report.record());
            self.emit(Event::CacheDiagnosis(report));
        }
        Response::Complete {
            stop_details: message.typed_stop_details(),
            stop_reason: message.stop_reason,
            fragments: streamed.fragments,
        }
    }

    /// Appends the block held back for the response's stop reason and usage, if any.
    fn flush(
        &mut self,
        st: &mut State,
        pending: &mut Option<Message>,
        fragments: &mut Vec<MessageId>,
    ) {
        if let Some(message) = pending.take() {
            fragments.push(message.id().clone());
            self.append(st, message);
        }
    }

    /// Keeps the text of a block the stream was inside when it stopped: what the user saw is
    /// not lost. (An unfinished tool use is not kept: it was never run.)
    fn keep_partial_text(
        &mut self,
        st: &mut State,
        acc: &MessageAccumulator,
        completed: &[usize],
        fragments: &mut Vec<MessageId>,
    ) {
        let Some(message) = acc.message() else {
            return;
        };
        let partial: Vec<ContentBlock> = message
            .content
            .iter()
            .enumerate()
            .filter(|(i, _)| !completed.contains(i))
            .filter_map(|(_, block)| match block {
                ContentBlock::Text(text) if !text.text.trim().is_empty() => Some(block.clone()),
                _ => None,
            })
            .collect();
        if !partial.is_empty() {
            let fragment = Message::assistant_fragment(&message.id, &message.model, partial);
            fragments.push(fragment.id().clone());
            self.append(st, fragment);
        }
    }

    fn report_tool_event(&self, executor: &Executor, event: ExecEvent) {
        match event {
            ExecEvent::Started { index } => {
                if let Some((id, name)) = executor.describe(index) {
                    self.emit(Event::ToolStarted {
                        tool_use_id: id.to_owned(),
                        name: name.to_owned(),
                    });
                }
            }
            ExecEvent::Progress { index, data } => {
                if let Some((id, _)) = executor.describe(index) {
                    self.emit(Event::Progress(Message::progress(id, data)));
                }
            }
            // Results are handed out in order by the caller.
            ExecEvent::Finished { .. } => {}
        }
    }

    /// Appends every result that is ready, in tool-use order.
    fn deliver_ready(&mut self, st: &mut State, executor: &mut Executor) {
        while let Some((id, output)) = executor.take_ready() {
            self.append(st, result_message(id, output));
        }
    }

    /// After a complete response with tool uses: results in order, then attachments.
    async fn finish_tools(
        &mut self,
        st: &mut State,
        executor: &mut Executor,
    ) -> Result<Transition, Terminal> {
        let mut cancelled = self.q.cancel.clone().cancelled_owned().boxed();
        loop {
            self.deliver_ready(st, executor);
            if executor.is_finished() {
                break;
            }
            let wake = futures::future::poll_fn(|cx| {
                if cancelled.poll_unpin(cx).is_ready() {
                    return Poll::Ready(Wake::Cancelled);
                }
                executor.poll_event(cx).map(Wake::Tool)
            })
            .await;
            match wake {
                Wake::Cancelled => {
                    executor.abort(INTERRUPTED);
                    self.deliver_ready(st, executor);
                    return Err(Terminal::AbortedTools);
                }
                Wake::Tool(event) => self.report_tool_event(executor, event),
                Wake::Model(_) => {}
            }
        }
        st.turn_count = st.turn_count.saturating_add(1);
        st.run_turns = st.run_turns.saturating_add(1);
        st.recovery.end_turn();
        st.max_output_tokens_override = None;
        st.stop_hook_active = false;
        if let Some(limit) = self.q.config.max_turns
            && st.run_turns >= limit
        {
            return Err(Terminal::MaxTurns { limit });
        }
        let attachments = self.q.attachments.collect(&st.messages).await;
        for message in attachments {
            self.append(st, message);
        }
        Ok(Transition::NextTurn)
    }

    /// A paused turn: its blocks are already in the history, and the next request sends them
    /// back as they are, which is how the API resumes the turn. It counts as a turn for
    /// `max_turns`.
    /// A paused turn (`pause_turn`, or a server-side compaction's pause) goes back as it is
    /// and the model continues; `transition` names which.
    fn pause_turn(
        &mut self,
        st: &mut State,
        transition: Transition,
    ) -> Result<Transition, Terminal> {
        if st.recovery.pause_turn_resumes >= MAX_PAUSE_TURN_RESUMES {
            self.emit(Event::Warning(format!(
                "the turn paused {MAX_PAUSE_TURN_RESUMES} times in a row; stopping with what was produced"
            )));
            return Err(Terminal::Completed);
        }
        st.recovery.pause_turn_resumes += 1;
        st.turn_count = st.turn_count.saturating_add(1);
        st.run_turns = st.run_turns.saturating_add(1);
        if let Some(limit) = self.q.config.max_turns
            && st.run_turns >= limit
        {
            return Err(Terminal::MaxTurns { limit });
        }
        Ok(transition)
    }

    fn max_tokens(
        &mut self,
        st: &mut State,
        fragments: &[MessageId],
    ) -> Result<Transition, Terminal> {
        let current = st
            .max_output_tokens_override
            .unwrap_or(self.q.config.max_tokens);
        match recovery::max_tokens_step(&st.recovery, current, self.q.config.escalated_limit()) {
            MaxTokensStep::Escalate(limit) => {
                // The same request again with room to finish: the cut output is retracted.
                for id in fragments {
                    self.append(st, Message::tombstone(id.clone()));
                }
                st.recovery.escalated = true;
                st.max_output_tokens_override = Some(limit);
                Ok(Transition::MaxOutputTokensEscalate)
            }
            MaxTokensStep::Resume => {
                st.recovery.escalated = true;
                st.recovery.max_output_tokens_recovery_count += 1;
                self.append(st, Message::meta_user_text(RESUME_DIRECTLY));
                Ok(Transition::MaxOutputTokensRecovery)
            }
            MaxTokensStep::GiveUp => Err(Terminal::Completed),
        }
    }

    /// An output cut at the context window: the cut output stays (it is what the model
    /// resumes from); compaction once, then "resume directly", bounded.
    async fn context_window_exceeded(&mut self, st: &mut State) -> Result<Transition, Terminal> {
        loop {
            match recovery::context_window_step(&st.recovery) {
                ContextWindowStep::Compact => {
                    st.recovery.has_attempted_window_compact = true;
                    let error = ServiceError::new(
                        ServiceErrorKind::Api,
                        "model_context_window_exceeded: the output reached the context window",
                    );
                    let before = st.traced_tokens();
                    match self
                        .q
                        .policy
                        .reactive_compact(step_input(st, &mut self.request), &error)
                        .await
                    {
                        Ok(outcome) if outcome.changed() => {
                            self.apply(st, "reactive_compact", before, outcome);
                            self.append(st, Message::meta_user_text(RESUME_DIRECTLY));
                            return Ok(Transition::ContextWindowCompact);
                        }
                        Ok(_) => {}
                        Err(failure) => self.emit(Event::Warning(failure.to_string())),
                    }
                }
                ContextWindowStep::Resume => {
                    st.recovery.context_window_recoveries += 1;
                    self.append(st, Message::meta_user_text(RESUME_DIRECTLY));
                    return Ok(Transition::ContextWindowRecovery);
                }
                ContextWindowStep::GiveUp => {
                    return Err(Terminal::ContextWindowExceeded {
                        attempts: st.recovery.context_window_recoveries,
                    });
                }
            }
        }
    }

    async fn end_of_turn(&mut self, st: &mut State) -> Result<Transition, Terminal> {
        let mut blocks = Vec::new();
        for hook in &mut self.q.stop_hooks {
            let ctx = StopContext {
                history: &st.messages,
                stop_hook_active: st.stop_hook_active,
            };
            match hook.on_stop(ctx).await {
                StopDecision::Allow => {}
                StopDecision::Block { message } => blocks.push(message),
                StopDecision::Stop { reason } => return Err(Terminal::HookStopped { reason }),
            }
        }
        if !blocks.is_empty() {
            if st.recovery.stop_hook_blocks >= self.q.config.max_stop_hook_blocks {
                return Err(Terminal::HookStopped {
                    reason: format!(
                        "stop hooks blocked {} times in this run",
                        st.recovery.stop_hook_blocks
                    ),
                });
            }
            let content = blocks.join("\n");
            self.append(
                st,
                Message::system(SystemKind::StopHookSummary {
                    content: content.clone(),
                    prevented_continuation: true,
                }),
            );
            self.append(st, Message::meta_user_text(content));
            st.recovery.stop_hook_blocks += 1;
            st.stop_hook_active = true;
            return Ok(Transition::StopHookBlocking);
        }
        st.stop_hook_active = false;
        if let Some(budget) = self.q.config.token_budget
            && let Some(text) = token_budget::continuation(
                &budget,
                st.output_tokens,
                st.output_tokens_at_last_continuation,
                st.recovery.budget_continuations,
            )
        {
            st.recovery.budget_continuations += 1;
            st.output_tokens_at_last_continuation = st.output_tokens;
            self.append(st, Message::meta_user_text(text));
            return Ok(Transition::TokenBudgetContinuation);
        }
        Err(Terminal::Completed)
    }

    async fn prompt_too_long(
        &mut self,
        st: &mut State,
        error: &ServiceError,
    ) -> Result<Transition, Terminal> {
        loop {
            match recovery::prompt_too_long_step(&st.recovery) {
                PromptTooLongStep::Drain => {
                    st.recovery.has_attempted_drain = true;
                    let before = st.traced_tokens();
                    let outcome = self.q.policy.drain(step_input(st, &mut self.request));
                    if outcome.changed() {
                        self.apply(st, "drain", before, outcome);
                        return Ok(Transition::CollapseDrainRetry);
                    }
                }
                PromptTooLongStep::ReactiveCompact => {
                    st.recovery.has_attempted_reactive_compact = true;
                    let before = st.traced_tokens();
                    match self
                        .q
                        .policy
                        .reactive_compact(step_input(st, &mut self.request), error)
                        .await
                    {
                        Ok(outcome) if outcome.changed() => {
                            self.apply(st, "reactive_compact", before, outcome);
                            return Ok(Transition::ReactiveCompactRetry);
                        }
                        Ok(_) => {}
                        Err(failure) => self.emit(Event::Warning(failure.to_string())),
                    }
                }
                PromptTooLongStep::GiveUp => {
                    self.append(
                        st,
                        Message::system(SystemKind::Informational {
                            level: Level::Error,
                            content: error.to_string(),
                        }),
                    );
                    return Err(Terminal::PromptTooLong {
                        tokens: error.prompt_too_long(),
                    });
                }
            }
        }
    }
}

fn step_input<'a>(st: &'a mut State, request: &'a mut RequestBuilder) -> StepInput<'a> {
    StepInput {
        history: &mut st.messages,
        boundary: st.compaction.boundary,
        turn_count: st.turn_count,
        failures_in_a_row: &mut st.compaction.failures_in_a_row,
        request,
    }
}

/// An assistant fragment of the response being accumulated, holding one block.
fn fragment(acc: &MessageAccumulator, block: ContentBlock) -> Message {
    match acc.message() {
        Some(message) => {
            let mut fragment =
                Message::assistant_fragment(&message.id, &message.model, vec![block]);
            if let Message::Assistant(assistant) = &mut fragment {
                assistant.usage = message.usage.clone().map(Box::new);
            }
            fragment
        }
        None => Message::assistant(vec![block]),
    }
}

/// The user message carrying a tool's result.
fn result_message(tool_use_id: String, output: ToolOutput) -> Message {
    let mut message = Message::tool_result(tool_use_id, output.content, output.is_error);
    if let Message::User(user) = &mut message {
        user.tool_use_result = output.raw;
    }
    message
}
