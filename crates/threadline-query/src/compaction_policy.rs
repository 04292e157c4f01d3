//! The loop's [`ContextPolicy`] backed by `threadline-compact` (feature `compact`): the
//! tool-result budget, the time-based microcompact, autocompact whose summary is a model call
//! through the loop's own service, the blocking limit, and reactive compaction after `prompt
//! is too long`.
//!
//! This is wiring only: what runs and when is decided by `threadline-compact`
//! ([`Compaction`]'s settings, [`Thresholds`](threadline_compact::Thresholds)'s
//! `exact_count_from`, `autocompact_due` and `blocked`). The compact crate's drivers return
//! `Send` futures, so the policy awaits them inside the loop's (`Send`) hooks, with a
//! [`Summarizer`] that calls the model through the service.

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use threadline_compact::on_demand::{self, OnDemandError};
use threadline_compact::summarizer::SummaryFuture;
use threadline_compact::{
    CircuitBreaker, CompactContext, Compacted, Compaction, DirStore, HistoryOnly, MemoryStore,
    ReactiveGuard, SideStore, SummarizeError, Summarizer, apply_budget, autocompact,
    estimate_context_from, microcompact_time_based, overhead_of, reactive_compact,
};
use threadline_message::{CompactTrigger, Message};
use threadline_wire::model::Model;
use threadline_wire::service::{CountTokens as _, MessagesService, ServiceError};
use threadline_wire::{ContentBlock, CountTokensRequest, MessagesRequest, ResponseMessage, Role};

use crate::config::QueryConfig;
use crate::context_policy::{ContextPolicy, PolicyError, StepInput, StepOutcome};
use crate::request_builder::RequestBuilder;

/// What survives from one run to the next in this process: the results the budget saved in
/// memory. Clones share it; give the same memory to the policy of every run of a session.
/// (The autocompact circuit breaker's count is in the loop's state,
/// [`CompactionTracking::failures_in_a_row`](crate::CompactionTracking::failures_in_a_row),
/// so that it lives as long as the session.)
#[derive(Debug, Clone, Default)]
pub struct CompactionMemory(Arc<Mutex<MemoryInner>>);

#[derive(Debug, Default)]
struct MemoryInner {
    store: Option<MemoryStore>,
}

impl CompactionMemory {
    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl QueryConfig {
    /// This configuration with `compaction`'s server-side edit (where its mode asks for it and
    /// the model has it) appended after the caller's own context edits: the configuration of
    /// every request of a loop that compacts with `compaction`.
    #[must_use]
    pub fn with_compaction_edit(mut self, compaction: &Compaction) -> QueryConfig {
        let row = self.models.resolve(&self.model).model();
        self.context_management =
            compaction.context_management_with(row, self.context_management.take());
        self
    }
}

/// The [`ContextPolicy`] of `threadline-compact`, one per run (its [`CompactionMemory`] is
/// shared by the runs of a session): the tool-result budget, the time-based microcompact,
/// autocompact whose summary is a model call through the loop's own service, the blocking
/// limit, and reactive compaction after `prompt is too long`. What runs and when is decided
/// by `threadline-compact` ([`Compaction`], [`Thresholds`](threadline_compact::Thresholds)).
///
///
/// The summary request is the loop's own request plus the summary instruction: the policy
/// builds its base with the loop's [`RequestBuilder`](crate::RequestBuilder) (handed over in
/// every [`StepInput`]), so it has the main request's model, system prompt, tools (with
/// their deferrals), `thinking`, `context_management`, shaping and cache markers, and the
/// main request's messages as its prefix.
///
/// ```
/// use threadline_compact::Compaction;
/// use threadline_query::scripted::ScriptedService;
/// use threadline_query::{CompactionPolicy, Query, QueryConfig, SharedPlanner};
///
/// let service = ScriptedService::new([]);
/// let config = QueryConfig::new("claude-sonnet-4-5", 1024);
/// let policy = CompactionPolicy::new(
///     service.clone(),
///     Compaction::default().autocompact_at(20_000),
///     &config,
/// );
/// let query = Query::new(service, config)
///     .with_policy(policy)
///     .with_cache_planner(SharedPlanner::default());
/// # let _ = query;
/// ```
pub struct CompactionPolicy<S> {
    service: S,
    options: Compaction,
    memory: CompactionMemory,
    /// The model's row of the table (a conservative default for unknown ids).
    model: Model,
    /// The tokens of the system prompt and tools of the loop's requests, as last seen in a
    /// step's request builder (for [`ContextPolicy::blocking_limit`], which gets none).
    overhead: u64,
}

impl<S> std::fmt::Debug for CompactionPolicy<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionPolicy")
            .field("options", &self.options)
            .field("model", &self.model.id)
            .finish_non_exhaustive()
    }
}

