//! `threadline inspect TRANSCRIPT [--json]`: the token, cache and cost report of a session,
//! rendered. The analysis is the library's ([`threadline_inspect`], whose docs say what each
//! figure means); this module runs it on a [`Session`] and words it as the table the command
//! prints.

use std::fmt::{self, Write as _};

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

/// `in/write/read`, or `-` when there is no usage.
fn tokens(usage: Option<&UsageFigures>) -> Cell<impl fmt::Display> {
    Cell(fmt::from_fn(move |f| match usage {
        None => f.write_str("-"),
        Some(u) => write!(
            f,
            "{}/{}/{}",
            u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens
        ),
    }))
}

/// A share as a percentage: `-` when there is none (or it is not a number, which the JSON
/// form writes as `null`).
fn share(value: Option<f64>) -> Cell<impl fmt::Display> {
    Cell(fmt::from_fn(move |f| {
        match value.filter(|s| s.is_finite()) {
            None => f.write_str("-"),
            Some(s) => write!(f, "{:.1}%", s * 100.0),
        }
    }))
}

/// A table cell: its text written once, then padded as the column asks (`{:>24}`), without
/// a `String` per cell (a report has a row per request, and `inspect` reads transcripts of
/// any length).
struct Cell<T>(T);

impl<T: fmt::Display> fmt::Display for Cell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_none() {
            return self.0.fmt(f);
        }
        let mut text = CellText::new();
        if fmt::write(&mut text, format_args!("{}", self.0)).is_err() {
            // Longer than the stack holds (these figures never are): padded all the same.
            return f.pad(&self.0.to_string());
        }
        f.pad(text.as_str())
    }
}

/// A cell's text on the stack (three 20-digit counts and their slashes fit).
struct CellText {
    bytes: [u8; 64],
    len: usize,
}

impl CellText {
    fn new() -> Self {
        CellText {
            bytes: [0; 64],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are written in, so the bytes are UTF-8.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl fmt::Write for CellText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let slot = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// `value` when it is a finite number (the JSON form writes any other as `null`).
fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

/// The report as the table `threadline inspect` prints. The text the transcript gave (the
/// model, request ids, cache-break causes) is escaped one line per cell
/// ([`terminal_safe`]): a newline in it cannot print a row of its own.
pub fn render_text(report: &Report) -> String {
    // A row is about 125 bytes, its re-planned line about 95: room for the whole table at
    // once (a cache break's cause or diagnostics make it grow, rarely).
    let per_request = if report.plan.is_some() { 224 } else { 128 };
    let mut out = String::with_capacity(1024 + report.requests.len().saturating_mul(per_request));
    // Writing to a `String` cannot fail.
    let _ = write_table(&mut out, report);
    out
}

fn write_table(out: &mut String, report: &Report) -> fmt::Result {
    writeln!(
        out,
        "model {} | unseen prefix {} tokens (warm {}), tail {}",
        terminal_safe(&report.model, false),
        report.unseen_prefix_tokens,
        report.warm_prefix_tokens,
        report.tail_tokens
    )?;
    writeln!(
        out,
        "{:>4}  {:<34} {:>24} {:>24} {:>7} {:>7} {:>10}  cache break",
        "#",
        "request",
        "recorded in/write/read",
        "predicted in/write/read",
        "rec %",
        "pred %",
        "cost $"
    )?;
    let planned = report.plan.is_some();
    for row in &report.requests {
        writeln!(
            out,
            "{:>4}  {:<34} {:>24} {:>24} {:>7} {:>7} {:>10.5}  {}",
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
        )?;
        crate::inspect_diagnostics::write(out, row)?;
        for pass in row.compaction_iterations.iter().flatten() {
            writeln!(
                out,
                "      server-side compaction pass: input {}, output {} (billed in the cost)",
                pass.input_tokens, pass.output_tokens
            )?;
        }
        if planned {
            writeln!(
                out,
                "      re-planned {:>45} {:>15} {:>10.5}  {}",
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
            )?;
        }
    }
    let totals = &report.totals;
    let cost = |v: Option<f64>| finite(v).map_or("-".to_owned(), |c| format!("${c:.4}"));
    writeln!(
        out,
        "total {} requests: recorded {} ({} read), predicted {} ({} read); cost recorded {}, predicted {}",
        totals.requests,
        tokens(totals.recorded.as_ref()),
        share(totals.recorded_share),
        tokens(Some(&totals.predicted)),
        share(Some(totals.predicted_share)),
        cost(totals.cost.recorded),
        cost(Some(totals.cost.predicted)),
    )?;
    if let Some(passes) = &report.compaction_iterations {
        writeln!(
            out,
            "compaction iterations: {} (input {}, output {}), billed apart from the requests' own usage",
            passes.count, passes.input_tokens, passes.output_tokens
        )?;
    }
    match finite(report.share_mae) {
        Some(mae) => write!(
            out,
            "share_mae {mae:.4} (after the first request: {})",
            finite(report.share_mae_after_first).map_or("-".to_owned(), |m| format!("{m:.4}"))
        )?,
        None => out.push_str("share_mae - (the transcript records no usage)"),
    }
    let compaction = &report.compaction;
    write!(
        out,
        "\ncompaction at the end: ~{} tokens ({}), autocompact at {} ({} left); the budget would \
         store {} results; microcompact would clear {}; the cache expires {} (microcompact due: {})",
        compaction.tokens,
        threadline_inspect::level_name(compaction.level),
        compaction.thresholds.autocompact,
        compaction.tokens_until_autocompact,
        compaction.budget_would_store.len(),
        compaction.microcompact_clearable,
        compaction.cache_expires_at.as_deref().unwrap_or("-"),
        if compaction.microcompact_due_at_end {
            "yes"
        } else {
            "no"
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_padded_as_their_text_would_be() {
        let mut usage = UsageFigures::default();
        usage.input_tokens = u64::MAX;
        usage.cache_creation_input_tokens = 20;
        usage.cache_read_input_tokens = 4_000;
        let text = format!("{}/20/4000", u64::MAX);
        assert_eq!(
            format!("{:>24}", tokens(Some(&usage))),
            format!("{text:>24}")
        );
        assert_eq!(
            format!("{:<45}|", tokens(Some(&usage))),
            format!("{text:<45}|")
        );
        // Wider than the column: written whole, as a `String` would be.
        assert_eq!(format!("{:>4}", tokens(Some(&usage))), text);
        assert_eq!(format!("{}", tokens(None)), "-");
        assert_eq!(format!("{:>7}", tokens(None)), "      -");
        assert_eq!(format!("{:>7}", share(Some(0.655))), "  65.5%");
        assert_eq!(format!("{:>7}", share(Some(f64::NAN))), "      -");
        assert_eq!(format!("{:>7}", share(None)), "      -");
    }

    #[test]
    fn a_cell_longer_than_its_stack_buffer_is_still_padded() {
        let long = "x".repeat(100);
        assert_eq!(
            format!("{:>120}", Cell(long.as_str())),
            format!("{long:>120}")
        );
    }
}
