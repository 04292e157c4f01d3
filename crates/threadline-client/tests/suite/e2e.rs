//! The client against the mock over real loopback TCP: streaming text, tool use, thinking,
//! non-streamed answers, count_tokens, and the mock's request checks.

use crate::common;

use common::{client, mock, request, stream_request};
use serde_json::json;
use threadline_client::collect_message;
use threadline_mock::{Block, MockServer, Scenario, Step};
use threadline_wire::{ContentBlock, ContentDelta, CountTokensRequest, StopReason, StreamEvent};

#[tokio::test]
async fn streams_text_as_it_arrives() {
    let server =
        mock([Step::text("Hello from the mock, in several pieces.").with_chunk_chars(5)]).await;
    let client = client(&server.base_url());
    let (events, error) = stream_request(&client).await;
    assert!(error.is_none(), "{error:?}");
    let deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ContentBlockDelta(d) if matches!(d.delta, ContentDelta::Text(_))))
        .count();
    assert_eq!(deltas, 8, "39 characters in pieces of 5");
    assert!(matches!(events.first(), Some(StreamEvent::MessageStart(_))));
    assert!(matches!(events.last(), Some(StreamEvent::MessageStop(_))));

    let message = client.message(request()).await.expect("a message");
    assert_eq!(message.text(), "(the mock's scenario has no more answers)");

    let recorded = server.requests();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].path, "/v1/messages");
    assert_eq!(recorded[0].version, "HTTP/1.1");
    assert_eq!(recorded[0].headers["anthropic-version"], "2023-06-01");
    assert_eq!(recorded[0].headers["x-api-key"], "[redacted]");
    assert_eq!(
        recorded[0]
            .body
            .as_ref()
            .and_then(|b| b["stream"].as_bool()),
        Some(true)
    );
}

#[tokio::test]
async fn tool_use_input_arrives_as_json_deltas() {
    let input = json!({"path": "src/main.rs", "options": {"recursive": true, "depth": 3}});
    let server = mock([Step::message(vec![
        Block::Text {
            text: "Let me look.".into(),
        },
        Block::ToolUse {
            id: Some("toolu_01".into()),
            name: "list_files".into(),
            input: input.clone(),
        },
    ])
    .with_chunk_chars(7)])
    .await;
    let (events, error) = stream_request(&client(&server.base_url())).await;
    assert!(error.is_none(), "{error:?}");
    let json_deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ContentBlockDelta(d) if matches!(d.delta, ContentDelta::InputJson(_))))
        .count();
    assert!(json_deltas > 3, "the input came in pieces: {json_deltas}");
    let mut accumulator = threadline_wire::accumulate::MessageAccumulator::new();
    for event in &events {
        accumulator.push(event).expect("a well-formed stream");
    }
    let message = accumulator.finish().expect("complete");
    assert_eq!(message.stop_reason, Some(StopReason::ToolUse));
    match &message.content[1] {
        ContentBlock::ToolUse(tool) => {
            assert_eq!(tool.id, "toolu_01");
            assert_eq!(tool.input, input);
        }
        other => panic!("expected a tool use, got {other:?}"),
    }
}

#[tokio::test]
async fn thinking_keeps_its_signature() {
    let server = mock([Step::message(vec![
        Block::Thinking {
            thinking: "The user greets me; answer briefly.".into(),
            signature: "EqQBCkgIARABGAIiQL".into(),
        },
        Block::Text { text: "Hi!".into() },
    ])])
    .await;
    let message = client(&server.base_url())
        .message(request())
        .await
        .expect("a message");
    match &message.content[0] {
        ContentBlock::Thinking(thinking) => {
            assert_eq!(thinking.thinking, "The user greets me; answer briefly.");
            assert_eq!(thinking.signature.as_deref(), Some("EqQBCkgIARABGAIiQL"));
        }
        other => panic!("expected thinking, got {other:?}"),
    }
    assert_eq!(message.text(), "Hi!");
    assert!(
        message
            .usage
            .and_then(|u| u.input_tokens)
            .is_some_and(|n| n > 0)
    );
}

#[tokio::test]
async fn a_non_streamed_answer_becomes_the_same_events() {
    // The mock answers JSON when the request does not stream; the client always asks to
    // stream, so replay a JSON message through a fixture step.
    let message = json!({"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6",
        "content":[{"type":"text","text":"whole"},{"type":"tool_use","id":"toolu_9","name":"ls","input":{"a":1}}],
        "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":7}});
    let server = mock([Step::Fixture(threadline_mock::FixtureStep::json(
        Some(200),
        message.clone(),
    ))])
    .await;
    let stream = client(&server.base_url())
        .stream(request())
        .await
        .expect("a stream");
    let got = collect_message(stream).await.expect("a message");
    assert_eq!(serde_json::to_value(&got).expect("serializes"), message);
}

