//! The deterministic (non-timing) ratios of `cargo xtask bench`: the prompt-cache strategies'
//! hit ratios versus the best the simulator allows
//! (`crates/threadline-cache/examples/strategy_bench.rs`), threadline's planning against what
//! the fixture transcripts recorded (`crates/threadline-cli/examples/plan_bench.rs`), and the
//! context estimate's error against the usage they recorded (`estimate_mae_vs_recorded`,
//! `crates/threadline-cli/examples/estimate_bench.rs`), and the cost of each compaction mode
//! on one long session (`crates/threadline-cli/examples/compaction_bench.rs`). Each prints one
//! JSON object whose
//! `ratios` array holds `{name, value, what, better}` entries. They are printed as the
//! criterion ratios are (`ratio <name> <value>` and an explanation line) and written to
//! `target/bench-ratios.json` under `simulated`.

use std::path::Path;
use std::process::Command;

use serde::Serialize;
use serde_json::Value;

use crate::util::{Context, Failure, XResult};

/// One deterministic ratio.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SimulatedRatio {
    pub(crate) name: String,
    pub(crate) value: f64,
    pub(crate) what: String,
    /// `higher` or `lower`.
    pub(crate) better: String,
}

/// The ratios in the example's JSON output.
pub(crate) fn parse(example: &str, stdout: &str) -> XResult<Vec<SimulatedRatio>> {
    let value: Value = serde_json::from_str(stdout)
        .context(|| format!("{example} did not print one JSON object"))?;
    let ratios = value["ratios"]
        .as_array()
        .ok_or_else(|| Failure::new(format!("{example} output has no `ratios` array")))?;
    ratios
        .iter()
        .map(|r| {
            let field = |k: &str| {
                r[k].as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| Failure::new(format!("{example} ratio without `{k}`: {r}")))
            };
            let value = r["value"]
                .as_f64()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    Failure::new(format!("{example} ratio without a numeric `value`: {r}"))
                })?;
            Ok(SimulatedRatio {
                name: field("name")?,
                value,
                what: field("what")?,
                better: field("better")?,
            })
        })
        .collect()
}

/// The two printed lines of one ratio, in the format of the criterion ratios.
pub(crate) fn render(ratio: &SimulatedRatio) -> String {
    format!(
        "ratio {} {:.3}\n  {} ({} is better; deterministic, not timed)",
        ratio.name, ratio.value, ratio.what, ratio.better
    )
}

/// The examples that print deterministic ratios: (package, example, takes `--quick`).
pub(crate) const EXAMPLES: &[(&str, &str, bool)] = &[
    ("threadline-cache", "strategy_bench", true),
    ("threadline-cli", "plan_bench", false),
    ("threadline-cli", "estimate_bench", false),
    ("threadline-cli", "compaction_bench", false),
];

/// Runs every example of [`EXAMPLES`] (release build) and returns their ratios, in order.
pub(crate) fn run(root: &Path, quick: bool) -> XResult<Vec<SimulatedRatio>> {
    let mut ratios = Vec::new();
    for &(package, example, takes_quick) in EXAMPLES {
        ratios.extend(run_example(root, package, example, quick && takes_quick)?);
    }
    Ok(ratios)
}

/// Runs one example (release build) and returns its ratios.
fn run_example(
    root: &Path,
    package: &str,
    example: &str,
    quick: bool,
) -> XResult<Vec<SimulatedRatio>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args = vec![
        "run",
        "--quiet",
        "--release",
        "-p",
        package,
        "--example",
        example,
    ];
    if quick {
        args.extend(["--", "--quick"]);
    }
    println!("bench: cargo {}", args.join(" "));
    let output = Command::new(cargo)
        .args(&args)
        .current_dir(root)
        .output()
        .context(|| format!("cannot run the {example} example"))?;
    if !output.status.success() {
        return Err(Failure::new(format!(
            "{example} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    parse(example, &String::from_utf8_lossy(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders_the_example_output() {
        let out = r#"{"format":"threadline-cache-bench/1","ratios":[{"name":"cache_default_vs_best","value":0.99,"what":"default vs best","better":"higher"}]}"#;
        let ratios = parse("strategy_bench", out).expect("parses");
        assert_eq!(ratios.len(), 1);
        assert_eq!(
            render(&ratios[0]),
            "ratio cache_default_vs_best 0.990\n  default vs best (higher is better; deterministic, not timed)"
        );
        assert!(parse("strategy_bench", "{}").is_err());
        assert!(
            parse(
                "strategy_bench",
                r#"{"ratios":[{"name":"x","value":"1","what":"w","better":"higher"}]}"#
            )
            .is_err()
        );
    }
}
