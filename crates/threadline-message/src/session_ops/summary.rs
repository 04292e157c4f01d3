//! What a listing of sessions shows of each: [`summarize`] and [`list_sessions`].

use std::path::{Path, PathBuf};

use serde::Serialize;
use threadline_wire::ContentBlock;

use crate::header::{MessageId, Timestamp};
use crate::message::Message;
use crate::response_usage::{ResponseUsage, UsageTotals};
use crate::session_ops::error::SessionOpError;
use crate::session_ops::rewind::is_typed_prompt;
use crate::system::SystemKind;
use crate::transcript::{ReadOptions, read_transcript_with};

/// The longest title taken from a prompt, in characters (a longer prompt is cut and ends
/// with `…`).
pub const TITLE_MAX_CHARS: usize = 200;

/// Where a forked session came from (its first [`SystemKind::ForkedFrom`] record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForkOrigin {
    /// The source session's id.
    pub session: String,
    /// The source message the fork ends with.
    pub message: MessageId,
}

/// One session, as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session's id (its transcript's file stem).
    pub id: String,
    /// The last [`SystemKind::Title`], else the first typed prompt (at most
    /// [`TITLE_MAX_CHARS`] characters, on one line); `None` without either.
    pub title: Option<String>,
    /// The first message's timestamp.
    pub started: Option<Timestamp>,
    /// Messages in the session (every kind).
    pub message_count: usize,
    /// The model of the last assistant message that names one (API errors aside).
    pub model: Option<String>,
    /// Tokens: the usage of each response, counted once per `request_id` (else API message
    /// id, else message id), the last fragment's usage winning.
    pub tokens: UsageTotals,
    /// The session it was forked from.
    pub forked_from: Option<ForkOrigin>,
}

/// The summary of the session `id` made of `messages`.
pub fn summarize(id: impl Into<String>, messages: &[Message]) -> SessionInfo {
    let mut title = None;
    let mut prompt = None;
    let mut model = None;
    let mut forked_from = None;
    for message in messages {
        match message {
            Message::System(system) => match &system.kind {
                SystemKind::Title { title: t } => title = Some(t.as_str()),
                SystemKind::ForkedFrom { session, message } if forked_from.is_none() => {
                    forked_from = Some(ForkOrigin {
                        session: session.clone(),
                        message: message.clone(),
                    });
                }
                _ => {}
            },
            Message::Assistant(assistant)
                if !assistant.model.is_empty() && !assistant.is_api_error =>
            {
                model = Some(assistant.model.as_str());
            }
            Message::User(_) if prompt.is_none() && is_typed_prompt(message) => {
                prompt = Some(message);
            }
            _ => {}
        }
    }
    let mut tokens = UsageTotals::default();
    for used in ResponseUsage::of(messages).responses() {
        tokens.responses += 1;
        tokens.input_tokens = tokens
            .input_tokens
            .saturating_add(used.input_tokens.unwrap_or(0));
        tokens.output_tokens = tokens
            .output_tokens
            .saturating_add(used.output_tokens.unwrap_or(0));
        tokens.cache_creation_input_tokens = tokens
            .cache_creation_input_tokens
            .saturating_add(used.cache_creation_input_tokens.unwrap_or(0));
        tokens.cache_read_input_tokens = tokens
            .cache_read_input_tokens
            .saturating_add(used.cache_read_input_tokens.unwrap_or(0));
    }
    SessionInfo {
        id: id.into(),
        title: title
            .map(one_line)
            .or_else(|| prompt.and_then(prompt_title)),
        started: messages.first().map(|m| m.header().timestamp.clone()),
        message_count: messages.len(),
        model: model.map(str::to_owned),
        tokens,
        forked_from,
    }
}

/// The title of a typed prompt: its text blocks on one line, cut at [`TITLE_MAX_CHARS`].
fn prompt_title(message: &Message) -> Option<String> {
    let Message::User(user) = message else {
        return None;
    };
    let text: Vec<&str> = user
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let title = one_line(&text.join(" "));
    if title.is_empty() {
        return None;
    }
    if title.chars().count() <= TITLE_MAX_CHARS {
        return Some(title);
    }
    let mut cut: String = title.chars().take(TITLE_MAX_CHARS - 1).collect();
    cut.push('…');
    Some(cut)
}

/// `text` with every run of whitespace (newlines included) made one space, trimmed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A listed transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ListedSession {
    /// The transcript's path.
    pub path: PathBuf,
    /// Its summary.
    #[serde(flatten)]
    pub info: SessionInfo,
    /// Lines of it that did not parse (skipped).
    pub bad_lines: usize,
}

