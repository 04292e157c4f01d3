//! Walking a directory the way `rg` does: `.gitignore` and hidden files respected, symbolic
//! links not followed (so a walk never leaves the workspace), bounded in entries.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use threadline_query::{ToolOutput, ToolStream, tool_result};
use threadline_workspace::Workspace;

/// At most this many directory entries are visited by one walk.
pub const MAX_VISITED: usize = 200_000;

/// The regular files under `base`, in walk order, at most [`MAX_VISITED`] entries looked at.
/// The second value says whether the walk stopped at the bound.
pub(crate) fn files(base: &Path) -> (Vec<PathBuf>, bool) {
    let walker = ignore::WalkBuilder::new(base)
        .hidden(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut out = Vec::new();
    for (visited, entry) in walker.enumerate() {
        if visited >= MAX_VISITED {
            return (out, true);
        }
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_some_and(|t| t.is_file()) {
            out.push(entry.into_path());
        }
    }
    (out, false)
}

/// `path` relative to `root`, with forward slashes.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Runs `search` over `workspace` on the blocking pool (a walk reads the disk), as a tool's
/// answer; a search that panics answers an error.
pub(crate) fn search_blocking(
    workspace: &Arc<Workspace>,
    input: Value,
    search: fn(&Workspace, &Value) -> ToolOutput,
) -> ToolStream {
    let workspace = Arc::clone(workspace);
    tool_result(async move {
        tokio::task::spawn_blocking(move || search(&workspace, &input))
            .await
            .unwrap_or_else(|e| ToolOutput::error(format!("the search failed: {e}")))
    })
}

/// What a walk found, one a line: `none` when nothing, else the lines followed by the
/// `truncated` note (when the list was cut) and a note when the walk stopped at
/// [`MAX_VISITED`].
pub(crate) fn found(
    lines: &[String],
    none: &str,
    truncated: Option<String>,
    cut_walk: bool,
) -> ToolOutput {
    if lines.is_empty() {
        return ToolOutput::text(none);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    if let Some(note) = truncated {
        out.push_str(&note);
        out.push('\n');
    }
    if cut_walk {
        out.push_str(&format!("[the walk stopped after {MAX_VISITED} entries]\n"));
    }
    ToolOutput::text(out)
}
