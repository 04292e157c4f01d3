//! `cargo xtask bench [--quick] [--ratios-only]`: runs the criterion benches and
//! turns their estimates into the performance ratios listed in [`RATIOS`].
//!
//! Convention for bench authors: put the two competitors in one criterion group
//! and name the functions `ours` and `baseline` (or list explicit function ids in
//! the table). Criterion writes `target/criterion/<group>/<function>/new/estimates.json`;
//! the mean point estimate (nanoseconds per iteration) is used. Bench targets
//! must be criterion harnesses (`[[bench]] harness = false`): only `[[bench]]`
//! targets are run (`cargo bench --workspace --bench '*'`), and each receives
//! criterion's flags (`--noplot`, plus `--warm-up-time 1 --measurement-time 2`
//! with `--quick`).
//!
//! Ratio values:
//! * [`Metric::Speedup`]: `baseline_time / ours_time` = our throughput ÷ the
//!   baseline's throughput. Higher is better; 2.0 means twice as fast.
//! * [`Metric::TimeRatio`]: `ours_time / baseline_time`. Lower is better.
//!
//! Output: one `ratio <name> <value>` line per entry (3 decimals, or `missing`)
//! plus an explanation line, and `target/bench-ratios.json`. Any missing
//! estimate makes the command fail.
//!
//! After the criterion ratios come the deterministic ones (`cache_bench.rs`): the
//! prompt-cache simulator's (strategy hit ratio ÷ best achievable) and the context
//! estimate's against recorded usage (`estimate_mae_vs_recorded`, the mean absolute
//! relative error; lower is better), printed the same way and written under `simulated`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;
use serde_json::Value;

use crate::BenchArgs;
use crate::fixtures::to_pretty_json;
use crate::util::{Context, Failure, XResult, repo_root, write_file};

/// Which direction is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Better {
    Higher,
    #[allow(
        dead_code,
        reason = "for time-ratio entries; the current table has none"
    )]
    Lower,
}

/// How the two mean times are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Metric {
    /// `baseline_time / ours_time`: throughput ratio, higher is better.
    Speedup,
    /// `ours_time / baseline_time`: time ratio, lower is better.
    #[allow(
        dead_code,
        reason = "for time-ratio entries; the current table has none"
    )]
    TimeRatio,
}

/// One ratio to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RatioSpec {
    /// Stable name printed as `ratio <name> <value>`.
    pub(crate) name: &'static str,
    /// Criterion group.
    pub(crate) group: &'static str,
    /// Function id of our implementation (may contain `/parameter`).
    pub(crate) ours: &'static str,
    /// Function id of the baseline.
    pub(crate) baseline: &'static str,
    /// How the two times are combined.
    pub(crate) metric: Metric,
    /// Which direction is an improvement (must agree with `metric`).
    pub(crate) better: Better,
    /// What is being compared.
    pub(crate) what: &'static str,
}

