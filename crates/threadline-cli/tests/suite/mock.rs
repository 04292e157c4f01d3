//! `threadline mock`: the mock API as a process, driven over plain HTTP/1.1.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::{Mock, command, temp_file};

/// POSTs `body` to `path` with the usual headers; returns the status line and the body.
fn post(addr: &str, path: &str, body: &str, key: bool) -> (String, String) {
    let mut stream = TcpStream::connect(addr).expect("the mock accepts");
    let key_header = if key { "x-api-key: test-key\r\n" } else { "" };
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\n{key_header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("request sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

const REQUEST: &str =
    r#"{"model":"claude-sonnet-4-6","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}"#;

#[test]
fn mock_serves_the_scenario_and_checks_requests() {
    let scenario = temp_file(
        "scenario.yaml",
        r#"
steps:
  - kind: message
    content: [{type: text, text: "Scripted hello"}]
  - {kind: error, status: 529, message: Overloaded}
  - kind: fixture
    path: fixtures/canonical/anthropics__anthropic-sdk-python/tool_use_response.json
"#,
    );
    let mock = Mock::start(&scenario);

    let (status, body) = post(mock.addr(), "/v1/messages", REQUEST, true);
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("Scripted hello"), "{body}");

    let (status, body) = post(mock.addr(), "/v1/messages", REQUEST, true);
    assert!(status.contains("529"), "{status}");
    assert!(body.contains(r#""type":"overloaded_error""#), "{body}");

    let streamed = REQUEST.replace(r#""max_tokens":64"#, r#""max_tokens":64,"stream":true"#);
    let (status, body) = post(mock.addr(), "/v1/messages", &streamed, true);
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("event: message_stop"), "{body}");

    let (status, body) = post(mock.addr(), "/v1/messages", REQUEST, false);
    assert!(status.contains("401"), "{status}");
    assert!(body.contains("x-api-key header is required"), "{body}");

    let bad = r#"{"model":"claude-sonnet-4-6","messages":[{"role":"user","content":"Hi"}]}"#;
    let (status, body) = post(mock.addr(), "/v1/messages", bad, true);
    assert!(status.contains("400"), "{status}");
    assert!(body.contains("max_tokens: Field required"), "{body}");

    let unknown = REQUEST.replace("claude-sonnet-4-6", "claude-nonexistent");
    let (status, body) = post(mock.addr(), "/v1/messages", &unknown, true);
    assert!(status.contains("404"), "{status}");
    assert!(body.contains("model: claude-nonexistent"), "{body}");
}

#[test]
fn mock_with_a_broken_scenario_fails_in_one_line() {
    let scenario = temp_file("broken.yaml", "steps: [{kind: nonsense}]\n");
    let output = command()
        .args(["mock", "--addr", "127.0.0.1:0", "--scenario"])
        .arg(&scenario)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("threadline: invalid scenario"),
        "{stderr}"
    );
}
