//! `threadline demo`: an offline, multi-turn coding session with the real built-in tools in a
//! scratch copy of a small bundled project, against the embedded mock server playing a
//! scripted scenario (`demo/scenario.yaml`). It shows tools starting while the model streams,
//! a parallel batch, a 529 the client retries, an autocompact whose summary request goes to
//! the mock, and a `max_tokens` recovery, then a summary. Exit 0 when the session completed
//! and showed all of these; 1 when it did not; 2 when it could not start. With
//! `--compaction server` the mock compacts server-side instead (`demo_server`), and the
//! summary names the compaction iterations.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt as _;
use threadline::Compaction;
use threadline::attach::{SystemContext, Workspace};
use threadline::client::Client;
use threadline::compact::{ReattachOptions, TailOptions, overhead_of};
use threadline::mock::{MockServer, Scenario};
use threadline::query::{Event, Terminal, Transition};
use threadline::tools::ShellAccess;
use threadline::wire::model::ModelTable;
use threadline::wire::{MessagesRequest, StreamEvent, SystemPrompt};

use crate::agent_setup::{AgentSettings, SYSTEM_PROMPT, agent_builder, client, quick_retries};
use crate::commands::demo_server::{self, DemoCompaction};
use crate::error::CliError;
use crate::meter::{Meter, Metered, Totals};
use crate::output::print_line;
use crate::progress::{Progress, Style};

/// The bundled project: a tiny Python package whose `mean` divides by `len(xs) - 1`.
const PROJECT: [(&str, &str); 6] = [
    ("AGENTS.md", include_str!("../../demo/project/AGENTS.md")),
    ("README.md", include_str!("../../demo/project/README.md")),
    ("stats.py", include_str!("../../demo/project/stats.py")),
    (
        "test_stats.py",
        include_str!("../../demo/project/test_stats.py"),
    ),
    (
        "data/measurements.csv",
        include_str!("../../demo/project/data/measurements.csv"),
    ),
    (".gitignore", "__pycache__/\n"),
];

/// The model's side of the session.
const SCENARIO: &str = include_str!("../../demo/scenario.yaml");

/// What the user asks.
const PROMPT: &str = "The tests of textstats fail. Find the bug, fix it and run the tests.";

/// The demo's model (its prices make the cost line).
const MODEL: &str = threadline_wire::defaults::DEFAULT_MODEL;

/// The demo's context is made small so that a short session reaches the autocompact
/// threshold: the conversation (without the system prompt and tools) is about CONVERSATION
/// tokens after the parallel reads and 800 more after the README, so the summary is written
/// right after the README is read (a margin of ~400 tokens either way). The threshold is this
/// plus what the system prompt and tool definitions weigh, so longer tool descriptions do not
/// move it.
const CONVERSATION_TOKENS: u64 = 4_300;

/// A fixed date, so every run of the demo sends the same bytes.
const TODAY: &str = "2026-03-08";

/// The key the mock is sent (it checks that there is one, nothing more).
const DEMO_KEY: &str = "sk-ant-demo-offline";

/// What `threadline demo` was asked.
pub(crate) struct DemoArgs {
    /// Keep the scratch copy instead of deleting it.
    pub(crate) keep: bool,
    /// Local autocompact or server-side compaction.
    pub(crate) compaction: DemoCompaction,
    /// `--log FILE`: the spans as JSON lines.
    pub(crate) log: Option<std::path::PathBuf>,
}

pub(crate) fn run(args: &DemoArgs) -> Result<(), CliError> {
    crate::logging::init(args.log.as_deref()).map_err(|line| CliError::Rejected { line })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(DEMO, e))?;
    runtime.block_on(demo(args))
}

/// The subcommand, as error lines name it.
const DEMO: Option<&str> = Some("demo");