#[tokio::test]
async fn count_tokens_answers() {
    let server = MockServer::start(Scenario::default())
        .await
        .expect("the mock starts");
    let body: CountTokensRequest = serde_json::from_value(json!({
        "model": "claude-sonnet-4-6",
        "messages": [{"role": "user", "content": "How many tokens is this?"}]
    }))
    .expect("a valid body");
    let tokens = client(&server.base_url())
        .count_tokens(&body)
        .await
        .expect("a count");
    assert!(tokens > 0);
    assert_eq!(server.requests()[0].path, "/v1/messages/count_tokens");
}

#[tokio::test]
async fn the_mock_checks_requests_as_the_api_does() {
    let server = mock([Step::text("never sent")]).await;
    let client = client(&server.base_url());

    let mut unknown = request();
    unknown.model = "claude-imaginary-9".into();
    let error = client.message(unknown).await.expect_err("unknown model");
    assert_eq!(error.status(), Some(404));
    assert_eq!(error.message(), "model: claude-imaginary-9");
    assert!(!error.is_retryable());

    let mut invalid = request();
    invalid
        .messages
        .push(threadline_wire::MessageParam::assistant(vec![
            serde_json::from_value(
                json!({"type": "tool_use", "id": "toolu_01", "name": "ls", "input": {}}),
            )
            .expect("a tool use block"),
        ]));
    invalid
        .messages
        .push(threadline_wire::MessageParam::user(vec![
            ContentBlock::text("never mind"),
        ]));
    let error = client
        .message(invalid)
        .await
        .expect_err("a pairing violation");
    assert_eq!(error.status(), Some(400));
    assert!(
        error.message().contains(
            "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_01"
        ),
        "{}",
        error.message()
    );
    assert!(error.request_id().is_some_and(|id| id.starts_with("req_")));

    let keyless = threadline_client::Client::new(threadline_client::ClientConfig::new(
        server.base_url(),
        threadline_client::Auth::None,
    ))
    .expect("a client");
    let error = keyless.message(request()).await.expect_err("no key");
    assert_eq!(error.status(), Some(401));
    assert_eq!(error.message(), "x-api-key header is required");
    // Nothing valid reached the scenario.
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn http2_works_end_to_end() {
    let server = mock([
        tool_like_step(),
        Step::text("second, on the same connection"),
    ])
    .await;
    let config = common::config(&server.base_url()).with_http2_prior_knowledge(true);
    let client = threadline_client::Client::new(config).expect("a client");
    let first = client
        .message(request())
        .await
        .expect("a message over HTTP/2");
    assert_eq!(first.stop_reason, Some(StopReason::ToolUse));
    let second = client
        .message(request())
        .await
        .expect("a message over HTTP/2");
    assert_eq!(second.text(), "second, on the same connection");
    let versions: Vec<_> = server.requests().into_iter().map(|r| r.version).collect();
    assert_eq!(versions, ["HTTP/2.0", "HTTP/2.0"]);
}

fn tool_like_step() -> Step {
    Step::message(vec![
        Block::Text {
            text: "Checking.".into(),
        },
        Block::ToolUse {
            id: None,
            name: "ls".into(),
            input: json!({"path": "."}),
        },
    ])
}

/// A usage model standing in for a cache simulator: the second identical request reads
/// what the first wrote.
struct Caching(std::sync::Mutex<bool>);

impl threadline_mock::UsageModel for Caching {
    fn usage(
        &self,
        _request: &threadline_wire::MessagesRequest,
        request_bytes: usize,
        output_tokens: u64,
    ) -> threadline_wire::Usage {
        let mut seen = self.0.lock().expect("not poisoned");
        let tokens = request_bytes as u64 / 4;
        let (write, read) = if *seen { (0, tokens) } else { (tokens, 0) };
        *seen = true;
        threadline_wire::Usage::new()
            .with_input_tokens(3)
            .with_output_tokens(output_tokens)
            .with_cache_creation_input_tokens(write)
            .with_cache_read_input_tokens(read)
    }
}

#[tokio::test]
async fn usage_comes_from_the_pluggable_model_and_bearer_auth_is_accepted() {
    let config =
        threadline_mock::MockConfig::new(Scenario::new([Step::text("cached")]).repeating_last())
            .with_usage_model(std::sync::Arc::new(Caching(std::sync::Mutex::new(false))));
    let server = MockServer::start_with(config)
        .await
        .expect("the mock starts");
    let key = threadline_client::ApiKey::new("a-bearer-token").expect("a valid token");
    let client = threadline_client::Client::new(
        common::config(&server.base_url()).with_auth(threadline_client::Auth::Bearer(key)),
    )
    .expect("a client");
    let first = client.message(request()).await.expect("a message");
    let second = client.message(request()).await.expect("a message");
    let first = first.usage.expect("usage");
    let second = second.usage.expect("usage");
    assert!(first.cache_creation_input_tokens > Some(0));
    assert_eq!(first.cache_read_input_tokens, Some(0));
    assert_eq!(
        second.cache_read_input_tokens,
        first.cache_creation_input_tokens
    );
    let recorded = server.requests();
    assert_eq!(recorded[0].headers["authorization"], "[redacted]");
    assert!(!recorded[0].headers.contains_key("x-api-key"));
}

#[tokio::test]
async fn the_mock_reports_the_cache_reads_a_marked_prefix_earns() {
    let server = mock([Step::text("Read it."), Step::text("Still here.")]).await;
    let client = client(&server.base_url());
    let long = "The repository, read once and marked for the cache. ".repeat(1_000);
    let first: threadline_wire::MessagesRequest = serde_json::from_value(json!({
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}
        ]}],
    }))
    .expect("a request");
    let written = client
        .message(first.clone())
        .await
        .expect("a message")
        .usage
        .expect("usage");
    let creation = written.cache_creation_input_tokens.expect("reported");
    assert!(creation > 5_000, "{written:?}");
    assert_eq!(written.cache_read_input_tokens, Some(0));

    let mut second = first;
    second
        .messages
        .push(threadline_wire::MessageParam::assistant(vec![
            ContentBlock::text("Read it."),
        ]));
    second
        .messages
        .push(threadline_wire::MessageParam::user(vec![
            ContentBlock::text("Go on."),
        ]));
    let read = client
        .message(second)
        .await
        .expect("a message")
        .usage
        .expect("usage");
    assert_eq!(read.cache_read_input_tokens, Some(creation), "{read:?}");
}

