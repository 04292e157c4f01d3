//! `Edit`: replaces an exact string in a file inside the workspace — exactly one occurrence,
//! or every one when asked.

use std::sync::Arc;

use serde_json::{Value, json};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_workspace::{Limits, PathKind, Workspace};

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
    let limits = Limits::default()
        .with_max_bytes(MAX_WRITE_BYTES as u64)
        .with_max_lines(usize::MAX);
    let read = match workspace.read_text(&resolved, &limits).await {
        Ok(read) => read,
        Err(refusal) => return refused(path, &refusal),
    };
    if read.truncated.is_some() {
        return ToolOutput::error(format!(
            "{path}: larger than {MAX_WRITE_BYTES} bytes; too large to edit"
        ));
    }
    let count = read.content.matches(old).count();
    let updated = match (count, all) {
        (0, _) => return ToolOutput::error(format!("{path}: old_string was not found")),
        (1, _) | (_, true) => read.content.replace(old, new),
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
