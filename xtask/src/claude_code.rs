//! The real Claude Code against `threadline mock` (issue 28); step 13 of `cargo xtask ci`.
//!
//! * `cargo xtask claude-code-install` installs Claude Code 2.1.328, pinned, into
//!   `target/claude-code/` (`scripts/install-claude-code.sh`: `npm ci --ignore-scripts` of
//!   `xtask/claude-code/package-lock.json`, which holds only
//!   `@anthropic-ai/claude-code-linux-x64` 2.1.328 with its integrity: a self-contained native
//!   binary of 373 MB, 172 MB to download from the npm registry). Idempotent (a stamp of the
//!   lock's hash). With `THREADLINE_CLAUDE_CODE` set, that binary is used instead and nothing
//!   is installed (its `--version` must still be 2.1.328).
//! * `cargo xtask claude-code [--scenario NAME]… [--report-only]` installs it, builds
//!   `threadline`, and runs each scenario of [`SCENARIOS`] (tools and `--resume`, `/compact`
//!   on two models, autocompact mid-turn, a subagent, thinking with parallel calls and a
//!   failing Edit, a 340 KB tool output, one prompt per model): its own `threadline mock` on
//!   loopback (`--record-log`), a fresh `HOME`, `TMPDIR` and workspace (a git repository of
//!   its own), and Claude Code in print mode (`-p PROMPT --output-format stream-json
//!   --verbose --dangerously-skip-permissions`, then `--resume SESSION` for the later
//!   prompts), offline: `ANTHROPIC_BASE_URL` is the mock, the key a dummy, autoupdate,
//!   telemetry, error reporting and nonessential traffic off, plus the scenario's own
//!   variables. The record log, the transcripts (`home/.claude/projects/…`, subagents'
//!   included), Claude Code's stream output and each body are kept under
//!   `target/claude-code-runs/<scenario>/`. Then every body the mock read is checked with
//!   `threadline check --beta <its anthropic-beta>`, each transcript is measured against the
//!   bodies it claims ([`split_bodies`]; `cc_fidelity`, informative only) and a summary is
//!   printed and written to `target/claude-code-runs/summary.json`: requests sent, answered
//!   2xx, refused (with the mock's words), violations, warnings, Claude Code's exit codes. It
//!   fails when a request was not answered 2xx (refused by the mock, or another non-2xx), a
//!   body has a violation, a Claude Code run did not exit 0, or nothing was sent, unless
//!   `--report-only`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cc_fidelity::{self, Fidelity};
use crate::util::{Context as _, Failure, XResult, read_text, run_cargo, write_file};

/// The install script, relative to the repository root.
pub(crate) const SCRIPT: &str = "scripts/install-claude-code.sh";

/// The pinned version; `claude --version` must start with it.
pub(crate) const VERSION: &str = "2.1.328";

/// Where the install script puts the binary, relative to the repository root.
pub(crate) const BINARY: &str =
    "target/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude";

/// Where the runs are kept, relative to the repository root.
pub(crate) const RUNS: &str = "target/claude-code-runs";

/// The share of requests (in %) whose `messages` the import must reproduce.
const FIDELITY_PERCENT: usize = 95;

/// The longest one Claude Code invocation may take.
const INVOCATION_TIMEOUT: Duration = Duration::from_secs(180);

/// The variable naming a Claude Code binary to use instead of installing one.
pub(crate) const BINARY_ENV: &str = "THREADLINE_CLAUDE_CODE";

/// Runs the install script and returns the binary's path (or returns `$THREADLINE_CLAUDE_CODE`
/// when set, installing nothing).
pub(crate) fn install(root: &Path) -> XResult<PathBuf> {
    if let Some(path) = std::env::var_os(BINARY_ENV).filter(|p| !p.is_empty()) {
        println!(
            "claude-code: using ${BINARY_ENV} = {}",
            PathBuf::from(&path).display()
        );
        return Ok(PathBuf::from(path));
    }
    println!("claude-code: $ {SCRIPT}");
    let status = Command::new("bash")
        .arg(root.join(SCRIPT))
        .current_dir(root)
        .status()
        .map_err(|e| Failure::new(format!("claude-code: cannot run {SCRIPT}: {e}")))?;
    if !status.success() {
        return Err(Failure::new(format!(
            "claude-code: {SCRIPT} failed ({status}); it needs a linux-x64 machine and npm with access to the npm registry (or its cache)"
        )));
    }
    Ok(root.join(BINARY))
}

/// `cargo xtask claude-code-install`.
pub(crate) fn run_install(root: &Path) -> XResult<()> {
    install(root).map(|_| ())
}

/// Arguments of `cargo xtask claude-code`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct HarnessArgs {
    /// Run only this scenario (repeatable; default: all of them).
    #[arg(long = "scenario", value_name = "NAME")]
    pub(crate) scenarios: Vec<String>,
    /// Print the summary and succeed even when requests were refused or bodies have
    /// violations.
    #[arg(long)]
    pub(crate) report_only: bool,
}

/// One Claude Code invocation of a scenario.
#[derive(Debug, Clone, Copy)]
struct Invocation {
    /// A short name for its files.
    label: &'static str,
    /// The `-p` prompt.
    prompt: &'static str,
    /// Resume the scenario's session (the one the first invocation started).
    resume: bool,
    /// `--model` (Claude Code's default otherwise).
    model: Option<&'static str>,
}

/// A scenario: the mock's steps (YAML, `{WORKSPACE}` replaced by the workspace's path), the
/// workspace's files, the environment variables Claude Code gets beyond the common ones, and
/// the invocations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScenarioDef {
    pub(crate) name: &'static str,
    about: &'static str,
    steps: &'static str,
    files: &'static [(&'static str, &'static str)],
    env: &'static [(&'static str, &'static str)],
    invocations: &'static [Invocation],
}

/// The mock's steps of the compaction scenarios: a Read call and its answer, the summary,
/// the answer after the compaction.
const COMPACT_STEPS: &str = r#"steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_tl_read_2, name: Read, input: {file_path: "{WORKSPACE}/notes.txt"}}
  - kind: message
    content: [{type: text, text: "The notes list alpha, beta and gamma."}]
  - kind: message
    content: [{type: text, text: "<analysis>Short.</analysis>\n<summary>The user asked what notes.txt lists: alpha, beta and gamma.</summary>"}]
  - kind: message
    content: [{type: text, text: "After the compaction: alpha, beta and gamma."}]
