//! The analysis of `threadline inspect TRANSCRIPT [--json]`: the token, cache and cost report
//! of a session.
//!
//! Each API request the transcript implies (one per assistant response: fragments sharing a
//! request id or message id are one request) is rebuilt — the messages before the response,
//! normalized, with the default cache plan — and run through the prompt-cache simulator at
//! the time it was sent. The report puts the simulator's prediction next to the usage the
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
//! `--model`, which simulates one model throughout). The break that follows names that cause
//! (`prefix_reloaded` with the command and its output, or `model_changed`).
//!
//! Compaction: each request also says where its predicted context stands against the model's
//! thresholds (`context_level`: ok, warning, autocompact, blocking), and `compaction` says
//! when each layer would trigger for the session as it ends — judged at the time of its last
//! message, so the report is the same on every run: the estimated context and its level,
//! tokens left before autocompact, results the tool-result budget would store, results
//! microcompact would clear, when the last request's cache expires and whether the
//! time-based microcompact is due.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};
use threadline_cache::{Calibration, SimConfig, Step};
use threadline_compact::{BudgetOptions, Level, MicrocompactOptions, Thresholds, triggers};
use threadline_message::Message;
use threadline_normalize::{ImpliedRequests, ImpliedView, PrefixChange};
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{MessagesRequest, Usage};

use crate::session::Session;
use crate::terminal_text::terminal_safe;

/// The model assumed when the transcript names none: the workspace default.
use threadline_wire::defaults::DEFAULT_MODEL;

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

/// A prefix change as a simulator applies it.
pub enum Applied<'a> {
    /// The dynamic part of the unseen prefix was re-rendered, by this command and output.
    Reload(String),
    /// The session switched to this model (named so).
    Switch(&'static Model, &'a str),
}

/// The prefix changes a simulator applies, in order: every reload, and — unless the model is
/// fixed by `--model` — every model switch (an id not in the table priced as `resolve`
/// prices it).
pub fn prefix_changes<'a>(
    changes: &'a [PrefixChange],
    model_flag: Option<&str>,
) -> impl Iterator<Item = Applied<'a>> {
    let fixed_model = model_flag.is_some();
    changes.iter().filter_map(move |change| match change {
        PrefixChange::ToolsReloaded { command, output } => {
            Some(Applied::Reload(format!("{command}: {output}")))
        }
        PrefixChange::ModelSwitched { to, .. } if !fixed_model => {
            let table = ModelTable::builtin();
            let next = table.get(to).unwrap_or_else(|| table.resolve("?").model());
            Some(Applied::Switch(next, to.as_str()))
        }
        _ => None,
    })
}

/// The model the report simulates: the flag's, else the transcript's first, else the default.
pub fn model_id_for(session: &Session, model_flag: Option<&str>) -> String {
    model_flag
        .or_else(|| model_of(&session.messages))
        .unwrap_or(DEFAULT_MODEL)
        .to_owned()
}

/// A usage as the report shows it.
pub fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens.unwrap_or(0),
        "cache_creation_input_tokens": usage.cache_creation_input_tokens.unwrap_or(0),
        "cache_read_input_tokens": usage.cache_read_input_tokens.unwrap_or(0),
        "ephemeral_5m_input_tokens": usage.cache_creation.as_ref().and_then(|c| c.ephemeral_5m_input_tokens),
        "ephemeral_1h_input_tokens": usage.cache_creation.as_ref().and_then(|c| c.ephemeral_1h_input_tokens),
    })
}

/// The calibration inferred from the first recorded usage (see the module docs): the first
/// request that recorded one, as `model_id` would be sent it (unplanned).
pub fn calibrate(messages: &[Message], model_id: &str) -> Calibration {
    let mut walk = ImpliedRequests::new(messages);
    while let Some(implied) = walk.next_request() {
        if let Some(usage) = &implied.recorded {
            let request = MessagesRequest::new(model_id, 1024, implied.messages.to_vec());
            return Calibration::from_first(&request, usage);
        }
    }
    Calibration {
        config: SimConfig::default(),
        scale: 1.0,
    }
}

