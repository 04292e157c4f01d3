//! `threadline inspect TRANSCRIPT --html FILE`: the report of [`crate::inspect::report`] as one
//! self-contained HTML page — inline SVG and CSS, no script, nothing fetched.
//!
//! The timeline has one group of bars per request (`<g class="request">`): the recorded usage
//! and the prediction side by side (and the re-planned prediction when the report has one),
//! each stacked as cache read (bottom), cache write, uncached input (top), on one token scale.
//! Above the bars: cache breaks (a red mark, the cause in its tooltip); between them: idle gaps
//! longer than the cache's five-minute lifetime (a dashed line, labelled with the gap). Across
//! the chart: the compaction thresholds that fall within the scale, as horizontal lines. Below
//! it: the cost accumulated over the session, recorded and predicted, as lines on their own
//! axis. Every bar has a tooltip with its numbers.
//!
//! A request is at least [`MIN_SLOT`] pixels wide and the chart scrolls sideways, so a
//! 2,000-request session stays legible; the totals and assumptions are printed above it.
//!
//! ```
//! use threadline_cli::{inspect, inspect_html, session};
//!
//! let transcript = concat!(
//!     r#"{"type":"user","id":"u1","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"text","text":"Hi"}]}"#, "\n",
//!     r#"{"type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z","api_message_id":"msg_1","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hello"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":900,"cache_read_input_tokens":12000,"output_tokens":5}}"#, "\n",
//! );
//! let report = inspect::report(&session::read_session(transcript), None);
//! let html = inspect_html::render_html(&report, "session.jsonl");
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert_eq!(html.matches(r#"<g class="request""#).count(), 1);
//! assert!(!html.contains("<script"));
//! ```

use std::fmt::Write as _;

use threadline_inspect::{Report, RequestRow, ThresholdFigures, UsageFigures};

/// The narrowest slot a request gets, in pixels (bars plus the gap between groups).
pub const MIN_SLOT: f64 = 6.0;
/// The width the chart aims at when there are few requests.
const TARGET_WIDTH: f64 = 1100.0;
/// Height of the token chart and of the cost chart, in pixels.
const CHART_HEIGHT: f64 = 320.0;
const COST_HEIGHT: f64 = 120.0;
/// Left margin (axis labels) and top margin (break marks).
const LEFT: f64 = 70.0;
const TOP: f64 = 24.0;
/// An idle gap longer than this expired the default (five-minute) cache.
const TTL_5M_MS: u64 = 5 * 60 * 1000;

const READ: &str = "#3b82f6";
const WRITE: &str = "#f59e0b";
const UNCACHED: &str = "#ef4444";

/// The series drawn per request: (report key, label, bar opacity).
const SERIES: [(&str, &str, f64); 3] = [
    ("recorded", "recorded", 1.0),
    ("predicted", "predicted", 0.55),
    ("planned", "re-planned", 0.3),
];

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// (cache read, cache write, uncached) of a usage (zeros for none).
fn parts(usage: Option<&UsageFigures>) -> [f64; 3] {
    usage.map_or([0.0; 3], |u| {
        [
            u.cache_read_input_tokens as f64,
            u.cache_creation_input_tokens as f64,
            u.input_tokens as f64,
        ]
    })
}

/// The usage of `row` a series shows (see [`SERIES`]).
fn series_usage<'r>(row: &'r RequestRow, key: &str) -> Option<&'r UsageFigures> {
    match key {
        "recorded" => row.recorded.as_ref(),
        "predicted" => Some(&row.predicted),
        "planned" => row.planned.as_ref(),
        _ => None,
    }
}

/// `value` when it is a finite number (the report's JSON form writes any other as `null`).
fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

fn dollars(value: Option<f64>) -> String {
    finite(value).map_or_else(|| "-".to_owned(), |c| format!("${c:.4}"))
}

