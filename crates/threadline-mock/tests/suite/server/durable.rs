//! What a durable-sessions end-to-end test needs of the mock: answers chosen by a
//! request's position in its conversation (`answer_by: turn`), so that a request re-sent by
//! another worker after a crash gets the same answer; a request log another process can read;
//! a prompt cache shared by every connection; slow streams from a scenario file.

use serde_json::{Value, json};
use threadline_mock::{AnswerBy, MockConfig, MockServer, Route, Scenario, Step};

use crate::server::http::{Answer, post};

/// A conversation opened by `opening`, after `answers` assistant answers (each followed by
/// a user turn), streamed or not.
fn conversation(opening: &str, answers: &[&str], stream: bool) -> Value {
    let mut messages = vec![json!({"role": "user", "content": opening})];
    for (n, answer) in answers.iter().enumerate() {
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": answer}]}));
        messages.push(json!({"role": "user", "content": format!("and then {n}?")}));
    }
    json!({
        "model": "claude-sonnet-4-6", "max_tokens": 64, "stream": stream,
        "messages": messages,
    })
}

async fn send(server: &MockServer, body: &Value) -> Answer {
    let bytes = serde_json::to_vec(body).expect("JSON serializes");
    post(server.addr(), &bytes).await.expect("an answer")
}

/// The text of a non-streamed answer.
async fn text_of(server: &MockServer, body: &Value) -> String {
    let answer = send(server, body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let message: Value = serde_json::from_str(&answer.body).expect("JSON");
    message["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {message}"))
        .to_owned()
}

fn texts(prefix: &str, n: usize) -> Vec<Step> {
    (0..n)
        .map(|i| Step::text(format!("{prefix} {i}")))
        .collect()
}

#[tokio::test]
async fn by_turn_the_step_is_the_conversations_position_whatever_the_order() {
    let server = MockServer::start(Scenario::new(texts("answer", 3)).answered_by(AnswerBy::Turn))
        .await
        .expect("listens");
    // Out of order, and each one twice: a re-sent request gets its step again.
    for answers in [&["a", "b"][..], &[], &["a"], &["a", "b"], &[]] {
        let expected = format!("answer {}", answers.len());
        assert_eq!(
            text_of(&server, &conversation("Hi", answers, false)).await,
            expected
        );
    }
    // Past the end: the "no more answers" text, as in order.
    assert_eq!(
        text_of(&server, &conversation("Hi", &["a", "b", "c"], false)).await,
        "(the mock's scenario has no more answers)"
    );
}

#[tokio::test]
async fn by_order_a_repeated_request_still_takes_the_next_step() {
    let server = MockServer::start(Scenario::new(texts("answer", 2)))
        .await
        .expect("listens");
    let request = conversation("Hi", &[], false);
    assert_eq!(text_of(&server, &request).await, "answer 0");
    assert_eq!(text_of(&server, &request).await, "answer 1");
}

