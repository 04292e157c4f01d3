//! `threadline`: the command line of the threadline workspace.
//!
//! Every failure is one clear line on stderr and a documented exit code; nothing panics on bad
//! input. Exit codes: 0 success, 1 the input was read but is broken or invalid, 2 the input
//! could not be read (or the arguments are wrong, or it is larger than `--max-input-bytes`).
//! Output that could not be written completely (a full disk, a closed pipe) is exit code 1
//! when the command would have succeeded.
//!
//! Every command returns `Result<(), CliError>` ([`error`]); `main` prints the error once and
//! exits with [`CliError::exit_code`](error::CliError::exit_code).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

mod agent_setup;
mod commands;
mod error;
mod logging;
mod mcp_setup;
mod meter;
mod output;
mod permission_prompt;
mod progress;
mod stdin_lines;

// The library's modules, where the commands expect them (`crate::session`, `crate::input`).
use threadline_cli::{input, project, session, terminal_text};

/// The message array of an LLM agent, from the command line.
#[derive(Debug, Parser)]
#[command(name = "threadline", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The largest input read from a file or stdin, in bytes (default 50331648 = 48 MiB);
    /// a larger or endless input (`/dev/zero`) is refused with exit code 2.
    #[arg(
        long,
        global = true,
        value_name = "BYTES",
        default_value_t = input::DEFAULT_MAX_INPUT_BYTES,
        hide_default_value = true
    )]
    max_input_bytes: u64,
}

/// A `--plan` strategy by name.
fn plan_strategy(name: &str) -> Result<threadline_cli::inspect_plan::PlanStrategy, String> {
    use threadline_cli::inspect_plan::PlanStrategy;
    PlanStrategy::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = PlanStrategy::ALL.iter().map(|(n, _)| *n).collect();
        format!("unknown strategy {name:?} (one of: {})", names.join(", "))
    })
}

/// Which transcript of a Claude Code project directory a command reads.
#[derive(Debug, clap::Args)]
struct SessionPick {
    /// With a project directory as TRANSCRIPT: the session to read (its id).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// With --session: read this subagent's transcript instead (its id, as `sessions` lists).
    #[arg(long, value_name = "AGENT_ID", requires = "session")]
    agent: Option<String>,
}

