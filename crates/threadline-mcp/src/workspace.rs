//! The servers of a workspace's `.mcp.json` that may start: deny by default.
//!
//! A workspace may be a repository someone else wrote, so its `.mcp.json` is read as hostile
//! input ([`WorkspaceServers::load`]):
//!
//! - only a regular file of at most [`MAX_CONFIG_BYTES`] is read (a FIFO or a link to
//!   `/dev/zero` is one warning, never a hang);
//! - a server starts only when the user approved that name with that exact entry for this
//!   workspace ([`Approvals`]); the others are [`PendingServer`]s, reported and never expanded;
//! - an approved entry's `${VAR}` never expands an `ANTHROPIC_*` variable, so the key reaches
//!   no server through its arguments, environment, URL or headers;
//! - an entry that is broken (wrong shape, unset variable, unknown transport) is one warning
//!   and the others go on: a workspace cannot stop a session from starting.
//!
//! ```
//! use threadline_mcp::{Approvals, WorkspaceServers};
//!
//! let dir = std::env::temp_dir().join(format!("threadline-mcp-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(dir.join(".mcp.json"), r#"{"mcpServers": {"files": {"command": "files-server"}}}"#).unwrap();
//! let root = dir.canonicalize().unwrap();
//!
//! let mut approvals = Approvals::default();
//! let found = WorkspaceServers::load(&root, &approvals, None);
//! assert!(found.approved.servers.is_empty());
//! assert_eq!(found.pending[0].name, "files");
//!
//! approvals.approve(&root, "files", &found.pending[0].entry);
//! let found = WorkspaceServers::load(&root, &approvals, None);
//! assert!(found.approved.servers.contains_key("files"));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::path::{Path, PathBuf};

use crate::approval::Approvals;
use crate::config::{ConfigError, FILE_NAME, MAX_CONFIG_BYTES, McpConfig, ServerEntry};

/// The prefix of the variables never expanded into a workspace server's configuration (the
/// cloud platforms' credential variables are not expanded either:
/// [`threadline_workspace::credentials::is_credential_variable`]).
pub const PROTECTED_VARIABLE_PREFIX: &str = threadline_workspace::credentials::CREDENTIAL_PREFIX;

/// What a workspace's `.mcp.json` configures, split by the user's approval.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct WorkspaceServers {
    /// The approved servers, expanded: these may start.
    pub approved: McpConfig,
    /// The servers the user has not approved (or approved with another entry), by name.
    pub pending: Vec<PendingServer>,
    /// One line per problem: the file unreadable, an entry broken, an approvals file that
    /// lies inside the workspace. Peer text: escape before a terminal shows it.
    pub warnings: Vec<String>,
}

/// A server of the workspace that did not start because the user has not approved it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingServer {
    /// Its name in `.mcp.json`.
    pub name: String,
    /// Its entry as written: what an approval would name.
    pub entry: ServerEntry,
    /// Whether an approval of this name exists with another entry (its command, arguments,
    /// environment, URL or headers changed since the user approved it; [`ServerEntry::describe`]
    /// shows them all).
    pub changed: bool,
}

impl WorkspaceServers {
    /// Reads `<root>/.mcp.json` and keeps the servers `approvals` allows for `root` (which
    /// should be canonical: approvals name canonical paths). `approvals_file` is where the
    /// approvals were read from: when it lies inside `root`, the workspace could have written
    /// it, so none of them count. No file is no server; nothing here fails.
    pub fn load(
        root: &Path,
        approvals: &Approvals,
        approvals_file: Option<&Path>,
    ) -> WorkspaceServers {
        let mut found = WorkspaceServers::default();
        let path = root.join(FILE_NAME);
        let text = match crate::config::read_bounded(&path, MAX_CONFIG_BYTES) {
            Ok(text) => text,
            Err(ConfigError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return found;
            }
            Err(error) => {
                found
                    .warnings
                    .push(format!("{error}; no server of it starts"));
                return found;
            }
        };
        WorkspaceServers::from_text(root, &text, approvals, approvals_file, &|name| {
            std::env::var(name).ok()
        })
    }

    /// [`WorkspaceServers::load`] of `text` as the workspace's `.mcp.json`, with the process
    /// environment `env` (which never sees an `ANTHROPIC_*` name: those are unset here).
    pub fn from_text(
        root: &Path,
        text: &str,
        approvals: &Approvals,
        approvals_file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> WorkspaceServers {
        let mut found = WorkspaceServers::default();
        let path = root.join(FILE_NAME);
        let entries = match crate::config::entries(text, &path) {
            Ok(entries) => entries,
            Err(error) => {
                found
                    .warnings
                    .push(format!("{error}; no server of it starts"));
                return found;
            }
        };
        let empty = Approvals::default();
        let approvals = match approvals_file.filter(|file| lies_inside(file, root)) {
            Some(file) => {
                found.warnings.push(format!(
                    "the MCP approvals file {} lies inside the workspace, so none of its \
                     approvals count here",
                    file.display()
                ));
                &empty
            }
            None => approvals,
        };
        let env = |name: &str| {
            if threadline_workspace::credentials::is_credential_variable(name) {
                None
            } else {
                env(name)
            }
        };
        for (name, entry) in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    found.warnings.push(error.to_string());
                    continue;
                }
            };
            if !approvals.is_approved(root, &name, &entry) {
                let changed = root
                    .to_str()
                    .and_then(|key| approvals.projects.get(key))
                    .is_some_and(|servers| servers.contains_key(&name));
                found.pending.push(PendingServer {
                    name,
                    entry,
                    changed,
                });
                continue;
            }
            match entry.resolve(&name, &path, &env) {
                Ok(config) => {
                    found.approved.servers.insert(name, config);
                }
                Err(ConfigError::MissingVariable {
                    server, variable, ..
                }) if threadline_workspace::credentials::is_credential_variable(&variable) => {
                    found.warnings.push(format!(
                        "{}: server `{server}`: `{variable}` is never expanded into a \
                         workspace server's configuration; it does not start",
                        path.display()
                    ));
                }
                Err(error) => found
                    .warnings
                    .push(format!("{error}; the server does not start")),
            }
        }
        found
    }
}