fn share(value: Option<f64>) -> String {
    finite(value).map_or_else(|| "-".to_owned(), |s| format!("{:.1}%", s * 100.0))
}

fn duration(ms: u64) -> String {
    let minutes = ms / 60_000;
    if minutes >= 120 {
        format!("{} h {} min", minutes / 60, minutes % 60)
    } else {
        format!("{minutes} min")
    }
}

/// A round step for an axis showing up to `max`, about four ticks.
fn tick_step(max: f64) -> f64 {
    let raw = (max / 4.0).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// Cost accumulated up to a request: recorded, predicted, re-planned.
type CostPoint = (f64, f64, Option<f64>);

/// The report as one HTML page; `title` names the transcript.
pub fn render_html(report: &Report, title: &str) -> String {
    let layout = Layout::of(report);
    let mut svg = String::new();
    let height = TOP + CHART_HEIGHT + 40.0 + COST_HEIGHT + 30.0;
    let width = layout.width;
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="timeline" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="tokens per request">"#
    );
    let _ = write!(
        svg,
        r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="#ffffff"/>"##
    );
    token_axis(&mut svg, &layout, &report.compaction.thresholds);
    let cost_points = request_groups(&mut svg, &layout);
    cost_chart(&mut svg, &layout, &cost_points);
    svg.push_str("</svg>");
    page(report, title, &layout, &svg)
}

/// Where things go on the chart: the requests, the series drawn for them, and the scale.
struct Layout<'a> {
    requests: &'a [RequestRow],
    /// The series some request has, of [`SERIES`].
    series: Vec<(&'static str, &'static str, f64)>,
    /// Pixels per request, and per bar of a request.
    slot: f64,
    bar: f64,
    plot_width: f64,
    width: f64,
    /// The most tokens a bar shows (the top of the token axis).
    max_tokens: f64,
}

impl<'a> Layout<'a> {
    fn of(report: &'a Report) -> Layout<'a> {
        let requests: &[RequestRow] = &report.requests;
        let series: Vec<(&str, &str, f64)> = SERIES
            .iter()
            .copied()
            .filter(|(key, ..)| requests.iter().any(|r| series_usage(r, key).is_some()))
            .collect();
        let n = requests.len().max(1) as f64;
        let slot = (TARGET_WIDTH / n).max(MIN_SLOT);
        let bar = ((slot * 0.8) / series.len().max(1) as f64).max(1.0);
        let plot_width = slot * n;
        let width = LEFT + plot_width + 20.0;
        let max_tokens = requests
            .iter()
            .flat_map(|r| {
                series
                    .iter()
                    .map(move |(key, ..)| parts(series_usage(r, key)).iter().sum::<f64>())
            })
            .fold(1.0f64, f64::max);
        Layout {
            requests,
            series,
            slot,
            bar,
            plot_width,
            width,
            max_tokens,
        }
    }

    /// The y of `t` tokens on the token chart.
    fn y(&self, t: f64) -> f64 {
        TOP + CHART_HEIGHT - (t / self.max_tokens) * CHART_HEIGHT
    }
}

/// The token axis's ticks, and the compaction thresholds within its scale.
fn token_axis(svg: &mut String, layout: &Layout<'_>, thresholds: &ThresholdFigures) {
    let (plot_width, max_tokens) = (layout.plot_width, layout.max_tokens);
    let step = tick_step(max_tokens);
    let mut tick = 0.0;
    while tick <= max_tokens {
        let ty = layout.y(tick);
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{ty:.1}" y2="{ty:.1}" stroke="#e5e7eb"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#374151">{}</text>"##,
            LEFT + plot_width,
            LEFT - 6.0,
            ty + 3.0,
            tick as u64
        );
        tick += step;
    }
    for (threshold, label, colour) in [
        (thresholds.warning, "warning", "#a855f7"),
        (thresholds.autocompact, "autocompact", "#7c3aed"),
        (thresholds.blocking, "blocking", "#111827"),
    ] {
        if let Some(at) = Some(threshold as f64).filter(|at| *at <= max_tokens) {
            let ty = layout.y(at);
            let _ = write!(
                svg,
                r#"<line class="threshold" x1="{LEFT}" x2="{:.1}" y1="{ty:.1}" y2="{ty:.1}" stroke="{colour}" stroke-dasharray="6 3"/><text x="{:.1}" y="{:.1}" font-size="10" fill="{colour}">{label} {}</text>"#,
                LEFT + plot_width,
                LEFT + 4.0,
                ty - 3.0,
                at as u64
            );
        }
    }
}

