//! The token, cache and cost analysis of a recorded session: what `threadline inspect`
//! reports, as typed values an embedder can read, serialize or render.
//!
//! Each API request the transcript implies (one per assistant response: fragments sharing a
//! request id or message id are one request) is rebuilt — the messages before the response,
//! normalized, with the default cache plan — and run through the prompt-cache simulator at
//! the time it was sent. The [`Report`] puts the simulator's prediction next to the usage the
//! transcript recorded, with the cache-read share of each, the cost, and any cache break with
//! its cause; then totals and `share_mae`, the mean absolute error of the predicted cache-read
//! share against the recorded one over the requests that recorded usage.
//!
//! A transcript does not contain the tools and system prompt its agent sent. Their size (the
//! unseen prefix) is inferred from the first recorded usage: its total input minus the
//! estimate of the visible messages, minus the uncached tail the API always reports
//! (`input_tokens` of that first request). Whatever that first request read from the cache
//! was cached before the transcript starts (by an earlier session), so the simulator starts
//! with that much of the prefix warm. The first request is therefore matched by construction;
//! `share_mae_after_first` leaves it out.
//!
//! Some records say the part of the request the transcript does not show changed
//! (`threadline_normalize::prefix_change`): a local command that re-rendered the tools or the
//! dynamic system prompt (`/mcp` reporting `Reconnected to …`) makes everything after the
//! warm cross-session prefix new to the simulated cache, and a response from another model
//! (`/model`) starts that model's cache empty (its prices apply from then on; not with
//! [`Options::with_model`], which simulates one model throughout). The break that follows
//! names that cause (`prefix_reloaded` with the command and its output, or `model_changed`).
//!
//! Compaction: each request also says where its predicted context stands against the model's
//! thresholds (`context_level`: ok, warning, autocompact, blocking), and `compaction` says
//! when each layer would trigger for the session as it ends — judged at the time of its last
//! message, so the report is the same on every run: the estimated context and its level,
//! tokens left before autocompact, results the tool-result budget would store, results
//! microcompact would clear, when the last request's cache expires and whether the
//! time-based microcompact is due.
//!
//! [`plan`] re-plans the same requests with a cache-planning strategy and adds the
//! comparison; [`diagnostics`] puts the API's recorded cache diagnostics beside the
//! prediction.
//!
//! Time and memory follow the transcript's size: the requests are walked one at a time
//! (`threadline_normalize::ImpliedRequests`, the incremental normalizer), and each is planned
//! and simulated by a [`threadline_cache::SessionSimulator`], which redoes only what changed
//! since the previous request.
//!
//! The report serializes to the JSON `threadline inspect --json` prints (through a
//! `serde_json::Value`, whose keys are sorted): optional parts the analysis did not produce
//! (`compaction_iterations`, `diagnostics`, the re-planned figures, `plan`) are left out.
//!
//! ```
//! use threadline_inspect::{Options, report};
//! use threadline_message::transcript::{Format, parse_transcript};
//!
//! let transcript = concat!(
//!     r#"{"type":"user","id":"u1","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"text","text":"Hi"}]}"#, "\n",
//!     r#"{"type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z","api_message_id":"msg_1","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hello"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":2000,"cache_read_input_tokens":0,"output_tokens":5}}"#, "\n",
//! );
//! let messages = parse_transcript(transcript).messages;
//! let report = report(&messages, Format::detect(transcript), &Options::default());
//! assert_eq!(report.model, "claude-sonnet-4-6");
//! assert_eq!(report.requests.len(), 1);
//! assert!(report.requests[0].recorded.is_some());
//! assert!(report.totals.cost.recorded.is_some_and(|cost| cost > 0.0));
//! let json = serde_json::to_value(&report)?;
//! assert_eq!(json["format"], "threadline");
//! # Ok::<(), serde_json::Error>(())
//! ```
#![forbid(unsafe_code)]

pub mod diagnostics;
pub mod plan;

use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;
use threadline_cache::{BreakCause, Calibration, SimConfig, Step};
use threadline_compact::{BudgetOptions, Level, MicrocompactOptions, Thresholds, triggers};
use threadline_message::Message;
use threadline_message::transcript::Format;
use threadline_normalize::{ImpliedRequests, ImpliedView, PrefixChange};
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{MessagesRequest, Usage};

