//! The directory an LLM agent works in, and the only ways into it: every path a user or a
//! model names is confined to the workspace before anything is read, every read is bounded,
//! writes never land on a control path (`.git`, agent and tool configuration), and `git`
//! runs read-only with every program a repository could name turned off.
//!
//! It is what the context channels (`threadline-attach`) and the built-in file tools
//! (`threadline-tools`) share, kept apart from both so that each depends only on the
//! confinement it needs. Pure and synchronous; feature `tokio` adds the async reads
//! ([`Workspace`]'s `read_text` and `list_dir`, `read_limited`).
//!
//! ```
//! use threadline_workspace::{Limits, PathKind, Refusal, Workspace};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("src"))?;
//! std::fs::write(dir.path().join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n")?;
//! let workspace = Workspace::new(dir.path())?;
//!
//! // A path inside is resolved, then read within the limits.
//! let file = workspace.resolve("src/lib.rs")?;
//! assert_eq!(file.kind, PathKind::File);
//! let read = workspace.read_text_blocking(&file, &Limits::default())?;
//! assert_eq!(read.content, "pub fn answer() -> u32 { 42 }\n");
//!
//! // `..` is refused before the file system is touched.
//! assert!(matches!(workspace.resolve("../secret"), Err(Refusal::ParentTraversal)));
//! // Reading git's configuration is allowed; writing it never is.
//! assert!(workspace.resolve_for_write(".git/config").is_err());
//! assert!(workspace.resolve_for_write("src/new.rs").is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Guarantees
//!
//! - Nothing outside the workspace is read: `..`, absolute paths outside the root and
//!   symbolic links leading out are refused before any content is read, and before anything
//!   outside is even looked at, so a link out gets the same refusal whether its target
//!   exists or not; no file is read past its byte limit ([`Workspace`]).
//! - A write resolved by [`Workspace::resolve_for_write`] never lands on a control path
//!   (`.git` at any depth, agent and tool configuration: [`ControlPaths`]), through a link,
//!   a case alias or otherwise; nor on a file named `HEAD`, nor inside a directory that holds
//!   one, so no git directory can be planted or changed outside `.git` either.
//! - No git setting, hook or file runs code, and git never fetches ([`git::Git`]).
#![forbid(unsafe_code)]

pub mod control_paths;
pub mod credentials;
pub mod git;
mod workspace;

pub use control_paths::{ControlPaths, DEFAULT_CONTROL_PATHS, GIT_DIRECTORY_MARKER};
pub use git::{Git, GitError};
#[cfg(feature = "tokio")]
pub use workspace::read_limited;
pub use workspace::{
    BINARY_SNIFF_BYTES, Limits, Listing, MAX_LINK_HOPS, PathKind, Refusal, Resolved, TextRead,
    Truncation, Workspace,
};
