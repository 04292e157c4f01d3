//! The workspace root, and reading inside it without ever reading outside it or past a limit.
//!
//! Every path a user or a model names goes through [`Workspace::resolve`]: a `..` component is
//! refused before the file system is touched, an absolute path must lie under the root, and
//! the path is then followed from the root one component at a time, each symbolic link's
//! target spliced in, so that a link leading out is refused *before* anything outside is
//! looked at — whether its outside target exists or not, the answer is the same
//! [`Refusal::SymlinkEscape`] (no existence oracle outside the workspace). Reads then open
//! the canonical path and pull at most `max_bytes + 1` bytes, so a 50 MB file costs the
//! limit, not 50 MB.
//!
//! Writes go through [`Workspace::resolve_for_write`]: the same confinement for a path that
//! may not exist yet, and then the workspace's [`ControlPaths`] policy (`.git` at any depth,
//! agent and tool configuration, a file named `HEAD` and anything inside a directory that
//! holds one: a git directory outside `.git`), so a tool that may write files cannot plant
//! something that git or an agent runs later. Reading control paths stays allowed.
//!
//! What is not protected: the checks and the later open are separate system calls, so a
//! process racing them (a shell command the user allowed) can swap a directory for a link
//! in between; the policy guards the files that make tools run programs on their own, not
//! the project's source, which the user's own builds run.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use crate::control_paths::ControlPaths;

/// At most this many symbolic links are followed while resolving one path (Linux's
/// `MAXSYMLINKS`); a loop of links ends here.
pub const MAX_LINK_HOPS: usize = 40;

#[cfg(feature = "tokio")]
use tokio::io::AsyncReadExt as _;

/// How many bytes at the start of a file are searched for a NUL byte (the binary test git
/// and most editors use).
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// How much of a file or directory is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// At most this many bytes of a file are read (default 256 KiB).
    pub max_bytes: u64,
    /// At most this many lines of a file are kept (default 2,000).
    pub max_lines: usize,
    /// At most this many entries of a directory are listed (default 1,000).
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 256 * 1024,
            max_lines: 2000,
            max_entries: 1000,
        }
    }
}

impl Limits {
    /// These limits with another byte limit.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// These limits with another line limit.
    pub fn with_max_lines(mut self, max_lines: usize) -> Self {
        self.max_lines = max_lines;
        self
    }

    /// These limits with another directory-entry limit.
    pub fn with_max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries;
        self
    }
}

/// Why a path was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The path is empty.
    #[error("the path is empty")]
    Empty,
    /// The path has a `..` component (refused before the file system is touched).
    #[error("`..` is not allowed: paths must stay inside the workspace")]
    ParentTraversal,
    /// An absolute path outside the workspace root.
    #[error("the absolute path is outside the workspace")]
    OutsideWorkspace,
    /// The path is (or passes through) a symbolic link that leads outside the workspace.
    #[error("a symbolic link leads outside the workspace")]
    SymlinkEscape,
    /// Nothing is there.
    #[error("no such file or directory")]
    NotFound,
    /// A device, socket or FIFO: reading one could block or never end.
    #[error("not a regular file or directory")]
    NotRegular,
    /// The file has a NUL byte near its start.
    #[error("a binary file (a NUL byte in its first {BINARY_SNIFF_BYTES} bytes)")]
    Binary,
    /// The file system refused.
    #[error("cannot be read: {0}")]
    Unreadable(String),
    /// The path is, or lies under, a control path of the workspace (a write or an edit was
    /// refused; see [`ControlPaths`]).
    #[error(
        "a control path of the workspace (`{pattern}`: git, agent or tool configuration that can make programs run): the file tools do not write there"
    )]
    ControlPath {
        /// The control path it matched, as configured (`.git`, `HEAD`), or the `HEAD` file
        /// (relative to the root) of the git directory the path lies in (`vendor/x/HEAD`).
        pattern: String,
    },
}