/// One group per request (its label, its bars, its cache break) and the idle gaps between
/// them; the cost accumulated up to each request.
fn request_groups(svg: &mut String, layout: &Layout<'_>) -> Vec<CostPoint> {
    let (slot, bar) = (layout.slot, layout.bar);
    // A label (index and UTC clock time) every so many requests, about 70 pixels apart.
    let label_every = ((70.0 / slot).ceil() as usize).max(1);
    let mut previous_at: Option<u64> = None;
    let (mut cost_recorded, mut cost_predicted) = (0.0f64, 0.0f64);
    let mut cost_points: Vec<CostPoint> = Vec::new();
    for (i, request) in layout.requests.iter().enumerate() {
        let x0 = LEFT + i as f64 * slot + slot * 0.1;
        let id = escape(request.request_id.as_deref().unwrap_or("-"));
        let at = request.timestamp_ms;
        if let (Some(at), Some(before)) = (at, previous_at) {
            idle_gap(svg, x0 - slot * 0.1, at.saturating_sub(before));
        }
        if at.is_some() {
            previous_at = at;
        }
        let _ = write!(svg, r#"<g class="request" data-index="{i}">"#);
        if i % label_every == 0 {
            let clock = at.map_or_else(String::new, |ms| {
                let seconds = (ms / 1000) % 86_400;
                format!(" {:02}:{:02}", seconds / 3600, (seconds / 60) % 60)
            });
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#4b5563">#{i}{clock}</text>"##,
                x0,
                TOP + CHART_HEIGHT + 12.0
            );
        }
        for (s, (key, label, opacity)) in layout.series.iter().enumerate() {
            let Some(usage) = series_usage(request, key) else {
                continue;
            };
            let bx = x0 + s as f64 * bar;
            let [read, write, uncached] = parts(Some(usage));
            let mut base = 0.0;
            for (amount, colour) in [(read, READ), (write, WRITE), (uncached, UNCACHED)] {
                if amount > 0.0 {
                    let top = layout.y(base + amount);
                    let h = (layout.y(base) - top).max(0.5);
                    let _ = write!(
                        svg,
                        r#"<rect x="{bx:.2}" y="{top:.2}" width="{bar:.2}" height="{h:.2}" fill="{colour}" fill-opacity="{opacity}"/>"#
                    );
                }
                base += amount;
            }
            let _ = write!(
                svg,
                r#"<rect x="{bx:.2}" y="{TOP}" width="{bar:.2}" height="{CHART_HEIGHT}" fill="transparent"><title>#{i} {id} {label}: read {} / write {} / uncached {} tokens</title></rect>"#,
                read as u64, write as u64, uncached as u64
            );
        }
        if let Some(cause) = request.cache_break.as_ref().map(|b| b.description.as_str()) {
            let cx = x0 + bar;
            let _ = write!(
                svg,
                r##"<g class="break"><path d="M {:.1} {:.1} L {:.1} {:.1} L {:.1} {:.1} Z" fill="#dc2626"/><title>#{i} cache break: {}</title></g>"##,
                cx - 4.0,
                TOP - 12.0,
                cx + 4.0,
                TOP - 12.0,
                cx,
                TOP - 4.0,
                escape(cause)
            );
        }
        svg.push_str("</g>");
        cost_recorded += finite(request.cost.recorded).unwrap_or(0.0);
        cost_predicted += finite(Some(request.cost.predicted)).unwrap_or(0.0);
        let planned = finite(request.cost.planned);
        let planned_sum =
            planned.map(|p| p + cost_points.last().and_then(|(.., sum)| *sum).unwrap_or(0.0));
        cost_points.push((cost_recorded, cost_predicted, planned_sum));
    }
    cost_points
}