/// The ratios reported by `cargo xtask bench`.
pub(crate) const RATIOS: &[RatioSpec] = &[
    RatioSpec {
        name: "sse_small_events_speedup",
        group: "sse_decode_accumulate_small",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::Speedup,
        better: Better::Higher,
        what: "throughput of our SSE decoder + stream accumulator vs eventsource-stream + serde_json::Value on small-event streams (baseline_time / ours_time)",
    },
    RatioSpec {
        name: "sse_largest_stream_speedup",
        group: "sse_decode_accumulate_largest",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::Speedup,
        better: Better::Higher,
        what: "throughput of our SSE decoder + stream accumulator vs eventsource-stream + serde_json::Value on the largest recorded stream (baseline_time / ours_time)",
    },
    RatioSpec {
        name: "validate_100k_vs_serialize",
        group: "validate_100k_messages",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "time to validate a 100k-message request vs serde_json serialization of the same request (ours_time / baseline_time; target <= 0.5)",
    },
    RatioSpec {
        name: "normalize_100k_vs_clone",
        group: "normalize_batch_100k",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "time to normalize a realistic 100k-message internal array vs Vec::clone of the same array (ours_time / baseline_time; target <= 3)",
    },
    RatioSpec {
        name: "incremental_turn_100k_vs_1k",
        group: "normalize_incremental_turn",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "per-turn cost of incremental normalization (append a turn, Normalizer::update) at a 100k-message history vs at a 1k-message one (ours_time / baseline_time; target <= 2)",
    },
    RatioSpec {
        name: "normalize_batch_100k_vs_10k",
        group: "normalize_batch_scaling",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "batch normalization time at 100k messages vs at 10k (ours_time / baseline_time; target <= 12, i.e. linear)",
    },
    RatioSpec {
        name: "clone_floor_100k_vs_10k",
        group: "clone_floor_scaling",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "context for normalize_batch_100k_vs_10k: Vec::clone of the internal array at 100k messages vs at 10k, the floor of any normalizer returning an owned request (ours_time / baseline_time; no target)",
    },
    RatioSpec {
        name: "read_floor_100k_vs_10k",
        group: "read_floor_scaling",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "context for normalize_batch_100k_vs_10k: reading the type of every content block of the internal array at 100k messages vs at 10k, what any batch normalizer does at least (ours_time / baseline_time; no target)",
    },
    RatioSpec {
        name: "inspect_100k_vs_10k",
        group: "inspect_scaling",
        ours: "records_100k",
        baseline: "records_10k",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "threadline inspect's analysis (read the transcript, plan and simulate every implied request, render the report) at 100k tiny chat records vs at 10k (ours_time / baseline_time; target <= 12, i.e. linear)",
    },
    RatioSpec {
        name: "client_small_stream_vs_hyper",
        group: "client_loopback_small_stream",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "time per small streamed answer through the whole threadline-client stack (limit, retry, timeouts, typed events, accumulation) vs a bare hyper request collecting the same response from the same mock over loopback (ours_time / baseline_time: the client's added latency; criterion prints requests/s)",
    },
    RatioSpec {
        name: "bedrock_event_stream_vs_sse",
        group: "bedrock_event_stream_decode",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "time to decode a ~1 MiB stream's events to typed events from Bedrock's AWS event stream (frames and CRCs checked, base64 chunks decoded, then the SSE reader) vs from the API's SSE of the same events (ours_time / baseline_time)",
    },
    RatioSpec {
        name: "client_sse_per_mb_vs_hyper",
        group: "client_sse_per_mb",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "threadline-client time per MB of SSE (incremental decode, typed events, protocol checks) vs hyper collecting the same ~1 MiB body unparsed from the same mock (ours_time / baseline_time)",
    },
    RatioSpec {
        name: "compact_estimate_vs_serialize",
        group: "compact_estimate_throughput",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::Speedup,
        better: Better::Higher,
        what: "token estimation of a 20k-message request vs serde_json serialization of the same request (baseline_time / ours_time; criterion prints both in MB/s of serialized request)",
    },
    RatioSpec {
        name: "compact_plan_100k_vs_normalize",
        group: "compact_autocompact_plan_100k",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "autocompact planning (anchored estimate, verbatim-tail plan, re-attachment scan) over 100k visible messages vs normalize of the same session (ours_time / baseline_time)",
    },
    RatioSpec {
        name: "query_turn_traced_100k_vs_1k",
        group: "query_turn_traced",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "the turn of query_turn_100k_vs_1k with a tracing subscriber listening at INFO (spans opened, the compaction events' estimates made, nothing written) at 100k messages vs at 1k (ours_time / baseline_time; goal <= 2: the estimate is kept as the history grows, not a walk of it per context step)",
    },
    RatioSpec {
        name: "query_turn_100k_vs_1k",
        group: "query_turn_overhead",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "loop overhead of one turn (prompt, tool use, instant tool, answer: two model calls against a zero-latency service) at a 100k-message history vs at 1k (ours_time / baseline_time; goal <= 2, issue 31: a request shares the normalized messages as a persistent vector, cloned and dropped at the same cost at any length, and a run's start scans only what was appended for a compaction boundary)",
    },
    RatioSpec {
        name: "loop_turn_400_vs_50",
        group: "loop_turn_8k_results",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "the loop's per-turn cost as the facade runs it (a new loop per prompt over one shared cache planner: process the answer, run a tool returning an 8 KB file, build, plan and serialize the next request) at 400 turns of history vs at 50 (ours_time / baseline_time; goal <= 1.5, issue 31)",
    },
    RatioSpec {
        name: "request_body_vs_memcpy",
        group: "request_body_4mb",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "the client's body of a 4 MB request (500 turns of 8 KB tool results) assembled from the previous request's fragments (find the shared messages chunk by chunk, splice the kept bytes, serialize what is new) vs copying 4 MB (ours_time / baseline_time; goal <= 3, issue 31)",
    },
    RatioSpec {
        name: "query_turn_100k_vs_request_clones",
        group: "query_turn_vs_request_clones",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "context for query_turn_100k_vs_1k: the same turn at 100k messages vs deep-cloning and dropping the normalized messages twice, what its two requests cost when each owned a copy of the history (before `Messages` shared them) (ours_time / baseline_time)",
    },
    RatioSpec {
        name: "durable_step_vs_in_process",
        group: "durable_step",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "one turn of a new session through a real Restate server (ingress call to Session/turn: the journaled steps clock, model, tool, model against the zero-latency in-process mock) vs the same turn in-process (Query::run over the same client, mock and tool) (ours_time / baseline_time; the overhead per journaled step is (ours - baseline) / 4, printed by the bench)",
    },
    RatioSpec {
        name: "worker_turn_400_vs_50",
        group: "worker_turn_8k_results",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "the durable worker's own cost of a turn (run_turn over the in-memory journal: read the state, the loop with journaled steps, a tool returning an 8 KB file, write the changed suffix) on a worker keeping its sessions, at 400 turns of history vs at 50 (ours_time / baseline_time; no target: reading and comparing the stored history still costs what the history costs)",
    },
    RatioSpec {
        name: "worker_turn_kept_vs_loaded",
        group: "worker_turn_kept_vs_loaded",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::TimeRatio,
        better: Better::Lower,
        what: "the same durable turn at 400 turns of history on a worker that kept the session from its previous turn vs on one that deserializes and normalizes the stored history every turn (ours_time / baseline_time; issue 31)",
    },
    RatioSpec {
        name: "durable_sessions_two_vs_one_worker",
        group: "durable_sessions",
        ours: "two_workers",
        baseline: "one_worker",
        metric: Metric::Speedup,
        better: Better::Higher,
        what: "throughput of 16 concurrent new sessions through Restate with two workers behind a round-robin TCP proxy vs one worker behind the same proxy (server http2-streams-per-connection-limit 1, so each session has its own connection; one_worker_time / two_workers_time; criterion prints sessions/s, the bench prints how many sessions each worker ran)",
    },
];

