//! The session files of a Claude Code project directory (`~/.claude/projects/<project>/`).
//!
//! A project directory holds one `<sessionId>.jsonl` per session (the id is a lowercase-hex
//! UUID) and the transcripts of the session's subagents, in one of two layouts:
//!
//! * Claude Code 2.0 writes `agent-<agentId>.jsonl` beside the sessions; its records carry the
//!   *parent's* `sessionId`, which is how it is found under its session.
//! * Claude Code 2.1 writes `<sessionId>/subagents/agent-<agentId>.jsonl`, possibly nested one
//!   more level (`subagents/workflows/<runId>/agent-<id>.jsonl`), with an optional sidecar
//!   `agent-<agentId>.meta.json` (`agentType`, `description`, the spawning `toolUseId`).
//!
//! (Claude Code 1.0 wrote subagents inline, as sidechains of the session's own file.)
//! An `agent-acompact-<id>` file is the request that summarized the session when it was
//! compacted: [`AgentKind::Compaction`], whose usage is the compaction's cost, not a second
//! conversation.
//!
//! [`scan_project`] lists what is there without importing anything: the only file contents it
//! reads are the first line of a 2.0 agent file (at most [`HEAD_BYTES`]) and `.meta.json`
//! sidecars (at most [`HEAD_BYTES`] each). It follows no symbolic link, descends at most
//! [`MAX_DEPTH`] levels and lists at most [`MAX_ENTRIES`] directory entries in all, so a
//! hostile or huge directory costs bounded work; what it passes over is reported in
//! [`Project::problems`]. Ids given by a caller ([`Project::session`], [`Project::agent`]) are
//! compared with the names found, never joined into a path, so `--session ../../etc` finds
//! nothing.
//!
//! ```
//! use threadline_message::claude_code_project::{AgentKind, scan_project};
//!
//! let dir = std::env::temp_dir().join(format!("threadline-project-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let session = "7f2abd2d-7cfc-4447-9ddd-3ca8d1e1a3f0";
//! std::fs::create_dir_all(dir.join(session).join("subagents"))?;
//! std::fs::write(dir.join(format!("{session}.jsonl")), "{}\n")?;
//! std::fs::write(dir.join(session).join("subagents/agent-a1b2.jsonl"), "{}\n")?;
//! std::fs::write(dir.join(session).join("subagents/agent-acompact-c3.jsonl"), "{}\n")?;
//! std::fs::write(dir.join("notes.txt"), "not a session")?;
//!
//! let project = scan_project(&dir)?;
//! assert_eq!(project.sessions.len(), 1);
//! let found = project.session(session).expect("listed");
//! assert!(found.path.is_some());
//! let agents: Vec<(&str, AgentKind)> = found.agents.iter().map(|a| (a.id.as_str(), a.kind)).collect();
//! assert_eq!(agents, [("a1b2", AgentKind::Subagent), ("acompact-c3", AgentKind::Compaction)]);
//! assert!(project.agent(session, "a1b2").is_some());
//! assert!(project.session("../etc").is_none());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The most bytes read from the head of a 2.0 agent file or from a `.meta.json` sidecar.
pub const HEAD_BYTES: u64 = 64 * 1024;
/// How deep [`scan_project`] descends below the project directory
/// (`<session>/subagents/workflows/<run>/agent-*.jsonl` is at depth 4).
pub const MAX_DEPTH: usize = 4;
/// The most directory entries [`scan_project`] looks at, over all directories.
pub const MAX_ENTRIES: usize = 100_000;

/// Why a project directory could not be listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectError {
    /// The path is not a directory (or cannot be read as one).
    #[error("cannot list {}: {source}", path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The path names something that is not a directory.
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
}

impl ProjectError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ProjectError::ReadDir { path, .. } | ProjectError::NotADirectory { path } => path,
        }
    }
}

/// What an agent transcript is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum AgentKind {
    /// A subagent the session delegated to (the `Task`/`Agent` tool).
    Subagent,
    /// The request that summarized the session when it was compacted (`agent-acompact-*`).
    Compaction,
}

/// One agent transcript of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFile {
    /// The agent id: the file name between `agent-` and `.jsonl`.
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// What it is.
    pub kind: AgentKind,
    /// The `.meta.json` sidecar beside it (2.1), if there is one and it is a JSON object.
    pub meta: Option<Value>,
}

impl AgentFile {
    /// The sidecar's `agentType`, if it names one.
    pub fn agent_type(&self) -> Option<&str> {
        self.meta.as_ref()?.get("agentType")?.as_str()
    }

    /// The sidecar's `description`, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.meta.as_ref()?.get("description")?.as_str()
    }
}