impl SessionPick {
    /// The transcript file to read, or the line saying why there is none (exit code 2).
    fn resolve(&self, transcript: &str) -> Result<String, CliError> {
        project::resolve_transcript(transcript, self.session.as_deref(), self.agent.as_deref())
            .map_err(CliError::rejected)
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Accumulate a raw SSE response body into the final message, printed as JSON.
    ///
    /// FILE holds the bytes of a streamed `/v1/messages` response (`-` reads stdin), or is a
    /// canonical fixture whose exchanges hold SSE bodies (every stream is accumulated). On a
    /// truncated or broken stream the partial message is printed, the error goes to stderr,
    /// and the exit code is 1.
    Accumulate {
        /// The SSE file, a canonical fixture, or `-` for stdin.
        file: String,
    },
    /// Check a request against the API's acceptance rules, offline; print each violation.
    ///
    /// FILE is a `/v1/messages` request body (`-` reads stdin), a canonical fixture whose
    /// every recorded request is checked, or a session transcript (threadline or Claude Code
    /// JSONL), whose normalized request is checked and whose repairs are reported on stderr. Each violation is printed as `PATH: MESSAGE` in the
    /// API's own words. Exit code 0: no violation; 1: violations; 2: unreadable input. An
    /// unknown model is checked against conservative defaults, with a warning on stderr.
    Check {
        /// The request body, a canonical fixture, or `-` for stdin.
        file: String,
        /// Check against this model instead of the one the request names.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The `anthropic-beta` header the request is sent with (e.g. for interleaved thinking).
        #[arg(long, value_name = "BETAS")]
        beta: Option<String>,
        /// FILE is a `/v1/messages/count_tokens` request body.
        #[arg(long)]
        count_tokens: bool,
        /// For a transcript of a finished session: the user's next message, checked as the
        /// end of the request that continues it (default: a placeholder).
        #[arg(long, value_name = "TEXT")]
        next: Option<String>,
    },
    /// Normalize a session transcript into the request body the model would see.
    ///
    /// TRANSCRIPT is a threadline transcript or a Claude Code transcript (detected). The
    /// request body JSON goes to stdout, a one-line summary of the repairs to stderr.
    Normalize {
        /// The transcript (`-` reads stdin), or a Claude Code project directory with
        /// `--session`.
        transcript: String,
        #[command(flatten)]
        pick: SessionPick,
        /// The model to build the request for (default: the transcript's last model).
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// `max_tokens` of the request (default: 8192, capped at the model's maximum).
        #[arg(long, value_name = "N")]
        max_tokens: Option<u64>,
        /// The user's next message: a finished session (one that ends with the model's
        /// complete answer) is continued by a request that ends with it. Without it, a
        /// finished session is reported as such and no request is printed.
        #[arg(long, value_name = "TEXT")]
        next: Option<String>,
    },
    /// Report tokens, prompt-cache hits and cost of each request a transcript implies.
    ///
    /// TRANSCRIPT is a threadline or Claude Code transcript. For each request (one per
    /// assistant response): the recorded usage when the transcript has it, the prompt-cache
    /// simulator's prediction, the cache-read share of both, the cost, and any cache break
    /// with its cause; then totals and `share_mae` (mean absolute error of the predicted
    /// cache-read share). The tools and system prompt a transcript does not contain are
    /// inferred from the first recorded usage.
    Inspect {
        /// The transcript (`-` reads stdin), or a Claude Code project directory with
        /// `--session`.
        transcript: String,
        #[command(flatten)]
        pick: SessionPick,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
        /// Also write the report as one self-contained HTML page (a timeline of every
        /// request's tokens, recorded beside predicted, with cache breaks, idle gaps,
        /// compaction thresholds and the cost accumulating).
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
        /// Also re-plan every request with this cache strategy (`default`, `seed`,
        /// `lookback_aware`, `stable_1h`, `automatic`) and compare its cache-read share and input cost with
        /// the recorded ones, per request and in total, with the difference in dollars.
        #[arg(long, value_name = "STRATEGY", value_parser = plan_strategy)]
        plan: Option<threadline_cli::inspect_plan::PlanStrategy>,
        /// Simulate this model instead of the one the transcript names.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
    },
    /// List the sessions of a Claude Code project directory.
    ///
    /// DIR is a project directory (`~/.claude/projects/<project>/`): one `<session-id>.jsonl`
    /// per session, and its subagents' transcripts (`agent-<id>.jsonl` beside it in Claude
    /// Code 2.0, `<session-id>/subagents/agent-<id>.jsonl` in 2.1). For each session: id,
    /// start, messages, model, tokens (each request counted once) and title (its last
    /// `custom-title`, else `ai-title`, `last-prompt` or `summary`, else its first prompt);
    /// its agents below it (`acompact` agents are the
    /// compaction's summary requests). `normalize` and `inspect` take `DIR --session ID
    /// [--agent AGENT_ID]`. Exit code 0: listed; 2: DIR cannot be listed.
    Sessions {
        /// The project directory.
        dir: String,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Apply one compaction layer to a transcript; write the result as a threadline transcript.
    ///
    /// `micro` clears old tool results once the prompt cache has expired (`--now`, default
    /// the current time; `--keep` most recent kept); `snip` removes the oldest messages
    /// (whole tool pairs and responses, never the latest prompt) down to `--limit` tokens;
    /// `auto` summarizes everything before a verbatim tail when the context reaches `--limit`
    /// (default: the model's autocompact threshold), with the summary read from `--summary
    /// FILE` or, without it, an extractive summary made without a model. The transcript goes
    /// to `--out` or stdout, a one-line report to stderr. Exit code 0: written; 1: the
    /// compaction failed; 2: unreadable input or bad arguments.
    Compact {
        /// The transcript (`-` reads stdin).
        transcript: String,
        /// The model the session talks to (its window sets the thresholds).
        #[arg(long, value_name = "MODEL")]
        model: String,
        /// The layer to apply.
        #[arg(long, value_enum, default_value = "auto")]
        strategy: commands::compact::Strategy,
        /// Write the result here instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<String>,
        /// The token limit (default: the model's autocompact threshold).
        #[arg(long, value_name = "TOKENS")]
        limit: Option<u64>,
        /// The summary text to use (`auto`); default: an extractive summary.
        #[arg(long, value_name = "FILE")]
        summary: Option<String>,
        /// Tool results kept whole by `micro`.
        #[arg(long, value_name = "N", default_value_t = 5)]
        keep: usize,
        /// The current time, RFC 3339 (`micro`: has the cache expired?).
        #[arg(long, value_name = "TIME")]
        now: Option<String>,
    },
    /// Run the agent for PROMPT in a workspace, or print its first request (`--dry-run`).
    ///
    /// Without `--dry-run`: the agent (built-in tools, compaction, cache markers, the
    /// workspace's context) against the API with `ANTHROPIC_API_KEY`, or against `--base-url`
    /// (e.g. a `threadline mock`). The model's text streams to stdout and each tool call is a
    /// line; without PROMPT, requests are read from stdin one per line until `exit` or EOF.
    /// Shell commands are refused unless `--allow-shell`. Exit code 0: the session completed;
    /// 1: it ended otherwise (model error, turn limit, …), the reason on stderr; 2: it could
    /// not start (no key, bad arguments).
    ///
    /// With `--dry-run` the first request the live agent would send for PROMPT goes to
    /// stdout, as the body the HTTP client would send (one line of JSON): the same agent as
    /// without `--dry-run` (system prompt with the working directory, built-in and MCP tools,
    /// the synthetic context message with the workspace's AGENTS.md / CLAUDE.md and the date,
    /// the attachments of the `@path` mentions in PROMPT, cache markers), nothing sent. A
    /// refused or cut mention is reported on stderr. Exit code 0: printed; 1: the request
    /// would be invalid; 2: bad arguments.
    Run {
        /// What the user asks (without it, a prompt loop on stdin; `exit` or Ctrl-D ends it).
        prompt: Option<String>,
        /// Print the request instead of sending it.
        #[arg(long, conflicts_with = "resume")]
        dry_run: bool,
        /// Continue the session of this transcript: a threadline transcript is appended to in
        /// place (or copied to `--out` first); a Claude Code transcript is imported into a new
        /// threadline transcript, `--out` or `STEM.threadline.jsonl` beside it (never
        /// overwritten). Which file the session continues in is said on stderr. The model
        /// defaults to the one the transcript last talked to.
        #[arg(long, value_name = "FILE")]
        resume: Option<std::path::PathBuf>,
        /// With `--resume`: the new transcript the session continues in (refused if it
        /// exists).
        #[arg(long, value_name = "NEW", requires = "resume")]
        out: Option<std::path::PathBuf>,
        /// The workspace directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// The model (default: `claude-sonnet-5`, see `threadline_wire::defaults`).
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// `max_tokens` of the request (default: 8192, capped at the model's maximum).
        #[arg(long, value_name = "N")]
        max_tokens: Option<u64>,
        /// Today's date, YYYY-MM-DD (default: $THREADLINE_DATE, else the UTC date).
        #[arg(long, value_name = "YYYY-MM-DD", hide = true)]
        date: Option<String>,
        /// Send requests here instead of https://api.anthropic.com (e.g. a `threadline mock`);
        /// `ANTHROPIC_API_KEY` is then optional.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The platform: anthropic (default), bedrock, vertex or foundry, each read from the
        /// variables Claude Code reads (bedrock: AWS_REGION, AWS_ACCESS_KEY_ID,
        /// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN or AWS_BEARER_TOKEN_BEDROCK, else the
        /// standard AWS chain: AWS_PROFILE and ~/.aws, SSO, web identity, instance roles; vertex:
        /// ANTHROPIC_VERTEX_PROJECT_ID, CLOUD_ML_REGION, ANTHROPIC_VERTEX_ACCESS_TOKEN, else
        /// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud);
        /// foundry: ANTHROPIC_FOUNDRY_RESOURCE, ANTHROPIC_FOUNDRY_API_KEY). Default: the one
        /// a CLAUDE_CODE_USE_BEDROCK/VERTEX/FOUNDRY variable picks, else anthropic. A model
        /// given by its API id (`claude-sonnet-4-5`) is sent by the platform's id where the
        /// model table has one; the platform's own ids (an inference profile such as
        /// `us.anthropic.claude-sonnet-4-5-20250929-v1:0`) go as given. What the platform does
        /// not offer is not used (on Bedrock, `--compaction on-demand` compacts locally).
        #[arg(long, value_name = "PLATFORM", value_parser = ["anthropic", "bedrock", "vertex", "foundry"])]
        provider: Option<String>,
        /// Let the model run shell commands without asking (otherwise each one asks when stdin
        /// is a terminal — `[y/N]` on stderr, answered by the next line — and is refused when
        /// stdin is piped).
        #[arg(long)]
        allow_shell: bool,
        /// Append every message of the session to this JSONL transcript.
        #[arg(long, value_name = "FILE", conflicts_with = "resume")]
        transcript: Option<std::path::PathBuf>,
        /// At most this many tool-using turns per request, so that a model repeating a
        /// tool call forever stops (exit 1, `max_turns`).
        #[arg(long, value_name = "N", default_value_t = commands::run::DEFAULT_MAX_TURNS,
              value_parser = clap::value_parser!(u32).range(1..))]
        max_turns: u32,
        /// Autocompact once the context reaches TOKENS (estimated) instead of the model's
        /// threshold, so that compaction can be seen on a small session.
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
        autocompact_at: Option<u64>,
        /// How the context is compacted: `local` (a summary written by a model call),
        /// `server` (the API's `compact_20260112` edit where the model has it) or `on-demand`
        /// (at the threshold, the API's on-demand compaction writes a signed summary block,
        /// where the model has it); each falls back to `local` where the model lacks it.
        #[arg(long, value_name = "MODE", value_enum, default_value_t = commands::run::RunCompaction::Local)]
        compaction: commands::run::RunCompaction,
        /// MCP servers from this file (Claude Code's `.mcp.json` format), beside those of the
        /// workspace's `.mcp.json` (read always; a server of the same name here wins).
        #[arg(long, value_name = "FILE")]
        mcp_config: Option<std::path::PathBuf>,
        /// Write the session's tracing spans and events to FILE as JSON lines (OpenTelemetry
        /// GenAI attributes; filtered by RUST_LOG, default `threadline=info`).
        #[arg(long, value_name = "FILE")]
        log: Option<std::path::PathBuf>,
        /// Give up on a model request (its retries included) that has not ended after SECS
        /// seconds, however often the server sends events (default: the HTTP client's total
        /// deadline, 10 minutes).
        #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
        request_timeout: Option<u64>,
        /// Run the turn as a durable session on a Restate cluster: URL is its ingress
        /// (`http://127.0.0.1:8080`), where `threadline worker`s are registered. The turn is
        /// submitted to the session `--session ID` and followed (each journaled step on
        /// stderr, the answer on stdout); running the same command again follows the same
        /// turn. Needs a PROMPT.
        #[arg(long, value_name = "URL", requires_all = ["session", "prompt"],
              conflicts_with_all = ["dry_run", "resume", "transcript", "base_url"])]
        restate: Option<String>,
        /// With --restate: the session's id (the Virtual Object's key).
        #[arg(long, value_name = "ID", requires = "restate")]
        session: Option<String>,
    },
    /// Serve durable sessions to a Restate server (the `Session` Virtual Object).
    ///
    /// Each session's model calls and tool calls are journaled steps of its Restate
    /// invocation: when a worker dies, the server continues the session on another worker
    /// behind the same deployment address, without repeating a journaled step. Register the
    /// printed address with the server (`restate deployments register URL`, or `POST
    /// /deployments` on its admin API). The first stdout line is `listening on http://ADDR`.
    /// SIGTERM or Ctrl-C stops it.
    Worker(commands::worker::WorkerArgs),
    /// List the MCP servers of `.mcp.json` (and `--mcp-config`): tools and instructions.
    Mcp {
        #[command(subcommand)]
        command: commands::mcp::McpCommand,
    },
    /// Operate on session transcripts: fork, rewind, list, show.
    ///
    /// `fork FILE --at ID --out NEW` and `rewind FILE --turns N --out NEW` write a new
    /// session (never over an existing file) and keep every message they keep as it was
    /// (a fork gives them fresh ids; a threadline transcript's lines are copied byte for byte
    /// but for those ids and any key-shaped secret, which is redacted; a Claude Code
    /// transcript is imported, so its messages are written anew); `list DIR` and `show FILE` summarize sessions (id,
    /// title, start time, message count, model, tokens), as a table or `--json`. Continue a
    /// session with `threadline run --resume FILE`. Exit code 0: done; 2: bad input.
    Session {
        #[command(subcommand)]
        command: commands::session::SessionCommand,
    },
    /// Run an offline coding session against the embedded mock API, then summarize it.
    ///
    /// A scratch copy of a small bundled Python project with a bug, the real built-in tools,
    /// and the mock server on loopback playing a scripted model: tools start while the model
    /// streams, read-only tools run in parallel, a 529 is retried by the client, the context
    /// is autocompacted (the summary request goes to the mock), and a `max_tokens` stop is
    /// recovered. Ends with turns, tool calls, tokens, cache-read share, cost and the
    /// transitions taken. Exit code 0: the session showed all of it; 1: it did not; 2: it
    /// could not start.
    Demo {
        /// Keep the scratch copy of the project (its path is printed).
        #[arg(long)]
        keep: bool,
        /// `local`: the autocompact writes a summary with a model call; `server`: the requests
        /// carry the `compact_20260112` edit and the API (here, the mock) compacts.
        #[arg(long, value_enum, default_value = "local")]
        compaction: commands::demo_server::DemoCompaction,
        /// Write the session's tracing spans and events to FILE as JSON lines (OpenTelemetry
        /// GenAI attributes; filtered by RUST_LOG, default `threadline=info`).
        #[arg(long, value_name = "FILE")]
        log: Option<std::path::PathBuf>,
    },
    /// Drive a recorded session through the query loop against the mock.
    ///
    /// FIXTURE is a canonical fixture (`fixtures/canonical/*/*.json`). The mock answers each
    /// request with the next recorded response, byte for byte; each recorded conversation is
    /// a run of an agent with the recording's model, system prompt and tools, whose tools
    /// answer with the recorded results. Prints the loop's steps and a summary. Exit code 0:
    /// every recorded exchange was used and answered as recorded; 1: the loop used more or
    /// fewer, or a request was answered otherwise; 2: the fixture cannot be read.
    Replay {
        /// The canonical fixture.
        fixture: std::path::PathBuf,
    },
    /// Run the mock Messages API on loopback until Ctrl-C.
    ///
    /// It validates every request as the API does (401, 404, the API's 400 texts) and answers
    /// from SCENARIO, a JSON or YAML list of scripted messages, recorded responses and faults
    /// (see the `threadline-mock` crate); without one, every request gets a short text. The
    /// first line on stdout, flushed once the port is bound, is `listening on http://ADDR`
    /// with the bound address (the port chosen for port 0), e.g.
    /// `listening on http://127.0.0.1:43117`; nothing else is printed to stdout.
    Mock {
        /// Where to listen (port 0 picks a free port).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
        /// The scenario file (JSON or YAML).
        #[arg(long, value_name = "FILE")]
        scenario: Option<std::path::PathBuf>,
        /// Append one JSON line per request on /v1/messages and /v1/messages/count_tokens
        /// to FILE, written before the answer's first byte: seq, status, route, step, the
        /// body's SHA-256 and the body, its `anthropic-beta` header, the usage answered, and
        /// the error message of a request the mock refused (the `threadline_mock::request_log`
        /// format).
        #[arg(long, value_name = "FILE")]
        record_log: Option<std::path::PathBuf>,
        /// Serve these models too: a JSON file in the Models API's shape (what
        /// `GET /v1/models` answers, `{"data": [...]}`, or one entry), or in the model
        /// table's (`{"models": [...]}`). A row it names replaces the built-in one; what the
        /// Models API does not give (prices, …) comes from the entry's own fields, else the
        /// table's conservative default.
        #[arg(long, value_name = "FILE")]
        models: Option<std::path::PathBuf>,
        /// Issue Google access tokens at `POST /token` to the service account of this JSON
        /// key file (its RS256-signed grant checked as Google checks it), and take only those
        /// tokens on the Vertex AI routes: Application Default Credentials against the mock
        /// (the key's `token_uri` pointing at it).
        #[arg(long, value_name = "FILE")]
        google_service_account: Option<std::path::PathBuf>,
        /// Bounds on bodies, recordings, connections and timeouts.
        #[command(flatten)]
        limits: commands::mock::LimitArgs,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            // Help and version go to stdout; usage errors to stderr.
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let limit = input::InputLimit::new(cli.max_input_bytes);
    let code = match run(cli.command, limit) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // The one place an error is printed: one line (the violations of a dry run, one
            // each), or nothing when the command reported what it found as it found it. The
            // error may quote a peer (a server's message, a refusal): each line is escaped.
            for line in error.lines() {
                terminal_text::stderr_line(&line);
            }
            error.exit_code()
        }
    };
    // A write to stdout that failed makes the run a failure, whatever the command said.
    output::finish(code)
}

