//! `threadline sessions DIR [--json]`: the sessions of a Claude Code project directory.

use std::path::Path;

use serde_json::{Value, json};
use threadline_message::claude_code::{ImportOptions, ImportResult, import_claude_code_file};
use threadline_message::claude_code_project::{AgentFile, AgentKind, SessionFiles, scan_project};

use threadline_message::SessionInfo;

use crate::error::CliError;
use crate::input::InputLimit;
use crate::project::overview;
use crate::terminal_text::terminal_safe;
use threadline_cli::stderr_line;

/// Lists every session of `dir` (with its agents) as a table, or as one JSON object.
pub(crate) fn run(dir: &str, json_output: bool, limit: InputLimit) -> Result<(), CliError> {
    let project = scan_project(dir)?;
    for problem in &project.problems {
        let path = problem.path.display().to_string();
        stderr_line!("threadline: {path}: {}", problem.reason);
    }
    let options = ImportOptions::default();
    let mut rows = Vec::new();
    for session in &project.sessions {
        rows.push(session_row(session, &options, limit));
    }
    // The oldest first; a session whose start is unknown after those that have one.
    rows.sort_by(|a, b| {
        let key = |r: &Value| {
            (
                r["start"].as_str().map_or(1, |_| 0),
                r["start"].as_str().unwrap_or_default().to_owned(),
                r["id"].as_str().unwrap_or_default().to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    let orphans: Vec<Value> = project
        .orphan_agents
        .iter()
        .map(|agent| agent_row(agent, &options, limit))
        .collect();
    if json_output {
        let report = json!({
            "project": dir,
            "sessions": rows,
            "orphan_agents": orphans,
            "problems": project.problems.iter().map(|p| json!({
                "path": p.path.display().to_string(),
                "reason": p.reason,
            })).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::output(None, "cannot print the list", e))?;
        crate::output::print_json(&text);
    } else {
        crate::output::print_line(&render(&rows, &orphans));
    }
    Ok(())
}

/// Imports the file at `path` (streamed line by line), unless it is larger than the input
/// limit (`--max-input-bytes`), which every file a command reads is held to.
fn import(path: &Path, options: &ImportOptions, limit: InputLimit) -> Result<ImportResult, String> {
    let size = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read: {e}"))?
        .len();
    if size > limit.bytes() {
        return Err(format!(
            "{size} bytes, larger than the limit of {} bytes (raise it with --max-input-bytes)",
            limit.bytes()
        ));
    }
    import_claude_code_file(path, options).map_err(|e| e.to_string())
}

fn session_row(session: &SessionFiles, options: &ImportOptions, limit: InputLimit) -> Value {
    let mut row = match &session.path {
        Some(path) => file_row(path, options, limit),
        None => json!({"path": null, "error": "no session file (only its agents' files)"}),
    };
    row["id"] = json!(session.id);
    row["agents"] = Value::Array(
        session
            .agents
            .iter()
            .map(|agent| agent_row(agent, options, limit))
            .collect(),
    );
    row
}

fn agent_row(agent: &AgentFile, options: &ImportOptions, limit: InputLimit) -> Value {
    let mut row = file_row(&agent.path, options, limit);
    row["id"] = json!(agent.id);
    row["kind"] = json!(match agent.kind {
        AgentKind::Compaction => "compaction",
        _ => "subagent",
    });
    row["agent_type"] = json!(agent.agent_type());
    row["description"] = json!(agent.description());
    row
}

fn file_row(path: &Path, options: &ImportOptions, limit: InputLimit) -> Value {
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let mut row = match import(path, options, limit) {
        Ok(imported) => overview_json(&overview(id, &imported)),
        Err(error) => json!({"error": error}),
    };
    row["path"] = json!(path.display().to_string());
    row
}

fn overview_json(info: &SessionInfo) -> Value {
    json!({
        "title": info.title,
        "start": info.started.as_ref().map(|t| t.as_str()),
        "messages": info.message_count,
        "model": info.model,
        "tokens": {
            "input": info.tokens.input_tokens,
            "cache_creation": info.tokens.cache_creation_input_tokens,
            "cache_read": info.tokens.cache_read_input_tokens,
            "output": info.tokens.output_tokens,
            "total": info.tokens.total(),
        },
    })
}

/// The table: one line per session, its agents indented below it.
fn render(rows: &[Value], orphans: &[Value]) -> String {
    let mut out = String::from(
        "SESSION                               START                     MESSAGES  MODEL                       TOKENS  TITLE\n",
    );
    for row in rows {
        out.push_str(&line(row, ""));
        for agent in row["agents"].as_array().into_iter().flatten() {
            out.push_str(&line(agent, "  agent "));
        }
    }
    for agent in orphans {
        out.push_str(&line(agent, "? agent "));
    }
    if rows.is_empty() && orphans.is_empty() {
        out.push_str("(no sessions)\n");
    }
    out.pop();
    out
}

/// One row of the table. Ids (file names), errors, titles and models come from the files:
/// each is escaped as one line, so that a file name holding a newline cannot print a row.
fn line(row: &Value, prefix: &str) -> String {
    let safe = |key: &str, default: &'static str| {
        terminal_safe(row[key].as_str().unwrap_or(default), false).into_owned()
    };
    let id = format!("{prefix}{}", safe("id", ""));
    if row["error"].is_string() {
        return format!("{id:<37} {}\n", safe("error", ""));
    }
    let kind = match row["kind"].as_str() {
        Some("compaction") => "(compaction) ",
        _ => "",
    };
    let title: String = row["title"]
        .as_str()
        .unwrap_or("-")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(60)
        .collect();
    let title = terminal_safe(&title, false);
    format!(
        "{id:<37} {:<25} {:>8}  {:<25} {:>8}  {kind}{title}\n",
        safe("start", "-"),
        row["messages"].as_u64().unwrap_or(0),
        safe("model", "-"),
        row["tokens"]["total"].as_u64().unwrap_or(0),
    )
}