/// The mark of an idle gap of `gap` ms at `gx`, when it is longer than the 5-minute cache.
fn idle_gap(svg: &mut String, gx: f64, gap: u64) {
    if gap <= TTL_5M_MS {
        return;
    }
    let _ = write!(
        svg,
        r##"<g class="gap"><line x1="{gx:.1}" x2="{gx:.1}" y1="{TOP}" y2="{:.1}" stroke="#6b7280" stroke-dasharray="2 2"/><title>idle {}: the 5-minute cache expired{}</title></g>"##,
        TOP + CHART_HEIGHT,
        duration(gap),
        if gap > 12 * TTL_5M_MS {
            ", and the 1-hour cache too"
        } else {
            ""
        }
    );
}

/// The cost chart under the token chart: recorded, predicted and re-planned cost
/// accumulated, one line each.
fn cost_chart(svg: &mut String, layout: &Layout<'_>, cost_points: &[CostPoint]) {
    let (slot, plot_width) = (layout.slot, layout.plot_width);
    let cost_top = TOP + CHART_HEIGHT + 40.0;
    let max_cost = cost_points
        .iter()
        .map(|(r, p, q)| r.max(*p).max(q.unwrap_or(0.0)))
        .fold(f64::MIN_POSITIVE, f64::max);
    let cy = |c: f64| cost_top + COST_HEIGHT - (c / max_cost) * COST_HEIGHT;
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#9ca3af"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#374151">{}</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#374151">$0</text><text x="{LEFT}" y="{:.1}" font-size="11" fill="#111827">cost accumulated</text>"##,
        LEFT + plot_width,
        cost_top + COST_HEIGHT,
        cost_top + COST_HEIGHT,
        LEFT - 6.0,
        cost_top + 4.0,
        escape(&format!("${max_cost:.2}")),
        LEFT - 6.0,
        cost_top + COST_HEIGHT,
        cost_top - 6.0
    );
    let line_of = |pick: &dyn Fn(&CostPoint) -> Option<f64>| -> String {
        cost_points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                pick(p).map(|c| format!("{:.1},{:.1}", LEFT + (i as f64 + 0.5) * slot, cy(c)))
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let has_recorded = layout
        .requests
        .iter()
        .any(|r| finite(r.cost.recorded).is_some());
    for (points, colour, dash, label) in [
        (
            has_recorded.then(|| line_of(&|p| Some(p.0))),
            "#111827",
            "",
            "recorded",
        ),
        (Some(line_of(&|p| Some(p.1))), "#2563eb", "5 3", "predicted"),
        (
            layout
                .series
                .iter()
                .any(|(k, ..)| *k == "planned")
                .then(|| line_of(&|p| p.2)),
            "#059669",
            "2 2",
            "re-planned",
        ),
    ] {
        if let Some(points) = points.filter(|p| !p.is_empty()) {
            let _ = write!(
                svg,
                r#"<polyline class="cost" points="{points}" fill="none" stroke="{colour}" stroke-width="1.5" stroke-dasharray="{dash}"><title>{label} cost accumulated</title></polyline>"#
            );
        }
    }
}

