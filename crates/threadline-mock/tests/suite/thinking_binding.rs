//! Thinking bound to its prefix, over real loopback HTTP: on a binding model (Opus 5.5) the
//! mock signs the thinking it serves and checks the blocks sent back. Every edit the API
//! allows is accepted, every edit it refuses is its 400 (exact text) or, under `drop_block`,
//! the dropped blocks listed in `input_transformations`; a tampered block is a 400 whatever
//! the settings; another model's block is dropped silently; a proptest appends to random
//! conversations (never refused) or edits them once before a thinking block (always caught).

use serde_json::{Value, json};
use threadline_mock::{Block, MockServer, Scenario, Step};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const OPUS_55: &str = "claude-opus-5-5";
const BETA: &str = "thinking-binding-controls-2026-08-01";
const CLEAR_AT_BETA: &str = "mid-conversation-system-clear-at-2026-08-21";

const TAMPERED: &str = "Invalid `signature` in `thinking` block";
const BOUND: &str = "Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".";
const NEEDS_HEADER: &str = " That setting requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header.";

/// The 400 text of a block at `path` bound elsewhere, without the beta header, naming `what`.
fn bound_elsewhere(path: &str, what: &str) -> String {
    format!("{path}: {BOUND}{NEEDS_HEADER} Since the block was written, {what}.")
}

/// One answer: the status and the message (the body, or the stream's events put together).
struct Answer {
    status: u16,
    body: Value,
}

/// The body of a chunked HTTP/1.1 answer, put together.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(at) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..at])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || raw.len() < at + 2 + size {
            break;
        }
        out.extend_from_slice(&raw[at + 2..at + 2 + size]);
        raw = &raw[(at + 4 + size).min(raw.len())..];
    }
    out
}

/// Posts `body` to the mock (with `anthropic-beta: betas` unless empty) and reads the answer.
async fn post(server: &MockServer, body: &Value, betas: &str) -> Answer {
    let bytes = serde_json::to_vec(body).expect("JSON serializes");
    let mut head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: mock\r\nx-api-key: test-key\r\n\
         anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n",
        bytes.len()
    );
    if !betas.is_empty() {
        head.push_str(&format!("anthropic-beta: {betas}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    stream.write_all(head.as_bytes()).await.expect("writes");
    stream.write_all(&bytes).await.expect("writes");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("reads");
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let mut payload = raw[at + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        payload = dechunk(&payload);
    }
    let body = if head.contains("text/event-stream") {
        let message =
            threadline_wire::message_stream::read_message(&payload).expect("a complete stream");
        serde_json::to_value(&message).expect("serializes")
    } else {
        serde_json::from_slice(&payload)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&payload)))
    };
    Answer { status, body }
}

/// A mock answering every request with thinking, redacted thinking and text.
async fn mock() -> MockServer {
    let step = Step::message(vec![
        Block::Thinking {
            thinking: "Let me think.".to_owned(),
            signature: "scenario-signature".to_owned(),
        },
        Block::RedactedThinking {
            data: "ZW5jcnlwdGVk".to_owned(),
        },
        Block::Text {
            text: "Done.".to_owned(),
        },
    ]);
    MockServer::start(Scenario::new([step]).repeating_last())
        .await
        .expect("the mock listens")
}