/// One computed ratio (also the JSON written to `target/bench-ratios.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RatioResult {
    pub(crate) name: &'static str,
    pub(crate) group: &'static str,
    pub(crate) ours: &'static str,
    pub(crate) baseline: &'static str,
    pub(crate) metric: Metric,
    pub(crate) better: Better,
    pub(crate) what: &'static str,
    /// `None` when an estimate is missing.
    pub(crate) value: Option<f64>,
    pub(crate) ours_mean_ns: Option<f64>,
    pub(crate) baseline_mean_ns: Option<f64>,
    /// Why the value is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) missing: Option<String>,
}

#[derive(Debug, Serialize)]
struct RatiosFile<'a> {
    format: &'static str,
    docs: &'static str,
    ratios: &'a [RatioResult],
    /// Deterministic ratios computed in the prompt-cache simulator (see `cache_bench.rs`).
    simulated: &'a [crate::cache_bench::SimulatedRatio],
}

/// Criterion's directory-name sanitizing (`criterion::report::make_filename_safe`).
fn filename_safe(part: &str) -> String {
    part.chars()
        .map(|c| match c {
            '?' | '"' | '/' | '\\' | '*' | '<' | '>' | ':' | '|' | '^' => '_',
            other => other,
        })
        .collect()
}

/// `<criterion>/<group>/<function...>/new/estimates.json`; `/` in the function
/// id separates function name and parameter.
pub(crate) fn estimates_path(criterion_dir: &Path, group: &str, function: &str) -> PathBuf {
    let mut path = criterion_dir.join(filename_safe(group));
    for part in function.split('/') {
        path.push(filename_safe(part));
    }
    path.join("new").join("estimates.json")
}