/// One session of the project: its transcript and its agents' transcripts.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFiles {
    /// The session id (the file stem).
    pub id: String,
    /// `<id>.jsonl`; `None` when only agent files of the session were found.
    pub path: Option<PathBuf>,
    /// Its agents, ordered by kind and id.
    pub agents: Vec<AgentFile>,
}

/// Something [`scan_project`] passed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectProblem {
    /// The path concerned.
    pub path: PathBuf,
    /// What was wrong, one line.
    pub reason: String,
}

/// A project directory, listed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Project {
    /// The sessions, ordered by id.
    pub sessions: Vec<SessionFiles>,
    /// Agent files of the 2.0 layout whose session could not be told (no `sessionId` in
    /// their first line).
    pub orphan_agents: Vec<AgentFile>,
    /// What was passed over (unreadable entries, links, limits reached), in the order found.
    pub problems: Vec<ProjectProblem>,
}

impl Project {
    /// The session with this id.
    pub fn session(&self, id: &str) -> Option<&SessionFiles> {
        self.sessions.iter().find(|s| s.id == id)
    }

    /// The agent `agent_id` of session `session_id`.
    pub fn agent(&self, session_id: &str, agent_id: &str) -> Option<&AgentFile> {
        self.session(session_id)?
            .agents
            .iter()
            .find(|a| a.id == agent_id)
    }
}

