//! `threadline run [PROMPT]` without `--dry-run`: the agent against the real API
//! (`ANTHROPIC_API_KEY`) or any base URL (`--base-url`, e.g. a `threadline mock`). With a
//! PROMPT, one run; without, a prompt loop on stdin until EOF or `exit`. The model's text
//! streams to stdout, each tool call is a line. Without `--allow-shell`, each shell command
//! asks first when stdin and stderr are a terminal (`[y/N]` on stderr, the answer the next
//! line of stdin; end of input denies) and is refused otherwise. Every failure is one line
//! on stderr; the key is never printed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt as _;
use threadline::Compaction;
use threadline::client::Client;
use threadline::query::Terminal;
use threadline::tools::ShellAccess;
use threadline_message::Message;

use crate::agent_setup::{
    API_BASE_URL, API_KEY_VARIABLE, AgentSettings, agent_builder, client, platform_client,
};
use crate::error::CliError;
use crate::meter::{Meter, Metered};
use crate::permission_prompt::{AskOnStdin, can_ask};
use crate::progress::{Progress, Style};
use crate::stdin_lines::StdinLines;
use threadline_cli::stderr_line;

/// The key sent to a `--base-url` server when `ANTHROPIC_API_KEY` is not set: the client's
/// placeholder, as for a cloud platform without its credential.
use threadline::client::provider::PLACEHOLDER_CREDENTIAL as PLACEHOLDER_KEY;

/// What a live run needs.
pub(crate) struct LiveArgs<'a> {
    pub(crate) prompt: Option<&'a str>,
    pub(crate) workspace: &'a Path,
    pub(crate) model: &'a str,
    pub(crate) max_tokens: u64,
    pub(crate) date: &'a str,
    pub(crate) base_url: Option<&'a str>,
    /// `--provider`: the platform (else a `CLAUDE_CODE_USE_*` variable's, else the API).
    pub(crate) provider: Option<&'a str>,
    pub(crate) allow_shell: bool,
    pub(crate) transcript: Option<&'a Path>,
    /// A resumed session's history (`--resume`).
    pub(crate) history: Option<&'a [Message]>,
    pub(crate) max_turns: u32,
    /// `--mcp-config FILE`.
    pub(crate) mcp_config: Option<&'a Path>,
    /// `--request-timeout`: the client's total deadline per request, when not its default.
    pub(crate) request_timeout: Option<std::time::Duration>,
    /// `--autocompact-at TOKENS`: the autocompact threshold instead of the model's.
    pub(crate) autocompact_at: Option<u64>,
    /// `--compaction MODE`.
    pub(crate) compaction: threadline::CompactionMode,
}

/// The key to send: `ANTHROPIC_API_KEY`, else (with a base URL) a placeholder; the error is
/// the one line saying it is missing (exit code 2). Checked before anything is written.
pub(crate) fn api_key(base_url: Option<&str>) -> Result<String, CliError> {
    match std::env::var(API_KEY_VARIABLE) {
        Ok(key) if !key.trim().is_empty() => Ok(key),
        _ if base_url.is_some() => Ok(PLACEHOLDER_KEY.to_owned()),
        _ => Err(CliError::start_line(
            RUN,
            format!(
                "{API_KEY_VARIABLE} is not set; set it to call the API, pass --base-url URL \
                 for another server, or use --dry-run"
            ),
        )),
    }
}

/// The subcommand, as error lines name it.
const RUN: Option<&str> = Some("run");

/// The cloud platform's settings when `provider` (or a `CLAUDE_CODE_USE_*` variable) picks
/// one, from the variables Claude Code reads (`threadline_client::provider::platform_from_env`);
/// `None` for the Claude API, whose key [`api_key`] reads. An error is one line naming what
/// is missing (exit code 2), for `command`.
pub(crate) fn platform(
    command: Option<&'static str>,
    provider: Option<&str>,
    base_url: Option<&str>,
) -> Result<Option<threadline::client::provider::PlatformSettings>, CliError> {
    use threadline::client::Platform;
    use threadline::client::provider::{platform_from_env, platform_name_from_env};
    if platform_name_from_env(provider) == Platform::Anthropic.key() {
        return Ok(None);
    }
    platform_from_env(provider, base_url)
        .map(Some)
        .map_err(|error| CliError::start_line(command, error.to_string()))
}

