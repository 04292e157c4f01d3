//! One connected MCP server: the rmcp client session, its tools and instructions, and the
//! captured end of a child's stderr.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ClientConfig, Implementation, ProgressNotificationParam, ProgressToken};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt as _};
use serde_json::Value;
use threadline_query::ProgressSender;
use threadline_workspace::credentials::is_credential_variable;
use tokio::io::AsyncReadExt as _;

use crate::config::ServerConfig;
use crate::error::ConnectError;
use crate::tool::McpTool;

/// The most stderr kept from a child (its last bytes), for error lines and `mcp list`.
pub const MAX_STDERR_BYTES: usize = 16 * 1024;

/// How long a failed handshake waits for the child's stderr to end.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// How often a server connected to a session is checked for having left.
pub const LEAVE_POLL: Duration = Duration::from_millis(250);

/// The most tools taken from one server (a bound on a peer's list).
pub const MAX_TOOLS_PER_SERVER: usize = 2000;

/// The most bytes of tool names, descriptions and schemas kept from one server's listing:
/// paging stops once they are reached.
pub const MAX_TOOL_LIST_BYTES: usize = 16 * 1024 * 1024;

/// The most `tools/list` pages asked of one server (a cursor that never ends, with empty or
/// tiny pages, stops here).
pub const MAX_TOOL_PAGES: usize = 100;

/// The most bytes of instructions kept from one server.
pub const MAX_INSTRUCTIONS_BYTES: usize = 16 * 1024;

/// The most bytes of what the SDK reported kept in a one-line [`ConnectError`] (a handshake
/// or a listing that failed): it quotes the server's JSON-RPC error, whose `message` and
/// `data` may be as long as a line rmcp reads. A longer one is cut, marked `…`.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 512;

/// `error` as a [`ConnectError`]'s message: at most [`MAX_ERROR_MESSAGE_BYTES`].
fn error_message(error: &dyn std::fmt::Display) -> String {
    let mut message = error.to_string();
    crate::content::cut_line(&mut message, MAX_ERROR_MESSAGE_BYTES);
    message
}

/// Timeouts of the MCP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpOptions {
    /// How long a server has to start, answer `initialize` and list its tools.
    pub connect_timeout: Duration,
    /// How long one tool call may take.
    pub call_timeout: Duration,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            connect_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(300),
        }
    }
}

impl McpOptions {
    /// The same options with `connect_timeout`.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The same options with `call_timeout`.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }
}

pub(crate) type Progress = Arc<Mutex<HashMap<ProgressToken, ProgressSender>>>;

/// Receives the server's notifications: progress goes to the call that asked for it.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) progress: Progress,
}

impl ClientHandler for Handler {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let map = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = map.get(&params.progress_token) {
            let mut event = serde_json::json!({"progress": params.progress});
            if let Some(total) = params.total {
                event["total"] = total.into();
            }
            if let Some(message) = &params.message {
                event["message"] = message.clone().into();
            }
            sender.send(event);
        }
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("threadline", env!("CARGO_PKG_VERSION"));
        info
    }
}

/// The last [`MAX_STDERR_BYTES`] a child wrote to its stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(MAX_STDERR_BYTES);
        tail.drain(..excess);
    }

    pub(crate) fn text(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes: Vec<u8> = tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The last non-empty line (for a one-line error).
    pub(crate) fn last_line(&self) -> Option<String> {
        let text = self.text();
        let line = text.lines().rev().find(|l| !l.trim().is_empty())?.trim();
        let mut line = line.to_owned();
        crate::content::cut_line(&mut line, 200);
        Some(line)
    }
}

/// A tool as the server listed it (for `threadline mcp list`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The name the server gave it.
    pub server_name: String,
    /// The loop name, `mcp__<server>__<tool>`.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `destructiveHint` (absent counts as true, as the MCP specification says).
    pub destructive: bool,
}

pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) service: RunningService<RoleClient, Handler>,
    pub(crate) progress: Progress,
    pub(crate) stderr: StderrTail,
    pub(crate) options: McpOptions,
    pub(crate) pid: Option<u32>,
    /// Where the server's leaving is reported (see [`McpServer::connect_to`]), once, and
    /// the connection it reports.
    pub(crate) changes: Mutex<
        Option<(
            threadline_query::ToolChanges,
            threadline_query::ServerConnection,
        )>,
    >,
}

