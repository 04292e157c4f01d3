//! On-demand compaction (`compact-2026-09-04`) over real loopback HTTP: a request with
//! `compaction` is answered with one signed `compaction` block (streamed as one
//! `content_block_start`, no deltas), or with no summary when the step or the window says so;
//! every refusal of the reference's §2 with its exact text and error code; the block sent back
//! verbatim in first position is accepted, and any edit of it refused with the right code
//! (a property test over hostile conversations).

use std::net::SocketAddr;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use threadline_mock::{MockConfig, MockServer, Scenario, Step};
use threadline_wire::model::ModelTable;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::server::http::{head, read_answer};

const BETA: &str = "compact-2026-09-04";
const SONNET: &str = "claude-sonnet-4-6";

/// Sends `body` with `anthropic-beta: beta` (no header for `None`); the status and the body.
async fn send(addr: SocketAddr, body: &Value, beta: Option<&str>) -> (u16, String) {
    let bytes = serde_json::to_vec(body).expect("JSON serializes");
    let mut head = head(Some(bytes.len()), true);
    if let Some(beta) = beta {
        head = head.replacen(
            "x-api-key",
            &format!("anthropic-beta: {beta}\r\nx-api-key"),
            1,
        );
    }
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(&bytes).await.expect("body");
    let answer = read_answer(&mut stream).await.expect("an answer");
    (answer.status, answer.body)
}

/// [`send`] with the beta, the body parsed.
async fn post(addr: SocketAddr, body: &Value) -> (u16, Value) {
    let (status, text) = send(addr, body, Some(BETA)).await;
    let parsed = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, parsed)
}

fn history() -> Value {
    json!([
        {"role": "user", "content": "Plan the trip. Paris first."},
        {"role": "assistant", "content": [{"type": "text", "text": "Paris, then Lyon."}]},
        {"role": "user", "content": "And then? Nice."}
    ])
}

/// A compaction request of `history()` on `model`, with `extra` fields merged in.
fn compaction(model: &str, extra: Value) -> Value {
    let mut body = json!({"model": model, "max_tokens": 4096, "messages": history(),
        "compaction": {"type": "summarize"}});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body
}

