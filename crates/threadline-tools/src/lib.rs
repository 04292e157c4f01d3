//! Built-in tools for the threadline query loop, for a coding agent working in one
//! directory: `Read`, `LS`, `Glob`, `Grep`, `Write`, `Edit` and `Bash`.
//!
//! Every path goes through the workspace confinement of `threadline-workspace` (reads) and
//! [`confine::resolve_for_write`] (writes): no `..`, no absolute path outside the root, no
//! symbolic link leading out (a dangling one included). Reads, listings, searches and command
//! output are bounded. Walks use ripgrep's crates (`ignore`, `globset`, `grep-regex`,
//! `grep-searcher`): `.gitignore` and hidden files are respected and links are not followed.
//! `Bash` asks permission (through the loop's permission callback) unless allowed up front.
//!
//! # Bounds
//!
//! - **Memory:** one call of a file tool holds at most [`MAX_TOOL_CALL_BYTES`] (64 MiB),
//!   whatever the file: `Read` pulls at most its byte limit (256 KiB by default, at most
//!   [`read::MAX_READ_BYTES`]) and never the rest of the file; `Grep` searches through a
//!   line buffer capped at [`grep::MAX_GREP_HEAP_BYTES`] (a file with a longer line is
//!   skipped and named), cuts each line before copying it and cuts its answer; `Write` and
//!   `Edit` handle at most [`write::MAX_WRITE_BYTES`]; walks visit at most [`MAX_VISITED`]
//!   entries. Tools the loop runs concurrently each have this bound.
//! - **Control paths:** `Write` and `Edit` refuse the workspace's control paths (`.git` at
//!   any depth — a worktree's `.git` file too —, `.gitmodules`, `.claude`, `.mcp.json`,
//!   `.threadline`; [`threadline_workspace::ControlPaths`]), a file named `HEAD` and anything
//!   inside a directory that holds one (a git directory outside `.git`), through links and
//!   case aliases too, so file permission never becomes shell permission (a planted
//!   `core.fsmonitor` or hook). Reading them stays allowed.
//! - **Secrets:** `Bash`'s child does not inherit a model credential, the Claude API's (every
//!   `ANTHROPIC_*` variable) or a cloud platform's (AWS keys, Vertex's token, Foundry's key:
//!   [`shell::DEFAULT_WITHHELD_ENV`] and
//!   [`is_credential_variable`](threadline_workspace::credentials::is_credential_variable)),
//!   or any variable added to the list, unless passed on purpose
//!   ([`Shell::with_withheld_env`]).
//!
//! Not protected: a command the user allowed can do anything the user can; the project's
//! sources and build files are writable (a build the user runs later runs them).
//!
//! ```
//! use std::sync::Arc;
//! use futures::StreamExt as _;
//! use threadline_workspace::Workspace;
//! use threadline_query::{ToolContext, ToolEvent};
//! use threadline_query::Tool as _;
//! use threadline_tools::{builtin, ShellAccess};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("notes.txt"), "one\ntwo\n")?;
//! let workspace = Arc::new(Workspace::new(dir.path())?);
//! let tools = builtin(workspace, ShellAccess::Ask);
//! assert_eq!(tools.names().collect::<Vec<_>>(), ["Bash", "Edit", "Glob", "Grep", "LS", "Read", "Write"]);
//!
//! let read = tools.get("Read").expect("Read");
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let events: Vec<ToolEvent> = rt.block_on(
//!     read.call(serde_json::json!({"file_path": "notes.txt"}), ToolContext::new("toolu_1")).collect(),
//! );
//! let ToolEvent::Result(output) = &events[0] else { panic!("a result") };
//! assert_eq!(output.content, threadline_wire::Content::Text("     1\tone\n     2\ttwo\n".into()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod confine;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod list;
pub mod read;
pub mod shell;
mod text;
mod walk;
pub mod write;

use std::sync::Arc;

use threadline_query::ToolSet;

pub use edit::EditFile;
pub use glob::Glob;
pub use grep::Grep;
pub use list::ListDir;
pub use read::{ReadArgs, ReadFile};
pub use shell::Shell;
/// The directory the tools are confined to (`threadline-workspace`'s, re-exported so that a user
/// of the tools alone can build one).
pub use threadline_workspace::Workspace;
pub use walk::MAX_VISITED;
pub use write::WriteFile;

/// The most memory one call of a file tool (`Read`, `LS`, `Glob`, `Grep`, `Write`, `Edit`)
/// holds, whatever the files hold (64 MiB); a documented bound, held by a test that
/// measures a child process's peak resident memory.
pub const MAX_TOOL_CALL_BYTES: usize = 64 * 1024 * 1024;

/// Whether `Bash` runs commands without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShellAccess {
    /// Ask through the permission callback for every command (a non-interactive run denies).
    Ask,
    /// Run every command.
    Allow,
}

/// All the built-in tools, working in `workspace`.
pub fn builtin(workspace: Arc<Workspace>, shell: ShellAccess) -> ToolSet {
    ToolSet::new()
        .with(ReadFile::new(Arc::clone(&workspace)))
        .with(ListDir::new(Arc::clone(&workspace)))
        .with(Glob::new(Arc::clone(&workspace)))
        .with(Grep::new(Arc::clone(&workspace)))
        .with(WriteFile::new(Arc::clone(&workspace)))
        .with(EditFile::new(Arc::clone(&workspace)))
        .with(Shell::new(workspace).allow_without_asking(shell == ShellAccess::Allow))
}
