//! `threadline inspect TRANSCRIPT [--json]`: the token, cache and cost report of a session.
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

use std::process::ExitCode;
use std::time::UNIX_EPOCH;

use serde_json::{Value, json};
use threadline_cache::{Calibration, Planner, SimConfig};
use threadline_message::claude_code::{
    ImportOptions, import_claude_code, is_claude_code_transcript,
};
use threadline_message::{Message, SystemKind};
use threadline_normalize::{Options, normalize};
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{MessagesRequest, Usage};

use crate::input::read_input;
use crate::session::{Session, read_session};

/// The model assumed when the transcript names none.
const DEFAULT_MODEL: &str = "claude-sonnet-4-6";

/// One request implied by a transcript.
pub(crate) struct ImpliedRequest {
    /// The transcript's request id (`req_…`), else the response's message id.
    pub(crate) request_id: Option<String>,
    /// When it was sent, in milliseconds since the Unix epoch (the last message before it).
    pub(crate) at_ms: Option<u64>,
    /// The request (messages normalized; tools and system unknown).
    pub(crate) request: MessagesRequest,
    /// The usage the transcript recorded for its response.
    pub(crate) recorded: Option<Usage>,
    /// Whether a compaction happened since the previous request.
    pub(crate) after_compaction: bool,
}

fn millis(message: &Message) -> Option<u64> {
    let time = message.header().timestamp.to_system_time()?;
    time.duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64)
}

/// The requests a transcript implies, in order.
pub(crate) fn implied_requests(messages: &[Message], model: &str) -> Vec<ImpliedRequest> {
    let mut out = Vec::new();
    let mut previous_key: Option<String> = None;
    let mut compacted = false;
    for (i, message) in messages.iter().enumerate() {
        if let Message::System(system) = message
            && matches!(system.kind, SystemKind::CompactBoundary { .. })
        {
            compacted = true;
        }
        let Message::Assistant(assistant) = message else {
            continue;
        };
        if assistant.is_api_error {
            continue;
        }
        let key = assistant
            .request_id
            .clone()
            .or_else(|| assistant.api_message_id.clone());
        if key.is_some() && key == previous_key {
            continue;
        }
        previous_key.clone_from(&key);
        if i == 0 {
            continue;
        }
        let normalized = normalize(&messages[..i], &Options::default());
        let request = MessagesRequest::new(model, 1024, normalized.messages);
        let recorded = messages[i..]
            .iter()
            .filter_map(|m| match m {
                Message::Assistant(a)
                    if a.request_id.clone().or_else(|| a.api_message_id.clone()) == key =>
                {
                    a.usage.as_deref().cloned()
                }
                _ => None,
            })
            .next();
        out.push(ImpliedRequest {
            request_id: key,
            at_ms: millis(&messages[i - 1]).or_else(|| millis(message)),
            request,
            recorded,
            after_compaction: std::mem::take(&mut compacted),
        });
    }
    out
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

fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens.unwrap_or(0),
        "cache_creation_input_tokens": usage.cache_creation_input_tokens.unwrap_or(0),
        "cache_read_input_tokens": usage.cache_read_input_tokens.unwrap_or(0),
        "ephemeral_5m_input_tokens": usage.cache_creation.as_ref().and_then(|c| c.ephemeral_5m_input_tokens),
        "ephemeral_1h_input_tokens": usage.cache_creation.as_ref().and_then(|c| c.ephemeral_1h_input_tokens),
    })
}

/// The calibration inferred from the first recorded usage (see the module docs).
pub(crate) fn calibrate(requests: &[ImpliedRequest]) -> Calibration {
    requests
        .iter()
        .find_map(|r| {
            r.recorded
                .as_ref()
                .map(|u| Calibration::from_first(&r.request, u))
        })
        .unwrap_or(Calibration {
            config: SimConfig::default(),
            scale: 1.0,
        })
}