/// The report of `session` as one JSON value (what `threadline inspect --json` prints),
/// simulating `model_flag`, else the transcript's model.
///
/// Time and memory follow the transcript's size: the requests are walked one at a time
/// (`threadline_normalize::ImpliedRequests`, the incremental normalizer), and each is planned
/// and simulated by a `threadline_cache::SessionSimulator`, which redoes only what changed
/// since the previous request.
pub fn report(session: &Session, model_flag: Option<&str>) -> Value {
    let model_id = model_id_for(session, model_flag);
    let resolved = ModelTable::builtin().resolve(&model_id);
    let model: &Model = resolved.model();
    let calibration = calibrate(&session.messages, &model_id);
    let config = calibration.config;
    let mut sim = calibration.session_simulator(model, &model_id);
    let mut rows = Vec::new();
    let mut totals = Totals::default();
    let mut last_at = 0u64;
    let thresholds = Thresholds::for_model(model);
    let mut walk = ImpliedRequests::new(&session.messages);
    let diagnosed = crate::inspect_diagnostics::recorded(&session.messages);
    while let Some(implied) = walk.next_request() {
        if implied.after_compaction {
            sim.reset_planner();
        }
        // What the records say changed besides the messages (module docs).
        for change in prefix_changes(&implied.prefix_changes, model_flag) {
            match change {
                Applied::Reload(by) => sim.reload_dynamic_prefix(by),
                Applied::Switch(next, to) => sim.switch_model(next, to),
            }
        }
        let model = sim.model();
        let at = implied.at_ms.unwrap_or(last_at).max(last_at);
        last_at = at;
        let step = sim.step(at, implied.messages, implied.unchanged);
        let mut row = totals.add(rows.len(), &implied, &step, model, &thresholds);
        if let Some(recorded) = implied.key.as_ref().and_then(|k| diagnosed.get(k)) {
            row["diagnostics"] =
                crate::inspect_diagnostics::row(recorded, step.cache_break.as_ref());
        }
        rows.push(row);
    }
    let errors = &totals.share_errors;
    let mae = |e: &[f64]| (!e.is_empty()).then(|| e.iter().sum::<f64>() / e.len() as f64);
    let mut report = json!({
        "format": session.format,
        "model": model.id,
        "model_warning": resolved.warning(),
        "unseen_prefix_tokens": config.unseen.tokens,
        "warm_prefix_tokens": config.unseen.warm_tokens,
        "tail_tokens": config.tail_tokens,
        "estimate_scale": calibration.scale,
        "requests": rows,
        "totals": totals.json(),
        "share_mae": mae(errors),
        "share_mae_after_first": mae(errors.get(1..).unwrap_or(&[])),
        "compaction": compaction_json(&session.messages, model, config.unseen.tokens),
    });
    if totals.compaction_passes.count > 0
        && let Some(map) = report.as_object_mut()
    {
        map.insert(
            "compaction_iterations".to_owned(),
            totals.compaction_passes.json(),
        );
    }
    report
}

/// The sums over a transcript's requests, recorded and predicted.
#[derive(Default)]
struct Totals {
    requests: usize,
    recorded: Usage,
    predicted: Usage,
    cost_recorded: f64,
    cost_predicted: f64,
    /// `|recorded - predicted|` cache-read share of each request that recorded usage.
    share_errors: Vec<f64>,
    compaction_passes: CompactionPasses,
}

impl Totals {
    /// Adds the request `index` (its recorded usage, if any, and the simulator's `step`) and
    /// returns its row.
    fn add(
        &mut self,
        index: usize,
        implied: &ImpliedView<'_>,
        step: &Step,
        model: &Model,
        thresholds: &Thresholds,
    ) -> Value {
        self.requests += 1;
        let output = implied
            .recorded
            .as_ref()
            .and_then(|u| u.output_tokens)
            .unwrap_or(0);
        let predicted_cost = step.usage.cost(model, output);
        self.cost_predicted += predicted_cost;
        add(&mut self.predicted, &step.usage.to_usage());
        let predicted_share = step.usage.read_share();
        let (recorded, recorded_share, recorded_cost) = match &implied.recorded {
            Some(usage) => {
                let share = usage.cache_read_share();
                self.share_errors.push((share - predicted_share).abs());
                // Each pass by its own model's row (a fallback hop), as replay and the demo
                // price it.
                let cost = ModelTable::builtin().cost(&model.id, usage);
                self.cost_recorded += cost;
                self.compaction_passes.add(usage);
                add(&mut self.recorded, usage);
                (usage_json(usage), json!(share), json!(cost))
            }
            None => (Value::Null, Value::Null, Value::Null),
        };
        let passes = implied
            .recorded
            .as_ref()
            .map(compaction_iterations_json)
            .filter(|p| p.as_array().is_some_and(|a| !a.is_empty()));
        let mut row = json!({
            "index": index,
            "request_id": implied.key,
            "timestamp_ms": implied.at_ms,
            "messages": implied.messages.len(),
            "after_compaction": implied.after_compaction,
            "recorded": recorded,
            "predicted": usage_json(&step.usage.to_usage()),
            "recorded_share": recorded_share,
            "predicted_share": predicted_share,
            "cost": {"recorded": recorded_cost, "predicted": predicted_cost},
            "cache_break": step.cache_break.as_ref().map(break_json),
            "context_level": level_name(thresholds.level(step.usage.total())),
        });
        if let (Some(passes), Some(map)) = (passes, row.as_object_mut()) {
            // Server-side compaction passes, billed beside the request's own (top-level) usage.
            map.insert("compaction_iterations".to_owned(), passes);
        }
        row
    }

