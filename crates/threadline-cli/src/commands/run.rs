//! `threadline run [PROMPT]`: the agent in a workspace, against the API or `--base-url`
//! (see `run_live`), one PROMPT or a prompt loop.
//!
//! `threadline run --dry-run [--cwd DIR] PROMPT`: the first request the live agent would send
//! for PROMPT in DIR — the same agent as the live run (see `run_live::dry_run`) — printed as
//! the HTTP body, not sent.

use std::path::Path;

use crate::error::CliError;
use threadline_attach::Workspace;

// The model `run` uses unless told otherwise: the workspace default.
use threadline_wire::defaults::DEFAULT_MODEL;

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
    /// `--provider`.
    pub(crate) provider: Option<&'a str>,
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
    /// `--compaction MODE`.
    pub(crate) compaction: threadline::CompactionMode,
    /// `--max-input-bytes`: the limit `--resume` reads its transcript with.
    pub(crate) input_limit: threadline_cli::input::InputLimit,
}

/// `threadline run --compaction`: how the context is compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum RunCompaction {
    /// The local autocompact: a summary request.
    #[default]
    Local,
    /// Server-side compaction (`compact_20260112`) where the model has it.
    Server,
    /// On-demand compaction (`compact-2026-09-04`) where the model has it.
    OnDemand,
}

impl RunCompaction {
    /// The agent's compaction mode.
    pub(crate) fn mode(self) -> threadline::CompactionMode {
        match self {
            RunCompaction::Local => threadline::CompactionMode::Local,
            RunCompaction::Server => threadline::CompactionMode::Server,
            RunCompaction::OnDemand => threadline::CompactionMode::OnDemand,
        }
    }
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
    let date = crate::agent_setup::date(args.date, RUN)?;
    // A resumed Claude Code session is imported into a new file: without a key the run
    // cannot start, so say so before writing it.
    if args.resume.is_some()
        && !args.dry_run
        && super::run_live::platform(RUN, args.provider, args.base_url)?.is_none()
    {
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
    let max_tokens = crate::agent_setup::max_tokens_for_model("run", model_id, args.max_tokens);
    let live = super::run_live::LiveArgs {
        prompt: args.prompt,
        workspace: workspace.root(),
        model: model_id,
        max_tokens,
        date: &date,
        base_url: args.base_url,
        provider: args.provider,
        allow_shell: args.allow_shell,
        transcript: resume
            .as_ref()
            .map(|r| r.transcript.as_path())
            .or(args.transcript),
        history: resume.as_ref().map(|r| r.history.as_slice()),
        max_turns: args.max_turns,
        mcp_config: args.mcp_config,
        autocompact_at: args.autocompact_at,
        compaction: args.compaction,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_model_is_in_the_table() {
        assert!(
            threadline_wire::model::ModelTable::builtin()
                .resolve(DEFAULT_MODEL)
                .warning()
                .is_none()
        );
    }
}
