//! Claude Code project directories on the command line: which file `DIR --session ID
//! [--agent AGENT_ID]` names, and the one-line overview `threadline sessions` shows of each
//! transcript.

use std::path::Path;

use threadline_message::claude_code::ImportResult;
use threadline_message::claude_code_project::scan_project;
use threadline_message::{SessionInfo, summarize};

/// What `threadline sessions` shows of one transcript: the session summary of
/// [`threadline_message::summarize`] (start, messages, model, tokens counted once per request,
/// the last fragment winning), titled as Claude Code titles a session.
pub fn overview(id: &str, imported: &ImportResult) -> SessionInfo {
    let mut info = summarize(id, &imported.messages);
    if let Some(title) = claude_code_title(imported) {
        info.title = Some(title);
    } else if let Some(command) = info.title.as_deref().and_then(slash_command) {
        info.title = Some(command);
    }
    info
}

/// A prompt that ran a slash command (`<command-name>/init</command-name>` and its
/// `<command-args>`), as the command line the user typed.
fn slash_command(prompt: &str) -> Option<String> {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = prompt.find(&open)? + open.len();
        let end = start + prompt[start..].find(&close)?;
        Some(prompt[start..end].trim())
    };
    let name = tag("command-name").filter(|n| !n.is_empty())?;
    Some(match tag("command-args").filter(|a| !a.is_empty()) {
        Some(args) => format!("{name} {args}"),
        None => name.to_owned(),
    })
}

/// The title Claude Code's session list shows, from the records that set one: the last
/// `custom-title`, else `ai-title`, else `last-prompt`, else `summary`.
fn claude_code_title(imported: &ImportResult) -> Option<String> {
    let last = |record_type: &str, field: &str| {
        imported.opaque.iter().rev().find_map(|record| {
            (record.get("type")?.as_str()? == record_type)
                .then(|| record.get(field)?.as_str())
                .flatten()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
        })
    };
    last("custom-title", "customTitle")
        .or_else(|| last("ai-title", "aiTitle"))
        .or_else(|| last("last-prompt", "lastPrompt"))
        .or_else(|| imported.summaries().last().map(|s| s.summary.to_owned()))
}

/// The transcript `path` names: the file itself, or — when it is a directory — the session
/// `session` of that Claude Code project directory (its agent `agent`, if given). The error is
/// one printable line; the command exits with code 2.
pub fn resolve_transcript(
    path: &str,
    session: Option<&str>,
    agent: Option<&str>,
) -> Result<String, String> {
    let is_dir = path != "-" && Path::new(path).is_dir();
    let Some(session) = session else {
        if agent.is_some() {
            return Err("threadline: --agent needs --session".to_owned());
        }
        if is_dir {
            return Err(format!(
                "threadline: {path} is a directory: name a session with --session ID \
                 (`threadline sessions {path}` lists them)"
            ));
        }
        return Ok(path.to_owned());
    };
    if !is_dir {
        return Err(format!(
            "threadline: {path}: --session needs a Claude Code project directory"
        ));
    }
    let project = scan_project(path).map_err(|e| format!("threadline: {e}"))?;
    let Some(found) = project.session(session) else {
        return Err(format!(
            "threadline: {path}: no session {session} ({} sessions; `threadline sessions {path}` lists them)",
            project.sessions.len()
        ));
    };
    let file = match agent {
        None => found.path.as_deref().ok_or_else(|| {
            format!(
                "threadline: {path}: session {session} has only agent files; name one with --agent"
            )
        })?,
        Some(agent) => {
            let Some(file) = project.agent(session, agent) else {
                let known: Vec<&str> = found.agents.iter().map(|a| a.id.as_str()).collect();
                return Err(format!(
                    "threadline: {path}: session {session} has no agent {agent} (agents: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ));
            };
            &file.path
        }
    };
    Ok(file.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_command_prompt_is_titled_by_its_command_line() {
        assert_eq!(
            slash_command(
                "<command-message>init is analyzing…</command-message>\n<command-name>/init</command-name>"
            ),
            Some("/init".to_owned())
        );
        assert_eq!(
            slash_command(
                "<command-name>/review</command-name><command-args> PR 12 </command-args>"
            ),
            Some("/review PR 12".to_owned())
        );
        assert_eq!(slash_command("fix the bug"), None);
        assert_eq!(slash_command("<command-name>/x"), None);
    }
}