pub use diagnostics::DiagnosticsRow;
pub use plan::{PlanReport, PlanStrategy, PlanTotals, add_plan};

/// The model assumed when neither the options nor the transcript name one.
pub use threadline_wire::defaults::DEFAULT_MODEL;

/// What the analysis simulates and prices with.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Options<'a> {
    /// The model to simulate throughout (`None`: the transcript's, following its switches).
    pub model: Option<&'a str>,
    /// The table models are resolved and priced in.
    pub table: &'a ModelTable,
}

impl Default for Options<'static> {
    fn default() -> Self {
        Options {
            model: None,
            table: ModelTable::builtin(),
        }
    }
}

impl<'a> Options<'a> {
    /// The built-in model table, the transcript's model.
    pub fn new() -> Options<'static> {
        Options::default()
    }

    /// These options simulating `model` throughout (`None`: the transcript's).
    pub fn with_model(mut self, model: Option<&'a str>) -> Self {
        self.model = model;
        self
    }

    /// These options resolving and pricing by `table`.
    pub fn with_model_table(mut self, table: &'a ModelTable) -> Self {
        self.table = table;
        self
    }
}

/// A usage as the report shows it: the three input kinds (0 when absent) and the cache
/// write's split by lifetime when the usage has one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UsageFigures {
    /// Input tokens neither read from the cache nor written to it.
    pub input_tokens: u64,
    /// Tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Of the written tokens, those with the five-minute lifetime.
    pub ephemeral_5m_input_tokens: Option<u64>,
    /// Of the written tokens, those with the one-hour lifetime.
    pub ephemeral_1h_input_tokens: Option<u64>,
}

impl UsageFigures {
    /// The figures of `usage`.
    pub fn of(usage: &Usage) -> UsageFigures {
        let split = usage.cache_creation.as_ref();
        UsageFigures {
            input_tokens: usage.input_tokens.unwrap_or(0),
            cache_creation_input_tokens: usage.cache_creation_input_tokens.unwrap_or(0),
            cache_read_input_tokens: usage.cache_read_input_tokens.unwrap_or(0),
            ephemeral_5m_input_tokens: split.and_then(|c| c.ephemeral_5m_input_tokens),
            ephemeral_1h_input_tokens: split.and_then(|c| c.ephemeral_1h_input_tokens),
        }
    }
}

/// A request's costs in dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestCost {
    /// By the recorded usage (every `usage.iterations` pass priced), when it recorded one.
    pub recorded: Option<f64>,
    /// By the prediction, with the recorded output.
    pub predicted: f64,
    /// By the re-planned prediction ([`plan`]), with the recorded output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<f64>,
}

/// A cache break the simulator found: its cause (serialized flat, `cause` naming it, with
/// the cause's details), where, and a sentence saying so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BreakReport {
    /// Why.
    #[serde(flatten)]
    pub cause: BreakCause,
    /// The first piece that differs, as text (none for expiry and limits).
    pub location: Option<String>,
    /// The break in words (its `Display`).
    pub description: String,
}

impl BreakReport {
    /// The report of `found`.
    pub fn of(found: &threadline_cache::CacheBreak) -> BreakReport {
        BreakReport {
            cause: found.cause.clone(),
            location: found.location.map(|l| l.to_string()),
            description: found.to_string(),
        }
    }
}

/// A server-side compaction pass (`usage.iterations` of type `compaction`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CompactionPass {
    /// Its input tokens (uncached, written and read).
    pub input_tokens: u64,
    /// Its output tokens.
    pub output_tokens: u64,
}

