//! Re-attachments after autocompact: the files the model was working on.
//!
//! After a summary, the model no longer sees the files it read; re-reading them costs a turn
//! each. So the most recently read files (by the `Read` tool or an `@` mention) are attached
//! again, newest first, each cut to a per-file budget, within a total budget. A file the
//! verbatim tail already shows is not attached twice. The content comes from
//! [`CurrentFiles`] (the file as it is now) and falls back to the last content the history
//! holds: a result microcompact cleared or the budget replaced by a preview holds no content
//! of the file, so an earlier whole read is used, and a file with none is attached only from
//! [`CurrentFiles`]. Delta announcements (deferred tools, agents, MCP instructions) are not handled here:
//! their sources re-announce on their own after a compaction boundary.

use std::collections::{BTreeMap, BTreeSet};

use threadline_message::{Attachment, Message};
use threadline_wire::{Content, ContentBlock};

use crate::budget::is_persisted_preview;
use crate::estimate::{BYTES_PER_TOKEN, attachment_tokens};
use crate::microcompact::is_cleared;
use crate::units::IdMap;

/// Budgets for re-attached files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReattachOptions {
    /// At most this many files (default 5).
    pub max_files: usize,
    /// Each cut to this many tokens (default 5,000).
    pub file_tokens: u64,
    /// All of them within this many tokens (default 50,000).
    pub total_tokens: u64,
}

impl Default for ReattachOptions {
    fn default() -> Self {
        ReattachOptions {
            max_files: 5,
            file_tokens: 5_000,
            total_tokens: 50_000,
        }
    }
}

/// Gives the current content of a file the session read.
///
/// `Send + Sync` because [`CompactContext`](crate::CompactContext) holds it across the
/// summarizer's await: the driver's futures are `Send` only if it is.
pub trait CurrentFiles: Send + Sync {
    /// The file's content now, or `None` to use the content the history holds.
    fn current(&self, path: &str) -> Option<String>;
}

/// Uses only what the history holds (no file system access).
#[derive(Debug, Clone, Copy, Default)]
pub struct HistoryOnly;

impl CurrentFiles for HistoryOnly {
    fn current(&self, _path: &str) -> Option<String> {
        None
    }
}

