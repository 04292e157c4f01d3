//! Claude Code project directories on the command line: which file `DIR --session ID
//! [--agent AGENT_ID]` names, and the one-line overview `threadline sessions` shows of each
//! transcript.

use std::path::Path;

use threadline_message::claude_code::ImportResult;
use threadline_message::claude_code_project::scan_project;

/// What `threadline sessions` shows of one transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// The session's title: its last `custom-title`, `ai-title`, `last-prompt` or `summary`,
    /// else its first typed prompt (at most 200 characters).
    pub title: Option<String>,
    /// The first timestamp of the conversation.
    pub start: Option<String>,
    /// User and assistant messages imported (a streamed response split over several records
    /// counts once).
    pub messages: usize,
    /// The model of the last response.
    pub model: Option<String>,
    /// Tokens, each request counted once.
    pub usage: UsageTotals,
}

/// Token counts over the requests of a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UsageTotals {
    /// Requests with recorded usage.
    pub requests: u64,
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl UsageTotals {
    /// Every token, input and output (saturating).
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.output_tokens)
    }
}

/// The overview of an imported transcript.
pub fn overview(imported: &ImportResult) -> Overview {
    use threadline_message::Message;
    use threadline_wire::ContentBlock;
    let mut usage = UsageTotals::default();
    // One request per response: the last fragment's usage wins (early fragments carry a
    // streaming placeholder for output).
    let mut last: Option<(&str, &threadline_wire::Usage)> = None;
    let add = |u: &threadline_wire::Usage, totals: &mut UsageTotals| {
        totals.requests += 1;
        totals.input_tokens = totals
            .input_tokens
            .saturating_add(u.input_tokens.unwrap_or(0));
        totals.cache_creation_input_tokens = totals
            .cache_creation_input_tokens
            .saturating_add(u.cache_creation_input_tokens.unwrap_or(0));
        totals.cache_read_input_tokens = totals
            .cache_read_input_tokens
            .saturating_add(u.cache_read_input_tokens.unwrap_or(0));
        totals.output_tokens = totals
            .output_tokens
            .saturating_add(u.output_tokens.unwrap_or(0));
    };
    let mut messages = 0;
    let mut previous_response: Option<&str> = None;
    let mut first_prompt = None;
    let mut model = None;
    for message in &imported.messages {
        match message {
            Message::User(user) => {
                messages += 1;
                previous_response = None;
                if first_prompt.is_none() && !user.is_meta && !user.is_compact_summary {
                    first_prompt = user.content.iter().find_map(|b| match b {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(t.text.clone()),
                        _ => None,
                    });
                }
            }
            Message::Assistant(assistant) if !assistant.is_api_error => {
                let key = assistant
                    .request_id
                    .as_deref()
                    .or(assistant.api_message_id.as_deref());
                if key.is_none() || key != previous_response {
                    messages += 1;
                }
                previous_response = key;
                if !assistant.model.is_empty() {
                    model = Some(assistant.model.clone());
                }
                if let (Some(key), Some(u)) = (key, assistant.usage.as_deref()) {
                    match last {
                        Some((k, _)) if k == key => last = Some((key, u)),
                        Some((_, previous)) => {
                            add(previous, &mut usage);
                            last = Some((key, u));
                        }
                        None => last = Some((key, u)),
                    }
                }
            }
            _ => {}
        }
    }
    if let Some((_, u)) = last {
        add(u, &mut usage);
    }
    let title = imported
        .summaries()
        .last()
        .map(|s| s.summary.to_owned())
        .or_else(|| first_prompt.map(|p| p.chars().take(200).collect()));
    Overview {
        title,
        start: imported
            .messages
            .iter()
            .map(|m| m.header().timestamp.0.as_str())
            .find(|t| !t.is_empty())
            .map(str::to_owned),
        messages,
        model,
        usage,
    }
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
