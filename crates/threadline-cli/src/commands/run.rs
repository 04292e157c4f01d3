//! `threadline run [PROMPT]`: the agent in a workspace, against the API or `--base-url`
//! (see `run_live`), one PROMPT or a prompt loop.
//!
//! `threadline run --dry-run [--cwd DIR] PROMPT`: the first request the agent would send for
//! PROMPT in DIR — system prompt with its session context, the synthetic context message, the
//! attachments of the `@` mentions — printed, not sent.

use std::path::Path;

use crate::error::CliError;
use threadline_attach::{
    AgentMentions, Collected, Collector, DateChange, FileMentions, Limits, NestedInstructions,
    QueuedCommands, SystemContext, TokenUsage, Turn, UserContext, Workspace, git_status_snapshot,
};
use threadline_cli::stderr_line;
use threadline_message::Message;
use threadline_normalize::{Options, normalize};
use threadline_wire::model::ModelTable;
use threadline_wire::request::SystemPrompt;
use threadline_wire::{MessagesRequest, validate};

// The model `run` uses unless told otherwise, and the `max_tokens` used when the flag does not
// give one (capped at the model's maximum): the workspace defaults.
use threadline_wire::defaults::{DEFAULT_MAX_TOKENS, DEFAULT_MODEL};
/// The environment variable that fixes today's date (for reproducible output).
pub(crate) const DATE_VARIABLE: &str = "THREADLINE_DATE";

// The base system prompt (the one every command's agent sends); session context is appended
// after it.
use crate::agent_setup::SYSTEM_PROMPT;

/// What `threadline run` was asked.
pub(crate) struct RunArgs<'a> {
    /// `None`: a prompt loop on stdin (not with `--dry-run`).
    pub(crate) prompt: Option<&'a str>,
    pub(crate) dry_run: bool,
    /// `--resume FILE`: continue that transcript's session.
    pub(crate) resume: Option<&'a Path>,
    /// `--out NEW` (with `--resume`).
    pub(crate) out: Option<&'a Path>,
    pub(crate) cwd: Option<&'a Path>,
    pub(crate) model: Option<&'a str>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) date: Option<&'a str>,
    pub(crate) base_url: Option<&'a str>,
    pub(crate) allow_shell: bool,
    pub(crate) transcript: Option<&'a Path>,
    pub(crate) max_turns: u32,
    /// `--mcp-config FILE`: more MCP servers beside the workspace's `.mcp.json`.
    pub(crate) mcp_config: Option<&'a Path>,
    /// `--log FILE`: the spans as JSON lines.
    pub(crate) log: Option<&'a Path>,
    /// `--max-input-bytes`: the limit `--resume` reads its transcript with.
    pub(crate) input_limit: threadline_cli::input::InputLimit,
}

/// The turn limit of `threadline run` when `--max-turns` is not given: a model that repeats a
/// tool call forever is stopped (a long real session rarely needs more).
pub(crate) const DEFAULT_MAX_TURNS: u32 = 100;

/// The subcommand, as error lines name it.
const RUN: Option<&str> = Some("run");

pub(crate) fn run(args: &RunArgs<'_>) -> Result<(), CliError> {
    crate::logging::init(args.log).map_err(|line| CliError::Rejected { line })?;
    let cwd = match args.cwd {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| CliError::start(RUN, "cannot read the current directory", e))?,
    };
    let workspace = Workspace::new(&cwd).map_err(|e| {
        CliError::start(RUN, format!("{}: not a usable workspace", cwd.display()), e)
    })?;
    let date = date(args.date)?;
    // A resumed Claude Code session is imported into a new file: without a key the run
    // cannot start, so say so before writing it.
    if args.resume.is_some() && !args.dry_run {
        super::run_live::api_key(args.base_url)?;
    }
    let resume = match args.resume {
        Some(file) => Some(super::session::prepare_resume(
            file,
            args.out,
            args.input_limit,
        )?),
        None => None,
    };
    let model_id = args
        .model
        .or_else(|| resume.as_ref().and_then(|r| r.model.as_deref()))
        .unwrap_or(DEFAULT_MODEL);
    let table = ModelTable::builtin();
    let resolved = table.resolve(model_id);
    if let Some(warning) = resolved.warning() {
        stderr_line!("threadline: run: {warning}");
    }
    let model = resolved.model();
    let max_tokens = args
        .max_tokens
        .unwrap_or(DEFAULT_MAX_TOKENS.min(model.max_output_tokens));
    if !args.dry_run {
        return super::run_live::run(&super::run_live::LiveArgs {
            prompt: args.prompt,
            workspace: workspace.root(),
            model: model_id,
            max_tokens,
            date: &date,
            base_url: args.base_url,
            allow_shell: args.allow_shell,
            transcript: resume
                .as_ref()
                .map(|r| r.transcript.as_path())
                .or(args.transcript),
            history: resume.as_ref().map(|r| r.history.as_slice()),
            max_turns: args.max_turns,
            mcp_config: args.mcp_config,
        });
    }
    let Some(prompt) = args.prompt else {
        return Err(CliError::usage(RUN, "--dry-run needs a PROMPT"));
    };
    let mut first = first_request(&FirstRequest {
        workspace: &workspace,
        prompt,
        model: model_id,
        max_tokens,
        context_window: model.context_window,
        date: &date,
    })
    .map_err(|e| CliError::start(RUN, "cannot start the attachment collector", e))?;
    crate::mcp_setup::add_to_dry_run(&mut first.request, workspace.root(), args.mcp_config)
        .map_err(|line| CliError::unusable(RUN, line, None))?;
    for entry in &first.collected.report {
        stderr_line!("threadline: run: {entry}");
    }
    let violations = validate(&first.request, model);
    let json = serde_json::to_string_pretty(&first.request)
        .map_err(|e| CliError::output(RUN, "cannot print the request", e))?;
    crate::output::print_json(&json);
    if !violations.is_empty() {
        return Err(CliError::InvalidRequest { violations });
    }
    Ok(())
}

