//! `cargo xtask soak`: the property tests of the crates whose invariants every request
//! depends on (compaction and normalization by default), run again and again with random
//! seeds and more cases than CI's single fixed-seed run, for developers to run before they
//! stop.
//!
//! Each run sets `PROPTEST_RNG_SEED` to a fresh random seed (printed, so a failure is
//! reproduced with the same variable) and `PROPTEST_CASES` to `--cases` (default 2,048: four
//! times the 512 the normalizer's properties run by default, eight times compaction's 256;
//! properties that fix their own count keep it). The first failing run stops the soak:
//! proptest has then written the shrunk case into the crate's `*.proptest-regressions` file,
//! which CI replays, so the case must be fixed and committed.

use std::hash::{BuildHasher as _, Hasher as _};
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::util::{Failure, XResult, run_cargo};

/// Arguments of `cargo xtask soak`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SoakArgs {
    /// How many runs, each with its own random seed.
    #[arg(long, default_value_t = 20)]
    pub(crate) runs: u32,
    /// `PROPTEST_CASES` of each run.
    #[arg(long, default_value_t = 2048)]
    pub(crate) cases: u32,
    /// The crates whose tests run (repeatable; default: threadline-compact and
    /// threadline-normalize).
    #[arg(long = "package", short = 'p', value_name = "CRATE")]
    pub(crate) packages: Vec<String>,
}

/// The crates soaked when none is named.
pub(crate) const DEFAULT_PACKAGES: [&str; 2] = ["threadline-compact", "threadline-normalize"];

/// A random seed: the standard library's per-process random hasher keys, mixed with the time.
fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    hasher.finish()
}

/// The `cargo test` arguments of a soak run: the libraries' and integration tests of each
/// crate (doc tests hold no properties).
pub(crate) fn test_args(packages: &[String]) -> Vec<String> {
    let mut args = vec!["test".to_owned()];
    for package in packages {
        args.push("-p".to_owned());
        args.push(package.clone());
    }
    args.extend(["--lib", "--tests", "--quiet"].map(str::to_owned));
    args
}

pub(crate) fn run(root: &Path, args: &SoakArgs) -> XResult<()> {
    let packages: Vec<String> = if args.packages.is_empty() {
        DEFAULT_PACKAGES.map(str::to_owned).to_vec()
    } else {
        args.packages.clone()
    };
    let test = test_args(&packages);
    let test: Vec<&str> = test.iter().map(String::as_str).collect();
    let mut build = test.clone();
    build.push("--no-run");
    run_cargo("soak", root, &build, &[])?;
    let cases = args.cases.to_string();
    let started = Instant::now();
    for run in 1..=args.runs {
        let seed = random_seed().to_string();
        println!(
            "soak: run {run} of {}: PROPTEST_RNG_SEED={seed} PROPTEST_CASES={cases}",
            args.runs
        );
        let env = [
            ("PROPTEST_RNG_SEED", seed.as_str()),
            ("PROPTEST_CASES", cases.as_str()),
        ];
        if let Err(failure) = run_cargo("soak", root, &test, &env) {
            return Err(Failure::new(format!(
                "soak: run {run} failed with PROPTEST_RNG_SEED={seed} PROPTEST_CASES={cases} \
                 ({}); proptest wrote the shrunk case into the crate's *.proptest-regressions \
                 file, which CI replays: fix the cause and commit the case",
                failure.message
            )));
        }
    }
    println!(
        "soak: {} run(s) of {} passed in {:.0} s",
        args.runs,
        packages.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_tests_the_libraries_and_integration_tests_of_the_crates() {
        let args = test_args(&[
            "threadline-compact".to_owned(),
            "threadline-normalize".to_owned(),
        ]);
        assert_eq!(
            args,
            [
                "test",
                "-p",
                "threadline-compact",
                "-p",
                "threadline-normalize",
                "--lib",
                "--tests",
                "--quiet"
            ]
        );
    }

    #[test]
    fn seeds_differ_from_run_to_run() {
        let seeds: std::collections::BTreeSet<u64> = (0..8).map(|_| random_seed()).collect();
        assert!(seeds.len() > 1, "{seeds:?}");
    }
}