/// One request of the session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestRow {
    /// Its position among the session's requests.
    pub index: usize,
    /// The response's request id, else its API message id.
    pub request_id: Option<String>,
    /// When it was sent (the response's time), in ms since the epoch.
    pub timestamp_ms: Option<u64>,
    /// The number of messages it carried.
    pub messages: usize,
    /// Whether it is the first after a compaction boundary.
    pub after_compaction: bool,
    /// The usage the transcript recorded for it.
    pub recorded: Option<UsageFigures>,
    /// The simulator's prediction.
    pub predicted: UsageFigures,
    /// The recorded cache-read share.
    pub recorded_share: Option<f64>,
    /// The predicted cache-read share.
    pub predicted_share: f64,
    /// Its costs.
    pub cost: RequestCost,
    /// The cache break the simulator found, if any.
    pub cache_break: Option<BreakReport>,
    /// Where the predicted context stands against the model's thresholds.
    #[serde(serialize_with = "serialize_level")]
    pub context_level: Level,
    /// The server-side compaction passes its usage recorded (left out when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction_iterations: Option<Vec<CompactionPass>>,
    /// The API's cache diagnostics recorded for its response, beside the predictions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<DiagnosticsRow>,
    /// The re-planned prediction ([`plan`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<UsageFigures>,
    /// Its cache-read share ([`plan`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_share: Option<f64>,
    /// The re-planned request's cache break in words, `Some(None)` when it has none
    /// ([`plan`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_cache_break: Option<Option<String>>,
}

/// The session's costs in dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TotalCost {
    /// The recorded cost, when some request recorded usage.
    pub recorded: Option<f64>,
    /// The predicted cost.
    pub predicted: f64,
    /// The re-planned cost ([`plan`]), over every request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<f64>,
    /// Recorded input cost − re-planned input cost over the requests that recorded usage
    /// ([`plan`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_difference: Option<f64>,
}

/// The sums over the session's requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Totals {
    /// The number of requests.
    pub requests: usize,
    /// The recorded usage summed (saturating), when some request recorded usage.
    pub recorded: Option<UsageFigures>,
    /// The predicted usage summed.
    pub predicted: UsageFigures,
    /// The recorded cache-read share, when some request recorded usage.
    pub recorded_share: Option<f64>,
    /// The predicted cache-read share.
    pub predicted_share: f64,
    /// The re-planned cache-read share over every request ([`plan`]; `Some(None)` when they
    /// had no input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_share: Option<Option<f64>>,
    /// The costs.
    pub cost: TotalCost,
}

/// The server-side compaction passes a transcript recorded, summed: each billed apart from
/// the requests' own usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CompactionPasses {
    /// How many.
    pub count: u64,
    /// Their input tokens.
    pub input_tokens: u64,
    /// Their output tokens.
    pub output_tokens: u64,
}

impl CompactionPasses {
    fn add(&mut self, usage: &Usage) {
        for pass in usage.compaction_iterations() {
            self.count = self.count.saturating_add(1);
            self.input_tokens = self.input_tokens.saturating_add(pass.total_input_tokens());
            self.output_tokens = self
                .output_tokens
                .saturating_add(pass.output_tokens.unwrap_or(0));
        }
    }
}

/// The model's compaction thresholds, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ThresholdFigures {
    /// The window less the output reserve.
    pub effective_window: u64,
    /// Warn the user at or above this.
    pub warning: u64,
    /// Autocompact at or above this.
    pub autocompact: u64,
    /// Do not send at or above this.
    pub blocking: u64,
}

/// When each compaction layer would trigger for the session as it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CompactionOutlook {
    /// The estimated context at the end (anchored on the last reported usage).
    pub tokens: u64,
    /// Where it stands.
    #[serde(serialize_with = "serialize_level")]
    pub level: Level,
    /// The model's thresholds.
    pub thresholds: ThresholdFigures,
    /// Tokens left before autocompact triggers (0 when it would).
    pub tokens_until_autocompact: u64,
    /// Results not yet sent that the tool-result budget would store (tool use ids).
    pub budget_would_store: Vec<String>,
    /// How many results microcompact would clear.
    pub microcompact_clearable: usize,
    /// When the last request's cache expires (RFC 3339, milliseconds), when known and
    /// within the years 1970 to 9999.
    pub cache_expires_at: Option<String>,
    /// Whether the time-based microcompact would run at the session's end.
    pub microcompact_due_at_end: bool,
}

