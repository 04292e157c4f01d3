//! Where a write may go: inside the workspace, never through `..`, an absolute path outside
//! it, or a symbolic link (existing or dangling) that leads out.
//!
//! Reads go through [`Workspace::resolve`], which requires the target to exist. A write may
//! create its file (and missing parent directories), so here the deepest *existing* ancestor
//! is resolved by the workspace (which follows links and checks the result), and what is
//! below it must not exist at all — not even as a dangling link.

use std::path::{Component, Path, PathBuf};

use threadline_attach::{PathKind, Refusal, Workspace};

/// Resolves `path` for writing: the canonical path of the file to write, which exists as a
/// regular file inside the workspace or does not exist and would be created inside it.
pub fn resolve_for_write(workspace: &Workspace, path: &str) -> Result<PathBuf, Refusal> {
    if path.is_empty() {
        return Err(Refusal::Empty);
    }
    let given = Path::new(path);
    if given.components().any(|c| c == Component::ParentDir) {
        return Err(Refusal::ParentTraversal);
    }
    let relative = if given.is_absolute() {
        given
            .strip_prefix(workspace.root())
            .map_err(|_| Refusal::OutsideWorkspace)?
            .to_path_buf()
    } else {
        given.to_path_buf()
    };
    let parts: Vec<&std::ffi::OsStr> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        return Err(Refusal::NotRegular);
    }
    // The deepest prefix that exists in any form (a dangling link counts as existing).
    let mut existing = parts.len();
    loop {
        let candidate: PathBuf = workspace
            .root()
            .join(parts[..existing].iter().collect::<PathBuf>());
        if existing == 0 || std::fs::symlink_metadata(&candidate).is_ok() {
            break;
        }
        existing -= 1;
    }
    let base = if existing == 0 {
        workspace.root().to_path_buf()
    } else {
        let prefix: PathBuf = parts[..existing].iter().collect();
        let text = prefix.to_string_lossy().into_owned();
        let resolved = workspace.resolve(&text).map_err(|refusal| match refusal {
            // It exists (`symlink_metadata` saw it) yet cannot be followed: a dangling link.
            Refusal::NotFound => Refusal::SymlinkEscape,
            other => other,
        })?;
        if existing == parts.len() {
            return match resolved.kind {
                PathKind::File => Ok(resolved.canonical),
                PathKind::Directory => Err(Refusal::NotRegular),
            };
        }
        if resolved.kind != PathKind::Directory {
            return Err(Refusal::NotRegular);
        }
        resolved.canonical
    };
    Ok(parts[existing..]
        .iter()
        .fold(base, |path, part| path.join(part)))
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
