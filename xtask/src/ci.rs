//! `cargo xtask ci`: the same sequence as `.ci/run`, stopping at the first failure.
//!
//! 1. `cargo fmt --all --check`
//! 2. `cargo clippy --workspace --all-targets -- -D warnings`
//! 3. `RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps`: no broken intra-doc link,
//!    no link to a private item
//! 4. the facade's feature matrix (run in-process, `ci/features.rs`): `cargo check -p
//!    threadline --no-default-features`, then with each feature of its manifest alone; a
//!    warning fails it
//! 5. `cargo package --workspace --exclude <publish = false> --no-verify --allow-dirty` (run
//!    in-process, `ci/publish.rs`): every publishable crate packages alone, in dependency
//!    order, with no warning; then each crate's `cargo package --list` holds what its build
//!    needs. `--no-verify` because verifying rebuilds every crate outside the workspace
//!    (17 min and 2.3 GB on the 2-core machine; see `ci/publish.rs`)
//! 6. `cargo deny check licenses bans sources` (installs cargo-deny with
//!    `cargo install cargo-deny --locked` if missing)
//! 7. `cargo xtask fixtures --check` (run in-process)
//! 8. `cargo xtask mcp-servers` (run in-process): the pinned MCP servers threadline-mcp's
//!    tests start (npm `@modelcontextprotocol/server-everything`, the Python `mcp` SDK) and the
//!    official Python SDK threadline-mock's platform tests drive (`anthropic[bedrock,vertex]`), then
//!    `cargo xtask restate-server`: the pinned Restate server threadline-restate's tests start
//! 9. `cargo nextest run --workspace` (but the durable end-to-end tests, step 14), or
//!    `cargo test --workspace` without nextest
//! 10. `cargo test --workspace --doc`
//! 11. `cargo xtask fuzz --seconds 10 --seed 20261201` (run in-process): every fuzz target for
//!     ten seconds with a fixed libFuzzer seed, so the inputs CI tries are the same every run
//!     (installs cargo-fuzz pinned if missing)
//! 12. `cargo xtask e2e` (run in-process): `threadline inspect --html` of every fixture
//!     transcript checked in headless Chromium (installs Debian's `chromium` if missing)
//! 13. `cargo xtask claude-code` (run in-process): the real Claude Code 2.1.328 (installed
//!     pinned from the npm registry by `scripts/install-claude-code.sh` if missing) in print
//!     mode against `threadline mock`, every scenario; fails when a request was not answered
//!     2xx (the mock refused it), `threadline check` found a violation in a body, or a Claude
//!     Code run did not exit 0 (docs/claude-code-conformance.md). Right after step 12, whose `cargo build -p
//!     threadline-cli --bin threadline` it repeats, so that build is already done: the test
//!     steps build the CLI with the workspace's test features (`cargo tree` shows 11 of its
//!     dependencies with other features there, tokio's `test-util` among them), so from an
//!     earlier place its build would recompile much of the CLI's dependency stack
//! 14. `cargo xtask durable-e2e` (run in-process): durable sessions on a real Restate server
//!     with two worker processes, one killed with SIGKILL at three points (step 9 leaves
//!     these tests out)
//!
//! Property tests run with a fixed seed ([`PROPTEST_SEED`], unless `PROPTEST_RNG_SEED` is
//! already set), so that CI is reproducible: a run passes or fails the same way every time.
//! Local `cargo test` runs keep proptest's random seeds and keep finding new cases; a case
//! found there is kept in the test's `.proptest-regressions` file and replayed everywhere.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{self, Failure, XResult, cargo, repo_root};
use crate::{claude_code, durable_e2e, e2e, fixtures, fuzz, mcp_servers, restate_server};

mod features;
mod publish;

/// The proptest seed CI runs with (see the module documentation).
pub(crate) const PROPTEST_SEED: &str = "20261130";

/// How long CI runs each fuzz target, and the libFuzzer seed it runs them with.
pub(crate) const FUZZ_SECONDS: u64 = 10;
/// See [`FUZZ_SECONDS`].
pub(crate) const FUZZ_SEED: u32 = 20261201;

