//! `threadline inspect TRANSCRIPT [--json]`: the token, cache and cost report of a session,
//! rendered. The analysis is the library's ([`threadline_inspect`], whose docs say what each
//! figure means); this module runs it on a [`Session`] and words it as the table the command
//! prints.

use serde_json::Value;
use threadline_inspect::{Options, Report, UsageFigures};

use crate::session::Session;
use crate::terminal_text::terminal_safe;

pub use threadline_inspect::DEFAULT_MODEL;

/// The report of `session`, simulating `model_flag`, else the transcript's model.
pub fn report(session: &Session, model_flag: Option<&str>) -> Report {
    threadline_inspect::report(
        &session.messages,
        session.format,
        &Options::default().with_model(model_flag),
    )
}

/// The model the report simulates: the flag's, else the transcript's first, else the default.
pub fn model_id_for(session: &Session, model_flag: Option<&str>) -> String {
    threadline_inspect::model_id_for(&session.messages, model_flag)
}

/// The report as the JSON value `threadline inspect --json` prints (its keys sorted).
pub fn to_json(report: &Report) -> Result<Value, serde_json::Error> {
    serde_json::to_value(report)
}

fn tokens(usage: Option<&UsageFigures>) -> String {
    match usage {
        None => "-".to_owned(),
        Some(u) => format!(
            "{}/{}/{}",
            u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens
        ),
    }
}

/// A share as a percentage: `-` when there is none (or it is not a number, which the JSON
/// form writes as `null`).
fn share(value: Option<f64>) -> String {
    value
        .filter(|s| s.is_finite())
        .map_or("-".to_owned(), |s| format!("{:.1}%", s * 100.0))
}

/// `value` when it is a finite number (the JSON form writes any other as `null`).
fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

/// The report as the table `threadline inspect` prints. The text the transcript gave (the
/// model, request ids, cache-break causes) is escaped one line per cell
/// ([`terminal_safe`]): a newline in it cannot print a row of its own.
pub fn render_text(report: &Report) -> String {
    let mut out = format!(
        "model {} | unseen prefix {} tokens (warm {}), tail {}\n",
        terminal_safe(&report.model, false),
        report.unseen_prefix_tokens,
        report.warm_prefix_tokens,
        report.tail_tokens
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
    let planned = report.plan.is_some();
    for row in &report.requests {
        out.push_str(&format!(
            "{:>4}  {:<34} {:>24} {:>24} {:>7} {:>7} {:>10.5}  {}\n",
            row.index,
            terminal_safe(row.request_id.as_deref().unwrap_or("-"), false),
            tokens(row.recorded.as_ref()),
            tokens(Some(&row.predicted)),
            share(row.recorded_share),
            share(Some(row.predicted_share)),
            finite(row.cost.recorded)
                .or(finite(Some(row.cost.predicted)))
                .unwrap_or(0.0),
            terminal_safe(
                row.cache_break
                    .as_ref()
                    .map_or("", |b| b.description.as_str()),
                false
            ),
        ));
        out.push_str(&crate::inspect_diagnostics::render(row));
        for pass in row.compaction_iterations.iter().flatten() {
            out.push_str(&format!(
                "      server-side compaction pass: input {}, output {} (billed in the cost)\n",
                pass.input_tokens, pass.output_tokens
            ));
        }
        if planned {
            out.push_str(&format!(
                "      re-planned {:>45} {:>15} {:>10.5}  {}\n",
                tokens(row.planned.as_ref()),
                share(row.planned_share),
                finite(row.cost.planned).unwrap_or(0.0),
                terminal_safe(
                    row.planned_cache_break
                        .as_ref()
                        .and_then(Option::as_deref)
                        .unwrap_or(""),
                    false
                ),
            ));
        }
    }
    let totals = &report.totals;
    let cost = |v: Option<f64>| finite(v).map_or("-".to_owned(), |c| format!("${c:.4}"));
    out.push_str(&format!(
        "total {} requests: recorded {} ({} read), predicted {} ({} read); cost recorded {}, predicted {}\n",
        totals.requests,
        tokens(totals.recorded.as_ref()),
        share(totals.recorded_share),
        tokens(Some(&totals.predicted)),
        share(Some(totals.predicted_share)),
        cost(totals.cost.recorded),
        cost(Some(totals.cost.predicted)),
    ));
    if let Some(passes) = &report.compaction_iterations {
        out.push_str(&format!(
            "compaction iterations: {} (input {}, output {}), billed apart from the requests' own usage\n",
            passes.count, passes.input_tokens, passes.output_tokens
        ));
    }
    match finite(report.share_mae) {
        Some(mae) => out.push_str(&format!(
            "share_mae {mae:.4} (after the first request: {})",
            finite(report.share_mae_after_first).map_or("-".to_owned(), |m| format!("{m:.4}"))
        )),
        None => out.push_str("share_mae - (the transcript records no usage)"),
    }
    let compaction = &report.compaction;
    out.push_str(&format!(
        "\ncompaction at the end: ~{} tokens ({}), autocompact at {} ({} left); the budget would \
         store {} results; microcompact would clear {}; the cache expires {} (microcompact due: {})",
        compaction.tokens,
        threadline_inspect::level_name(compaction.level),
        compaction.thresholds.autocompact,
        compaction.tokens_until_autocompact,
        compaction.budget_would_store.len(),
        compaction.microcompact_clearable,
        compaction.cache_expires_at.as_deref().unwrap_or("-"),
        if compaction.microcompact_due_at_end { "yes" } else { "no" },
    ));
    out
}
