//! `threadline run [PROMPT]`: the agent in a workspace, against the API or `--base-url`
//! (see `run_live`), one PROMPT or a prompt loop.
//!
//! `threadline run --dry-run [--cwd DIR] PROMPT`: the first request the live agent would send
//! for PROMPT in DIR — the same agent as the live run (see `run_live::dry_run`) — printed as
//! the HTTP body, not sent.

use std::path::Path;

use crate::error::CliError;
use threadline_attach::Workspace;
use threadline_cli::stderr_line;
use threadline_wire::model::ModelTable;

// The model `run` uses unless told otherwise, and the `max_tokens` used when the flag does not
// give one (capped at the model's maximum): the workspace defaults.
use threadline_wire::defaults::{DEFAULT_MODEL, max_tokens_for};
/// The environment variable that fixes today's date (for reproducible output).
pub(crate) const DATE_VARIABLE: &str = "THREADLINE_DATE";

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
    /// `--request-timeout SECS`: overrides the client's total deadline per model request.
    pub(crate) request_timeout: Option<std::time::Duration>,
    /// `--autocompact-at TOKENS`.
    pub(crate) autocompact_at: Option<u64>,
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
    let date = date(args.date, RUN)?;
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
    let max_tokens = args.max_tokens.unwrap_or_else(|| max_tokens_for(model));
    let live = super::run_live::LiveArgs {
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
        autocompact_at: args.autocompact_at,
        request_timeout: args.request_timeout,
    };
    if !args.dry_run {
        return super::run_live::run(&live);
    }
    let Some(prompt) = args.prompt else {
        return Err(CliError::usage(RUN, "--dry-run needs a PROMPT"));
    };
    super::run_live::dry_run(&live, prompt)
}

/// Today's date: the flag, else [`DATE_VARIABLE`], else the UTC date of the clock; a
/// malformed one is a usage error of `command`.
pub(crate) fn date(flag: Option<&str>, command: Option<&'static str>) -> Result<String, CliError> {
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
            command,
            format!("{date:?} is not a date of the form YYYY-MM-DD"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_checked() {
        assert_eq!(
            date(Some("2026-11-30"), RUN).ok().as_deref(),
            Some("2026-11-30")
        );
        assert_eq!(
            date(Some("30/11/2026"), RUN).map_err(|e| e.to_string()),
            Err("threadline: run: \"30/11/2026\" is not a date of the form YYYY-MM-DD".to_owned())
        );
        assert!(date(Some("30/11/2026"), RUN).is_err());
        assert!(date(Some("2026-11-3"), RUN).is_err());
        // The clock's date is well formed.
        assert!(date(None, RUN).is_ok());
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