/// The page around the chart: the facts, the legend, the breaks and the assumptions.
fn page(report: &Report, title: &str, layout: &Layout<'_>, svg: &str) -> String {
    let requests = layout.requests;
    let series = &layout.series;
    let totals = &report.totals;
    let planned_share = finite(totals.planned_share.flatten());
    let mut html = String::new();
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>threadline inspect: {title}</title>
<style>
body {{ font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #111827; background: #fff; }}
h1 {{ font-size: 16px; margin: 0 0 8px; }}
h2 {{ font-size: 14px; margin: 12px 0 4px; }}
.facts {{ display: flex; flex-wrap: wrap; gap: 4px 24px; margin-bottom: 8px; }}
.chart {{ overflow-x: auto; border: 1px solid #e5e7eb; }}
.legend span {{ display: inline-block; margin-right: 16px; }}
.legend i {{ display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: middle; }}
.assumptions {{ color: #4b5563; max-width: 70em; }}
</style></head><body>
<h1>threadline inspect: {title}</h1>
<div class="facts"><span>model <b>{model}</b></span><span>{n} requests</span><span>cache-read share recorded <b>{rs}</b>, predicted <b>{ps}</b>{plan_share}</span><span>cost recorded <b>{rc}</b>, predicted <b>{pc}</b>{plan_cost}</span></div>
<div class="legend"><span><i style="background:{READ}"></i>cache read</span><span><i style="background:{WRITE}"></i>cache write</span><span><i style="background:{UNCACHED}"></i>uncached input</span><span>bars per request: {bars}</span><span style="color:#dc2626">▼ cache break</span><span>┆ idle gap longer than the 5-minute cache</span></div>
<div class="chart">{svg}</div>
{breaks}<p class="assumptions">Assumptions: the tools and system prompt the transcript does not contain are inferred from the first recorded usage ({unseen} tokens, {warm} of them already cached by an earlier session); the prediction is threadline's cache simulator at each request's recorded time, with the model's prices from threadline's model table. Token counts of the visible messages are estimates scaled by {scale:.3} to the first request.</p>
</body></html>
"#,
        title = escape(title),
        model = escape(&report.model),
        n = requests.len(),
        rs = share(totals.recorded_share),
        ps = share(Some(totals.predicted_share)),
        plan_share = if planned_share.is_some() {
            format!(", re-planned <b>{}</b>", share(planned_share))
        } else {
            String::new()
        },
        rc = dollars(totals.cost.recorded),
        pc = dollars(Some(totals.cost.predicted)),
        plan_cost = if finite(totals.cost.planned).is_some() {
            format!(", re-planned <b>{}</b>", dollars(totals.cost.planned))
        } else {
            String::new()
        },
        bars = series
            .iter()
            .map(|(_, label, _)| *label)
            .collect::<Vec<_>>()
            .join(", "),
        breaks = breaks_list(requests),
        unseen = report.unseen_prefix_tokens,
        warm = report.warm_prefix_tokens,
        scale = finite(Some(report.estimate_scale)).unwrap_or(1.0),
    );
    html
}

/// The cache breaks as a list under the chart, so each cause reads without a tooltip.
fn breaks_list(requests: &[RequestRow]) -> String {
    let items: Vec<String> = requests
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let cause = r.cache_break.as_ref()?.description.as_str();
            Some(format!(
                "<li>#{i} {}: {}</li>",
                escape(r.request_id.as_deref().unwrap_or("-")),
                escape(cause)
            ))
        })
        .collect();
    if items.is_empty() {
        "<p>No cache break predicted.</p>\n".to_owned()
    } else {
        format!(
            "<h2>Cache breaks</h2><ul class=\"breaks\">{}</ul>\n",
            items.concat()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report of a session of `turns` prompts and answers, the answer `i` at second
    /// `at(i)` with request id `req_<i>` (escaped on the page) and recorded usage.
    fn analysed(turns: usize, at: impl Fn(usize) -> u64) -> Report {
        let mut lines = String::new();
        for i in 0..turns {
            let time = |s: u64| {
                humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600 + s),
                )
            };
            let prompt = serde_json::json!({"type": "user", "id": format!("u{i}"),
                "timestamp": time(at(i).saturating_sub(1)).to_string(),
                "content": [{"type": "text", "text": format!("Question {i}")}]});
            let answer = serde_json::json!({"type": "assistant", "id": format!("a{i}"),
                "timestamp": time(at(i)).to_string(), "api_message_id": format!("msg_{i}"),
                "request_id": format!("req_<{i}>"), "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": format!("Answer {i}")}],
                "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 1000 * i, "output_tokens": 5}});
            lines.push_str(&format!("{prompt}\n{answer}\n"));
        }
        crate::inspect::report(&crate::session::read_session(&lines), None)
    }

    #[test]
    fn one_group_per_request_with_breaks_gaps_and_escaped_text() {
        // The third request comes 20 minutes after the second: the cache expired.
        let mut report = analysed(3, |i| if i < 2 { 2 * i as u64 + 1 } else { 1_205 });
        assert_eq!(report.requests.len(), 3);
        report.model = "claude-<x>".to_owned();
        report.compaction.thresholds.autocompact = 2000;
        // One break, on the third request, whose cause quotes markup.
        let mut found = report
            .requests
            .iter()
            .find_map(|r| r.cache_break.clone())
            .expect("a small prefix breaks the cache");
        found.description = "the tools changed <mcp>".to_owned();
        for row in &mut report.requests {
            row.cache_break = None;
        }
        report.requests[2].cache_break = Some(found);
        let html = render_html(&report, "a&b.jsonl");
        assert_eq!(html.matches(r#"<g class="request""#).count(), 3);
        assert_eq!(html.matches(r#"<g class="break">"#).count(), 1);
        assert!(html.contains("the tools changed &lt;mcp&gt;"));
        assert!(html.contains("<li>#2 req_&lt;2&gt;: the tools changed &lt;mcp&gt;</li>"));
        assert_eq!(html.matches(r#"<g class="gap">"#).count(), 1);
        assert!(html.contains("idle 20 min"), "{html}");
        // Only the threshold within the scale is drawn.
        assert_eq!(html.matches(r#"class="threshold""#).count(), 1);
        assert!(html.contains("a&amp;b.jsonl") && html.contains("claude-&lt;x&gt;"));
        // Self-contained: no script, and the only address is the SVG namespace.
        assert!(!html.contains("<script"));
        assert_eq!(
            html.matches("http").count(),
            html.matches("http://www.w3.org/2000/svg").count()
        );
        // Recorded and predicted cost; no re-planned line without a plan.
        assert_eq!(html.matches("<polyline").count(), 2);
    }

    #[test]
    fn a_long_session_scrolls_instead_of_shrinking_bars_to_nothing() {
        let mut report = analysed(1, |_| 1);
        let row = report.requests[0].clone();
        report.requests = (0..2000)
            .map(|i| {
                let mut row = row.clone();
                row.index = i;
                row.timestamp_ms = Some(i as u64 * 1000);
                row
            })
            .collect();
        let html = render_html(&report, "long");
        assert_eq!(html.matches(r#"<g class="request""#).count(), 2000);
        let width: f64 = html
            .split(r#"id="timeline" width=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|w| w.parse().ok())
            .expect("svg width");
        assert!(width >= 2000.0 * MIN_SLOT, "{width}");
    }

    #[test]
    fn an_empty_or_extreme_report_still_renders() {
        let mut empty = analysed(1, |_| 1);
        empty.requests.clear();
        let mut extreme = analysed(1, |_| 1);
        let row = &mut extreme.requests[0];
        let mut huge = row.predicted;
        huge.input_tokens = u64::MAX;
        huge.cache_read_input_tokens = u64::MAX;
        row.recorded = Some(huge);
        row.cost.recorded = Some(f64::NAN);
        row.predicted_share = f64::INFINITY;
        extreme.totals.recorded_share = Some(f64::NAN);
        for report in [empty, extreme] {
            let html = render_html(&report, "x");
            assert!(html.ends_with("</html>\n"));
            assert!(!html.contains("NaN") && !html.contains(">inf"), "{html}");
        }
    }
}
