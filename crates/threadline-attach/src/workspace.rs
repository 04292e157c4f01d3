//! The workspace root, and reading inside it without ever reading outside it or past a limit.
//!
//! Every path a user or a model names goes through [`Workspace::resolve`]: a `..` component is
//! refused before the file system is touched, an absolute path must lie under the root, and the
//! canonical form (every symbolic link followed) must still lie under the canonical root. Reads
//! then open the canonical path and pull at most `max_bytes + 1` bytes, so a 50 MB file costs
//! the limit, not 50 MB.

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

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

/// The workspace root: the one directory inside which paths are resolved and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
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
        Ok(Workspace { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute under it) to a file or directory
    /// inside the workspace, or says why not. Reads metadata only, never content.
    pub fn resolve(&self, path: &str) -> Result<Resolved, Refusal> {
        if path.is_empty() {
            return Err(Refusal::Empty);
        }
        let given = Path::new(path);
        if given.components().any(|c| c == Component::ParentDir) {
            return Err(Refusal::ParentTraversal);
        }
        let joined = if given.is_absolute() {
            // Lexically first, so that nothing outside is even looked at.
            if !given.starts_with(&self.root) {
                return Err(Refusal::OutsideWorkspace);
            }
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let canonical = std::fs::canonicalize(&joined).map_err(|e| io_refusal(&e))?;
        let Ok(relative) = canonical.strip_prefix(&self.root) else {
            return Err(Refusal::SymlinkEscape);
        };
        let relative = relative_text(relative);
        let metadata = std::fs::metadata(&canonical).map_err(|e| io_refusal(&e))?;
        let kind = if metadata.is_file() {
            PathKind::File
        } else if metadata.is_dir() {
            PathKind::Directory
        } else {
            return Err(Refusal::NotRegular);
        };
        Ok(Resolved {
            canonical,
            relative,
            kind,
        })
    }

    /// Reads the text of a resolved file without blocking the async runtime: at most
    /// `limits.max_bytes + 1` bytes are read, then cut to the line limit.
    pub async fn read_text(&self, file: &Resolved, limits: &Limits) -> Result<TextRead, Refusal> {
        let opened = tokio::fs::File::open(&file.canonical)
            .await
            .map_err(|e| io_refusal(&e))?;
        read_limited(opened, limits).await
    }

    /// [`read_text`](Self::read_text) for callers outside an async runtime (the session-start
    /// channels).
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
    /// system), directories marked with a trailing `/`, cut at the entry limit.
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
/// from the reader, however long (or endless) it is.
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

    #[tokio::test]
    async fn an_endless_reader_is_read_only_to_the_limit() {
        // `repeat` never ends: without the bound this test would never finish.
        let read = read_limited(tokio::io::repeat(b'x'), &limits(4096, 10))
            .await
            .expect("text");
        assert_eq!(read.content.len(), 4096);
        assert_eq!(read.truncated, Some(Truncation::Bytes { limit: 4096 }));
    }

    #[test]
    fn relative_paths_use_forward_slashes_and_dot_for_the_root() {
        assert_eq!(relative_text(Path::new("")), ".");
        assert_eq!(relative_text(Path::new("a/b")), "a/b");
    }
}
