//! `Grep`: lines matching a regular expression, as `path:line:text`, with ripgrep's engine
//! (`grep-regex`, `grep-searcher`) over a `.gitignore`-aware walk.
//!
//! Memory is bounded whatever the files hold (a 1 GB single-line file
//! once took 2.25 GB). The searcher reads through a line buffer capped at
//! [`MAX_GREP_HEAP_BYTES`] (`heap_limit`; memory maps off; a NUL byte ends the file as
//! binary), so a longer line is not searched: its file is skipped and the answer says so.
//! The regex's compiled program and its lazy DFA cache are capped at
//! [`MAX_GREP_REGEX_BYTES`] each. A matching line is cut at [`MAX_GREP_LINE_BYTES`] *before*
//! it is copied, at most [`MAX_GREP_MATCHES`] lines are kept and the answer is cut at
//! [`MAX_GREP_OUTPUT_BYTES`]. With the walk's list of at most [`MAX_VISITED`] entries, one call
//! stays under [`crate::MAX_TOOL_CALL_BYTES`] (64 MiB).
//!
//! [`MAX_VISITED`]: crate::MAX_VISITED

use std::path::PathBuf;
use std::sync::Arc;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde_json::{Value, json};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream};
use threadline_workspace::{PathKind, Workspace};

use crate::text::{cut_at, refused};
use crate::walk;

/// At most this many matching lines are returned.
pub const MAX_GREP_MATCHES: usize = 500;

/// A matching line longer than this is cut (with `…`).
pub const MAX_GREP_LINE_BYTES: usize = 400;

/// The searcher's line buffer never grows past this (8 MiB): a file with a longer line is
/// skipped, and the answer says so.
pub const MAX_GREP_HEAP_BYTES: usize = 8 * 1024 * 1024;

/// The regex's compiled program, and separately its lazy DFA cache, stay under this (4 MiB);
/// a pattern that needs more is refused as invalid.
pub const MAX_GREP_REGEX_BYTES: usize = 4 * 1024 * 1024;

/// The answer is cut at this many bytes (256 KiB).
pub const MAX_GREP_OUTPUT_BYTES: usize = 256 * 1024;

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

    fn is_idempotent(&self, _input: &Value) -> bool {
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
        .size_limit(MAX_GREP_REGEX_BYTES)
        .dfa_size_limit(MAX_GREP_REGEX_BYTES)
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
        .memory_map(MmapChoice::never())
        .heap_limit(Some(MAX_GREP_HEAP_BYTES))
        .build();
    let mut found = Found::default();
    let mut too_long: Vec<String> = Vec::new();
    for file in &files {
        if let Some(filter) = &filter
            && !file.file_name().is_some_and(|name| filter.is_match(name))
        {
            continue;
        }
        let shown = walk::relative(workspace.root(), file);
        let before = found.lines.len();
        let result = searcher.search_path(
            &matcher,
            file,
            Matches {
                shown: &shown,
                found: &mut found,
            },
        );
        // An unreadable file is skipped, like rg does; one whose line would not fit the
        // buffer is skipped and named (its matches so far are dropped: they may be cut).
        if let Err(e) = result
            && is_heap_limit(&e)
        {
            found.drop_from(before);
            too_long.push(shown);
        }
        if found.full {
            break;
        }
    }
    let mut note = found.full.then(|| {
        if found.lines.len() >= MAX_GREP_MATCHES {
            format!("[truncated at {MAX_GREP_MATCHES} matches]")
        } else {
            format!("[truncated at {MAX_GREP_OUTPUT_BYTES} bytes]")
        }
    });
    if !too_long.is_empty() {
        let mut skipped = format!(
            "[not searched: a line longer than {MAX_GREP_HEAP_BYTES} bytes in {} file{}: {}",
            too_long.len(),
            if too_long.len() == 1 { "" } else { "s" },
            too_long
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
        if too_long.len() > 10 {
            skipped.push_str(", …");
        }
        skipped.push(']');
        note = Some(match note {
            Some(first) => format!("{first}\n{skipped}"),
            None => skipped,
        });
    }
    if found.lines.is_empty()
        && let Some(note) = note
    {
        return ToolOutput::text(format!("(no matches)\n{note}\n"));
    }
    walk::found(&found.lines, "(no matches)", note, cut_walk)
}

/// Whether a search stopped at [`MAX_GREP_HEAP_BYTES`]: `grep-searcher` says so only in
/// its message ("configured allocation limit (N) exceeded", kind `Other`).
fn is_heap_limit(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::Other && error.to_string().contains("allocation limit")
}

/// The matching lines kept so far, and whether a bound was reached.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    bytes: usize,
    full: bool,
}

impl Found {
    /// Forgets the lines from index `from` on.
    fn drop_from(&mut self, from: usize) {
        for line in self.lines.drain(from..) {
            self.bytes -= line.len() + 1;
        }
    }
}

/// The sink: each matching line cut to [`MAX_GREP_LINE_BYTES`] before anything is copied.
struct Matches<'a> {
    shown: &'a str,
    found: &'a mut Found,
}

impl Sink for Matches<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let mut bytes = mat.bytes();
        while let [rest @ .., b'\n' | b'\r'] = bytes {
            bytes = rest;
        }
        let long = bytes.len() > MAX_GREP_LINE_BYTES;
        let mut text =
            String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_GREP_LINE_BYTES)]).into_owned();
        // A cut through a character leaves a replacement character, which may be longer.
        if cut_at(&mut text, MAX_GREP_LINE_BYTES) || long {
            text.push('…');
        }
        let line = format!(
            "{}:{}:{text}",
            self.shown,
            mat.line_number().unwrap_or_default()
        );
        if self.found.lines.len() >= MAX_GREP_MATCHES
            || self.found.bytes + line.len() + 1 > MAX_GREP_OUTPUT_BYTES
        {
            self.found.full = true;
            return Ok(false);
        }
        self.found.bytes += line.len() + 1;
        self.found.lines.push(line);
        Ok(true)
    }
}
