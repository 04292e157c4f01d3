//! threadline-mcp against real MCP servers we did not write: `@modelcontextprotocol/server-everything`
//! (npm; stdio and streamable HTTP) and a server on the official Python SDK (FastMCP-style,
//! `tests/fixtures/fastmcp_server.py`), plus loop scenarios over loopback HTTP with the mock
//! model. The servers are installed pinned by `cargo xtask mcp-servers` (CI runs it before
//! the tests); a test fails naming that command when they are missing.

#[path = "suite/common.rs"]
mod common;
#[path = "suite/config.rs"]
mod config;
#[path = "suite/everything.rs"]
mod everything;
#[path = "suite/hostile.rs"]
mod hostile;
#[path = "suite/loopback.rs"]
mod loopback;
#[path = "suite/python.rs"]
mod python;
