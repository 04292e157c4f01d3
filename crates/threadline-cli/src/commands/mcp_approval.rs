//! `threadline mcp approve [--cwd DIR] (NAME… | --all)` and `threadline mcp revoke [--cwd DIR]
//! NAME…`: the user's answer to "may this workspace's server start?", kept in user-owned state
//! (`threadline_mcp::Approvals`, `~/.threadline/mcp-approvals.json`) and naming the
//! workspace's canonical path, the server's name and its entry as written now. Each approval
//! prints what the server runs with everything the approval covers (`ServerEntry::describe`:
//! its environment too, or its URL and header names), so the user sees what was approved. Exit 2 when a name is not
//! a server of the workspace's `.mcp.json` or the approvals cannot be read or written.

use std::path::Path;

use threadline_mcp::Approvals;

use crate::error::CliError;
use crate::output::print_line;
use crate::terminal_text::terminal_safe;

const MCP: Option<&str> = Some("mcp");

/// The approvals file and its approvals, or the line why they cannot be used.
fn load() -> Result<(Approvals, std::path::PathBuf), CliError> {
    let file = Approvals::user_file().map_err(|e| CliError::start_line(MCP, e.to_string()))?;
    let approvals = Approvals::load(&file).map_err(|e| CliError::start_line(MCP, e.to_string()))?;
    Ok((approvals, file))
}

/// Approves `names` (or every server, `all`) of the workspace's `.mcp.json` as written now.
pub(crate) fn approve(workspace: &Path, names: &[String], all: bool) -> Result<(), CliError> {
    let root = crate::mcp_setup::canonical_root(workspace);
    let (mut approvals, file) = load()?;
    if file.starts_with(&root) {
        return Err(CliError::start_line(
            MCP,
            format!(
                "the approvals file {} lies inside the workspace, where they would not count",
                file.display()
            ),
        ));
    }
    let (found, _) = crate::mcp_setup::workspace_servers(&root);
    let mut entries = Vec::new();
    for name in names {
        let approved = found.approved.servers.contains_key(name);
        match found.pending.iter().find(|p| &p.name == name) {
            Some(pending) => entries.push(pending),
            None if approved => {
                print_line(&format!("{}: already approved", terminal_safe(name, false)))
            }
            None => {
                return Err(CliError::rejected(format!(
                    "threadline: mcp: `{}` is not a server of {}",
                    terminal_safe(name, false),
                    terminal_safe(&root.join(".mcp.json").display().to_string(), false)
                )));
            }
        }
    }
    if all {
        entries.extend(found.pending.iter());
    }
    for pending in &entries {
        approvals
            .try_approve(&root, &pending.name, &pending.entry)
            .map_err(|e| CliError::start_line(MCP, e.to_string()))?;
    }
    approvals
        .save(&file)
        .map_err(|e| CliError::start_line(MCP, e.to_string()))?;
    for pending in entries {
        print_line(&format!(
            "approved {}: runs `{}`",
            terminal_safe(&pending.name, false),
            terminal_safe(&pending.entry.describe(), false)
        ));
    }
    Ok(())
}

/// Withdraws the approvals of `names` in the workspace.
pub(crate) fn revoke(workspace: &Path, names: &[String]) -> Result<(), CliError> {
    let root = crate::mcp_setup::canonical_root(workspace);
    let (mut approvals, file) = load()?;
    let mut revoked = Vec::new();
    for name in names {
        if approvals.revoke(&root, name) {
            revoked.push(name);
        } else {
            print_line(&format!("{}: was not approved", terminal_safe(name, false)));
        }
    }
    if !revoked.is_empty() {
        approvals
            .save(&file)
            .map_err(|e| CliError::start_line(MCP, e.to_string()))?;
    }
    for name in revoked {
        print_line(&format!("revoked {}", terminal_safe(name, false)));
    }
    Ok(())
}
