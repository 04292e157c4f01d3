//! `Glob`: files whose path (relative to the search directory) matches a glob pattern.

use std::sync::Arc;

use serde_json::{Value, json};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream};
use threadline_workspace::{PathKind, Workspace};

use crate::text::refused;
use crate::walk;

/// At most this many paths are returned.
pub const MAX_GLOB_RESULTS: usize = 1_000;

/// Finds files by glob (`src/**/*.rs`), respecting `.gitignore`.
#[derive(Debug, Clone)]
pub struct Glob {
    workspace: Arc<Workspace>,
}

impl Glob {
    /// Globs in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Glob {
        Glob { workspace }
    }
}

impl Tool for Glob {
    fn name(&self) -> &str {
        "Glob"
    }

    fn description(&self) -> &str {
        "Finds files by glob pattern (`**/*.rs`; `*` stays within a directory), relative to `path` (default: the workspace root). Ignored and hidden files are skipped. Paths come sorted, relative to the workspace root."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1},
                "path": {"type": "string"}
            },
            "required": ["pattern"],
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
        walk::search_blocking(&self.workspace, input, glob)
    }
}

fn glob(workspace: &Workspace, input: &Value) -> ToolOutput {
    let pattern = input["pattern"].as_str().unwrap_or_default();
    let path = input["path"].as_str().unwrap_or(".");
    let matcher = match globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
    {
        Ok(glob) => glob.compile_matcher(),
        Err(e) => return ToolOutput::error(format!("invalid pattern: {e}")),
    };
    let base = match workspace.resolve(path) {
        Ok(resolved) if resolved.kind == PathKind::Directory => resolved.canonical,
        Ok(_) => return ToolOutput::error(format!("{path}: not a directory")),
        Err(refusal) => return refused(path, &refusal),
    };
    let (files, cut_walk) = walk::files(&base);
    let mut found: Vec<String> = files
        .iter()
        .filter(|file| matcher.is_match(file.strip_prefix(&base).unwrap_or(file)))
        .map(|file| walk::relative(workspace.root(), file))
        .collect();
    found.sort();
    let more = found.len() > MAX_GLOB_RESULTS;
    found.truncate(MAX_GLOB_RESULTS);
    walk::found(
        &found,
        "(no files match)",
        more.then(|| format!("[truncated at {MAX_GLOB_RESULTS} paths]")),
        cut_walk,
    )
}
