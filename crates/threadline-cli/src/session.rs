//! Reading a session transcript (ours or Claude Code's) and turning it into a request.

use threadline_message::Message;
use threadline_message::claude_code::{
    ImportOptions, NextRequest, RecordedRequest, import_claude_code,
};
use threadline_message::transcript::{Format, parse_transcript};
use threadline_normalize::{Normalized, Options, normalize};
use threadline_wire::MessagesRequest;
use threadline_wire::model::ModelTable;

use crate::input::{InputError, InputLimit, read_input};
use crate::stderr_line;

// The model a request is built for when neither the flag nor the transcript names one, and
// the `max_tokens` used when the flag does not give one (capped at the model's maximum).
use threadline_wire::defaults::{DEFAULT_MODEL, max_tokens_for};

/// A transcript, read.
pub struct Session {
    /// The internal messages.
    pub messages: Vec<Message>,
    /// Ours or Claude Code's (displayed and serialized `threadline` or `claude-code`).
    pub format: Format,
    /// Lines skipped or imported imperfectly, one printable line each.
    pub problems: Vec<String>,
    /// A Claude Code 2.1.3xx transcript's next request according to its own request records
    /// (see [`threadline_message::claude_code::NextRequest`]), with the recorded request it
    /// extends.
    pub recorded: Option<(NextRequest, Option<RecordedRequest>)>,
}

impl Session {
    /// Whether the session holds a user or an assistant message: a file with only metadata,
    /// system events or attachments is no conversation to build a request from.
    pub fn has_conversation(&self) -> bool {
        self.messages
            .iter()
            .any(|m| matches!(m, Message::User(_) | Message::Assistant(_)))
    }
}

/// Whether `text` looks like a JSONL transcript rather than one JSON document: two or more
/// lines that start with an object, or one object that is no request body (no `messages`, no
/// fixture `format`) but a transcript record (what a crash right after the prompt leaves).
pub fn looks_like_transcript(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(first) = lines
        .next()
        .and_then(|l| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(l).ok())
    else {
        return false;
    };
    if lines.next().is_some() {
        return true;
    }
    !first.contains_key("messages")
        && !first.contains_key("format")
        && !read_session(text).messages.is_empty()
}

/// Reads a transcript of either format (a Claude Code one as the model's view: from the last
/// compaction on).
pub fn read_session(text: &str) -> Session {
    read_session_with(text, &ImportOptions::default())
}

/// Reads a transcript of either format, a Claude Code one with `options`.
fn read_session_with(text: &str, options: &ImportOptions) -> Session {
    match Format::detect(text) {
        Format::ClaudeCode => {
            let imported = import_claude_code(text, options);
            let recorded = imported.next_claude_code_request().map(|next| {
                let anchor = next.anchor.and_then(|i| imported.requests.get(i).cloned());
                (next, anchor)
            });
            Session {
                messages: imported.messages,
                format: Format::ClaudeCode,
                problems: imported.problems.iter().map(|p| p.to_string()).collect(),
                recorded,
            }
        }
        // Ours, and any format a later version of the library knows and this one does not.
        format => {
            let read = parse_transcript(text);
            Session {
                messages: read.messages,
                format,
                problems: read.problems.iter().map(|p| p.to_string()).collect(),
                recorded: None,
            }
        }
    }
}

/// What to read of a Claude Code transcript whose main chain is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sidechains {
    /// Nothing: such a transcript has no messages.
    Never,
    /// Its sidechains (a sub-agent's file, where every record is on one).
    WhenNoMainChain,
}

/// Reads the transcript at `path` (`-` for stdin) for a command, and prints the problems found
/// in it to stderr, one line each. The error says why there is no session (unreadable, not
/// UTF-8, no user or assistant message); the command exits with code 2. A Claude Code sub-agent file (every record a sidechain) is imported as its own
/// main chain.
pub fn load_session(
    path: &str,
    sidechains: Sidechains,
    limit: InputLimit,
) -> Result<Session, InputError> {
    load(path, sidechains, &ImportOptions::default(), limit)
}

/// [`load_session`] for a command that replays the whole session rather than continuing it
/// (`inspect`): a Claude Code transcript's history before its compactions is read too
/// (`logicalParentUuid` followed), with the boundaries where they were.
pub fn load_session_history(
    path: &str,
    sidechains: Sidechains,
    limit: InputLimit,
) -> Result<Session, InputError> {
    load(
        path,
        sidechains,
        &ImportOptions::default().with_compacted_history(true),
        limit,
    )
}

fn load(
    path: &str,
    sidechains: Sidechains,
    options: &ImportOptions,
    limit: InputLimit,
) -> Result<Session, InputError> {
    let bytes = read_input(path, limit)?;
    let text = String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 {
        path: path.to_owned(),
    })?;
    let mut session = read_session_with(&text, options);
    if !session.has_conversation()
        && sidechains == Sidechains::WhenNoMainChain
        && session.format == Format::ClaudeCode
    {
        let imported = import_claude_code(&text, &options.clone().with_sidechains(true));
        session.messages = imported.messages;
        session.recorded = None;
    }
    if !session.has_conversation() {
        return Err(no_messages(
            path,
            "no messages found (no user or assistant record; is this a transcript?)",
            &session.problems,
        ));
    }
    for problem in &session.problems {
        stderr_line!("threadline: {path}: {problem}");
    }
    Ok(session)
}

