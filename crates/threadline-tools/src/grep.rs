//! `Grep`: lines matching a regular expression, as `path:line:text`, with ripgrep's engine
//! (`grep-regex`, `grep-searcher`) over a `.gitignore`-aware walk.

use std::path::PathBuf;
use std::sync::Arc;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{Value, json};
use threadline_attach::{PathKind, Workspace};
use threadline_query::tool::{Tool, ToolContext, ToolOutput, ToolStream};

use crate::text::{cut_at, refused};
use crate::walk;

/// At most this many matching lines are returned.
pub const MAX_GREP_MATCHES: usize = 500;

/// A matching line longer than this is cut.
pub const MAX_GREP_LINE_BYTES: usize = 400;

/// Searches file contents inside the workspace.
#[derive(Debug, Clone)]
pub struct Grep {
    workspace: Arc<Workspace>,
}

impl Grep {
    /// Searches in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Grep {
        Grep { workspace }
    }
}

impl Tool for Grep {
    fn name(&self) -> &str {
        "Grep"
    }

    fn description(&self) -> &str {
        "Searches file contents with a regular expression (Rust regex syntax). `path` is a file or directory (default: the workspace root); `glob` filters file names. Answers `path:line:text` lines; ignored, hidden and binary files are skipped."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1},
                "path": {"type": "string"},
                "glob": {"type": "string"},
                "case_insensitive": {"type": "boolean"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> ToolStream {
        walk::search_blocking(&self.workspace, input, grep)
    }
}

fn grep(workspace: &Workspace, input: &Value) -> ToolOutput {
    let pattern = input["pattern"].as_str().unwrap_or_default();
    let path = input["path"].as_str().unwrap_or(".");
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(input["case_insensitive"].as_bool().unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(pattern)
    {
        Ok(matcher) => matcher,
        Err(e) => return ToolOutput::error(format!("invalid pattern: {e}")),
    };
    let filter = match input["glob"].as_str() {
        None => None,
        Some(glob) => match globset::Glob::new(glob) {
            Ok(glob) => Some(glob.compile_matcher()),
            Err(e) => return ToolOutput::error(format!("invalid glob: {e}")),
        },
    };
    let resolved = match workspace.resolve(path) {
        Ok(resolved) => resolved,
        Err(refusal) => return refused(path, &refusal),
    };
    let (files, cut_walk): (Vec<PathBuf>, bool) = match resolved.kind {
        PathKind::File => (vec![resolved.canonical], false),
        PathKind::Directory => walk::files(&resolved.canonical),
    };
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut lines: Vec<String> = Vec::new();
    let mut more = false;
    for file in &files {
        if let Some(filter) = &filter
            && !file.file_name().is_some_and(|name| filter.is_match(name))
        {
            continue;
        }
        let shown = walk::relative(workspace.root(), file);
        // An unreadable file is skipped, like rg does.
        let _ = searcher.search_path(
            &matcher,
            file,
            Lossy(|number, line| {
                if lines.len() >= MAX_GREP_MATCHES {
                    more = true;
                    return Ok(false);
                }
                let mut text = line.trim_end_matches(['\n', '\r']).to_owned();
                if cut_at(&mut text, MAX_GREP_LINE_BYTES) {
                    text.push('…');
                }
                lines.push(format!("{shown}:{number}:{text}"));
                Ok(true)
            }),
        );
        if more {
            break;
        }
    }
    walk::found(
        &lines,
        "(no matches)",
        more.then(|| format!("[truncated at {MAX_GREP_MATCHES} matches]")),
        cut_walk,
    )
}
