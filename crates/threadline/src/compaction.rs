//! The loop's [`ContextPolicy`] backed by `threadline-compact`: tool-result budget,
//! time-based microcompact, autocompact whose summary is a model call through the agent's own
//! service, the blocking limit, and reactive compaction after `prompt is too long`.
//!
//! The compact crate's drivers return `Send` futures, so the policy awaits them directly inside
//! the loop's (`Send`) hooks, with a [`Summarizer`] that calls the model through the service.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures::future::BoxFuture;
use threadline_cache::Planner;
use threadline_compact::server::{CompactionMode, ServerCompaction};
use threadline_compact::summarizer::SummaryFuture;
use threadline_compact::{
    AutocompactOptions, BudgetOptions, CircuitBreaker, CompactContext, Compacted, DirStore,
    HistoryOnly, MemoryStore, MicrocompactOptions, ReactiveGuard, SideStore, SummarizeError,
    Summarizer, TailOptions, Thresholds, TokenCounter, apply_budget, autocompact, estimate_context,
    microcompact_time_based, overhead_of, reactive_compact, should_autocompact,
};
use threadline_message::{CompactTrigger, Message};
use threadline_normalize::{Options, normalize};
use threadline_query::{ContextPolicy, PolicyError, StepInput, StepOutcome};
use threadline_wire::model::Model;
use threadline_wire::service::{MessagesService, ServiceError};
use threadline_wire::{CountTokensRequest, MessagesRequest};

use crate::attachments::ContextShaper;
use crate::model_call::answer_text;

/// How the agent keeps its context under the model's window.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Compaction {
    /// Whether any layer runs.
    pub enabled: bool,
    /// Autocompact when the context reaches this many tokens (default: the model's
    /// threshold, `window − min(max_output, 20k) − 13k`).
    pub autocompact_at: Option<u64>,
    /// The tool-result budget.
    pub budget: BudgetOptions,
    /// Where results over the budget are saved (default: kept in memory).
    pub side_dir: Option<PathBuf>,
    /// Time-based microcompact (`None`: off).
    pub microcompact: Option<MicrocompactOptions>,
    /// The summary's tail and re-attachments.
    pub autocompact: AutocompactOptions,
    /// Counts the request exactly (the API's `count_tokens`) once the estimate is within
    /// [`EXACT_COUNT_BAND`] of the autocompact threshold; the count decides. `None` (the
    /// default): the estimate decides alone.
    pub token_counter: Option<SharedTokenCounter>,
    /// Local, server-side or both ([`CompactionMode::choose`]: the server only where the
    /// model supports it, the local autocompact wherever the server does not run).
    pub mode: CompactionMode,
    /// The server-side edit's settings (used when [`Compaction::mode`] asks for the server).
    pub server: ServerCompaction,
}

/// How close to the autocompact threshold the estimate must come (this share of it) before
/// an exact count is asked for: the estimate is off by a few percent either way.
pub const EXACT_COUNT_BAND: f64 = 0.9;

/// A [`TokenCounter`] the policy can share across runs (and show in `Debug`).
#[derive(Clone)]
pub struct SharedTokenCounter(Arc<dyn TokenCounter + Send + Sync>);

impl std::fmt::Debug for SharedTokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedTokenCounter(..)")
    }
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            enabled: true,
            autocompact_at: None,
            budget: BudgetOptions::default(),
            side_dir: None,
            microcompact: Some(MicrocompactOptions::default()),
            autocompact: AutocompactOptions::default(),
            token_counter: None,
            mode: CompactionMode::Local,
            server: ServerCompaction::default(),
        }
    }
}

impl Compaction {
    /// No compaction at all (the loop's `NoPolicy`).
    pub fn off() -> Compaction {
        Compaction {
            enabled: false,
            ..Compaction::default()
        }
    }

    /// Server-side compaction (`compact_20260112`) with `server`'s settings where the model
    /// supports it, instead of the local autocompact; the local autocompact where it does
    /// not. The other local layers (budget, microcompact) stay.
    pub fn server(server: ServerCompaction) -> Compaction {
        Compaction {
            mode: CompactionMode::Server,
            server,
            ..Compaction::default()
        }
    }

    /// These settings with another mode (local, server or both) and server settings.
    pub fn with_server(mut self, mode: CompactionMode, server: ServerCompaction) -> Compaction {
        self.mode = mode;
        self.server = server;
        self
    }

    /// The `context_management` every request carries for `model` (`None` when the server
    /// does not compact for it).
    pub fn context_management(
        &self,
        model: &Model,
    ) -> Option<threadline_wire::request::ContextManagement> {
        if !self.enabled || !self.mode.choose(model).server {
            return None;
        }
        self.server.context_management(model)
    }

    /// Autocompact at `tokens` instead of the model's threshold (small windows, demos).
    pub fn autocompact_at(mut self, tokens: u64) -> Compaction {
        self.autocompact_at = Some(tokens);
        self
    }

    /// The verbatim tail kept after a summary.
    pub fn with_tail(mut self, tail: TailOptions) -> Compaction {
        self.autocompact.tail = tail;
        self
    }

    /// Saves results over the budget under `dir`.
    pub fn with_side_dir(mut self, dir: impl Into<PathBuf>) -> Compaction {
        self.side_dir = Some(dir.into());
        self
    }