    /// The report's `totals`: the recorded sums only when some request recorded usage.
    fn json(&self) -> Value {
        let recorded = !self.share_errors.is_empty();
        json!({
            "requests": self.requests,
            "recorded": if recorded { usage_json(&self.recorded) } else { Value::Null },
            "predicted": usage_json(&self.predicted),
            "recorded_share": if recorded { json!(self.recorded.cache_read_share()) } else { Value::Null },
            "predicted_share": self.predicted.cache_read_share(),
            "cost": {
                "recorded": if recorded { json!(self.cost_recorded) } else { Value::Null },
                "predicted": self.cost_predicted,
            },
        })
    }
}

/// The server-side compaction passes (`usage.iterations` of type `compaction`) a transcript
/// recorded: each billed, apart from the requests' own usage.
#[derive(Debug, Default)]
struct CompactionPasses {
    count: u64,
    input_tokens: u64,
    output_tokens: u64,
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

    fn json(&self) -> Value {
        json!({"count": self.count, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens})
    }
}

/// A usage's compaction passes as the report shows them.
fn compaction_iterations_json(usage: &Usage) -> Value {
    usage
        .compaction_iterations()
        .map(|pass| {
            json!({"input_tokens": pass.total_input_tokens(),
                "output_tokens": pass.output_tokens.unwrap_or(0)})
        })
        .collect()
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Ok => "ok",
        Level::Warning => "warning",
        Level::Autocompact => "autocompact",
        Level::Blocking => "blocking",
    }
}

/// When each compaction layer would trigger for the session as it ends (see the module docs);
/// `overhead` is the unseen prefix (tools and system prompt) in tokens.
fn compaction_json(messages: &[Message], model: &Model, overhead: u64) -> Value {
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
    json!({
        "tokens": report.tokens,
        "level": level_name(report.level),
        "thresholds": {
            "effective_window": report.thresholds.effective_window,
            "warning": report.thresholds.warning,
            "autocompact": report.thresholds.autocompact,
            "blocking": report.thresholds.blocking,
        },
        "tokens_until_autocompact": report.tokens_until_autocompact,
        "budget_would_store": report.budget_would_store,
        "microcompact_clearable": report.microcompact_clearable.len(),
        "cache_expires_at": report.cache_expires_at.and_then(at),
        "microcompact_due_at_end": report.microcompact_due,
    })
}

/// A cache break as `{cause, location, description, …the cause's details}`.
fn break_json(found: &threadline_cache::CacheBreak) -> Value {
    let mut value = serde_json::to_value(&found.cause).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut value {
        map.insert(
            "location".to_owned(),
            json!(found.location.map(|l| l.to_string())),
        );
        map.insert("description".to_owned(), json!(found.to_string()));
    }
    value
}

