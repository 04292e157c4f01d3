//! `threadline mcp approve|revoke [--cwd DIR] NAME…`: see `mcp_approval`.
//!
//! `threadline mcp list [--cwd DIR] [--mcp-config FILE]`: the configured MCP servers, each
//! connected: its tools (the names the model sees) and its instructions; a server that did
//! not connect is one line (a server of the workspace's `.mcp.json` that is not approved, too:
//! see `mcp_setup`). Exit code 0: every server connected; 1: some did not; 2: the
//! configuration could not be read.

use std::path::Path;

use crate::error::CliError;
use crate::terminal_text::terminal_safe;

/// `threadline mcp` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpCommand {
    /// Connect every configured server and list its tools and instructions.
    List {
        /// The workspace whose `.mcp.json` is read (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// More servers, from this file (Claude Code's `.mcp.json` format).
        #[arg(long, value_name = "FILE")]
        mcp_config: Option<std::path::PathBuf>,
    },
    /// Approve servers of the workspace's `.mcp.json`, as they are written now: each then
    /// starts in this workspace until its entry changes. Kept in
    /// `~/.threadline/mcp-approvals.json`, never in the workspace.
    Approve {
        /// The workspace whose `.mcp.json` is read (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// Every server of the file (each is printed with what it runs).
        #[arg(long, conflicts_with = "names")]
        all: bool,
        /// The servers to approve.
        #[arg(value_name = "NAME", required_unless_present = "all")]
        names: Vec<String>,
    },
    /// Withdraw approvals of servers of the workspace's `.mcp.json`.
    Revoke {
        /// The workspace (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// The servers whose approval is withdrawn.
        #[arg(value_name = "NAME", required = true)]
        names: Vec<String>,
    },
}

pub(crate) fn run(command: &McpCommand) -> Result<(), CliError> {
    match command {
        McpCommand::List { cwd, mcp_config } => list(cwd.as_deref(), mcp_config.as_deref()),
        McpCommand::Approve { cwd, all, names } => {
            super::mcp_approval::approve(&workspace(cwd.as_deref()), names, *all)
        }
        McpCommand::Revoke { cwd, names } => {
            super::mcp_approval::revoke(&workspace(cwd.as_deref()), names)
        }
    }
}

/// `--cwd DIR`, or the current directory.
fn workspace(cwd: Option<&Path>) -> std::path::PathBuf {
    match cwd {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().unwrap_or_else(|_| ".".into()),
    }
}

fn list(cwd: Option<&Path>, extra: Option<&Path>) -> Result<(), CliError> {
    let workspace = workspace(cwd);
    let config = crate::mcp_setup::load(&workspace, extra, "mcp")
        .map_err(|line| CliError::unusable(Some("mcp"), line, None))?;
    if config.servers.is_empty() {
        crate::output::print_line("no MCP servers configured");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(Some("mcp"), e))?;
    let servers = runtime.block_on(threadline_mcp::McpServers::connect(
        &config,
        threadline_mcp::McpOptions::default(),
    ));
    let mut out = String::new();
    for server in &servers.servers {
        let tools = server.tool_infos();
        out.push_str(&format!(
            "{}: connected, {} tools\n",
            terminal_safe(server.name(), false),
            tools.len()
        ));
        if let Some(instructions) = server.instructions() {
            for line in instructions.lines().filter(|l| !l.trim().is_empty()) {
                out.push_str(&format!("  | {}\n", terminal_safe(line, false)));
            }
        }
        for tool in tools {
            let first = tool.description.lines().next().unwrap_or("");
            let mut hints = Vec::new();
            if tool.read_only {
                hints.push("read-only");
            } else {
                hints.push("asks");
            }
            out.push_str(&format!(
                "  {} [{}] {}\n",
                terminal_safe(&tool.name, false),
                hints.join(", "),
                terminal_safe(first, false)
            ));
        }
    }
    for failure in &servers.failures {
        out.push_str(&format!(
            "{}: failed: {}\n",
            terminal_safe(failure.server(), false),
            terminal_safe(&failure.to_string(), false)
        ));
    }
    // A failed write is one line on stderr and exit code 1 (`output::finish`).
    crate::output::print(&out);
    let failed = servers.failures.len();
    crate::mcp_setup::stop(&runtime, servers);
    runtime.shutdown_background();
    if failed == 0 {
        Ok(())
    } else {
        // Each server that did not connect is a line of the list.
        Err(CliError::Found { problems: failed })
    }
}