/// Everything the first request depends on.
struct FirstRequest<'a> {
    workspace: &'a Workspace,
    prompt: &'a str,
    model: &'a str,
    max_tokens: u64,
    context_window: u64,
    date: &'a str,
}

/// The first request, and how its attachments were collected.
struct First {
    request: MessagesRequest,
    collected: Collected,
}

/// Builds the request the three channels produce for the first turn.
fn first_request(input: &FirstRequest<'_>) -> std::io::Result<First> {
    let workspace = input.workspace;
    // Channel 1: session-stable context at the end of the system prompt.
    let mut system_context = SystemContext::new();
    system_context.push("workingDirectory", workspace.root().display().to_string());
    if let Some(git) = git_status_snapshot(workspace.root()) {
        system_context.push("gitStatus", git);
    }
    let system = system_context.append_to(Some(SystemPrompt::Text(SYSTEM_PROMPT.to_owned())));

    // Channel 3: this turn's attachments, recorded after the prompt like any turn's.
    let mut history = vec![Message::user_text(input.prompt)];
    let collector = Collector::new()
        .with(FileMentions::new())
        .with(AgentMentions::new())
        .with(NestedInstructions::new())
        .with(DateChange::new(input.date))
        .with(QueuedCommands)
        .with(TokenUsage::new(input.context_window));
    let turn = Turn::new(&history)
        .with_input(input.prompt)
        .with_workspace(workspace)
        .with_today(input.date);
    let collected = collector.collect_blocking(&turn)?;
    history.extend(collected.messages());

    // Channel 2: the context message, in front, built now and never stored.
    let normalized = normalize(&history, &Options::default());
    let messages = UserContext::for_workspace(workspace, input.date, &Limits::default())
        .prepend_to(normalized.messages);

    let mut request = MessagesRequest::new(input.model, input.max_tokens, messages);
    request.system = system;
    request.stream = Some(true);
    Ok(First { request, collected })
}

/// Today's date: the flag, else [`DATE_VARIABLE`], else the UTC date of the clock.
fn date(flag: Option<&str>) -> Result<String, CliError> {
    let date = match flag {
        Some(date) => date.to_owned(),
        None => match std::env::var(DATE_VARIABLE) {
            Ok(date) if !date.is_empty() => date,
            _ => {
                let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
                now.to_string().chars().take(10).collect()
            }
        },
    };
    let bytes = date.as_bytes();
    let well_formed = bytes.len() == 10
        && bytes.iter().enumerate().all(|(n, b)| match n {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        });
    if well_formed {
        Ok(date)
    } else {
        Err(CliError::usage(
            RUN,
            format!("{date:?} is not a date of the form YYYY-MM-DD"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_checked() {
        assert_eq!(date(Some("2026-11-30")).ok().as_deref(), Some("2026-11-30"));
        assert_eq!(
            date(Some("30/11/2026")).map_err(|e| e.to_string()),
            Err("threadline: run: \"30/11/2026\" is not a date of the form YYYY-MM-DD".to_owned())
        );
        assert!(date(Some("30/11/2026")).is_err());
        assert!(date(Some("2026-11-3")).is_err());
        // The clock's date is well formed.
        assert!(date(None).is_ok());
    }

    #[test]
    fn the_default_model_is_in_the_table() {
        assert!(
            ModelTable::builtin()
                .resolve(DEFAULT_MODEL)
                .warning()
                .is_none()
        );
    }
}