/// Mean point estimate (ns) from the text of an `estimates.json`.
pub(crate) fn parse_mean_estimate(text: &str) -> XResult<f64> {
    let value: Value =
        serde_json::from_str(text).context(|| "estimates.json is not JSON".to_owned())?;
    let mean = value
        .pointer("/mean/point_estimate")
        .and_then(Value::as_f64)
        .ok_or_else(|| Failure::new("estimates.json has no numeric mean.point_estimate"))?;
    if !(mean.is_finite() && mean > 0.0) {
        return Err(Failure::new(format!(
            "estimates.json mean.point_estimate {mean} is not a positive time"
        )));
    }
    Ok(mean)
}

fn read_mean(criterion_dir: &Path, group: &str, function: &str) -> Result<f64, String> {
    let path = estimates_path(criterion_dir, group, function);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_mean_estimate(&text).map_err(|e| format!("{}: {}", path.display(), e.message))
}

/// The ratio of two mean times according to `metric`.
pub(crate) fn ratio_value(metric: Metric, ours_ns: f64, baseline_ns: f64) -> f64 {
    match metric {
        Metric::Speedup => baseline_ns / ours_ns,
        Metric::TimeRatio => ours_ns / baseline_ns,
    }
}

/// Computes every ratio of `specs` from the estimates under `criterion_dir`.
pub(crate) fn compute(criterion_dir: &Path, specs: &[RatioSpec]) -> Vec<RatioResult> {
    specs
        .iter()
        .map(|spec| {
            let ours = read_mean(criterion_dir, spec.group, spec.ours);
            let baseline = read_mean(criterion_dir, spec.group, spec.baseline);
            let missing: Vec<String> = [&ours, &baseline]
                .iter()
                .filter_map(|r| r.as_ref().err().cloned())
                .collect();
            let value = match (&ours, &baseline) {
                (Ok(o), Ok(b)) => Some(ratio_value(spec.metric, *o, *b)),
                _ => None,
            };
            RatioResult {
                name: spec.name,
                group: spec.group,
                ours: spec.ours,
                baseline: spec.baseline,
                metric: spec.metric,
                better: spec.better,
                what: spec.what,
                value,
                ours_mean_ns: ours.ok(),
                baseline_mean_ns: baseline.ok(),
                missing: (!missing.is_empty()).then(|| missing.join("; ")),
            }
        })
        .collect()
}

fn human_time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.3} µs", ns / 1e3)
    } else {
        format!("{ns:.3} ns")
    }
}

/// The two printed lines of one ratio.
pub(crate) fn render(result: &RatioResult) -> String {
    let better = match result.better {
        Better::Higher => "higher is better",
        Better::Lower => "lower is better",
    };
    match (result.value, result.ours_mean_ns, result.baseline_mean_ns) {
        (Some(value), Some(ours), Some(baseline)) => format!(
            "ratio {} {value:.3}\n  {} ({better}; group {}: {} {}, {} {})",
            result.name,
            result.what,
            result.group,
            result.ours,
            human_time(ours),
            result.baseline,
            human_time(baseline)
        ),
        _ => format!(
            "ratio {} missing\n  {} ({better}); {}",
            result.name,
            result.what,
            result.missing.as_deref().unwrap_or("no estimates")
        ),
    }
}

/// `cargo metadata --no-deps` for the workspace, if cargo can produce it.
fn metadata(root: &Path) -> Option<Value> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
}

/// The cargo target directory (`CARGO_TARGET_DIR`, else from `cargo metadata`).
fn target_dir(root: &Path, metadata: Option<&Value>) -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            root.join(dir)
        };
    }
    metadata
        .and_then(|v| v.get("target_directory")?.as_str().map(PathBuf::from))
        .unwrap_or_else(|| root.join("target"))
}