/// Runs the subcommand; every input it reads is held to `limit` (`--max-input-bytes`).
fn run(command: Command, input_limit: input::InputLimit) -> Result<(), CliError> {
    match command {
        Command::Accumulate { file } => commands::accumulate::run(&file, input_limit),
        Command::Check {
            file,
            model,
            beta,
            count_tokens,
            next,
        } => commands::check::run(&commands::check::CheckArgs {
            path: &file,
            model: model.as_deref(),
            beta: beta.as_deref(),
            count_tokens,
            next: next.as_deref(),
            limit: input_limit,
        }),
        Command::Normalize {
            transcript,
            pick,
            model,
            max_tokens,
            next,
        } => {
            let path = pick.resolve(&transcript)?;
            commands::normalize::run(
                &path,
                model.as_deref(),
                max_tokens,
                next.as_deref(),
                input_limit,
            )
        }
        Command::Inspect {
            transcript,
            pick,
            json,
            html,
            plan,
            model,
        } => {
            let path = pick.resolve(&transcript)?;
            commands::inspect::run(&commands::inspect::InspectArgs {
                path: &path,
                json,
                html: html.as_deref(),
                plan,
                model: model.as_deref(),
                limit: input_limit,
            })
        }
        Command::Sessions { dir, json } => commands::sessions::run(&dir, json, input_limit),
        Command::Compact {
            transcript,
            model,
            strategy,
            out,
            limit,
            summary,
            keep,
            now,
        } => commands::compact::run(&commands::compact::CompactArgs {
            transcript: &transcript,
            model: &model,
            strategy,
            out: out.as_deref(),
            limit,
            summary: summary.as_deref(),
            keep,
            now: now.as_deref(),
            input_limit,
        }),
        Command::Run {
            prompt,
            restate: Some(restate),
            session: Some(session),
            ..
        } => commands::durable::run(&commands::durable::RemoteRun {
            ingress: &restate,
            session: &session,
            prompt: prompt.as_deref().unwrap_or_default(),
        }),
        Command::Run {
            prompt,
            dry_run,
            resume,
            out,
            cwd,
            model,
            max_tokens,
            date,
            base_url,
            provider,
            allow_shell,
            transcript,
            max_turns,
            mcp_config,
            log,
            request_timeout,
            autocompact_at,
            compaction,
            ..
        } => commands::run::run(&commands::run::RunArgs {
            prompt: prompt.as_deref(),
            dry_run,
            resume: resume.as_deref(),
            out: out.as_deref(),
            cwd: cwd.as_deref(),
            model: model.as_deref(),
            max_tokens,
            date: date.as_deref(),
            base_url: base_url.as_deref(),
            provider: provider.as_deref(),
            allow_shell,
            transcript: transcript.as_deref(),
            max_turns,
            mcp_config: mcp_config.as_deref(),
            log: log.as_deref(),
            request_timeout: request_timeout.map(std::time::Duration::from_secs),
            autocompact_at,
            compaction: compaction.mode(),
            input_limit,
        }),
        Command::Worker(args) => commands::worker::run(&args),
        Command::Mcp { command } => commands::mcp::run(&command),
        Command::Session { command } => commands::session::run(&command, input_limit),
        Command::Replay { fixture } => commands::replay::run(&fixture, input_limit),
        Command::Demo {
            keep,
            compaction,
            log,
        } => commands::demo::run(&commands::demo::DemoArgs {
            keep,
            compaction,
            log,
        }),
        Command::Mock {
            addr,
            scenario,
            record_log,
            models,
            google_service_account,
            limits,
        } => commands::mock::run(
            addr,
            scenario.as_deref(),
            record_log.as_deref(),
            (models.as_deref(), google_service_account.as_deref()),
            &limits,
            input_limit,
        ),
    }
}