/// The analysis of a session (see the crate docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The transcript's format.
    pub format: Format,
    /// The model simulated (at the start of the session).
    pub model: String,
    /// A warning when the model is not in the table (conservative limits apply).
    pub model_warning: Option<String>,
    /// The unseen prefix (tools and system prompt), inferred, in tokens.
    pub unseen_prefix_tokens: u64,
    /// Of which already cached when the session started.
    pub warm_prefix_tokens: u64,
    /// The uncached tail the API always reports, in tokens.
    pub tail_tokens: u64,
    /// The scale applied to the estimate of the visible messages.
    pub estimate_scale: f64,
    /// One row per request.
    pub requests: Vec<RequestRow>,
    /// The sums.
    pub totals: Totals,
    /// The mean absolute error of the predicted cache-read share, over the requests that
    /// recorded usage.
    pub share_mae: Option<f64>,
    /// The same without the first such request (matched by construction).
    pub share_mae_after_first: Option<f64>,
    /// When each compaction layer would trigger at the end.
    pub compaction: CompactionOutlook,
    /// The server-side compaction passes recorded (left out when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction_iterations: Option<CompactionPasses>,
    /// The re-planning comparison ([`plan::add_plan`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanReport>,
}

/// `ok`, `warning`, `autocompact` or `blocking`.
pub fn level_name(level: Level) -> &'static str {
    match level {
        Level::Ok => "ok",
        Level::Warning => "warning",
        Level::Autocompact => "autocompact",
        Level::Blocking => "blocking",
    }
}

fn serialize_level<S: serde::Serializer>(level: &Level, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(level_name(*level))
}

fn model_of(messages: &[Message]) -> Option<&str> {
    messages.iter().find_map(|m| match m {
        Message::Assistant(a)
            if !a.model.is_empty() && !a.is_api_error && a.model != "<synthetic>" =>
        {
            Some(a.model.as_str())
        }
        _ => None,
    })
}

/// The model the report simulates: `model_flag`, else the transcript's first, else
/// [`DEFAULT_MODEL`].
pub fn model_id_for(messages: &[Message], model_flag: Option<&str>) -> String {
    model_flag
        .or_else(|| model_of(messages))
        .unwrap_or(DEFAULT_MODEL)
        .to_owned()
}

/// A prefix change as a simulator applies it.
pub(crate) enum Applied<'c, 't> {
    /// The dynamic part of the unseen prefix was re-rendered, by this command and output.
    Reload(String),
    /// The session switched to this model (named so).
    Switch(&'t Model, &'c str),
}

/// The prefix changes a simulator applies, in order: every reload, and — unless the model is
/// fixed by the options — every model switch (an id not in the table priced as `resolve`
/// prices it).
pub(crate) fn prefix_changes<'c, 't>(
    changes: &'c [PrefixChange],
    options: &Options<'t>,
) -> impl Iterator<Item = Applied<'c, 't>> + use<'c, 't> {
    let fixed_model = options.model.is_some();
    let table = options.table;
    changes.iter().filter_map(move |change| match change {
        PrefixChange::ToolsReloaded { command, output } => {
            Some(Applied::Reload(format!("{command}: {output}")))
        }
        PrefixChange::ModelSwitched { to, .. } if !fixed_model => {
            let next = table.get(to).unwrap_or_else(|| table.resolve("?").model());
            Some(Applied::Switch(next, to.as_str()))
        }
        _ => None,
    })
}

/// The calibration inferred from the first recorded usage (see the crate docs): the first
/// request that recorded one, as `model_id` would be sent it (unplanned).
pub fn calibrate(messages: &[Message], model_id: &str) -> Calibration {
    calibrate_walk(ImpliedRequests::new(messages), model_id)
}

/// [`calibrate`] from `walk`, a new walk over the transcript (or a clone of one, so that the
/// caller walks it again without computing its recorded usage twice).
pub(crate) fn calibrate_walk(mut walk: ImpliedRequests<'_>, model_id: &str) -> Calibration {
    while let Some(implied) = walk.next_request() {
        if let Some(usage) = &implied.recorded {
            let request = MessagesRequest::new(model_id, 1024, implied.messages.clone());
            return Calibration::from_first(&request, usage);
        }
    }
    Calibration {
        config: SimConfig::default(),
        scale: 1.0,
    }
}

