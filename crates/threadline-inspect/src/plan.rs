//! What threadline's cache planning would have paid for the requests a recorded session sent,
//! beside what it paid (`threadline inspect --plan STRATEGY`).
//!
//! The requests are the ones the report already walks (each response's messages before it,
//! normalized). Each is re-planned — its markers placed by a [`threadline_cache::Planner`]
//! with the chosen strategy, which forgets its history at a compaction boundary as the agent's
//! does — and simulated with the same calibration as the report's prediction: the unseen tools
//! and system prompt inferred from the first recorded usage (and as warm as that request found
//! them), the model's cache rules and prices, each request at its recorded time, so idle gaps
//! expire entries as they did. The result goes beside the recorded usage: per request
//! (`planned`, `planned_share`, `cost.planned`) and in total ([`PlanReport`]), with the
//! difference in dollars (recorded input cost − re-planned input cost; positive: threadline
//! would have paid less).
//!
//! Planning changes what the input costs, not what the model writes: the totals compare input
//! costs; a request's `cost.planned`, like its other costs, adds the recorded output. The
//! comparison is only as good as the simulator; its error against the recorded usage is the
//! report's `share_mae`, printed beside it.
//!
//! ```
//! use threadline_inspect::{Options, PlanStrategy, add_plan, report};
//! use threadline_message::transcript::{Format, parse_transcript};
//!
//! let transcript = concat!(
//!     r#"{"type":"user","id":"u1","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"text","text":"Hi"}]}"#, "\n",
//!     r#"{"type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z","api_message_id":"msg_1","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hello"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":2000,"cache_read_input_tokens":0,"output_tokens":5}}"#, "\n",
//! );
//! let messages = parse_transcript(transcript).messages;
//! let options = Options::default();
//! let mut report = report(&messages, Format::Threadline, &options);
//! add_plan(&mut report, &messages, &options, PlanStrategy::Default);
//! let plan = report.plan.as_ref().expect("planned");
//! assert_eq!(plan.strategy, "lookback_aware");
//! assert_eq!(plan.requests_compared, 1);
//! assert!(report.requests[0].planned.is_some());
//! ```

use serde::Serialize;
use threadline_cache::{Automatic, LookbackAware, Planner, Seed, Stable1h, Step, Ttl};
use threadline_message::Message;
use threadline_normalize::ImpliedRequests;
use threadline_wire::model::Model;
use threadline_wire::{MessagesRequest, Usage};

use crate::{Applied, Options, Report, UsageFigures, calibrate_walk, model_id_for, prefix_changes};

/// A planner strategy the comparison can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanStrategy {
    /// The strategy threadline's agent uses by default (`lookback_aware`).
    Default,
    /// Stable markers on the tools and the static system prompt, one moving marker on the
    /// last message (`seed`: the layout of the design notes, Claude Code's own).
    Seed,
    /// [`PlanStrategy::Seed`] plus a marker that keeps an earlier write within the API's
    /// 20-block lookback when a turn adds more (`lookback_aware`, the default).
    LookbackAware,
    /// [`PlanStrategy::LookbackAware`] with one-hour markers on the tools and system prompt
    /// (`stable_1h`).
    Stable1h,
    /// The top-level automatic `cache_control` for the tail (it takes one of the four slots),
    /// explicit markers on the tools and system prompt and the lookback bridge (`automatic`).
    Automatic,
}