/// The demo: set the session up, run the scenario, report what it showed.
async fn demo(args: &DemoArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let server = args.compaction == DemoCompaction::Server;
    let setup = Setup::prepare(server).await?;
    let Setup {
        scratch,
        project,
        mock,
        meter,
        mut agent,
        steps,
        autocompact_at,
    } = setup;
    print_banner(&project, &mock, steps, server, autocompact_at);
    let progress = run_scenario(&mut agent, &mock).await;
    let seen = Seen::measure(&mock, &meter, &project, progress);
    print_summary(&seen, started);
    if args.keep {
        let kept = scratch.keep();
        print_line(&format!("  kept at           {}", kept.display()));
    }
    let missing = seen.missing(server);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CliError::Unmet {
            command: "demo",
            message: format!("the session did not show {}", missing.join(", ")),
        })
    }
}

/// The demo's agent, over the client to the mock.
type DemoAgent = threadline::Agent<Metered<Client>>;

/// Everything the session runs in: the scratch project, the mock playing the scenario, the
/// agent and the meter counting its tokens.
struct Setup {
    /// Deleted when dropped, unless `--keep`.
    scratch: tempfile::TempDir,
    /// The bundled project's copy in `scratch`.
    project: PathBuf,
    mock: MockServer,
    meter: Meter,
    agent: DemoAgent,
    /// The scenario's scripted answers.
    steps: usize,
    /// The local autocompact threshold, in tokens.
    autocompact_at: u64,
}

impl Setup {
    /// Writes the scratch project, starts the mock with the (server-compaction or local)
    /// scenario and builds the agent. Every failure is "could not start" (exit code 2).
    async fn prepare(server: bool) -> Result<Setup, CliError> {
        let scratch = tempfile::Builder::new()
            .prefix("threadline-demo-")
            .tempdir()
            .map_err(|e| CliError::start(DEMO, "cannot create a scratch directory", e))?;
        let project = scratch.path().join("textstats");
        copy_project(&project).map_err(|e| {
            CliError::start(
                DEMO,
                format!("cannot write the project to {}", project.display()),
                e,
            )
        })?;
        if server {
            demo_server::write_archives(&project)
                .map_err(|e| CliError::start(DEMO, "cannot write the archived files", e))?;
        }
        let scenario = scenario(server)?;
        let steps = scenario.steps.len();
        let mock = MockServer::start(scenario)
            .await
            .map_err(|e| CliError::start(DEMO, "cannot start the mock server on loopback", e))?;
        let client = client(&mock.base_url(), DEMO_KEY, Some(quick_retries()), None)
            .map_err(|line| CliError::start_line(DEMO, line))?;
        let meter = Meter::default();
        let autocompact_at = overhead(&project)? + CONVERSATION_TOKENS;
        let agent = agent_builder(
            client,
            &meter,
            AgentSettings {
                workspace: &project,
                model: MODEL,
                max_tokens: 1_024,
                shell: ShellAccess::Allow,
                compaction: compaction(autocompact_at, server),
                today: Some(TODAY),
            },
        )
        .escalated_max_tokens(4_096)
        .build()
        .map_err(|source| CliError::Agent {
            command: "demo",
            source,
        })?;
        Ok(Setup {
            scratch,
            project,
            mock,
            meter,
            agent,
            steps,
            autocompact_at,
        })
    }
}

/// The bundled scenario; with server-side compaction, its summary step replaced.
fn scenario(server: bool) -> Result<Scenario, CliError> {
    let scenario: Scenario = serde_yaml::from_str(SCENARIO)
        .map_err(|e| CliError::start(DEMO, "the bundled scenario is invalid", e))?;
    if !server {
        return Ok(scenario);
    }
    demo_server::scenario(scenario).ok_or_else(|| {
        CliError::start_line(DEMO, "the bundled scenario has no summary step to replace")
    })
}

/// The demo's compaction: a small autocompact threshold and tail, or the server's.
fn compaction(autocompact_at: u64, server: bool) -> Compaction {
    let mut compaction = Compaction::default()
        .autocompact_at(autocompact_at)
        .with_tail(TailOptions {
            min_tokens: 300,
            min_text_messages: 1,
            max_tokens: 4_000,
        });
    compaction.autocompact.reattach = ReattachOptions {
        max_files: 2,
        file_tokens: 500,
        total_tokens: 1_000,
    };
    if server {
        compaction = demo_server::compaction(compaction);
    }
    compaction
}