"#;

/// The scenarios, in the order they run.
pub(crate) const SCENARIOS: &[ScenarioDef] = &[
    ScenarioDef {
        name: "tools",
        about: "a Read and a Bash call, then --resume with a second prompt",
        steps: r#"steps:
  - kind: message
    content:
      - {type: text, text: "I will read the notes first."}
      - {type: tool_use, id: toolu_tl_read_1, name: Read, input: {file_path: "{WORKSPACE}/notes.txt"}}
  - kind: message
    content:
      - {type: tool_use, id: toolu_tl_bash_1, name: Bash, input: {command: "wc -l notes.txt && echo bash-ran", description: "Count the lines of notes.txt"}}
  - kind: message
    content: [{type: text, text: "The notes have three lines and the shell agrees."}]
  - kind: message
    content: [{type: text, text: "Resumed: still three lines."}]
"#,
        files: &[("notes.txt", "alpha\nbeta\ngamma\n")],
        env: &[],
        invocations: &[
            Invocation {
                label: "first",
                prompt: "Read notes.txt and count its lines with Bash.",
                resume: false,
                model: None,
            },
            Invocation {
                label: "resume",
                prompt: "How many lines again?",
                resume: true,
                model: None,
            },
        ],
    },
    ScenarioDef {
        name: "compact",
        about: "a Read call, /compact, then --resume",
        steps: COMPACT_STEPS,
        files: &[("notes.txt", "alpha\nbeta\ngamma\n")],
        env: &[],
        invocations: &[
            Invocation {
                label: "first",
                prompt: "What does notes.txt list?",
                resume: false,
                model: None,
            },
            Invocation {
                label: "compact",
                prompt: "/compact",
                resume: true,
                model: None,
            },
            Invocation {
                label: "after-compact",
                prompt: "And after the compaction?",
                resume: true,
                model: None,
            },
        ],
    },
    ScenarioDef {
        name: "compact-opus-4-8",
        about: "the same on claude-opus-4-8, which gets no message-level output_config",
        steps: COMPACT_STEPS,
        files: &[("notes.txt", "alpha\nbeta\ngamma\n")],
        env: &[],
        invocations: &[
            Invocation {
                label: "first",
                prompt: "What does notes.txt list?",
                resume: false,
                model: Some("claude-opus-4-8"),
            },
            Invocation {
                label: "compact",
                prompt: "/compact",
                resume: true,
                model: Some("claude-opus-4-8"),
            },
            Invocation {
                label: "after-compact",
                prompt: "And after the compaction?",
                resume: true,
                model: Some("claude-opus-4-8"),
            },
        ],
    },
    ScenarioDef {
        name: "autocompact",
        about: "a Bash call whose output crosses a small autocompact threshold: Claude Code compacts mid-turn and goes on",
        steps: r#"steps:
  - kind: message
    content:
      - {type: text, text: "I will print them."}
      - {type: tool_use, id: toolu_tl_bash_auto, name: Bash, input: {command: "seq 100000 104000", description: "Print the numbers"}}
  - kind: message
    content:
      - {type: tool_use, id: toolu_tl_bash_auto_2, name: Bash, input: {command: "echo done", description: "Say done"}}
  - kind: message
    content: [{type: text, text: "<analysis>Short.</analysis>\n<summary>The user asked for the numbers from 100000 to 104000; seq printed them.</summary>"}]
  - kind: message
    content: [{type: text, text: "The last number is 104000."}]
"#,
        files: &[],
        env: &[
            ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "100000"),
            ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "20"),
        ],
        invocations: &[Invocation {
            label: "first",
            prompt: "Print the numbers from 100000 to 104000 with seq and tell me the last one.",
            resume: false,
            model: None,
        }],
    },
    ScenarioDef {
        name: "subagent",
        about: "an Agent call: Claude Code runs a general-purpose subagent (a Bash call) against the mock, then answers",
        steps: r#"steps:
  - kind: message
    content:
      - {type: text, text: "I will ask a subagent."}
      - {type: tool_use, id: toolu_tl_agent_1, name: Agent, input: {description: "Count the lines", prompt: "[tl-subagent] Count the lines of notes.txt with Bash and report the number.", subagent_type: general-purpose, run_in_background: false}}
  - kind: message
    content: [{type: text, text: "The subagent counted three lines."}]
routes:
  - marker: "[tl-subagent]"
    steps:
      - kind: message
        content:
          - {type: tool_use, id: toolu_tl_sub_bash_1, name: Bash, input: {command: "wc -l notes.txt", description: "Count the lines"}}
      - kind: message
        content: [{type: text, text: "notes.txt has 3 lines."}]
"#,
        files: &[("notes.txt", "alpha\nbeta\ngamma\n")],
        env: &[],
        invocations: &[Invocation {
            label: "first",
            prompt: "Ask a subagent to count the lines of notes.txt.",
            resume: false,
            model: None,
        }],
    },
    ScenarioDef {
        name: "thinking-parallel",
        about: "thinking, then a Read and an Edit in one turn; the Edit fails (its old_string is not in the file)",
        steps: r#"steps:
  - kind: message
    content:
      - {type: thinking, thinking: "I should read the notes and fix the typo at the same time.", signature: "dGwtbW9jay10aGlua2luZy1zaWduYXR1cmUtMQ=="}
      - {type: text, text: "Reading and editing at once."}
      - {type: tool_use, id: toolu_tl_par_read, name: Read, input: {file_path: "{WORKSPACE}/notes.txt"}}
      - {type: tool_use, id: toolu_tl_par_edit, name: Edit, input: {file_path: "{WORKSPACE}/notes.txt", old_string: "delta", new_string: "DELTA"}}
  - kind: message
    content:
      - {type: thinking, thinking: "The edit failed: there is no delta in the file.", signature: "dGwtbW9jay10aGlua2luZy1zaWduYXR1cmUtMg=="}
      - {type: text, text: "There is no delta in notes.txt, so nothing was changed."}
"#,
        files: &[("notes.txt", "alpha\nbeta\ngamma\n")],
        env: &[],
        invocations: &[Invocation {
            label: "first",
            prompt: "Read notes.txt and replace delta by DELTA in it.",
            resume: false,
            model: None,
        }],
    },
    ScenarioDef {
        name: "big-output",
        about: "a Bash call printing about 340 KB",
        steps: r#"steps:
  - kind: message
    content:
      - {type: tool_use, id: toolu_tl_big_bash, name: Bash, input: {command: "seq 100000 148000", description: "Print many numbers"}}
  - kind: message
    content: [{type: text, text: "It printed 48001 numbers."}]
"#,
        files: &[],
        env: &[],
        invocations: &[Invocation {
            label: "first",
            prompt: "Print the numbers from 100000 to 148000 with seq.",
            resume: false,
            model: None,
        }],
    },
    ScenarioDef {
        name: "models",
        about: "one prompt on each model Claude Code names by default or by alias, and on older ones",
        steps: r#"steps:
  - kind: message
    content: [{type: text, text: "Hello from the mock."}]
repeat_last: true
"#,
        files: &[],
        env: &[],
        invocations: &[
            model_invocation("default", None),
            model_invocation("opus", Some("opus")),
            model_invocation("sonnet", Some("sonnet")),
            model_invocation("haiku", Some("haiku")),
            model_invocation("fable-5-1", Some("claude-fable-5-1")),
            model_invocation("opus-4-8", Some("claude-opus-4-8")),
            model_invocation("sonnet-4-5", Some("claude-sonnet-4-5")),
            model_invocation("haiku-4-5", Some("claude-haiku-4-5")),
        ],
    },
];

