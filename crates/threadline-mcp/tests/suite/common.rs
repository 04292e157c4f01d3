//! Where the installed servers are, and how to start them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::Value;
use threadline_mcp::{McpOptions, McpServer, ServerConfig};
use threadline_query::{Tool, ToolContext, ToolEvent, ToolOutput};

pub(crate) const INSTALL: &str = "cargo xtask mcp-servers";

fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-servers")
}

fn required(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: install the test servers with `{INSTALL}`",
        path.display()
    );
    path
}

/// `dist/index.js` of the pinned server-everything.
pub(crate) fn everything_js() -> PathBuf {
    required(
        servers_dir()
            .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
}

/// server-everything over stdio.
pub(crate) fn everything_stdio() -> ServerConfig {
    stdio(
        "node",
        [everything_js().display().to_string(), "stdio".into()],
        [],
    )
}

/// The Python fixture server with `tools` generated tools.
pub(crate) fn python_server(tools: usize) -> ServerConfig {
    let python = required(servers_dir().join("venv/bin/python"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fastmcp_server.py");
    stdio(
        &python.display().to_string(),
        [
            script.display().to_string(),
            "--tools".into(),
            tools.to_string(),
        ],
        [],
    )
}

pub(crate) fn stdio<const N: usize, const M: usize>(
    command: &str,
    args: [String; N],
    env: [(&str, &str); M],
) -> ServerConfig {
    let text = serde_json::json!({"mcpServers": {"s": {
        "command": command,
        "args": args.to_vec(),
        "env": env.iter().map(|(k, v)| ((*k).to_owned(), Value::from(*v))).collect::<serde_json::Map<_, _>>(),
    }}})
    .to_string();
    let mut config =
        threadline_mcp::McpConfig::parse(&text, "t.json".as_ref(), &|_| None).expect("a config");
    config.servers.remove("s").expect("the server")
}

pub(crate) fn http(url: String) -> ServerConfig {
    let text = serde_json::json!({"mcpServers": {"s": {"type": "http", "url": url}}}).to_string();
    let mut config =
        threadline_mcp::McpConfig::parse(&text, "t.json".as_ref(), &|_| None).expect("a config");
    config.servers.remove("s").expect("the server")
}

pub(crate) fn options() -> McpOptions {
    McpOptions::default()
        .with_connect_timeout(Duration::from_secs(20))
        .with_call_timeout(Duration::from_secs(20))
}

pub(crate) async fn connect(name: &str, config: &ServerConfig) -> McpServer {
    McpServer::connect(name, config, options())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn tool(server: &McpServer, name: &str) -> std::sync::Arc<dyn Tool> {
    server
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Calls `tool` and collects its events (bounded in time).
pub(crate) async fn call(tool: &dyn Tool, input: Value) -> (Vec<Value>, ToolOutput) {
    call_with(tool, input, ToolContext::new("toolu_test"), |_| {}).await
}

pub(crate) async fn call_with(
    tool: &dyn Tool,
    input: Value,
    ctx: ToolContext,
    mut on_progress: impl FnMut(&Value),
) -> (Vec<Value>, ToolOutput) {
    let mut stream = tool.call(input, ctx);
    let mut progress = Vec::new();
    let run = async {
        while let Some(event) = stream.next().await {
            match event {
                ToolEvent::Progress(p) => {
                    on_progress(&p);
                    progress.push(p);
                }
                ToolEvent::Result(output) => return output,
                _ => {}
            }
        }
        panic!("the stream ended without a result")
    };
    let output = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the call ends in time");
    (progress, output)
}

/// The text of a one-text result.
pub(crate) fn text(output: &ToolOutput) -> &str {
    match &output.content {
        threadline_wire::Content::Text(text) => text,
        other => panic!("not one text: {other:?}"),
    }
}

/// A child started by a test (server-everything in HTTP mode), killed when dropped.
pub(crate) struct HttpServer {
    _child: tokio::process::Child,
    pub(crate) url: String,
}

/// Starts server-everything's streamable-HTTP mode on a free port and waits until it listens.
pub(crate) async fn everything_http() -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = tokio::process::Command::new("node")
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "server-everything did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    HttpServer {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

#[allow(dead_code)]
pub(crate) fn no_env() -> BTreeMap<String, String> {
    BTreeMap::new()
}
