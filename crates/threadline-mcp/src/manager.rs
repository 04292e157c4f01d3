//! Every configured server, connected concurrently; the ones that fail are one line each.

use std::sync::Arc;

use futures::future::join_all;

use crate::config::McpConfig;
use crate::error::ConnectError;
use crate::server::{McpOptions, McpServer};

/// The servers of a session: those connected, and one error per server that was not.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct McpServers {
    /// The connected servers, in configuration (name) order.
    pub servers: Vec<McpServer>,
    /// The servers that did not connect, in configuration order.
    pub failures: Vec<ConnectError>,
}

impl McpServers {
    /// Starts every server of `config` at once; each has `options.connect_timeout`.
    pub async fn connect(config: &McpConfig, options: McpOptions) -> McpServers {
        let attempts = config
            .servers
            .iter()
            .map(|(name, server)| McpServer::connect(name, server, options));
        let mut out = McpServers::default();
        for result in join_all(attempts).await {
            match result {
                Ok(server) => out.servers.push(server),
                Err(error) => out.failures.push(error),
            }
        }
        out
    }

    /// The tools of every connected server that is still up.
    pub fn tools(&self) -> Vec<Arc<dyn threadline_query::Tool>> {
        self.servers
            .iter()
            .filter(|s| !s.is_closed())
            .flat_map(McpServer::tools)
            .collect()
    }

    /// `(server, instructions)` of every connected server that has some, in order.
    pub fn instructions(&self) -> Vec<(&str, &str)> {
        self.servers
            .iter()
            .filter_map(|s| Some((s.name(), s.instructions()?)))
            .collect()
    }

    /// The one-line warnings of the servers that did not connect.
    pub fn warnings(&self) -> Vec<String> {
        self.failures.iter().map(ToString::to_string).collect()
    }
}
