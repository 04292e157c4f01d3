//! proptest strategies for wire values, as JSON.
//!
//! The strategies produce `serde_json::Value`s shaped like Messages API values — known block
//! types with optional fields present, absent or `null`, unknown block types, unknown fields,
//! unusual strings — so that round-trip properties exercise the parsing of the real wire
//! format, including everything a future API version might add.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Text with the characters that break naive handling: quotes, escapes, newlines, non-ASCII
/// and astral-plane characters, and whitespace-only strings.
pub fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ]{0,12}",
        Just(String::new()),
        Just(" \n\t ".to_owned()),
        "\\PC{0,8}",
        Just("quote \" backslash \\ nul \u{0} emoji 🦀 cjk 消息".to_owned()),
    ]
}

/// Identifiers like the API's (`toolu_…`), sometimes with characters the API rejects.
pub fn tool_id() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "toolu_[a-zA-Z0-9]{4,12}",
        1 => "[a-z]{1,4}[|:. ][a-z0-9]{1,4}",
    ]
}

/// A field name this version does not know, with an arbitrary JSON value.
fn unknown_field() -> impl Strategy<Value = (String, Value)> {
    ("zz_[a-z]{1,8}", json_leaf())
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        hostile_text().prop_map(Value::String),
        prop::collection::vec(any::<u32>().prop_map(|n| json!(n)), 0..3).prop_map(Value::Array),
    ]
}

/// An optional field: absent, explicit `null`, or present.
fn optional(
    name: &'static str,
    value: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Option<(String, Value)>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some((name.to_owned(), Value::Null))),
        2 => value.prop_map(move |v| Some((name.to_owned(), v))),
    ]
}

fn object(
    required: Vec<(&'static str, Value)>,
    optional: Vec<Option<(String, Value)>>,
    unknown: Vec<(String, Value)>,
) -> Value {
    let mut map = Map::new();
    for (k, v) in unknown {
        map.insert(k, v);
    }
    for (k, v) in optional.into_iter().flatten() {
        map.insert(k, v);
    }
    for (k, v) in required {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
}

/// A `cache_control` object.
pub fn cache_control() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "ephemeral"})),
        Just(json!({"type": "ephemeral", "ttl": "5m"})),
        Just(json!({"type": "ephemeral", "ttl": "1h"})),
        Just(json!({"type": "ephemeral", "ttl": "7d"})),
    ]
}

/// A content block: every known type, plus unknown types, with unknown fields.
pub fn content_block() -> impl Strategy<Value = Value> {
    let unknown = || prop::collection::vec(unknown_field(), 0..2);
    prop_oneof![
        (hostile_text(), optional("cache_control", cache_control()), unknown()).prop_map(|(text, cc, u)| object(
            vec![("type", json!("text")), ("text", json!(text))],
            vec![cc],
            u
        )),
        (tool_id(), "[a-z_]{1,10}", unknown()).prop_map(|(id, name, u)| object(
            vec![("type", json!("tool_use")), ("id", json!(id)), ("name", json!(name)), ("input", json!({"q": 1}))],
            vec![],
            u
        )),
        (tool_id(), hostile_text(), optional("is_error", any::<bool>().prop_map(Value::Bool)), unknown()).prop_map(
            |(id, text, is_error, u)| object(
                vec![("type", json!("tool_result")), ("tool_use_id", json!(id)), ("content", json!(text))],
                vec![is_error],
                u
            )
        ),
        (tool_id(), hostile_text()).prop_map(|(id, text)| json!({
            "type": "tool_result", "tool_use_id": id,
            "content": [{"type": "text", "text": text}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]
        })),
        (hostile_text(), optional("signature", hostile_text().prop_map(Value::String)))
            .prop_map(|(t, sig)| object(vec![("type", json!("thinking")), ("thinking", json!(t))], vec![sig], vec![])),
        hostile_text().prop_map(|d| json!({"type": "redacted_thinking", "data": d})),
        (hostile_text(), unknown()).prop_map(|(url, u)| object(
            vec![("type", json!("image")), ("source", json!({"type": "url", "url": url}))],
            vec![],
            u
        )),
        (hostile_text(), unknown()).prop_map(|(d, u)| object(
            vec![("type", json!("document")), ("source", json!({"type": "text", "media_type": "text/plain", "data": d}))],
            vec![],
            u
        )),
        ("srvtoolu_[a-z0-9]{4}", hostile_text()).prop_map(|(id, q)| json!({
            "type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": q}
        })),
        "srvtoolu_[a-z0-9]{4}".prop_map(|id| json!({
            "type": "web_search_tool_result", "tool_use_id": id,
            "content": [{"type": "web_search_result", "url": "https://example.com", "title": "t", "encrypted_content": "e"}]
        })),
        ("[a-z_]{1,12}", unknown()).prop_map(|(kind, u)| object(vec![("type", json!(format!("future_{kind}")))], vec![], u)),
    ]
}

