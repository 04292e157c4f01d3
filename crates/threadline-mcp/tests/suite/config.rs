//! `.mcp.json` parsing: Claude Code's format, expansion, typed errors; tool names.

use std::path::Path;

use threadline_mcp::{ConfigError, McpConfig, ServerConfig, tool_name};

fn env(name: &str) -> Option<String> {
    match name {
        "HOME_DIR" => Some("/home/u".to_owned()),
        "TOKEN" => Some("t0k".to_owned()),
        _ => None,
    }
}

#[test]
fn claude_code_format_with_expansion_and_unknown_fields() {
    let text = r#"{"mcpServers": {
        "a": {"type": "stdio", "command": "${HOME_DIR}/bin/srv", "args": ["--x", "${MISSING:-dflt}"],
              "env": {"K": "${TOKEN}"}, "alwaysAllow": ["x"]},
        "b": {"type": "http", "url": "https://h/${MISSING:-mcp}", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }, "other": 1}"#;
    let config = McpConfig::parse(text, Path::new("x/.mcp.json"), &env).expect("parses");
    assert_eq!(
        config.servers["a"],
        ServerConfig::Stdio {
            command: "/home/u/bin/srv".into(),
            args: vec!["--x".into(), "dflt".into()],
            env: [("K".to_owned(), "t0k".to_owned())].into(),
        }
    );
    assert_eq!(
        config.servers["b"],
        ServerConfig::Http {
            url: "https://h/mcp".into(),
            headers: [("Authorization".to_owned(), "Bearer t0k".to_owned())].into(),
        }
    );
}

#[test]
fn errors_name_the_file_and_the_server() {
    let path = Path::new("w/.mcp.json");
    let missing = McpConfig::parse(
        r#"{"mcpServers": {"s": {"command": "${NOPE}"}}}"#,
        path,
        &env,
    )
    .expect_err("unset");
    assert!(matches!(missing, ConfigError::MissingVariable { .. }));
    assert_eq!(
        missing.to_string(),
        "w/.mcp.json: server `s`: environment variable `NOPE` is not set and has no default"
    );
    let no_url = McpConfig::parse(r#"{"mcpServers": {"h": {"type": "http"}}}"#, path, &env)
        .expect_err("no url");
    assert_eq!(
        no_url.to_string(),
        "w/.mcp.json: server `h`: an `http` server needs a `url`"
    );
    let bad = McpConfig::parse("[1]", path, &env).expect_err("not an object");
    assert!(
        bad.to_string()
            .starts_with("w/.mcp.json: not an MCP configuration: "),
        "{bad}"
    );
}

#[test]
fn a_missing_workspace_file_is_an_empty_config() {
    let dir = std::env::temp_dir().join(format!("threadline-mcp-none-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let found =
        threadline_mcp::WorkspaceServers::load(&dir, &threadline_mcp::Approvals::default(), None);
    assert_eq!(found.approved, McpConfig::default());
    assert!(found.pending.is_empty() && found.warnings.is_empty());
}

#[test]
fn tool_names_follow_the_api_rule() {
    assert_eq!(
        tool_name("everything", "get-tiny-image"),
        "mcp__everything__get-tiny-image"
    );
    assert_eq!(tool_name("my.srv", "a b/c"), "mcp__my_srv__a_b_c");
    let long = tool_name("s", &"x".repeat(100));
    assert_eq!(long.len(), 64);
    assert!(threadline_validate::is_valid_tool_name(&long, 64));
}
