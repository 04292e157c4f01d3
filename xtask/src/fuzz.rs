//! `cargo xtask fuzz --seconds N [--target NAME]...`: builds the libFuzzer targets of `fuzz/`
//! and runs each for a bounded time, one at a time.
//!
//! 1. Installs cargo-fuzz [`CARGO_FUZZ_VERSION`] (`cargo install --locked`) if `cargo fuzz`
//!    is missing.
//! 2. Builds every target with `cargo fuzz build -O -a --sanitizer none` into
//!    `target/fuzz/`: release code with debug assertions and overflow checks, on the stable
//!    toolchain (no sanitizer: the workspace forbids `unsafe`, and the sanitizers need
//!    nightly `-Z` flags).
//! 3. Writes the seed corpora into `target/fuzz/seeds/<target>/`, generated from
//!    `fixtures/canonical/` (SSE bodies, request bodies, Claude Code transcripts split into
//!    pieces under the length limit), plus the small committed `fuzz/seeds/<target>/`.
//! 4. Runs each target's binary for N seconds with `-max_len`, `-rss_limit_mb` (an input that
//!    makes the target use more is an `oom-` finding) and `-timeout` (an input slower than
//!    that is a `timeout-` finding). New coverage is kept in `target/fuzz/corpus/<target>/`,
//!    findings in `target/fuzz/artifacts/<target>/`, the whole libFuzzer output in
//!    `target/fuzz/logs/<target>.log`.
//! 5. Prints per target the executions (libFuzzer's `stat::number_of_executed_units`, or the
//!    `#N DONE` line), the peak RSS and whether a finding was written, and fails (exit 1) if
//!    any target found one. Reproduce a finding with
//!    `target/fuzz/x86_64-unknown-linux-gnu/release/<target> <artifact>`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{Context, Failure, XResult, cargo, read_text, rel_path, repo_root, write_file};

/// The cargo-fuzz release installed when `cargo fuzz` is missing.
pub(crate) const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// The fuzz targets, in the order they run.
pub(crate) const TARGETS: [&str; 5] = [
    "sse_accumulate",
    "request_json",
    "transcript_jsonl",
    "claude_code_import",
    "mcp_config",
];

/// The default `-max_len`: the largest input libFuzzer generates (and the size seed
/// transcripts are split to).
pub(crate) const DEFAULT_MAX_LEN: usize = 64 * 1024;

/// The default `-rss_limit_mb`.
pub(crate) const DEFAULT_RSS_LIMIT_MB: u64 = 2048;

/// The default `-timeout`, in seconds: one input taking longer is a hang.
pub(crate) const DEFAULT_TIMEOUT_SECS: u64 = 10;

/// Arguments of `cargo xtask fuzz`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub(crate) struct FuzzArgs {
    /// Run each target for this many seconds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) seconds: u64,
    /// Run only this target (repeatable); default: all of them.
    #[arg(long = "target", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(TARGETS))]
    pub(crate) targets: Vec<String>,
    /// The longest input libFuzzer generates, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LEN)]
    pub(crate) max_len: usize,
    /// The memory (RSS) above which a run is reported as an out-of-memory finding.
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_RSS_LIMIT_MB)]
    pub(crate) rss_limit_mb: u64,
    /// The time one input may take before it is reported as a hang.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub(crate) timeout: u64,
    /// libFuzzer's random seed (`-seed`): the same seed, corpus and binary explore the same
    /// inputs in the same order, so a short run is reproducible (CI uses one). Default: a new
    /// seed each run.
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u32>,
}

impl FuzzArgs {
    /// The targets to run, in [`TARGETS`] order.
    pub(crate) fn selected(&self) -> Vec<&'static str> {
        TARGETS
            .into_iter()
            .filter(|t| self.targets.is_empty() || self.targets.iter().any(|s| s == t))
            .collect()
    }
}

