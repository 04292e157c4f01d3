//! `threadline inspect TRANSCRIPT --plan STRATEGY`: what threadline's cache planning would
//! have paid for the requests a recorded session sent, beside what it paid. The comparison is
//! the library's ([`threadline_inspect::plan`]); this module runs it on a [`Session`] and
//! words it.
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
//! assert_eq!(report.plan.as_ref().map(|p| p.strategy.as_str()), Some("lookback_aware"));
//! assert!(report.requests[0].planned.is_some());
//! assert!(inspect_plan::render_plan(&report).starts_with("re-planned with lookback_aware"));
//! ```

use threadline_inspect::{Options, Report};

use crate::session::Session;

pub use threadline_inspect::plan::{ASSUMPTIONS, PlanReport, PlanStrategy, PlanTotals};

/// Re-plans the requests of `session` with `strategy` and adds the result to `report` (the
/// report [`crate::inspect::report`] made for the same session and model flag). Returns the
/// totals over the requests that recorded usage (what the comparison is fair on).
pub fn add_plan(
    report: &mut Report,
    session: &Session,
    model_flag: Option<&str>,
    strategy: PlanStrategy,
) -> PlanTotals {
    threadline_inspect::add_plan(
        report,
        &session.messages,
        &Options::default().with_model(model_flag),
        strategy,
    )
}

/// `value` when it is a finite number (the JSON form writes any other as `null`).
fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

/// The lines `threadline inspect --plan` adds to the table (empty without a plan).
pub fn render_plan(report: &Report) -> String {
    let Some(plan) = &report.plan else {
        return String::new();
    };
    let pct =
        |v: Option<f64>| finite(v).map_or_else(|| "-".to_owned(), |s| format!("{:.1}%", s * 100.0));
    let ratio = |v: Option<f64>| finite(v).map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"));
    let mut out = format!(
        "re-planned with {} over {} requests with recorded usage: cache-read share {} recorded, {} re-planned (ratio {}); input cost ${:.4} recorded, ${:.4} re-planned (ratio {}); difference ${:.4}\n",
        plan.strategy,
        plan.requests_compared,
        pct(plan.recorded_share),
        pct(plan.planned_share),
        ratio(plan.share_ratio),
        finite(Some(plan.recorded_input_cost)).unwrap_or(0.0),
        finite(Some(plan.planned_input_cost)).unwrap_or(0.0),
        ratio(plan.cost_ratio),
        finite(Some(plan.difference_dollars)).unwrap_or(0.0),
    );
    out.push_str("assumptions: ");
    out.push_str(&plan.assumptions);
    out
}