pub(crate) fn run(args: &LiveArgs<'_>) -> Result<(), CliError> {
    let platform = platform(RUN, args.provider, args.base_url)?;
    let key = match platform {
        Some(_) => None,
        None => Some(api_key(args.base_url)?),
    };
    let base_url = args.base_url.unwrap_or(API_BASE_URL);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(RUN, e))?;
    let client = runtime
        .block_on(async {
            match (platform, &key) {
                (Some(settings), _) => platform_client(settings, None, args.request_timeout),
                (None, key) => {
                    let key = key.as_deref().unwrap_or_default();
                    client(base_url, key, None, args.request_timeout)
                }
            }
        })
        .map_err(|line| CliError::start_line(RUN, line))?;
    drop(key);
    let mcp_config = crate::mcp_setup::load(args.workspace, args.mcp_config, "run")
        .map_err(|line| CliError::unusable(RUN, line, None))?;
    // Kept to the end of the run: dropping it stops the servers.
    let mcp = runtime.block_on(crate::mcp_setup::connect(&mcp_config, "run"));
    let meter = Meter::default();
    // One reader of stdin, shared by the prompt loop and the permission questions.
    let lines = (args.prompt.is_none() || (!args.allow_shell && can_ask())).then(StdinLines::spawn);
    let mut builder = live_builder(args, client, &meter, &mcp);
    if !args.allow_shell
        && can_ask()
        && let Some(lines) = &lines
    {
        // Every shell command asks first; the answer is the next line of stdin.
        builder = builder.permission(AskOnStdin::new(Arc::clone(lines)));
    }
    if let Some(path) = args.transcript {
        builder = builder.transcript(PathBuf::from(path));
    }
    let mut agent = builder.build().map_err(|source| CliError::Agent {
        command: "run",
        source,
    })?;
    let result = runtime.block_on(async {
        match (args.prompt, &lines) {
            (Some(prompt), _) => one_run(&mut agent, prompt).await,
            (None, Some(lines)) => prompt_loop(&mut agent, &meter, lines).await,
            // Unreachable: without a PROMPT, stdin is always read.
            (None, None) => Err(CliError::usage(RUN, "no PROMPT and no stdin to read")),
        }
    });
    // A question still waiting on the terminal must not hold the process (its reader thread
    // is not joined).
    crate::mcp_setup::stop(&runtime, mcp);
    runtime.shutdown_background();
    result
}

/// The builder of the live agent: everything that shapes its requests (model, output limit,
/// system prompt, workspace, built-in and MCP tools, sources, compaction, history, turn
/// limit). `run` adds the permission callback and the transcript; `--dry-run` builds the
/// same agent and prints its first request.
pub(crate) fn live_builder(
    args: &LiveArgs<'_>,
    client: Client,
    meter: &Meter,
    mcp: &threadline_mcp::McpServers,
) -> threadline::AgentBuilder<Metered<Client>> {
    let mut builder = agent_builder(
        client,
        meter,
        AgentSettings {
            workspace: args.workspace,
            model: args.model,
            max_tokens: args.max_tokens,
            shell: if args.allow_shell {
                ShellAccess::Allow
            } else {
                ShellAccess::Ask
            },
            compaction: Compaction::default().with_mode(args.compaction),
            today: Some(args.date),
        },
    );
    if let Some(tokens) = args.autocompact_at {
        builder = builder.autocompact_at(tokens);
    }
    if let Some(history) = args.history {
        builder = builder.history(history.to_vec());
    }
    builder
        .max_turns(args.max_turns)
        .tools(&crate::mcp_setup::tool_set(mcp))
        .source(crate::mcp_setup::instructions_source(mcp))
}

