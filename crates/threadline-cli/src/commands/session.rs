//! `threadline session fork|rewind|list|show`: operations on session transcripts (see
//! `threadline_message::session_ops`), and the preparation of `threadline run --resume`.
//!
//! Every operation that writes a session writes a new file (`--out`), created only if it does
//! not exist: a session is never overwritten. Errors are one line on stderr; bad input
//! (an unreadable file, an unknown message, too many turns, an existing `--out`) is exit 2.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use threadline_message::claude_code::{ImportOptions, import_claude_code};
use threadline_message::session_ops::{self, SessionInfo, rewrite_line, transcript_lines};
use threadline_message::transcript::{
    Format, ReadOptions, TranscriptWriter, WriterOptions, parse_transcript,
};
use threadline_message::{Message, MessageId};

use crate::error::CliError;
use crate::input::{InputError, InputLimit, read_input};
use crate::session::{Session, Sidechains, load_session, no_messages, read_session};
use crate::terminal_text::terminal_safe;
use threadline_cli::stderr_line;

/// The operations of `threadline session`.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionCommand {
    /// Fork a session: a new transcript holding every message up to and including `--at`.
    ///
    /// FILE is a threadline or Claude Code transcript. The kept messages get fresh ids
    /// derived from FILE's stem (the session id), the fork point and their old ids, so forking
    /// twice gives the same bytes; everything else in them is kept byte for byte. The new
    /// session starts with a `forked_from` record (never sent to the model). `--out` must not
    /// exist. Exit code 0: written; 2: unreadable input, unknown message, `--out` exists.
    Fork {
        /// The source transcript.
        file: String,
        /// The id of the last message to keep.
        #[arg(long, value_name = "MESSAGE_ID")]
        at: String,
        /// The new transcript (refused if it exists).
        #[arg(long, value_name = "NEW")]
        out: PathBuf,
    },
    /// Rewind a session: a new transcript without its last N typed prompts and what followed
    /// each.
    ///
    /// A typed prompt is a user message with text and no tool result that is not meta, not
    /// virtual and not a compaction summary. The kept messages are unchanged; a tool use left
    /// without its result is answered with an error result, so that the session still makes a
    /// valid request. `--out` must not exist. Exit code 0: written; 2: unreadable input, fewer
    /// typed prompts than N, `--out` exists.
    Rewind {
        /// The source transcript.
        file: String,
        /// How many typed prompts to drop (from the end).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        turns: u64,
        /// The new transcript (refused if it exists).
        #[arg(long, value_name = "NEW")]
        out: PathBuf,
    },
    /// List the threadline transcripts (`*.jsonl`) of a directory, newest first.
    ///
    /// One line each: id (the file stem), start time, message count, model, tokens (each
    /// response counted once), title (the last title record, else the first typed prompt).
    /// Files that are not threadline transcripts are named on stderr. Exit code 0: listed;
    /// 2: the directory cannot be read.
    List {
        /// The directory.
        dir: PathBuf,
        /// Print a JSON array instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Show one session's summary: id, title, start time, messages, model, tokens, origin.
    ///
    /// FILE is a threadline or Claude Code transcript. Exit code 0: shown; 2: unreadable.
    Show {
        /// The transcript (`-` reads stdin); with --restate, the session's id.
        file: String,
        /// Print one JSON object instead of lines.
        #[arg(long)]
        json: bool,
        /// Show a durable session of a Restate cluster instead (URL: its ingress): status,
        /// turns, messages, the step log of the running or last turn, a pending question.
        /// Works while a turn runs.
        #[arg(long, value_name = "URL")]
        restate: Option<String>,
        /// With --restate: print the session's history as a threadline transcript (one
        /// message per line).
        #[arg(long, requires = "restate", conflicts_with = "json")]
        transcript: bool,
    },
}

pub(crate) fn run(command: &SessionCommand, limit: InputLimit) -> Result<(), CliError> {
    match command {
        SessionCommand::Fork { file, at, out } => fork(file, at, out, limit),
        SessionCommand::Rewind { file, turns, out } => rewind(file, *turns, out, limit),
        SessionCommand::List { dir, json } => list(dir, *json, limit),
        SessionCommand::Show {
            file,
            json,
            restate: Some(url),
            transcript,
        } => super::durable::show(url, file, *json, *transcript, limit),
        SessionCommand::Show { file, json, .. } => show(file, *json, limit),
    }
}