#[tokio::test]
async fn each_request_names_the_betas_its_body_needs_and_only_those() {
    let server = MockServer::start(Scenario::new([Step::text("one"), Step::text("two")]))
        .await
        .expect("the mock starts");
    let configured = common::config(&server.base_url()).with_beta("files-api-2025-04-14");
    let client = threadline_client::Client::new(configured).expect("a client");
    let plain = request();
    let mut compacting = request();
    compacting.context_management = Some(
        serde_json::from_value(json!({"edits": [{"type": "compact_20260112"}]})).expect("an edit"),
    );
    for body in [plain, compacting.clone()] {
        collect_message(client.stream(body).await.expect("a stream"))
            .await
            .expect("a message");
    }
    let count: CountTokensRequest = (&compacting).into();
    client.count_tokens(&count).await.expect("a count");
    let betas: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.headers.get("anthropic-beta").cloned())
        .collect();
    assert_eq!(
        betas,
        vec![
            Some("files-api-2025-04-14".to_owned()),
            Some("files-api-2025-04-14,compact-2026-01-12".to_owned()),
            Some("files-api-2025-04-14,compact-2026-01-12".to_owned()),
        ]
    );
}

/// A body over the client's bound (the API's 32 MiB by default; 50 kB here) is not sent: it
/// fails as the API would answer it, 413 `request_too_large`, and the server sees nothing.
#[tokio::test]
async fn a_body_over_the_limit_is_not_sent_and_fails_as_the_api_would() {
    let server = mock([Step::text("never")]).await;
    let config = common::config(&server.base_url()).with_max_request_bytes(50_000);
    let client = threadline_client::Client::new(config).expect("a valid configuration");
    let mut large = request();
    large.messages = vec![threadline_wire::MessageParam::user(vec![
        ContentBlock::text("x".repeat(60_000)),
    ])]
    .into();
    let error = client.message(large).await.expect_err("over the bound");
    assert!(
        error.is_request_too_large() && error.is_too_large(),
        "{error}"
    );
    assert_eq!(error.status(), Some(413));
    assert!(error.message().contains("not sent"), "{error}");
    assert_eq!(server.request_count(), 0);
    // Under the bound, the same client sends.
    let answer = client.message(request()).await.expect("a message");
    assert_eq!(answer.text(), "never");
}
