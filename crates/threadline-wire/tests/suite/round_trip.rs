//! parse → serialize → parse is the identity: for every recorded request, response and stream
//! event, and for generated values with unknown types and fields.

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use threadline_testkit::{fixtures, strategies};
use threadline_wire::sse::SseDecoder;
use threadline_wire::{
    ApiErrorResponse, ContentBlock, CountTokensRequest, FallbackBlock, Fallbacks, MessageParam,
    MessagesRequest, ResponseMessage, StopDetails, StopReason, StreamEvent, ToolDefinition,
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
fn fallbacks_requests_round_trip() {
    let base = serde_json::json!({"model": "claude-opus-5", "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hi"}]});
    let mut default = base.clone();
    default["fallbacks"] = "default".into();
    let parsed = assert_round_trip::<MessagesRequest>("fallbacks: default", &default);
    assert_eq!(parsed.fallbacks, Some(Fallbacks::Default));

    let mut list = base.clone();
    list["fallbacks"] = serde_json::json!([
        {"model": "claude-sonnet-5", "max_tokens": 2048, "thinking": {"type": "adaptive"},
            "output_config": {"effort": "high"}, "speed": "fast"},
        {"model": "claude-haiku-5", "future": 1}
    ]);
    let parsed = assert_round_trip::<MessagesRequest>("fallbacks: list", &list);
    let Some(Fallbacks::List(entries)) = parsed.fallbacks else {
        panic!("a list");
    };
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].model, "claude-sonnet-5");
    assert_eq!(entries[0].max_tokens, Some(2048));
    assert_eq!(entries[0].speed.as_deref(), Some("fast"));

    // A shape this version does not know is kept.
    let mut other = base;
    other["fallbacks"] = serde_json::json!({"chain": "x"});
    let parsed = assert_round_trip::<MessagesRequest>("fallbacks: other", &other);
    assert!(matches!(parsed.fallbacks, Some(Fallbacks::Other(_))));
}

#[test]
fn refusal_and_fallback_responses_round_trip() {
    let refusal = serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "model": "claude-opus-5", "stop_reason": "refusal", "stop_sequence": null,
        "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Declined.",
            "fallback_credit_token": "tok", "fallback_has_prefill_claim": null,
            "recommended_model": null},
        "usage": {"input_tokens": 10, "output_tokens": 0}});
    let parsed = assert_round_trip::<ResponseMessage>("refusal", &refusal);
    assert_eq!(parsed.stop_reason, Some(StopReason::Refusal));
    let details: StopDetails = parsed.typed_stop_details().expect("typed");
    assert_eq!(details.category.as_deref(), Some("cyber"));
    assert_eq!(details.fallback_credit_token.as_deref(), Some("tok"));

    let block = serde_json::json!({"type": "fallback", "from": {"model": "claude-opus-5"},
        "to": {"model": "claude-sonnet-5-20260801"},
        "trigger": {"type": "refusal", "category": "cyber"}});
    let served = serde_json::json!({"id": "msg_2", "type": "message", "role": "assistant",
        "content": [block.clone(), {"type": "text", "text": "Served."}],
        "model": "claude-sonnet-5-20260801", "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 3, "iterations": [
            {"type": "message", "model": "claude-opus-5", "input_tokens": 10, "output_tokens": 0},
            {"type": "fallback_message", "model": "claude-sonnet-5-20260801",
                "input_tokens": 10, "output_tokens": 3}]}});
    let parsed = assert_round_trip::<ResponseMessage>("fallback", &served);
    let typed = FallbackBlock::of(&parsed.content[0]).expect("a fallback block");
    assert_eq!(typed.from.model, "claude-opus-5");
    assert_eq!(typed.to.model, "claude-sonnet-5-20260801");
    assert_eq!(FallbackBlock::of(&parsed.content[1]), None);
    assert_round_trip::<ContentBlock>("fallback block", &block);
    assert_round_trip::<FallbackBlock>("typed fallback block", &block);

    let cut = serde_json::json!({"id": "msg_3", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "cut"}], "model": "claude-sonnet-4-5",
        "stop_reason": "model_context_window_exceeded", "stop_sequence": null});
    let parsed = assert_round_trip::<ResponseMessage>("window exceeded", &cut);
    assert_eq!(
        parsed.stop_reason,
        Some(StopReason::ModelContextWindowExceeded)
    );
}

