//! Claude Code project directories on the command line: which file `DIR --session ID
//! [--agent AGENT_ID]` names, and the one-line overview `threadline sessions` shows of each
//! transcript.

use std::path::Path;

use threadline_message::claude_code::ImportResult;
use threadline_message::claude_code_project::scan_project;
use threadline_message::{SessionInfo, summarize};

/// What `threadline sessions` shows of one transcript: the session summary of
/// [`threadline_message::summarize`] over the imported conversation (start, messages,
/// model), titled as Claude Code titles a session ([`ImportResult::title`]: its title
/// records, else its first prompt), with the tokens of every response the file records
/// ([`ImportResult::usage`]: once per request, the last fragment winning, on abandoned
/// branches and before compactions too — what the session cost, where the import is only
/// what the model sees next).
pub fn overview(id: &str, imported: &ImportResult) -> SessionInfo {
    let mut info = summarize(id, &imported.messages);
    if let Some(title) = imported.title() {
        info.title = Some(title.to_owned());
    }
    // The session started at its first record, not at the first message of the request
    // view (which, after a compaction, is the summary).
    if let Some(first) = &imported.session.first_timestamp {
        info.started = Some(threadline::message::Timestamp(first.clone()));
    }
    info.tokens = imported.usage();
    info
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