/// One CI step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Run `cargo <args>`.
    Cargo(Vec<&'static str>),
    /// `cargo doc --workspace --no-deps` with `RUSTDOCFLAGS="-D warnings"`.
    Doc,
    /// The facade's feature matrix, in-process (`ci/features.rs`).
    FeatureMatrix,
    /// `cargo package` of every publishable crate, in-process (`ci/publish.rs`).
    Package,
    /// Make sure `cargo deny` exists, then run it.
    Deny,
    /// `cargo xtask fixtures --check`, in-process.
    FixturesCheck,
    /// `cargo xtask mcp-servers`, then `cargo xtask restate-server`, in-process.
    McpServers,
    /// nextest if installed, else `cargo test --workspace`.
    Tests,
    /// `cargo xtask claude-code`, in-process.
    ClaudeCode,
    /// `cargo xtask fuzz` for [`FUZZ_SECONDS`] per target with [`FUZZ_SEED`], in-process.
    Fuzz,
    /// `cargo xtask e2e`, in-process.
    E2e,
    /// `cargo xtask durable-e2e`, in-process.
    DurableE2e,
}

impl Step {
    /// How the step is shown to the user.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Cargo(args) => format!("cargo {}", args.join(" ")),
            Self::Doc => format!("RUSTDOCFLAGS=\"-D warnings\" cargo {}", DOC_ARGS.join(" ")),
            Self::FeatureMatrix => format!(
                "cargo check -p {} --no-default-features, then with each feature alone",
                features::FACADE
            ),
            Self::Package => {
                "cargo package --workspace --exclude <publish = false> --no-verify, and --list"
                    .to_owned()
            }
            Self::Deny => "cargo deny check licenses bans sources".to_owned(),
            Self::FixturesCheck => "cargo xtask fixtures --check".to_owned(),
            Self::McpServers => "cargo xtask mcp-servers && cargo xtask restate-server".to_owned(),
            Self::Tests => {
                "cargo nextest run --workspace (or cargo test --workspace), durable-e2e left out"
                    .to_owned()
            }
            Self::Fuzz => {
                format!("cargo xtask fuzz --seconds {FUZZ_SECONDS} --seed {FUZZ_SEED}")
            }
            Self::ClaudeCode => "cargo xtask claude-code".to_owned(),
            Self::E2e => "cargo xtask e2e".to_owned(),
            Self::DurableE2e => "cargo xtask durable-e2e".to_owned(),
        }
    }
}