/// The session id of the transcript at `path`: its file stem (`stdin` for `-`).
fn session_id(path: &str) -> String {
    if path == "-" {
        return "stdin".to_owned();
    }
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned())
}

/// Writes `messages` to the new transcript `out`; refuses an existing file.
pub(crate) fn write_new(out: &Path, messages: &[Message]) -> Result<(), CliError> {
    let mut writer = TranscriptWriter::create_new(out, WriterOptions::default()).map_err(|e| {
        if e.is_already_exists() {
            CliError::rejected(format!(
                "threadline: {}: the file exists; not overwritten (choose another --out)",
                out.display()
            ))
        } else {
            CliError::rejected(format!("threadline: {e}"))
        }
    })?;
    writer
        .append_all(messages)
        .map_err(|e| CliError::rejected(format!("threadline: {e}")))
}

/// Copies `bytes` (a threadline transcript, as read) to the new file `out`, byte for byte,
/// created with the transcript mode; refuses an existing file.
fn copy_new(out: &Path, bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(
        &mut open,
        threadline_message::transcript::TRANSCRIPT_MODE,
    );
    let mut file = open.open(out).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            CliError::rejected(format!(
                "threadline: {}: the file exists; not overwritten (choose another --out)",
                out.display()
            ))
        } else {
            CliError::Destination {
                what: format!("cannot create {}", out.display()),
                source: e.into(),
            }
        }
    })?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| CliError::Destination {
            what: format!("cannot write {}", out.display()),
            source: e.into(),
        })
}

/// Reads the transcript at `path` as `load_session` does, keeping its text.
fn load_with_text(path: &str, limit: InputLimit) -> Result<(Session, String), CliError> {
    let bytes = read_input(path, limit)?;
    let text = String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 {
        path: path.to_owned(),
    })?;
    let session = read_session(&text);
    if session.messages.is_empty() {
        return Err(CliError::from(no_messages(
            path,
            "no messages found (is this a transcript?)",
            &session.problems,
        )));
    }
    for problem in &session.problems {
        stderr_line!("threadline: {path}: {problem}");
    }
    Ok((session, text))
}

/// The text of each message's line, when `session` is a threadline transcript read from
/// `text` (an import has no lines of its own).
fn source_lines<'a>(session: &Session, text: &'a str) -> Option<Vec<&'a str>> {
    if session.format != Format::Threadline {
        return None;
    }
    let lines = transcript_lines(text);
    let same = lines.len() == session.messages.len()
        && lines
            .iter()
            .zip(&session.messages)
            .all(|(line, message)| line.message == *message);
    same.then(|| lines.into_iter().map(|line| line.text).collect())
}

/// Writes the new transcript `out`: each message as the line given for it (a source line,
/// rewritten), else serialized; key shapes redacted as the transcript writer does.
pub(crate) fn write_new_lines(
    out: &Path,
    lines: &[(Option<String>, &Message)],
) -> Result<(), CliError> {
    let mut text = String::new();
    for (line, message) in lines {
        match line {
            Some(line) => text.push_str(line),
            None => text.push_str(&serde_json::to_string(message).map_err(|e| {
                CliError::rejected(format!(
                    "threadline: cannot serialize message {}: {e}",
                    message.id()
                ))
            })?),
        }
        text.push('\n');
    }
    let bytes = threadline_wire::secret::redact_key_shapes_in_bytes(text.as_bytes());
    copy_new(out, &bytes)
}

fn fork(file: &str, at: &str, out: &Path, limit: InputLimit) -> Result<(), CliError> {
    let (session, text) = load_with_text(file, limit)?;
    let source = session_id(file);
    let forked = session_ops::fork(&session.messages, &MessageId::from(at), &source)
        .map_err(|e| CliError::rejected(format!("threadline: session fork: {file}: {e}")))?;
    // The record, then each kept message from its source line when there is one.
    let from = source_lines(&session, &text);
    let mut lines: Vec<(Option<String>, &Message)> = vec![(None, &forked.messages[0])];
    for (n, message) in forked.kept().iter().enumerate() {
        let line = from
            .as_ref()
            .and_then(|from| from.get(n))
            .and_then(|source| rewrite_line(source, message));
        lines.push((line, message));
    }
    write_new_lines(out, &lines)?;
    stderr_line!(
        "threadline: session fork: {} of {} messages of {source} (up to {at}) forked to {}",
        forked.kept().len(),
        session.messages.len(),
        out.display()
    );
    Ok(())
}