/// The lines before the session: the project, the mock, the model and the prompt.
fn print_banner(
    project: &Path,
    mock: &MockServer,
    steps: usize,
    server: bool,
    autocompact_at: u64,
) {
    print_line("threadline demo: an offline coding session against the embedded mock API");
    print_line(&format!(
        "  project   {} (a scratch copy of the bundled textstats)",
        project.display()
    ));
    print_line(&format!(
        "  mock      {} playing {steps} scripted answers",
        mock.base_url()
    ));
    if server {
        print_line(&format!(
            "  model     {MODEL}; server-side compaction at {} input tokens (the API's minimum is 50,000)",
            demo_server::TRIGGER
        ));
    } else {
        print_line(&format!(
            "  model     {MODEL}; autocompact at {autocompact_at} tokens (small on purpose)"
        ));
    }
    print_line(&format!("  prompt    {PROMPT}"));
    print_line("");
}

/// Runs the prompt to its end, printing the timeline; a note for each 529 the client retried
/// (the loop does not see those; the mock does).
async fn run_scenario(agent: &mut DemoAgent, mock: &MockServer) -> Progress {
    let mut progress = Progress::new(Style::Timeline);
    let mut events = agent.run(PROMPT);
    let mut overloaded_seen = 0;
    while let Some(event) = events.next().await {
        if let Event::Stream(stream) = &event
            && matches!(**stream, StreamEvent::MessageStart(_))
        {
            let overloaded = mock
                .requests()
                .iter()
                .filter(|r| r.status == Some(529))
                .count();
            for _ in overloaded_seen..overloaded {
                progress.note(
                    "the mock answered 529 overloaded; the client waited and resent the request",
                );
            }
            overloaded_seen = overloaded;
        }
        progress.on_event(&event);
    }
    progress.finish_output();
    progress
}

/// What the session showed: the loop's progress, what the mock recorded, the tokens billed.
struct Seen {
    progress: Progress,
    /// Requests the mock saw (retries included).
    requests: usize,
    /// Requests answered 529 and resent.
    retried: usize,
    /// Requests answered otherwise than 200 or 529.
    rejected: usize,
    totals: Totals,
    /// Whether `stats.py` holds the fix.
    fixed: bool,
}

impl Seen {
    fn measure(mock: &MockServer, meter: &Meter, project: &Path, progress: Progress) -> Seen {
        let recorded = mock.requests();
        Seen {
            requests: recorded.len(),
            retried: recorded.iter().filter(|r| r.status == Some(529)).count(),
            rejected: recorded
                .iter()
                .filter(|r| r.status.is_some_and(|s| s != 200 && s != 529))
                .count(),
            totals: meter.totals(),
            fixed: std::fs::read_to_string(project.join("stats.py"))
                .is_ok_and(|text| text.contains("return sum(xs) / len(xs)")),
            progress,
        }
    }

    /// What the demo must have shown and did not.
    fn missing(&self, server: bool) -> Vec<&'static str> {
        let compacted = if server {
            self.totals.compaction_iterations > 0
        } else {
            self.progress.autocompacts() > 0
        };
        missing_events(
            &self.progress,
            self.retried,
            self.rejected,
            self.fixed,
            (server, compacted),
        )
    }
}