impl Refusal {
    /// Whether the refusal is about confinement (the path would leave the workspace), as
    /// opposed to what is (or is not) at the path.
    pub fn is_confinement(&self) -> bool {
        matches!(
            self,
            Refusal::ParentTraversal | Refusal::OutsideWorkspace | Refusal::SymlinkEscape
        )
    }
}

/// Which limit cut a file or listing short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Truncation {
    /// The file had more lines than this.
    Lines {
        /// The line limit.
        limit: usize,
    },
    /// The file had more bytes than this.
    Bytes {
        /// The byte limit.
        limit: u64,
    },
    /// The directory had more entries than this.
    Entries {
        /// The entry limit.
        limit: usize,
    },
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Truncation::Lines { limit } => write!(f, "cut at the limit of {limit} lines"),
            Truncation::Bytes { limit } => write!(f, "cut at the limit of {limit} bytes"),
            Truncation::Entries { limit } => write!(f, "cut at the limit of {limit} entries"),
        }
    }
}

/// What a resolved path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

/// A path inside the workspace, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The canonical path (symbolic links followed), under the root.
    pub canonical: PathBuf,
    /// The path relative to the root, with `/` separators; `.` for the root itself.
    pub relative: String,
    /// File or directory.
    pub kind: PathKind,
}

/// The text of a file, read within the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRead {
    /// The text kept (valid UTF-8; invalid sequences replaced).
    pub content: String,
    /// Which limit cut it, if one did.
    pub truncated: Option<Truncation>,
}

/// A directory's entries, sorted by name; directories end with `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The entries kept.
    pub entries: Vec<String>,
    /// Whether the listing was cut at the entry limit.
    pub truncated: Option<Truncation>,
}

/// The workspace root: the one directory inside which paths are resolved and read, and its
/// policy of control paths the file tools never write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    control: ControlPaths,
}

/// What following a path found.
enum Walked {
    /// Everything exists: the canonical path (no links in it), under the root.
    Found(PathBuf),
    /// `dir` (canonical, under the root) exists; `rest` (its first name included) does not.
    Missing { dir: PathBuf, rest: Vec<Part> },
}

/// One step of a path being followed.
enum Part {
    Name(OsString),
    /// `..`, only ever from a link's target (a given path with `..` is refused lexically).
    Parent,
}

