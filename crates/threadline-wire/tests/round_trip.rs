//! parse → serialize → parse is the identity: for every recorded request, response and stream
//! event, and for generated values with unknown types and fields.

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use threadline_testkit::{fixtures, strategies};
use threadline_wire::sse::SseDecoder;
use threadline_wire::{
    ApiErrorResponse, ContentBlock, CountTokensRequest, Message, MessageParam, MessagesRequest,
    StreamEvent, Tool,
};

/// Parses `value` as `T`, serializes it back, and checks both the JSON and a second parse.
fn assert_round_trip<T>(what: &str, value: &Value) -> T
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let parsed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{what}: does not parse: {e}"));
    let written = serde_json::to_value(&parsed).expect("serializes");
    assert_eq!(&written, value, "{what}: JSON changed in the round trip");
    // From text too, the path real traffic takes.
    let reparsed: T = serde_json::from_str(&serde_json::to_string(&parsed).expect("serializes"))
        .unwrap_or_else(|e| panic!("{what}: does not reparse: {e}"));
    assert_eq!(reparsed, parsed, "{what}: second parse differs");
    parsed
}

#[test]
fn recorded_requests_round_trip() {
    let requests = fixtures::recorded_requests();
    assert!(requests.len() >= 40, "found {}", requests.len());
    for (name, request) in requests {
        if request.endpoint.ends_with("count_tokens") {
            assert_round_trip::<CountTokensRequest>(&name, &request.body);
        } else {
            assert_round_trip::<MessagesRequest>(&name, &request.body);
        }
    }
}

#[test]
fn recorded_json_responses_round_trip() {
    let mut messages = 0;
    let mut errors = 0;
    for (name, status, body) in fixtures::json_responses() {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            let error: ApiErrorResponse = assert_round_trip(&name, &body);
            if let Some(status) = status {
                assert_eq!(error.error.kind.http_status(), status, "{name}");
            }
            errors += 1;
        } else if body.get("input_tokens").is_some() && body.get("content").is_none() {
            assert_round_trip::<threadline_wire::request::CountTokensResponse>(&name, &body);
        } else {
            let message: Message = assert_round_trip(&name, &body);
            assert!(!message.id.is_empty(), "{name}");
            messages += 1;
        }
    }
    assert!(
        messages >= 30 && errors >= 4,
        "{messages} messages, {errors} errors"
    );
}

#[test]
fn recorded_stream_events_round_trip() {
    let mut events = 0;
    for (name, sse) in fixtures::sse_streams() {
        for decoded in SseDecoder::decode_all(sse.as_bytes()) {
            let Ok(decoded) = decoded else { continue };
            let data: Value = serde_json::from_str(&decoded.data)
                .unwrap_or_else(|e| panic!("{name}: event data is not JSON: {e}"));
            let event: StreamEvent = assert_round_trip(&name, &data);
            assert!(
                !matches!(event, StreamEvent::Unknown(_)),
                "{name}: unknown event {data}"
            );
            events += 1;
        }
    }
    assert!(events > 1000, "only {events} events");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_requests_round_trip(request in strategies::messages_request()) {
        assert_round_trip::<MessagesRequest>("generated request", &request);
    }

    #[test]
    fn generated_blocks_round_trip(block in strategies::content_block()) {
        let parsed: ContentBlock = assert_round_trip("generated block", &block);
        let tag = block["type"].as_str().unwrap_or_default();
        prop_assert_eq!(parsed.tag(), tag);
        // Unknown types are kept whole, known ones are typed.
        prop_assert_eq!(matches!(parsed, ContentBlock::Unknown(_)), tag.starts_with("future_"));
    }

    #[test]
    fn generated_messages_round_trip(message in strategies::message_param()) {
        assert_round_trip::<MessageParam>("generated message", &message);
    }

    #[test]
    fn generated_tools_round_trip(tool in strategies::tool()) {
        assert_round_trip::<Tool>("generated tool", &tool);
    }

    #[test]
    fn generated_events_round_trip(event in strategies::stream_event()) {
        assert_round_trip::<StreamEvent>("generated event", &event);
    }
}