/// Whether `text` is a session id as Claude Code names them: a UUID in hex with hyphens
/// (`8-4-4-4-12`; the SDK ignores files whose stem is anything else).
pub fn is_session_id(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Lists the sessions of the Claude Code project directory `dir` and their agents.
pub fn scan_project(dir: impl AsRef<Path>) -> Result<Project, ProjectError> {
    let dir = dir.as_ref();
    let metadata = fs::metadata(dir).map_err(|source| ProjectError::ReadDir {
        path: dir.to_path_buf(),
        source,
    })?;
    if !metadata.is_dir() {
        return Err(ProjectError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let mut scan = Scan::default();
    let top = scan.list(dir).map_err(|source| ProjectError::ReadDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut sessions: BTreeMap<String, SessionFiles> = BTreeMap::new();
    fn entry<'a>(
        sessions: &'a mut BTreeMap<String, SessionFiles>,
        id: &str,
    ) -> &'a mut SessionFiles {
        sessions
            .entry(id.to_owned())
            .or_insert_with(|| SessionFiles {
                id: id.to_owned(),
                path: None,
                agents: Vec::new(),
            })
    }
    let mut orphans = Vec::new();
    for (name, path, kind) in top {
        match kind {
            EntryKind::File => {
                if let Some(stem) = name.strip_suffix(".jsonl") {
                    if is_session_id(stem) {
                        if fs::symlink_metadata(&path).is_ok_and(|m| m.len() > 0) {
                            entry(&mut sessions, stem).path = Some(path);
                        }
                    } else if let Some(agent) = agent_file(&name, &path) {
                        // 2.0: the agent's records carry its parent's session id.
                        match head_session_id(&path) {
                            Some(session) => entry(&mut sessions, &session).agents.push(agent),
                            None => orphans.push(agent),
                        }
                    }
                }
            }
            EntryKind::Dir if is_session_id(&name) => {
                let mut agents = Vec::new();
                // `<session>/subagents/` is two levels down; what is left of MAX_DEPTH below it.
                scan.agents_below(&path.join("subagents"), MAX_DEPTH - 2, &mut agents);
                if !agents.is_empty() {
                    entry(&mut sessions, &name).agents.extend(agents);
                }
            }
            EntryKind::Dir => {}
        }
    }
    let mut sessions: Vec<SessionFiles> = sessions.into_values().collect();
    for session in &mut sessions {
        session
            .agents
            .sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
    }
    Ok(Project {
        sessions,
        orphan_agents: orphans,
        problems: scan.problems,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    File,
    Dir,
}

#[derive(Default)]
struct Scan {
    entries: usize,
    problems: Vec<ProjectProblem>,
}

impl Scan {
    fn problem(&mut self, path: &Path, reason: impl Into<String>) {
        self.problems.push(ProjectProblem {
            path: path.to_path_buf(),
            reason: reason.into(),
        });
    }

    /// The files and directories in `dir` (links and other kinds are passed over and
    /// reported), sorted by name, within the entry budget.
    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, PathBuf, EntryKind)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir)? {
            if self.entries >= MAX_ENTRIES {
                self.problem(
                    dir,
                    format!("the listing stopped at {MAX_ENTRIES} directory entries"),
                );
                break;
            }
            self.entries += 1;
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    self.problem(dir, format!("an entry cannot be read: {error}"));
                    continue;
                }
            };
            let path = entry.path();
            let Ok(name) = entry.file_name().into_string() else {
                continue; // Claude Code never writes a name that is not UTF-8.
            };
            match entry.file_type() {
                Ok(t) if t.is_file() => out.push((name, path, EntryKind::File)),
                Ok(t) if t.is_dir() => out.push((name, path, EntryKind::Dir)),
                Ok(t) if t.is_symlink() => {
                    if name.ends_with(".jsonl") {
                        self.problem(&path, "a symbolic link: not followed");
                    }
                }
                Ok(_) => {}
                Err(error) => self.problem(&path, format!("cannot tell its type: {error}")),
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Agent files in `dir` and up to `levels` more levels below it.
    fn agents_below(&mut self, dir: &Path, levels: usize, out: &mut Vec<AgentFile>) {
        let entries = match self.list(dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(error) => {
                self.problem(dir, format!("cannot list: {error}"));
                return;
            }
        };
        for (name, path, kind) in entries {
            match kind {
                EntryKind::File => {
                    if let Some(agent) = agent_file(&name, &path) {
                        out.push(agent);
                    }
                }
                EntryKind::Dir if levels > 0 => self.agents_below(&path, levels - 1, out),
                EntryKind::Dir => self.problem(
                    &path,
                    format!("deeper than {MAX_DEPTH} levels below the project: not listed"),
                ),
            }
        }
    }
}

/// The agent file named `name`, if it is one (`agent-<id>.jsonl`, not empty).
fn agent_file(name: &str, path: &Path) -> Option<AgentFile> {
    let id = name.strip_prefix("agent-")?.strip_suffix(".jsonl")?;
    if id.is_empty() || fs::symlink_metadata(path).map_or(true, |m| m.len() == 0) {
        return None;
    }
    let kind = if id.starts_with("acompact") {
        AgentKind::Compaction
    } else {
        AgentKind::Subagent
    };
    let meta = read_head(&path.with_file_name(format!("agent-{id}.meta.json")))
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .filter(Value::is_object);
    Some(AgentFile {
        id: id.to_owned(),
        path: path.to_path_buf(),
        kind,
        meta,
    })
}

/// At most [`HEAD_BYTES`] of the regular file at `path` (not through a link: a link, a FIFO or
/// a device is not read, so nothing in the directory can make the scan block or leave it).
fn read_head(path: &Path) -> Option<Vec<u8>> {
    if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let file = fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(HEAD_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The `sessionId` of the first record of the file at `path` that names one, looking at no
/// more than [`HEAD_BYTES`].
fn head_session_id(path: &Path) -> Option<String> {
    if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let file = fs::File::open(path).ok()?;
    let reader = BufReader::new(file.take(HEAD_BYTES));
    reader.split(b'\n').map_while(Result::ok).find_map(|line| {
        let record: Value = serde_json::from_slice(&line).ok()?;
        let id = record.get("sessionId")?.as_str()?;
        is_session_id(id).then(|| id.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_link_for_a_sidecar_is_not_opened() {
        let dir =
            std::env::temp_dir().join(format!("threadline-project-fifo-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let session = "7f2abd2d-7cfc-4447-9ddd-3ca8d1e1a3f0";
        let subagents = dir.join(session).join("subagents");
        fs::create_dir_all(&subagents).expect("dirs");
        fs::write(subagents.join("agent-a1.jsonl"), "{}\n").expect("agent");
        fs::write(subagents.join("agent-b2.jsonl"), "{}\n").expect("agent");
        // A FIFO would block an open for reading until a writer comes: it must not be opened.
        let fifo = subagents.join("agent-a1.meta.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let secret = dir.join("secret.json");
        fs::write(&secret, r#"{"agentType":"leaked"}"#).expect("secret");
        std::os::unix::fs::symlink(&secret, subagents.join("agent-b2.meta.json")).expect("link");
        let project = scan_project(&dir).expect("listed");
        let agents = &project.session(session).expect("session").agents;
        assert_eq!(agents.len(), 2);
        assert!(agents.iter().all(|a| a.meta.is_none()), "{agents:?}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn session_ids_are_hex_uuids_only() {
        assert!(is_session_id("7f2abd2d-7cfc-4447-9ddd-3ca8d1e1a3f0"));
        assert!(!is_session_id("7f2abd2d-7cfc-4447-9ddd-3ca8d1e1a3f"));
        assert!(!is_session_id("7f2abd2d-7cfc-4447-9ddd-3ca8d1e1a3fz"));
        assert!(!is_session_id("../../7cfc-4447-9ddd-3ca8d1e1a3f0"));
        assert!(!is_session_id(""));
    }
}
