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

/// A `threadline mock` started with `args` and `--addr 127.0.0.1:0`, its first stdout line
/// read while it runs; killed when dropped.
struct Spawned {
    child: std::process::Child,
    first_line: String,
}

impl Spawned {
    fn start(args: &[&std::ffi::OsStr]) -> Spawned {
        use std::io::BufRead as _;
        let mut child = command()
            .args(["mock", "--addr", "127.0.0.1:0"])
            .args(args)
            .current_dir(common::repo())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the mock starts");
        let mut first_line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut first_line)
            .expect("the mock prints its address");
        Spawned { child, first_line }
    }

    /// `127.0.0.1:PORT`, checked to be the documented first line with a real port.
    fn addr(&self) -> String {
        let line = self.first_line.strip_suffix('\n').expect("a whole line");
        let addr = line
            .strip_prefix("listening on http://127.0.0.1:")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
        let port: u16 = addr
            .parse()
            .unwrap_or_else(|_| panic!("not a port: {line:?}"));
        assert_ne!(port, 0, "the bound port, not the one asked for");
        format!("127.0.0.1:{port}")
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mock_by_turn_logs_each_request_for_another_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = dir.path().join("turns.yaml");
    std::fs::write(
        &scenario,
        r#"
answer_by: turn
steps:
  - {kind: message, content: [{type: text, text: "first answer"}]}
  - {kind: message, content: [{type: text, text: "second answer"}]}
"#,
    )
    .expect("written");
    let log = dir.path().join("requests.jsonl");
    let mock = Spawned::start(&[
        "--scenario".as_ref(),
        scenario.as_os_str(),
        "--record-log".as_ref(),
        log.as_os_str(),
    ]);
    let addr = mock.addr();

    let second = r#"{"model":"claude-sonnet-4-6","max_tokens":64,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"first answer"},{"role":"user","content":"More"}]}"#;
    // The second step first, then twice the first (each on its own connection).
    for (body, expected) in [
        (second, "second answer"),
        (REQUEST, "first answer"),
        (REQUEST, "first answer"),
    ] {
        let (status, answer) = post(&addr, "/v1/messages", body, true);
        assert!(status.contains("200"), "{status}");
        assert!(answer.contains(expected), "{answer}");
    }
    let text = std::fs::read_to_string(&log).expect("the log");
    // It holds the request bodies: created for its owner only, like a transcript.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&log)
            .expect("the log")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    let steps: Vec<&serde_json::Value> = lines.iter().map(|l| &l["step"]).collect();
    assert_eq!(steps, [1, 0, 0]);
    assert_eq!(lines[1]["body"], REQUEST);
    assert_eq!(lines[1]["body_sha256"], lines[2]["body_sha256"]);
    assert_ne!(lines[0]["body_sha256"], lines[1]["body_sha256"]);
    assert_eq!(
        lines[1]["body_sha256"].as_str().map(str::len),
        Some(64),
        "{}",
        lines[1]
    );
    for (seq, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], seq);
        assert_eq!(line["answer_by"], "turn");
        assert!(line["usage"]["input_tokens"].as_u64().is_some(), "{line}");
    }
}

#[test]
fn mock_with_a_log_it_cannot_open_fails_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("no-such-dir").join("log.jsonl");
    let output = command()
        .args(["mock", "--addr", "127.0.0.1:0", "--record-log"])
        .arg(&log)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot open"), "{stderr}");
    assert!(stderr.contains("log.jsonl"), "{stderr}");
}

#[test]
fn mock_serves_the_models_of_a_models_api_file_and_refuses_a_broken_one() {
    let scenario = temp_file(
        "scenario-models.yaml",
        "steps:\n  - kind: message\n    content: [{type: text, text: hello}]\n",
    );
    // What `GET /v1/models` answers, for a model this build does not know.
    let models = temp_file(
        "models.json",
        r#"{"data": [{"type": "model", "id": "claude-next-6", "display_name": "Claude Next 6",
            "created_at": "2026-11-20T00:00:00Z", "max_input_tokens": 2000000, "max_tokens": 256000,
            "capabilities": {"thinking": {"supported": true, "types": {"adaptive": {"supported": true}}}}}],
           "has_more": false}"#,
    );
    let next = REQUEST.replace("claude-sonnet-4-6", "claude-next-6");
    let plain = Mock::start(&scenario);
    let (status, _) = post(plain.addr(), "/v1/messages", &next, true);
    assert!(status.contains("404"), "without the file: {status}");

    let mock = Mock::start_with(&scenario, &["--models".as_ref(), models.as_os_str()]);
    let (status, body) = post(mock.addr(), "/v1/messages", &next, true);
    assert!(status.contains("200"), "{status} {body}");
    // The API's limits apply: 256,000 output tokens, not the default's 8,192.
    let big = next.replace(r#""max_tokens":64"#, r#""max_tokens":200000"#);
    let (status, body) = post(mock.addr(), "/v1/messages", &big, true);
    assert!(status.contains("200"), "{status} {body}");
    let too_big = next.replace(r#""max_tokens":64"#, r#""max_tokens":300000"#);
    let (status, body) = post(mock.addr(), "/v1/messages", &too_big, true);
    assert!(status.contains("400"), "{status} {body}");
    // The built-in models are still served.
    let (status, _) = post(mock.addr(), "/v1/messages", REQUEST, true);
    assert!(status.contains("200"), "{status}");

    let broken = temp_file("models-broken.json", r#"{"data": [{"type": "model"}]}"#);
    let output = command()
        .args(["mock", "--addr", "127.0.0.1:0", "--scenario"])
        .arg(&scenario)
        .arg("--models")
        .arg(&broken)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("models-broken.json"), "{stderr}");
}