impl Workspace {
    /// The workspace rooted at `root`, which must be a directory. The root is canonicalized
    /// once, here.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Workspace> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(Workspace {
            root,
            control: ControlPaths::default(),
        })
    }

    /// This workspace with another control-path policy ([`ControlPaths::default`] unless
    /// set; [`ControlPaths::none`] turns the policy off).
    pub fn with_control_paths(mut self, control: ControlPaths) -> Workspace {
        self.control = control;
        self
    }

    /// The control-path policy.
    pub fn control_paths(&self) -> &ControlPaths {
        &self.control
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute under it) to a file or directory
    /// inside the workspace, or says why not. Reads metadata only, never content, and never
    /// looks at anything outside the root: a symbolic link is followed one component at a
    /// time, and a link whose target leaves the root is refused as
    /// [`Refusal::SymlinkEscape`] before its target is looked at, so the answer is the same
    /// whether or not the outside target exists.
    pub fn resolve(&self, path: &str) -> Result<Resolved, Refusal> {
        let relative = self.lexical(path)?;
        let canonical = match self.walk(&relative)? {
            Walked::Found(canonical) => canonical,
            Walked::Missing { .. } => return Err(Refusal::NotFound),
        };
        let metadata = std::fs::metadata(&canonical).map_err(|e| io_refusal(&e))?;
        let kind = if metadata.is_file() {
            PathKind::File
        } else if metadata.is_dir() {
            PathKind::Directory
        } else {
            return Err(Refusal::NotRegular);
        };
        Ok(Resolved {
            relative: relative_text(canonical.strip_prefix(&self.root).unwrap_or(&canonical)),
            canonical,
            kind,
        })
    }

    /// Resolves `path` for writing: the canonical path of the file to write, which exists as
    /// a regular file inside the workspace or does not exist and would be created inside it
    /// (with its missing parent directories). The same confinement as
    /// [`resolve`](Self::resolve), and then the [`ControlPaths`] policy: a path that is, or
    /// lies under, a control path — as given or once its links are followed — is refused as
    /// [`Refusal::ControlPath`], and so (unless [`ControlPaths::with_git_directories`] turned
    /// it off) is a path inside a directory, the root included, that holds a `HEAD` that is
    /// not a directory: git takes such a directory for a repository, or will once `objects/`
    /// and `refs/` are there, and runs what its `config` names.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, Refusal> {
        let relative = self.lexical(path)?;
        if relative.as_os_str().is_empty() {
            return Err(Refusal::NotRegular);
        }
        if let Some(pattern) = self.control.matching(&relative) {
            return Err(Refusal::ControlPath {
                pattern: pattern.to_owned(),
            });
        }
        let target = match self.walk(&relative)? {
            Walked::Found(canonical) => {
                let metadata = std::fs::metadata(&canonical).map_err(|e| io_refusal(&e))?;
                if !metadata.is_file() {
                    return Err(Refusal::NotRegular);
                }
                canonical
            }
            Walked::Missing { dir, rest } => {
                let mut target = dir;
                for part in rest {
                    match part {
                        Part::Name(name) => target.push(name),
                        // Below a missing directory, `..` (from a link's target) cannot be
                        // followed: where it lands depends on what would be created.
                        Part::Parent => return Err(Refusal::NotFound),
                    }
                }
                target
            }
        };
        let inside = target.strip_prefix(&self.root).unwrap_or(&target);
        if inside.as_os_str().is_empty() {
            return Err(Refusal::NotRegular);
        }
        if let Some(pattern) = self.control.matching(inside) {
            return Err(Refusal::ControlPath {
                pattern: pattern.to_owned(),
            });
        }
        if self.control.protects_git_directories()
            && let Some(head) = self.git_directory_head(inside)
        {
            return Err(Refusal::ControlPath { pattern: head });
        }
        Ok(target)
    }

    /// The `HEAD` (relative to the root) of the first directory on the way from the root to
    /// `inside` (a canonical path below the root; its existing directories are real ones)
    /// that holds a `HEAD` that is not a directory: one git would take for a repository.
    /// Looked up as git looks it up, so a case-insensitive file system finds `head` too.
    fn git_directory_head(&self, inside: &Path) -> Option<String> {
        let parent = inside.parent().unwrap_or(Path::new(""));
        let mut dir = PathBuf::new();
        let mut dirs = vec![dir.clone()];
        for component in parent.components() {
            dir.push(component);
            dirs.push(dir.clone());
        }
        dirs.into_iter().find_map(|dir| {
            let head = dir.join(crate::control_paths::GIT_DIRECTORY_MARKER);
            std::fs::symlink_metadata(self.root.join(&head))
                .is_ok_and(|metadata| !metadata.is_dir())
                .then(|| relative_text(&head))
        })
    }

    /// Whether `relative` (a path below the root, as given or resolved) is, or lies under, a
    /// control path of the workspace's policy.
    pub fn is_control_path(&self, relative: impl AsRef<Path>) -> bool {
        self.control.matching(relative.as_ref()).is_some()
    }

    /// The path relative to the root, checked lexically: not empty, no `..`, an absolute
    /// path under the root. Nothing on disk is looked at.
    fn lexical(&self, path: &str) -> Result<PathBuf, Refusal> {
        if path.is_empty() {
            return Err(Refusal::Empty);
        }
        let given = Path::new(path);
        if given.components().any(|c| c == Component::ParentDir) {
            return Err(Refusal::ParentTraversal);
        }
        let relative = if given.is_absolute() {
            // Lexically first, so that nothing outside is even looked at.
            given
                .strip_prefix(&self.root)
                .map_err(|_| Refusal::OutsideWorkspace)?
        } else {
            given
        };
        Ok(relative
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .collect())
    }

    /// Follows `relative` from the root one component at a time, as the kernel would, but
    /// without ever looking outside the root: each symbolic link's target is read
    /// (`readlink`, which looks at the link, not its target) and spliced into the rest of the
    /// path; a target that is absolute outside the root, or whose `..` climbs above it, is an
    /// escape, refused before anything there is looked at.
    fn walk(&self, relative: &Path) -> Result<Walked, Refusal> {
        let mut pending: VecDeque<Part> = relative
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(Part::Name(name.to_os_string())),
                _ => None,
            })
            .collect();
        // The real directories below the root reached so far (never a link).
        let mut reached: Vec<OsString> = Vec::new();
        let mut hops = 0usize;
        while let Some(part) = pending.pop_front() {
            let name = match part {
                Part::Parent => {
                    if reached.pop().is_none() {
                        return Err(Refusal::SymlinkEscape);
                    }
                    continue;
                }
                Part::Name(name) => name,
            };
            let here = self.join(&reached).join(&name);
            let metadata = match std::fs::symlink_metadata(&here) {
                Ok(metadata) => metadata,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    pending.push_front(Part::Name(name));
                    return Ok(Walked::Missing {
                        dir: self.join(&reached),
                        rest: pending.into_iter().collect(),
                    });
                }
                Err(e) => return Err(io_refusal(&e)),
            };
            if !metadata.file_type().is_symlink() {
                if !pending.is_empty() && !metadata.is_dir() {
                    return Err(Refusal::Unreadable(
                        std::io::ErrorKind::NotADirectory.to_string(),
                    ));
                }
                reached.push(name);
                continue;
            }
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Err(Refusal::Unreadable(format!(
                    "more than {MAX_LINK_HOPS} symbolic links"
                )));
            }
            let target = std::fs::read_link(&here).map_err(|e| io_refusal(&e))?;
            let target = if target.is_absolute() {
                // Only a target under the root's canonical path is followed; any other
                // absolute target is outside (even one that would lead back in through
                // another link: refusing it looks at nothing outside).
                let Ok(inside) = target.strip_prefix(&self.root) else {
                    return Err(Refusal::SymlinkEscape);
                };
                reached.clear();
                inside.to_path_buf()
            } else {
                target
            };
            for component in target.components().rev() {
                match component {
                    Component::Normal(name) => pending.push_front(Part::Name(name.to_os_string())),
                    Component::ParentDir => pending.push_front(Part::Parent),
                    Component::CurDir => {}
                    // An absolute path was stripped of the root above.
                    Component::RootDir | Component::Prefix(_) => {
                        return Err(Refusal::SymlinkEscape);
                    }
                }
            }
        }
        Ok(Walked::Found(self.join(&reached)))
    }

    fn join(&self, parts: &[OsString]) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(parts);
        path
    }

    /// Reads the text of a resolved file without blocking the async runtime: at most
    /// `limits.max_bytes + 1` bytes are read, then cut to the line limit (feature `tokio`).
    #[cfg(feature = "tokio")]
    pub async fn read_text(&self, file: &Resolved, limits: &Limits) -> Result<TextRead, Refusal> {
        let opened = tokio::fs::File::open(&file.canonical)
            .await
            .map_err(|e| io_refusal(&e))?;
        read_limited(opened, limits).await
    }

    /// `read_text` (feature `tokio`) for callers outside an async runtime (the session-start
    /// context channels).
    pub fn read_text_blocking(
        &self,
        file: &Resolved,
        limits: &Limits,
    ) -> Result<TextRead, Refusal> {
        let opened = std::fs::File::open(&file.canonical).map_err(|e| io_refusal(&e))?;
        let mut buf = Vec::new();
        opened
            .take(limits.max_bytes.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| io_refusal(&e))?;
        cut_text(buf, limits)
    }

    /// Lists a resolved directory: names sorted (so the listing is the same on every file
    /// system), directories marked with a trailing `/`, cut at the entry limit (feature
    /// `tokio`).
    #[cfg(feature = "tokio")]
    pub async fn list_dir(&self, dir: &Resolved, limits: &Limits) -> Result<Listing, Refusal> {
        // Sorting needs the names first; this bounds how many are looked at.
        let scan_cap = limits.max_entries.saturating_mul(10).max(1000);
        let mut read = tokio::fs::read_dir(&dir.canonical)
            .await
            .map_err(|e| io_refusal(&e))?;
        let mut entries = Vec::new();
        while entries.len() < scan_cap {
            let Some(entry) = read.next_entry().await.map_err(|e| io_refusal(&e))? else {
                break;
            };
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            entries.push(name);
        }
        let more = entries.len() >= scan_cap && read.next_entry().await.ok().flatten().is_some();
        entries.sort();
        let truncated =
            (more || entries.len() > limits.max_entries).then_some(Truncation::Entries {
                limit: limits.max_entries,
            });
        entries.truncate(limits.max_entries);
        Ok(Listing { entries, truncated })
    }
}

