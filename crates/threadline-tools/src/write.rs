//! `Write`: creates or replaces a file inside the workspace (missing parent directories are
//! created).

use std::sync::Arc;

use serde_json::{Value, json};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_workspace::Workspace;

use crate::confine::resolve_for_write;
use crate::text::refused;
use crate::walk;

/// The largest content `Write` and `Edit` accept (10 MiB).
pub const MAX_WRITE_BYTES: usize = 10 * 1024 * 1024;

/// Writes a file inside the workspace.
#[derive(Debug, Clone)]
pub struct WriteFile {
    workspace: Arc<Workspace>,
}

impl WriteFile {
    /// Writes in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> WriteFile {
        WriteFile { workspace }
    }
}

impl Tool for WriteFile {
    fn name(&self) -> &str {
        "Write"
    }

    fn description(&self) -> &str {
        "Creates or replaces a file in the workspace with `content` (parent directories are created)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "content": {"type": "string"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> ToolStream {
        let workspace = Arc::clone(&self.workspace);
        tool_result(async move {
            let path = input["path"].as_str().unwrap_or_default();
            let content = input["content"].as_str().unwrap_or_default();
            if content.len() > MAX_WRITE_BYTES {
                return ToolOutput::error(format!(
                    "the content is {} bytes, over the {MAX_WRITE_BYTES}-byte limit",
                    content.len()
                ));
            }
            let target = match resolve_for_write(&workspace, path) {
                Ok(target) => target,
                Err(refusal) => return refused(path, &refusal),
            };
            if let Some(parent) = target.parent()
                && let Err(e) = tokio::fs::create_dir_all(parent).await
            {
                return ToolOutput::error(format!("{path}: cannot create the directory: {e}"));
            }
            match tokio::fs::write(&target, content).await {
                Ok(()) => ToolOutput::text(format!(
                    "Wrote {} bytes to {}",
                    content.len(),
                    walk::relative(workspace.root(), &target)
                )),
                Err(e) => ToolOutput::error(format!("{path}: cannot write: {e}")),
            }
        })
    }
}