impl PlanStrategy {
    /// Every strategy, by its name.
    pub const ALL: [(&'static str, PlanStrategy); 5] = [
        ("default", PlanStrategy::Default),
        ("seed", PlanStrategy::Seed),
        ("lookback_aware", PlanStrategy::LookbackAware),
        ("stable_1h", PlanStrategy::Stable1h),
        ("automatic", PlanStrategy::Automatic),
    ];

    /// The strategy called `name`.
    pub fn from_name(name: &str) -> Option<PlanStrategy> {
        PlanStrategy::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }

    /// The lifetime of the strategy's markers on the tools and system prompt.
    fn stable_ttl(self) -> Ttl {
        match self {
            PlanStrategy::Stable1h => Ttl::OneHour,
            _ => Ttl::FiveMinutes,
        }
    }

    fn planner(self) -> Planner {
        match self {
            PlanStrategy::Default | PlanStrategy::LookbackAware => Planner::new(LookbackAware),
            PlanStrategy::Seed => Planner::new(Seed),
            PlanStrategy::Stable1h => Planner::new(Stable1h),
            PlanStrategy::Automatic => Planner::new(Automatic::default()),
        }
    }
}

/// Input tokens and input cost of the requests that recorded usage, recorded and re-planned.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct PlanTotals {
    /// Input tokens (all kinds) of the requests that recorded usage.
    pub recorded_input: u64,
    /// Of which read from the cache, as recorded.
    pub recorded_read: u64,
    /// The recorded input cost in dollars.
    pub recorded_cost: f64,
    /// Input tokens of the same requests, re-planned and simulated.
    pub planned_input: u64,
    /// Of which read from the cache, re-planned.
    pub planned_read: u64,
    /// The re-planned input cost in dollars.
    pub planned_cost: f64,
}

/// The report's `plan`: the strategy against the recording, on the requests that recorded
/// usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PlanReport {
    /// The planner strategy's name.
    pub strategy: String,
    /// The requests that recorded usage (what the comparison is fair on).
    pub requests_compared: usize,
    /// Their recorded cache-read share.
    pub recorded_share: Option<f64>,
    /// Their re-planned cache-read share.
    pub planned_share: Option<f64>,
    /// Re-planned share / recorded share.
    pub share_ratio: Option<f64>,
    /// Their recorded input cost in dollars.
    pub recorded_input_cost: f64,
    /// Their re-planned input cost in dollars.
    pub planned_input_cost: f64,
    /// Re-planned cost / recorded cost.
    pub cost_ratio: Option<f64>,
    /// Recorded − re-planned input cost (positive: threadline would have paid less).
    pub difference_dollars: f64,
    /// What the comparison assumes ([`ASSUMPTIONS`]).
    pub assumptions: String,
}

/// Re-plans the requests of `messages` with `strategy` and adds the result to `report` (the
/// report [`crate::report`] made of the same messages with the same options). Returns the
/// totals over the requests that recorded usage (what the comparison is fair on).
pub fn add_plan(
    report: &mut Report,
    messages: &[Message],
    options: &Options<'_>,
    strategy: PlanStrategy,
) -> PlanTotals {
    let model_id = model_id_for(messages, options.model);
    let resolved = options.table.resolve(&model_id);
    let model = resolved.model();
    let mut walk = ImpliedRequests::new(messages);
    let mut calibration = calibrate_walk(walk.clone(), &model_id);
    // The tools and system prompt are not in the transcript: they are the unseen prefix, whose
    // markers the strategy's stable markers would be.
    calibration.config.unseen.ttl = strategy.stable_ttl();
    let mut planner = strategy.planner();
    let mut sim = calibration.simulator(model);
    let mut totals = PlanTotals::default();
    let mut index = 0usize;
    let mut last_at = 0u64;
    // Over every request, recorded usage or not (the report's `totals` are).
    let (mut planned_cost_all, mut read_all, mut input_all) = (0.0, 0u64, 0u64);
    let mut request_model = model_id.clone();
    while let Some(implied) = walk.next_request() {
        if implied.after_compaction {
            planner.reset();
        }
        // What the records say changed besides the messages, as the report applies it.
        for change in prefix_changes(&implied.prefix_changes, options) {
            match change {
                Applied::Reload(by) => sim.reload_dynamic_prefix(by),
                Applied::Switch(next, to) => {
                    sim.switch_model(next);
                    to.clone_into(&mut request_model);
                }
            }
        }
        let model = sim.model();
        let at = implied.at_ms.unwrap_or(last_at).max(last_at);
        last_at = at;
        let mut request =
            MessagesRequest::new(request_model.as_str(), 1024, implied.messages.clone());
        planner.plan(&mut request);
        let step = sim.step(at, &request);
        let output = implied
            .recorded
            .as_ref()
            .and_then(|u| u.output_tokens)
            .unwrap_or(0);
        let planned_cost = step.usage.cost(model, output);
        planned_cost_all += planned_cost;
        read_all = read_all.saturating_add(step.usage.cache_read_input_tokens);
        input_all = input_all.saturating_add(step.usage.total());
        if let Some(recorded) = &implied.recorded {
            totals.add(recorded, &step, model);
        }
        if let Some(row) = report.requests.get_mut(index) {
            row.planned = Some(UsageFigures::of(&step.usage.to_usage()));
            row.planned_share = Some(step.usage.read_share());
            row.cost.planned = Some(planned_cost);
            row.planned_cache_break = Some(step.cache_break.as_ref().map(|b| b.to_string()));
        }
        index += 1;
    }
    report.totals.planned_share = Some(share(read_all, input_all));
    report.totals.cost.planned = Some(planned_cost_all);
    report.totals.cost.input_difference = Some(totals.recorded_cost - totals.planned_cost);
    let requests_compared = report
        .requests
        .iter()
        .filter(|r| r.recorded.is_some())
        .count();
    report.plan = Some(plan_report(
        planner.strategy_name(),
        requests_compared,
        &totals,
    ));
    totals
}