/// `run --dry-run PROMPT`: the live agent, built as `run` builds it (its MCP servers
/// connected for their tools), and the first request it would send for PROMPT, printed as
/// the body the HTTP client would send ([`threadline::client::messages_body`]); nothing is
/// sent and no key is read. The attachment collector's notes (a refused `@` mention) go to
/// stderr. Exit code 1 when the request would be invalid.
pub(crate) fn dry_run(args: &LiveArgs<'_>, prompt: &str) -> Result<(), CliError> {
    let base_url = args.base_url.unwrap_or(API_BASE_URL);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(RUN, e))?;
    // Never used: the first request is captured before any service is called.
    let client = runtime
        .block_on(async { client(base_url, PLACEHOLDER_KEY, None, args.request_timeout) })
        .map_err(|line| CliError::start_line(RUN, line))?;
    let mcp_config = crate::mcp_setup::load(args.workspace, args.mcp_config, "run")
        .map_err(|line| CliError::unusable(RUN, line, None))?;
    let mcp = runtime.block_on(crate::mcp_setup::connect(&mcp_config, "run"));
    let meter = Meter::default();
    let built = live_builder(args, client, &meter, &mcp).build();
    let first = match built {
        Ok(agent) => runtime
            .block_on(agent.first_request(prompt))
            .map_err(|e| CliError::start(RUN, "no request to print", e)),
        Err(source) => Err(CliError::Agent {
            command: "run",
            source,
        }),
    };
    crate::mcp_setup::stop(&runtime, mcp);
    runtime.shutdown_background();
    let first = first?;
    for note in &first.notes {
        stderr_line!("threadline: run: {note}");
    }
    let table = threadline::wire::model::ModelTable::builtin();
    let violations =
        threadline_validate::validate(&first.request, table.resolve(args.model).model());
    let body = threadline::client::messages_body(&first.request)
        .map_err(|e| CliError::output(RUN, "cannot print the request", e))?;
    let body = String::from_utf8(body)
        .map_err(|e| CliError::output(RUN, "cannot print the request", e))?;
    // The body as the client sends it (a character a terminal would act on is written as a
    // JSON escape: the same value).
    crate::output::print_json(&body);
    if !violations.is_empty() {
        return Err(CliError::InvalidRequest { violations });
    }
    Ok(())
}

type LiveAgent = threadline::Agent<Metered<Client>>;

/// One run; exit 0 when it completed, 1 when it ended otherwise (the reason on stderr) or
/// could not be recorded in its transcript.
async fn one_run(agent: &mut LiveAgent, prompt: &str) -> Result<(), CliError> {
    match drive(agent, prompt).await? {
        Some(Terminal::Completed) => Ok(()),
        terminal => Err(CliError::SessionEnded { terminal }),
    }
}

/// Streams one run to stdout; the terminal reason. A run whose messages could not all be
/// written to the transcript (the loop warned, and ran no tool whose call was not recorded)
/// is an error: a session that cannot be recorded fails (exit 1).
async fn drive(agent: &mut LiveAgent, prompt: &str) -> Result<Option<Terminal>, CliError> {
    let mut progress = Progress::new(Style::Conversation);
    let mut events = agent.run(prompt);
    while let Some(event) = events.next().await {
        progress.on_event(&event);
    }
    progress.finish_output();
    if let Some(warning) = progress.unrecorded {
        return Err(unrecorded(warning));
    }
    Ok(progress.terminal)
}

/// The error of a session whose transcript could not be written (`warning` says why).
fn unrecorded(warning: String) -> CliError {
    CliError::Output {
        command: RUN,
        what: "the session could not be recorded".to_owned(),
        source: warning.into(),
    }
}

/// Prompts until EOF or `exit`; exit 0 unless stdin fails.
async fn prompt_loop(
    agent: &mut LiveAgent,
    meter: &Meter,
    lines: &StdinLines,
) -> Result<(), CliError> {
    stderr_line!("threadline: type a request, or `exit` (Ctrl-D) to stop");
    loop {
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "> ");
        let _ = stderr.flush();
        let line = match lines.next().await {
            None => break,
            Some(Ok(line)) => line,
            Some(Err(error)) => {
                return Err(CliError::Read {
                    command: RUN,
                    path: "stdin".into(),
                    source: error,
                });
            }
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "exit" || line == "quit" {
            break;
        }
        match drive(agent, line).await? {
            Some(Terminal::Completed) | None => {}
            Some(other) => stderr_line!("threadline: run: the turn ended: {other}"),
        }
    }
    let totals = meter.totals();
    stderr_line!(
        "threadline: {} requests, {} tokens in ({:.0}% read from the cache), {} out, ${:.4}",
        totals.answered,
        totals.all_input_tokens(),
        totals.cache_read_share() * 100.0,
        totals.output_tokens,
        totals.cost
    );
    Ok(())
}
