//! MCP servers as tools of a threadline agent, on the official Rust SDK (`rmcp`).
//!
//! The servers are those of Claude Code's `.mcp.json` ([`McpConfig`]): child processes over
//! stdio and streamable-HTTP endpoints. [`McpServers::connect`] starts them all at once, each
//! within a connect timeout; a server that fails is one line ([`ConnectError`]) and the
//! others go on. Every tool of a server becomes a [`threadline_query::Tool`] named
//! `mcp__<server>__<tool>` ([`tool_name`]) with the server's JSON schema:
//!
//! - `readOnlyHint` makes it concurrency-safe; a tool that is not read-only, or is marked
//!   destructive, asks permission (like the shell tool), with a question that shows every key
//!   of the input, each string cut on its own (start and end kept), so a long value cannot
//!   hide another;
//! - its result becomes tool_result content ([`content::to_output`]): text, images as image
//!   blocks, embedded resources as text or documents, bounded like the built-in tools;
//!   `isError` becomes `is_error`;
//! - progress notifications become the call's progress events; every call has a timeout;
//!   when the loop aborts, the call is cancelled (`notifications/cancelled`);
//! - a server that crashes mid-call answers an error result naming it; the session goes on;
//!   a server's error message is bounded like a result ([`content::MAX_OUTPUT_BYTES`]) in a
//!   call's error result and to [`MAX_ERROR_MESSAGE_BYTES`] in a one-line [`ConnectError`];
//!   a server offered through [`McpServer::connect_to`] (mid-session, `ToolChanges`) has its
//!   tools withdrawn when it leaves (`tool_removal` on a model with the feature).
//!
//! Deny by default: a workspace's own `.mcp.json` starts only the servers the user approved,
//! per workspace and per exact entry, in user-owned state ([`WorkspaceServers`],
//! [`Approvals`]); nothing inside the workspace approves anything. A child never receives
//! `ANTHROPIC_*` variables, and a workspace server never gets one through `${VAR}` expansion;
//! a child is killed when its session is dropped; its stderr is kept (bounded), never mixed
//! into our output. Listing a server's tools stops at [`MAX_TOOLS_PER_SERVER`] tools,
//! [`MAX_TOOL_LIST_BYTES`] or [`MAX_TOOL_PAGES`] pages, whichever comes first.
//!
//! ```
//! use std::path::Path;
//! use threadline_mcp::{McpConfig, ServerConfig};
//!
//! let text = r#"{"mcpServers": {
//!     "files": {"command": "npx", "args": ["-y", "${PKG:-server-files}"]},
//!     "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "${KEY}"}}
//! }}"#;
//! let env = |name: &str| (name == "KEY").then(|| "k1".to_owned());
//! let config = McpConfig::parse(text, Path::new(".mcp.json"), &env).unwrap();
//! assert_eq!(
//!     config.servers["files"],
//!     ServerConfig::Stdio {
//!         command: "npx".into(),
//!         args: vec!["-y".into(), "server-files".into()],
//!         env: Default::default(),
//!     }
//! );
//! assert!(matches!(&config.servers["remote"], ServerConfig::Http { headers, .. } if headers["X-Key"] == "k1"));
//! assert_eq!(threadline_mcp::tool_name("files", "read.file"), "mcp__files__read_file");
//! ```
#![forbid(unsafe_code)]

mod approval;
pub mod config;
#[cfg(feature = "servers")]
pub mod content;
#[cfg(feature = "servers")]
mod error;
#[cfg(feature = "servers")]
mod manager;
mod name;
#[cfg(feature = "servers")]
mod server;
#[cfg(feature = "servers")]
mod tool;
mod workspace;

pub use approval::{ApprovalError, Approvals, MAX_APPROVALS_BYTES, USER_FILE};
pub use config::{ConfigError, McpConfig, ServerConfig, ServerEntry};
#[cfg(feature = "servers")]
pub use error::ConnectError;
#[cfg(feature = "servers")]
pub use manager::McpServers;
pub use name::{MAX_TOOL_NAME, tool_name};
#[cfg(feature = "servers")]
pub use server::{
    LEAVE_POLL, MAX_ERROR_MESSAGE_BYTES, MAX_INSTRUCTIONS_BYTES, MAX_STDERR_BYTES,
    MAX_TOOL_LIST_BYTES, MAX_TOOL_PAGES, MAX_TOOLS_PER_SERVER, McpOptions, McpServer, ToolInfo,
};
pub use workspace::{PROTECTED_VARIABLE_PREFIX, PendingServer, WorkspaceServers};