/// A fresh session saying hello to `model`.
const fn model_invocation(label: &'static str, model: Option<&'static str>) -> Invocation {
    Invocation {
        label,
        prompt: "Say hello.",
        resume: false,
        model,
    }
}

/// What one invocation printed and how it ended.
#[derive(Debug, Clone, PartialEq)]
struct InvocationOutcome {
    label: String,
    exit: Option<i32>,
    session: Option<String>,
    /// The `result` line's `is_error`, `api_error_status` and `result` text.
    is_error: Option<bool>,
    api_error_status: Option<u64>,
    result: Option<String>,
}

/// The session id and the `result` line of a `--output-format stream-json` output.
fn read_stream(label: &str, exit: Option<i32>, stream: &str) -> InvocationOutcome {
    let mut outcome = InvocationOutcome {
        label: label.to_owned(),
        exit,
        session: None,
        is_error: None,
        api_error_status: None,
        result: None,
    };
    for line in stream.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if outcome.session.is_none()
            && let Some(id) = value["session_id"].as_str()
        {
            outcome.session = Some(id.to_owned());
        }
        if value["type"] == "result" {
            outcome.is_error = value["is_error"].as_bool();
            outcome.api_error_status = value["api_error_status"].as_u64();
            outcome.result = value["result"].as_str().map(str::to_owned);
        }
    }
    outcome
}

/// One line of the mock's record log, as far as the summary needs it.
#[derive(Debug, Clone, PartialEq)]
struct Logged {
    seq: u64,
    path: String,
    status: Option<u64>,
    refused: Option<String>,
    beta: Option<String>,
    body: Option<String>,
}

/// The lines of a record log (the `log_full` marker and unreadable lines left out).
fn read_log(text: &str) -> Vec<Logged> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v.get("log_full").is_none())
        .map(|v| Logged {
            seq: v["seq"].as_u64().unwrap_or_default(),
            path: v["path"].as_str().unwrap_or_default().to_owned(),
            status: v["status"].as_u64(),
            refused: v["refused"].as_str().map(str::to_owned),
            beta: v["anthropic_beta"].as_str().map(str::to_owned),
            body: v["body"].as_str().map(str::to_owned),
        })
        .collect()
}

/// What `threadline check` said about one body: violations (stdout) and warnings (stderr).
#[derive(Debug, Clone, Default, PartialEq)]
struct Checked {
    violations: Vec<String>,
    warnings: Vec<String>,
}

/// `threadline check`'s output read back: each stdout line is a violation, each stderr line
/// starting `threadline: warning: ` a warning.
fn read_check(stdout: &str, stderr: &str) -> Checked {
    Checked {
        violations: stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        warnings: stderr
            .lines()
            .filter_map(|l| l.strip_prefix("threadline: warning: "))
            .map(str::to_owned)
            .collect(),
    }
}

/// The figures of one scenario (or of all of them).
#[derive(Debug, Clone, Default, PartialEq)]
struct Tally {
    requests: usize,
    answered_2xx: usize,
    /// Refusal message → count.
    refused: BTreeMap<String, usize>,
    /// Other non-2xx answers (scripted errors, cut connections): status → count.
    other: BTreeMap<String, usize>,
    /// Violation text → count, over every body checked.
    violations: BTreeMap<String, usize>,
    /// Warning text → count.
    warnings: BTreeMap<String, usize>,
    bodies_checked: usize,
}

impl Tally {
    fn add_request(&mut self, logged: &Logged) {
        self.requests += 1;
        match (logged.status, &logged.refused) {
            (Some(200..=299), _) => self.answered_2xx += 1,
            (_, Some(reason)) => *self.refused.entry(reason.clone()).or_default() += 1,
            (status, None) => {
                let key = status.map_or_else(|| "no answer".to_owned(), |s| s.to_string());
                *self.other.entry(key).or_default() += 1;
            }
        }
    }

    fn add_check(&mut self, checked: &Checked) {
        self.bodies_checked += 1;
        for v in &checked.violations {
            *self.violations.entry(v.clone()).or_default() += 1;
        }
        for w in &checked.warnings {
            *self.warnings.entry(w.clone()).or_default() += 1;
        }
    }

    fn merge(&mut self, other: &Tally) {
        self.requests += other.requests;
        self.answered_2xx += other.answered_2xx;
        self.bodies_checked += other.bodies_checked;
        for (into, from) in [
            (&mut self.refused, &other.refused),
            (&mut self.other, &other.other),
            (&mut self.violations, &other.violations),
            (&mut self.warnings, &other.warnings),
        ] {
            for (k, n) in from {
                *into.entry(k.clone()).or_default() += n;
            }
        }
    }

    fn refused_count(&self) -> usize {
        self.refused.values().sum()
    }

    fn violation_count(&self) -> usize {
        self.violations.values().sum()
    }