/// What a libFuzzer run printed, as far as the report needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunStats {
    /// Inputs executed.
    pub(crate) executions: Option<u64>,
    /// Peak RSS in MB.
    pub(crate) peak_rss_mb: Option<u64>,
    /// Units in the corpus at the end (the last `corp:` figure).
    pub(crate) corpus_units: Option<u64>,
    /// The findings libFuzzer wrote (`Test unit written to PATH`).
    pub(crate) artifacts: Vec<String>,
    /// libFuzzer's `==N== ERROR: libFuzzer: …` line, or the `deadly signal` line.
    pub(crate) error: Option<String>,
}

/// Reads libFuzzer's output (stderr).
pub(crate) fn parse_output(log: &str) -> RunStats {
    let mut stats = RunStats::default();
    for line in log.lines() {
        let line = line.trim_end();
        if let Some(value) = line.strip_prefix("stat::number_of_executed_units:") {
            stats.executions = value.trim().parse().ok().or(stats.executions);
        } else if let Some(value) = line.strip_prefix("stat::peak_rss_mb:") {
            stats.peak_rss_mb = value.trim().parse().ok().or(stats.peak_rss_mb);
        } else if let Some(rest) = line.strip_prefix('#') {
            // `#1234\tDONE   cov: 10 ft: 20 corp: 5/100b lim: 4 exec/s: 10 rss: 30Mb`
            let mut words = rest.split_whitespace();
            let count = words.next().and_then(|n| n.parse::<u64>().ok());
            let kind = words.next();
            if kind == Some("DONE") && stats.executions.is_none() {
                stats.executions = count;
            }
            if let Some(corp) = field_after(rest, "corp:") {
                stats.corpus_units = corp.split('/').next().and_then(|n| n.parse().ok());
            }
        }
        if let Some(at) = line.find("Test unit written to ") {
            let path = line[at + "Test unit written to ".len()..].trim();
            if !path.is_empty() {
                stats.artifacts.push(path.to_owned());
            }
        }
        if stats.error.is_none()
            && (line.contains("ERROR: libFuzzer:") || line.contains("deadly signal"))
        {
            stats.error = Some(
                line.trim_start_matches(|c| c == '=' || char::is_numeric(c))
                    .trim()
                    .to_owned(),
            );
        }
    }
    stats
}

/// The whitespace-separated word after `key` in `text`.
fn field_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == key)?;
    words.next()
}

/// The libFuzzer arguments of one run.
pub(crate) fn libfuzzer_args(
    args: &FuzzArgs,
    artifacts: &Path,
    corpora: &[PathBuf],
) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![
        format!("-max_total_time={}", args.seconds).into(),
        format!("-max_len={}", args.max_len).into(),
        format!("-rss_limit_mb={}", args.rss_limit_mb).into(),
        format!("-timeout={}", args.timeout).into(),
        "-print_final_stats=1".into(),
    ];
    if let Some(seed) = args.seed {
        out.push(format!("-seed={seed}").into());
    }
    let mut prefix = OsString::from("-artifact_prefix=");
    prefix.push(artifacts.as_os_str());
    prefix.push("/");
    out.push(prefix);
    out.extend(corpora.iter().map(|c| c.as_os_str().to_owned()));
    out
}

fn cargo_fuzz_version(root: &Path) -> Option<String> {
    let output = Command::new(cargo())
        .args(["fuzz", "--version"])
        .current_dir(root)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn run_cargo(root: &Path, args: &[&str]) -> XResult<()> {
    crate::util::run_cargo("fuzz", root, args, &[])
}

/// Installs cargo-fuzz if it is missing.
fn ensure_cargo_fuzz(root: &Path) -> XResult<()> {
    match cargo_fuzz_version(root) {
        Some(version) => {
            if !version.ends_with(CARGO_FUZZ_VERSION) {
                println!("fuzz: using the installed {version} (pinned: {CARGO_FUZZ_VERSION})");
            }
            Ok(())
        }
        None => {
            println!("fuzz: cargo-fuzz is missing; installing {CARGO_FUZZ_VERSION}");
            run_cargo(
                root,
                &[
                    "install",
                    "cargo-fuzz",
                    "--version",
                    CARGO_FUZZ_VERSION,
                    "--locked",
                ],
            )
        }
    }
}

/// The host triple, which names the directory of the fuzz binaries.
fn host_triple() -> XResult<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .context(|| "cannot run rustc -vV".to_owned())?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host:").map(|h| h.trim().to_owned()))
        .ok_or_else(|| Failure::new("rustc -vV printed no host triple"))
}