#[tokio::test]
async fn a_request_sent_twice_by_turn_gets_the_same_bytes_ids_included() {
    let scenario = Scenario::new([
        Step::tool_use("slow_tool", json!({"seconds": 1})),
        Step::text("done"),
    ])
    .answered_by(AnswerBy::Turn);
    let server = MockServer::start(scenario).await.expect("listens");
    for stream in [false, true] {
        let request = conversation("Run the slow tool", &[], stream);
        let first = send(&server, &request).await;
        // Another answer in between, as another session's would be.
        let _ = send(&server, &conversation("Something else", &[], stream)).await;
        let again = send(&server, &request).await;
        assert_eq!(first.status, 200);
        assert_eq!(first.body, again.body, "stream: {stream}");
        assert!(
            first.body.contains(r#""name":"slow_tool""#),
            "{}",
            first.body
        );
        assert!(first.body.contains(r#""id":"toolu_mock"#), "{}", first.body);
    }
    // Another conversation at the same step gets other ids.
    let one = send(&server, &conversation("Run the slow tool", &[], false)).await;
    let other = send(&server, &conversation("Something else", &[], false)).await;
    let id = |a: &Answer| {
        let v: Value = serde_json::from_str(&a.body).expect("JSON");
        v["content"][0]["id"].as_str().expect("an id").to_owned()
    };
    assert_ne!(id(&one), id(&other));
    assert_eq!(id(&one).len(), "toolu_mock".len() + 20);
}

#[tokio::test]
async fn parallel_sessions_on_routes_each_get_their_script_by_turn() {
    let scenario = Scenario::new(texts("main", 1))
        .with_route(Route::new("[session-a]", texts("a", 3)).answered_by(AnswerBy::Turn))
        .with_route(Route::new("[session-b]", texts("b", 3)).answered_by(AnswerBy::Turn));
    let server = MockServer::start(scenario).await.expect("listens");
    let a = |answers: &[&str]| conversation("[session-a] go", answers, false);
    let b = |answers: &[&str]| conversation("[session-b] go", answers, false);
    assert_eq!(text_of(&server, &b(&["x"])).await, "b 1");
    assert_eq!(text_of(&server, &a(&[])).await, "a 0");
    assert_eq!(text_of(&server, &b(&[])).await, "b 0");
    assert_eq!(text_of(&server, &a(&["x", "y"])).await, "a 2");
    assert_eq!(text_of(&server, &a(&["x", "y"])).await, "a 2");
    assert_eq!(text_of(&server, &b(&["x"])).await, "b 1");
    // The main list still answers in order.
    assert_eq!(
        text_of(&server, &conversation("other", &["x"], false)).await,
        "main 0"
    );
}

#[tokio::test]
async fn a_scenario_file_says_turn_for_itself_or_a_route_and_a_route_may_keep_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("scenario.yaml");
    std::fs::write(
        &path,
        r#"
answer_by: turn
steps:
  - {kind: message, content: [{type: text, text: "main 0"}]}
  - {kind: message, content: [{type: text, text: "main 1"}]}
routes:
  - marker: "[ordered]"
    answer_by: order
    steps:
      - {kind: message, content: [{type: text, text: "ordered 0"}]}
      - {kind: message, content: [{type: text, text: "ordered 1"}]}
  - marker: "[inherits]"
    steps:
      - {kind: message, content: [{type: text, text: "inherits 0"}]}
      - {kind: message, content: [{type: text, text: "inherits 1"}]}
"#,
    )
    .expect("written");
    let scenario = Scenario::from_file(&path).expect("a valid scenario");
    assert_eq!(scenario.answer_by, AnswerBy::Turn);
    assert_eq!(scenario.routes[0].answer_by, Some(AnswerBy::Order));
    assert_eq!(scenario.routes[1].answer_by, None);
    // It writes back as it was read.
    let written = serde_json::to_value(&scenario).expect("serializes");
    assert_eq!(written["answer_by"], "turn");
    assert_eq!(written["routes"][0]["answer_by"], "order");
    assert_eq!(written["routes"][1].get("answer_by"), None);

    let server = MockServer::start(scenario).await.expect("listens");
    let cases = [
        ("main", &["x"][..], "main 1"),
        ("main", &[], "main 0"),
        ("[inherits]", &["x"], "inherits 1"),
        ("[inherits]", &["x"], "inherits 1"),
        ("[ordered]", &["x"], "ordered 0"),
        ("[ordered]", &["x"], "ordered 1"),
    ];
    for (opening, answers, expected) in cases {
        assert_eq!(
            text_of(&server, &conversation(opening, answers, false)).await,
            expected,
            "{opening} after {answers:?}"
        );
    }
    // An unknown mode is refused with the file's line.
    std::fs::write(&path, "answer_by: arrival\nsteps: []\n").expect("written");
    let error = Scenario::from_file(&path).expect_err("refused").to_string();
    assert!(error.contains("unknown variant `arrival`"), "{error}");
}

/// The JSON lines of the log at `path`.
fn log_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the log exists")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A system prompt long enough to be cached, with a cache marker.
fn cached_conversation(answers: &[&str]) -> Value {
    let mut request = conversation("[cached] read it", answers, true);
    request["system"] = json!([{
        "type": "text",
        "text": "The whole repository, read once. ".repeat(2_000),
        "cache_control": {"type": "ephemeral"},
    }]);
    request
}

#[tokio::test]
async fn the_log_has_a_line_per_request_as_it_is_answered_with_body_hash_and_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.jsonl");
    let scenario = Scenario::new(texts("answer", 3))
        .answered_by(AnswerBy::Turn)
        .with_route(Route::new("[reset]", [Step::Reset]));
    let config = MockConfig::new(scenario).with_record_log(&log);
    let server = MockServer::start_with(config).await.expect("listens");

    // Two connections (two clients, as two workers), the same byte-identical request.
    let request = serde_json::to_vec(&cached_conversation(&[])).expect("serializes");
    let first = post(server.addr(), &request).await.expect("an answer");
    // The line is written before the answer's first byte: it is there already.
    assert_eq!(log_lines(&log).len(), 1);
    let second = post(server.addr(), &request).await.expect("an answer");
    assert_eq!((first.status, second.status), (200, 200));
    let count = br#"{"model":"claude-sonnet-4-6","messages":[{"role":"user","content":"Hi"}]}"#;
    let counted = {
        let mut stream = tokio::net::TcpStream::connect(server.addr())
            .await
            .expect("connects");
        let head = crate::server::http::head(Some(count.len()), true)
            .replace("/v1/messages ", "/v1/messages/count_tokens ");
        tokio::io::AsyncWriteExt::write_all(&mut stream, head.as_bytes())
            .await
            .expect("sent");
        tokio::io::AsyncWriteExt::write_all(&mut stream, count)
            .await
            .expect("sent");
        crate::server::http::read_answer(&mut stream)
            .await
            .expect("an answer")
    };
    assert_eq!(counted.status, 200, "{}", counted.body);
    let invalid = br#"{"model":"claude-sonnet-4-6","messages":[]}"#;
    let rejected = post(server.addr(), invalid).await.expect("an answer");
    assert_eq!(rejected.status, 400);
    let reset = serde_json::to_vec(&conversation("[reset] now", &[], false)).expect("JSON");
    assert!(
        post(server.addr(), &reset).await.is_err(),
        "the connection is cut"
    );

    let lines = log_lines(&log);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    let seqs: Vec<&Value> = lines.iter().map(|l| &l["seq"]).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);

    let sha = |bytes: &[u8]| -> String {
        use sha2::Digest as _;
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    for line in &lines[..2] {
        assert_eq!(line["path"], "/v1/messages");
        assert_eq!(line["status"], 200);
        assert_eq!(line["route"], Value::Null);
        assert_eq!(line["step"], 0);
        assert_eq!(line["answer_by"], "turn");
        assert_eq!(line["answer"], "message");
        assert_eq!(line["body_bytes"], request.len());
        assert_eq!(line["body_sha256"], sha(&request));
        assert_eq!(line["body"].as_str().map(str::as_bytes), Some(&request[..]));
    }
    // The second client's identical prefix is read from the cache the first one wrote.
    let (one, two) = (&lines[0]["usage"], &lines[1]["usage"]);
    let written = one["cache_creation_input_tokens"]
        .as_u64()
        .expect("a count");
    assert!(written > 10_000, "{one}");
    assert_eq!(one["cache_read_input_tokens"], 0);
    assert_eq!(two["cache_read_input_tokens"], written, "{two}");
    assert_eq!(two["cache_creation_input_tokens"], 0, "{two}");
    assert_eq!(one["input_tokens"], two["input_tokens"]);

    assert_eq!(lines[2]["path"], "/v1/messages/count_tokens");
    assert_eq!(lines[2]["answer"], Value::Null);
    assert!(
        lines[2]["usage"]["input_tokens"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert_eq!(lines[2]["body_sha256"], sha(count));

    assert_eq!(lines[3]["status"], 400);
    assert_eq!(lines[3]["usage"], Value::Null);
    assert_eq!(
        lines[3]["refused"],
        serde_json::from_str::<Value>(&rejected.body).expect("JSON")["error"]["message"],
        "the log says why, in the answer's words"
    );
    assert!(lines[..3].iter().all(|l| l["refused"] == Value::Null));
    assert!(lines.iter().all(|l| l["anthropic_beta"] == Value::Null));
    assert_eq!(
        lines[3]["body"].as_str().map(str::as_bytes),
        Some(&invalid[..])
    );

    assert_eq!(lines[4]["status"], Value::Null);
    assert_eq!(lines[4]["route"], 0);
    assert_eq!(lines[4]["answer"], "reset");
    assert_eq!(lines[4]["step"], 0);
    assert_eq!(
        lines[4]["answer_by"], "turn",
        "the route inherits the scenario's"
    );
}

#[tokio::test]
async fn the_log_leaves_out_bodies_past_the_recorded_bound_and_other_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.jsonl");
    let limits = threadline_mock::ServerLimits::default().with_max_recorded_bytes(100);
    let config = MockConfig::new(Scenario::new(texts("answer", 1)))
        .with_limits(limits)
        .with_record_log(&log);
    let server = MockServer::start_with(config).await.expect("listens");
    let request = serde_json::to_vec(&conversation(&"x".repeat(200), &[], false)).expect("JSON");
    assert_eq!(
        post(server.addr(), &request).await.expect("answer").status,
        200
    );
    let mut stream = tokio::net::TcpStream::connect(server.addr())
        .await
        .expect("connects");
    let head = crate::server::http::head(Some(2), true).replace("/v1/messages ", "/health ");
    tokio::io::AsyncWriteExt::write_all(&mut stream, head.as_bytes())
        .await
        .expect("sent");
    tokio::io::AsyncWriteExt::write_all(&mut stream, b"{}")
        .await
        .expect("sent");
    let answer = crate::server::http::read_answer(&mut stream)
        .await
        .expect("answer");
    assert_eq!(answer.status, 404);

    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["body_omitted"], "too_large");
    assert_eq!(lines[0].get("body"), None);
    assert_eq!(lines[0]["body_bytes"], request.len());
    assert_eq!(lines[0]["step"], 0);
    assert_eq!(lines[0]["answer_by"], "order");
    assert!(lines[0]["usage"]["input_tokens"].as_u64().is_some());
}

#[tokio::test]
async fn the_log_keeps_the_beta_header_and_the_refusals_words() {
    // Issue 28: a harness checking each logged body as the mock did needs the betas it was
    // sent with, and one counting refusals needs their reasons.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests.jsonl");
    let config = MockConfig::new(Scenario::new(texts("answer", 2))).with_record_log(&log);
    let server = MockServer::start_with(config).await.expect("listens");
    let betas = "claude-code-20250219,effort-2025-11-24";
    let addr = server.addr();
    let send_with_betas = |body: Vec<u8>| async move {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connects");
        let head = crate::server::http::head(Some(body.len()), true).replace(
            "content-type:",
            &format!("anthropic-beta: {betas}\r\ncontent-type:"),
        );
        tokio::io::AsyncWriteExt::write_all(&mut stream, head.as_bytes())
            .await
            .expect("sent");
        tokio::io::AsyncWriteExt::write_all(&mut stream, &body)
            .await
            .expect("sent");
        crate::server::http::read_answer(&mut stream)
            .await
            .expect("an answer")
    };
    let mut unknown = conversation("hi", &[], false);
    unknown["model"] = json!("claude-from-the-future");
    let answer = send_with_betas(serde_json::to_vec(&unknown).expect("JSON")).await;
    assert_eq!(answer.status, 404);
    let fine =
        send_with_betas(serde_json::to_vec(&conversation("hi", &[], false)).expect("JSON")).await;
    assert_eq!(fine.status, 200, "{}", fine.body);

    let lines = log_lines(&log);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(lines[0]["refused"], "model: claude-from-the-future");
    assert_eq!(lines[0]["anthropic_beta"], betas);
    assert_eq!(lines[1]["refused"], Value::Null);
    assert_eq!(lines[1]["anthropic_beta"], betas);
}

#[tokio::test]
async fn a_log_that_cannot_be_opened_fails_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = MockConfig::new(Scenario::default())
        .with_record_log(dir.path().join("missing-dir").join("log.jsonl"));
    let error = MockServer::start_with(config).await.expect_err("refused");
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
}

#[tokio::test]
async fn a_slow_step_from_a_scenario_file_streams_one_delta_per_chunk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("slow.yaml");
    let text = "0123456789".repeat(10);
    std::fs::write(
        &path,
        format!(
            "steps:\n  - kind: message\n    content: [{{type: text, text: \"{text}\"}}]\n    chunk_chars: 10\n    delay_ms: 20\n"
        ),
    )
    .expect("written");
    let scenario = Scenario::from_file(&path).expect("valid");
    let server = MockServer::start(scenario).await.expect("listens");
    let started = std::time::Instant::now();
    let answer = send(&server, &conversation("Hi", &[], true)).await;
    let elapsed = started.elapsed();
    assert_eq!(answer.status, 200);
    let events: Vec<Value> = answer
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).expect("a JSON event"))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let mut expected = vec!["message_start", "content_block_start", "ping"];
    expected.extend(["content_block_delta"; 10]);
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(kinds, expected);
    let streamed: String = events
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(streamed, text);
    // 15 pauses of 20 ms: reported, not asserted (a loaded machine only makes it longer).
    eprintln!("a 16-event stream with delay_ms 20 took {elapsed:?}");
}
