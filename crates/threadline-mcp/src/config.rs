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
//!
//! A file the user names is read with [`McpConfig::load`]: every entry must be valid. A
//! workspace's own `.mcp.json` may be hostile and is read only through
//! [`WorkspaceServers`](crate::WorkspaceServers), which starts nothing the user did not
//! approve and never expands `ANTHROPIC_*` variables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
    /// The file is larger than the limit ([`MAX_CONFIG_BYTES`] for `.mcp.json`).
    #[error("{}: more than the {size} bytes read", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// How many bytes were read before the limit stopped the read.
        size: u64,
    },
    /// The path is not a regular file (a FIFO, a device, a directory).
    #[error("{}: not a regular file", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
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
    mcp_servers: BTreeMap<String, serde_json::Value>,
}

/// One server entry as the file writes it, before `${VAR}` expansion: what the user approves
/// (see [`Approvals`](crate::Approvals)), so a changed command, argument, variable, URL or
/// header is a different entry that needs approving again. Unknown fields are left out.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerEntry {
    /// `type`: `stdio` (or absent) for a command, `http` for an endpoint.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The program of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The endpoint of an HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl ServerEntry {
    /// This entry as a stdio server running `command` with `args`.
    pub fn with_command<I, S>(mut self, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.command = Some(command.into());
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// This entry as an HTTP server at `url`.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.kind = Some("http".to_owned());
        self.url = Some(url.into());
        self
    }

    /// What the entry runs or reaches, in one line, showing everything an approval of it
    /// covers (values as written, before `${VAR}` expansion), for a question or a listing:
    ///
    /// - a command: its `env` as `NAME=value` words, then the command and its arguments, as a
    ///   shell writes them (`PATH=./bin:/usr/bin npx -y server`): an entry that changed only
    ///   its environment reads differently, and a `PATH`, `NODE_OPTIONS` or `LD_PRELOAD` it
    ///   sets is seen;
    /// - an endpoint (`http`, `sse`): the URL, then every header's name. A header's value may
    ///   hold a secret, so it is not shown, but the variables it expands are, since their
    ///   values are sent (`https://h/mcp with headers Authorization: <value hidden, expands
    ///   ${TOKEN}>`);
    /// - fields the transport does not use, after ` (unused: …)`.
    ///
    /// A word that is empty or holds a space, a quote, a backslash or a backtick (or an `=`,
    /// for a command or a variable's name) is single-quoted, so the words cannot be misread.
    /// Not escaped for a terminal.
    pub fn describe(&self) -> String {
        let remote = matches!(
            self.kind.as_deref(),
            Some("http" | "streamable-http" | "sse")
        ) || (self.command.is_none() && self.url.is_some());
        let env = || {
            self.env
                .iter()
                .map(|(name, value)| format!("{}={}", quoted(name, true), quoted(value, false)))
        };
        let command = || {
            let program = self.command.as_deref().map(|c| quoted(c, true));
            program
                .into_iter()
                .chain(self.args.iter().map(|a| quoted(a, false)))
        };
        let headers = || {
            self.headers
                .iter()
                .map(|(name, value)| format!("{}: {}", quoted(name, true), hidden(value)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (mut line, mut unused) = (String::new(), Vec::new());
        if remote {
            line.push_str(
                &self
                    .url
                    .as_deref()
                    .map(|u| quoted(u, false))
                    .unwrap_or_default(),
            );
            if !self.headers.is_empty() {
                line.push_str(&format!(" with headers {}", headers()));
            }
            let command: Vec<String> = command().collect();
            if !command.is_empty() {
                unused.push(format!("command {}", command.join(" ")));
            }
            if !self.env.is_empty() {
                unused.push(format!("env {}", env().collect::<Vec<_>>().join(" ")));
            }
        } else {
            line = env().chain(command()).collect::<Vec<_>>().join(" ");
            if let Some(url) = &self.url {
                unused.push(format!("url {}", quoted(url, false)));
            }
            if !self.headers.is_empty() {
                unused.push(format!("headers {}", headers()));
            }
        }
        if !unused.is_empty() {
            line.push_str(&format!(" (unused: {})", unused.join("; ")));
        }
        line
    }

    /// The server this entry configures, named `name` in errors (which name `path`), with
    /// `${VAR}` expanded through `env`.
    pub fn resolve(
        &self,
        name: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, ConfigError> {
        let expand = |value: &str| {
            expand(value, env).map_err(|variable| ConfigError::MissingVariable {
                path: path.to_owned(),
                server: name.to_owned(),
                variable,
            })
        };
        let invalid = |message: &str| ConfigError::Server {
            path: path.to_owned(),
            server: name.to_owned(),
            message: message.to_owned(),
        };
        let expand_map = |map: &BTreeMap<String, String>| {
            map.iter()
                .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                .collect::<Result<BTreeMap<_, _>, ConfigError>>()
        };
        match (self.kind.as_deref(), &self.command, &self.url) {
            (None | Some("stdio"), Some(command), _) => Ok(ServerConfig::Stdio {
                command: expand(command)?,
                args: self
                    .args
                    .iter()
                    .map(|a| expand(a))
                    .collect::<Result<_, _>>()?,
                env: expand_map(&self.env)?,
            }),
            (Some("http" | "streamable-http"), _, Some(url)) => Ok(ServerConfig::Http {
                url: expand(url)?,
                headers: expand_map(&self.headers)?,
            }),
            (Some("sse"), _, _) => Err(invalid(
                "the deprecated `sse` transport is not supported (use `http`)",
            )),
            (Some("http" | "streamable-http"), _, None) => {
                Err(invalid("an `http` server needs a `url`"))
            }
            (None | Some("stdio"), None, _) => Err(invalid("a stdio server needs a `command`")),
            (Some(other), _, _) => Err(invalid(&format!("unknown transport type `{other}`"))),
        }
    }
}

/// `word` as [`ServerEntry::describe`] shows it: single-quoted (a `'` in it written `'\''`)
/// when it is empty or holds whitespace, a quote, a backslash or a backtick, or, when it is
/// a `name` (a command, a variable or header name), an `=`.
fn quoted(word: &str, name: bool) -> String {
    let plain = !word.is_empty()
        && !word.chars().any(|c| {
            c.is_whitespace() || matches!(c, '\'' | '"' | '\\' | '`') || (name && c == '=')
        });
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A header's value as [`ServerEntry::describe`] shows it: hidden, naming the variables it
/// expands (as [`expand`] reads them).
fn hidden(value: &str) -> String {
    let names = std::cell::RefCell::new(Vec::<String>::new());
    let _ = expand(value, &|name| {
        let mut names = names.borrow_mut();
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
        Some(String::new())
    });
    let names = names.into_inner();
    if names.is_empty() {
        "<value hidden>".to_owned()
    } else {
        let names: Vec<String> = names.iter().map(|n| format!("${{{n}}}")).collect();
        format!("<value hidden, expands {}>", names.join(", "))
    }
}

impl McpConfig {
    /// Reads `path` (a regular file of at most [`MAX_CONFIG_BYTES`]), expanding variables
    /// from the process environment. Every entry must be valid: this is for a file the user
    /// named; a workspace's `.mcp.json` goes through [`WorkspaceServers`](crate::WorkspaceServers).
    pub fn load(path: &Path) -> Result<McpConfig, ConfigError> {
        let text = read_bounded(path, MAX_CONFIG_BYTES)?;
        McpConfig::parse(&text, path, &|name| std::env::var(name).ok())
    }

    /// Parses `text` (named `path` in errors), looking variables up with `env`; the first
    /// invalid entry is the error.
    pub fn parse(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpConfig, ConfigError> {
        let mut servers = BTreeMap::new();
        for (name, entry) in entries(text, path)? {
            let config = entry?.resolve(&name, path, env)?;
            servers.insert(name, config);
        }
        Ok(McpConfig { servers })
    }
}

/// One named entry of a configuration file, or why it has the wrong shape.
pub type NamedEntry = (String, Result<ServerEntry, ConfigError>);

/// The entries of a configuration file's text, each parsed on its own: one entry of the
/// wrong shape is its own error, not the whole file's.
pub fn entries(text: &str, path: &Path) -> Result<Vec<NamedEntry>, ConfigError> {
    let raw: RawFile = serde_json::from_str(text).map_err(|source| ConfigError::Parse {
        path: path.to_owned(),
        source,
    })?;
    Ok(raw
        .mcp_servers
        .into_iter()
        .map(|(name, value)| {
            let entry = ServerEntry::deserialize(value).map_err(|e| ConfigError::Server {
                path: path.to_owned(),
                server: name.clone(),
                message: e.to_string(),
            });
            (name, entry)
        })
        .collect())
}

/// Reads `path` as UTF-8 text if it is a regular file of at most `limit` bytes. A FIFO, a
/// device (`/dev/zero`, also through a symbolic link) or a directory is refused before it is
/// opened, and the read stops at `limit + 1` bytes whatever the file's size said, so nothing
/// a peer controls can make it block or grow.
pub fn read_bounded(path: &Path, limit: u64) -> Result<String, ConfigError> {
    use std::io::Read as _;
    let read = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    let not_regular = || ConfigError::NotRegular {
        path: path.to_owned(),
    };
    if !std::fs::metadata(path).map_err(read)?.is_file() {
        return Err(not_regular());
    }
    let file = std::fs::File::open(path).map_err(read)?;
    // The file opened may not be the one looked at (a rename in between): ask again.
    if !file.metadata().map_err(read)?.is_file() {
        return Err(not_regular());
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read)?;
    let size = bytes.len() as u64;
    if size > limit {
        return Err(ConfigError::TooLarge {
            path: path.to_owned(),
            size,
        });
    }
    String::from_utf8(bytes)
        .map_err(|e| read(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(json: serde_json::Value) -> ServerEntry {
        serde_json::from_value(json).expect("an entry")
    }

    #[test]
    fn a_command_is_described_with_the_environment_it_gets() {
        let fs = entry(serde_json::json!({"command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
            "env": {"PATH": "./bin:/usr/bin", "NODE_OPTIONS": "--require ./x.js"}}));
        assert_eq!(
            fs.describe(),
            "NODE_OPTIONS='--require ./x.js' PATH=./bin:/usr/bin \
             npx -y @modelcontextprotocol/server-filesystem ."
        );
        // An entry that changed only its environment reads differently.
        let mut more = fs.clone();
        more.env.insert("LD_PRELOAD".into(), "./evil.so".into());
        assert_ne!(more.describe(), fs.describe());
        assert!(more.describe().contains("LD_PRELOAD=./evil.so"));
        // Without an environment, as before.
        let plain = ServerEntry::default().with_command("run-a", ["--flag"]);
        assert_eq!(plain.describe(), "run-a --flag");
    }

    #[test]
    fn an_endpoint_shows_its_header_names_and_variables_not_their_values() {
        let remote = entry(serde_json::json!({"type": "http", "url": "https://h/mcp",
            "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Key": "sk-literal-secret",
                        "X-Both": "${A}-${B:-dflt}-${A}"}}));
        assert_eq!(
            remote.describe(),
            "https://h/mcp with headers Authorization: <value hidden, expands ${GITHUB_TOKEN}>, \
             X-Both: <value hidden, expands ${A}, ${B}>, X-Key: <value hidden>"
        );
        assert!(!remote.describe().contains("secret") && !remote.describe().contains("dflt"));
        // A header added later reads differently; so does an `sse` entry's.
        let mut more = remote.clone();
        more.headers.insert("X-New".into(), "1".into());
        assert_ne!(more.describe(), remote.describe());
        let sse = entry(serde_json::json!({"type": "sse", "url": "https://h/sse",
            "headers": {"X-Key": "v"}}));
        assert_eq!(
            sse.describe(),
            "https://h/sse with headers X-Key: <value hidden>"
        );
        assert_eq!(
            ServerEntry::default()
                .with_url("http://127.0.0.1:9/mcp")
                .describe(),
            "http://127.0.0.1:9/mcp"
        );
    }

    #[test]
    fn fields_the_transport_ignores_are_shown_as_unused() {
        let stdio = entry(serde_json::json!({"command": "srv", "url": "https://h",
            "headers": {"X-Key": "v"}}));
        assert_eq!(
            stdio.describe(),
            "srv (unused: url https://h; headers X-Key: <value hidden>)"
        );
        let http = entry(serde_json::json!({"type": "http", "url": "https://h",
            "command": "srv", "args": ["a"], "env": {"K": "v"}}));
        assert_eq!(
            http.describe(),
            "https://h (unused: command srv a; env K=v)"
        );
    }

    #[test]
    fn words_that_could_be_misread_are_quoted() {
        let tricky = entry(serde_json::json!({"command": "A=b",
            "args": ["two words", "", "it's", "--k=v", "${HOME}"],
            "env": {"X": "1 npx", "Y=Z": "v"}}));
        assert_eq!(
            tricky.describe(),
            "X='1 npx' 'Y=Z'=v 'A=b' 'two words' '' 'it'\\''s' --k=v ${HOME}"
        );
    }
}