/// `package/target` names of every `[[bench]]` target in the workspace.
pub(crate) fn bench_targets(metadata: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let package_name = package["name"].as_str().unwrap_or("?");
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_bench = target["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "bench"));
            if is_bench {
                out.push(format!(
                    "{package_name}/{}",
                    target["name"].as_str().unwrap_or("?")
                ));
            }
        }
    }
    out
}

/// Where criterion writes (`CRITERION_HOME` or `<target>/criterion`).
fn criterion_dir(target: &Path) -> PathBuf {
    std::env::var_os("CRITERION_HOME").map_or_else(|| target.join("criterion"), PathBuf::from)
}

/// Arguments passed to every bench binary after `--`.
pub(crate) fn criterion_args(quick: bool) -> Vec<&'static str> {
    let mut args = vec!["--noplot"];
    if quick {
        args.extend(["--warm-up-time", "1", "--measurement-time", "2"]);
    }
    args
}

/// The `cargo bench` command line: only `[[bench]]` targets (criterion
/// harnesses), so libtest harnesses never see criterion's flags.
pub(crate) fn cargo_bench_args(quick: bool) -> Vec<&'static str> {
    let mut args = vec!["bench", "--workspace", "--bench", "*", "--"];
    args.extend(criterion_args(quick));
    args
}