impl<S> CompactionPolicy<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    /// The policy of `compaction` for a loop with `config`; summaries are model calls
    /// through `service` (give it the loop's own service). The requests it builds come from
    /// the loop's [`RequestBuilder`](crate::RequestBuilder).
    pub fn new(service: S, compaction: Compaction, config: &QueryConfig) -> CompactionPolicy<S> {
        CompactionPolicy {
            service,
            options: compaction,
            memory: CompactionMemory::default(),
            model: config.models.resolve(&config.model).model().clone(),
            overhead: 0,
        }
    }

    /// The system prompt's and tools' tokens of `builder`'s requests, remembered for the
    /// blocking limit.
    fn overhead(&mut self, builder: &RequestBuilder) -> u64 {
        self.overhead = overhead_of(&builder.bare());
        self.overhead
    }

    /// The memory of earlier runs of the session (default: a new one).
    pub fn with_memory(mut self, memory: CompactionMemory) -> Self {
        self.memory = memory;
        self
    }

    /// Runs the driver, its summary written by the model through the service; the breaker
    /// starts from the session's count of failures in a row, which it updates.
    async fn compact(
        &mut self,
        kind: Kind<'_>,
        history: &[Message],
        base: &MessagesRequest,
        failures_in_a_row: &mut u32,
    ) -> Result<Compacted, PolicyError> {
        let thresholds = self.options.thresholds(&self.model);
        let mut options = self.options.autocompact;
        let (limit, failures) = match kind {
            Kind::Blocking => {
                options.reattach = threadline_compact::ReattachOptions {
                    max_files: 0,
                    file_tokens: 0,
                    total_tokens: 0,
                };
                let failures = (*failures_in_a_row).min(CircuitBreaker::LIMIT - 1);
                (thresholds.blocking, failures)
            }
            Kind::Auto | Kind::Reactive(_) => (thresholds.autocompact, *failures_in_a_row),
        };
        let mut breaker = CircuitBreaker::with_failures(failures);
        let context = CompactContext {
            model: &self.model,
            base,
            limit,
            now: threadline_message::determinism::now(),
            trigger: match kind {
                Kind::Auto | Kind::Blocking => CompactTrigger::Auto,
                Kind::Reactive(_) => CompactTrigger::Reactive,
            },
            files: &HistoryOnly,
        };
        let options = &options;
        let summarizer = ServiceSummarizer {
            service: futures::lock::Mutex::new(&mut self.service),
        };
        let result = match kind {
            Kind::Auto | Kind::Blocking => {
                autocompact(history, &summarizer, &context, options, &mut breaker)
                    .await
                    .map_err(|e| PolicyError::from_source("autocompact", e))
            }
            Kind::Reactive(error) => {
                let mut guard = ReactiveGuard::new();
                reactive_compact(
                    history,
                    error,
                    &summarizer,
                    &context,
                    options,
                    &mut breaker,
                    &mut guard,
                )
                .await
                .map_err(|e| PolicyError::from_source("reactive_compact", e))
            }
        };
        *failures_in_a_row = breaker.consecutive_failures();
        result
    }
}

impl<S> CompactionPolicy<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    /// On-demand compaction of `history` (`threadline_compact::on_demand`): `base`, the
    /// request the loop would send now, with the `compaction` field, through the loop's own
    /// service; the answer's signed block starts the new history. With `older` (the cut of
    /// a keep-recent-turns compaction and the loop's request for the messages before it),
    /// that request is sent instead and the messages from the cut on follow the block.
    async fn on_demand(
        &mut self,
        history: &[Message],
        base: &MessagesRequest,
        older: Option<(usize, MessagesRequest)>,
    ) -> Result<Compacted, OnDemandError> {
        let instructions = self.options.server.instructions.as_deref();
        let summarized = older.as_ref().map_or(base, |(_, older)| older);
        let request = on_demand::compaction_request(summarized, instructions);
        let answer = answer_message(&mut self.service, request)
            .await
            .map_err(|e| OnDemandError::Failed {
                message: e.to_string(),
            })?;
        let block = on_demand::read_answer(&answer)?;
        if let Some((cut, _)) = older {
            return on_demand::swapped_keeping(
                history,
                cut,
                block,
                overhead_of(base),
                CompactTrigger::Auto,
                threadline_message::determinism::now(),
            );
        }
        on_demand::swapped(
            history,
            block,
            overhead_of(base),
            CompactTrigger::Auto,
            threadline_message::determinism::now(),
        )
    }
}

