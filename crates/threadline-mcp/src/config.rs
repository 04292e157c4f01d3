//! `.mcp.json`: the MCP servers of a workspace, in the format Claude Code reads.
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"TOKEN": "${TOKEN}"}},
//!   "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "${KEY:-none}"}}
//! }}
//! ```
//!
//! `"type": "stdio"` is optional for a command; unknown fields are ignored. `${VAR}` and
//! `${VAR:-default}` are expanded in `command`, `args`, `env`, `url` and `headers`, as Claude
//! Code does; a variable that is unset and has no default is an error naming the server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The largest `.mcp.json` read (a bound on a file we did not write).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The file name Claude Code reads at the workspace root.
pub const FILE_NAME: &str = ".mcp.json";

/// The configured servers, by name (sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpConfig {
    /// Every server, by name.
    pub servers: BTreeMap<String, ServerConfig>,
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerConfig {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

/// Why a configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`].
    #[error("{}: {size} bytes, more than the {MAX_CONFIG_BYTES} read", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// The file is not the expected JSON.
    #[error("{}: not an MCP configuration: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A server entry is neither a command nor an HTTP endpoint.
    #[error("{}: server `{server}`: {message}", path.display())]
    Server {
        /// The file.
        path: PathBuf,
        /// The server's name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// `${VAR}` names a variable that is unset and has no default.
    #[error("{}: server `{server}`: environment variable `{variable}` is not set and has no default", path.display())]
    MissingVariable {
        /// The file.
        path: PathBuf,
        /// The server's name.
        server: String,
        /// The variable.
        variable: String,
    },
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl McpConfig {
    /// Reads `path` (at most [`MAX_CONFIG_BYTES`]), expanding variables from the process
    /// environment.
    pub fn load(path: &Path) -> Result<McpConfig, ConfigError> {
        let read = |source| ConfigError::Read {
            path: path.to_owned(),
            source,
        };
        let size = std::fs::metadata(path).map_err(read)?.len();
        if size > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.to_owned(),
                size,
            });
        }
        let text = std::fs::read_to_string(path).map_err(read)?;
        McpConfig::parse(&text, path, &|name| std::env::var(name).ok())
    }

    /// Reads `<root>/.mcp.json`; no file is an empty configuration.
    pub fn load_workspace(root: &Path) -> Result<McpConfig, ConfigError> {
        let path = root.join(FILE_NAME);
        if !path.exists() {
            return Ok(McpConfig::default());
        }
        McpConfig::load(&path)
    }

    /// Parses `text` (named `path` in errors), looking variables up with `env`.
    pub fn parse(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpConfig, ConfigError> {
        let raw: RawFile = serde_json::from_str(text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source,
        })?;
        let mut servers = BTreeMap::new();
        for (name, server) in raw.mcp_servers {
            let expand = |value: &str| {
                expand(value, env).map_err(|variable| ConfigError::MissingVariable {
                    path: path.to_owned(),
                    server: name.clone(),
                    variable,
                })
            };
            let invalid = |message: &str| ConfigError::Server {
                path: path.to_owned(),
                server: name.clone(),
                message: message.to_owned(),
            };
            let config = match (server.kind.as_deref(), server.command, server.url) {
                (None | Some("stdio"), Some(command), _) => ServerConfig::Stdio {
                    command: expand(&command)?,
                    args: server
                        .args
                        .iter()
                        .map(|a| expand(a))
                        .collect::<Result<_, _>>()?,
                    env: server
                        .env
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                        .collect::<Result<_, ConfigError>>()?,
                },
                (Some("http" | "streamable-http"), _, Some(url)) => ServerConfig::Http {
                    url: expand(&url)?,
                    headers: server
                        .headers
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                        .collect::<Result<_, ConfigError>>()?,
                },
                (Some("sse"), _, _) => {
                    return Err(invalid(
                        "the deprecated `sse` transport is not supported (use `http`)",
                    ));
                }
                (Some("http" | "streamable-http"), _, None) => {
                    return Err(invalid("an `http` server needs a `url`"));
                }
                (None | Some("stdio"), None, _) => {
                    return Err(invalid("a stdio server needs a `command`"));
                }
                (Some(other), _, _) => {
                    return Err(invalid(&format!("unknown transport type `{other}`")));
                }
            };
            servers.insert(name, config);
        }
        Ok(McpConfig { servers })
    }
}

/// Expands `${VAR}` and `${VAR:-default}` in `value`; the error is the unset variable.
/// A `$` not followed by `{…}` stays as it is.
pub fn expand(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(name.to_owned()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