/// One seed input: a file name and its bytes.
type Seed = (String, Vec<u8>);

/// The seed corpora made from `fixtures/`, per target.
pub(crate) fn fixture_seeds(
    root: &Path,
    max_len: usize,
) -> XResult<Vec<(&'static str, Vec<Seed>)>> {
    let index_path = root.join("fixtures/canonical/index.json");
    let index: Value = serde_json::from_str(&read_text(&index_path)?)
        .context(|| format!("{} is not JSON", index_path.display()))?;
    let files = index
        .get("files")
        .and_then(Value::as_array)
        .ok_or_else(|| Failure::new(format!("{}: no `files` list", index_path.display())))?;
    let (mut sse, mut requests, mut transcripts) = (Vec::new(), Vec::new(), Vec::new());
    for file in files {
        let (Some(name), Some(kind), Some(path)) = (
            file.get("name").and_then(Value::as_str),
            file.get("kind").and_then(Value::as_str),
            file.get("path").and_then(Value::as_str),
        ) else {
            continue;
        };
        let stem = seed_name(name);
        match kind {
            "api_exchanges" => {
                let fixture_path = root.join(path);
                let fixture: Value = serde_json::from_str(&read_text(&fixture_path)?)
                    .context(|| format!("{} is not JSON", fixture_path.display()))?;
                let exchanges = fixture.get("exchanges").and_then(Value::as_array);
                for (i, exchange) in exchanges.into_iter().flatten().enumerate() {
                    if let Some(text) = exchange.pointer("/response/sse").and_then(Value::as_str) {
                        sse.push((format!("{stem}-{i}.sse"), text.as_bytes().to_vec()));
                    }
                    if let Some(body) = exchange.pointer("/request/body").filter(|b| b.is_object())
                    {
                        let bytes = serde_json::to_vec(body)
                            .context(|| format!("cannot serialize a request of {name}"))?;
                        requests.push((format!("{stem}-{i}.json"), bytes));
                    }
                }
            }
            "claude_code_transcript" => {
                let text = read_text(&root.join(path))?;
                for (i, piece) in split_lines(&text, max_len).into_iter().enumerate() {
                    transcripts.push((format!("{stem}-{i}.jsonl"), piece.into_bytes()));
                }
            }
            _ => {}
        }
    }
    Ok(vec![
        ("sse_accumulate", sse),
        ("request_json", requests),
        ("claude_code_import", transcripts),
    ])
}

/// A fixture name as a file name.
fn seed_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `text` cut between lines into pieces of at most `max_len` bytes (a longer line is a piece
/// of its own, which libFuzzer truncates).
pub(crate) fn split_lines(text: &str, max_len: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if !current.is_empty() && current.len() + line.len() > max_len {
            pieces.push(std::mem::take(&mut current));
        }
        current.push_str(line);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Replaces the contents of `dir` with `seeds`.
fn write_seeds(dir: &Path, seeds: &[Seed]) -> XResult<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).context(|| format!("cannot clear {}", dir.display()))?;
    }
    fs::create_dir_all(dir).context(|| format!("cannot create {}", dir.display()))?;
    for (name, bytes) in seeds {
        write_file(&dir.join(name), bytes)?;
    }
    Ok(())
}