/// The report as one JSON value.
pub(crate) fn report(session: &Session, model_flag: Option<&str>) -> Value {
    let model_id = model_flag
        .or_else(|| model_of(&session.messages))
        .unwrap_or(DEFAULT_MODEL)
        .to_owned();
    let resolved = ModelTable::builtin().resolve(&model_id);
    let model: &Model = resolved.model();
    let mut requests = implied_requests(&session.messages, &model_id);
    let calibration = calibrate(&requests);
    let config = calibration.config;
    let mut planner = Planner::default();
    let mut sim = calibration.simulator(model);
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let (mut recorded_total, mut predicted_total) = (Usage::default(), Usage::default());
    let (mut cost_recorded, mut cost_predicted) = (0.0, 0.0);
    let mut last_at = 0u64;
    for (index, implied) in requests.iter_mut().enumerate() {
        if implied.after_compaction {
            planner.reset();
        }
        planner.plan(&mut implied.request);
        let at = implied.at_ms.unwrap_or(last_at).max(last_at);
        last_at = at;
        let step = sim.step(at, &implied.request);
        let output = implied
            .recorded
            .as_ref()
            .and_then(|u| u.output_tokens)
            .unwrap_or(0);
        let predicted_cost = step.usage.cost(model, output);
        cost_predicted += predicted_cost;
        add(&mut predicted_total, &step.usage.to_usage());
        let predicted_share = step.usage.read_share();
        let (recorded, recorded_share, recorded_cost) = match &implied.recorded {
            Some(usage) => {
                let share = usage.cache_read_share();
                errors.push((share - predicted_share).abs());
                let cost = model.cost(usage);
                cost_recorded += cost;
                add(&mut recorded_total, usage);
                (usage_json(usage), json!(share), json!(cost))
            }
            None => (Value::Null, Value::Null, Value::Null),
        };
        rows.push(json!({
            "index": index,
            "request_id": implied.request_id,
            "timestamp_ms": implied.at_ms,
            "messages": implied.request.messages.len(),
            "after_compaction": implied.after_compaction,
            "recorded": recorded,
            "predicted": usage_json(&step.usage.to_usage()),
            "recorded_share": recorded_share,
            "predicted_share": predicted_share,
            "cost": {"recorded": recorded_cost, "predicted": predicted_cost},
            "cache_break": step.cache_break.as_ref().map(break_json),
        }));
    }
    let mae = |e: &[f64]| (!e.is_empty()).then(|| e.iter().sum::<f64>() / e.len() as f64);
    json!({
        "format": session.format,
        "model": model.id,
        "model_warning": resolved.warning(),
        "unseen_prefix_tokens": config.unseen.tokens,
        "warm_prefix_tokens": config.unseen.warm_tokens,
        "tail_tokens": config.tail_tokens,
        "estimate_scale": calibration.scale,
        "requests": rows,
        "totals": {
            "requests": requests.len(),
            "recorded": if errors.is_empty() { Value::Null } else { usage_json(&recorded_total) },
            "predicted": usage_json(&predicted_total),
            "recorded_share": if errors.is_empty() { Value::Null } else { json!(recorded_total.cache_read_share()) },
            "predicted_share": predicted_total.cache_read_share(),
            "cost": {
                "recorded": if errors.is_empty() { Value::Null } else { json!(cost_recorded) },
                "predicted": cost_predicted,
            },
        },
        "share_mae": mae(&errors),
        "share_mae_after_first": mae(errors.get(1..).unwrap_or(&[])),
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
    let sum = |a: Option<u64>, b: Option<u64>| Some(a.unwrap_or(0) + b.unwrap_or(0));
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
    total.cache_creation = Some(threadline_wire::response::CacheCreation {
        ephemeral_5m_input_tokens: sum(a5, b5),
        ephemeral_1h_input_tokens: sum(a1, b1),
        extra: threadline_wire::Extra::new(),
    });
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

fn render_text(report: &Value) -> String {
    let mut out = format!(
        "model {} | unseen prefix {} tokens (warm {}), tail {}\n",
        report["model"].as_str().unwrap_or("?"),
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
    for row in report["requests"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{:>4}  {:<34} {:>24} {:>24} {:>7} {:>7} {:>10.5}  {}\n",
            row["index"].as_u64().unwrap_or(0),
            row["request_id"].as_str().unwrap_or("-"),
            tokens(&row["recorded"]),
            tokens(&row["predicted"]),
            share(&row["recorded_share"]),
            share(&row["predicted_share"]),
            row["cost"]["recorded"]
                .as_f64()
                .or(row["cost"]["predicted"].as_f64())
                .unwrap_or(0.0),
            row["cache_break"]["description"].as_str().unwrap_or(""),
        ));
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
    match report["share_mae"].as_f64() {
        Some(mae) => out.push_str(&format!(
            "share_mae {mae:.4} (after the first request: {})",
            report["share_mae_after_first"]
                .as_f64()
                .map_or("-".to_owned(), |m| format!("{m:.4}"))
        )),
        None => out.push_str("share_mae - (the transcript records no usage)"),
    }
    out
}

pub(crate) fn run(path: &str, json_output: bool, model: Option<&str>) -> ExitCode {
    let bytes = match read_input(path) {
        Ok(bytes) => bytes,
        Err(line) => {
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        eprintln!("threadline: {path}: not UTF-8 text");
        return ExitCode::from(2);
    };
    let mut session = read_session(&text);
    if session.messages.is_empty() && is_claude_code_transcript(&text) {
        // A sub-agent's file: every record is on a sidechain.
        let imported = import_claude_code(&text, &ImportOptions::default().with_sidechains(true));
        session.messages = imported.messages;
    }
    if session.messages.is_empty() {
        eprintln!("threadline: {path}: no messages found (is this a transcript?)");
        return ExitCode::from(2);
    }
    for problem in &session.problems {
        eprintln!("threadline: {path}: {problem}");
    }
    let report = report(&session, model);
    if let Some(warning) = report["model_warning"].as_str() {
        eprintln!("threadline: {warning}");
    }
    if json_output {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => crate::output::print_line(&json),
            Err(e) => {
                eprintln!("threadline: cannot print the report: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        crate::output::print_line(&render_text(&report));
    }
    ExitCode::SUCCESS
}
