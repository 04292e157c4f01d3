//! Walking a directory the way `rg` does: `.gitignore` and hidden files respected, symbolic
//! links not followed (so a walk never leaves the workspace), bounded in entries.

use std::path::{Path, PathBuf};

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