/// The summary after the session: turns, requests, tools, compaction, tokens, cost.
fn print_summary(seen: &Seen, started: Instant) {
    let Seen {
        progress,
        requests,
        retried,
        totals,
        fixed,
        ..
    } = seen;
    let model = ModelTable::builtin().resolve(MODEL).model().clone();
    let batches: Vec<String> = progress
        .parallel_batches
        .iter()
        .map(|batch| batch.join("+"))
        .collect();
    let terminal = progress
        .terminal
        .as_ref()
        .map_or_else(|| "none".to_owned(), Terminal::to_string);

    print_line("");
    print_line("summary");
    let line = |key: &str, value: String| print_line(&format!("  {key:<17} {value}"));
    line("terminal:", terminal);
    line("turns:", progress.turns.to_string());
    line(
        "requests:",
        format!(
            "{requests} to the mock: {} from the loop, {} summary, {retried} answered 529",
            progress.requests,
            progress.compactions.len()
        ),
    );
    line(
        "retries:",
        format!("{retried} (529 overloaded, resent by the client)"),
    );
    line(
        "tool calls:",
        format!(
            "{} ({} errors), {} started while the model was streaming",
            progress.tool_calls, progress.tool_errors, progress.started_while_streaming
        ),
    );
    line(
        "parallel batches:",
        format!("{} ({})", batches.len(), batches.join(", ")),
    );
    line(
        "autocompact:",
        format!(
            "{} ({})",
            progress.autocompacts(),
            progress
                .compactions
                .iter()
                .map(|c| format!("at ~{} tokens", c.pre_tokens))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    line(
        "server compaction:",
        crate::meter::compaction_line(totals).unwrap_or_else(|| "none".to_owned()),
    );
    line("transitions:", progress.transition_names());
    line(
        "tokens:",
        format!(
            "input {}, cache write {}, cache read {}, output {}",
            totals.input_tokens,
            totals.cache_write_tokens,
            totals.cache_read_tokens,
            totals.output_tokens
        ),
    );
    line(
        "cache-read share:",
        format!("{:.1}%", totals.cache_read_share() * 100.0),
    );
    line(
        "cost:",
        format!(
            "${:.4} at {} prices (${}/M input, ${}/M cache read, ${}/M output)",
            totals.cost, model.id, model.prices.input, model.prices.cache_read, model.prices.output
        ),
    );
    line(
        "fix in place:",
        if *fixed { "yes" } else { "no" }.to_owned(),
    );
    line(
        "wall time:",
        format!("{:.2} s", started.elapsed().as_secs_f64()),
    );
}

/// What the demo must have shown and did not.
fn missing_events(
    progress: &Progress,
    retried: usize,
    rejected: usize,
    fixed: bool,
    (server, compacted): (bool, bool),
) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if progress.terminal != Some(Terminal::Completed) {
        missing.push("a completed session");
    }
    if progress.started_while_streaming == 0 {
        missing.push("a tool started while the model streamed");
    }
    if progress.parallel_batches.is_empty() {
        missing.push("a parallel batch");
    }
    if retried == 0 {
        missing.push("a retried 529");
    }
    if !compacted {
        missing.push(if server {
            "a server-side compaction"
        } else {
            "an autocompact"
        });
    }
    for needed in [
        Transition::NextTurn,
        Transition::MaxOutputTokensEscalate,
        Transition::MaxOutputTokensRecovery,
    ] {
        if !progress.transitions.contains(&needed) {
            missing.push(needed.name());
        }
    }
    if rejected > 0 {
        missing.push("only requests the mock accepted");
    }
    if !fixed {
        missing.push("the fix in stats.py");
    }
    missing
}

/// The estimated tokens of the system prompt (with the session context the agent appends)
/// and the built-in tools' definitions.
fn overhead(project: &Path) -> Result<u64, CliError> {
    let workspace = Workspace::new(project).map_err(|e| {
        CliError::start(
            DEMO,
            format!("{}: not a usable workspace", project.display()),
            e,
        )
    })?;
    let root = workspace.root().display().to_string();
    let tools = threadline::tools::builtin(Arc::new(workspace), ShellAccess::Allow);
    let mut context = SystemContext::new();
    context.push("workingDirectory", root);
    let mut bare = MessagesRequest::new(MODEL, 1, Vec::new());
    bare.system = context.append_to(Some(SystemPrompt::Text(SYSTEM_PROMPT.to_owned())));
    bare.tools = Some(tools.definitions());
    Ok(overhead_of(&bare))
}

/// Writes the bundled project under `dir`.
fn copy_project(dir: &Path) -> std::io::Result<()> {
    for (path, text) in PROJECT {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(target, text)?;
    }
    Ok(())
}