/// The files in `dir` (none if it does not exist).
fn list_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Whether an artifact file is a finding (libFuzzer also writes `slow-unit-` files, which
/// are not).
pub(crate) fn is_finding(file_name: &str) -> bool {
    ["crash-", "oom-", "timeout-", "leak-"]
        .iter()
        .any(|p| file_name.starts_with(p))
}

/// The result of one target's run.
#[derive(Debug)]
struct Outcome {
    target: &'static str,
    stats: RunStats,
    findings: Vec<PathBuf>,
    elapsed: Duration,
    exit: String,
}

/// Runs one target's binary, its output into `log`, for at most the run time plus a margin.
fn run_target(
    root: &Path,
    binary: &Path,
    target: &'static str,
    args: &FuzzArgs,
) -> XResult<Outcome> {
    let fuzz_dir = root.join("target/fuzz");
    let artifacts = fuzz_dir.join("artifacts").join(target);
    let corpus = fuzz_dir.join("corpus").join(target);
    let log_path = fuzz_dir.join("logs").join(format!("{target}.log"));
    for dir in [&artifacts, &corpus] {
        fs::create_dir_all(dir).context(|| format!("cannot create {}", dir.display()))?;
    }
    if let Some(parent) = log_path.parent() {
        fs::create_dir_all(parent).context(|| format!("cannot create {}", parent.display()))?;
    }
    // libFuzzer writes new inputs into the first corpus directory.
    let mut corpora = vec![corpus, fuzz_dir.join("seeds").join(target)];
    let committed = root.join("fuzz/seeds").join(target);
    if committed.is_dir() {
        corpora.push(committed);
    }
    corpora.retain(|c| c.is_dir());
    let before = list_files(&artifacts);
    let log =
        fs::File::create(&log_path).context(|| format!("cannot create {}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .context(|| format!("cannot reopen {}", log_path.display()))?;
    println!(
        "fuzz: {target}: running {} s (log: {})",
        args.seconds,
        rel_path(root, &log_path)
    );
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(libfuzzer_args(args, &artifacts, &corpora))
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .context(|| format!("cannot start {}", binary.display()))?;
    // libFuzzer stops itself after -max_total_time; the margin covers loading a large corpus
    // on a loaded machine and the final report. Past it the run is stopped and reported.
    let deadline = Duration::from_secs(args.seconds + args.timeout + 120);
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .context(|| format!("waiting for {target}"))?
        {
            break Some(status);
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&fs::read(&log_path).unwrap_or_default()).into_owned();
    let stats = parse_output(&text);
    let findings: Vec<PathBuf> = list_files(&artifacts)
        .into_iter()
        .filter(|p| !before.contains(p))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_finding)
        })
        .collect();
    let exit = match status {
        Some(status) if status.success() => "ok".to_owned(),
        Some(status) => status.to_string(),
        None => format!("killed after {} s", deadline.as_secs()),
    };
    if !findings.is_empty() || status.is_none_or(|s| !s.success()) {
        // Show the end of the log: the panic message, the stack and the artifact line.
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines.len().saturating_sub(40);
        for line in &lines[tail..] {
            println!("fuzz: {target}: | {line}");
        }
    }
    Ok(Outcome {
        target,
        stats,
        findings,
        elapsed,
        exit,
    })
}

/// One report line for an outcome.
fn report_line(root: &Path, outcome: &Outcome) -> String {
    let executions = outcome
        .stats
        .executions
        .map_or_else(|| "unknown".to_owned(), |n| n.to_string());
    let mut line = format!(
        "{}: {executions} executions in {:.0} s",
        outcome.target,
        outcome.elapsed.as_secs_f64()
    );
    if let Some(units) = outcome.stats.corpus_units {
        line.push_str(&format!(", corpus {units} units"));
    }
    if let Some(rss) = outcome.stats.peak_rss_mb {
        line.push_str(&format!(", peak RSS {rss} MB"));
    }
    if outcome.findings.is_empty() {
        if outcome.exit == "ok" {
            line.push_str(", no finding");
        } else {
            line.push_str(&format!(
                ", no finding written but the run ended: {}",
                outcome.exit
            ));
        }
    } else {
        let names: Vec<String> = outcome.findings.iter().map(|p| rel_path(root, p)).collect();
        line.push_str(&format!(", FINDING: {}", names.join(", ")));
        if let Some(error) = &outcome.stats.error {
            line.push_str(&format!(" ({error})"));
        }
    }
    line
}