/// Whether `older` (the request for the messages before a keep-recent cut) is what `base`
/// (the request for all of them) starts with, message for message (cache markers aside),
/// ending with an assistant message that a user message follows: the kept turns then start
/// at a message `base` sends as it is. Normalization can blur a cut (an answer it drops
/// merges the user messages around it; the workspace context goes where the whole request
/// puts it): such a cut is not taken, and the whole history is summarized instead.
fn sent_as_a_prefix(older: &MessagesRequest, base: &MessagesRequest) -> bool {
    let (older, all) = (&older.messages, &base.messages);
    let plain = |m: &threadline_wire::MessageParam| {
        serde_json::to_value(m)
            .map(|v| threadline_wire::cache_control::without_cache_control(&v))
            .ok()
    };
    older.len() < all.len()
        && older.last().is_some_and(|m| m.role == Role::Assistant)
        && all[older.len()].role == Role::User
        && older
            .iter()
            .zip(all)
            .all(|(a, b)| matches!((plain(a), plain(b)), (Some(a), Some(b)) if a == b))
}

/// Writes the summary with a model call through the loop's own service (the policy's
/// service, borrowed for the compaction). The async lock only serializes calls: the driver
/// makes one at a time.
struct ServiceSummarizer<'s, S> {
    service: futures::lock::Mutex<&'s mut S>,
}

impl<S> Summarizer for ServiceSummarizer<'_, S>
where
    S: MessagesService + Send,
    S::Future: Send,
{
    fn summarize<'a>(&'a self, request: &'a MessagesRequest) -> SummaryFuture<'a> {
        Box::pin(async move {
            let mut service = self.service.lock().await;
            answer_text(&mut **service, request.clone())
                .await
                .map_err(|e| SummarizeError::from_service(&e))
        })
    }
}

/// Sends `request` (streamed) and returns the answer.
async fn answer_message<S>(
    service: &mut S,
    mut request: MessagesRequest,
) -> Result<ResponseMessage, ServiceError>
where
    S: MessagesService,
{
    request.stream = Some(true);
    futures::future::poll_fn(|cx| service.poll_ready(cx)).await?;
    let stream = service.call(request).await?;
    threadline_wire::service::collect_message(stream).await
}

/// Sends `request` (streamed) and returns the text of the answer.
async fn answer_text<S>(service: &mut S, request: MessagesRequest) -> Result<String, ServiceError>
where
    S: MessagesService,
{
    let message = answer_message(service, request).await?;
    let text: Vec<&str> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    Ok(text.join("\n"))
}

/// Which driver to run.
#[derive(Clone, Copy)]
enum Kind<'e> {
    /// At the autocompact threshold: the result must come under it.
    Auto,
    /// At the blocking limit, the last chance before the run stops there: one attempt even
    /// when the breaker has paused compaction, and a result under the blocking limit is
    /// enough (what a compaction keeps may alone be over the threshold). No files are
    /// re-attached, so the context is as small as the compaction can make it.
    Blocking,
    Reactive(&'e ServiceError),
}

/// The appended messages of a compaction (the history keeps what came before the boundary).
fn appended(compacted: Compacted) -> StepOutcome {
    StepOutcome::appended(compacted.messages)
}