    /// The summary lines, indented by `indent`.
    fn lines(&self, indent: &str) -> Vec<String> {
        let mut out = vec![
            format!(
                "{indent}requests sent: {}, answered 2xx: {}, refused: {}, other non-2xx: {}",
                self.requests,
                self.answered_2xx,
                self.refused_count(),
                self.other.values().sum::<usize>()
            ),
            format!(
                "{indent}bodies checked: {}, violations: {}, warnings: {}",
                self.bodies_checked,
                self.violation_count(),
                self.warnings.values().sum::<usize>()
            ),
        ];
        let listed = [
            ("refused", &self.refused),
            ("non-2xx", &self.other),
            ("violation", &self.violations),
            ("warning", &self.warnings),
        ];
        for (what, map) in listed {
            for (text, n) in map {
                out.push(format!("{indent}  {what} x{n}: {text}"));
            }
        }
        out
    }

    fn to_json(&self) -> Value {
        json!({
            "requests": self.requests,
            "answered_2xx": self.answered_2xx,
            "refused": self.refused,
            "other_non_2xx": self.other,
            "bodies_checked": self.bodies_checked,
            "violations": self.violations,
            "warnings": self.warnings,
        })
    }
}

/// `cargo xtask claude-code`.
pub(crate) fn run(root: &Path, args: &HarnessArgs) -> XResult<()> {
    let chosen: Vec<&ScenarioDef> = if args.scenarios.is_empty() {
        SCENARIOS.iter().collect()
    } else {
        args.scenarios
            .iter()
            .map(|name| {
                SCENARIOS.iter().find(|s| s.name == name).ok_or_else(|| {
                    let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
                    Failure::new(format!(
                        "claude-code: no scenario `{name}` (there are: {})",
                        names.join(", ")
                    ))
                })
            })
            .collect::<XResult<_>>()?
    };
    let claude = install(root)?;
    let version = Command::new(&claude)
        .arg("--version")
        .output()
        .context(|| format!("claude-code: cannot run {}", claude.display()))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    if !version.starts_with(VERSION) {
        return Err(Failure::new(format!(
            "claude-code: {} says `{version}`, not {VERSION}",
            claude.display()
        )));
    }
    run_cargo(
        "claude-code",
        root,
        &["build", "-p", "threadline-cli", "--bin", "threadline"],
        &[],
    )?;
    let threadline = root.join("target/debug/threadline");
    let runs = root.join(RUNS);
    let mut total = Tally::default();
    let mut total_fidelity = Fidelity::default();
    let mut report = serde_json::Map::new();
    let mut failed_invocations: Vec<String> = Vec::new();
    let all_started = Instant::now();
    for scenario in chosen {
        let started = Instant::now();
        let dir = runs.join(scenario.name);
        let (tally, outcomes, fidelity, counts) =
            run_scenario(scenario, &claude, &threadline, &dir)?;
        println!(
            "claude-code: scenario `{}` ({}), {:.1} s, kept in {}",
            scenario.name,
            scenario.about,
            started.elapsed().as_secs_f64(),
            crate::util::rel_path(root, &dir)
        );
        for o in &outcomes {
            println!(
                "  claude {}: exit {}, session {}, {}",
                o.label,
                o.exit
                    .map_or_else(|| "killed".to_owned(), |c| c.to_string()),
                o.session.as_deref().unwrap_or("?"),
                match (&o.is_error, &o.result) {
                    (Some(true), Some(text)) => format!("error: {}", one_line(text)),
                    (_, Some(text)) => format!("result: {}", one_line(text)),
                    _ => "no result line".to_owned(),
                }
            );
        }
        for line in tally.lines("  ") {
            println!("{line}");
        }
        println!(
            "  transcripts: {} main, {} subagent; bodies no transcript claimed: {}",
            counts.main,
            counts.subagent,
            if counts.unclaimed.is_empty() {
                "none".to_owned()
            } else {
                format!("{:?}", counts.unclaimed)
            }
        );
        for line in fidelity.lines("  ") {
            println!("{line}");
        }
        failed_invocations.extend(
            outcomes
                .iter()
                .filter(|o| o.exit != Some(0))
                .map(|o| format!("{}/{}", scenario.name, o.label)),
        );
        report.insert(
            scenario.name.to_owned(),
            json!({
                "invocations": outcomes.iter().map(|o| json!({
                    "label": o.label, "exit": o.exit, "session": o.session,
                    "is_error": o.is_error, "api_error_status": o.api_error_status,
                    "result": o.result,
                })).collect::<Vec<_>>(),
                "tally": tally.to_json(),
                "transcripts": {"main": counts.main, "subagent": counts.subagent,
                                "unclaimed_bodies": counts.unclaimed},
                "fidelity": fidelity.to_json(),
            }),
        );
        total.merge(&tally);
        total_fidelity.merge(&fidelity);
    }
    println!(
        "claude-code: Claude Code {version}, all scenarios ({:.1} s):",
        all_started.elapsed().as_secs_f64()
    );
    for line in total.lines("  ") {
        println!("{line}");
    }
    let fidelity_line = total_fidelity.lines("  ").swap_remove(0);
    println!(
        "{fidelity_line} (the import must reproduce at least {FIDELITY_PERCENT} %, inspect break at every compaction)"
    );
    let summary = json!({
        "claude_code": version,
        "scenarios": report,
        "total": total.to_json(),
        "invocations_not_exit_0": failed_invocations,
        "fidelity": total_fidelity.to_json(),
    });
    write_file(
        &runs.join("summary.json"),
        serde_json::to_string_pretty(&summary)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    println!(
        "  claude invocations that did not exit 0: {}",
        if failed_invocations.is_empty() {
            "none".to_owned()
        } else {
            failed_invocations.join(", ")
        }
    );
    let passed = total.refused_count() == 0
        && total.violation_count() == 0
        && total.requests > 0
        && total.answered_2xx == total.requests
        && failed_invocations.is_empty()
        && total_fidelity.meets(FIDELITY_PERCENT);
    if args.report_only || passed {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "claude-code: {} request(s) of {} answered 2xx ({} refused by the mock), {} violation(s) found by check, {} Claude Code invocation(s) that did not exit 0, import reproduced {} of {} request(s) ({} unpaired; at least {FIDELITY_PERCENT} % needed) (see above; --report-only to only report)",
            total.answered_2xx,
            total.requests,
            total.refused_count(),
            total.violation_count(),
            failed_invocations.len(),
            total_fidelity.import_same,
            total_fidelity.requests,
            total_fidelity.unpaired,
        )))
    }
}

/// `text` on one line, at most 160 characters.
pub(crate) fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(160) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// A running `threadline mock`, stopped when dropped.
struct Mock {
    child: Child,
    base_url: String,
}