/// Whether `file` is `root` or lies under it, compared as canonical paths where they exist.
fn lies_inside(file: &Path, root: &Path) -> bool {
    let canonical = |p: &Path| -> PathBuf {
        p.canonicalize().unwrap_or_else(|_| match p.parent() {
            // A file not written yet: its directory decides.
            Some(parent) => parent
                .canonicalize()
                .map(|dir| dir.join(p.file_name().unwrap_or_default()))
                .unwrap_or_else(|_| p.to_path_buf()),
            None => p.to_path_buf(),
        })
    };
    canonical(file).starts_with(canonical(root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SECRET: &str = "sk-ant-PROP-SECRET";

    /// A value that mixes literal text with `${VAR}` and `${VAR:-default}` references to
    /// protected and ordinary names, broken references and stray `$`.
    fn hostile_value() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z/ .:=-]{0,6}",
            Just("${ANTHROPIC_API_KEY}".to_owned()),
            Just("${ANTHROPIC_AUTH_TOKEN:-x}".to_owned()),
            Just("${ANTHROPIC_}".to_owned()),
            Just("${AWS_SECRET_ACCESS_KEY}".to_owned()),
            Just("${AWS_BEARER_TOKEN_BEDROCK:-x}".to_owned()),
            Just("${HOME}".to_owned()),
            Just("${UNSET_NAME:-d}".to_owned()),
            Just("${".to_owned()),
            Just("$".to_owned()),
            Just("}".to_owned()),
        ];
        prop::collection::vec(piece, 0..6).prop_map(|parts| parts.concat())
    }

    fn hostile_entry() -> impl Strategy<Value = serde_json::Value> {
        (
            prop_oneof![
                Just(None),
                Just(Some("stdio")),
                Just(Some("http")),
                Just(Some("x"))
            ],
            hostile_value(),
            prop::collection::vec(hostile_value(), 0..3),
            prop::collection::btree_map("[A-Z_]{1,8}", hostile_value(), 0..3),
        )
            .prop_map(|(kind, value, args, map)| {
                let mut entry = serde_json::json!({"args": args, "env": map, "headers": map});
                if let Some(kind) = kind {
                    entry["type"] = kind.into();
                }
                if kind == Some("http") {
                    entry["url"] = value.into();
                } else {
                    entry["command"] = value.into();
                }
                entry
            })
    }

    proptest! {
        /// Whatever the workspace writes: nothing starts unapproved, and once approved no
        /// server is given a credential variable's value (`ANTHROPIC_*`, AWS's secret key and
        /// Bedrock API key), while each entry starts or is
        /// one warning.
        #[test]
        fn no_workspace_server_starts_unapproved_or_gets_the_key(
            entries in prop::collection::btree_map("[a-z]{1,4}", hostile_entry(), 0..5),
        ) {
            let text = serde_json::json!({"mcpServers": entries}).to_string();
            let root = Path::new("/ws");
            let env = |name: &str| {
                let credential = name.starts_with("ANTHROPIC_") || name.starts_with("AWS_S")
                    || name == "AWS_BEARER_TOKEN_BEDROCK";
                Some(if credential { SECRET.to_owned() } else { "v".to_owned() })
            };
            let none = WorkspaceServers::from_text(root, &text, &Approvals::default(), None, &env);
            prop_assert!(none.approved.servers.is_empty());
            prop_assert_eq!(none.pending.len(), entries.len());
            let mut approvals = Approvals::default();
            for pending in &none.pending {
                approvals.approve(root, &pending.name, &pending.entry);
            }
            let all = WorkspaceServers::from_text(root, &text, &approvals, None, &env);
            prop_assert!(all.pending.is_empty());
            prop_assert_eq!(all.approved.servers.len() + all.warnings.len(), entries.len());
            let shown = format!("{:?}", all.approved);
            prop_assert!(!shown.contains(SECRET), "{}", shown);
            // Another workspace's approvals approve nothing here.
            let elsewhere = WorkspaceServers::from_text(Path::new("/other"), &text, &approvals, None, &env);
            prop_assert!(elsewhere.approved.servers.is_empty());
        }
    }
}