/// Reads at most `limits.max_bytes + 1` bytes from `reader` and cuts them to the limits. The
/// one extra byte tells "exactly at the limit" from "longer": nothing beyond it is ever pulled
/// from the reader, however long (or endless) it is (feature `tokio`).
#[cfg(feature = "tokio")]
pub async fn read_limited<R>(reader: R, limits: &Limits) -> Result<TextRead, Refusal>
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut buf = Vec::new();
    reader
        .take(limits.max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .await
        .map_err(|e| io_refusal(&e))?;
    cut_text(buf, limits)
}

/// Binary test, byte cut (at a character boundary), line cut.
fn cut_text(mut buf: Vec<u8>, limits: &Limits) -> Result<TextRead, Refusal> {
    let sniff = buf.len().min(BINARY_SNIFF_BYTES);
    if memchr_nul(&buf[..sniff]) {
        return Err(Refusal::Binary);
    }
    let max_bytes = usize::try_from(limits.max_bytes).unwrap_or(usize::MAX);
    let mut truncated = None;
    if buf.len() > max_bytes {
        buf.truncate(max_bytes);
        // Do not leave half a character at the cut.
        if let Err(e) = std::str::from_utf8(&buf)
            && e.error_len().is_none()
        {
            buf.truncate(e.valid_up_to());
        }
        truncated = Some(Truncation::Bytes {
            limit: limits.max_bytes,
        });
    }
    let mut content = match String::from_utf8(buf) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    if let Some((cut, _)) = content
        .match_indices('\n')
        .nth(limits.max_lines.saturating_sub(1))
        && (cut + 1 < content.len() || limits.max_lines == 0)
    {
        content.truncate(if limits.max_lines == 0 { 0 } else { cut });
        truncated = Some(Truncation::Lines {
            limit: limits.max_lines,
        });
    }
    Ok(TextRead { content, truncated })
}

