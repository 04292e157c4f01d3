//! Mapping `attachment` records (Claude Code 2.x, docs/claude-code-transcripts.md#attachments) to [`Attachment`]s.
//!
//! A kind with a typed counterpart here becomes it when its fields have the expected shape;
//! every other kind, and a known kind whose fields do not fit, becomes
//! [`Attachment::ClaudeCode`] holding the `attachment` object as written, so nothing is lost
//! and a malformed attachment never fails the import.

use serde_json::{Map, Value};

use super::records::{bool_field, str_field};
use crate::attachment::{Attachment, DeltaAnnouncement, DeltaItem, TodoItem};

/// The attachment of an `attachment` record; an error when the record has no `attachment`
/// object (the record is then kept opaque).
pub(super) fn map_attachment(object: &Map<String, Value>) -> Result<Attachment, String> {
    let attachment = object
        .get("attachment")
        .and_then(Value::as_object)
        .ok_or_else(|| "no `attachment` object".to_owned())?;
    let kind = str_field(attachment, "type").unwrap_or_default();
    // What Claude Code rendered is what it sent (a re-read file with its line numbers, say):
    // it wins over the typed reading of the payload.
    if rendered(object).is_none()
        && let Some(typed) = typed(kind, attachment)
    {
        return Ok(typed);
    }
    Ok(match rendered(object) {
        Some(texts) => Attachment::ClaudeCodeRendered {
            attachment_type: kind.to_owned(),
            texts,
            role: str_field(object, "renderedRole").map(str::to_owned),
            beside_tool_result: bool_field(object, "renderedBesideToolResult"),
            payload: Value::Object(attachment.clone()),
        },
        None => Attachment::ClaudeCode {
            attachment_type: kind.to_owned(),
            payload: Value::Object(attachment.clone()),
        },
    })
}

/// The texts Claude Code rendered for the record (`rendered: [{"content": "…"}, …]`, 2.1.3xx),
/// when every entry has a string `content` and there is at least one.
fn rendered(object: &Map<String, Value>) -> Option<Vec<String>> {
    let entries = object.get("rendered")?.as_array()?;
    let texts = entries
        .iter()
        .map(|entry| entry.get("content")?.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()?;
    (!texts.is_empty()).then_some(texts)
}

/// The typed attachment for `kind`, when there is one and the fields fit.
fn typed(kind: &str, a: &Map<String, Value>) -> Option<Attachment> {
    let path = || {
        ["filename", "path", "displayPath"]
            .iter()
            .find_map(|key| str_field(a, key))
            .map(str::to_owned)
    };
    match kind {
        "file" => Some(Attachment::File {
            path: path()?,
            content: file_content(a.get("content")?)?,
            truncated: bool_field(a, "truncated"),
        }),
        "directory" => Some(Attachment::Directory {
            path: path()?,
            entries: match a.get("content")? {
                Value::String(listing) => listing
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect(),
                Value::Array(entries) => strings(entries)?,
                _ => return None,
            },
            truncated: bool_field(a, "truncated"),
        }),
        "nested_memory" => Some(Attachment::NestedInstructions {
            path: path()?,
            content: match a.get("content")? {
                Value::String(text) => text.clone(),
                Value::Object(memory) => str_field(memory, "content")?.to_owned(),
                _ => return None,
            },
        }),
        "date_change" => Some(Attachment::DateChange {
            date: str_field(a, "newDate")
                .or_else(|| str_field(a, "date"))?
                .to_owned(),
        }),
        "queued_command" => Some(Attachment::QueuedCommand {
            prompt: match a.get("prompt")? {
                Value::String(prompt) => prompt.clone(),
                // Blocks: only when all are text (an image would be lost as text).
                Value::Array(blocks) => blocks
                    .iter()
                    .map(|b| {
                        (b.get("type").and_then(Value::as_str) == Some("text"))
                            .then(|| b.get("text").and_then(Value::as_str))
                            .flatten()
                    })
                    .collect::<Option<Vec<_>>>()?
                    .join("\n"),
                _ => return None,
            },
        }),
        "todo" | "todo_reminder" | "task_reminder" => {
            let items = a.get("content").or_else(|| a.get("todos"))?.as_array()?;
            Some(Attachment::TodoReminder {
                items: items
                    .iter()
                    .map(|item| {
                        let item = item.as_object()?;
                        Some(TodoItem {
                            content: ["content", "subject", "description"]
                                .iter()
                                .find_map(|key| str_field(item, key))?
                                .to_owned(),
                            status: str_field(item, "status").unwrap_or("pending").to_owned(),
                        })
                    })
                    .collect::<Option<_>>()?,
            })
        }
        "deferred_tools_delta" => delta(
            a,
            "deferred_tools",
            "addedNames",
            "addedLines",
            "removedNames",
        ),
        "agent_listing_delta" => delta(
            a,
            "agent_listing",
            "addedTypes",
            "addedLines",
            "removedTypes",
        ),
        "mcp_instructions_delta" => delta(
            a,
            "mcp_instructions",
            "addedNames",
            "addedBlocks",
            "removedNames",
        ),
        _ => None,
    }
}

/// The text of a `file` attachment's `content`: a string, or the Read tool's result shape
/// `{type: "text", file: {content, …}}`.
fn file_content(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Object(result) => {
            let file = result
                .get("file")
                .and_then(Value::as_object)
                .unwrap_or(result);
            str_field(file, "content").map(str::to_owned)
        }
        _ => None,
    }
}

fn strings(values: &[Value]) -> Option<Vec<String>> {
    values
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// A delta announcement: names added (with the line or block the model is told for each,
/// when the lists line up), names removed. Only when the payload holds nothing else a typed
/// delta would lose (re-added names, MCP server states): otherwise it stays opaque.
fn delta(
    a: &Map<String, Value>,
    set: &str,
    added_key: &str,
    lines_key: &str,
    removed_key: &str,
) -> Option<Attachment> {
    const KNOWN: &[&str] = &["type", "isInitial", "showConcurrencyNote"];
    if a.keys().any(|k| {
        !KNOWN.contains(&k.as_str()) && ![added_key, lines_key, removed_key].contains(&k.as_str())
    }) {
        return None;
    }
    let list = |key: &str| match a.get(key) {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(values)) => strings(values),
        Some(_) => None,
    };
    let names = list(added_key)?;
    let lines = list(lines_key)?;
    if !lines.is_empty() && lines.len() != names.len() {
        return None;
    }
    let added = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| DeltaItem {
            name,
            description: lines.get(i).cloned().unwrap_or_default(),
        })
        .collect();
    Some(Attachment::Delta(DeltaAnnouncement {
        set: set.to_owned(),
        added,
        removed: list(removed_key)?,
        initial: bool_field(a, "isInitial"),
    }))
}
