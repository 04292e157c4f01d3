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
use threadline_cache::Planner;
use threadline_compact::summarizer::SummaryFuture;
use threadline_compact::{
    CircuitBreaker, CompactContext, Compacted, Compaction, DirStore, HistoryOnly, MemoryStore,
    ReactiveGuard, SideStore, SummarizeError, Summarizer, apply_budget, autocompact,
    estimate_context, microcompact_time_based, overhead_of, reactive_compact,
};
use threadline_message::{CompactTrigger, Message};
use threadline_normalize::{Options, normalize};
use threadline_wire::model::Model;
use threadline_wire::service::{CountTokens as _, MessagesService, ServiceError};
use threadline_wire::{ContentBlock, CountTokensRequest, MessagesRequest, SystemPrompt};

use crate::config::QueryConfig;
use crate::context_policy::{ContextPolicy, PolicyError, StepInput, StepOutcome};
use crate::request_hooks::RequestShaper;
use crate::tool::ToolSet;

/// What survives from one run to the next: the autocompact circuit breaker and the results
/// the budget saved in memory. Clones share it; give the same memory to the policy of every
/// run of a session.
#[derive(Debug, Clone, Default)]
pub struct CompactionMemory(Arc<Mutex<MemoryInner>>);

#[derive(Debug, Default)]
struct MemoryInner {
    breaker: CircuitBreaker,
    store: Option<MemoryStore>,
}

impl CompactionMemory {
    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What every request shares, to rebuild the request the loop would send (its prefix is the
/// summary request's).
struct RequestTemplate {
    model: String,
    max_tokens: u64,
    system: Option<SystemPrompt>,
    tools: Vec<threadline_wire::ToolDefinition>,
    normalize: Options,
    shaper: Option<Box<dyn RequestShaper>>,
    /// Whether requests carry cache markers (then the summary request does too, so it reads
    /// the main request's cached prefix).
    cache_markers: bool,
}

impl RequestTemplate {
    /// The tokens of the system prompt and tools (what every request carries besides its
    /// messages), by the estimate.
    fn overhead(&self) -> u64 {
        let mut bare = MessagesRequest::new(self.model.clone(), self.max_tokens, Vec::new());
        bare.system = self.system.clone();
        if !self.tools.is_empty() {
            bare.tools = Some(self.tools.clone());
        }
        overhead_of(&bare)
    }

    /// The request for `visible`, shaped, with markers when the loop places them.
    fn request(&mut self, visible: &[Message]) -> MessagesRequest {
        let messages = normalize(visible, &self.normalize).messages;
        let mut request = MessagesRequest::new(self.model.clone(), self.max_tokens, messages);
        request.system = self.system.clone();
        if !self.tools.is_empty() {
            request.tools = Some(self.tools.clone());
        }
        request.stream = Some(true);
        if let Some(shaper) = &mut self.shaper {
            shaper.shape(&mut request);
        }
        if self.cache_markers {
            Planner::default().plan(&mut request);
        }
        request
    }
}

/// The [`ContextPolicy`] of `threadline-compact`, one per run (its [`CompactionMemory`] is
/// shared by the runs of a session): the tool-result budget, the time-based microcompact,
/// autocompact whose summary is a model call through the loop's own service, the blocking
/// limit, and reactive compaction after `prompt is too long`. What runs and when is decided
/// by `threadline-compact` ([`Compaction`], [`Thresholds`](threadline_compact::Thresholds)).
///
/// ```
/// use threadline_compact::Compaction;
/// use threadline_query::scripted::ScriptedService;
/// use threadline_query::{CompactionPolicy, Query, QueryConfig, SharedPlanner, ToolSet};
///
/// let service = ScriptedService::new([]);
/// let config = QueryConfig::new("claude-sonnet-4-5", 1024);
/// let policy = CompactionPolicy::new(
///     service.clone(),
///     Compaction::default().autocompact_at(20_000),
///     &config,
///     &ToolSet::new(),
/// )
/// .with_cache_markers(true);
/// let query = Query::new(service, config)
///     .with_policy(policy)
///     .with_cache_planner(SharedPlanner::default());
/// # let _ = query;
/// ```
pub struct CompactionPolicy<S> {
    service: S,
    options: Compaction,
    template: RequestTemplate,
    memory: CompactionMemory,
    /// The model's row of the table (a conservative default for unknown ids).
    model: Model,
}

impl<S> std::fmt::Debug for CompactionPolicy<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionPolicy")
            .field("options", &self.options)
            .field("model", &self.model.id)
            .field("cache_markers", &self.template.cache_markers)
            .finish_non_exhaustive()
    }
}