/// `read` of `all` input tokens, when there are any.
fn share(read: u64, all: u64) -> Option<f64> {
    (all > 0).then(|| read as f64 / all as f64)
}

impl PlanTotals {
    /// Adds a request that recorded `recorded`, re-planned as `step` shows.
    fn add(&mut self, recorded: &Usage, step: &Step, model: &Model) {
        self.recorded_input = self
            .recorded_input
            .saturating_add(recorded.total_input_tokens());
        self.recorded_read = self
            .recorded_read
            .saturating_add(recorded.cache_read_input_tokens.unwrap_or(0));
        let mut input_only = recorded.clone();
        input_only.output_tokens = Some(0);
        self.recorded_cost += model.cost(&input_only);
        self.planned_input = self.planned_input.saturating_add(step.usage.total());
        self.planned_read = self
            .planned_read
            .saturating_add(step.usage.cache_read_input_tokens);
        self.planned_cost += step.usage.cost(model, 0);
    }
}

fn plan_report(strategy: &str, requests_compared: usize, totals: &PlanTotals) -> PlanReport {
    let recorded_share = share(totals.recorded_read, totals.recorded_input);
    let planned_share = share(totals.planned_read, totals.planned_input);
    PlanReport {
        strategy: strategy.to_owned(),
        requests_compared,
        recorded_share,
        planned_share,
        share_ratio: match (planned_share, recorded_share) {
            (Some(p), Some(r)) if r > 0.0 => Some(p / r),
            _ => None,
        },
        recorded_input_cost: totals.recorded_cost,
        planned_input_cost: totals.planned_cost,
        cost_ratio: (totals.recorded_cost > 0.0)
            .then(|| totals.planned_cost / totals.recorded_cost),
        difference_dollars: totals.recorded_cost - totals.planned_cost,
        assumptions: ASSUMPTIONS.to_owned(),
    }
}

/// What the comparison assumes, printed beside it.
pub const ASSUMPTIONS: &str = "the same requests (the transcript's messages, normalized), \
    re-planned and simulated with the report's calibration: unseen tools and system prompt \
    inferred from the first recorded usage, as warm as that request found them, and marked \
    as the strategy marks tools and system (one hour for stable_1h, else five minutes); \
    each request \
    at its recorded time; the model's cache rules and prices; output tokens as recorded. \
    Compared only over requests that recorded usage. The simulator's own error is the \
    report's share_mae.";
