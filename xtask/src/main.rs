//! Project automation for threadline, run as `cargo xtask <command>`.
//!
//! * `cargo xtask fixtures [--check]` converts every raw recording under
//!   `fixtures/recorded/` into the canonical `threadline-fixture/1` JSON format
//!   under `fixtures/canonical/` (or checks that the committed files are current).
//! * `cargo xtask fixtures record --request FILE --name NAME [--stream]` records
//!   one live exchange with the real API (needs `ANTHROPIC_API_KEY`; never run by CI).
//! * `cargo xtask bench [--quick]` runs the criterion benches and prints the
//!   performance ratios listed in `xtask/src/bench.rs`.
//! * `cargo xtask fuzz --seconds N [--target NAME]` builds the cargo-fuzz targets of `fuzz/`
//!   and runs each for N seconds, reporting executions and findings (`xtask/src/fuzz.rs`).
//! * `cargo xtask mcp-servers` installs the MCP servers threadline-mcp's tests start, pinned,
//!   into `target/test-servers/` (`xtask/src/mcp_servers.rs`).
//! * `cargo xtask restate-server` installs the Restate server threadline-restate's tests
//!   start, pinned, into `target/restate-server/` (`xtask/src/restate_server.rs`).
//! * `cargo xtask durable-e2e` runs the durable-session end-to-end tests (a worker killed with
//!   SIGKILL at three points), installing the pinned Restate server first if it is missing.
//! * `cargo xtask claude-code-install` installs the real Claude Code 2.1.328, pinned, into
//!   `target/claude-code/`; `cargo xtask claude-code` runs it offline against `threadline mock`
//!   over scenarios of its own and reports what the mock answered and `check` found
//!   (`xtask/src/claude_code.rs`; a step of `ci`).
//! * `cargo xtask ci` runs the same steps as `.ci/run`.

#[cfg(test)]
mod architecture;
mod bench;
mod cache_bench;
mod cc_fidelity;
mod ci;
mod claude_code;
mod durable_e2e;
mod e2e;
mod fixtures;
mod fuzz;
mod mcp_servers;
mod record;
mod restate_server;
mod soak;
mod sources;
mod turn_cost;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::util::Failure;

/// Project automation for threadline.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert `fixtures/recorded/` into `fixtures/canonical/` (the default), or check it.
    Fixtures(FixturesArgs),
    /// Run the criterion benches and report the ratios in `xtask/src/bench.rs`.
    Bench(BenchArgs),
    /// Run each fuzz target for a bounded time and report executions and findings.
    Fuzz(fuzz::FuzzArgs),
    /// Render `threadline inspect --html` of every fixture transcript in headless Chromium
    /// (installed from the distribution when missing) and check each page drew.
    E2e(e2e::E2eArgs),
    /// Install the MCP servers threadline-mcp's tests start (pinned) into target/test-servers.
    McpServers,
    /// Install the Restate server threadline-restate's tests start (pinned) into
    /// target/restate-server.
    RestateServer,
    /// Run the durable-session end-to-end tests (installs the pinned Restate server if
    /// missing): a worker killed with SIGKILL at three points, the session completing on
    /// another worker.
    DurableE2e,
    /// Install the real Claude Code 2.1.328 (pinned, the linux-x64 native binary) into
    /// target/claude-code.
    ClaudeCodeInstall,
    /// Run the real Claude Code (installed if missing) in print mode against `threadline
    /// mock` over its scenarios; keep logs and transcripts in target/claude-code-runs and
    /// report requests, refusals and `check` violations.
    ClaudeCode(claude_code::HarnessArgs),
    /// Run the compaction and normalization property tests again and again with random
    /// seeds and four times the cases (before stopping work; a failure's case is saved as a
    /// regression CI replays).
    Soak(soak::SoakArgs),
    /// Measure the per-turn overhead, CPU and memory of threadline and of the pinned Claude
    /// Code against one scripted model on loopback (a Read of an 8 KB file every turn).
    TurnCost(turn_cost::TurnCostArgs),
    /// Run every CI step (the same sequence as `.ci/run`), stopping at the first failure.
    Ci,
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct FixturesArgs {
    /// Do not write anything: regenerate in memory and fail if the committed
    /// canonical files are stale, missing or extra.
    #[arg(long)]
    check: bool,
    #[command(subcommand)]
    action: Option<FixturesAction>,
}

#[derive(Debug, Subcommand)]
enum FixturesAction {
    /// Record one live exchange with api.anthropic.com (needs ANTHROPIC_API_KEY).
    Record(RecordArgs),
}

/// Arguments of `cargo xtask fixtures record`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RecordArgs {
    /// JSON file holding the Messages API request body.
    #[arg(long, value_name = "FILE")]
    pub(crate) request: PathBuf,
    /// Name of the recording: stored as `fixtures/recorded/threadline__live/NAME.json`.
    #[arg(long)]
    pub(crate) name: String,
    /// Ask for a streaming (SSE) response: sets `"stream": true` in the body.
    #[arg(long)]
    pub(crate) stream: bool,
    /// Value for the `anthropic-beta` header.
    #[arg(long, value_name = "BETAS")]
    pub(crate) beta: Option<String>,
    /// One-line description for SOURCES.md and the canonical `docs` field.
    #[arg(long, value_name = "TEXT")]
    pub(crate) what: Option<String>,
    /// Replace an existing recording of the same name.
    #[arg(long)]
    pub(crate) force: bool,
}