impl Mock {
    fn start(threadline: &Path, scenario: &Path, log: &Path, stderr: &Path) -> XResult<Mock> {
        let stderr = std::fs::File::create(stderr)
            .context(|| format!("claude-code: cannot create {}", stderr.display()))?;
        let mut child = Command::new(threadline)
            .args(["mock", "--addr", "127.0.0.1:0", "--scenario"])
            .arg(scenario)
            .arg("--record-log")
            .arg(log)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .context(|| format!("claude-code: cannot start {} mock", threadline.display()))?;
        let mut first = String::new();
        if let Some(stdout) = child.stdout.take() {
            // The first line, flushed once the port is bound: `listening on http://ADDR`.
            let _ = BufReader::new(stdout).read_line(&mut first);
        }
        match first.trim().strip_prefix("listening on ") {
            Some(url) => Ok(Mock {
                child,
                base_url: url.to_owned(),
            }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(Failure::new(format!(
                    "claude-code: the mock did not say where it listens (first line: {first:?})"
                )))
            }
        }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs one scenario in `dir` (emptied first) and tallies what the mock logged.
fn run_scenario(
    scenario: &ScenarioDef,
    claude: &Path,
    threadline: &Path,
    dir: &Path,
) -> XResult<(Tally, Vec<InvocationOutcome>, Fidelity, TranscriptCounts)> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).context(|| format!("cannot empty {}", dir.display()))?;
    }
    let home = dir.join("home");
    let workspace = dir.join("workspace");
    let tmp = dir.join("tmp");
    for d in [&home, &workspace, &tmp, &dir.join("bodies")] {
        std::fs::create_dir_all(d).context(|| format!("cannot create {}", d.display()))?;
    }
    for (name, contents) in scenario.files {
        write_file(&workspace.join(name), contents.as_bytes())?;
    }
    // A repository of its own: the workspace lies inside this repository's checkout, whose
    // git status Claude Code would otherwise read into its requests (and whose main checkout
    // it would name a memory directory after).
    git_init(&workspace, &home)?;
    let steps = scenario
        .steps
        .replace("{WORKSPACE}", &workspace.to_string_lossy());
    let scenario_file = dir.join("scenario.yaml");
    write_file(&scenario_file, steps.as_bytes())?;
    let log = dir.join("requests.jsonl");
    let mock = Mock::start(threadline, &scenario_file, &log, &dir.join("mock.stderr"))?;

    let mut outcomes: Vec<InvocationOutcome> = Vec::new();
    for (n, invocation) in scenario.invocations.iter().enumerate() {
        let session = outcomes.first().and_then(|o| o.session.clone());
        let mut command = Command::new(claude);
        command
            .args(["-p", invocation.prompt])
            .args(["--output-format", "stream-json", "--verbose"])
            .arg("--dangerously-skip-permissions");
        if let Some(model) = invocation.model {
            command.args(["--model", model]);
        }
        if invocation.resume {
            let Some(session) = session else {
                return Err(Failure::new(format!(
                    "claude-code: scenario `{}`: no session to resume (the first invocation printed no session id)",
                    scenario.name
                )));
            };
            command.args(["--resume", &session]);
        }
        offline(&mut command, &workspace, &home, &tmp, &mock.base_url);
        command.envs(scenario.env.iter().copied());
        let stem = format!("{n:02}-{}", invocation.label);
        let stream_path = dir.join(format!("{stem}.stream.jsonl"));
        let exit = run_with_timeout(
            command,
            &stream_path,
            &dir.join(format!("{stem}.stderr")),
            INVOCATION_TIMEOUT,
        )?
        .code;
        let stream = read_text(&stream_path)?;
        outcomes.push(read_stream(invocation.label, exit, &stream));
    }
    drop(mock);

    let mut tally = Tally::default();
    let log_text = if log.exists() {
        read_text(&log)?
    } else {
        String::new()
    };
    let logged_lines = read_log(&log_text);
    for logged in &logged_lines {
        tally.add_request(logged);
        let Some(body) = &logged.body else { continue };
        let body_path = dir.join("bodies").join(format!("{:03}.json", logged.seq));
        write_file(&body_path, body.as_bytes())?;
        let mut check = Command::new(threadline);
        check.arg("check");
        if let Some(beta) = &logged.beta {
            check.args(["--beta", beta]);
        }
        if logged.path.ends_with("/count_tokens") {
            check.arg("--count-tokens");
        }
        let output = check
            .arg(&body_path)
            .output()
            .context(|| "claude-code: cannot run threadline check".to_owned())?;
        if output.status.code() == Some(2) {
            return Err(Failure::new(format!(
                "claude-code: threadline check could not read {}: {}",
                body_path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        tally.add_check(&read_check(
            &String::from_utf8_lossy(&output.stdout),
            &String::from_utf8_lossy(&output.stderr),
        ));
    }

    let bodies: Vec<(u64, Value)> = logged_lines
        .iter()
        .filter(|l| l.path == "/v1/messages")
        .filter_map(|l| {
            let body = serde_json::from_str(l.body.as_deref()?).ok()?;
            Some((l.seq, body))
        })
        .collect();
    let mut fidelity = Fidelity::default();
    let cuts = dir.join("cuts");
    std::fs::create_dir_all(&cuts).context(|| format!("cannot create {}", cuts.display()))?;
    let transcripts = session_transcripts(&home.join(".claude/projects"))?;
    let mut records = Vec::with_capacity(transcripts.len());
    for transcript in &transcripts {
        records.push(read_records(&read_text(transcript)?));
    }
    let split = split_bodies(&records, &bodies);
    for (transcript, own) in transcripts.iter().zip(&split.per_transcript) {
        fidelity.merge(&cc_fidelity::measure(threadline, transcript, own, &cuts)?);
    }
    let counts = TranscriptCounts {
        main: transcripts.iter().filter(|t| !is_subagent(t)).count(),
        subagent: transcripts.iter().filter(|t| is_subagent(t)).count(),
        unclaimed: split.unclaimed,
    };
    Ok((tally, outcomes, fidelity, counts))
}

/// How many transcripts a scenario left, and the bodies no transcript claimed.
#[derive(Debug, Clone, Default, PartialEq)]
struct TranscriptCounts {
    main: usize,
    subagent: usize,
    /// The seq of each body that no transcript, or more than one, claimed ([`split_bodies`]).
    unclaimed: Vec<u64>,
}

/// Whether a transcript is a subagent's (`<session>/subagents/agent-*.jsonl`).
fn is_subagent(transcript: &Path) -> bool {
    transcript
        .parent()
        .is_some_and(|p| p.file_name().is_some_and(|n| n == "subagents"))
}

/// The JSON records of a transcript (unreadable lines left out).
fn read_records(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The `shapeHash` Claude Code 2.1.328 records for the request a body is (the importer's rule:
/// `threadline_message::claude_code::body_shape_hash`).
pub(crate) use threadline_message::claude_code::body_shape_hash as shape_hash;

/// The session a body names (`metadata.user_id`, a JSON string holding `session_id`).
fn body_session(body: &Value) -> Option<String> {
    let user_id: Value = serde_json::from_str(body["metadata"]["user_id"].as_str()?).ok()?;
    user_id["session_id"].as_str().map(str::to_owned)
}

/// The bodies of a run split by transcript ([`split_bodies`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SplitBodies {
    /// Per transcript, in the order given: the `(seq, body)` pairs it claims.
    pub(crate) per_transcript: Vec<Vec<(u64, Value)>>,
    /// The seq of each body no transcript claimed, or several did.
    pub(crate) unclaimed: Vec<u64>,
}

/// Splits the bodies the mock logged among transcripts (each given as its records). A main
/// session and its subagents write to different files but send the same session id in
/// `metadata.user_id`; what tells their requests apart is the shape (system prompt and tools:
/// a subagent has its own). So a transcript claims a body when the body's session is the
/// transcript's `sessionId` and the body's [`shape_hash`] is one its `api-request-shape` or
/// `api-request` records name. A compaction summary request has its session's shape, so it
/// goes with its session. A body claimed by no transcript (a refused request Claude Code left
/// no record of) or by several (a subagent with its parent's exact prompt and tools) is left
/// out and listed in [`SplitBodies::unclaimed`].
pub(crate) fn split_bodies(transcripts: &[Vec<Value>], bodies: &[(u64, Value)]) -> SplitBodies {
    let claims: Vec<(Option<&str>, Vec<&str>)> = transcripts
        .iter()
        .map(|records| {
            let session = records.iter().find_map(|r| r["sessionId"].as_str());
            let shapes = records
                .iter()
                .filter(|r| r["type"] == "api-request-shape" || r["type"] == "api-request")
                .filter_map(|r| r["shapeHash"].as_str())
                .collect();
            (session, shapes)
        })
        .collect();
    let mut split = SplitBodies {
        per_transcript: vec![Vec::new(); transcripts.len()],
        unclaimed: Vec::new(),
    };
    for (seq, body) in bodies {
        let (session, shape) = (body_session(body), shape_hash(body));
        let claimed_by: Vec<usize> = claims
            .iter()
            .enumerate()
            .filter(|(_, (s, shapes))| {
                session.is_some()
                    && *s == session.as_deref()
                    && shape.as_deref().is_some_and(|h| shapes.contains(&h))
            })
            .map(|(n, _)| n)
            .collect();
        match claimed_by.as_slice() {
            [only] => split.per_transcript[*only].push((*seq, body.clone())),
            _ => split.unclaimed.push(*seq),
        }
    }
    split
}

/// The session transcripts under a Claude Code projects directory: each main session's
/// (`<project>/<session>.jsonl`), followed by its subagents'
/// (`<project>/<session>/subagents/agent-*.jsonl`), sorted.
fn session_transcripts(projects: &Path) -> XResult<Vec<PathBuf>> {
    let jsonl = |path: &Path| path.is_file() && path.extension().is_some_and(|e| e == "jsonl");
    let mut out = Vec::new();
    let Ok(projects_dir) = std::fs::read_dir(projects) else {
        return Ok(out);
    };
    for project in projects_dir.flatten() {
        let Ok(files) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if jsonl(&path) {
                out.push(path);
            } else if path.is_dir()
                && let Ok(agents) = std::fs::read_dir(path.join("subagents"))
            {
                out.extend(agents.flatten().map(|a| a.path()).filter(|p| {
                    jsonl(p)
                        && p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("agent-"))
                }));
            }
        }
    }
    // Each main session, then its subagents.
    out.sort_by_key(|p| {
        let session = match p.parent().and_then(Path::parent) {
            Some(session) if is_subagent(p) => session.to_path_buf(),
            _ => p.with_extension(""),
        };
        (session, is_subagent(p), p.clone())
    });
    Ok(out)
}

/// Makes `workspace` a git repository of its own (`HOME` is `home`, no system config).
pub(crate) fn git_init(workspace: &Path, home: &Path) -> XResult<()> {
    let git = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(workspace)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .context(|| "claude-code: cannot run git init".to_owned())?;
    if !git.success() {
        return Err(Failure::new(format!(
            "claude-code: git init in {} failed ({git})",
            workspace.display()
        )));
    }
    Ok(())
}

/// Sets `command` (Claude Code) to run in `workspace`, offline: only `PATH`, a fresh `HOME` and
/// `TMPDIR`, `ANTHROPIC_BASE_URL` = `base_url`, a dummy key, and autoupdate, telemetry,
/// error reporting and nonessential traffic off.
pub(crate) fn offline(
    command: &mut Command,
    workspace: &Path,
    home: &Path,
    tmp: &Path,
    base_url: &str,
) {
    command
        .current_dir(workspace)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("TMPDIR", tmp)
        .env("CLAUDE_CODE_TMPDIR", tmp);
    if is_root() {
        // --dangerously-skip-permissions is refused as root outside a sandbox.
        command.env("IS_SANDBOX", "1");
    }
}

/// Whether this process runs as root (Claude Code refuses
/// `--dangerously-skip-permissions` as root unless `IS_SANDBOX=1`).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `command` with stdout to `stdout` and stderr to `stderr`, killing it after `timeout`;
/// how it ended.
pub(crate) fn run_with_timeout(
    mut command: Command,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
) -> XResult<Finished> {
    let out =
        std::fs::File::create(stdout).context(|| format!("cannot create {}", stdout.display()))?;
    let err =
        std::fs::File::create(stderr).context(|| format!("cannot create {}", stderr.display()))?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .context(|| "claude-code: cannot start claude".to_owned())?;
    let deadline = Instant::now() + timeout;
    let cpu_before = children_cpu();
    let mut peak_rss_kib = None;
    loop {
        if let Some(status) = child
            .try_wait()
            .context(|| "claude-code: wait".to_owned())?
        {
            return Ok(Finished {
                code: status.code(),
                cpu: children_cpu()
                    .zip(cpu_before)
                    .map(|(after, before)| after.saturating_sub(before)),
                peak_rss_kib,
            });
        }
        peak_rss_kib = peak_rss_kib.max(high_water_mark_kib(child.id()));
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let mut tail = String::new();
            if let Ok(mut f) = std::fs::File::open(stderr) {
                let _ = f.read_to_string(&mut tail);
            }
            println!(
                "claude-code: claude ran past {} s and was killed; stderr: {}",
                timeout.as_secs(),
                one_line(&tail)
            );
            return Ok(Finished {
                code: None,
                cpu: None,
                peak_rss_kib,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How a child run by [`run_with_timeout`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finished {
    /// The exit code (`None` when killed or ended by a signal).
    pub(crate) code: Option<i32>,
    /// User plus system CPU time of the child and the children it waited for (`None` when it
    /// was killed, or off Linux).
    pub(crate) cpu: Option<Duration>,
    /// The highest resident set size seen (`VmHWM`, sampled every 50 ms; `None` off Linux).
    pub(crate) peak_rss_kib: Option<u64>,
}

/// The CPU time (user plus system) of this process's children that it has waited for
/// (`cutime` and `cstime` of `/proc/self/stat`, in clock ticks of 10 ms).
fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // `cutime` and `cstime` are fields 16 and 17 (from 1), so 13 and 14 after `state` (3).
    let ticks: u64 = fields.get(13)?.parse::<u64>().ok()? + fields.get(14)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The peak resident set size of process `pid` so far (`VmHWM` of `/proc/PID/status`).
fn high_water_mark_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_pins_only_the_linux_x64_binary_with_its_integrity() {
        let root = crate::util::repo_root();
        let lock: serde_json::Value = serde_json::from_str(
            &crate::util::read_text(&root.join("xtask/claude-code/package-lock.json"))
                .expect("lock"),
        )
        .expect("lock is JSON");
        let packages = lock["packages"].as_object().expect("packages");
        let names: Vec<&str> = packages.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["", "node_modules/@anthropic-ai/claude-code-linux-x64"]
        );
        let pkg = &packages["node_modules/@anthropic-ai/claude-code-linux-x64"];
        assert_eq!(pkg["version"], VERSION);
        assert!(
            pkg["integrity"]
                .as_str()
                .is_some_and(|i| i.starts_with("sha512-"))
        );
        assert!(pkg.get("hasInstallScript").is_none());
        assert!(BINARY.starts_with("target/claude-code/node_modules/"));
    }

    #[test]
    fn every_scenario_is_a_valid_mock_scenario_that_starts_a_session_first() {
        for scenario in SCENARIOS {
            let steps = scenario.steps.replace("{WORKSPACE}", "/tmp/ws");
            let parsed: serde_yaml::Value =
                serde_yaml::from_str(&steps).unwrap_or_else(|e| panic!("{}: {e}", scenario.name));
            let n = parsed["steps"].as_sequence().map_or(0, Vec::len);
            let repeats = parsed["repeat_last"].as_bool() == Some(true);
            assert!(
                repeats || n >= scenario.invocations.len(),
                "{}",
                scenario.name
            );
            assert!(!scenario.invocations[0].resume, "{}", scenario.name);
            assert!(!steps.contains("{WORKSPACE}"));
        }
        let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "tools",
                "compact",
                "compact-opus-4-8",
                "autocompact",
                "subagent",
                "thinking-parallel",
                "big-output",
                "models"
            ]
        );
        // `fable` is Claude Code's alias of claude-fable-5-2, which no source documents
        // (docs/claude-code-conformance.md): not asked for.
        let models = SCENARIOS
            .iter()
            .find(|s| s.name == "models")
            .expect("models");
        assert!(models.invocations.iter().all(|i| i.model != Some("fable")));
        // The subagent's requests are answered from their own route.
        let subagent = SCENARIOS
            .iter()
            .find(|s| s.name == "subagent")
            .expect("subagent");
        let parsed: serde_yaml::Value = serde_yaml::from_str(subagent.steps).expect("yaml");
        let marker = parsed["routes"][0]["marker"].as_str().expect("a route");
        assert!(subagent.steps.matches(marker).count() >= 2, "{marker}");
    }

    /// A body as Claude Code sends it: a billing line, the system prompt, tools, a session.
    fn body(session: &str, prompt: &str, tool: &str) -> Value {
        let user_id = json!({"device_id": "d", "account_uuid": "", "session_id": session});
        json!({
            "model": "claude-opus-5-5",
            "messages": [{"role": "user", "content": "hi"}],
            "system": [
                {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328.c6f;"},
                {"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}
            ],
            "tools": [{"name": tool, "input_schema": {"type": "object"}}],
            "metadata": {"user_id": user_id.to_string()},
        })
    }

    #[test]
    fn the_shape_hash_is_claude_codes_over_system_without_billing_line_and_markers() {
        let b = body("s-1", "You are Claude Code.", "Bash");
        // sha256 of {"system":[{"text":"You are Claude Code.","type":"text"}],"tools":[…]} as
        // Python's json.dumps(shape, separators=(",", ":"), sort_keys=True) writes it.
        let text = r#"{"system":[{"text":"You are Claude Code.","type":"text"}],"tools":[{"input_schema":{"type":"object"},"name":"Bash"}]}"#;
        use sha2::{Digest as _, Sha256};
        let want: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(shape_hash(&b).as_deref(), Some(want.as_str()));
        // Another billing line, or no marker: the same shape.
        let mut other = b.clone();
        other["system"][0]["text"] = json!("x-anthropic-billing-header: cc_version=2.1.328.281;");
        other["system"][1]
            .as_object_mut()
            .expect("block")
            .remove("cache_control");
        assert_eq!(shape_hash(&other), shape_hash(&b));
        assert_eq!(shape_hash(&json!({"system": "text", "tools": []})), None);
    }

    #[test]
    fn bodies_are_split_between_a_session_and_its_subagent_by_shape() {
        let main = body("s-1", "You are Claude Code.", "Agent");
        let sub = body("s-1", "You are a general-purpose agent.", "Bash");
        let other_session = body("s-2", "You are Claude Code.", "Agent");
        let shape = |b: &Value| shape_hash(b).expect("shape");
        let transcript = |session: &str, hash: String, agent: Option<&str>| {
            vec![
                json!({"type": "user", "sessionId": session}),
                json!({"type": "api-request-shape", "sessionId": session, "shapeHash": hash, "agentId": agent}),
                json!({"type": "api-request", "sessionId": session, "shapeHash": hash,
                       "querySource": if agent.is_some() { "agent:builtin:general-purpose" } else { "sdk" }}),
            ]
        };
        let transcripts = [
            transcript("s-1", shape(&main), None),
            transcript("s-1", shape(&sub), Some("a1")),
            transcript("s-2", shape(&other_session), None),
        ];
        let unknown = body("s-1", "A prompt nobody recorded.", "Bash");
        let bodies: Vec<(u64, Value)> = [&main, &sub, &sub, &main, &other_session, &unknown]
            .into_iter()
            .cloned()
            .enumerate()
            .map(|(n, b)| (n as u64, b))
            .collect();
        let split = split_bodies(&transcripts, &bodies);
        let seqs = |n: usize| -> Vec<u64> {
            split.per_transcript[n]
                .iter()
                .map(|(seq, _)| *seq)
                .collect()
        };
        assert_eq!(
            (seqs(0), seqs(1), seqs(2)),
            (vec![0, 3], vec![1, 2], vec![4])
        );
        assert_eq!(split.unclaimed, [5]);
        // Two transcripts of one session with the same shape: neither gets the body.
        let twins = [
            transcript("s-1", shape(&main), None),
            transcript("s-1", shape(&main), Some("a2")),
        ];
        let split = split_bodies(&twins, &bodies[..1]);
        assert!(split.per_transcript.iter().all(Vec::is_empty));
        assert_eq!(split.unclaimed, [0]);
    }

    #[test]
    fn session_transcripts_include_subagents_and_nothing_else() {
        let root = std::env::temp_dir().join(format!("tl-cc-transcripts-{}", std::process::id()));
        let project = root.join("-work-ws");
        let agents = project.join("s-1/subagents");
        std::fs::create_dir_all(&agents).expect("dirs");
        std::fs::create_dir_all(project.join("s-1/tool-results")).expect("dirs");
        for file in [
            project.join("s-1.jsonl"),
            agents.join("agent-a1.jsonl"),
            agents.join("agent-a1.meta.json"),
            project.join("s-1/tool-results/x.txt"),
        ] {
            std::fs::write(&file, "{}\n").expect("write");
        }
        let found = session_transcripts(&root).expect("listed");
        std::fs::remove_dir_all(&root).expect("cleaned");
        assert_eq!(
            found,
            [project.join("s-1.jsonl"), agents.join("agent-a1.jsonl")]
        );
        assert!(!is_subagent(&found[0]) && is_subagent(&found[1]));
        assert_eq!(
            session_transcripts(&root).expect("missing is empty"),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn the_stream_gives_the_session_and_the_result() {
        let stream = concat!(
            r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-opus-5-5"}"#,
            "\n",
            "not json\n",
            r#"{"type":"assistant","session_id":"s-1","message":{"content":[]}}"#,
            "\n",
            r#"{"type":"result","is_error":true,"api_error_status":400,"result":"API Error: 400 messages.1: all messages must have non-empty content","session_id":"s-1"}"#,
            "\n"
        );
        let outcome = read_stream("after-compact", Some(1), stream);
        assert_eq!(outcome.session.as_deref(), Some("s-1"));
        assert_eq!(outcome.is_error, Some(true));
        assert_eq!(outcome.api_error_status, Some(400));
        assert!(
            outcome
                .result
                .is_some_and(|r| r.starts_with("API Error: 400"))
        );
        let empty = read_stream("x", None, "");
        assert_eq!((empty.session, empty.result), (None, None));
    }

    #[test]
    fn the_log_and_the_checks_are_tallied() {
        let log = [
            json!({"seq": 0, "path": "/v1/messages", "status": 200, "refused": null,
                   "anthropic_beta": "effort-2025-11-24", "body": "{}"}),
            json!({"seq": 1, "path": "/v1/messages", "status": 400,
                   "refused": "messages.1: all messages must have non-empty content except for the optional final assistant message",
                   "anthropic_beta": null, "body": "{}"}),
            json!({"seq": 2, "path": "/v1/messages", "status": 400,
                   "refused": "messages.1: all messages must have non-empty content except for the optional final assistant message",
                   "anthropic_beta": null, "body": "{}"}),
            json!({"seq": 3, "path": "/v1/messages", "status": 429, "refused": null, "body_omitted": "not_read"}),
            json!({"seq": 4, "path": "/v1/messages", "status": null, "refused": null}),
            json!({"log_full": true, "seq": 5}),
        ]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
        let lines = read_log(&log);
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0].beta.as_deref(), Some("effort-2025-11-24"));
        assert_eq!(lines[3].body, None);
        let mut tally = Tally::default();
        for line in &lines {
            tally.add_request(line);
        }
        assert_eq!(
            (tally.requests, tally.answered_2xx, tally.refused_count()),
            (5, 1, 2)
        );
        assert_eq!(tally.other.get("429"), Some(&1));
        assert_eq!(tally.other.get("no answer"), Some(&1));

        let checked = read_check(
            "messages.1: all messages must have non-empty content except for the optional final assistant message\n",
            "threadline: warning: unknown model `x`: …\nthreadline: b.json: 1 violation\n",
        );
        assert_eq!(checked.violations.len(), 1);
        assert_eq!(checked.warnings, ["unknown model `x`: …"]);
        tally.add_check(&checked);
        tally.add_check(&read_check("", "threadline: b.json: no violations\n"));
        assert_eq!((tally.bodies_checked, tally.violation_count()), (2, 1));

        let mut total = Tally::default();
        total.merge(&tally);
        total.merge(&tally);
        assert_eq!(
            (
                total.requests,
                total.refused_count(),
                total.violation_count()
            ),
            (10, 4, 2)
        );
        let text = total.lines("").join("\n");
        assert!(
            text.contains("requests sent: 10, answered 2xx: 2, refused: 4, other non-2xx: 4"),
            "{text}"
        );
        assert!(
            text.contains("refused x4: messages.1: all messages must have non-empty content"),
            "{text}"
        );
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\n b\tc"), "a b c");
        let long = "é".repeat(200);
        assert_eq!(one_line(&long).chars().count(), 161);
    }
}