/// A request sending `block` back first (its own assistant message), then a new user turn.
fn after(block: &Value, extra: Value) -> Value {
    let mut body = json!({"model": SONNET, "max_tokens": 1024, "messages": [
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": "Where next?"}]});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body
}

async fn start(steps: Vec<Step>) -> MockServer {
    MockServer::start(Scenario::new(steps).repeating_last())
        .await
        .expect("the mock listens")
}

/// The block of a compaction answer.
async fn compacted(addr: SocketAddr) -> Value {
    let (status, body) = post(addr, &compaction(SONNET, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    body["content"][0].clone()
}

fn assert_refused(status: u16, body: &Value, message: &str, code: Option<&str>) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["message"], message, "{body}");
    match code {
        Some(code) => assert_eq!(body["error"]["details"], json!({"error_code": code})),
        None => assert!(body["error"].get("details").is_none(), "{body}"),
    }
}

#[tokio::test]
async fn a_compaction_is_one_signed_block_streamed_without_deltas() {
    let server = start(vec![Step::text("The trip: Paris, Lyon, Nice.")]).await;
    let (status, body) = post(server.addr(), &compaction(SONNET, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["stop_reason"], "compaction");
    let content = body["content"].as_array().expect("content");
    assert_eq!(content.len(), 1);
    let block = content[0].as_object().expect("a block");
    let mut keys: Vec<&str> = block.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["content", "signature", "type"]);
    assert_eq!(block["type"], "compaction");
    assert_eq!(block["content"], "The trip: Paris, Lyon, Nice.");
    let signature = block["signature"].as_str().expect("a signature");
    assert!(
        signature.starts_with("tlmock-compaction-v2."),
        "{signature}"
    );
    let usage = &body["usage"];
    assert_eq!(
        (&usage["input_tokens"], &usage["output_tokens"]),
        (&json!(0), &json!(0))
    );
    let iterations = usage["iterations"].as_array().expect("iterations");
    assert_eq!(iterations.len(), 1);
    assert_eq!(iterations[0]["type"], "compaction");
    assert!(
        iterations[0]["input_tokens"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{usage}"
    );
    // 28 bytes of summary, a token per four.
    assert_eq!(iterations[0]["output_tokens"], 7);

    // Streamed: exactly these events, the block whole in its start, byte for byte the same.
    let streamed = compaction(SONNET, json!({"stream": true}));
    let (status, sse) = send(server.addr(), &streamed, Some(BETA)).await;
    assert_eq!(status, 200, "{sse}");
    let events: Vec<(&str, &str)> = sse
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e.lines().find_map(|l| l.strip_prefix("event: "));
            let data = e.lines().find_map(|l| l.strip_prefix("data: "));
            (name.unwrap_or(""), data.unwrap_or(""))
        })
        .collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let start: Value = serde_json::from_str(events[1].1).expect("JSON");
    let whole = serde_json::to_string(&body["content"][0]).expect("JSON");
    let in_stream = serde_json::to_string(&start["content_block"]).expect("JSON");
    assert_eq!(in_stream, whole);
    assert!(
        events[1].1.contains(&whole),
        "the raw event holds the block: {}",
        events[1].1
    );
    let delta: Value = serde_json::from_str(events[3].1).expect("JSON");
    assert_eq!(delta["delta"]["stop_reason"], "compaction");
    assert_eq!(delta["usage"], body["usage"]);
}

#[tokio::test]
async fn the_block_sent_back_first_is_accepted_and_the_cache_sees_the_shorter_prefix() {
    let server = start(vec![
        Step::text("The trip so far: Paris, then Lyon."),
        Step::text("Nice, then Marseille."),
    ])
    .await;
    // A long cached system prompt: the compaction call writes it, the next request reads it.
    let system = json!([{"type": "text", "text": "You plan trips. ".repeat(1_500),
        "cache_control": {"type": "ephemeral"}}]);
    let mut request = compaction(SONNET, json!({"system": system}));
    let (status, body) = post(server.addr(), &request).await;
    assert_eq!(status, 200, "{body}");
    let block = body["content"][0].clone();
    let pass = &body["usage"]["iterations"][0];
    assert!(
        pass["cache_creation_input_tokens"]
            .as_u64()
            .is_some_and(|n| n > 1_000),
        "{pass}"
    );

    // Swap: the block, the kept turns verbatim (none here), a new user turn.
    request = after(&block, json!({"system": system}));
    let (status, body) = post(server.addr(), &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"][0]["text"], "Nice, then Marseille.");
    assert_eq!(body["stop_reason"], "end_turn");
    let read = body["usage"]["cache_read_input_tokens"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        read >= pass["cache_creation_input_tokens"]
            .as_u64()
            .unwrap_or(u64::MAX),
        "{body}"
    );

    // The block as the first block of the first user message, kept turns after it.
    let request = json!({"model": SONNET, "max_tokens": 1024, "messages": [
        {"role": "user", "content": [block, {"type": "text", "text": "Go on."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Nice, then Marseille."}]},
        {"role": "user", "content": "And after?"}]});
    let (status, body) = post(server.addr(), &request).await;
    assert_eq!(status, 200, "{body}");
    // A later request without the header: the block type is unknown.
    let (status, text) = send(server.addr(), &request, None).await;
    let body: Value = serde_json::from_str(&text).expect("JSON");
    assert_refused(
        status,
        &body,
        "`compaction` is not an expected content block type",
        None,
    );
}

#[tokio::test]
async fn the_compaction_parameter_needs_its_header_and_a_model_that_has_it() {
    let server = start(vec![Step::text("S.")]).await;
    let (status, text) = send(server.addr(), &compaction(SONNET, json!({})), None).await;
    let body: Value = serde_json::from_str(&text).expect("JSON");
    assert_refused(
        status,
        &body,
        "compaction: the `compaction` parameter requires anthropic-beta: compact-2026-09-04",
        None,
    );
    let (status, body) = post(server.addr(), &compaction("claude-haiku-4-5", json!({}))).await;
    assert_refused(
        status,
        &body,
        "compaction: on-demand compaction is not supported on this model",
        None,
    );
    // Haiku 5.5: the docs are silent, the mock serves it.
    let (status, body) = post(server.addr(), &compaction("claude-haiku-5-5", json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stop_reason"], "compaction");
    let (status, body) = post(server.addr(), &compaction(SONNET, json!({}))).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn parameters_refused_beside_compaction_are_400s_in_our_words() {
    let server = start(vec![Step::text("S.")]).await;
    let tools = json!([{"name": "get_weather", "input_schema": {"type": "object"}}]);
    let cases = [
        (
            json!({"context_management": {"edits": []}}),
            "context_management: `context_management` cannot be used with `compaction`",
        ),
        (
            json!({"stop_sequences": ["END"]}),
            "stop_sequences: `stop_sequences` cannot be used with `compaction`",
        ),
        (
            json!({"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}),
            "output_config.format: `output_config.format` cannot be used with `compaction`",
        ),
        (
            json!({"tools": tools, "tool_choice": {"type": "any"}}),
            "tool_choice: `tool_choice` of type `any` cannot be used with `compaction`",
        ),
        (
            json!({"tools": tools, "tool_choice": {"type": "tool", "name": "get_weather"}}),
            "tool_choice: `tool_choice` of type `tool` cannot be used with `compaction`",
        ),
        (
            json!({"compaction": {"type": "summarize", "instructions": "   "}}),
            "compaction.instructions: `instructions` must not be blank",
        ),
        (
            json!({"compaction": {"type": "summarize", "instructions": "x".repeat(16_385)}}),
            "compaction.instructions: String should have at most 16384 characters",
        ),
        (
            json!({"messages": [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                    "name": "get_weather", "input": {}}]}], "tools": tools}),
            "messages.1: the conversation ends with an assistant `tool_use` block that has no `tool_result`; a compaction request cannot end in a pending tool call",
        ),
    ];
    for (extra, message) in cases {
        let (status, body) = post(server.addr(), &compaction(SONNET, extra)).await;
        assert_refused(status, &body, message, None);
    }
    // What may come with it: instructions at the limit, `tool_choice: auto`, an empty
    // `stop_sequences`, a conversation ending with an answer (no prefill) or a tool result.
    let passing = [
        json!({"compaction": {"type": "summarize", "instructions": "x".repeat(16_384)}}),
        json!({"tools": tools, "tool_choice": {"type": "auto"}, "stop_sequences": []}),
        json!({"messages": [{"role": "user", "content": "Hi."},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]}]}),
        json!({"messages": [{"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                "name": "get_weather", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                "content": "Sunny."}]}], "tools": tools}),
    ];
    for extra in passing {
        let (status, body) = post(server.addr(), &compaction(SONNET, extra)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["stop_reason"], "compaction");
    }
}

#[tokio::test]
async fn a_task_budgets_remaining_is_refused_with_compaction_and_beside_a_block() {
    let server = start(vec![Step::text("S.")]).await;
    let header = format!("{BETA},task-budgets-2026-03-13");
    let budget = |remaining: bool| {
        let mut b = json!({"type": "tokens", "total": 50_000});
        if remaining {
            b["remaining"] = json!(20_000);
        }
        json!({"output_config": {"task_budget": b}})
    };
    let message = "output_config.task_budget.remaining: `remaining` cannot be set on a compaction request or on a request carrying a `compaction` block";
    let send_json = |body: Value| {
        let header = header.clone();
        let addr = server.addr();
        async move {
            let (status, text) = send(addr, &body, Some(&header)).await;
            (status, serde_json::from_str::<Value>(&text).expect("JSON"))
        }
    };
    let (status, body) = send_json(compaction("claude-opus-4-8", budget(true))).await;
    assert_refused(status, &body, message, None);
    let (status, body) = send_json(compaction("claude-opus-4-8", budget(false))).await;
    assert_eq!(status, 200, "{body}");
    let block = body["content"][0].clone();
    let mut later = after(&block, budget(true));
    later["model"] = json!("claude-opus-4-8");
    let (status, body) = send_json(later.clone()).await;
    assert_refused(status, &body, message, None);
    later["output_config"] = budget(false)["output_config"].clone();
    let (status, body) = send_json(later).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn placement_signature_and_shape_errors_carry_the_apis_codes() {
    let server = start(vec![Step::text("S."), Step::text("Answer.")]).await;
    let block = compacted(server.addr()).await;

    // Misplaced: the summarized messages are still in front of it.
    let misplaced = json!({"model": SONNET, "max_tokens": 1024, "messages": [
        {"role": "user", "content": "Plan the trip. Paris first."},
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": "Where next?"}]});
    let (status, body) = post(server.addr(), &misplaced).await;
    assert_refused(
        status,
        &body,
        "messages.1.content.0: a `compaction` block must be the first block of the first message; the messages it summarized must not be sent before it",
        Some("compaction_block_misplaced"),
    );

    // Edited signature and edited content.
    let mut forged = block.clone();
    forged["signature"] = json!("EuYBCkQYAiJA");
    let (status, body) = post(server.addr(), &after(&forged, json!({}))).await;
    assert_refused(
        status,
        &body,
        "messages.0.content.0.signature: invalid signature in `compaction` block",
        Some("compaction_signature_invalid"),
    );
    let mut edited = block.clone();
    edited["content"] = json!("S!");
    let (status, body) = post(server.addr(), &after(&edited, json!({}))).await;
    assert_refused(
        status,
        &body,
        "messages.0.content.0.content: the `compaction` block's content does not match its signature; send the block back exactly as it was returned",
        Some("compaction_content_mismatch"),
    );

    // Nothing to summarize: only the block.
    let mut nothing = compaction(SONNET, json!({}));
    nothing["messages"] = json!([{"role": "assistant", "content": [block]}]);
    let (status, body) = post(server.addr(), &nothing).await;
    assert_refused(
        status,
        &body,
        "messages: there is nothing to summarize: no user or assistant content besides a `compaction` block",
        Some("compaction_nothing_to_summarize"),
    );

    // Two blocks: a 400 without a code.
    let two = json!({"model": SONNET, "max_tokens": 1024, "messages": [
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": "Next."},
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": "Where next?"}]});
    let (status, body) = post(server.addr(), &two).await;
    assert_refused(
        status,
        &body,
        "messages.2.content.0: only one `compaction` block may be sent, the newest; found more than one",
        None,
    );

    // Extra fields, as a Python SDK's `model_dump()` adds them.
    let mut dumped = block.clone();
    dumped["citations"] = Value::Null;
    let (status, body) = post(server.addr(), &after(&dumped, json!({}))).await;
    assert_refused(
        status,
        &body,
        "messages.0.content.0.compaction.citations: Extra inputs are not permitted",
        None,
    );

    // None of those took a step: the next one is still "Answer.", and a compaction of a
    // history that starts with the block is a new summary.
    let (status, body) = post(server.addr(), &after(&block, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"][0]["text"], "Answer.");
    let mut again = after(&block, json!({}));
    again["compaction"] = json!({"type": "summarize"});
    let (status, body) = post(server.addr(), &again).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stop_reason"], "compaction");
    assert_ne!(body["content"][0]["signature"], block["signature"]);
    assert_eq!(server.request_count(), 9);
}

#[tokio::test]
async fn scripted_stop_reasons_give_no_summary_and_a_scripted_529_carries_its_code() {
    let mut steps: Vec<Step> = [
        "max_tokens",
        "model_context_window_exceeded",
        "tool_use",
        "refusal",
        "end_turn",
    ]
    .iter()
    .map(|reason| Step::text("unused").with_stop_reason(reason))
    .collect();
    steps.push(Step::overloaded().with_error_code("compaction_unavailable"));
    steps.push(Step::text("After the retry."));
    let server = MockServer::start(Scenario::new(steps))
        .await
        .expect("the mock listens");
    for reason in [
        "max_tokens",
        "model_context_window_exceeded",
        "tool_use",
        "refusal",
        "end_turn",
    ] {
        let (status, body) = post(server.addr(), &compaction(SONNET, json!({}))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["content"], json!([]), "{reason}");
        assert_eq!(body["stop_reason"], reason);
        assert_eq!(body["usage"]["input_tokens"], 0);
    }
    let (status, body) = post(server.addr(), &compaction(SONNET, json!({}))).await;
    assert_eq!(status, 529, "{body}");
    assert_eq!(body["error"]["type"], "overloaded_error");
    assert_eq!(body["error"]["message"], "Overloaded");
    assert_eq!(
        body["error"]["details"]["error_code"],
        "compaction_unavailable"
    );
    let (status, body) = post(server.addr(), &compaction(SONNET, json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"][0]["content"], "After the retry.");
}

#[tokio::test]
async fn over_the_context_window_there_is_no_summary() {
    let row = r#"{"id": "claude-tiny", "aliases": [], "features": ["on_demand_compaction"],
        "context_window": 1000, "max_output_tokens": 500, "min_cacheable_tokens": 1024,
        "thinking": ["adaptive"], "prefill": false, "sampling_params": false, "effort": [],
        "keeps_prior_thinking": true, "rejects_input_plus_max_tokens_over_window": false,
        "prices": {"input": 2.0, "output": 10.0, "cache_write_5m": 2.5,
                   "cache_write_1h": 4.0, "cache_read": 0.2}}"#;
    let table = ModelTable::builtin()
        .extended_from_json(&format!(r#"{{"models": [{row}]}}"#))
        .expect("a table");
    let config =
        MockConfig::new(Scenario::new([Step::text("S.")]).repeating_last()).with_models(table);
    let server = MockServer::start_with(config)
        .await
        .expect("the mock listens");
    let mut big = compaction("claude-tiny", json!({"max_tokens": 100}));
    big["messages"][0]["content"] = json!("Plan the trip. ".repeat(300));
    let (status, body) = post(server.addr(), &big).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"], json!([]));
    assert_eq!(body["stop_reason"], "model_context_window_exceeded");
    assert_eq!(body["usage"]["iterations"][0]["input_tokens"], 0);
    let small = compaction("claude-tiny", json!({"max_tokens": 100}));
    let (status, body) = post(server.addr(), &small).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stop_reason"], "compaction");
}

/// Text a client might hold: quotes, escapes, control characters, non-BMP characters,
/// markup, the signature's own separator; never blank.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z .!?]{1,40}",
        Just("\"\\\u{0}\u{1f}\u{7f}".to_owned()),
        Just("<summary></summary>".to_owned()),
        Just("é漢字🦀\u{200b}\u{feff}".to_owned()),
        Just("tlmock-compaction-v2.".to_owned()),
        Just("\n\n\t  ".to_owned()),
        "\\PC{0,30}",
    ];
    proptest::collection::vec(piece, 1..6).prop_map(|pieces| format!("x{}", pieces.concat()))
}

/// A conversation: a user turn, then exchanges (an answer and a user turn, or an answer
/// calling a tool and its result), all of hostile text, sometimes ending with an answer.
fn conversation() -> impl Strategy<Value = Vec<Value>> {
    let exchange = (hostile_text(), hostile_text(), any::<bool>());
    (
        hostile_text(),
        proptest::collection::vec(exchange, 0..5),
        any::<bool>(),
    )
        .prop_map(|(first, exchanges, end_on_answer)| {
            let mut messages = vec![json!({"role": "user", "content": first})];
            for (i, (answer, next, calls)) in exchanges.into_iter().enumerate() {
                let text = json!({"type": "text", "text": answer});
                if calls {
                    let id = format!("toolu_{i}");
                    let call = json!({"type": "tool_use", "id": id, "name": "lookup",
                        "input": {"q": next}});
                    messages.push(json!({"role": "assistant", "content": [text, call]}));
                    messages.push(json!({"role": "user", "content": [{"type": "tool_result",
                        "tool_use_id": id, "content": next}]}));
                } else {
                    messages.push(json!({"role": "assistant", "content": [text]}));
                    messages.push(json!({"role": "user", "content": next}));
                }
            }
            if end_on_answer {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "text", "text": "Done."}]}));
            }
            messages
        })
}

/// The replacement of a character: another one, hostile or not.
fn replacement() -> impl Strategy<Value = char> {
    prop_oneof![
        Just('"'),
        Just('\\'),
        Just('.'),
        Just('0'),
        Just('a'),
        Just('\u{0}'),
        Just('🦀'),
        any::<char>(),
    ]
}

/// `text` with its `at`-th character (modulo its length) replaced by `with`, or by another
/// character when it is that one already.
fn edit(text: &str, at: usize, with: char) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = at % chars.len().max(1);
    chars
        .iter()
        .enumerate()
        .map(|(i, c)| match (i == at, *c == with) {
            (false, _) => *c,
            (true, false) => with,
            (true, true) => {
                if with == 'b' {
                    'c'
                } else {
                    'b'
                }
            }
        })
        .collect()
}

#[test]
fn a_block_comes_back_verbatim_first_and_any_edit_of_it_is_refused_with_its_code() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    // An empty step: the default summary, made of the hostile texts themselves.
    let server = runtime
        .block_on(MockServer::start(
            Scenario::new([Step::message(Vec::new())]).repeating_last(),
        ))
        .expect("the mock listens");
    let addr = server.addr();
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        conversation(),
        any::<bool>(),
        any::<usize>(),
        replacement(),
        any::<bool>(),
    );
    runner
        .run(&strategy, |(messages, in_content, at, with, user_first)| {
            runtime.block_on(async {
                let request = json!({"model": SONNET, "max_tokens": 4096, "messages": messages,
                    "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
                    "compaction": {"type": "summarize"}});
                let (status, body) = post(addr, &request).await;
                prop_assert_eq!(status, 200, "{}", body);
                prop_assert_eq!(&body["stop_reason"], "compaction");
                let block = body["content"][0].clone();
                let swapped = |block: &Value| {
                    let messages = if user_first {
                        json!([{"role": "user", "content": [block, {"type": "text", "text": "Next."}]}])
                    } else {
                        json!([{"role": "assistant", "content": [block]},
                            {"role": "user", "content": "Next."}])
                    };
                    json!({"model": SONNET, "max_tokens": 1024, "messages": messages})
                };
                let (status, body) = post(addr, &swapped(&block)).await;
                prop_assert_eq!(status, 200, "{}", body);
                let (field, code) = if in_content {
                    ("content", "compaction_content_mismatch")
                } else {
                    ("signature", "compaction_signature_invalid")
                };
                let mut edited = block.clone();
                let original = block[field].as_str().unwrap_or_default();
                edited[field] = json!(edit(original, at, with));
                prop_assert_ne!(&edited, &block);
                let (status, body) = post(addr, &swapped(&edited)).await;
                prop_assert_eq!(status, 400, "{}", body);
                prop_assert_eq!(&body["error"]["details"]["error_code"], code, "{}", body);
                Ok::<(), TestCaseError>(())
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
