//! Each fault the mock injects surfaces as the right typed error with the right predicates, and
//! the client retries exactly when it should: counted in requests the mock received.

use crate::common;

use std::time::{Duration, Instant};

use common::{client, config, mock, request, stall_config, stream_request};
use serde_json::json;
use threadline_client::{Client, RetryConfig};
use threadline_mock::{Block, MockServer, Scenario, Step, StreamFault};
use threadline_wire::service::ServiceErrorKind;
use threadline_wire::{StopReason, StreamEvent};

fn no_retry(server: &MockServer) -> Client {
    Client::new(config(&server.base_url()).with_retry(RetryConfig::none())).expect("a client")
}

fn tool_step() -> Step {
    Step::message(vec![
        Block::Text {
            text: "Reading the file.".into(),
        },
        Block::ToolUse {
            id: None,
            name: "read_file".into(),
            input: json!({"path": "src/lib.rs", "range": {"start": 1, "end": 400}}),
        },
    ])
    .with_chunk_chars(6)
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let server = mock([Step::rate_limited(0.2), Step::text("after the wait")]).await;
    let started = Instant::now();
    let message = client(&server.base_url())
        .message(request())
        .await
        .expect("retried");
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "honoured retry-after"
    );
    assert_eq!(message.text(), "after the wait");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn rate_limit_error_when_retries_run_out() {
    let server = mock([
        Step::rate_limited(0.01),
        Step::rate_limited(0.01),
        Step::rate_limited(0.01),
        Step::text("x"),
    ])
    .await;
    let error = client(&server.base_url())
        .message(request())
        .await
        .expect_err("three 429s");
    assert_eq!(server.request_count(), 3, "one attempt and two retries");
    assert!(error.is_rate_limit() && error.is_retryable());
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_millis(10)));
    assert!(error.request_id().is_some());
}

#[tokio::test]
async fn a_retry_after_longer_than_allowed_is_not_waited_for() {
    let server = mock([Step::rate_limited(3600.0), Step::text("x")]).await;
    // A cap far above the bound below: a client that waited the cap out would fail it.
    let config = config(&server.base_url())
        .with_retry(RetryConfig::default().with_max_retry_after(Duration::from_secs(60)));
    let started = Instant::now();
    let error = Client::new(config)
        .expect("a client")
        .message(request())
        .await
        .expect_err("gives up");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(error.is_rate_limit());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn overloaded_and_internal_errors() {
    let server = mock([Step::overloaded(), Step::internal_error()]).await;
    let client = no_retry(&server);
    let overloaded = client.message(request()).await.expect_err("529");
    assert!(overloaded.is_overloaded() && overloaded.is_retryable());
    assert_eq!(overloaded.status(), Some(529));
    assert_eq!(overloaded.message(), "Overloaded");
    let internal = client.message(request()).await.expect_err("500");
    assert_eq!(internal.status(), Some(500));
    assert!(internal.is_retryable() && !internal.is_overloaded());
    assert_eq!(server.request_count(), 2);

    let server = mock([
        Step::overloaded(),
        Step::internal_error(),
        Step::text("third time"),
    ])
    .await;
    let message = common::client(&server.base_url())
        .message(request())
        .await
        .expect("retried twice");
    assert_eq!(message.text(), "third time");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn should_retry_false_is_obeyed() {
    let server = mock([
        Step::internal_error().with_should_retry(false),
        Step::text("x"),
    ])
    .await;
    let error = client(&server.base_url())
        .message(request())
        .await
        .expect_err("not retried");
    assert!(!error.is_retryable());
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn prompt_too_long_says_by_how_much_and_is_not_retried() {
    let server = mock([Step::prompt_too_long(213_462, 200_000), Step::text("x")]).await;
    let error = client(&server.base_url())
        .message(request())
        .await
        .expect_err("400");
    assert_eq!(error.status(), Some(400));
    assert_eq!(error.prompt_too_long(), Some((213_462, 200_000)));
    assert!(!error.is_retryable());
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_max_tokens_stop_is_a_message_and_a_cut_tool_use_is_an_error() {
    let server = mock([
        Step::text("This answer was cut").with_stop_reason("max_tokens"),
        Step::Fixture(threadline_mock::FixtureStep::sse(
            threadline_testkit::fixtures::fixture(
                "anthropics__anthropic-sdk-python/incomplete_partial_json_response",
            )
            .exchanges[0]
                .response
                .body
                .as_sse()
                .expect("an SSE body"),
        )),
    ])
    .await;
    let client = client(&server.base_url());
    let message = client.message(request()).await.expect("a complete message");
    assert_eq!(message.stop_reason, Some(StopReason::MaxTokens));

    let (events, error) = stream_request(&client).await;
    let error = error.expect("max_tokens inside a tool use");
    assert!(error.is_max_tokens(), "{error}");
    assert_eq!(error.kind(), ServiceErrorKind::MaxTokens);
    assert!(error.events_delivered() && !error.is_retryable());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::MessageDelta(_)))
    );
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_stream_cut_inside_a_tool_input_is_truncated_and_never_resent() {
    let server = mock([
        tool_step().with_fault(StreamFault::CutInToolInput),
        Step::text("never"),
    ])
    .await;
    let (events, error) = stream_request(&client(&server.base_url())).await;
    let error = error.expect("a cut stream");
    assert_eq!(error.kind(), ServiceErrorKind::Truncated, "{error}");
    assert!(
        error.message().contains("inside block 1 (`tool_use`)"),
        "{error}"
    );
    assert!(error.events_delivered() && !error.is_retryable());
    let json_deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ContentBlockDelta(d) if matches!(d.delta, threadline_wire::ContentDelta::InputJson(_))))
        .count();
    assert!(json_deltas >= 2, "part of the input arrived");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::MessageStop(_)))
    );
    assert_eq!(
        server.request_count(),
        1,
        "output was delivered: never resent"
    );
}

