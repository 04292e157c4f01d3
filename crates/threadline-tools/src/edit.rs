//! `Edit`: replaces an exact string in a file inside the workspace — exactly one occurrence,
//! or every one when asked.
//!
//! The file is read as bytes (at most [`MAX_WRITE_BYTES`]) and edited only when they are
//! UTF-8 text: a file with a NUL byte near its start or an invalid sequence anywhere is
//! refused and left as it was, never written back with U+FFFD in place of its bytes.

use std::sync::Arc;

use serde_json::{Value, json};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_workspace::{BINARY_SNIFF_BYTES, PathKind, Refusal, Workspace};
use tokio::io::AsyncReadExt as _;

use crate::confine::resolve_for_write;
use crate::text::refused;
use crate::walk;
use crate::write::MAX_WRITE_BYTES;

/// Edits a file inside the workspace by exact string replacement.
#[derive(Debug, Clone)]
pub struct EditFile {
    workspace: Arc<Workspace>,
}

impl EditFile {
    /// Edits in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> EditFile {
        EditFile { workspace }
    }
}

impl Tool for EditFile {
    fn name(&self) -> &str {
        "Edit"
    }

    fn description(&self) -> &str {
        "Replaces `old_string` with `new_string` in a file of the workspace. `old_string` must occur exactly once (include surrounding lines to make it unique) unless `replace_all` is true."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "old_string": {"type": "string", "minLength": 1},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> ToolStream {
        let workspace = Arc::clone(&self.workspace);
        tool_result(async move { edit(&workspace, &input).await })
    }
}

async fn edit(workspace: &Workspace, input: &Value) -> ToolOutput {
    let path = input["path"].as_str().unwrap_or_default();
    let old = input["old_string"].as_str().unwrap_or_default();
    let new = input["new_string"].as_str().unwrap_or_default();
    let all = input["replace_all"].as_bool().unwrap_or(false);
    if old == new {
        return ToolOutput::error("old_string and new_string are the same: nothing to change");
    }
    let resolved = match workspace.resolve(path) {
        Ok(resolved) if resolved.kind == PathKind::File => resolved,
        Ok(_) => return ToolOutput::error(format!("{path}: not a file")),
        Err(refusal) => return refused(path, &refusal),
    };
    // The same confinement as a write (the file exists, so this re-checks the resolution).
    if let Err(refusal) = resolve_for_write(workspace, path) {
        return refused(path, &refusal);
    }
    // The bytes as they are (at most one past the limit): a lossy decoding written back would
    // replace every invalid byte of the file.
    let mut bytes = Vec::new();
    let read = match tokio::fs::File::open(&resolved.canonical).await {
        Ok(file) => {
            file.take(MAX_WRITE_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
                .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = read {
        return ToolOutput::error(format!("{path}: cannot be read: {e}"));
    }
    if bytes.len() > MAX_WRITE_BYTES {
        return ToolOutput::error(format!(
            "{path}: larger than {MAX_WRITE_BYTES} bytes; too large to edit"
        ));
    }
    if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return refused(path, &Refusal::Binary);
    }
    let content = match String::from_utf8(bytes) {
        Ok(content) => content,
        Err(e) => {
            return ToolOutput::error(format!(
                "{path}: not UTF-8 text (an invalid byte at offset {}); Edit changes only UTF-8 files, and this one was left as it was",
                e.utf8_error().valid_up_to()
            ));
        }
    };
    let count = content.matches(old).count();
    let updated = match (count, all) {
        (0, _) => return ToolOutput::error(format!("{path}: old_string was not found")),
        (1, _) | (_, true) => content.replace(old, new),
        (n, false) => {
            return ToolOutput::error(format!(
                "{path}: old_string occurs {n} times; add surrounding lines to make it unique, or set replace_all"
            ));
        }
    };
    if updated.len() > MAX_WRITE_BYTES {
        return ToolOutput::error(format!(
            "{path}: the edit would make the file larger than {MAX_WRITE_BYTES} bytes"
        ));
    }
    match tokio::fs::write(&resolved.canonical, &updated).await {
        Ok(()) => ToolOutput::text(format!(
            "Edited {}: {count} replacement{}",
            walk::relative(workspace.root(), &resolved.canonical),
            if count == 1 { "" } else { "s" }
        )),
        Err(e) => ToolOutput::error(format!("{path}: cannot write: {e}")),
    }
}
