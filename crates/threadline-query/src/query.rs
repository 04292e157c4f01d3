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
use threadline_wire::accumulate::{AccumulateError, MessageAccumulator};
use threadline_wire::service::{EventStream, MessagesService, ServiceError, ServiceErrorKind};
use threadline_wire::{ContentBlock, MessagesRequest, StopReason, StreamEvent};
use tokio_util::sync::CancellationToken;

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
use crate::request_hooks::{CachePlanner, RequestShaper, Unchanged};
use crate::run::Run;
use crate::state::{State, loop_normalize_options};
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
    /// [`tool_changes`](crate::tool_changes)).
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
        let driver = async move {
            let mut driver = Driver::new(self, tx);
            let mut state = state;
            let terminal = driver.drive(&mut state, input).await;
            driver.emit(Event::Finished(Box::new(Finished { terminal, state })));
        };
        Run::new(driver.boxed(), rx)
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

enum Wake {
    Cancelled,
    Tool(ExecEvent),
    Model(Option<Result<StreamEvent, ServiceError>>),
}

struct Driver<S> {
    q: Query<S>,
    out: mpsc::UnboundedSender<Event>,
    tool_definitions: Vec<threadline_wire::Tool>,
    tools: Arc<ToolSet>,
}

impl<S> Driver<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    fn new(q: Query<S>, out: mpsc::UnboundedSender<Event>) -> Driver<S> {
        let tool_definitions = crate::tool_search::definitions(&q.tools, &q.config);
        let tools = Arc::new(q.tools.clone());
        Driver {
            q,
            out,
            tool_definitions,
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
            self.emit(Event::Warning(format!("transcript: {error}")));
        }
        st.messages.push(message.clone());
        st.note_appended(st.messages.len() - 1);
        self.emit(Event::Message(message));
        recorded
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
        self.preprocess(st).await;
        if let Some((tokens, limit)) = self.q.policy.blocking_limit(st.visible()) {
            return Err(Terminal::BlockingLimit { tokens, limit });
        }
        let request = self.build_request(st);
        self.emit(Event::Request(RequestInfo {
            turn: st.turn_count,
            messages: request.messages.len(),
            max_tokens: request.max_tokens,
        }));
        let mut executor = Executor::new(
            Arc::clone(&self.tools),
            Arc::clone(&self.q.permission),
            self.q.cancel.child_token(),
        );
        if executor.wants_history() {
            executor.set_history(Arc::from(st.visible()));
        }
        match self.stream_response(st, request, &mut executor).await {
            Response::Aborted => {
                executor.abort(INTERRUPTED);
                self.deliver_ready(st, &mut executor);
                Err(Terminal::AbortedStreaming)
            }
            Response::Failed { error, fragments } => {
                if executor.has_tool_uses() {
                    executor.abort(STREAM_FAILED);
                    self.deliver_ready(st, &mut executor);
                } else if is_prompt_too_long(&error) {
                    return self.prompt_too_long(st, &error).await;
                } else if error.is_max_tokens() {
                    // A service that reports the cut as an error: the same ladder.
                    return self.max_tokens(st, &fragments);
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
            Response::Complete {
                stop_reason,
                stop_details,
                fragments,
            } => {
                if stop_reason == Some(StopReason::Refusal) {
                    // No usable turn. A tool use in it (a decline with a tool use open) is never
                    // run and gets its result, so the pair stays whole. Without one, what was
                    // streamed before the refusal is incomplete and the API says to discard
                    // it: it stays in the transcript, retracted, so no later request sends it.
                    if executor.has_tool_uses() {
                        executor.abort(recovery::REFUSED);
                        self.deliver_ready(st, &mut executor);
                    } else {
                        for id in &fragments {
                            self.append(st, Message::tombstone(id.clone()));
                        }
                    }
                    let details = stop_details.filter(|d| d.is_refusal());
                    return Err(Terminal::Refused {
                        category: details.as_ref().and_then(|d| d.category.clone()),
                        explanation: details.and_then(|d| d.explanation),
                    });
                }
                if executor.has_tool_uses() {
                    return self.finish_tools(st, &mut executor).await;
                }
                if stop_reason == Some(StopReason::MaxTokens) {
                    return self.max_tokens(st, &fragments);
                }
                if stop_reason == Some(StopReason::PauseTurn) {
                    return self.pause_turn(st, Transition::PauseTurnResume);
                }
                if stop_reason == Some(StopReason::Compaction) {
                    return self.pause_turn(st, Transition::ServerCompactionPause);
                }
                if stop_reason == Some(StopReason::ModelContextWindowExceeded) {
                    return self.context_window_exceeded(st).await;
                }
                // The pauses counted are the ones in a row.
                st.recovery.pause_turn_resumes = 0;
                self.end_of_turn(st).await
            }
        }
    }

    async fn preprocess(&mut self, st: &mut State) {
        let outcome = self.q.policy.tool_result_budget(step_input(st));
        self.apply(st, outcome);
        let outcome = self.q.policy.snip(step_input(st));
        self.apply(st, outcome);
        let outcome = self.q.policy.microcompact(step_input(st));
        self.apply(st, outcome);
        let outcome = self.q.policy.autocompact(step_input(st)).await;
        match outcome {
            Ok(outcome) => self.apply(st, outcome),
            Err(error) => self.emit(Event::Warning(error.to_string())),
        }
    }

    /// Applies a context step's outcome.
    fn apply(&mut self, st: &mut State, outcome: StepOutcome) {
        if outcome.rewritten {
            st.normalizer.reset();
        }
        let compactions = st.compaction.compactions;
        for message in outcome.append {
            self.append(st, message);
        }
        if st.compaction.compactions != compactions {
            self.q.planner.reset();
        }
    }

    fn build_request(&mut self, st: &mut State) -> MessagesRequest {
        let start = st.compaction.boundary.min(st.messages.len());
        let messages = st.normalizer.update(&st.messages[start..]).to_vec();
        let max_tokens = st
            .max_output_tokens_override
            .unwrap_or(self.q.config.max_tokens);
        let mut request = MessagesRequest::new(self.q.config.model.clone(), max_tokens, messages);
        request.system = self.q.config.system.clone();
        request.thinking = self.q.config.thinking.clone();
        request.fallbacks = self.q.config.fallbacks.clone();
        request.context_management = self.q.config.context_management.clone();
        if !self.tool_definitions.is_empty() {
            request.tools = Some(self.tool_definitions.clone());
        }
        if let Some(changes) = &self.q.tool_changes {
            let table = threadline_wire::model::ModelTable::builtin();
            let model = table.resolve(&self.q.config.model);
            let compactions = st.compaction.compactions;
            let applied = changes.apply(&mut request, model.model(), compactions, &self.q.tools);
            if let Some(runnable) = applied.runnable {
                self.tools = Arc::new(runnable);
            }
            if let Some(changed) = applied.changed {
                self.emit(Event::ToolsChanged(changed));
            }
        }
        request.stream = Some(true);
        self.q.shaper.shape(&mut request);
        self.q.planner.plan(&mut request);
        let diagnose = self.q.config.cache_diagnostics;
        self.q.diagnoser.prepare(diagnose, st, &mut request);
        request
    }

    /// Calls the model and follows its stream, appending each completed block and queuing
    /// each completed tool use as it arrives.
    async fn stream_response(
        &mut self,
        st: &mut State,
        request: MessagesRequest,
        executor: &mut Executor,
    ) -> Response {
        let cancel = self.q.cancel.clone();
        let service = &mut self.q.service;
        let call = async move {
            futures::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(request).await
        };
        let stream =
            match futures::future::select(call.boxed(), cancel.clone().cancelled_owned().boxed())
                .await
            {
                Either::Left((Ok(stream), _)) => stream,
                Either::Left((Err(error), _)) => {
                    return Response::Failed {
                        error,
                        fragments: Vec::new(),
                    };
                }
                Either::Right(_) => return Response::Aborted,
            };
        let mut stream: EventStream = stream;
        let mut cancelled = cancel.cancelled_owned().boxed();
        let mut acc = MessageAccumulator::new();
        let mut pending: Option<Message> = None;
        let mut completed: Vec<usize> = Vec::new();
        let mut fragments: Vec<MessageId> = Vec::new();
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
                    self.flush(st, &mut pending, &mut fragments);
                    self.keep_partial_text(st, &acc, &completed, &mut fragments);
                    return Response::Aborted;
                }
                Wake::Tool(event) => self.report_tool_event(executor, event),
                Wake::Model(None) => break None,
                Wake::Model(Some(Err(error))) => break Some(error),
                Wake::Model(Some(Ok(event))) => {
                    let pushed = acc.push(&event);
                    self.emit(Event::Stream(Box::new(event)));
                    match pushed {
                        Ok(None) => {}
                        Ok(Some(done)) => {
                            self.flush(st, &mut pending, &mut fragments);
                            completed.push(done.index);
                            let tool_use = done.as_tool_use().cloned();
                            let message = fragment(&acc, done.block);
                            match tool_use {
                                // A call is in the transcript before its tool can start
                                // (invariant 10): a crash after the side effect still
                                // leaves its record. One that cannot be recorded is not run.
                                Some(tool_use) => {
                                    fragments.push(message.id().clone());
                                    if self.append(st, message) {
                                        executor.enqueue(&tool_use);
                                    } else {
                                        executor.refuse(&tool_use, NOT_RECORDED);
                                    }
                                }
                                None => pending = Some(message),
                            }
                        }
                        Err(AccumulateError::Api { error, request_id }) => {
                            break Some(
                                ServiceError::from_error_event(error, request_id).after_events(),
                            );
                        }
                        Err(error) => {
                            break Some(
                                ServiceError::new(ServiceErrorKind::Decode, error.to_string())
                                    .after_events(),
                            );
                        }
                    }
                }
            }
        };
        let failure = failure.or_else(|| {
            (!acc.is_stopped()).then(|| {
                ServiceError::new(
                    ServiceErrorKind::Truncated,
                    "the stream ended before `message_stop`",
                )
                .after_events()
            })
        });
        if let Some(error) = failure {
            self.flush(st, &mut pending, &mut fragments);
            self.keep_partial_text(st, &acc, &completed, &mut fragments);
            return Response::Failed { error, fragments };
        }
        match std::mem::take(&mut acc).finish() {
            Ok(message) => {
                if crate::server_compaction::compacted(&message) {
                    // The server summarised: the prefix the cache planner knew is gone.
                    self.q.planner.reset();
                }
                let usage = message.usage.clone();
                if let Some(output) = usage.as_ref().and_then(|u| u.output_tokens) {
                    st.output_tokens = st.output_tokens.saturating_add(output);
                }
                let mut last = pending.take().unwrap_or_else(|| {
                    Message::assistant_fragment(&message.id, &message.model, Vec::new())
                });
                if let Message::Assistant(assistant) = &mut last {
                    assistant.stop_reason = message.stop_reason.clone();
                    assistant.usage = usage.map(Box::new);
                }
                fragments.push(last.id().clone());
                self.append(st, last);
                if let Some(report) = self.q.diagnoser.answer(st, &message) {
                    self.append(st, report.record());
                    self.emit(Event::CacheDiagnosis(report));
                }
                Response::Complete {
                    stop_details: message.typed_stop_details(),
                    stop_reason: message.stop_reason,
                    fragments,
                }
            }
            Err(incomplete) => {
                self.flush(st, &mut pending, &mut fragments);
                Response::Failed {
                    error: ServiceError::new(ServiceErrorKind::Truncated, incomplete.to_string())
                        .after_events(),
                    fragments,
                }
            }
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
        st.recovery = Default::default();
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
                    match self.q.policy.reactive_compact(step_input(st), &error).await {
                        Ok(outcome) if outcome.changed() => {
                            self.apply(st, outcome);
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
                        "stop hooks blocked {} times in a row",
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
                    let outcome = self.q.policy.drain(step_input(st));
                    if outcome.changed() {
                        self.apply(st, outcome);
                        return Ok(Transition::CollapseDrainRetry);
                    }
                }
                PromptTooLongStep::ReactiveCompact => {
                    st.recovery.has_attempted_reactive_compact = true;
                    match self.q.policy.reactive_compact(step_input(st), error).await {
                        Ok(outcome) if outcome.changed() => {
                            self.apply(st, outcome);
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

fn step_input(st: &mut State) -> StepInput<'_> {
    StepInput {
        history: &mut st.messages,
        boundary: st.compaction.boundary,
        turn_count: st.turn_count,
    }
}

fn is_prompt_too_long(error: &ServiceError) -> bool {
    error.prompt_too_long().is_some()
        || (error.kind() == ServiceErrorKind::Api && error.message().contains("prompt is too long"))
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
