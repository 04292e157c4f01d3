//! `LS`: a directory's entries, sorted, directories marked with `/`.

use std::sync::Arc;

use serde_json::{Value, json};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_workspace::{Limits, PathKind, Workspace};

use crate::text::{refused, truncation_note};

/// Lists a directory inside the workspace.
#[derive(Debug, Clone)]
pub struct ListDir {
    workspace: Arc<Workspace>,
    limits: Limits,
}

impl ListDir {
    /// Lists in `workspace`, at most 1,000 entries.
    pub fn new(workspace: Arc<Workspace>) -> ListDir {
        ListDir {
            workspace,
            limits: Limits::default(),
        }
    }
}

impl Tool for ListDir {
    fn name(&self) -> &str {
        "LS"
    }

    fn description(&self) -> &str {
        "Lists a directory of the workspace (default: its root). Directories end with `/`."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn is_idempotent(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> ToolStream {
        let workspace = Arc::clone(&self.workspace);
        let limits = self.limits;
        tool_result(async move {
            let path = input["path"].as_str().unwrap_or(".");
            let resolved = match workspace.resolve(path) {
                Ok(resolved) => resolved,
                Err(refusal) => return refused(path, &refusal),
            };
            if resolved.kind != PathKind::Directory {
                return ToolOutput::error(format!("{path}: not a directory"));
            }
            match workspace.list_dir(&resolved, &limits).await {
                Err(refusal) => refused(path, &refusal),
                Ok(listing) if listing.entries.is_empty() => ToolOutput::text("(empty directory)"),
                Ok(listing) => {
                    let mut out = listing.entries.join("\n");
                    out.push('\n');
                    if let Some(cut) = &listing.truncated {
                        out.push_str(&truncation_note(cut));
                    }
                    ToolOutput::text(out)
                }
            }
        })
    }
}