#[test]
fn cache_diagnostics_round_trip_in_requests_responses_and_streams() {
    use threadline_wire::accumulate::MessageAccumulator;
    use threadline_wire::diagnostics::{CacheDiagnosis, CacheMissReason, DiagnosticsParam};
    let base = serde_json::json!({"model": "claude-opus-4-6", "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hi"}]});
    // `null` opts in on the first turn and must be written as `null`.
    let mut first = base.clone();
    first["diagnostics"] = serde_json::json!({"previous_message_id": null});
    let parsed = assert_round_trip::<MessagesRequest>("diagnostics: null", &first);
    assert_eq!(parsed.diagnostics, Some(DiagnosticsParam::first()));
    let mut built = MessagesRequest::new(
        "claude-opus-4-6",
        1024,
        vec![MessageParam::user(vec![ContentBlock::text("hi")])],
    );
    built.diagnostics = Some(DiagnosticsParam::first());
    assert_eq!(
        serde_json::to_value(&built).expect("serializes")["diagnostics"],
        serde_json::json!({"previous_message_id": null})
    );
    let mut next = base;
    next["diagnostics"] = serde_json::json!({"previous_message_id": "msg_01"});
    let parsed = assert_round_trip::<MessagesRequest>("diagnostics: id", &next);
    assert_eq!(parsed.diagnostics, Some(DiagnosticsParam::after("msg_01")));

    // The four shapes of a response's `diagnostics`, and unknown reasons, round-trip.
    let message = serde_json::json!({"id": "msg_2", "type": "message", "role": "assistant",
        "content": [], "model": "claude-opus-4-6", "stop_reason": "end_turn",
        "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}});
    let shapes: [(Option<Value>, CacheDiagnosis); 6] = [
        (None, CacheDiagnosis::Absent),
        (Some(Value::Null), CacheDiagnosis::NoDivergence),
        (
            Some(serde_json::json!({"cache_miss_reason": null})),
            CacheDiagnosis::Pending,
        ),
        (
            Some(serde_json::json!({"cache_miss_reason":
                {"type": "system_changed", "cache_missed_input_tokens": 4096}})),
            CacheDiagnosis::Miss(CacheMissReason::changed("system_changed", Some(4096))),
        ),
        (
            Some(serde_json::json!({"cache_miss_reason": {"type": "previous_message_not_found"}})),
            CacheDiagnosis::Miss(CacheMissReason::previous_message_not_found()),
        ),
        (
            Some(serde_json::json!({"cache_miss_reason": {"type": "unavailable"}})),
            CacheDiagnosis::Miss(CacheMissReason::unavailable()),
        ),
    ];
    for (diagnostics, expected) in shapes {
        let mut body = message.clone();
        if let Some(d) = &diagnostics {
            body["diagnostics"] = d.clone();
        }
        let parsed = assert_round_trip::<ResponseMessage>("diagnostics", &body);
        assert_eq!(parsed.cache_diagnosis(), expected, "{diagnostics:?}");

        // Streaming: on `message_start`, kept by the accumulator.
        let mut start_message = message.clone();
        start_message["stop_reason"] = Value::Null;
        if let Some(d) = &diagnostics {
            start_message["diagnostics"] = d.clone();
        }
        let events = [
            serde_json::json!({"type": "message_start", "message": start_message}),
            serde_json::json!({"type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                "usage": {"output_tokens": 1}}),
            serde_json::json!({"type": "message_stop"}),
        ];
        let mut acc = MessageAccumulator::new();
        for event in &events {
            let event = assert_round_trip::<StreamEvent>("diagnostics event", event);
            acc.push(&event).expect("accumulates");
        }
        let streamed = acc.finish().expect("complete");
        assert_eq!(
            streamed.cache_diagnosis(),
            expected,
            "streamed {diagnostics:?}"
        );
        assert_eq!(
            serde_json::to_value(&streamed).expect("serializes"),
            body,
            "streamed"
        );
    }
    let mut unknown = message;
    unknown["diagnostics"] =
        serde_json::json!({"cache_miss_reason": {"type": "region_changed", "n": 1}});
    let parsed = assert_round_trip::<ResponseMessage>("unknown reason", &unknown);
    let CacheDiagnosis::Miss(reason) = parsed.cache_diagnosis() else {
        panic!("a miss");
    };
    assert_eq!(reason.tag(), "region_changed");
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
            let message: ResponseMessage = assert_round_trip(&name, &body);
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
        assert_round_trip::<ToolDefinition>("generated tool", &tool);
    }

    #[test]
    fn generated_events_round_trip(event in strategies::stream_event()) {
        assert_round_trip::<StreamEvent>("generated event", &event);
    }
}

#[test]
fn adaptive_thinking_display_and_task_budgets_round_trip_typed() {
    use threadline_wire::ThinkingConfig;
    use threadline_wire::request::ThinkingDisplay;
    let body = serde_json::json!({
        "model": "claude-opus-4-8", "max_tokens": 2048,
        "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "xhigh", "task_budget": {"type": "tokens", "total": 64000, "remaining": 12000}},
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "EqQBCgIYAhIM"}, {"type": "text", "text": "Hello."}]},
            {"role": "user", "content": "Again"},
            {"role": "system", "content": [{"type": "tool_addition", "tool": {"type": "tool_reference", "name": "deploy"}}]}
        ]
    });
    let request: MessagesRequest = assert_round_trip("adaptive + task budget", &body);
    let thinking = request.thinking.as_ref().expect("thinking");
    assert_eq!(thinking.display(), Some(&ThinkingDisplay::Omitted));
    assert_eq!(
        ThinkingConfig::adaptive(Some(ThinkingDisplay::Summarized)),
        serde_json::from_str(r#"{"type":"adaptive","display":"summarized"}"#).expect("parses")
    );
    let budget = request
        .output_config
        .as_ref()
        .and_then(|c| c.task_budget.as_ref())
        .expect("a task budget");
    assert_eq!(
        (budget.kind.as_str(), budget.total, budget.remaining),
        ("tokens", 64000, Some(12000))
    );
    // `updates` (beta `thinking-display-updates-2026-08-18`) is known.
    let updates: ThinkingConfig = assert_round_trip(
        "updates display",
        &serde_json::json!({"type": "adaptive", "display": "updates"}),
    );
    assert_eq!(updates.display(), Some(&ThinkingDisplay::Updates));
    // A display value from the future is kept as it came.
    let future: ThinkingConfig = assert_round_trip(
        "future display",
        &serde_json::json!({"type": "adaptive", "display": "verbose"}),
    );
    assert_eq!(
        future.display(),
        Some(&ThinkingDisplay::Other("verbose".to_owned()))
    );
}