    /// Counts the request exactly with `counter` near the autocompact threshold (see
    /// [`Compaction::token_counter`]); a failed count leaves the decision to the estimate.
    pub fn with_token_counter(
        mut self,
        counter: impl TokenCounter + Send + Sync + 'static,
    ) -> Compaction {
        self.token_counter = Some(SharedTokenCounter(Arc::new(counter)));
        self
    }

    fn thresholds(&self, model: &Model) -> Thresholds {
        match self.autocompact_at {
            Some(tokens) => Thresholds::with_autocompact(tokens),
            None => Thresholds::for_model(model),
        }
    }
}

/// What survives from one run to the next.
#[derive(Debug, Default)]
pub(crate) struct CompactionMemory {
    breaker: CircuitBreaker,
    store: Option<MemoryStore>,
}

/// What every request shares, to rebuild the request the loop would send (its prefix is the
/// summary request's).
#[derive(Debug, Clone)]
pub(crate) struct RequestTemplate {
    pub(crate) model: String,
    pub(crate) max_tokens: u64,
    pub(crate) system: Option<threadline_wire::SystemPrompt>,
    pub(crate) tools: Vec<threadline_wire::Tool>,
    pub(crate) normalize: Options,
    pub(crate) shaper: ContextShaper,
    /// Whether requests carry cache markers (then the summary request does too, so it reads
    /// the main request's cached prefix).
    pub(crate) cache_markers: bool,
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

    /// The request for `visible`, with markers when the agent places them.
    fn request(&self, visible: &[Message]) -> MessagesRequest {
        let messages = normalize(visible, &self.normalize).messages;
        let mut request = MessagesRequest::new(self.model.clone(), self.max_tokens, messages);
        request.system = self.system.clone();
        if !self.tools.is_empty() {
            request.tools = Some(self.tools.clone());
        }
        request.stream = Some(true);
        self.shaper.apply(&mut request);
        if self.cache_markers {
            Planner::default().plan(&mut request);
        }
        request
    }
}

/// The policy, one per run; its memory is shared by the runs of an agent.
pub(crate) struct CompactPolicy<S> {
    pub(crate) service: S,
    pub(crate) options: Compaction,
    pub(crate) template: RequestTemplate,
    pub(crate) memory: Arc<Mutex<CompactionMemory>>,
    /// The model's row of the table (a conservative default for unknown ids).
    pub(crate) model: Model,
}

/// Writes the summary with a model call through the agent's own service (the policy's
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

/// Which driver to run.
#[derive(Clone, Copy)]
enum Kind<'e> {
    Auto,
    Reactive(&'e ServiceError),
}

impl<S> CompactPolicy<S>
where
    S: MessagesService + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    fn model(&self) -> &Model {
        &self.model
    }

    fn limit(&self) -> u64 {
        self.options.thresholds(self.model()).autocompact
    }

    /// Runs the driver, its summary written by the model through the service; the breaker
    /// is read from the agent's memory and written back after.
    async fn compact(
        &mut self,
        kind: Kind<'_>,
        history: &[Message],
        base: &MessagesRequest,
    ) -> Result<Compacted, PolicyError> {
        let limit = self.limit();
        let mut breaker = self.memory().breaker;
        let context = CompactContext {
            model: &self.model,
            base,
            limit,
            now: SystemTime::now(),
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
        self.memory().breaker = breaker;
        result
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, CompactionMemory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The appended messages of a compaction (the history keeps what came before the boundary).
fn appended(compacted: Compacted) -> StepOutcome {
    StepOutcome::appended(compacted.messages)
}

impl<S> ContextPolicy for CompactPolicy<S>
where
    S: MessagesService + Clone + Send + 'static,
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
                let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
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
        let Some(result) = microcompact_time_based(visible, options, SystemTime::now()) else {
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
            if !self.options.enabled || !self.options.mode.choose(self.model()).local {
                return Ok(StepOutcome::unchanged());
            }
            let limit = self.limit();
            // The estimate decides alone, or says when an exact count is worth asking for.
            let counter = self.options.token_counter.clone();
            let from = match &counter {
                Some(_) => (limit as f64 * EXACT_COUNT_BAND) as u64,
                None => limit,
            };
            // The cheap check first: the full request is only built when it is needed.
            let estimate = estimate_context(input.history, self.template.overhead());
            if estimate < from {
                return Ok(StepOutcome::unchanged());
            }
            let start = input.boundary.min(input.history.len());
            let base = self.template.request(&input.history[start..]);
            let counted = match &counter {
                Some(counter) => counter
                    .0
                    .count_tokens(CountTokensRequest::from(&base))
                    .await
                    .ok(),
                None => None,
            };
            // The blocking limit reads the estimate: a count never vetoes a compaction the
            // estimate says is needed to stay under it.
            let blocking = self.options.thresholds(self.model()).blocking;
            let reached = match counted {
                Some(tokens) => tokens >= limit || estimate >= blocking,
                None => should_autocompact(input.history, &base, limit),
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
        let limit = self.options.thresholds(self.model()).blocking;
        let tokens = estimate_context(visible, self.template.overhead());
        (tokens >= limit).then_some((tokens, limit))
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
