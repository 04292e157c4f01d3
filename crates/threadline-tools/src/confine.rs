//! Where a write may go: inside the workspace, never through `..`, an absolute path outside
//! it, or a symbolic link (existing or dangling) that leads out, and never onto a control path
//! of the workspace (`.git` at any depth, agent and tool configuration, a file named `HEAD`
//! and what lies inside a directory holding one; see [`threadline_workspace::ControlPaths`]).
//!
//! The resolution is [`Workspace::resolve_for_write`]: the path is followed from the root one
//! component at a time (links spliced in, nothing outside the root looked at); what does not
//! exist yet is created below the deepest directory that does. The control-path policy is
//! checked on the path as given and on the path the links lead to, so `link -> .git` does
//! not open `.git/config`.

use std::path::PathBuf;

use threadline_workspace::{Refusal, Workspace};

/// Resolves `path` for writing: the canonical path of the file to write, which exists as a
/// regular file inside the workspace or does not exist and would be created inside it, and
/// is not a control path.
pub fn resolve_for_write(workspace: &Workspace, path: &str) -> Result<PathBuf, Refusal> {
    workspace.resolve_for_write(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::new(dir.path()).expect("workspace");
        (dir, ws)
    }

    #[test]
    fn new_files_and_directories_resolve_inside() {
        let (_dir, ws) = workspace();
        let target = resolve_for_write(&ws, "a/b/c.txt").expect("allowed");
        assert_eq!(target, ws.root().join("a/b/c.txt"));
        let absolute = ws.root().join("x.txt");
        assert_eq!(
            resolve_for_write(&ws, &absolute.to_string_lossy()).expect("allowed"),
            absolute
        );
    }

    #[test]
    fn traversal_absolute_paths_and_directories_are_refused() {
        let (_dir, ws) = workspace();
        assert_eq!(
            resolve_for_write(&ws, "../x"),
            Err(Refusal::ParentTraversal)
        );
        assert_eq!(
            resolve_for_write(&ws, "a/../../x"),
            Err(Refusal::ParentTraversal)
        );
        assert_eq!(
            resolve_for_write(&ws, "/tmp/x"),
            Err(Refusal::OutsideWorkspace)
        );
        assert_eq!(resolve_for_write(&ws, ""), Err(Refusal::Empty));
        assert_eq!(resolve_for_write(&ws, "."), Err(Refusal::NotRegular));
        std::fs::create_dir(ws.root().join("d")).expect("mkdir");
        assert_eq!(resolve_for_write(&ws, "d"), Err(Refusal::NotRegular));
    }

    #[cfg(unix)]
    #[test]
    fn links_leading_out_are_refused_even_dangling_ones() {
        let (_dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("outside");
        std::os::unix::fs::symlink(outside.path(), ws.root().join("out")).expect("link");
        assert_eq!(
            resolve_for_write(&ws, "out/x.txt"),
            Err(Refusal::SymlinkEscape)
        );
        std::os::unix::fs::symlink(outside.path().join("new.txt"), ws.root().join("dangling"))
            .expect("link");
        assert_eq!(
            resolve_for_write(&ws, "dangling"),
            Err(Refusal::SymlinkEscape)
        );
        assert_eq!(
            resolve_for_write(&ws, "dangling/x"),
            Err(Refusal::SymlinkEscape)
        );
        assert!(!outside.path().join("new.txt").exists());
    }
}