/// The report of the session `messages` (a transcript in `format`), as `options` say.
pub fn report<'t>(messages: &[Message], format: Format, options: &Options<'t>) -> Report {
    let model_id = model_id_for(messages, options.model);
    let resolved = options.table.resolve(&model_id);
    let model: &Model = resolved.model();
    let mut walk = ImpliedRequests::new(messages);
    let calibration = calibrate_walk(walk.clone(), &model_id);
    let config = calibration.config;
    let mut sim = calibration.session_simulator(model, &model_id);
    let mut rows = Vec::with_capacity(walk.max_requests());
    let mut totals = Sums::default();
    let mut last_at = 0u64;
    let thresholds = Thresholds::for_model(model);
    let diagnosed = diagnostics::recorded(messages);
    while let Some(implied) = walk.next_request() {
        if implied.after_compaction {
            sim.reset_planner();
            if format == Format::ClaudeCode {
                // Claude Code re-renders the head of its system prompt (the billing line)
                // after a compaction: the request after it reads nothing
                // (docs/claude-code-transcripts.md#compaction-boundaries).
                sim.reload_dynamic_prefix("a compaction: Claude Code re-renders its system prompt");
            }
        }
        // What the records say changed besides the messages (crate docs).
        for change in prefix_changes(&implied.prefix_changes, options) {
            match change {
                Applied::Reload(by) => sim.reload_dynamic_prefix(by),
                Applied::Switch(next, to) => sim.switch_model(next, to),
            }
        }
        let model = sim.model();
        let at = implied.at_ms.unwrap_or(last_at).max(last_at);
        last_at = at;
        let step = sim.step(at, implied.messages, implied.unchanged);
        let mut row = totals.add(rows.len(), &implied, &step, model, &thresholds, options);
        if let Some(recorded) = implied.key.as_ref().and_then(|k| diagnosed.get(k)) {
            row.diagnostics = Some(DiagnosticsRow::of(recorded, step.cache_break.as_ref()));
        }
        rows.push(row);
    }
    let errors = &totals.share_errors;
    let mae = |e: &[f64]| (!e.is_empty()).then(|| e.iter().sum::<f64>() / e.len() as f64);
    Report {
        format,
        model: model.id.clone(),
        model_warning: resolved.warning(),
        unseen_prefix_tokens: config.unseen.tokens,
        warm_prefix_tokens: config.unseen.warm_tokens,
        tail_tokens: config.tail_tokens,
        estimate_scale: calibration.scale,
        requests: rows,
        totals: totals.totals(),
        share_mae: mae(errors),
        share_mae_after_first: mae(errors.get(1..).unwrap_or(&[])),
        compaction: compaction_outlook(messages, model, config.unseen.tokens),
        compaction_iterations: (totals.compaction_passes.count > 0)
            .then_some(totals.compaction_passes),
        plan: None,
    }
}

/// The sums over a transcript's requests, recorded and predicted, as they are walked.
#[derive(Default)]
struct Sums {
    requests: usize,
    recorded: Usage,
    predicted: Usage,
    cost_recorded: f64,
    cost_predicted: f64,
    /// `|recorded - predicted|` cache-read share of each request that recorded usage.
    share_errors: Vec<f64>,
    compaction_passes: CompactionPasses,
}

