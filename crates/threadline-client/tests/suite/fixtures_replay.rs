//! Every recorded response in `fixtures/canonical`, replayed byte for byte by the mock and
//! read by the client over loopback, accumulates to what the recording accumulates to.

use crate::common;

use common::{client, drain, request};
use threadline_mock::{FixtureStep, MockServer, Scenario, Step};
use threadline_testkit::fixtures;
use threadline_wire::accumulate::MessageAccumulator;
use threadline_wire::message_stream::read_message;

#[tokio::test]
async fn every_recorded_stream_reads_as_recorded() {
    let streams = fixtures::sse_streams();
    assert!(streams.len() >= 20, "found {} streams", streams.len());
    let server = MockServer::start(Scenario::new(
        streams.iter().map(|(_, sse)| Step::replay_sse(sse.clone())),
    ))
    .await
    .expect("the mock starts");
    let client = client(&server.base_url());
    for (name, sse) in &streams {
        let expected = read_message(sse.as_bytes());
        let stream = client.stream(request()).await;
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => panic!("{name}: {error}"),
        };
        let (events, error) = drain(stream).await;
        let mut accumulator = MessageAccumulator::new();
        for event in &events {
            accumulator
                .push(event)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        match expected {
            Ok(message) => {
                assert!(error.is_none(), "{name}: {error:?}");
                assert_eq!(accumulator.finish().as_ref(), Ok(&message), "{name}");
            }
            Err(expected) => {
                // The recording is incomplete (cut by max_tokens inside a tool use): the client
                // says so with a typed error, and the events it delivered accumulate to the
                // same partial message.
                let error = error.unwrap_or_else(|| panic!("{name}: expected an error"));
                assert!(error.is_max_tokens(), "{name}: {error}");
                assert!(error.events_delivered() && !error.is_retryable());
                let partial = accumulator.finish().expect_err("incomplete").partial;
                assert_eq!(partial.as_deref(), expected.partial(), "{name}");
            }
        }
    }
    assert_eq!(server.request_count(), streams.len());
}

#[tokio::test]
async fn every_recorded_json_response_reads_as_recorded() {
    let responses = fixtures::json_responses();
    let server =
        MockServer::start(Scenario::new(responses.iter().map(|(_, status, body)| {
            Step::Fixture(FixtureStep::json(*status, body.clone()))
        })))
        .await
        .expect("the mock starts");
    // No retries: every recorded response is answered to exactly one request.
    let client = threadline_client::Client::new(
        common::config(&server.base_url()).with_retry(threadline_client::RetryConfig::none()),
    )
    .expect("a client");
    let mut messages = 0;
    let mut errors = 0;
    for (name, status, body) in &responses {
        let status = status.unwrap_or(200);
        let result = client.message(request()).await;
        if status >= 400 {
            let error = result.expect_err(name);
            assert_eq!(error.status(), Some(status), "{name}");
            assert_eq!(
                Some(error.message()),
                body["error"]["message"].as_str(),
                "{name}"
            );
            errors += 1;
        } else if body.get("type").and_then(|t| t.as_str()) == Some("message") {
            let message = result.unwrap_or_else(|e| panic!("{name}: {e}"));
            let expected: threadline_wire::ResponseMessage =
                serde_json::from_value(body.clone()).expect("a recorded message");
            assert_eq!(message, expected, "{name}");
            messages += 1;
        }
        // Other 200 bodies (count_tokens answers) are not messages; the request still happened.
    }
    assert!(
        messages >= 10 && errors >= 3,
        "{messages} messages, {errors} errors"
    );
}
