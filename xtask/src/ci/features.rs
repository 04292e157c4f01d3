//! The facade's feature matrix: `threadline` builds with no features and with each feature
//! alone.
//!
//! `cargo check -p threadline --no-default-features`, then `--no-default-features --features
//! X` for every feature of `crates/threadline/Cargo.toml` except `default` (the clippy step
//! builds that one), read from `cargo metadata` so a new feature is checked without editing
//! this file. A `warning:` in any of them fails the step: code used by only some features
//! that is left unused by one shows up here, not in the default build.

use std::path::Path;

use serde_json::Value;

use super::publish::{cargo_output, warnings};
use crate::util::{Failure, XResult};

/// The facade package.
pub(crate) const FACADE: &str = "threadline";

/// The features of `package` in `cargo metadata` output, sorted, without `default`.
pub(crate) fn features(metadata: &Value, package: &str) -> XResult<Vec<String>> {
    let found = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"].as_str() == Some(package))
        .ok_or_else(|| Failure::new(format!("cargo metadata: no package `{package}`")))?;
    let mut out: Vec<String> = found["features"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, _)| name.clone())
        .filter(|name| name != "default")
        .collect();
    out.sort();
    Ok(out)
}

/// The `cargo check` argument lists of the matrix, no features first.
pub(crate) fn matrix(features: &[String]) -> Vec<Vec<String>> {
    let base = ["check", "-p", FACADE, "--no-default-features"].map(str::to_owned);
    let mut out = vec![base.to_vec()];
    for feature in features {
        let mut args = base.to_vec();
        args.extend(["--features".to_owned(), feature.clone()]);
        out.push(args);
    }
    out
}

/// The step: see the module documentation.
pub(crate) fn run(root: &Path) -> XResult<()> {
    let (metadata, _) = cargo_output(
        root,
        &["metadata", "--no-deps", "--format-version", "1", "--quiet"],
    )?;
    let metadata: Value = serde_json::from_str(&metadata)
        .map_err(|e| Failure::new(format!("cargo metadata: not JSON: {e}")))?;
    let features = features(&metadata, FACADE)?;
    let runs = matrix(&features);
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        println!("ci: $ cargo {}", args.join(" "));
        let (_, stderr) = cargo_output(root, &args)?;
        let warned = warnings(&stderr);
        if !warned.is_empty() {
            return Err(Failure::new(format!(
                "`cargo {}` warned: {}",
                args.join(" "),
                warned.join(" | ")
            )));
        }
    }
    println!(
        "features: {FACADE} builds with no features and with each of {} alone",
        features.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_come_from_metadata_without_default() {
        let metadata = serde_json::json!({"packages": [
            {"name": "other", "features": {"x": []}},
            {"name": "threadline", "features": {"default": ["full"], "wire": [], "full": ["wire"]}}
        ]});
        assert_eq!(
            features(&metadata, FACADE).expect("facade present"),
            vec!["full".to_owned(), "wire".to_owned()]
        );
        assert_eq!(
            features(&metadata, "missing").expect_err("absent").message,
            "cargo metadata: no package `missing`"
        );
    }

    #[test]
    fn the_matrix_is_no_features_then_each_feature_alone() {
        let runs = matrix(&["agent".to_owned(), "wire".to_owned()]);
        let lines: Vec<String> = runs.iter().map(|r| r.join(" ")).collect();
        assert_eq!(
            lines,
            vec![
                "check -p threadline --no-default-features",
                "check -p threadline --no-default-features --features agent",
                "check -p threadline --no-default-features --features wire",
            ]
        );
    }
}