/// Entry point of `cargo xtask fuzz`.
pub(crate) fn run(args: &FuzzArgs) -> XResult<()> {
    let root = repo_root();
    ensure_cargo_fuzz(&root)?;
    run_cargo(
        &root,
        &[
            "fuzz",
            "build",
            "--fuzz-dir",
            "fuzz",
            "-O",
            "-a",
            "--sanitizer",
            "none",
            "--target-dir",
            "target/fuzz",
        ],
    )?;
    let seeds_dir = root.join("target/fuzz/seeds");
    for (target, seeds) in fixture_seeds(&root, args.max_len)? {
        write_seeds(&seeds_dir.join(target), &seeds)?;
        println!("fuzz: {target}: {} seeds from fixtures/", seeds.len());
    }
    let binaries = root
        .join("target/fuzz")
        .join(host_triple()?)
        .join("release");
    let mut outcomes = Vec::new();
    for target in args.selected() {
        outcomes.push(run_target(&root, &binaries.join(target), target, args)?);
    }
    println!("fuzz: summary ({} s per target):", args.seconds);
    for outcome in &outcomes {
        println!("fuzz:   {}", report_line(&root, outcome));
    }
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| !o.findings.is_empty() || o.exit != "ok")
        .map(|o| o.target)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "fuzz: findings or failed runs in {}; reproduce with {}/<target> <artifact>",
            failed.join(", "),
            rel_path(&root, &binaries)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end of a real run (libFuzzer 0.4.13, `-print_final_stats=1`).
    const CLEAN_RUN: &str = "\
INFO: Running with entropic power schedule (0xFF, 100).
INFO: Seed: 1234
#2\tINITED cov: 20 ft: 21 corp: 1/1b exec/s: 0 rss: 30Mb
#4096\tpulse  cov: 812 ft: 2301 corp: 140/9834b lim: 43 exec/s: 2048 rss: 48Mb
#181406\tDONE   cov: 1024 ft: 4410 corp: 362/31Kb lim: 4096 exec/s: 18140 rss: 61Mb
Done 181406 runs in 11 second(s)
stat::number_of_executed_units: 181406
stat::average_exec_per_sec:     16491
stat::new_units_added:          361
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              61
";

    const CRASH_RUN: &str = "\
#1024\tNEW    cov: 300 ft: 500 corp: 50/2000b lim: 20 exec/s: 0 rss: 40Mb L: 12/20 MS: 1 ChangeBit-
thread '<unnamed>' panicked at src/targets.rs:40:5:
chunking changed the decoded events
==12345== ERROR: libFuzzer: deadly signal
MS: 2 InsertByte-ChangeBit-; base unit: 0123
artifact_prefix='/w/target/fuzz/artifacts/sse_accumulate/'; Test unit written to /w/target/fuzz/artifacts/sse_accumulate/crash-da39a3ee
Base64: AAEC
stat::number_of_executed_units: 1077
stat::peak_rss_mb:              40
";

    #[test]
    fn clean_run_output_parses() {
        let stats = parse_output(CLEAN_RUN);
        assert_eq!(stats.executions, Some(181_406));
        assert_eq!(stats.peak_rss_mb, Some(61));
        assert_eq!(stats.corpus_units, Some(362));
        assert!(stats.artifacts.is_empty());
        assert_eq!(stats.error, None);
    }

    #[test]
    fn crash_output_parses() {
        let stats = parse_output(CRASH_RUN);
        assert_eq!(stats.executions, Some(1077));
        assert_eq!(
            stats.artifacts,
            ["/w/target/fuzz/artifacts/sse_accumulate/crash-da39a3ee"]
        );
        assert_eq!(
            stats.error.as_deref(),
            Some("ERROR: libFuzzer: deadly signal")
        );
    }

    #[test]
    fn done_line_counts_without_final_stats() {
        let stats =
            parse_output("#77\tDONE   cov: 1 ft: 1 corp: 3/9b lim: 4 exec/s: 7 rss: 30Mb\n");
        assert_eq!(stats.executions, Some(77));
        assert_eq!(stats.corpus_units, Some(3));
        assert_eq!(parse_output("garbage\n#x DONE\n"), RunStats::default());
    }

    #[test]
    fn findings_are_crashes_ooms_timeouts_and_leaks() {
        for name in ["crash-1", "oom-2", "timeout-3", "leak-4"] {
            assert!(is_finding(name), "{name}");
        }
        assert!(!is_finding("slow-unit-5"));
        assert!(!is_finding("README"));
    }

    #[test]
    fn libfuzzer_gets_the_bounds() {
        let args = FuzzArgs {
            seconds: 7,
            targets: vec![],
            max_len: 100,
            rss_limit_mb: 512,
            timeout: 3,
            seed: Some(9),
        };
        let got: Vec<String> = libfuzzer_args(
            &args,
            Path::new("a/x"),
            &[PathBuf::from("c"), PathBuf::from("s")],
        )
        .into_iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
        assert_eq!(
            got,
            [
                "-max_total_time=7",
                "-max_len=100",
                "-rss_limit_mb=512",
                "-timeout=3",
                "-print_final_stats=1",
                "-seed=9",
                "-artifact_prefix=a/x/",
                "c",
                "s",
            ]
        );
    }

    #[test]
    fn selected_targets_keep_the_run_order() {
        let mut args = FuzzArgs {
            seconds: 1,
            targets: vec![],
            max_len: DEFAULT_MAX_LEN,
            rss_limit_mb: DEFAULT_RSS_LIMIT_MB,
            timeout: DEFAULT_TIMEOUT_SECS,
            seed: None,
        };
        assert_eq!(args.selected(), TARGETS);
        args.targets = vec!["claude_code_import".into(), "sse_accumulate".into()];
        assert_eq!(args.selected(), ["sse_accumulate", "claude_code_import"]);
    }

    #[test]
    fn transcripts_split_between_lines() {
        let text = "aaaa\nbbbb\ncccccccccc\nd\n";
        assert_eq!(
            split_lines(text, 10),
            ["aaaa\nbbbb\n", "cccccccccc\n", "d\n"]
        );
        assert_eq!(split_lines("", 10), Vec::<String>::new());
        assert_eq!(split_lines("no newline", 4), ["no newline"]);
    }

    #[test]
    fn fixtures_give_seeds_for_every_generated_corpus() {
        let seeds = fixture_seeds(&repo_root(), DEFAULT_MAX_LEN).expect("fixtures read");
        for (target, seeds) in &seeds {
            assert!(!seeds.is_empty(), "no seeds for {target}");
            assert!(TARGETS.contains(target));
        }
        let transcripts = &seeds
            .iter()
            .find(|(t, _)| *t == "claude_code_import")
            .expect("transcripts")
            .1;
        assert!(
            transcripts
                .iter()
                .all(|(_, b)| b.len() <= DEFAULT_MAX_LEN || !b[..b.len() - 1].contains(&b'\n'))
        );
    }

    #[test]
    fn committed_seeds_exist_for_the_target_without_fixtures() {
        let dir = repo_root().join("fuzz/seeds/transcript_jsonl");
        assert!(!list_files(&dir).is_empty(), "{} is empty", dir.display());
    }
}
