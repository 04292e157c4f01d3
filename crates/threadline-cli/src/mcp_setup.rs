//! The MCP servers of `run` and `mcp list`: `.mcp.json` at the workspace root (Claude Code's
//! format) and `--mcp-config FILE` (its servers added, replacing any of the same name),
//! connected all at once; a server that does not connect is one line on stderr and the
//! command goes on without it.
//!
//! Deny by default, with the policy of `threadline_mcp::WorkspaceServers`: a server of the
//! workspace's `.mcp.json` starts only when the user approved that name with that exact entry
//! for this workspace (`threadline mcp approve`, kept in `~/.threadline/mcp-approvals.json`);
//! nothing inside the workspace approves anything, and no `ANTHROPIC_*` variable is expanded
//! into a workspace server. Each server left out, and each broken entry, is one line. The
//! servers of `--mcp-config FILE` were named by the user and always start.

use std::path::{Path, PathBuf};

use threadline::query::ToolSet;
use threadline_mcp::{Approvals, McpConfig, McpOptions, McpServers, WorkspaceServers};

use threadline_cli::stderr_line;

/// The workspace's canonical root (approvals name canonical paths), or `workspace` itself
/// when it cannot be resolved.
pub(crate) fn canonical_root(workspace: &Path) -> PathBuf {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
}

/// The user's approvals and the file they came from, with a line when the file could not be
/// read (then nothing is approved).
pub(crate) fn user_approvals() -> (Approvals, Option<PathBuf>, Option<String>) {
    let file = match Approvals::user_file() {
        Ok(file) => file,
        Err(_) => return (Approvals::default(), None, None),
    };
    match Approvals::load(&file) {
        Ok(approvals) => (approvals, Some(file), None),
        Err(error) => (
            Approvals::default(),
            Some(file),
            Some(format!("{error}; no workspace MCP server is approved")),
        ),
    }
}

/// The workspace's servers split by the user's approval, and the lines to print about it.
pub(crate) fn workspace_servers(workspace: &Path) -> (WorkspaceServers, Vec<String>) {
    let root = canonical_root(workspace);
    let (approvals, file, problem) = user_approvals();
    let found = WorkspaceServers::load(&root, &approvals, file.as_deref());
    let mut lines: Vec<String> = problem.into_iter().collect();
    lines.extend(found.warnings.iter().cloned());
    for pending in &found.pending {
        let why = if pending.changed {
            "changed since it was approved"
        } else {
            "not approved"
        };
        lines.push(format!(
            "MCP server `{}` of .mcp.json is {why} (it runs `{}`): start it with \
             `threadline mcp approve {}`",
            pending.name,
            pending.entry.describe(),
            pending.name
        ));
    }
    (found, lines)
}

/// The configured servers: the approved ones of the workspace's `.mcp.json`, then `extra`'s
/// (all); one line per workspace server left out or broken, for `command`'s stderr. Only
/// `extra`, a file the user named, can fail.
pub(crate) fn load_approved(
    workspace: &Path,
    extra: Option<&Path>,
) -> Result<(McpConfig, Vec<String>), String> {
    let (found, lines) = workspace_servers(workspace);
    let mut config = found.approved;
    if let Some(file) = extra {
        let more = McpConfig::load(file).map_err(|e| e.to_string())?;
        config.servers.extend(more.servers);
    }
    Ok((config, lines))
}

/// [`load_approved`], printing the lines of the servers left out as `threadline: COMMAND: …`.
pub(crate) fn load(
    workspace: &Path,
    extra: Option<&Path>,
    command: &str,
) -> Result<McpConfig, String> {
    let (config, left_out) = load_approved(workspace, extra)?;
    for line in left_out {
        stderr_line!("threadline: {command}: {line}");
    }
    Ok(config)
}

/// Connects every server of `config`, printing one `threadline: COMMAND: …` line per server
/// that did not connect.
pub(crate) async fn connect(config: &McpConfig, command: &str) -> McpServers {
    let servers = McpServers::connect(config, McpOptions::default()).await;
    for warning in servers.warnings() {
        stderr_line!("threadline: {command}: {warning}");
    }
    servers
}

/// Stops the servers: dropping them kills each child from a task on `runtime`, which is
/// given a moment to run (a drop outside the runtime would have no task to do it).
pub(crate) fn stop(runtime: &tokio::runtime::Runtime, servers: McpServers) {
    if servers.servers.is_empty() {
        return;
    }
    runtime.block_on(async move {
        drop(servers);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    });
}

/// The tools of the connected servers, as a tool set.
pub(crate) fn tool_set(servers: &McpServers) -> ToolSet {
    let mut set = ToolSet::new();
    for tool in servers.tools() {
        set.insert(tool);
    }
    set
}

/// The `mcp_instructions_delta` source: the connected servers' instructions, announced once
/// (and a server that is gone, removed).
pub(crate) fn instructions_source(servers: &McpServers) -> threadline::attach::DeltaSource {
    let items: Vec<threadline::message::DeltaItem> = servers
        .instructions()
        .into_iter()
        .map(|(name, text)| threadline::message::DeltaItem {
            name: name.to_owned(),
            description: text.to_owned(),
        })
        .collect();
    threadline::attach::DeltaSource::mcp_instructions(move || items.clone())
}
