//! The context estimate against real usage: prints one JSON object whose `ratios` hold
//! `estimate_mae_vs_recorded`, the mean absolute relative error of the estimate of every
//! request implied by every Claude Code transcript of `fixtures/canonical/index.json` (kind
//! `claude_code_transcript`) against its recorded `input + cache_creation + cache_read`
//! (`threadline_cli::accuracy`: the estimate anchors on the usage of earlier requests only,
//! never on the request's own; the first request of each transcript, where the unseen prefix
//! is inferred from, is left out), pooled over all requests; `transcripts` gives each
//! transcript's figure, and `unanchored_mae` the same error of the estimate without any
//! anchor (unseen prefix plus every visible message: the estimator's own accuracy, what it
//! gives right after a compaction), for comparison. Deterministic: no timing. `cargo xtask bench` runs it and folds the
//! `ratios` into its `ratio <name> <value>` lines.
//!
//! `cargo run --release -p threadline-cli --example estimate_bench`
// A harness prints its findings: the CLI's escaping rule (`clippy.toml`) is for the binary.
#![allow(clippy::disallowed_macros)]

use std::path::Path;

use serde_json::{Value, json};
use threadline_cli::accuracy::{EstimatedRequest, estimated_requests, mean, mean_relative_error};
use threadline_cli::input::InputLimit;
use threadline_cli::session::{Sidechains, load_session};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("fixtures/canonical/index.json")).expect("the index"),
    )
    .expect("the index is JSON");
    let mut all: Vec<EstimatedRequest> = Vec::new();
    let mut transcripts = Vec::new();
    for file in index["files"].as_array().into_iter().flatten() {
        if file["kind"] != "claude_code_transcript" {
            continue;
        }
        let path = file["path"].as_str().expect("a path");
        let full = root.join(path);
        // A transcript that does not load fails the bench: leaving it out would let the
        // figure improve by failing.
        let session = load_session(
            &full.to_string_lossy(),
            Sidechains::WhenNoMainChain,
            InputLimit::default(),
        )
        .unwrap_or_else(|line| panic!("{path}: {line}"));
        let requests = estimated_requests(&session.messages);
        let worst = requests
            .iter()
            .map(EstimatedRequest::relative_error)
            .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
        transcripts.push(json!({
            "path": path,
            "requests": requests.len(),
            "mae": mean_relative_error(&requests),
            "unanchored_mae": mean(&requests, EstimatedRequest::unanchored_error),
            "max": worst,
        }));
        all.extend(requests);
    }
    let mae = mean_relative_error(&all).unwrap_or(f64::NAN);
    let out = json!({
        "format": "threadline-estimate-bench/1",
        "ratios": [{
            "name": "estimate_mae_vs_recorded",
            "value": mae,
            "what": format!(
                "context estimate vs recorded input+cache tokens, mean absolute relative error over {} requests of the fixture Claude Code transcripts (target <= 0.10)",
                all.len()
            ),
            "better": "lower",
        }],
        "unanchored_mae": mean(&all, EstimatedRequest::unanchored_error),
        "transcripts": transcripts,
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
}