/// Entry point of `cargo xtask bench`.
pub(crate) fn run(args: &BenchArgs) -> XResult<()> {
    let root = repo_root();
    let metadata = metadata(&root);
    if !args.ratios_only {
        let targets = metadata.as_ref().map(bench_targets).unwrap_or_default();
        if targets.is_empty() {
            println!("bench: no [[bench]] targets in the workspace yet; nothing to run");
        } else {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let bench_args = cargo_bench_args(args.quick);
            println!(
                "bench: cargo {} ({} targets: {})",
                bench_args.join(" "),
                targets.len(),
                targets.join(", ")
            );
            let status = Command::new(cargo)
                .args(&bench_args)
                .current_dir(&root)
                .status()
                .context(|| "cannot run cargo bench".to_owned())?;
            if !status.success() {
                return Err(Failure::new(format!("cargo bench failed ({status})")));
            }
        }
    }
    let target = target_dir(&root, metadata.as_ref());
    let results = compute(&criterion_dir(&target), RATIOS);
    for result in &results {
        println!("{}", render(result));
    }
    let simulated = crate::cache_bench::run(&root, args.quick)?;
    for ratio in &simulated {
        println!("{}", crate::cache_bench::render(ratio));
    }
    let out = target.join("bench-ratios.json");
    let file = RatiosFile {
        format: "threadline-bench-ratios/1",
        docs: "Written by cargo xtask bench. value: Speedup = baseline_time / ours_time (higher is better); TimeRatio = ours_time / baseline_time (lower is better); null when estimates are missing. Times are criterion mean point estimates in ns. simulated: deterministic ratios, computed not timed: the prompt-cache simulator's (strategy hit ratio / best achievable; higher is better) and estimate_mae_vs_recorded (the context estimate's mean absolute relative error against the usage the fixture Claude Code transcripts recorded; lower is better).",
        ratios: &results,
        simulated: &simulated,
    };
    write_file(&out, to_pretty_json(&file)?.as_bytes())?;
    println!("bench: wrote {}", out.display());
    let missing: Vec<&str> = results
        .iter()
        .filter(|r| r.value.is_none())
        .map(|r| r.name)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "missing criterion estimates for: {}",
            missing.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::TempDir;

    fn estimates(mean: f64) -> String {
        format!(
            r#"{{"mean":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":{lo},"upper_bound":{hi}}},"point_estimate":{mean},"standard_error":1.0}},
"median":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0}},"point_estimate":1.5,"standard_error":0.1}},
"median_abs_dev":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0}},"point_estimate":1.5,"standard_error":0.1}},
"slope":null,
"std_dev":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0}},"point_estimate":1.5,"standard_error":0.1}}}}"#,
            lo = mean * 0.9,
            hi = mean * 1.1
        )
    }

    fn write_estimate(dir: &Path, group: &str, function: &str, mean: f64) {
        write_file(
            &estimates_path(dir, group, function),
            estimates(mean).as_bytes(),
        )
        .expect("write estimates.json");
    }

    const SPEC: RatioSpec = RatioSpec {
        name: "demo_speedup",
        group: "demo",
        ours: "ours",
        baseline: "baseline",
        metric: Metric::Speedup,
        better: Better::Higher,
        what: "demo",
    };

    #[test]
    fn parses_mean_point_estimate() {
        assert!((parse_mean_estimate(&estimates(1234.5)).expect("parses") - 1234.5).abs() < 1e-9);
        assert!(parse_mean_estimate("{}").is_err());
        assert!(parse_mean_estimate("not json").is_err());
        assert!(parse_mean_estimate(&estimates(0.0)).is_err());
    }

    #[test]
    fn ratio_directions() {
        assert!((ratio_value(Metric::Speedup, 50.0, 100.0) - 2.0).abs() < 1e-12);
        assert!((ratio_value(Metric::TimeRatio, 50.0, 100.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn table_is_consistent() {
        let mut names: Vec<&str> = RATIOS.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RATIOS.len(), "ratio names are unique");
        for spec in RATIOS {
            let expected = match spec.metric {
                Metric::Speedup => Better::Higher,
                Metric::TimeRatio => Better::Lower,
            };
            assert_eq!(spec.better, expected, "{}: better vs metric", spec.name);
            assert!(
                spec.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            );
        }
    }

    #[test]
    fn computes_ratios_from_estimates() {
        let tmp = TempDir::new("bench-ratios").expect("temp dir");
        let dir = tmp.path();
        write_estimate(dir, "demo", "ours", 250.0);
        write_estimate(dir, "demo", "baseline", 1000.0);
        let time_spec = RatioSpec {
            name: "demo_time",
            metric: Metric::TimeRatio,
            better: Better::Lower,
            ..SPEC
        };
        let results = compute(dir, &[SPEC, time_spec]);
        assert_eq!(results[0].value, Some(4.0));
        assert_eq!(results[1].value, Some(0.25));
        assert_eq!(results[0].ours_mean_ns, Some(250.0));
        let text = render(&results[0]);
        assert!(text.starts_with("ratio demo_speedup 4.000\n  "), "{text}");
        assert!(text.contains("higher is better"), "{text}");
    }

    #[test]
    fn missing_estimates_are_reported() {
        let tmp = TempDir::new("bench-missing").expect("temp dir");
        let dir = tmp.path();
        write_estimate(dir, "demo", "ours", 250.0);
        let results = compute(dir, &[SPEC]);
        assert_eq!(results[0].value, None);
        let missing = results[0].missing.as_deref().expect("reason given");
        assert!(missing.contains("baseline"), "{missing}");
        assert!(render(&results[0]).starts_with("ratio demo_speedup missing"));
    }

    #[test]
    fn parameterised_and_unsafe_ids_map_like_criterion() {
        let dir = Path::new("/c");
        assert_eq!(
            estimates_path(dir, "g:1", "ours/1024"),
            Path::new("/c/g_1/ours/1024/new/estimates.json")
        );
    }

    #[test]
    fn finds_bench_targets_in_metadata() {
        let metadata = serde_json::json!({"packages": [
            {"name": "threadline-wire", "targets": [
                {"name": "threadline_wire", "kind": ["lib"]},
                {"name": "sse", "kind": ["bench"]}
            ]},
            {"name": "xtask", "targets": [{"name": "xtask", "kind": ["bin"]}]}
        ]});
        assert_eq!(bench_targets(&metadata), vec!["threadline-wire/sse"]);
        assert!(bench_targets(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn quick_mode_passes_short_times() {
        let args = cargo_bench_args(true);
        assert_eq!(&args[..5], &["bench", "--workspace", "--bench", "*", "--"]);
        assert!(args.contains(&"--warm-up-time") && args.contains(&"--measurement-time"));
        assert!(!cargo_bench_args(false).contains(&"--warm-up-time"));
    }
}