fn add(total: &mut Usage, usage: &Usage) {
    // Saturating: a damaged or hostile transcript may record counts near u64::MAX.
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

fn tokens(value: &Value) -> String {
    if value.is_null() {
        return "-".to_owned();
    }
    format!(
        "{}/{}/{}",
        value["input_tokens"],
        value["cache_creation_input_tokens"],
        value["cache_read_input_tokens"]
    )
}

fn share(value: &Value) -> String {
    value
        .as_f64()
        .map_or("-".to_owned(), |s| format!("{:.1}%", s * 100.0))
}

/// The report as the table `threadline inspect` prints. The text the transcript gave (the
/// model, request ids, cache-break causes) is escaped one line per cell
/// ([`terminal_safe`]): a newline in it cannot print a row of its own.
pub fn render_text(report: &Value) -> String {
    let mut out = format!(
        "model {} | unseen prefix {} tokens (warm {}), tail {}\n",
        terminal_safe(report["model"].as_str().unwrap_or("?"), false),
        report["unseen_prefix_tokens"],
        report["warm_prefix_tokens"],
        report["tail_tokens"]
    );
    out.push_str(&format!(
        "{:>4}  {:<34} {:>24} {:>24} {:>7} {:>7} {:>10}  cache break\n",
        "#",
        "request",
        "recorded in/write/read",
        "predicted in/write/read",
        "rec %",
        "pred %",
        "cost $"
    ));
    let planned = report["plan"].is_object();
    for row in report["requests"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{:>4}  {:<34} {:>24} {:>24} {:>7} {:>7} {:>10.5}  {}\n",
            row["index"].as_u64().unwrap_or(0),
            terminal_safe(row["request_id"].as_str().unwrap_or("-"), false),
            tokens(&row["recorded"]),
            tokens(&row["predicted"]),
            share(&row["recorded_share"]),
            share(&row["predicted_share"]),
            row["cost"]["recorded"]
                .as_f64()
                .or(row["cost"]["predicted"].as_f64())
                .unwrap_or(0.0),
            terminal_safe(
                row["cache_break"]["description"].as_str().unwrap_or(""),
                false
            ),
        ));
        out.push_str(&crate::inspect_diagnostics::render(row));
        for pass in row["compaction_iterations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            out.push_str(&format!(
                "      server-side compaction pass: input {}, output {} (billed in the cost)\n",
                pass["input_tokens"], pass["output_tokens"]
            ));
        }
        if planned {
            out.push_str(&format!(
                "      re-planned {:>45} {:>15} {:>10.5}  {}\n",
                tokens(&row["planned"]),
                share(&row["planned_share"]),
                row["cost"]["planned"].as_f64().unwrap_or(0.0),
                terminal_safe(row["planned_cache_break"].as_str().unwrap_or(""), false),
            ));
        }
    }
    let totals = &report["totals"];
    let cost = |v: &Value| v.as_f64().map_or("-".to_owned(), |c| format!("${c:.4}"));
    out.push_str(&format!(
        "total {} requests: recorded {} ({} read), predicted {} ({} read); cost recorded {}, predicted {}\n",
        totals["requests"],
        tokens(&totals["recorded"]),
        share(&totals["recorded_share"]),
        tokens(&totals["predicted"]),
        share(&totals["predicted_share"]),
        cost(&totals["cost"]["recorded"]),
        cost(&totals["cost"]["predicted"]),
    ));
    let passes = &report["compaction_iterations"];
    if passes.is_object() {
        out.push_str(&format!(
            "compaction iterations: {} (input {}, output {}), billed apart from the requests' own usage\n",
            passes["count"], passes["input_tokens"], passes["output_tokens"]
        ));
    }
    match report["share_mae"].as_f64() {
        Some(mae) => out.push_str(&format!(
            "share_mae {mae:.4} (after the first request: {})",
            report["share_mae_after_first"]
                .as_f64()
                .map_or("-".to_owned(), |m| format!("{m:.4}"))
        )),
        None => out.push_str("share_mae - (the transcript records no usage)"),
    }
    let compaction = &report["compaction"];
    out.push_str(&format!(
        "\ncompaction at the end: ~{} tokens ({}), autocompact at {} ({} left); the budget would \
         store {} results; microcompact would clear {}; the cache expires {} (microcompact due: {})",
        compaction["tokens"],
        compaction["level"].as_str().unwrap_or("?"),
        compaction["thresholds"]["autocompact"],
        compaction["tokens_until_autocompact"],
        compaction["budget_would_store"].as_array().map_or(0, Vec::len),
        compaction["microcompact_clearable"],
        compaction["cache_expires_at"].as_str().unwrap_or("-"),
        if compaction["microcompact_due_at_end"].as_bool() == Some(true) { "yes" } else { "no" },
    ));
    out
}