impl<S> CompactionPolicy<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    /// The policy of `compaction` for a loop with `config` and `tools`; summaries are model
    /// calls through `service` (give it the loop's own service). Requests are rebuilt without
    /// a shaper and without cache markers unless told ([`Self::with_shaper`],
    /// [`Self::with_cache_markers`]).
    pub fn new(
        service: S,
        compaction: Compaction,
        config: &QueryConfig,
        tools: &ToolSet,
    ) -> CompactionPolicy<S> {
        CompactionPolicy {
            service,
            options: compaction,
            template: RequestTemplate {
                model: config.model.clone(),
                max_tokens: config.max_tokens,
                system: config.system.clone(),
                tools: tools.definitions(),
                normalize: config.normalize.clone(),
                shaper: None,
                cache_markers: false,
            },
            memory: CompactionMemory::default(),
            model: config.models.resolve(&config.model).model().clone(),
        }
    }

    /// Shapes the rebuilt requests as the loop's own shaper does (give it a clone of the
    /// loop's), so the summary request shares the main request's prefix.
    pub fn with_shaper(mut self, shaper: impl RequestShaper + 'static) -> Self {
        self.template.shaper = Some(Box::new(shaper));
        self
    }

    /// Whether the loop places cache markers: then the summary request carries them too,
    /// and reads the main request's cached prefix. Default: no.
    pub fn with_cache_markers(mut self, markers: bool) -> Self {
        self.template.cache_markers = markers;
        self
    }

    /// The memory of earlier runs of the session (default: a new one).
    pub fn with_memory(mut self, memory: CompactionMemory) -> Self {
        self.memory = memory;
        self
    }

    fn limit(&self) -> u64 {
        self.options.thresholds(&self.model).autocompact
    }

    /// Runs the driver, its summary written by the model through the service; the breaker
    /// is read from the memory and written back after.
    async fn compact(
        &mut self,
        kind: Kind<'_>,
        history: &[Message],
        base: &MessagesRequest,
    ) -> Result<Compacted, PolicyError> {
        let limit = self.limit();
        let mut breaker = self.memory.lock().breaker;
        let context = CompactContext {
            model: &self.model,
            base,
            limit,
            now: threadline_message::determinism::now(),
            trigger: match kind {
                Kind::Auto => CompactTrigger::Auto,
                Kind::Reactive(_) => CompactTrigger::Reactive,
            },
            files: &HistoryOnly,
        };
        let options = &self.options.autocompact;
        let summarizer = ServiceSummarizer {
            service: futures::lock::Mutex::new(&mut self.service),
        };
        let result = match kind {
            Kind::Auto => autocompact(history, &summarizer, &context, options, &mut breaker)
                .await
                .map_err(|e| PolicyError::from_source("autocompact", e)),
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
        self.memory.lock().breaker = breaker;
        result
    }
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

/// Sends `request` (streamed) and returns the text of the answer.
async fn answer_text<S>(
    service: &mut S,
    mut request: MessagesRequest,
) -> Result<String, ServiceError>
where
    S: MessagesService,
{
    request.stream = Some(true);
    futures::future::poll_fn(|cx| service.poll_ready(cx)).await?;
    let stream = service.call(request).await?;
    let message = threadline_wire::service::collect_message(stream).await?;
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
    Auto,
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
        if report.persisted.is_empty() {
            StepOutcome::unchanged()
        } else {
            StepOutcome::rewritten()
        }
    }

    fn microcompact(&mut self, input: StepInput<'_>) -> StepOutcome {
        let Some(options) = self
            .options
            .microcompact
            .as_ref()
            .filter(|_| self.options.enabled)
        else {
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
        for (slot, message) in input.history[start..].iter_mut().zip(messages) {
            *slot = message;
        }
        let mut outcome = StepOutcome::appended(append);
        outcome.rewritten = true;
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
            let estimate = estimate_context(input.history, self.template.overhead());
            if estimate < thresholds.exact_count_from(counter.is_some()) {
                return Ok(StepOutcome::unchanged());
            }
            let start = input.boundary.min(input.history.len());
            let base = self.template.request(&input.history[start..]);
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
                    let estimate = estimate_context(input.history, overhead_of(&base));
                    thresholds.autocompact_due(estimate, None)
                }
            };
            if !reached {
                return Ok(StepOutcome::unchanged());
            }
            let history: &[Message] = input.history;
            self.compact(Kind::Auto, history, &base).await.map(appended)
        })
    }

    fn blocking_limit(&self, visible: &[Message]) -> Option<(u64, u64)> {
        if !self.options.enabled {
            return None;
        }
        let tokens = estimate_context(visible, self.template.overhead());
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
            let base = self.template.request(&input.history[start..]);
            let history: &[Message] = input.history;
            self.compact(Kind::Reactive(error), history, &base)
                .await
                .map(appended)
        })
    }
}