fn weather() -> Value {
    json!({"name": "get_weather", "input_schema": {"type": "object"}})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

/// A request on Opus 5.5 with a system prompt, one tool and `messages`.
fn request(messages: &[Value]) -> Value {
    json!({
        "model": OPUS_55, "max_tokens": 1024,
        "thinking": {"type": "adaptive"},
        "system": "You are terse.",
        "tools": [weather()],
        "messages": messages,
    })
}

/// `thinking.block_binding.prefix_mismatch_behavior: drop_block` on `body`.
fn dropping(mut body: Value) -> Value {
    body["thinking"] =
        json!({"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}});
    body
}

/// Sends `body`, expects a 200, and returns `messages` + the answer as an assistant message.
async fn turn(server: &MockServer, body: &Value, betas: &str) -> Vec<Value> {
    let answer = post(server, body, betas).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let mut messages = body["messages"].as_array().cloned().expect("messages");
    messages.push(json!({"role": "assistant", "content": answer.body["content"]}));
    messages
}

/// Three answered turns, the last user turn of two text blocks: `[u, a, u, a, u(2), a]`
/// (thinking at `messages.{1,3,5}.content.{0,1}`), and the next user turn appended.
async fn history(server: &MockServer) -> Vec<Value> {
    let mut messages = turn(server, &request(&[user("Hi")]), "").await;
    messages.push(user("More"));
    let mut messages = turn(server, &request(&messages), "").await;
    messages.push(json!({"role": "user", "content": [
        {"type": "text", "text": "Details"}, {"type": "text", "text": "Please."}
    ]}));
    let mut messages = turn(server, &request(&messages), "").await;
    messages.push(user("Again"));
    messages
}

async fn assert_accepted(server: &MockServer, body: &Value, what: &str) {
    let answer = post(server, body, "").await;
    assert_eq!(answer.status, 200, "{what}: {}", answer.body);
    assert!(
        answer.body.get("input_transformations").is_none(),
        "{what}: none without the header"
    );
}

async fn assert_refused(server: &MockServer, body: &Value, message: &str) {
    let answer = post(server, body, "").await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(answer.body["error"]["type"], "invalid_request_error");
    assert_eq!(answer.body["error"]["message"], message);
}

#[tokio::test]
async fn the_mock_signs_what_it_serves_alike_streamed_or_not() {
    let server = mock().await;
    let body = request(&[user("Hi")]);
    let whole = post(&server, &body, "").await;
    let mut streamed_body = body.clone();
    streamed_body["stream"] = json!(true);
    let streamed = post(&server, &streamed_body, "").await;
    assert_eq!((whole.status, streamed.status), (200, 200));
    let signature = whole.body["content"][0]["signature"]
        .as_str()
        .expect("signed");
    assert!(
        signature.starts_with("tlmock1.claude-opus-5-5."),
        "{signature}"
    );
    assert_eq!(signature.split('.').count(), 7, "{signature}");
    let data = whole.body["content"][1]["data"].as_str().expect("signed");
    assert!(data.starts_with("tlmock1.") && data.ends_with("#ZW5jcnlwdGVk"));
    // The same request, the same signatures, whether streamed (signature_delta) or not.
    assert_eq!(whole.body["content"], streamed.body["content"]);
    // A model that does not bind keeps the scenario's.
    let mut sonnet = body;
    sonnet["model"] = json!("claude-sonnet-5");
    let answer = post(&server, &sonnet, "").await;
    assert_eq!(answer.body["content"][0]["signature"], "scenario-signature");
    assert_eq!(answer.body["content"][1]["data"], "ZW5jcnlwdGVk");
}

#[tokio::test]
async fn appending_is_accepted_and_the_header_brings_an_empty_list() {
    let server = mock().await;
    let messages = history(&server).await;
    assert_accepted(&server, &request(&messages), "append").await;
    let answer = post(&server, &request(&messages), BETA).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["input_transformations"], json!([]));
    let mut streamed = request(&messages);
    streamed["stream"] = json!(true);
    let answer = post(&server, &streamed, BETA).await;
    assert_eq!(
        answer.body["input_transformations"],
        json!([]),
        "on message_start"
    );
}

#[tokio::test]
async fn an_unreferenced_deferred_tool_may_be_added() {
    let server = mock().await;
    let mut body = request(&history(&server).await);
    body["tools"] = json!([
        {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
        weather(),
        {"name": "search_docs", "input_schema": {"type": "object"}, "defer_loading": true}
    ]);
    // The tool search tool is itself a tool: adding it is an edit.
    assert_refused(
        &server,
        &body,
        &bound_elsewhere("messages.1.content.0", "the `tools` list changed"),
    )
    .await;
    body["tools"] = json!([
        weather(),
        {"name": "search_docs", "input_schema": {"type": "object"}, "defer_loading": true}
    ]);
    assert_accepted(&server, &body, "a deferred tool added").await;
}

#[tokio::test]
async fn leading_thinking_blocks_may_be_dropped() {
    let server = mock().await;
    let mut messages = history(&server).await;
    // The first answer's two blocks, then the second answer's first.
    let first = messages[1]["content"].as_array_mut().expect("blocks");
    first.drain(..2);
    assert_accepted(
        &server,
        &request(&messages),
        "first answer's thinking dropped",
    )
    .await;
    let second = messages[3]["content"].as_array_mut().expect("blocks");
    second.remove(0);
    assert_accepted(&server, &request(&messages), "and the next one").await;
}

#[tokio::test]
async fn parameters_outside_system_tools_and_messages_may_change() {
    let server = mock().await;
    let messages = history(&server).await;
    for (field, value) in [
        ("max_tokens", json!(2048)),
        ("output_config", json!({"effort": "low"})),
        ("tool_choice", json!({"type": "auto"})),
        ("metadata", json!({"user_id": "u-1"})),
    ] {
        let mut body = request(&messages);
        body[field] = value;
        assert_accepted(&server, &body, field).await;
    }
}

#[tokio::test]
async fn cache_markers_may_be_added_moved_and_removed() {
    let server = mock().await;
    let messages = history(&server).await;
    let marker = json!({"type": "ephemeral"});
    let mut body = request(&messages);
    body["system"] = json!([{"type": "text", "text": "You are terse.", "cache_control": marker}]);
    body["tools"][0]["cache_control"] = marker.clone();
    body["messages"][2]["content"][0]["cache_control"] = marker.clone();
    assert_accepted(&server, &body, "markers added").await;
    // Moved: from the third message to the fifth.
    let mut body = request(&messages);
    body["messages"][4]["content"][1]["cache_control"] = marker.clone();
    assert_accepted(&server, &body, "marker moved").await;
    // Removed: blocks signed with markers present are read back without them.
    let mut first = request(&[user("Hi")]);
    first["system"] = json!([{"type": "text", "text": "You are terse.", "cache_control": marker}]);
    first["messages"][0]["content"][0]["cache_control"] = marker;
    let mut marked = turn(&server, &first, "").await;
    marked[0]["content"][0]
        .as_object_mut()
        .expect("a block")
        .remove("cache_control");
    marked.push(user("More"));
    assert_accepted(&server, &request(&marked), "markers removed").await;
}

#[tokio::test]
async fn a_cleared_turn_scoped_system_message_left_in_place_is_no_edit() {
    let server = mock().await;
    let betas = CLEAR_AT_BETA;
    let reminder =
        json!({"role": "system", "clear_at": "next_user_message", "content": "Be brief."});
    let mut messages = turn(&server, &request(&[user("Hi"), reminder.clone()]), betas).await;
    messages.push(user("More"));
    // The reminder is cleared now (a user message follows it), and still sent.
    let answer = post(&server, &request(&messages), betas).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    // Rewording it is an edit.
    messages[1]["content"] = json!("Be very brief.");
    let answer = post(&server, &request(&messages), betas).await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(
        answer.body["error"]["message"],
        bound_elsewhere("messages.2.content.0", "an earlier message changed")
    );
}

#[tokio::test]
async fn an_earlier_message_edited_is_the_apis_400_naming_the_first_bound_block() {
    let server = mock().await;
    let messages = history(&server).await;
    let mut edited = messages.clone();
    edited[0]["content"][0]["text"] = json!("Hi!");
    assert_refused(
        &server,
        &request(&edited),
        &bound_elsewhere("messages.1.content.0", "an earlier message changed"),
    )
    .await;
    // An answer's text edited: the blocks after it are bound to it, not those before.
    let mut edited = messages.clone();
    edited[1]["content"][2]["text"] = json!("Done!");
    assert_refused(
        &server,
        &request(&edited),
        &bound_elsewhere("messages.3.content.0", "an earlier message changed"),
    )
    .await;
    // A text block added to, or removed from, an earlier user turn.
    let mut added = messages.clone();
    added[2]["content"]
        .as_array_mut()
        .expect("blocks")
        .push(json!({"type": "text", "text": "Also this."}));
    assert_refused(
        &server,
        &request(&added),
        &bound_elsewhere("messages.3.content.0", "an earlier message changed"),
    )
    .await;
    let mut removed = messages;
    removed[4]["content"].as_array_mut().expect("blocks").pop();
    assert_refused(
        &server,
        &request(&removed),
        &bound_elsewhere("messages.5.content.0", "an earlier message changed"),
    )
    .await;
}

#[tokio::test]
async fn the_system_prompt_and_the_tools_are_bound() {
    let server = mock().await;
    let messages = history(&server).await;
    let mut body = request(&messages);
    body["system"] = json!("You are verbose.");
    assert_refused(
        &server,
        &body,
        &bound_elsewhere("messages.1.content.0", "the `system` prompt changed"),
    )
    .await;
    let edits = [
        json!([weather(), {"name": "get_time", "input_schema": {"type": "object"}}]),
        json!([{"name": "get_time", "input_schema": {"type": "object"}}]),
        json!([{"name": "get_weather", "description": "Now with a description.", "input_schema": {"type": "object"}}]),
    ];
    for tools in edits {
        let mut body = request(&messages);
        body["tools"] = tools;
        assert_refused(
            &server,
            &body,
            &bound_elsewhere("messages.1.content.0", "the `tools` list changed"),
        )
        .await;
    }
    // Both at once, with the beta header: no header sentence, both named.
    let mut body = request(&messages);
    body["system"] = json!("You are verbose.");
    body["tools"] = json!([{"name": "get_time", "input_schema": {"type": "object"}}]);
    let answer = post(&server, &body, BETA).await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(
        answer.body["error"]["message"],
        format!(
            "messages.1.content.0: {BOUND} Since the block was written, the `system` prompt changed; the `tools` list changed."
        )
    );
}

#[tokio::test]
async fn a_middle_thinking_block_removed_breaks_the_chain_after_it() {
    let server = mock().await;
    let messages = history(&server).await;
    // The second answer's redacted block (the fourth of six).
    let mut removed = messages.clone();
    removed[3]["content"]
        .as_array_mut()
        .expect("blocks")
        .remove(1);
    assert_refused(
        &server,
        &request(&removed),
        &bound_elsewhere(
            "messages.5.content.0",
            "the thinking block before it was removed",
        ),
    )
    .await;
    // The last one removed: nothing follows it.
    let mut last = messages;
    last[5]["content"].as_array_mut().expect("blocks").remove(1);
    assert_accepted(&server, &request(&last), "the last block removed").await;
}

#[tokio::test]
async fn under_drop_block_the_failing_block_and_every_later_one_are_dropped_and_listed() {
    let server = mock().await;
    let messages = history(&server).await;
    let mut edited = messages.clone();
    edited[2]["content"][0]["text"] = json!("Less");
    let body = dropping(request(&edited));
    let answer = post(&server, &body, BETA).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let dropped = |path: &str| json!({"type": "thinking_dropped", "path": path, "reason": "prefix_binding_mismatch"});
    let expected = json!([
        dropped("messages.3.content.0"),
        dropped("messages.3.content.1"),
        dropped("messages.5.content.0"),
        dropped("messages.5.content.1"),
    ]);
    assert_eq!(answer.body["input_transformations"], expected);
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let answer = post(&server, &streamed, BETA).await;
    assert_eq!(
        answer.body["input_transformations"], expected,
        "on message_start"
    );
    // The answer follows the last block kept: sent back with the dropped ones, it is kept.
    let mut next = edited;
    next.push(json!({"role": "assistant", "content": answer.body["content"]}));
    next.push(user("Go on."));
    let answer = post(&server, &dropping(request(&next)), BETA).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["input_transformations"], expected);
}

#[tokio::test]
async fn a_tampered_block_is_a_400_whatever_the_setting() {
    let server = mock().await;
    let messages = history(&server).await;
    let mut edited = messages.clone();
    edited[3]["content"][0]["thinking"] = json!("Let me think again.");
    let tampered = format!("messages.3.content.0: {TAMPERED}");
    assert_refused(&server, &request(&edited), &tampered).await;
    let answer = post(&server, &dropping(request(&edited)), BETA).await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(answer.body["error"]["message"], tampered);
    // Redacted data edited, and a signature the mock did not make (a scenario's, say).
    let mut edited = messages.clone();
    let data = edited[1]["content"][1]["data"].as_str().expect("data");
    edited[1]["content"][1]["data"] = json!(format!("{data}x"));
    assert_refused(
        &server,
        &request(&edited),
        &format!("messages.1.content.1: {TAMPERED}"),
    )
    .await;
    let mut foreign = messages;
    foreign[5]["content"][0]["signature"] = json!("EqQBCgIYAhIM");
    assert_refused(
        &server,
        &request(&foreign),
        &format!("messages.5.content.0: {TAMPERED}"),
    )
    .await;
}

#[tokio::test]
async fn another_models_blocks_are_dropped_silently() {
    let server = mock().await;
    let mut sonnet = request(&[user("Hi")]);
    sonnet["model"] = json!("claude-sonnet-5-5");
    let mut messages = turn(&server, &sonnet, "").await;
    messages.push(user("More"));
    // On Opus 5.5, Sonnet 5.5's blocks are unreadable: dropped, never an error.
    assert_accepted(&server, &request(&messages), "another model's blocks").await;
    let answer = post(&server, &request(&messages), BETA).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let dropped = |path: &str| json!({"type": "thinking_dropped", "path": path, "reason": "model_binding_mismatch"});
    assert_eq!(
        answer.body["input_transformations"],
        json!([
            dropped("messages.1.content.0"),
            dropped("messages.1.content.1")
        ])
    );
    // Opus's own answer after them is read (Sonnet's still dropped).
    messages.push(json!({"role": "assistant", "content": answer.body["content"]}));
    messages.push(user("Again"));
    let answer = post(&server, &request(&messages), BETA).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(
        answer.body["input_transformations"],
        json!([
            dropped("messages.1.content.0"),
            dropped("messages.1.content.1")
        ])
    );
}

#[tokio::test]
async fn block_binding_without_its_beta_is_the_validators_400() {
    let server = mock().await;
    assert_refused(
        &server,
        &dropping(request(&[user("Hi")])),
        "thinking.adaptive.block_binding: Extra inputs are not permitted",
    )
    .await;
    let answer = post(&server, &dropping(request(&[user("Hi")])), BETA).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

mod props {
    //! Random conversations on Opus 5.5: appending never breaks a block; one edit before a
    //! thinking block always does.

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    /// Text a user might send, hostile: any printable characters, JSON-ish and
    /// signature-looking strings; never blank.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,12}",
            "x\\PC{0,24}",
            Just("tlmock1.claude-opus-5-5.0.0.0.0.0".to_owned()),
            Just("\"},{\"type\":\"thinking\"".to_owned()),
            Just("#\u{0}é🙂".to_owned()),
        ]
    }

    /// One edit of a conversation (applied to what is before its last thinking block).
    #[derive(Debug, Clone)]
    enum Edit {
        /// A user turn's first text changed (turn index among user turns, mod their count).
        UserText(usize, String),
        /// A text block added to a user turn.
        UserBlock(usize, String),
        /// An answer's text changed.
        AnswerText(usize, String),
        /// `system` changed.
        System(String),
        /// A non-deferred tool added.
        Tool,
        /// A thinking block removed that has one before it and one after it.
        MiddleThinking(usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), text()).prop_map(|(i, t)| Edit::UserText(i, t)),
            (any::<usize>(), text()).prop_map(|(i, t)| Edit::UserBlock(i, t)),
            (any::<usize>(), text()).prop_map(|(i, t)| Edit::AnswerText(i, t)),
            text().prop_map(Edit::System),
            Just(Edit::Tool),
            any::<usize>().prop_map(Edit::MiddleThinking),
        ]
    }

    /// Every thinking block's `(message, block)`, in order.
    fn thinking_blocks(messages: &[Value]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            for (j, b) in m["content"].as_array().into_iter().flatten().enumerate() {
                if matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")) {
                    out.push((i, j));
                }
            }
        }
        out
    }

    /// Applies `edit` to `body` (three answers at least); returns the position it changed
    /// (blocks at or after it are bound to it), `None` when it cannot apply.
    fn apply(body: &mut Value, edit: &Edit) -> Option<(usize, usize)> {
        let messages = body["messages"].as_array_mut()?;
        let last_user = messages.len() - 1;
        let users: Vec<usize> = (0..last_user)
            .filter(|&i| messages[i]["role"] == "user")
            .collect();
        let answers: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i]["role"] == "assistant")
            .collect();
        match edit {
            Edit::UserText(k, t) => {
                let i = *users.get(k % users.len().max(1))?;
                let old = messages[i]["content"][0]["text"].as_str()?.to_owned();
                messages[i]["content"][0]["text"] = json!(format!("{old}{t}"));
                Some((i, 0))
            }
            Edit::UserBlock(k, t) => {
                let i = *users.get(k % users.len().max(1))?;
                let blocks = messages[i]["content"].as_array_mut()?;
                blocks.push(json!({"type": "text", "text": t}));
                Some((i, blocks.len() - 1))
            }
            Edit::AnswerText(k, t) => {
                // Not the last answer: a thinking block must follow the edit.
                let earlier = answers.get(..answers.len().saturating_sub(1))?;
                let i = *earlier.get(k % earlier.len().max(1))?;
                let blocks = messages[i]["content"].as_array_mut()?;
                let j = blocks.iter().position(|b| b["type"] == "text")?;
                let old = blocks[j]["text"].as_str()?.to_owned();
                blocks[j]["text"] = json!(format!("{old}{t}"));
                Some((i, j))
            }
            Edit::System(t) => {
                body["system"] = json!(format!("You are terse. {t}"));
                Some((0, 0))
            }
            Edit::Tool => {
                body["tools"]
                    .as_array_mut()?
                    .push(json!({"name": "get_time", "input_schema": {"type": "object"}}));
                Some((0, 0))
            }
            Edit::MiddleThinking(k) => {
                let blocks = thinking_blocks(messages);
                if blocks.len() < 3 {
                    return None;
                }
                // Neither the first (dropping from the front is allowed) nor the last.
                let (i, j) = blocks[1 + k % (blocks.len() - 2)];
                messages[i]["content"].as_array_mut()?.remove(j);
                // The blocks bound to it start at the next thinking block.
                let next = thinking_blocks(messages)
                    .into_iter()
                    .find(|&(m, b)| (m, b) >= (i, j))?;
                Some(next)
            }
        }
    }

    /// A conversation of `turns` answered turns on a fresh mock, each answer streamed or not
    /// as `streamed` says; then the next user turn.
    async fn conversation(server: &MockServer, texts: &[String], streamed: &[bool]) -> Vec<Value> {
        let mut messages = vec![user(&texts[0])];
        for (k, text) in texts.iter().enumerate().skip(1) {
            let mut body = request(&messages);
            body["stream"] = json!(streamed.get(k).copied().unwrap_or(false));
            messages = turn(server, &body, "").await;
            messages.push(user(text));
        }
        messages
    }

    async fn mock_with(thinking: String, redacted: bool) -> MockServer {
        let mut content = vec![Block::Thinking {
            thinking,
            signature: "s".to_owned(),
        }];
        if redacted {
            content.push(Block::RedactedThinking {
                data: "ZW5j".to_owned(),
            });
        }
        content.push(Block::Text {
            text: "Done.".to_owned(),
        });
        MockServer::start(Scenario::new([Step::message(content)]).repeating_last())
            .await
            .expect("the mock listens")
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn appending_is_never_refused(
            texts in prop::collection::vec(text(), 2..6),
            streamed in prop::collection::vec(any::<bool>(), 6),
            thinking in text(),
            redacted in any::<bool>(),
            leading in 0usize..4,
            marker in any::<usize>(),
        ) {
            runtime().block_on(async {
                let server = mock_with(thinking, redacted).await;
                let mut messages = conversation(&server, &texts, &streamed).await;
                // What the API allows besides: leading thinking blocks dropped, a cache marker
                // on any user turn's text.
                for (i, j) in thinking_blocks(&messages).into_iter().take(leading).rev() {
                    if let Some(blocks) = messages[i]["content"].as_array_mut() {
                        blocks.remove(j);
                    }
                }
                let users: Vec<usize> = (0..messages.len())
                    .filter(|&i| messages[i]["role"] == "user")
                    .collect();
                let i = users[marker % users.len()];
                messages[i]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
                let answer = post(&server, &request(&messages), BETA).await;
                assert_eq!(answer.status, 200, "{}", answer.body);
                assert_eq!(answer.body["input_transformations"], json!([]));
            });
        }

        #[test]
        fn one_edit_before_a_thinking_block_is_always_caught(
            texts in prop::collection::vec(text(), 4..6),
            thinking in text(),
            redacted in any::<bool>(),
            edit in edit(),
            drop_block in any::<bool>(),
        ) {
            runtime().block_on(async {
                let server = mock_with(thinking, redacted).await;
                let messages = conversation(&server, &texts, &[]).await;
                let mut body = request(&messages);
                let at = apply(&mut body, &edit).expect("every edit applies to three answers");
                let edited = body["messages"].as_array().cloned().expect("messages");
                let bound: Vec<(usize, usize)> = thinking_blocks(&edited)
                    .into_iter()
                    .filter(|&p| p >= at)
                    .collect();
                let &(n, m) = bound.first().expect("a thinking block follows every edit");
                if drop_block {
                    let answer = post(&server, &dropping(body), BETA).await;
                    assert_eq!(answer.status, 200, "{edit:?}: {}", answer.body);
                    let paths: Vec<Value> = answer.body["input_transformations"]
                        .as_array()
                        .expect("a list")
                        .iter()
                        .map(|t| t["path"].clone())
                        .collect();
                    let expected: Vec<Value> = bound
                        .iter()
                        .map(|(i, j)| json!(format!("messages.{i}.content.{j}")))
                        .collect();
                    assert_eq!(paths, expected, "{edit:?}");
                } else {
                    let answer = post(&server, &body, "").await;
                    assert_eq!(answer.status, 400, "{edit:?}: {}", answer.body);
                    let message = answer.body["error"]["message"].as_str().expect("a message");
                    let head = format!("messages.{n}.content.{m}: {BOUND}{NEEDS_HEADER} Since the block was written, ");
                    assert!(message.starts_with(&head), "{edit:?}: {message}");
                }
            });
        }
    }
}
