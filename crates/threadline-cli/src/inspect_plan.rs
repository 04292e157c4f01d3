//! `threadline inspect TRANSCRIPT --plan STRATEGY`: what threadline's cache planning would
//! have paid for the requests a recorded session sent, beside what it paid.
//!
//! The requests are the ones the report already walks (each response's messages before it,
//! normalized). Each is re-planned — its markers placed by a `threadline_cache::Planner` with
//! the chosen strategy, which forgets its history at a compaction boundary as the agent's does
//! — and simulated with the same calibration as the report's prediction: the unseen tools and
//! system prompt inferred from the first recorded usage (and as warm as that request found
//! them), the model's cache rules and prices, each request at its recorded time, so idle gaps
//! expire entries as they did. The result goes beside the recorded usage: per request
//! (`planned`, `planned_share`, `cost.planned`) and in total (`plan`), with the difference in
//! dollars (recorded input cost − re-planned input cost; positive: threadline would have paid
//! less).
//!
//! Planning changes what the input costs, not what the model writes: the totals compare input
//! costs; a request's `cost.planned`, like its other costs, adds the recorded output. The comparison is only as good as the simulator; its error
//! against the recorded usage is the report's `share_mae`, printed beside it.
//!
//! ```
//! use threadline_cli::{inspect, inspect_plan, session};
//!
//! let transcript = concat!(
//!     r#"{"type":"user","id":"u1","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"text","text":"Hi"}]}"#, "\n",
//!     r#"{"type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z","api_message_id":"msg_1","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hello"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":2000,"cache_read_input_tokens":0,"output_tokens":5}}"#, "\n",
//! );
//! let session = session::read_session(transcript);
//! let mut report = inspect::report(&session, None);
//! inspect_plan::add_plan(&mut report, &session, None, inspect_plan::PlanStrategy::Default);
//! assert_eq!(report["plan"]["strategy"], "lookback_aware");
//! assert!(report["requests"][0]["planned"].is_object());
//! assert!(report["plan"]["difference_dollars"].is_number());
//! ```

use serde_json::{Value, json};
use threadline_cache::{Automatic, LookbackAware, Planner, Seed, Stable1h, Step, Ttl};
use threadline_normalize::ImpliedRequests;
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{MessagesRequest, Usage};

use crate::inspect::{Applied, calibrate, model_id_for, prefix_changes, usage_json};
use crate::session::Session;

/// A planner strategy `--plan` can name.
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
    /// Every strategy, by the name `--plan` takes.
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

/// Re-plans the requests of `session` with `strategy` and adds the result to `report` (the
/// value [`crate::inspect::report`] made for the same session and model flag). Returns the
/// totals over the requests that recorded usage (what the comparison is fair on).
pub fn add_plan(
    report: &mut Value,
    session: &Session,
    model_flag: Option<&str>,
    strategy: PlanStrategy,
) -> PlanTotals {
    let model_id = model_id_for(session, model_flag);
    let resolved = ModelTable::builtin().resolve(&model_id);
    let model = resolved.model();
    let mut calibration = calibrate(&session.messages, &model_id);
    // The tools and system prompt are not in the transcript: they are the unseen prefix, whose
    // markers the strategy's stable markers would be.
    calibration.config.unseen.ttl = strategy.stable_ttl();
    let mut planner = strategy.planner();
    let mut sim = calibration.simulator(model);
    let mut totals = PlanTotals::default();
    let mut walk = ImpliedRequests::new(&session.messages);
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
        for change in prefix_changes(&implied.prefix_changes, model_flag) {
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
            MessagesRequest::new(request_model.as_str(), 1024, implied.messages.to_vec());
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
        if let Some(row) = report["requests"].get_mut(index) {
            mark_row(row, &step, planned_cost);
        }
        index += 1;
    }
    report["totals"]["planned_share"] = json!(share(read_all, input_all));
    report["totals"]["cost"]["planned"] = json!(planned_cost_all);
    report["totals"]["cost"]["input_difference"] =
        json!(totals.recorded_cost - totals.planned_cost);
    report["plan"] = plan_json(report, planner.strategy_name(), &totals);
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

/// The re-planned figures of one request's row.
fn mark_row(row: &mut Value, step: &Step, planned_cost: f64) {
    row["planned"] = usage_json(&step.usage.to_usage());
    row["planned_share"] = json!(step.usage.read_share());
    row["cost"]["planned"] = json!(planned_cost);
    row["planned_cache_break"] = step
        .cache_break
        .as_ref()
        .map_or(Value::Null, |b| json!(b.to_string()));
}

/// The report's `plan`: the strategy against the recording, on the requests that recorded
/// usage.
fn plan_json(report: &Value, strategy: &str, totals: &PlanTotals) -> Value {
    let recorded_share = share(totals.recorded_read, totals.recorded_input);
    let planned_share = share(totals.planned_read, totals.planned_input);
    json!({
        "strategy": strategy,
        "requests_compared": report["requests"].as_array().map_or(0, |rows| {
            rows.iter().filter(|r| r["recorded"].is_object()).count()
        }),
        "recorded_share": recorded_share,
        "planned_share": planned_share,
        "share_ratio": match (planned_share, recorded_share) {
            (Some(p), Some(r)) if r > 0.0 => json!(p / r),
            _ => Value::Null,
        },
        "recorded_input_cost": totals.recorded_cost,
        "planned_input_cost": totals.planned_cost,
        "cost_ratio": if totals.recorded_cost > 0.0 { json!(totals.planned_cost / totals.recorded_cost) } else { Value::Null },
        "difference_dollars": totals.recorded_cost - totals.planned_cost,
        "assumptions": ASSUMPTIONS,
    })
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

/// The lines `threadline inspect --plan` adds to the table.
pub fn render_plan(report: &Value) -> String {
    let plan = &report["plan"];
    let pct = |v: &Value| {
        v.as_f64()
            .map_or_else(|| "-".to_owned(), |s| format!("{:.1}%", s * 100.0))
    };
    let ratio = |v: &Value| {
        v.as_f64()
            .map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"))
    };
    let mut out = format!(
        "re-planned with {} over {} requests with recorded usage: cache-read share {} recorded, {} re-planned (ratio {}); input cost ${:.4} recorded, ${:.4} re-planned (ratio {}); difference ${:.4}\n",
        plan["strategy"].as_str().unwrap_or("?"),
        plan["requests_compared"],
        pct(&plan["recorded_share"]),
        pct(&plan["planned_share"]),
        ratio(&plan["share_ratio"]),
        plan["recorded_input_cost"].as_f64().unwrap_or(0.0),
        plan["planned_input_cost"].as_f64().unwrap_or(0.0),
        ratio(&plan["cost_ratio"]),
        plan["difference_dollars"].as_f64().unwrap_or(0.0),
    );
    out.push_str("assumptions: ");
    out.push_str(ASSUMPTIONS);
    out
}
