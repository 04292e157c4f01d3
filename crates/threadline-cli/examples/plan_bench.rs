//! The deterministic ratios of `threadline inspect --plan` over every real transcript in
//! `fixtures/` (`cargo xtask bench` runs this and reports them beside the timed ratios):
//!
//! * `cache_plan_vs_recorded_share`: the cache-read share of the requests re-planned with the
//!   default strategy ÷ the share they recorded, token-weighted over every request that
//!   recorded usage (higher is better; ≥ 1 means threadline's planning reads at least as much
//!   from the cache as the agent that made the transcript did);
//! * `cache_plan_vs_recorded_cost`: their re-planned input cost ÷ the recorded input cost
//!   (lower is better).
//!
//! Prints one JSON object (`{"format": …, "ratios": [{name, value, what, better}], "per_transcript": […]}`)
//! on stdout; run from the workspace root or anywhere below it.
// A harness prints its findings: the CLI's escaping rule (`clippy.toml`) is for the binary.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use threadline_cli::inspect::report;
use threadline_cli::inspect_plan::{PlanStrategy, add_plan};
use threadline_cli::session::{Sidechains, load_session_history};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() {
    let root = root();
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("fixtures/canonical/index.json")).expect("the index"),
    )
    .expect("the index is JSON");
    let mut per_transcript = Vec::new();
    let (mut recorded_input, mut recorded_read, mut planned_input, mut planned_read) =
        (0u64, 0u64, 0u64, 0u64);
    let (mut recorded_cost, mut planned_cost) = (0.0f64, 0.0f64);
    for file in index["files"].as_array().into_iter().flatten() {
        if file["kind"] != "claude_code_transcript" {
            continue;
        }
        let path = file["path"].as_str().expect("a path");
        // Read as `threadline inspect --plan` reads it.
        let session = load_session_history(
            &root.join(path).to_string_lossy(),
            Sidechains::WhenNoMainChain,
            threadline_cli::input::InputLimit::default(),
        )
        .unwrap_or_else(|line| panic!("{path}: {line}"));
        let mut analysed = report(&session, None);
        let totals = add_plan(&mut analysed, &session, None, PlanStrategy::Default);
        let value = serde_json::to_value(&analysed).expect("a report serializes");
        if totals.recorded_input == 0 {
            continue;
        }
        recorded_input += totals.recorded_input;
        recorded_read += totals.recorded_read;
        planned_input += totals.planned_input;
        planned_read += totals.planned_read;
        recorded_cost += totals.recorded_cost;
        planned_cost += totals.planned_cost;
        per_transcript.push(json!({
            "transcript": path,
            "requests": value["plan"]["requests_compared"],
            "share_ratio": value["plan"]["share_ratio"],
            "cost_ratio": value["plan"]["cost_ratio"],
            "difference_dollars": value["plan"]["difference_dollars"],
            "share_mae": value["share_mae"],
        }));
    }
    let share = |read: u64, all: u64| read as f64 / all.max(1) as f64;
    let out = json!({
        "format": "threadline-cache-bench/1",
        "ratios": [
            {
                "name": "cache_plan_vs_recorded_share",
                "value": share(planned_read, planned_input) / share(recorded_read, recorded_input).max(f64::MIN_POSITIVE),
                "what": "cache-read share of every fixture transcript's requests re-planned with the default strategy / the share they recorded (token-weighted; goal >= 1.0)",
                "better": "higher",
            },
            {
                "name": "cache_plan_vs_recorded_cost",
                "value": planned_cost / recorded_cost.max(f64::MIN_POSITIVE),
                "what": "re-planned input cost / recorded input cost over the same requests (goal <= 1.0)",
                "better": "lower",
            },
        ],
        "per_transcript": per_transcript,
    });
    println!("{out}");
}