fn rewind(file: &str, turns: u64, out: &Path, limit: InputLimit) -> Result<(), CliError> {
    let (session, text) = load_with_text(file, limit)?;
    let turns = usize::try_from(turns).unwrap_or(usize::MAX);
    let rewound = session_ops::rewind(&session.messages, turns)
        .map_err(|e| CliError::rejected(format!("threadline: session rewind: {file}: {e}")))?;
    // The kept prefix as its source lines, unchanged; the added results serialized.
    let from = source_lines(&session, &text);
    let lines: Vec<(Option<String>, &Message)> = rewound
        .messages
        .iter()
        .enumerate()
        .map(|(n, message)| {
            let line = (n < rewound.kept)
                .then(|| from.as_ref().and_then(|from| from.get(n)))
                .flatten()
                .map(|line| (*line).to_owned());
            (line, message)
        })
        .collect();
    write_new_lines(out, &lines)?;
    let answered = if rewound.answered.is_empty() {
        String::new()
    } else {
        format!(
            "; error results for the tool uses left without one: {}",
            rewound.answered.join(", ")
        )
    };
    stderr_line!(
        "threadline: session rewind: {turns} turn(s) dropped, {} of {} messages kept, written to {}{answered}",
        rewound.kept,
        session.messages.len(),
        out.display()
    );
    Ok(())
}

fn list(dir: &Path, json: bool, limit: InputLimit) -> Result<(), CliError> {
    let options = ReadOptions::default()
        .with_max_line_bytes(usize::try_from(limit.bytes()).unwrap_or(usize::MAX));
    let listing = session_ops::list_sessions(dir, &options)
        .map_err(|e| CliError::rejected(format!("threadline: session list: {e}")))?;
    for skipped in &listing.skipped {
        stderr_line!(
            "threadline: session list: {}: skipped: {}",
            skipped.path.display(),
            skipped.reason
        );
    }
    if json {
        let text = serde_json::to_string_pretty(&listing.sessions).map_err(|e| {
            CliError::rejected(format!("threadline: cannot print the listing: {e}"))
        })?;
        crate::output::print_json(&text);
        return Ok(());
    }
    let infos: Vec<&SessionInfo> = listing.sessions.iter().map(|s| &s.info).collect();
    crate::output::print(&table(&infos));
    Ok(())
}