/// The error for a transcript that gave no message: `what`, and the first problem the reader
/// reported (a file where no line parses says why its first line did not).
pub fn no_messages(path: &str, what: &str, problems: &[String]) -> InputError {
    InputError::NoMessages {
        path: path.to_owned(),
        what: what.to_owned(),
        first: problems.first().cloned(),
        problems: problems.len(),
    }
}

/// The model the session last talked to, if it says.
fn model_of(messages: &[Message]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) if !a.model.is_empty() && !a.is_api_error => Some(a.model.as_str()),
        _ => None,
    })
}

/// Where a session's history leaves the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuation {
    /// The history ends where the model speaks next (a prompt, a tool result, a paused turn):
    /// the request that continues the session is the history itself.
    Ready,
    /// The history ends with the model's complete answer: the request that continues the
    /// session is the history plus the user's next message. The history alone would be a
    /// prefill, which most current models reject.
    Finished,
}

/// The placeholder `check` puts where a finished session's next user message will be, so
/// that everything before it is checked as the next request will carry it.
pub const NEXT_MESSAGE_PLACEHOLDER: &str = "(the next user message)";

/// The request that continues the session, the normalizer's report, and where the history
/// left it. A finished session's request ends with `next` as the user's next message; with
/// no `next`, the request is the history alone (see [`Continuation::Finished`]).
///
/// A Claude Code transcript that holds its own request records gives the request Claude Code
/// sends next (see `recorded_request`) instead of the normalizer's.
pub fn build_request(
    session: &Session,
    model: Option<&str>,
    max_tokens: Option<u64>,
    next: Option<&str>,
) -> (MessagesRequest, Normalized, Continuation) {
    if let Some((next_request, anchor)) = &session.recorded {
        return recorded_request(
            session,
            next_request,
            anchor.as_ref(),
            model,
            max_tokens,
            next,
        );
    }
    let model = model
        .or_else(|| model_of(&session.messages))
        .unwrap_or(DEFAULT_MODEL)
        .to_owned();
    let max_tokens =
        max_tokens.unwrap_or_else(|| max_tokens_for(ModelTable::builtin().resolve(&model).model()));
    let mut normalized = normalize(&session.messages, &Options::default());
    let continuation = continuation(&session.messages, &normalized);
    if let (Continuation::Finished, Some(next)) = (continuation, next) {
        let mut messages = session.messages.clone();
        messages.push(Message::user_text(next));
        normalized = normalize(&messages, &Options::default());
    }
    let request = MessagesRequest::new(model, max_tokens, normalized.messages.clone());
    (request, normalized, continuation)
}

/// The request Claude Code sends next, from its records: the recorded messages and what the
/// conversation added since ([`NextRequest`]), the recorded `system` (the shape's blocks:
/// Claude Code's billing line is not recorded) and `tools`, and the recorded `thinking`,
/// `context_management` and `output_config`; `model` and `max_tokens` as recorded unless
/// given. The normalizer repairs nothing here: the report is empty.
fn recorded_request(
    session: &Session,
    next_request: &NextRequest,
    anchor: Option<&RecordedRequest>,
    model: Option<&str>,
    max_tokens: Option<u64>,
    next: Option<&str>,
) -> (MessagesRequest, Normalized, Continuation) {
    use threadline_wire::{Content, MessageParam, Role};
    let mut messages = next_request.messages.clone();
    let ends_with_answer = messages.last().is_some_and(|m| m.role == Role::Assistant);
    let continuation = if ends_with_answer {
        Continuation::Finished
    } else {
        Continuation::Ready
    };
    if let (Continuation::Finished, Some(next)) = (continuation, next) {
        messages.push(MessageParam::new(
            Role::User,
            Content::Text(next.to_owned()),
        ));
    }
    let model = model
        .or_else(|| anchor.and_then(RecordedRequest::model))
        .or_else(|| model_of(&session.messages))
        .unwrap_or(DEFAULT_MODEL)
        .to_owned();
    let max_tokens = max_tokens
        .or_else(|| anchor.and_then(RecordedRequest::max_tokens))
        .unwrap_or_else(|| max_tokens_for(ModelTable::builtin().resolve(&model).model()));
    let mut request = MessagesRequest::new(model, max_tokens, messages.clone());
    let mut body = serde_json::to_value(&request).unwrap_or_default();
    if let (Some(object), Some(anchor)) = (body.as_object_mut(), anchor) {
        if let Some(shape) = &anchor.shape {
            if shape.system.is_array() {
                object.insert("system".to_owned(), shape.system.clone());
            }
            if shape.tools.is_array() {
                object.insert("tools".to_owned(), shape.tools.clone());
            }
        }
        for key in ["thinking", "context_management", "output_config"] {
            if let Some(value) = anchor.params.get(key) {
                object.insert(key.to_owned(), value.clone());
            }
        }
    }
    // What Claude Code recorded was what it sent: should a field not read back, the request
    // keeps its messages, model and max_tokens.
    if let Ok(full) = serde_json::from_value(body) {
        request = full;
    }
    let normalized = Normalized {
        messages,
        report: Default::default(),
    };
    (request, normalized, continuation)
}

/// Whether the normalized history ends with the model's complete answer.
fn continuation(messages: &[Message], normalized: &Normalized) -> Continuation {
    let ends_with_assistant = normalized
        .messages
        .last()
        .is_some_and(|m| m.role == threadline_wire::Role::Assistant);
    let paused = messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => {
            Some(a.stop_reason == Some(threadline_wire::StopReason::PauseTurn))
        }
        _ => None,
    });
    if ends_with_assistant && paused != Some(true) {
        Continuation::Finished
    } else {
        Continuation::Ready
    }
}
