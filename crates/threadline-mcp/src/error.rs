//! Why a server could not be connected: one line each, naming the server.

use std::time::Duration;

fn tail(stderr: &Option<String>) -> String {
    stderr
        .as_ref()
        .map(|line| format!(" (stderr: {line})"))
        .unwrap_or_default()
}

/// A server that did not connect; its `Display` is the one line a user reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The command could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The command.
        command: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The server's configuration cannot be used (e.g. a header that is not valid HTTP).
    #[error("MCP server `{server}`: {message}")]
    Config {
        /// The server's name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The `initialize` handshake failed (the server exited, or answered something else).
    #[error("MCP server `{server}`: handshake failed: {message}{}", tail(stderr))]
    Handshake {
        /// The server's name.
        server: String,
        /// What the SDK reported, cut at [`MAX_ERROR_MESSAGE_BYTES`](crate::MAX_ERROR_MESSAGE_BYTES).
        message: String,
        /// The last line of its stderr.
        stderr: Option<String>,
    },
    /// `tools/list` failed.
    #[error(
        "MCP server `{server}`: listing tools failed: {message}{}",
        tail(stderr)
    )]
    ListTools {
        /// The server's name.
        server: String,
        /// What the SDK reported, cut at [`MAX_ERROR_MESSAGE_BYTES`](crate::MAX_ERROR_MESSAGE_BYTES).
        message: String,
        /// The last line of its stderr.
        stderr: Option<String>,
    },
    /// The server did not connect within the connect timeout.
    #[error("MCP server `{server}`: no answer within {}s{}", after.as_secs_f64(), tail(stderr))]
    Timeout {
        /// The server's name.
        server: String,
        /// The timeout.
        after: Duration,
        /// The last line of its stderr.
        stderr: Option<String>,
    },
}

impl ConnectError {
    /// The server's name.
    pub fn server(&self) -> &str {
        match self {
            ConnectError::Spawn { server, .. }
            | ConnectError::Config { server, .. }
            | ConnectError::Handshake { server, .. }
            | ConnectError::ListTools { server, .. }
            | ConnectError::Timeout { server, .. } => server,
        }
    }
}