impl Sums {
    /// Adds the request `index` (its recorded usage, if any, and the simulator's `step`) and
    /// returns its row.
    fn add(
        &mut self,
        index: usize,
        implied: &ImpliedView<'_>,
        step: &Step,
        model: &Model,
        thresholds: &Thresholds,
        options: &Options<'_>,
    ) -> RequestRow {
        self.requests += 1;
        let output = implied
            .recorded
            .as_ref()
            .and_then(|u| u.output_tokens)
            .unwrap_or(0);
        let predicted_cost = step.usage.cost(model, output);
        self.cost_predicted += predicted_cost;
        let predicted = step.usage.to_usage();
        add(&mut self.predicted, &predicted);
        let predicted_share = step.usage.read_share();
        let (recorded, recorded_share, recorded_cost) = match &implied.recorded {
            Some(usage) => {
                let share = usage.cache_read_share();
                self.share_errors.push((share - predicted_share).abs());
                // Each pass by its own model's row (a fallback hop), as replay and the demo
                // price it.
                let cost = options.table.cost(&model.id, usage);
                self.cost_recorded += cost;
                self.compaction_passes.add(usage);
                add(&mut self.recorded, usage);
                (Some(UsageFigures::of(usage)), Some(share), Some(cost))
            }
            None => (None, None, None),
        };
        let passes = implied
            .recorded
            .as_ref()
            .map(|usage| {
                usage
                    .compaction_iterations()
                    .map(|pass| CompactionPass {
                        input_tokens: pass.total_input_tokens(),
                        output_tokens: pass.output_tokens.unwrap_or(0),
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|passes| !passes.is_empty());
        RequestRow {
            index,
            request_id: implied.key.clone(),
            timestamp_ms: implied.at_ms,
            messages: implied.messages.len(),
            after_compaction: implied.after_compaction,
            recorded,
            predicted: UsageFigures::of(&predicted),
            recorded_share,
            predicted_share,
            cost: RequestCost {
                recorded: recorded_cost,
                predicted: predicted_cost,
                planned: None,
            },
            cache_break: step.cache_break.as_ref().map(BreakReport::of),
            context_level: thresholds.level(step.usage.total()),
            compaction_iterations: passes,
            diagnostics: None,
            planned: None,
            planned_share: None,
            planned_cache_break: None,
        }
    }

    /// The report's `totals`: the recorded sums only when some request recorded usage.
    fn totals(&self) -> Totals {
        let recorded = !self.share_errors.is_empty();
        Totals {
            requests: self.requests,
            recorded: recorded.then(|| UsageFigures::of(&self.recorded)),
            predicted: UsageFigures::of(&self.predicted),
            recorded_share: recorded.then(|| self.recorded.cache_read_share()),
            predicted_share: self.predicted.cache_read_share(),
            planned_share: None,
            cost: TotalCost {
                recorded: recorded.then_some(self.cost_recorded),
                predicted: self.cost_predicted,
                planned: None,
                input_difference: None,
            },
        }
    }
}

/// When each compaction layer would trigger for the session as it ends (see the crate docs);
/// `overhead` is the unseen prefix (tools and system prompt) in tokens.
fn compaction_outlook(messages: &[Message], model: &Model, overhead: u64) -> CompactionOutlook {
    let end = messages
        .iter()
        .rev()
        .find_map(|m| m.header().timestamp.to_system_time())
        .unwrap_or(UNIX_EPOCH);
    let report = triggers(
        messages,
        model,
        overhead,
        end,
        &BudgetOptions::default(),
        &MicrocompactOptions::default(),
    );
    // humantime formats years 1970 to 9999 only; a time outside them is left out.
    let at = |time: std::time::SystemTime| {
        let since = time.duration_since(UNIX_EPOCH).ok()?;
        (since < Duration::from_secs(253_402_300_800))
            .then(|| humantime::format_rfc3339_millis(time).to_string())
    };
    CompactionOutlook {
        tokens: report.tokens,
        level: report.level,
        thresholds: ThresholdFigures {
            effective_window: report.thresholds.effective_window,
            warning: report.thresholds.warning,
            autocompact: report.thresholds.autocompact,
            blocking: report.thresholds.blocking,
        },
        tokens_until_autocompact: report.tokens_until_autocompact,
        budget_would_store: report.budget_would_store,
        microcompact_clearable: report.microcompact_clearable.len(),
        cache_expires_at: report.cache_expires_at.and_then(at),
        microcompact_due_at_end: report.microcompact_due,
    }
}

/// Adds `usage` to `total`, saturating: a damaged or hostile transcript may record counts
/// near `u64::MAX`.
fn add(total: &mut Usage, usage: &Usage) {
    let sum = |a: Option<u64>, b: Option<u64>| Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0)));
    total.input_tokens = sum(total.input_tokens, usage.input_tokens);
    total.cache_creation_input_tokens = sum(
        total.cache_creation_input_tokens,
        usage.cache_creation_input_tokens,
    );
    total.cache_read_input_tokens =
        sum(total.cache_read_input_tokens, usage.cache_read_input_tokens);
    total.output_tokens = sum(total.output_tokens, usage.output_tokens);
    let split = |u: &Usage| {
        u.cache_creation
            .as_ref()
            .map_or((u.cache_creation_input_tokens, None), |c| {
                (c.ephemeral_5m_input_tokens, c.ephemeral_1h_input_tokens)
            })
    };
    let (a5, a1) = split(total);
    let (b5, b1) = split(usage);
    let mut creation = threadline_wire::response::CacheCreation::new();
    creation.ephemeral_5m_input_tokens = sum(a5, b5);
    creation.ephemeral_1h_input_tokens = sum(a1, b1);
    total.cache_creation = Some(creation);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Value, json};
    use threadline_message::transcript::parse_transcript;

    use super::*;

    /// A threadline transcript of `turns` prompts and answers a second apart, each answer with
    /// `usage(turn)` recorded.
    fn session(turns: usize, usage: impl Fn(usize) -> Value) -> Vec<Message> {
        let mut lines = String::new();
        for turn in 0..turns {
            let prompt = json!({"type": "user", "id": format!("u{turn}"),
                "timestamp": format!("2026-01-01T00:00:{:02}Z", 2 * turn),
                "content": [{"type": "text", "text": format!("Question {turn}")}]});
            let answer = json!({"type": "assistant", "id": format!("a{turn}"),
                "timestamp": format!("2026-01-01T00:00:{:02}Z", 2 * turn + 1),
                "api_message_id": format!("msg_{turn}"), "request_id": format!("req_{turn}"),
                "model": "claude-sonnet-4-6", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": format!("Answer {turn}")}],
                "usage": usage(turn)});
            lines.push_str(&format!("{prompt}\n{answer}\n"));
        }
        let read = parse_transcript(&lines);
        assert!(read.problems.is_empty(), "{:?}", read.problems);
        read.messages
    }

    fn keys(value: &Value) -> BTreeSet<&str> {
        value
            .as_object()
            .map(|map| map.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    fn set<'a>(names: &[&'a str]) -> BTreeSet<&'a str> {
        names.iter().copied().collect()
    }

    fn usage_of(turn: usize) -> Value {
        json!({"input_tokens": 3, "cache_creation_input_tokens": 2000 + turn,
            "cache_read_input_tokens": 2000 * turn, "output_tokens": 5})
    }

    #[test]
    fn the_json_form_has_the_fields_inspect_prints_and_leaves_out_what_was_not_analysed() {
        let messages = session(2, usage_of);
        let report = super::report(&messages, Format::Threadline, &Options::default());
        let value = serde_json::to_value(&report).expect("serializes");
        assert_eq!(
            keys(&value),
            set(&[
                "format",
                "model",
                "model_warning",
                "unseen_prefix_tokens",
                "warm_prefix_tokens",
                "tail_tokens",
                "estimate_scale",
                "requests",
                "totals",
                "share_mae",
                "share_mae_after_first",
                "compaction",
            ])
        );
        let row = &value["requests"][0];
        assert_eq!(
            keys(row),
            set(&[
                "index",
                "request_id",
                "timestamp_ms",
                "messages",
                "after_compaction",
                "recorded",
                "predicted",
                "recorded_share",
                "predicted_share",
                "cost",
                "cache_break",
                "context_level",
            ])
        );
        assert_eq!(keys(&row["cost"]), set(&["recorded", "predicted"]));
        assert_eq!(row["context_level"], "ok");
        assert_eq!(row["request_id"], "req_0");
        assert_eq!(
            keys(&row["recorded"]),
            set(&[
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "ephemeral_5m_input_tokens",
                "ephemeral_1h_input_tokens",
            ])
        );
        assert_eq!(
            keys(&value["totals"]),
            set(&[
                "requests",
                "recorded",
                "predicted",
                "recorded_share",
                "predicted_share",
                "cost"
            ])
        );
        assert_eq!(
            keys(&value["compaction"]),
            set(&[
                "tokens",
                "level",
                "thresholds",
                "tokens_until_autocompact",
                "budget_would_store",
                "microcompact_clearable",
                "cache_expires_at",
                "microcompact_due_at_end",
            ])
        );
        assert_eq!(value["format"], "threadline");
        assert_eq!(value["model_warning"], Value::Null);
        // Re-planned: the per-request figures, the totals and the comparison appear.
        let mut planned = report.clone();
        add_plan(
            &mut planned,
            &messages,
            &Options::default(),
            PlanStrategy::Seed,
        );
        let value = serde_json::to_value(&planned).expect("serializes");
        let row = &value["requests"][0];
        for key in ["planned", "planned_share", "planned_cache_break"] {
            assert!(row.get(key).is_some(), "{key}: {row}");
        }
        assert_eq!(
            keys(&row["cost"]),
            set(&["recorded", "predicted", "planned"])
        );
        assert!(value["totals"]["planned_share"].is_number());
        assert_eq!(
            keys(&value["totals"]["cost"]),
            set(&["recorded", "predicted", "planned", "input_difference"])
        );
        assert_eq!(value["plan"]["strategy"], "seed");
        assert_eq!(value["plan"]["requests_compared"], 2);
        assert_eq!(value["plan"]["assumptions"], plan::ASSUMPTIONS);
    }

    #[test]
    fn recorded_usage_is_summed_saturating_and_compaction_passes_are_counted_apart() {
        let huge = session(2, |_| {
            json!({"input_tokens": u64::MAX - 1, "cache_creation_input_tokens": u64::MAX / 2 + 1,
                "cache_read_input_tokens": u64::MAX, "output_tokens": u64::MAX})
        });
        let report = super::report(&huge, Format::Threadline, &Options::default());
        let recorded = report.totals.recorded.expect("recorded");
        assert_eq!(recorded.input_tokens, u64::MAX);
        assert_eq!(recorded.cache_creation_input_tokens, u64::MAX);
        assert_eq!(recorded.cache_read_input_tokens, u64::MAX);

        let compacted = session(2, |turn| {
            let mut usage = usage_of(turn);
            if turn == 1 {
                usage["iterations"] = json!([
                    {"type": "compaction", "input_tokens": 99195, "output_tokens": 81},
                    {"type": "message", "input_tokens": 3, "output_tokens": 5}]);
            }
            usage
        });
        let report = super::report(&compacted, Format::Threadline, &Options::default());
        let passes = report.compaction_iterations.expect("passes");
        assert_eq!(
            (passes.count, passes.input_tokens, passes.output_tokens),
            (1, 99195, 81)
        );
        assert_eq!(report.requests[0].compaction_iterations, None);
        assert_eq!(
            report.requests[1].compaction_iterations,
            Some(vec![CompactionPass {
                input_tokens: 99195,
                output_tokens: 81
            }])
        );
    }

    #[test]
    fn a_transcript_without_usage_has_no_recorded_figures() {
        let messages = session(2, |_| Value::Null);
        let report = super::report(&messages, Format::Threadline, &Options::default());
        assert_eq!(report.requests.len(), 2);
        assert!(report.requests.iter().all(|r| r.recorded.is_none()
            && r.recorded_share.is_none()
            && r.cost.recorded.is_none()));
        assert_eq!(report.totals.recorded, None);
        assert_eq!(report.totals.cost.recorded, None);
        assert_eq!(
            (report.share_mae, report.share_mae_after_first),
            (None, None)
        );
    }

    #[test]
    fn the_options_model_is_simulated_and_an_unknown_one_warned_of() {
        let messages = session(1, usage_of);
        let report = super::report(
            &messages,
            Format::Threadline,
            &Options::default().with_model(Some("claude-opus-4-8")),
        );
        assert_eq!(report.model, "claude-opus-4-8");
        assert_eq!(report.model_warning, None);
        let unknown = super::report(
            &messages,
            Format::Threadline,
            &Options::default().with_model(Some("no-such-model")),
        );
        assert!(unknown.model_warning.is_some());
        assert_eq!(model_id_for(&[], None), DEFAULT_MODEL);
    }
}