fn memchr_nul(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}

fn io_refusal(error: &std::io::Error) -> Refusal {
    match error.kind() {
        std::io::ErrorKind::NotFound => Refusal::NotFound,
        _ => Refusal::Unreadable(error.kind().to_string()),
    }
}

fn relative_text(relative: &Path) -> String {
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(bytes: u64, lines: usize) -> Limits {
        Limits::default()
            .with_max_bytes(bytes)
            .with_max_lines(lines)
    }

    #[test]
    fn text_within_the_limits_is_kept_whole() {
        let read = cut_text(b"a\nb\n".to_vec(), &limits(10, 2)).expect("text");
        assert_eq!(read.content, "a\nb\n");
        assert_eq!(read.truncated, None);
    }

    #[test]
    fn lines_past_the_limit_are_cut() {
        let read = cut_text(b"a\nb\nc\n".to_vec(), &limits(100, 2)).expect("text");
        assert_eq!(read.content, "a\nb");
        assert_eq!(read.truncated, Some(Truncation::Lines { limit: 2 }));
    }

    #[test]
    fn a_byte_cut_never_splits_a_character() {
        // "é" is two bytes; a limit of 2 would split the second one.
        let read = cut_text("aé€".as_bytes().to_vec(), &limits(2, 10)).expect("text");
        assert_eq!(read.content, "a");
        assert_eq!(read.truncated, Some(Truncation::Bytes { limit: 2 }));
    }

    #[test]
    fn a_nul_byte_means_binary() {
        assert_eq!(
            cut_text(b"PK\x03\x04\x00\x00".to_vec(), &limits(100, 10)),
            Err(Refusal::Binary)
        );
    }

    #[cfg(feature = "tokio")]
    #[tokio::test]
    async fn an_endless_reader_is_read_only_to_the_limit() {
        // `repeat` never ends: without the bound this test would never finish.
        let read = read_limited(tokio::io::repeat(b'x'), &limits(4096, 10))
            .await
            .expect("text");
        assert_eq!(read.content.len(), 4096);
        assert_eq!(read.truncated, Some(Truncation::Bytes { limit: 4096 }));
    }

    /// A workspace `ws` beside `outside/` (holding `secret`) in one temporary directory.
    #[cfg(unix)]
    fn beside_outside() -> (tempfile::TempDir, Workspace, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("ws");
        std::fs::create_dir_all(dir.path().join("outside/dir")).expect("outside");
        std::fs::write(dir.path().join("outside/secret"), "x").expect("secret");
        std::fs::write(dir.path().join("outside/dir/there"), "x").expect("there");
        let workspace = Workspace::new(dir.path().join("ws")).expect("workspace");
        let outside = std::fs::canonicalize(dir.path().join("outside")).expect("outside");
        (dir, workspace, outside)
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_is_refused_alike_whether_its_target_exists_or_not() {
        use std::os::unix::fs::symlink;
        let (_dir, ws, outside) = beside_outside();
        let root = ws.root().to_path_buf();
        symlink(outside.join("secret"), root.join("exists")).expect("link");
        symlink(outside.join("missing"), root.join("missing")).expect("link");
        symlink("../outside/secret", root.join("rel_exists")).expect("link");
        symlink("../outside/missing", root.join("rel_missing")).expect("link");
        symlink(outside.join("dir"), root.join("dir")).expect("link");
        // Pairs that differ only in whether the outside target exists.
        let pairs = [
            ("exists", "missing"),
            ("rel_exists", "rel_missing"),
            ("dir/there", "dir/not_there"),
            ("dir", "missing/deeper"),
        ];
        for (there, absent) in pairs {
            let a = ws.resolve(there).expect_err("refused");
            let b = ws.resolve(absent).expect_err("refused");
            assert_eq!(a, Refusal::SymlinkEscape, "{there}");
            assert_eq!(a.to_string(), b.to_string(), "{there} / {absent}");
            let a = ws.resolve_for_write(there).expect_err("refused");
            let b = ws.resolve_for_write(absent).expect_err("refused");
            assert_eq!(a, Refusal::SymlinkEscape, "write {there}");
            assert_eq!(a.to_string(), b.to_string(), "write {there} / {absent}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_that_stay_inside_resolve_to_their_target_and_loops_end() {
        use std::os::unix::fs::symlink;
        let (_dir, ws, _outside) = beside_outside();
        let root = ws.root().to_path_buf();
        std::fs::create_dir_all(root.join("a/b")).expect("dirs");
        std::fs::write(root.join("a/b/f.txt"), "f").expect("file");
        symlink("a/b", root.join("ab")).expect("link");
        symlink("../a/b/f.txt", root.join("a/up")).expect("link");
        symlink(root.join("a"), root.join("abs")).expect("link");
        symlink("loop2", root.join("loop1")).expect("link");
        symlink("loop1", root.join("loop2")).expect("link");
        assert_eq!(
            ws.resolve("ab/f.txt").expect("inside").relative,
            "a/b/f.txt"
        );
        assert_eq!(ws.resolve("a/up").expect("inside").relative, "a/b/f.txt");
        assert_eq!(
            ws.resolve("abs/b").expect("inside").kind,
            PathKind::Directory
        );
        assert_eq!(ws.resolve("ab/nope"), Err(Refusal::NotFound));
        assert!(matches!(ws.resolve("loop1"), Err(Refusal::Unreadable(_))));
        // A write through an inside link lands on its target.
        assert_eq!(
            ws.resolve_for_write("ab/new/g.txt").expect("allowed"),
            root.join("a/b/new/g.txt")
        );
    }

    #[test]
    fn writes_to_control_paths_are_refused_and_the_policy_is_configurable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::new(dir.path()).expect("workspace");
        for path in [
            ".git/config",
            "sub/.git/hooks/pre-commit",
            ".GIT/config",
            ".mcp.json",
        ] {
            assert!(
                matches!(ws.resolve_for_write(path), Err(Refusal::ControlPath { .. })),
                "{path}"
            );
        }
        assert!(ws.is_control_path(".claude/settings.json"));
        let open = ws
            .clone()
            .with_control_paths(ControlPaths::none().with("secrets"));
        assert!(open.resolve_for_write(".git/config").is_ok());
        assert_eq!(
            open.resolve_for_write("a/secrets/k"),
            Err(Refusal::ControlPath {
                pattern: "secrets".into()
            })
        );
    }

    #[test]
    fn a_head_file_and_what_lies_inside_a_directory_holding_one_are_not_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::new(dir.path()).expect("workspace");
        // Planting a git directory needs its HEAD.
        for path in ["vendor/x/HEAD", "HEAD", "a/head"] {
            assert_eq!(
                ws.resolve_for_write(path),
                Err(Refusal::ControlPath {
                    pattern: "HEAD".into()
                }),
                "{path}"
            );
        }
        // The rest of one is ordinary files while there is no HEAD beside them.
        assert!(ws.resolve_for_write("vendor/x/config").is_ok());
        assert!(ws.resolve_for_write("HEAD/notes.txt").is_ok());
        // A directory that already holds a HEAD (a bare repository committed to the
        // project): nothing inside it is written, at any depth.
        std::fs::create_dir_all(dir.path().join("fixture.git/refs")).expect("mkdir");
        std::fs::write(
            dir.path().join("fixture.git/HEAD"),
            "ref: refs/heads/main\n",
        )
        .expect("HEAD");
        std::fs::create_dir_all(dir.path().join("tree/HEAD")).expect("mkdir");
        for path in [
            "fixture.git/config",
            "fixture.git/hooks/post-checkout",
            "fixture.git/refs/k",
        ] {
            assert_eq!(
                ws.resolve_for_write(path),
                Err(Refusal::ControlPath {
                    pattern: "fixture.git/HEAD".into()
                }),
                "{path}"
            );
        }
        // A directory named HEAD makes nothing a git directory.
        assert!(ws.resolve_for_write("tree/config").is_ok());
        assert!(ws.resolve_for_write("fixture.gitx/config").is_ok());
        // The rule is the policy's.
        let open = ws
            .clone()
            .with_control_paths(ControlPaths::default().with_git_directories(false));
        assert!(open.resolve_for_write("vendor/x/HEAD").is_ok());
        assert!(open.resolve_for_write("fixture.git/config").is_ok());
        assert!(
            ws.clone()
                .with_control_paths(ControlPaths::none())
                .resolve_for_write("fixture.git/config")
                .is_ok()
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_head_reached_through_a_link_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::new(dir.path()).expect("workspace");
        std::fs::create_dir_all(dir.path().join("bare")).expect("mkdir");
        std::fs::write(dir.path().join("bare/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        std::os::unix::fs::symlink("bare", dir.path().join("alias")).expect("link");
        std::os::unix::fs::symlink("bare/HEAD", dir.path().join("head-link")).expect("link");
        assert_eq!(
            ws.resolve_for_write("alias/config"),
            Err(Refusal::ControlPath {
                pattern: "bare/HEAD".into()
            })
        );
        assert_eq!(
            ws.resolve_for_write("head-link"),
            Err(Refusal::ControlPath {
                pattern: "HEAD".into()
            })
        );
    }

    #[test]
    fn relative_paths_use_forward_slashes_and_dot_for_the_root() {
        assert_eq!(relative_text(Path::new("")), ".");
        assert_eq!(relative_text(Path::new("a/b")), "a/b");
    }
}