#[tokio::test]
async fn a_body_that_ends_inside_a_block_is_truncated() {
    let sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"ls\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"pa\"}}\n\n";
    let server = mock([Step::replay_sse(sse), Step::text("never")]).await;
    let (events, error) = stream_request(&client(&server.base_url())).await;
    let error = error.expect("truncated");
    assert_eq!(error.kind(), ServiceErrorKind::Truncated);
    assert!(error.message().contains("block 0 (`tool_use`)"), "{error}");
    assert!(error.events_delivered() && !error.is_retryable());
    assert_eq!(events.len(), 3);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_mid_stream_error_event_is_an_api_error_and_never_resent() {
    let fault = StreamFault::ErrorEvent {
        after_events: 4,
        error_type: None,
        message: None,
    };
    let server = mock([tool_step().with_fault(fault), Step::text("never")]).await;
    let (events, error) = stream_request(&client(&server.base_url())).await;
    let error = error.expect("an error event");
    assert_eq!(error.kind(), ServiceErrorKind::Api);
    assert!(error.is_overloaded(), "{error}");
    assert_eq!(error.status(), None);
    assert!(error.events_delivered() && !error.is_retryable());
    assert!(error.request_id().is_some());
    assert_eq!(events.len(), 4);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn an_error_event_before_any_output_is_retried() {
    let fault = StreamFault::ErrorEvent {
        after_events: 0,
        error_type: None,
        message: None,
    };
    let server = mock([Step::text("x").with_fault(fault), Step::text("second try")]).await;
    let message = client(&server.base_url())
        .message(request())
        .await
        .expect("retried");
    assert_eq!(message.text(), "second try");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_slow_stream_within_the_idle_limit_completes() {
    // 11 events 300 ms apart: 3 s in all, longer than the 2 s idle limit, which holds
    // between two events and not for the whole stream.
    let idle = Duration::from_secs(2);
    let server = mock([Step::text("slowly but surely")
        .with_chunk_chars(4)
        .with_delay_ms(300)])
    .await;
    let config = config(&server.base_url()).with_timeouts(
        Duration::from_secs(2),
        Duration::from_secs(5),
        idle,
    );
    let started = Instant::now();
    let message = Client::new(config)
        .expect("a client")
        .message(request())
        .await
        .expect("a message");
    assert_eq!(message.text(), "slowly but surely");
    assert!(
        started.elapsed() > idle,
        "the events were spread out over more than the idle limit"
    );
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let server = mock([
        tool_step().with_fault(StreamFault::Stall { after_events: 5 }),
        Step::text("never"),
    ])
    .await;
    let client = Client::new(stall_config(&server.base_url())).expect("a client");
    let started = Instant::now();
    let (events, error) = stream_request(&client).await;
    let error = error.expect("an idle timeout");
    assert_eq!(error.kind(), ServiceErrorKind::Timeout);
    assert!(error.message().contains("next event"), "{error}");
    assert!(error.events_delivered() && !error.is_retryable());
    assert_eq!(events.len(), 5);
    let elapsed = started.elapsed();
    assert!(
        elapsed >= common::STALL_IDLE && elapsed < 10 * common::STALL_IDLE,
        "{elapsed:?}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn no_first_event_in_time_is_a_retryable_timeout() {
    let server = mock([
        Step::text("x").with_fault(StreamFault::Stall { after_events: 0 }),
        Step::text("x").with_fault(StreamFault::Stall { after_events: 0 }),
        Step::text("in time"),
    ])
    .await;
    // The third answer must beat the first-event timeout: 2 s, far beyond a loopback answer.
    let config = config(&server.base_url()).with_timeouts(
        Duration::from_secs(2),
        Duration::from_secs(2),
        Duration::from_secs(5),
    );
    let client = Client::new(config).expect("a client");
    let message = client.message(request()).await.expect("third attempt");
    assert_eq!(message.text(), "in time");
    assert_eq!(server.request_count(), 3);

    let server = mock([Step::text("x").with_fault(StreamFault::Stall { after_events: 0 })]).await;
    // Nothing answers here: the short first-event timeout only ever detects the stall.
    let config = common::config(&server.base_url())
        .with_timeouts(
            Duration::from_secs(2),
            Duration::from_millis(400),
            Duration::from_secs(5),
        )
        .with_retry(RetryConfig::none());
    let error = Client::new(config)
        .expect("a client")
        .message(request())
        .await
        .expect_err("timeout");
    assert_eq!(error.kind(), ServiceErrorKind::Timeout);
    assert!(error.is_retryable() && !error.events_delivered());
}

#[tokio::test]
async fn a_reset_before_the_first_byte_is_retried() {
    let server = mock([Step::Reset, Step::text("after the reset")]).await;
    let message = client(&server.base_url())
        .message(request())
        .await
        .expect("retried");
    assert_eq!(message.text(), "after the reset");
    assert_eq!(server.request_count(), 2);

    let server = mock([Step::Reset]).await;
    let error = no_retry(&server)
        .message(request())
        .await
        .expect_err("reset");
    assert_eq!(error.kind(), ServiceErrorKind::Connection, "{error}");
    assert!(error.is_retryable() && !error.events_delivered());
}

#[tokio::test]
async fn nothing_listening_is_a_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("an address");
    drop(listener);
    let client = Client::new(config(&format!("http://{addr}")).with_retry(RetryConfig::none()))
        .expect("a client");
    let error = client.message(request()).await.expect_err("refused");
    assert_eq!(error.kind(), ServiceErrorKind::Connection);
    assert!(error.message().starts_with("cannot connect"), "{error}");
}

#[tokio::test]
async fn the_concurrency_limit_holds_a_slot_until_the_stream_ends() {
    let server = MockServer::start(Scenario::new([Step::text("hello")]).repeating_last())
        .await
        .expect("the mock starts");
    let client =
        Client::new(config(&server.base_url()).with_max_concurrent_requests(1)).expect("a client");
    let first = client.stream(request()).await.expect("a stream");
    let second = tokio::time::timeout(Duration::from_millis(200), client.stream(request())).await;
    assert!(
        second.is_err(),
        "the second request waits for the first stream"
    );
    assert_eq!(server.request_count(), 1);
    drop(first);
    let second = tokio::time::timeout(Duration::from_secs(10), client.stream(request()))
        .await
        .expect("a free slot");
    assert!(second.is_ok());
    assert_eq!(server.request_count(), 2);
}

/// A server that accepts connections and reads requests but never answers.
async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let address = listener.local_addr().expect("an address");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (format!("http://{address}"), task)
}

#[tokio::test]
async fn a_count_that_never_answers_times_out() {
    let (base_url, server) = silent_server().await;
    let config = config(&base_url).with_timeouts(
        Duration::from_secs(2),
        Duration::from_millis(300),
        Duration::from_secs(2),
    );
    let body: threadline_wire::CountTokensRequest = serde_json::from_value(json!({
        "model": "claude-sonnet-4-6",
        "messages": [{"role": "user", "content": "How many tokens is this?"}]
    }))
    .expect("a valid body");
    let client = Client::new(config).expect("a client");
    // The bound only stops a hung test: the count's own limit is 300 ms.
    let error = tokio::time::timeout(Duration::from_secs(20), client.count_tokens(&body))
        .await
        .expect("the count gives up by itself")
        .expect_err("nothing answered");
    assert_eq!(error.kind(), ServiceErrorKind::Timeout);
    assert!(error.message().contains("300ms"), "{error}");
    server.abort();
}

#[tokio::test]
async fn an_idle_limit_too_long_to_represent_is_no_limit() {
    // Events 50 ms apart: the client waits on the network between two of them.
    let server = mock([Step::text("patiently")
        .with_chunk_chars(3)
        .with_delay_ms(50)])
    .await;
    let config = config(&server.base_url()).with_timeouts(
        Duration::from_secs(2),
        Duration::from_secs(5),
        Duration::MAX,
    );
    let client = Client::new(config).expect("a client");
    let message = client.message(request()).await.expect("a whole message");
    assert_eq!(message.text(), "patiently");
}