/// A file [`list_sessions`] left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SkippedFile {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// The sessions of a directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Listing {
    /// The transcripts, newest first (by start time; then by id).
    pub sessions: Vec<ListedSession>,
    /// `.jsonl` files that could not be read or hold no threadline message, by path.
    pub skipped: Vec<SkippedFile>,
}

/// Summarizes every threadline transcript (`*.jsonl`, not in subdirectories) of `dir`. A
/// file that cannot be read, or in which no line is a threadline message (a Claude Code
/// transcript, say), is listed in [`Listing::skipped`]; the error is for a directory that
/// cannot be read.
pub fn list_sessions(dir: &Path, options: &ReadOptions) -> Result<Listing, SessionOpError> {
    let read_dir_error = |source| SessionOpError::ReadDir {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_dir_error)? {
        let path = entry.map_err(read_dir_error)?.path();
        // Regular files only: a link is not followed out of the directory.
        let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        if path.extension().is_some_and(|e| e == "jsonl") && regular {
            paths.push(path);
        }
    }
    paths.sort();
    let mut listing = Listing::default();
    for path in paths {
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match read_transcript_with(&path, options) {
            Err(error) => listing.skipped.push(SkippedFile {
                path,
                reason: error.to_string(),
            }),
            Ok(read) if read.messages.is_empty() => listing.skipped.push(SkippedFile {
                path,
                reason: "no threadline message in it".to_owned(),
            }),
            Ok(read) => listing.sessions.push(ListedSession {
                info: summarize(id, &read.messages),
                bad_lines: read.problems.len(),
                path,
            }),
        }
    }
    listing.sessions.sort_by(|a, b| {
        b.info
            .started
            .cmp(&a.info.started)
            .then_with(|| a.info.id.cmp(&b.info.id))
    });
    Ok(listing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Header;
    use threadline_wire::Usage;

    fn usage(input: u64, output: u64) -> Box<Usage> {
        Box::new(
            serde_json::from_value(serde_json::json!({
                "input_tokens": input, "output_tokens": output,
                "cache_read_input_tokens": 1, "cache_creation_input_tokens": 2
            }))
            .expect("a usage"),
        )
    }

    fn fragment(id: &str, api: &str, used: Option<Box<Usage>>) -> Message {
        let mut message = Message::assistant_fragment(api, "claude-sonnet-4-6", vec![]);
        if let Message::Assistant(a) = &mut message {
            a.usage = used;
        }
        message.with_header(Header::with(id, "2026-01-01T00:00:01Z"))
    }

    #[test]
    fn usage_counts_once_per_response_the_last_fragment_winning() {
        let session = vec![
            Message::user_text("  Fix\n the   bug ")
                .with_header(Header::with("u1", "2026-01-01T00:00:00Z")),
            fragment("a1", "msg_1", Some(usage(10, 1))),
            fragment("a2", "msg_1", Some(usage(10, 7))),
            fragment("a3", "msg_2", Some(usage(5, 3))),
        ];
        let info = summarize("s", &session);
        assert_eq!(info.tokens.input_tokens, 15);
        assert_eq!(info.tokens.output_tokens, 10);
        assert_eq!(info.tokens.cache_read_input_tokens, 2);
        assert_eq!(info.tokens.total(), 15 + 10 + 2 + 4);
        assert_eq!(info.title.as_deref(), Some("Fix the bug"));
        assert_eq!(info.model.as_deref(), Some("claude-sonnet-4-6"));
        assert_eq!(
            info.started.as_ref().map(Timestamp::as_str),
            Some("2026-01-01T00:00:00Z")
        );
        assert_eq!(info.forked_from, None);
    }

    #[test]
    fn an_api_error_message_costs_nothing() {
        let mut failed = fragment("e1", "msg_err", Some(usage(100, 100)));
        if let Message::Assistant(a) = &mut failed {
            a.is_api_error = true;
        }
        let info = summarize("s", &[fragment("a1", "msg_1", Some(usage(5, 3))), failed]);
        assert_eq!(info.tokens.input_tokens, 5);
        assert_eq!(info.tokens.output_tokens, 3);
    }

    #[test]
    fn a_title_record_wins_and_long_prompts_are_cut() {
        let long = "x".repeat(500);
        let info = summarize("s", &[Message::user_text(long.as_str())]);
        let title = info.title.expect("a title");
        assert_eq!(title.chars().count(), TITLE_MAX_CHARS);
        assert!(title.ends_with('…'));

        let titled = summarize(
            "s",
            &[
                Message::user_text(long.as_str()),
                Message::system(SystemKind::Title {
                    title: "old".into(),
                }),
                Message::system(SystemKind::Title {
                    title: "New\ttitle".into(),
                }),
            ],
        );
        assert_eq!(titled.title.as_deref(), Some("New title"));
        assert_eq!(summarize("s", &[]).title, None);
    }
}