/// The steps, in `.ci/run` order.
pub(crate) fn steps() -> Vec<Step> {
    vec![
        Step::Cargo(vec!["fmt", "--all", "--check"]),
        Step::Cargo(vec![
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
        Step::Doc,
        Step::FeatureMatrix,
        Step::Package,
        Step::Deny,
        Step::FixturesCheck,
        Step::McpServers,
        Step::Tests,
        Step::Cargo(vec!["test", "--workspace", "--doc"]),
        Step::Fuzz,
        Step::E2e,
        Step::ClaudeCode,
        Step::DurableE2e,
    ]
}

/// The arguments of the [`Step::Doc`] step.
const DOC_ARGS: [&str; 3] = ["doc", "--workspace", "--no-deps"];

fn run_cargo(root: &Path, args: &[&str]) -> XResult<()> {
    run_cargo_with(root, args, &[])
}

/// [`run_cargo`] with `extra` variables set too.
fn run_cargo_with(root: &Path, args: &[&str], extra: &[(&str, &str)]) -> XResult<()> {
    let mut env = extra.to_vec();
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        env.push(("PROPTEST_RNG_SEED", PROPTEST_SEED));
    }
    util::run_cargo("ci", root, args, &env)
}

/// Whether `cargo <subcommand> --version` works.
fn has_subcommand(root: &Path, subcommand: &str) -> bool {
    Command::new(cargo())
        .args([subcommand, "--version"])
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run_step(root: &Path, step: &Step) -> XResult<()> {
    match step {
        Step::Cargo(args) => run_cargo(root, args),
        Step::Doc => run_cargo_with(root, &DOC_ARGS, &[("RUSTDOCFLAGS", "-D warnings")]),
        Step::FeatureMatrix => features::run(root),
        Step::Package => publish::run(root),
        Step::Deny => {
            if !has_subcommand(root, "deny") {
                println!("ci: cargo-deny is missing; installing it");
                run_cargo(root, &["install", "cargo-deny", "--locked"])?;
            }
            run_cargo(root, &["deny", "check", "licenses", "bans", "sources"])
        }
        Step::FixturesCheck => {
            println!("ci: $ cargo xtask fixtures --check");
            let summary = fixtures::check(root)?;
            println!("fixtures: up to date: {summary}");
            Ok(())
        }
        Step::Fuzz => {
            println!("ci: $ {}", step.describe());
            fuzz::run(&fuzz::FuzzArgs {
                seconds: FUZZ_SECONDS,
                targets: Vec::new(),
                max_len: fuzz::DEFAULT_MAX_LEN,
                rss_limit_mb: fuzz::DEFAULT_RSS_LIMIT_MB,
                timeout: fuzz::DEFAULT_TIMEOUT_SECS,
                seed: Some(FUZZ_SEED),
            })
        }
        Step::ClaudeCode => {
            println!("ci: $ cargo xtask claude-code");
            claude_code::run(
                root,
                &claude_code::HarnessArgs {
                    scenarios: Vec::new(),
                    report_only: false,
                },
            )
        }
        Step::E2e => {
            println!("ci: $ cargo xtask e2e");
            e2e::run(
                root,
                &e2e::E2eArgs {
                    update_screenshot: false,
                },
            )
        }
        Step::DurableE2e => {
            println!("ci: $ cargo xtask durable-e2e");
            durable_e2e::run(root)
        }
        Step::McpServers => {
            mcp_servers::run(root)?;
            restate_server::run(root)
        }
        Step::Tests => {
            if has_subcommand(root, "nextest") {
                run_cargo(
                    root,
                    &[
                        "nextest",
                        "run",
                        "--workspace",
                        "-E",
                        durable_e2e::NEXTEST_FILTER,
                    ],
                )
            } else {
                println!("ci: cargo-nextest is missing; using cargo test");
                run_cargo(
                    root,
                    &["test", "--workspace", "--", "--skip", durable_e2e::MODULE],
                )
            }
        }
    }
}

/// Entry point of `cargo xtask ci`.
pub(crate) fn run() -> XResult<()> {
    let root = repo_root();
    let steps = steps();
    let total = steps.len();
    for (i, step) in steps.iter().enumerate() {
        println!("ci: step {}/{total}: {}", i + 1, step.describe());
        if let Err(failure) = run_step(&root, step) {
            return Err(Failure::new(format!(
                "ci: step {}/{total} ({}) failed: {}",
                i + 1,
                step.describe(),
                failure.message
            )));
        }
    }
    println!("ci: all {total} steps passed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_match_ci_run_order() {
        let described: Vec<String> = steps().iter().map(Step::describe).collect();
        assert_eq!(
            described,
            vec![
                "cargo fmt --all --check",
                "cargo clippy --workspace --all-targets -- -D warnings",
                "RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps",
                "cargo check -p threadline --no-default-features, then with each feature alone",
                "cargo package --workspace --exclude <publish = false> --no-verify, and --list",
                "cargo deny check licenses bans sources",
                "cargo xtask fixtures --check",
                "cargo xtask mcp-servers && cargo xtask restate-server",
                "cargo nextest run --workspace (or cargo test --workspace), durable-e2e left out",
                "cargo test --workspace --doc",
                "cargo xtask fuzz --seconds 10 --seed 20261201",
                "cargo xtask e2e",
                "cargo xtask claude-code",
                "cargo xtask durable-e2e",
            ]
        );
    }
}