impl<S> ContextPolicy for CompactionPolicy<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    fn tool_result_budget(&mut self, input: StepInput<'_>) -> StepOutcome {
        self.overhead(input.request);
        if !self.options.enabled {
            return StepOutcome::unchanged();
        }
        let start = input.boundary.min(input.history.len());
        let visible = &mut input.history[start..];
        let report = match &self.options.side_dir {
            Some(dir) => {
                let mut store = DirStore::new(dir.clone());
                apply_budget(
                    visible,
                    &self.options.budget,
                    &mut store as &mut dyn SideStore,
                )
            }
            None => {
                let mut memory = self.memory.lock();
                let store = memory.store.get_or_insert_with(MemoryStore::default);
                apply_budget(visible, &self.options.budget, store as &mut dyn SideStore)
            }
        };
        match report.first_changed {
            Some(first) => StepOutcome::rewritten_from(start + first),
            None => StepOutcome::unchanged(),
        }
    }

    fn microcompact(&mut self, input: StepInput<'_>) -> StepOutcome {
        let Some(options) = self.options.local_microcompact(&self.model) else {
            return StepOutcome::unchanged();
        };
        let start = input.boundary.min(input.history.len());
        let visible = &input.history[start..];
        let Some(result) =
            microcompact_time_based(visible, options, threadline_message::determinism::now())
        else {
            return StepOutcome::unchanged();
        };
        let n = visible.len();
        let same_ids = result.messages.len() >= n
            && result.messages[..n]
                .iter()
                .zip(visible)
                .all(|(a, b)| a.id() == b.id());
        if !same_ids {
            return StepOutcome::unchanged();
        }
        let mut messages = result.messages;
        let append = messages.split_off(n);
        let mut changed = Vec::new();
        for (i, (slot, message)) in input.history[start..].iter_mut().zip(messages).enumerate() {
            if *slot != message {
                changed.push(start + i);
                *slot = message;
            }
        }
        let mut outcome = StepOutcome::rewritten_at(changed);
        outcome.append = append;
        outcome
    }

    fn autocompact<'a>(
        &'a mut self,
        input: StepInput<'a>,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        Box::pin(async move {
            if !self.options.local_autocompact(&self.model) {
                return Ok(StepOutcome::unchanged());
            }
            let thresholds = self.options.thresholds(&self.model);
            let counter = self.options.token_counter.clone();
            // The cheap check first: the full request is only built when it is needed.
            let estimate =
                estimate_context_from(input.history, input.boundary, self.overhead(input.request));
            if estimate < thresholds.exact_count_from(counter.is_some()) {
                return Ok(StepOutcome::unchanged());
            }
            let start = input.boundary.min(input.history.len());
            let base = input.request.preview(&input.history[start..]);
            let counted = match &counter {
                Some(counter) => counter
                    .count_tokens(CountTokensRequest::from(&base))
                    .await
                    .ok(),
                None => None,
            };
            let reached = match counted {
                Some(_) => thresholds.autocompact_due(estimate, counted),
                // No count (none asked for, or it failed): the estimate of the request as
                // sent decides.
                None => {
                    let estimate =
                        estimate_context_from(input.history, input.boundary, overhead_of(&base));
                    thresholds.autocompact_due(estimate, None)
                }
            };
            if !reached {
                return Ok(StepOutcome::unchanged());
            }
            if self.options.mode.choose(&self.model).on_demand {
                // Keep-recent-turns: the request holds only the older part, and the kept
                // turns follow the block verbatim. Not past a mid-conversation `system`
                // message (a tool change's announcement): after the swap the loop announces
                // the net change once, which would land among the kept turns and edit what
                // their thinking is bound to; the whole history is summarized then.
                let announced = base.messages.iter().any(|m| m.role == Role::System);
                let keep = (self.options.server.keep_recent_turns && !announced)
                    .then(|| {
                        on_demand::keep_recent_cut(
                            &input.history[start..],
                            &self.options.autocompact.tail,
                        )
                    })
                    .flatten();
                let older = keep
                    .map(|cut| {
                        let older = input.request.preview(&input.history[start..start + cut]);
                        (cut, older)
                    })
                    .filter(|(_, older)| sent_as_a_prefix(older, &base));
                let history: &[Message] = input.history;
                match self.on_demand(history, &base, older).await {
                    Ok(compacted) => {
                        *input.failures_in_a_row = 0;
                        return Ok(appended(compacted));
                    }
                    // No summary, or the call failed: the local autocompact runs instead.
                    Err(error) => tracing::warn!(
                        target: "threadline.compaction",
                        %error,
                        "on-demand compaction gave no summary; compacting locally"
                    ),
                }
            }
            let history: &[Message] = input.history;
            // At the blocking limit the run would stop here: the last chance.
            let kind = if thresholds.blocked(estimate).is_some() {
                Kind::Blocking
            } else {
                Kind::Auto
            };
            self.compact(kind, history, &base, input.failures_in_a_row)
                .await
                .map(appended)
        })
    }

    fn blocking_limit(&self, history: &[Message], boundary: usize) -> Option<(u64, u64)> {
        if !self.options.enabled {
            return None;
        }
        // The whole history: given only what follows the boundary, the estimate would trust
        // the usage of a carried-over answer, which counted the context before the
        // compaction.
        let tokens = estimate_context_from(history, boundary, self.overhead);
        self.options.thresholds(&self.model).blocked(tokens)
    }

    fn reactive_compact<'a>(
        &'a mut self,
        input: StepInput<'a>,
        error: &'a ServiceError,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        Box::pin(async move {
            if !self.options.enabled {
                return Ok(StepOutcome::unchanged());
            }
            let start = input.boundary.min(input.history.len());
            let base = input.request.preview(&input.history[start..]);
            let history: &[Message] = input.history;
            self.compact(
                Kind::Reactive(error),
                history,
                &base,
                input.failures_in_a_row,
            )
            .await
            .map(appended)
        })
    }
}