/// Arguments of `cargo xtask bench`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BenchArgs {
    /// Short warm-up and measurement times, so the whole run takes a few minutes.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Do not run the benches; only compute ratios from existing criterion estimates.
    #[arg(long)]
    pub(crate) ratios_only: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fixtures(args) => match args.action {
            Some(FixturesAction::Record(record)) => record::run(&record),
            None if args.check => fixtures::check_command(&util::repo_root()),
            None => fixtures::generate_command(&util::repo_root()),
        },
        Command::Bench(args) => bench::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::E2e(args) => e2e::run(&util::repo_root(), &args),
        Command::McpServers => mcp_servers::run(&util::repo_root()),
        Command::RestateServer => restate_server::run(&util::repo_root()),
        Command::DurableE2e => durable_e2e::run(&util::repo_root()),
        Command::ClaudeCodeInstall => claude_code::run_install(&util::repo_root()),
        Command::ClaudeCode(args) => claude_code::run(&util::repo_root(), &args),
        Command::Soak(args) => soak::run(&util::repo_root(), &args),
        Command::TurnCost(args) => turn_cost::run(&util::repo_root(), &args),
        Command::Ci => ci::run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, message }) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("cargo xtask").chain(args.iter().copied()))
    }

    #[test]
    fn fixtures_commands_parse() {
        let cli = parse(&["fixtures"]).expect("plain fixtures");
        assert!(matches!(
            cli.command,
            Command::Fixtures(FixturesArgs {
                check: false,
                action: None
            })
        ));
        let cli = parse(&["fixtures", "--check"]).expect("fixtures --check");
        assert!(matches!(
            cli.command,
            Command::Fixtures(FixturesArgs {
                check: true,
                action: None
            })
        ));
    }

    #[test]
    fn record_arguments_parse() {
        let cli = parse(&[
            "fixtures",
            "record",
            "--request",
            "req.json",
            "--name",
            "hello",
            "--stream",
        ])
        .expect("record parses");
        let Command::Fixtures(FixturesArgs {
            action: Some(FixturesAction::Record(args)),
            ..
        }) = cli.command
        else {
            panic!("expected fixtures record, got {:?}", cli.command);
        };
        assert_eq!(args.request, PathBuf::from("req.json"));
        assert_eq!(args.name, "hello");
        assert!(args.stream);
        assert!(!args.force);
        assert!(
            parse(&["fixtures", "record", "--name", "x"]).is_err(),
            "--request is required"
        );
        assert!(
            parse(&["fixtures", "record", "--request", "r"]).is_err(),
            "--name is required"
        );
    }

    #[test]
    fn bench_and_ci_parse() {
        let cli = parse(&["bench", "--quick"]).expect("bench --quick");
        assert!(matches!(
            cli.command,
            Command::Bench(BenchArgs {
                quick: true,
                ratios_only: false
            })
        ));
        assert!(matches!(parse(&["ci"]).expect("ci").command, Command::Ci));
        assert!(matches!(
            parse(&["restate-server"]).expect("restate-server").command,
            Command::RestateServer
        ));
        assert!(matches!(
            parse(&["claude-code-install"])
                .expect("claude-code-install")
                .command,
            Command::ClaudeCodeInstall
        ));
        let cli =
            parse(&["claude-code", "--scenario", "tools", "--report-only"]).expect("claude-code");
        let Command::ClaudeCode(args) = cli.command else {
            panic!("expected claude-code, got {:?}", cli.command);
        };
        assert_eq!(args.scenarios, ["tools"]);
        assert!(args.report_only);
        assert!(parse(&["nope"]).is_err());
    }

    #[test]
    fn fuzz_arguments_parse() {
        let cli = parse(&["fuzz", "--seconds", "10"]).expect("fuzz --seconds");
        let Command::Fuzz(args) = cli.command else {
            panic!("expected fuzz, got {:?}", cli.command);
        };
        assert_eq!(args.seconds, 10);
        assert!(args.targets.is_empty());
        assert_eq!(args.max_len, fuzz::DEFAULT_MAX_LEN);
        assert_eq!(args.rss_limit_mb, fuzz::DEFAULT_RSS_LIMIT_MB);
        assert_eq!(args.timeout, fuzz::DEFAULT_TIMEOUT_SECS);

        let cli = parse(&[
            "fuzz",
            "--seconds",
            "120",
            "--target",
            "request_json",
            "--target",
            "sse_accumulate",
            "--max-len",
            "4096",
            "--rss-limit-mb",
            "1024",
            "--timeout",
            "5",
        ])
        .expect("every fuzz option");
        let Command::Fuzz(args) = cli.command else {
            panic!("expected fuzz, got {:?}", cli.command);
        };
        assert_eq!(args.targets, ["request_json", "sse_accumulate"]);
        assert_eq!(
            (args.max_len, args.rss_limit_mb, args.timeout),
            (4096, 1024, 5)
        );

        assert!(parse(&["fuzz"]).is_err(), "--seconds is required");
        assert!(parse(&["fuzz", "--seconds", "0"]).is_err(), "zero seconds");
        assert!(parse(&["fuzz", "--seconds", "x"]).is_err());
        assert!(
            parse(&["fuzz", "--seconds", "1", "--target", "nope"]).is_err(),
            "unknown target"
        );
    }
}