#[test]
fn compaction_blocks_round_trip_with_null_and_encrypted_content() {
    for block in [
        serde_json::json!({"type": "compaction", "content": "<summary>s</summary>"}),
        serde_json::json!({"type": "compaction", "content": null}),
        serde_json::json!({"type": "compaction", "content": null, "encrypted_content": "E=="}),
        serde_json::json!({"type": "compaction", "content": "s", "encrypted_content": "E==",
            "cache_control": {"type": "ephemeral"}}),
    ] {
        let parsed = assert_round_trip::<ContentBlock>("compaction block", &block);
        // `null` stays `null`: it is not dropped as absent.
        let written = serde_json::to_value(&parsed).expect("serializes");
        assert_eq!(written.get("content"), block.get("content"));
        assert!(
            written
                .as_object()
                .is_some_and(|o| o.contains_key("content"))
        );
    }
    // In a response, with the iterations of the recorded exchange.
    let response = serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "compaction", "content": null, "encrypted_content": "E=="},
            {"type": "text", "text": "ok"}],
        "model": "claude-sonnet-4-6", "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 162, "output_tokens": 11, "iterations": [
            {"type": "compaction", "input_tokens": 99195, "output_tokens": 81,
                "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
            {"type": "message", "input_tokens": 162, "output_tokens": 11,
                "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}]}});
    let parsed = assert_round_trip::<ResponseMessage>("compaction response", &response);
    let usage = parsed.usage.expect("usage");
    assert_eq!(usage.billed().input_tokens, Some(99_357));
    assert_eq!(usage.billed().output_tokens, Some(92));
    assert_eq!(usage.context_tokens(), 162);
}

#[test]
fn a_streamed_compaction_keeps_null_content_and_the_message_pass_usage() {
    let events = [
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","usage":{"input_tokens":100,"cache_read_input_tokens":55096,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"compaction","content":null}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"compaction_delta","content":null,"encrypted_content":"E=="}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"compaction","stop_sequence":null},"usage":{"input_tokens":181,"cache_read_input_tokens":0,"output_tokens":9,"iterations":[{"type":"compaction","input_tokens":100,"cache_read_input_tokens":55096,"output_tokens":50},{"type":"message","input_tokens":181,"cache_read_input_tokens":0,"output_tokens":9}]}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let mut acc = threadline_wire::accumulate::MessageAccumulator::new();
    for e in events {
        acc.push(&StreamEvent::from_json(e).expect("parses"))
            .expect("accumulates");
    }
    let message = acc.finish().expect("complete");
    assert_eq!(
        serde_json::to_value(&message.content[0]).expect("serializes"),
        serde_json::json!({"type": "compaction", "content": null, "encrypted_content": "E=="})
    );
    assert_eq!(message.stop_reason, Some(StopReason::Compaction));
    let usage = message.usage.expect("usage");
    // `message_delta` overwrote the compaction pass's figures of `message_start`.
    assert_eq!(usage.input_tokens, Some(181));
    assert_eq!(usage.cache_read_input_tokens, Some(0));
    assert_eq!(usage.context_tokens(), 181);
    assert_eq!(usage.billed().input_tokens, Some(281));
    assert_eq!(usage.billed().cache_read_input_tokens, Some(55_096));
}

/// On-demand compaction (`compact-2026-09-04`): the request field, the signed block in a
/// response and streamed whole (one `content_block_start`, no deltas), kept byte for byte; and
/// `input_transformations` on a response and on `message_start`.
#[test]
fn on_demand_compaction_and_block_binding_round_trip() {
    let request = serde_json::json!({"model": "claude-opus-5-5", "max_tokens": 4096,
        "messages": [
            {"role": "assistant", "content": [{"type": "compaction", "content": "Summary: a", "signature": "EuYBCkQY"}]},
            {"role": "user", "content": "go on"}],
        "thinking": {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
        "compaction": {"type": "summarize", "instructions": "Keep file paths."}});
    let parsed = assert_round_trip::<MessagesRequest>("on-demand compaction request", &request);
    assert_eq!(
        parsed
            .compaction
            .as_ref()
            .and_then(|c| c.instructions.as_deref()),
        Some("Keep file paths.")
    );
    assert_eq!(
        parsed
            .thinking
            .as_ref()
            .and_then(|t| t.prefix_mismatch_behavior()),
        Some(&threadline_wire::PrefixMismatchBehavior::DropBlock)
    );
    let response = serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [{"type": "compaction", "content": "Summary of the conversation: a", "signature": "EuYBCkQY"}],
        "stop_reason": "compaction", "stop_sequence": null,
        "input_transformations": [{"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "prefix_binding_mismatch"}],
        "usage": {"input_tokens": 0, "output_tokens": 0,
            "iterations": [{"type": "compaction", "input_tokens": 144, "output_tokens": 276}]}});
    let parsed = assert_round_trip::<ResponseMessage>("on-demand compaction response", &response);
    let dropped = parsed.input_transformations.as_deref().unwrap_or_default();
    assert_eq!(dropped.len(), 1);
    assert_eq!(
        dropped[0].reason.as_deref(),
        Some("prefix_binding_mismatch")
    );
    assert_eq!(
        parsed.usage.expect("usage").billed().output_tokens,
        Some(276)
    );

    let events = [
        r#"{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[],"model":"claude-opus-5-5","input_transformations":[],"usage":{"input_tokens":0,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"compaction","content":"Summary: b","signature":"SIG"}}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"compaction","stop_sequence":null},"usage":{"input_tokens":0,"output_tokens":0,"iterations":[{"type":"compaction","input_tokens":10,"output_tokens":5}]}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let mut acc = threadline_wire::accumulate::MessageAccumulator::new();
    for e in events {
        acc.push(&StreamEvent::from_json(e).expect("parses"))
            .expect("accumulates");
    }
    let message = acc.finish().expect("complete");
    assert_eq!(
        serde_json::to_value(&message.content[0]).expect("serializes"),
        serde_json::json!({"type": "compaction", "content": "Summary: b", "signature": "SIG"})
    );
    assert_eq!(message.input_transformations, Some(Vec::new()));
    assert_eq!(message.stop_reason, Some(StopReason::Compaction));
}

/// Found by the `request_json` fuzz target: an unknown field holding a number beyond `f64`'s
/// exact range changed in a round trip (serde_json's default float parser is not exact:
/// `4…096e106` read as `3.999999999999999e106`, written as `3.9999999999999995e106`, read
/// back as another value). The workspace enables `float_roundtrip`, so a parsed number is
/// written and read back as itself.
#[test]
fn a_huge_number_in_an_unknown_field_round_trips_exactly() {
    let body = format!(
        r#"{{"max_tokens":4{}96,"messages":[{{"content":[{{"text":"hello","type":"text"}}],"role":"user"}}],"model":"claude-sonet-4-5","stream":false}}"#,
        "0".repeat(104)
    );
    let request: CountTokensRequest = serde_json::from_str(&body).expect("parses");
    let text = serde_json::to_string(&request).expect("serializes");
    let again: CountTokensRequest = serde_json::from_str(&text).expect("parses back");
    assert_eq!(again, request);
    assert_eq!(serde_json::to_string(&again).expect("serializes"), text);
}