impl Shared {
    /// The server is gone: withdraws its tools from the session it was connected to (once).
    pub(crate) fn withdraw(&self) {
        let changes = self
            .changes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((changes, connection)) = changes {
            changes.server_left(connection);
        }
    }
}

/// A connected server.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    tools: Vec<ToolInfo>,
    instructions: Option<String>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.shared.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts (stdio) or reaches (HTTP) the server `name`, completes the handshake and lists
    /// its tools, all within `options.connect_timeout`.
    pub async fn connect(
        name: &str,
        config: &ServerConfig,
        options: McpOptions,
    ) -> Result<McpServer, ConnectError> {
        let stderr = StderrTail::default();
        match tokio::time::timeout(
            options.connect_timeout,
            connect_inner(name, config, options, stderr.clone()),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(ConnectError::Timeout {
                server: name.to_owned(),
                after: options.connect_timeout,
                stderr: stderr.last_line(),
            }),
        }
    }

    /// The server's name in the configuration.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// What the server listed.
    pub fn tool_infos(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// The server's `instructions` (from `initialize`), if any.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The end of the child's stderr (empty for HTTP servers).
    pub fn stderr(&self) -> String {
        self.shared.stderr.text()
    }

    /// The child's process id (stdio servers).
    pub fn pid(&self) -> Option<u32> {
        self.shared.pid
    }

    /// Whether the session has ended (the server exited or the connection closed).
    pub fn is_closed(&self) -> bool {
        self.shared.service.is_closed() || self.shared.service.peer().is_transport_closed()
    }

    /// Offers the server's tools to a running session through `changes` (`tool_addition` on a
    /// model with mid-conversation tool changes, else a changed `tools`), and withdraws them
    /// the same way when the server leaves: at once when a call finds the connection closed,
    /// otherwise within [`LEAVE_POLL`] of the exit (a task that ends when the server is
    /// dropped). A server connected again under the same name before that report keeps its
    /// tools: the report withdraws only this connection's. Needs a Tokio runtime.
    pub fn connect_to(&self, changes: &threadline_query::ToolChanges) {
        let connection = changes.connect_server(self.name(), self.tools());
        *self
            .shared
            .changes
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((changes.clone(), connection));
        let weak = Arc::downgrade(&self.shared);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                loop {
                    tokio::time::sleep(LEAVE_POLL).await;
                    let Some(shared) = weak.upgrade() else {
                        return;
                    };
                    if shared.service.is_closed() || shared.service.peer().is_transport_closed() {
                        shared.withdraw();
                        return;
                    }
                }
            });
        }
    }

    /// The server's tools as loop tools.
    pub fn tools(&self) -> Vec<Arc<dyn threadline_query::Tool>> {
        self.tools
            .iter()
            .map(|info| {
                Arc::new(McpTool::new(info.clone(), Arc::clone(&self.shared)))
                    as Arc<dyn threadline_query::Tool>
            })
            .collect()
    }
}

/// A server's tools, page by page, stopping at [`MAX_TOOLS_PER_SERVER`] tools,
/// [`MAX_TOOL_LIST_BYTES`] bytes or [`MAX_TOOL_PAGES`] pages: what a server sends past those
/// is never asked for, so a cursor that never ends costs a bounded amount.
async fn list_tools_bounded(
    peer: &rmcp::Peer<rmcp::RoleClient>,
) -> Result<Vec<rmcp::model::Tool>, rmcp::ServiceError> {
    let mut tools = Vec::new();
    let mut bytes = 0usize;
    let mut cursor = None;
    for _ in 0..MAX_TOOL_PAGES {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await?;
        for tool in page.tools {
            bytes = bytes
                .saturating_add(tool.name.len())
                .saturating_add(tool.description.as_deref().map_or(0, str::len))
                .saturating_add(serde_json::to_vec(&*tool.input_schema).map_or(0, |v| v.len()));
            if tools.len() >= MAX_TOOLS_PER_SERVER || bytes > MAX_TOOL_LIST_BYTES {
                return Ok(tools);
            }
            tools.push(tool);
        }
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() >= MAX_TOOLS_PER_SERVER {
            break;
        }
    }
    Ok(tools)
}

