//! The MCP servers of `run` and `mcp list`: `.mcp.json` at the workspace root (Claude Code's
//! format) and `--mcp-config FILE` (its servers added, replacing any of the same name),
//! connected all at once; a server that does not connect is one line on stderr and the
//! command goes on without it.
//!
//! Deny by default: a cloned repository's `.mcp.json` must not run code nobody allowed. A
//! server of the workspace's `.mcp.json` starts only when approved as Claude Code approves
//! it — `enableAllProjectMcpServers: true` or its name in `enabledMcpjsonServers` (and not in
//! `disabledMcpjsonServers`) in the workspace's `.claude/settings.local.json` (not committed)
//! or the user's `~/.claude/settings.json`; a committed `.claude/settings.json` does not count.
//! Each server left out is one line. The servers of `--mcp-config FILE` were named by the
//! user and always start.

use std::path::Path;

use threadline::query::{QueryConfig, ToolSet};
use threadline::wire::MessagesRequest;
use threadline_mcp::{McpConfig, McpOptions, McpServers};

/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Which servers of the workspace's `.mcp.json` the user approved.
#[derive(Default)]
struct Approval {
    all: bool,
    enabled: Vec<String>,
    disabled: Vec<String>,
}

impl Approval {
    fn read(workspace: &Path) -> Approval {
        let mut approval = Approval::default();
        let mut files = vec![workspace.join(".claude/settings.local.json")];
        if let Some(home) = std::env::var_os("HOME") {
            files.push(Path::new(&home).join(".claude/settings.json"));
        }
        for file in files {
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            if meta.len() > MAX_SETTINGS_BYTES {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let Ok(settings) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            approval.all |= settings["enableAllProjectMcpServers"] == serde_json::Value::Bool(true);
            let names = |key: &str| -> Vec<String> {
                settings[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            };
            approval.enabled.extend(names("enabledMcpjsonServers"));
            approval.disabled.extend(names("disabledMcpjsonServers"));
        }
        approval
    }

    fn allows(&self, name: &str) -> bool {
        !self.disabled.iter().any(|n| n == name)
            && (self.all || self.enabled.iter().any(|n| n == name))
    }
}

/// The configured servers: the approved ones of the workspace's `.mcp.json`, then `extra`'s
/// (all); one line per workspace server left out, for `command`'s stderr.
pub(crate) fn load_approved(
    workspace: &Path,
    extra: Option<&Path>,
) -> Result<(McpConfig, Vec<String>), String> {
    let mut config = McpConfig::load_workspace(workspace).map_err(|e| e.to_string())?;
    let approval = Approval::read(workspace);
    let mut left_out = Vec::new();
    config.servers.retain(|name, _| {
        let allowed = approval.allows(name);
        if !allowed {
            left_out.push(format!(
                "MCP server `{name}` of .mcp.json is not approved: add it to \
                 `enabledMcpjsonServers` in .claude/settings.local.json (or pass --mcp-config)"
            ));
        }
        allowed
    });
    if let Some(file) = extra {
        let more = McpConfig::load(file).map_err(|e| e.to_string())?;
        config.servers.extend(more.servers);
    }
    Ok((config, left_out))
}

/// [`load_approved`], printing the lines of the servers left out as `threadline: COMMAND: …`.
pub(crate) fn load(
    workspace: &Path,
    extra: Option<&Path>,
    command: &str,
) -> Result<McpConfig, String> {
    let (config, left_out) = load_approved(workspace, extra)?;
    for line in left_out {
        eprintln!("threadline: {command}: {line}");
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
    let config = load(workspace, extra, "run")?;
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
