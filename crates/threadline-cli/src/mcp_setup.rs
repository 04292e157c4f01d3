//! The MCP servers of `run` and `mcp list`: `.mcp.json` at the workspace root (Claude Code's
//! format) and `--mcp-config FILE` (its servers added, replacing any of the same name),
//! connected all at once; a server that does not connect is one line on stderr and the
//! command goes on without it.

use std::path::Path;

use threadline::query::{QueryConfig, ToolSet};
use threadline::wire::MessagesRequest;
use threadline_mcp::{McpConfig, McpOptions, McpServers};

/// The configured servers: the workspace's `.mcp.json`, then `extra`'s.
pub(crate) fn load(workspace: &Path, extra: Option<&Path>) -> Result<McpConfig, String> {
    let mut config = McpConfig::load_workspace(workspace).map_err(|e| e.to_string())?;
    if let Some(file) = extra {
        let more = McpConfig::load(file).map_err(|e| e.to_string())?;
        config.servers.extend(more.servers);
    }
    Ok(config)
}

/// Connects every server of `config`, printing one `threadline: COMMAND: …` line per server
/// that did not connect.
pub(crate) async fn connect(config: &McpConfig, command: &str) -> McpServers {
    let servers = McpServers::connect(config, McpOptions::default()).await;
    for warning in servers.warnings() {
        eprintln!("threadline: {command}: {warning}");
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

/// `--dry-run`: the MCP servers' tools in the printed request, deferred as the loop would
/// defer them (tool search when they exceed the window share).
pub(crate) fn add_to_dry_run(
    request: &mut MessagesRequest,
    workspace: &Path,
    extra: Option<&Path>,
) -> Result<(), String> {
    let config = load(workspace, extra)?;
    if config.servers.is_empty() {
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let servers = runtime.block_on(connect(&config, "run"));
    let tools = tool_set(&servers);
    stop(&runtime, servers);
    runtime.shutdown_background();
    if tools.is_empty() {
        return Ok(());
    }
    let config = QueryConfig::new(request.model.clone(), request.max_tokens);
    let definitions = threadline::query::tool_search::definitions(&tools, &config);
    request
        .tools
        .get_or_insert_with(Vec::new)
        .extend(definitions);
    Ok(())
}