/// A message `{role, content}`: string or block content, known or unknown roles.
pub fn message_param() -> impl Strategy<Value = Value> {
    let role = prop_oneof![4 => Just("user"), 4 => Just("assistant"), 1 => Just("system")];
    let content = prop_oneof![
        hostile_text().prop_map(Value::String),
        prop::collection::vec(content_block(), 0..4).prop_map(Value::Array),
    ];
    (role, content).prop_map(|(role, content)| json!({"role": role, "content": content}))
}

/// A tool definition: custom (with or without `type`) or versioned.
pub fn tool() -> impl Strategy<Value = Value> {
    prop_oneof![
        (
            "[a-zA-Z0-9_-]{1,20}",
            optional("description", hostile_text().prop_map(Value::String)),
            optional("cache_control", cache_control())
        )
            .prop_map(|(name, d, cc)| object(
                vec![
                    ("name", json!(name)),
                    ("input_schema", json!({"type": "object", "properties": {}}))
                ],
                vec![d, cc],
                vec![]
            )),
        "[a-z_]{1,10}".prop_map(
            |name| json!({"type": "custom", "name": name, "input_schema": {"type": "object"}})
        ),
        Just(json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3})),
        Just(json!({"type": "bash_20250124", "name": "bash"})),
    ]
}

/// A whole `/v1/messages` request body.
pub fn messages_request() -> impl Strategy<Value = Value> {
    let system = prop_oneof![
        hostile_text().prop_map(Value::String),
        prop::collection::vec(
            (hostile_text(), optional("cache_control", cache_control())).prop_map(
                |(t, cc)| object(
                    vec![("type", json!("text")), ("text", json!(t))],
                    vec![cc],
                    vec![]
                )
            ),
            0..3
        )
        .prop_map(Value::Array),
    ];
    let thinking = prop_oneof![
        (1024u64..4096).prop_map(|b| json!({"type": "enabled", "budget_tokens": b})),
        Just(json!({"type": "adaptive", "display": "omitted"})),
        Just(json!({"type": "disabled"})),
        Just(json!({"type": "telepathic"})),
    ];
    let tool_choice = prop_oneof![
        Just(json!({"type": "auto"})),
        Just(json!({"type": "any", "disable_parallel_tool_use": true})),
        "[a-z]{1,6}".prop_map(|n| json!({"type": "tool", "name": n})),
        Just(json!({"type": "none"})),
    ];
    (
        "claude-[a-z0-9-]{1,16}",
        1u64..200_000,
        prop::collection::vec(message_param(), 0..6),
        optional("system", system),
        optional(
            "tools",
            prop::collection::vec(tool(), 0..3).prop_map(Value::Array),
        ),
        optional("thinking", thinking),
        optional("tool_choice", tool_choice),
        optional(
            "temperature",
            (0u32..=10).prop_map(|t| json!(f64::from(t) / 10.0)),
        ),
        optional("stream", any::<bool>().prop_map(Value::Bool)),
        optional("cache_control", cache_control()),
        prop::collection::vec(unknown_field(), 0..2),
    )
        .prop_map(
            |(
                model,
                max_tokens,
                messages,
                system,
                tools,
                thinking,
                tool_choice,
                temperature,
                stream,
                cc,
                unknown,
            )| {
                object(
                    vec![
                        ("model", json!(model)),
                        ("max_tokens", json!(max_tokens)),
                        ("messages", Value::Array(messages)),
                    ],
                    vec![
                        system,
                        tools,
                        thinking,
                        tool_choice,
                        temperature,
                        stream,
                        cc,
                    ],
                    unknown,
                )
            },
        )
}

/// One stream event's data, every known type and unknown ones.
pub fn stream_event() -> impl Strategy<Value = Value> {
    let delta = prop_oneof![
        hostile_text().prop_map(|t| json!({"type": "text_delta", "text": t})),
        hostile_text().prop_map(|t| json!({"type": "input_json_delta", "partial_json": t})),
        hostile_text().prop_map(|t| json!({"type": "thinking_delta", "thinking": t})),
        hostile_text().prop_map(|t| json!({"type": "signature_delta", "signature": t})),
        Just(
            json!({"type": "citations_delta", "citation": {"type": "char_location", "cited_text": "c", "document_index": 0, "start_char_index": 0, "end_char_index": 1}})
        ),
        "[a-z]{1,8}".prop_map(|k| json!({"type": format!("{k}_delta_v9"), "payload": [1, 2]})),
    ];
    prop_oneof![
        (0usize..5, delta)
            .prop_map(|(i, d)| json!({"type": "content_block_delta", "index": i, "delta": d})),
        (0usize..5, content_block()).prop_map(
            |(i, b)| json!({"type": "content_block_start", "index": i, "content_block": b})
        ),
        (0usize..5).prop_map(|i| json!({"type": "content_block_stop", "index": i})),
        Just(
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}})
        ),
        Just(
            json!({"type": "message_delta", "delta": {"stop_reason": "brand_new_reason", "stop_details": null}, "usage": {"output_tokens": 5, "input_tokens": 3, "zz_future": {"a": 1}}})
        ),
        Just(json!({"type": "message_stop"})),
        Just(json!({"type": "ping"})),
        Just(
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_1"})
        ),
        "[a-z_]{1,10}".prop_map(|k| json!({"type": format!("future_{k}"), "data": {"x": true}})),
    ]
}