/// The listing table: a header, then one line per session.
fn table(sessions: &[&SessionInfo]) -> String {
    let rows: Vec<[String; 6]> = sessions
        .iter()
        .map(|s| {
            [
                terminal_safe(&s.id, false).into_owned(),
                s.started
                    .as_ref()
                    .map(|t| terminal_safe(t.as_str(), false).into_owned())
                    .unwrap_or_else(|| "-".into()),
                s.message_count.to_string(),
                s.model
                    .as_deref()
                    .map(|m| terminal_safe(m, false).into_owned())
                    .unwrap_or_else(|| "-".into()),
                s.tokens.total().to_string(),
                s.title
                    .as_deref()
                    .map(|t| terminal_safe(t, false).into_owned())
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = ["ID", "STARTED", "MESSAGES", "MODEL", "TOKENS", "TITLE"].map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (n, (cell, width)) in row.iter().zip(widths).enumerate() {
            if n + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = width.saturating_sub(cell.chars().count());
                let numeric = n == 2 || n == 4;
                if numeric {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
                line.push_str("  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn show(file: &str, json: bool, limit: InputLimit) -> Result<(), CliError> {
    let session = load_session(file, Sidechains::Never, limit)?;
    let info = session_ops::summarize(session_id(file), &session.messages);
    if json {
        let mut value = serde_json::to_value(&info).map_err(|e| {
            CliError::rejected(format!("threadline: cannot print the summary: {e}"))
        })?;
        if let Some(object) = value.as_object_mut() {
            object.insert("format".into(), session.format.name().into());
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| {
            CliError::rejected(format!("threadline: cannot print the summary: {e}"))
        })?;
        crate::output::print_json(&text);
        return Ok(());
    }
    let safe = |text: &str| terminal_safe(text, false).into_owned();
    let mut out = String::new();
    out.push_str(&format!("id        {}\n", safe(&info.id)));
    out.push_str(&format!("format    {}\n", session.format));
    out.push_str(&format!(
        "title     {}\n",
        info.title
            .as_deref()
            .map(safe)
            .unwrap_or_else(|| "-".into())
    ));
    out.push_str(&format!(
        "started   {}\n",
        info.started
            .as_ref()
            .map(|t| safe(t.as_str()))
            .unwrap_or_else(|| "-".into())
    ));
    out.push_str(&format!("messages  {}\n", info.message_count));
    out.push_str(&format!(
        "model     {}\n",
        info.model
            .as_deref()
            .map(safe)
            .unwrap_or_else(|| "-".into())
    ));
    let t = &info.tokens;
    out.push_str(&format!(
        "tokens    {} ({} in, {} cache write, {} cache read, {} out)\n",
        t.total(),
        t.input_tokens,
        t.cache_creation_input_tokens,
        t.cache_read_input_tokens,
        t.output_tokens
    ));
    if let Some(origin) = &info.forked_from {
        out.push_str(&format!(
            "forked    from {} at {}\n",
            safe(&origin.session),
            safe(origin.message.as_str())
        ));
    }
    crate::output::print(&out);
    Ok(())
}

/// A session to resume: its history, the transcript the run appends to, and the model it
/// last talked to.
pub(crate) struct Resume {
    pub(crate) history: Vec<Message>,
    pub(crate) transcript: PathBuf,
    pub(crate) model: Option<String>,
}

/// Reads the transcript `file` for `run --resume`. A threadline transcript is appended to in
/// place (or, with `out`, copied byte for byte to the new file `out`, which is appended to;
/// a cut last line is then terminated by the writer as in place); a Claude Code
/// transcript is imported into the new file `out`, by default `STEM.threadline.jsonl` beside
/// it. Where the session continues is said on stderr. The error is one line (exit 2).
pub(crate) fn prepare_resume(
    file: &Path,
    out: Option<&Path>,
    limit: InputLimit,
) -> Result<Resume, CliError> {
    let shown = file.display().to_string();
    if shown == "-" {
        return Err(CliError::rejected(
            "threadline: run: --resume needs a transcript file, not stdin",
        ));
    }
    let bytes = read_input(&shown, limit)?;
    let text = String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 {
        path: shown.clone(),
    })?;
    let (history, problems, imported) = if Format::detect(&text) == Format::ClaudeCode {
        let result = import_claude_code(&text, &ImportOptions::default());
        let problems: Vec<String> = result.problems.iter().map(ToString::to_string).collect();
        (result.messages, problems, true)
    } else {
        let read = parse_transcript(&text);
        let problems: Vec<String> = read.problems.iter().map(ToString::to_string).collect();
        (read.messages, problems, false)
    };
    if history.is_empty() {
        return Err(CliError::from(no_messages(
            &shown,
            "no messages to resume (is this a transcript?)",
            &problems,
        )));
    }
    for problem in &problems {
        stderr_line!("threadline: {shown}: {problem}");
    }
    let model = history.iter().rev().find_map(|m| match m {
        Message::Assistant(a) if !a.model.is_empty() && !a.is_api_error => Some(a.model.clone()),
        _ => None,
    });
    let transcript = match (imported, out) {
        (false, None) => {
            stderr_line!(
                "threadline: run: resuming {shown} ({} messages); the session is appended to it",
                history.len()
            );
            file.to_path_buf()
        }
        (false, Some(out)) => {
            copy_new(out, text.as_bytes())?;
            stderr_line!(
                "threadline: run: resuming {shown} ({} messages) in {}; the session is appended there",
                history.len(),
                out.display()
            );
            out.to_path_buf()
        }
        (true, out) => {
            let out = out.map_or_else(|| default_import_path(file), Path::to_path_buf);
            write_new(&out, &history)?;
            stderr_line!(
                "threadline: run: imported {} messages of the Claude Code transcript {shown} into {}; the session continues there",
                history.len(),
                out.display()
            );
            out
        }
    };
    Ok(Resume {
        history,
        transcript,
        model,
    })
}

/// Where an imported Claude Code session continues by default: `STEM.threadline.jsonl` in the
/// same directory.
fn default_import_path(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_owned());
    file.with_file_name(format!("{stem}.threadline.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_import_path_is_beside_the_file() {
        assert_eq!(
            default_import_path(Path::new("/p/abc.jsonl")),
            PathBuf::from("/p/abc.threadline.jsonl")
        );
        assert_eq!(session_id("/p/abc.jsonl"), "abc");
        assert_eq!(session_id("-"), "stdin");
    }
}