async fn connect_inner(
    name: &str,
    config: &ServerConfig,
    options: McpOptions,
    stderr: StderrTail,
) -> Result<McpServer, ConnectError> {
    let progress: Progress = Arc::default();
    let handler = Handler {
        progress: Arc::clone(&progress),
    };
    let handshake = |source: Box<dyn std::error::Error + Send + Sync>, stderr: &StderrTail| {
        ConnectError::Handshake {
            server: name.to_owned(),
            message: error_message(&source),
            stderr: stderr.last_line(),
        }
    };
    let mut pid = None;
    let service = match config {
        ServerConfig::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).kill_on_drop(true);
            // No model credential reaches a server (threadline_workspace::credentials).
            for (key, _) in std::env::vars_os() {
                if is_credential_variable(&key.to_string_lossy()) {
                    cmd.env_remove(&key);
                }
            }
            for (key, value) in env {
                if !is_credential_variable(key) {
                    cmd.env(key, value);
                }
            }
            let (transport, child_stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|source| ConnectError::Spawn {
                    server: name.to_owned(),
                    command: command.clone(),
                    source,
                })?;
            pid = transport.id();
            let mut reader = None;
            if let Some(mut pipe) = child_stderr {
                let tail = stderr.clone();
                reader = Some(tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = pipe.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        tail.push(&buf[..n]);
                    }
                }));
            }
            match handler.serve(transport).await {
                Ok(service) => service,
                Err(error) => {
                    // A child that exited: its last words are on their way; wait for them
                    // (bounded) so the one line can say them.
                    if let Some(reader) = reader {
                        let _ = tokio::time::timeout(STDERR_GRACE, reader).await;
                    }
                    return Err(handshake(Box::new(error), &stderr));
                }
            }
        }
        ServerConfig::Http { url, headers } => {
            // reqwest's rustls has no provider of its own here: ring, as threadline-client.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut custom = HashMap::new();
            for (key, value) in headers {
                let bad = |message: String| ConnectError::Config {
                    server: name.to_owned(),
                    message,
                };
                let key = http::HeaderName::try_from(key.as_str())
                    .map_err(|e| bad(format!("header `{key}`: {e}")))?;
                let value = http::HeaderValue::try_from(value.as_str())
                    .map_err(|e| bad(format!("header `{key}`: {e}")))?;
                custom.insert(key, value);
            }
            let mut transport_config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                );
            transport_config.custom_headers = custom;
            let transport = StreamableHttpClientTransport::from_config(transport_config);
            handler
                .serve(transport)
                .await
                .map_err(|e| handshake(Box::new(e), &stderr))?
        }
    };
    let instructions = service.peer_info().and_then(|info| {
        info.instructions.clone().map(|mut text| {
            crate::content::cut(&mut text, MAX_INSTRUCTIONS_BYTES);
            text
        })
    });
    let listed =
        list_tools_bounded(service.peer())
            .await
            .map_err(|source| ConnectError::ListTools {
                server: name.to_owned(),
                message: error_message(&source),
                stderr: stderr.last_line(),
            })?;
    let mut seen = BTreeMap::new();
    let mut tools = Vec::new();
    for tool in listed {
        let loop_name = crate::name::tool_name(name, &tool.name);
        if seen.insert(loop_name.clone(), ()).is_some() {
            continue;
        }
        let annotations = tool.annotations.as_ref();
        let read_only = annotations.and_then(|a| a.read_only_hint) == Some(true);
        let destructive = annotations.and_then(|a| a.destructive_hint).unwrap_or(true);
        tools.push(ToolInfo {
            server_name: tool.name.to_string(),
            name: loop_name,
            description: tool.description.as_deref().unwrap_or("").to_owned(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            read_only,
            destructive,
        });
    }
    Ok(McpServer {
        shared: Arc::new(Shared {
            name: name.to_owned(),
            service,
            progress,
            stderr,
            options,
            pid,
            changes: Mutex::new(None),
        }),
        tools,
        instructions,
    })
}