fn result_text(content: &Content) -> Option<String> {
    match content {
        Content::Text(t) => Some(t.clone()),
        Content::Blocks(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
    }
}

/// The files read in `messages`, newest first: (path, last content seen). A result cleared by
/// microcompact or replaced by the budget's preview is not the file's content: the latest
/// earlier whole read of the path gives it, and a path with none is left out.
pub fn recently_read(messages: &[Message]) -> Vec<(String, String)> {
    reads(messages)
        .into_iter()
        .filter_map(|(path, content)| Some((path, content?)))
        .collect()
}

/// The files read in `messages`, newest first (by their latest read): (path, the content of
/// the latest read whose result still holds it, `None` when every one was cleared or
/// replaced by a preview).
fn reads(messages: &[Message]) -> Vec<(String, Option<String>)> {
    let mut read_paths: IdMap<'_, &str> = IdMap::default();
    for message in messages {
        if let Message::Assistant(a) = message {
            for block in &a.content {
                if let ContentBlock::ToolUse(u) = block
                    && u.name == "Read"
                    && let Some(path) = u.input.get("file_path").and_then(|v| v.as_str())
                {
                    read_paths.insert(u.id.as_str(), path);
                }
            }
        }
    }
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    let mut files: Vec<(String, Option<String>)> = Vec::new();
    let mut note = |path: &str, content: Option<String>| match at.get(path) {
        Some(&i) => {
            if files[i].1.is_none() {
                files[i].1 = content;
            }
        }
        None => {
            at.insert(path.to_owned(), files.len());
            files.push((path.to_owned(), content));
        }
    };
    for message in messages.iter().rev() {
        match message {
            Message::User(u) => {
                for block in u.content.iter().rev() {
                    if let ContentBlock::ToolResult(r) = block
                        && r.is_error != Some(true)
                        && let Some(path) = read_paths.get(r.tool_use_id.as_str())
                        && let Some(content) = &r.content
                    {
                        let whole = !is_cleared(content) && !is_persisted_preview(content);
                        note(path, whole.then(|| result_text(content)).flatten());
                    }
                }
            }
            Message::Attachment(a) => {
                if let Attachment::File { path, content, .. } = &a.attachment {
                    note(path, Some(content.clone()));
                }
            }
            _ => {}
        }
    }
    files
}

/// The `file` attachments to add after the tail: files read in `before_tail` whose content
/// `tail` does not show ([`recently_read`]), newest first, their estimate (frame and path
/// included) within `budget_tokens` and `options.total_tokens`. A file whose every read was
/// cleared or replaced by a preview is attached only when [`CurrentFiles`] gives it.
pub fn reattachments(
    before_tail: &[Message],
    tail: &[Message],
    files: &dyn CurrentFiles,
    options: &ReattachOptions,
    budget_tokens: u64,
) -> Vec<Attachment> {
    let shown: BTreeSet<String> = recently_read(tail).into_iter().map(|(p, _)| p).collect();
    let mut left = budget_tokens.min(options.total_tokens);
    let mut out = Vec::new();
    for (path, seen) in reads(before_tail) {
        if out.len() >= options.max_files {
            break;
        }
        if shown.contains(&path) {
            continue;
        }
        let Some(content) = files.current(&path).or(seen) else {
            continue;
        };
        // The frame and the path cost tokens too: the content gets what is left.
        let frame = attachment_tokens(&Attachment::File {
            path: path.clone(),
            content: String::new(),
            truncated: false,
        });
        let available = options.file_tokens.min(left.saturating_sub(frame));
        let mut cut = content.len().min((available * BYTES_PER_TOKEN) as usize);
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut == 0 {
            break;
        }
        let file = Attachment::File {
            truncated: cut < content.len(),
            content: content[..cut].to_owned(),
            path,
        };
        left = left.saturating_sub(attachment_tokens(&file));
        out.push(file);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_message::tool_result_block;
    use threadline_testkit::messages::{SessionBuilder, tool_use};

    /// Gives `b.rs` only.
    struct OnlyB;

    impl CurrentFiles for OnlyB {
        fn current(&self, path: &str) -> Option<String> {
            (path == "b.rs").then(|| "b.rs now".to_owned())
        }
    }

    #[test]
    fn cleared_and_previewed_results_are_not_a_file_s_content() {
        let mut b = SessionBuilder::new();
        b.user("read");
        let results = [
            ("a.rs", "a.rs v0".to_owned()),
            (
                "b.rs",
                crate::budget::preview("b.rs v1", "tool-results/toolu_1.txt", 3),
            ),
            ("a.rs", crate::microcompact::CLEARED_PLACEHOLDER.to_owned()),
        ];
        for (i, (path, result)) in results.iter().enumerate() {
            let msg = b.response_id();
            let id = format!("toolu_{i}");
            b.assistant(
                &msg,
                vec![tool_use(&id, "Read", json!({"file_path": path}))],
            );
            b.tool_results(vec![tool_result_block(&id, result.as_str().into(), false)]);
        }
        let messages = b.into_messages();
        // a.rs's latest read was cleared: the earlier whole one gives its content; b.rs
        // has only a preview, so the history holds none of it.
        assert_eq!(
            recently_read(&messages),
            [("a.rs".to_owned(), "a.rs v0".to_owned())]
        );
        let a = Attachment::File {
            path: "a.rs".into(),
            content: "a.rs v0".into(),
            truncated: false,
        };
        let options = ReattachOptions::default();
        assert_eq!(
            reattachments(&messages, &[], &HistoryOnly, &options, 50_000),
            std::slice::from_ref(&a)
        );
        // A file with no whole read is still attached when its current content is known.
        assert_eq!(
            reattachments(&messages, &[], &OnlyB, &options, 50_000),
            [
                a,
                Attachment::File {
                    path: "b.rs".into(),
                    content: "b.rs now".into(),
                    truncated: false
                }
            ]
        );
    }

    #[test]
    fn newest_first_within_budget_and_not_twice() {
        let mut b = SessionBuilder::new();
        b.user("read");
        for (i, path) in ["a.rs", "b.rs", "a.rs", "c.rs"].iter().enumerate() {
            let msg = b.response_id();
            let id = format!("toolu_{i}");
            b.assistant(
                &msg,
                vec![tool_use(&id, "Read", json!({"file_path": path}))],
            );
            b.tool_results(vec![tool_result_block(
                &id,
                format!("{path} v{i}").as_str().into(),
                false,
            )]);
        }
        let messages = b.into_messages();
        let (before, tail) = messages.split_at(messages.len() - 2);
        let out = reattachments(
            before,
            tail,
            &HistoryOnly,
            &ReattachOptions::default(),
            50_000,
        );
        assert_eq!(
            out,
            vec![
                Attachment::File {
                    path: "a.rs".into(),
                    content: "a.rs v2".into(),
                    truncated: false
                },
                Attachment::File {
                    path: "b.rs".into(),
                    content: "b.rs v1".into(),
                    truncated: false
                },
            ]
        );
        let tight = reattachments(before, tail, &HistoryOnly, &ReattachOptions::default(), 32);
        assert_eq!(
            tight,
            vec![Attachment::File {
                path: "a.rs".into(),
                content: "a.rs".into(),
                truncated: true
            }]
        );
    }
}
