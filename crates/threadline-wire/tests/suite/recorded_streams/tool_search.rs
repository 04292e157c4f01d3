//! The recorded tool-search streams (pydantic-ai's BM25 search, vercel/ai's regex search over
//! three streams): every block the accumulator builds is the block the API sent, a
//! `tool_search_tool_result` byte-identical to its `content_block_start`, a `server_tool_use`
//! with the input its deltas spelled; the typed views read the references.

use serde_json::Value;
use threadline_testkit::fixtures;
use threadline_validate::validate;
use threadline_wire::message_stream::read_message;
use threadline_wire::model::ModelTable;
use threadline_wire::tool_search::{ToolSearchContent, ToolSearchKind, referenced_tools};
use threadline_wire::{ContentBlock, MessagesRequest};

/// The `data:` payloads of an SSE body, parsed.
fn events(sse: &str) -> Vec<Value> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// Checks one recorded stream block by block; returns the accumulated blocks.
fn check_stream(name: &str, sse: &str) -> Vec<ContentBlock> {
    let message = read_message(sse.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let events = events(sse);
    let mut starts: Vec<(usize, Value)> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    for event in &events {
        match event["type"].as_str() {
            Some("content_block_start") => {
                let index = event["index"].as_u64().expect("index") as usize;
                starts.push((index, event["content_block"].clone()));
                partial.push(String::new());
            }
            Some("content_block_delta") if event["delta"]["type"] == "input_json_delta" => {
                let index = event["index"].as_u64().expect("index") as usize;
                partial[index].push_str(event["delta"]["partial_json"].as_str().expect("json"));
            }
            _ => {}
        }
    }
    assert_eq!(starts.len(), message.content.len(), "{name}: block count");
    for ((index, start), block) in starts.iter().zip(&message.content) {
        let built = serde_json::to_value(block).expect("serializes");
        match start["type"].as_str().expect("a type") {
            "tool_search_tool_result" => {
                // Sent whole, no deltas: kept byte for byte (the canonical JSON text of both).
                assert_eq!(
                    serde_json::to_string(&built).expect("text"),
                    serde_json::to_string(start).expect("text"),
                    "{name}: block {index}"
                );
                assert!(ToolSearchContent::of(block).is_some(), "{name}: typed");
            }
            "server_tool_use" | "tool_use" => {
                let mut expected = start.clone();
                expected["input"] = serde_json::from_str(&partial[*index]).expect("input JSON");
                assert_eq!(built, expected, "{name}: block {index}");
            }
            _ => assert_eq!(built["type"], start["type"], "{name}: block {index}"),
        }
    }
    message.content
}

fn sse(fixture: &str, exchange: usize) -> String {
    fixtures::fixture(fixture).exchanges[exchange]
        .response
        .body
        .as_sse()
        .expect("an SSE body")
        .to_owned()
}

#[test]
fn pydantic_bm25_search_keeps_every_block() {
    let name = "pydantic__pydantic-ai/test_anthropic_native_tool_search_streaming";
    let blocks = check_stream(name, &sse(name, 0));
    let types: Vec<&str> = blocks.iter().map(|b| b.tag()).collect();
    assert_eq!(
        types,
        [
            "text",
            "server_tool_use",
            "tool_search_tool_result",
            "text",
            "tool_use"
        ]
    );
    let ContentBlock::ServerToolUse(search) = &blocks[1] else {
        panic!("a server tool use")
    };
    assert_eq!(
        ToolSearchKind::of_name(&search.name),
        Some(ToolSearchKind::Bm25)
    );
    assert_eq!(
        search.input.as_ref().map(|i| i["query"].clone()),
        Some(Value::from("USD EUR exchange rate currency conversion"))
    );
    assert_eq!(referenced_tools(&blocks[2]), ["get_exchange_rate"]);
    check_stream(name, &sse(name, 1));

    // Both recorded requests parse, round-trip and pass the validator, the second with the
    // search blocks sent back.
    for exchange in &fixtures::fixture(name).exchanges {
        let body = &exchange.request.as_ref().expect("a request").body;
        let request: MessagesRequest = serde_json::from_value(body.clone()).expect("parses");
        assert_eq!(&serde_json::to_value(&request).expect("serializes"), body);
        let model = ModelTable::builtin().resolve(&request.model).model();
        assert_eq!(validate(&request, model), []);
    }
}

#[test]
fn vercel_regex_search_across_a_client_tool_keeps_every_block() {
    let name = "vercel__ai/anthropic-tool-search-deferred-regex.chunks";
    let first = check_stream(name, &sse(name, 0));
    let types: Vec<&str> = first.iter().map(|b| b.tag()).collect();
    // The search and a client tool in one response: the search is left pending.
    assert_eq!(types, ["text", "tool_use", "server_tool_use"]);
    let ContentBlock::ServerToolUse(search) = &first[2] else {
        panic!("a server tool use")
    };
    assert_eq!(search.caller, Some(serde_json::json!({"type": "direct"})));
    assert_eq!(
        ToolSearchKind::of_name(&search.name),
        Some(ToolSearchKind::Regex)
    );
    // The next response begins with the pending result.
    let second = check_stream(name, &sse(name, 1));
    assert_eq!(second[0].tag(), "tool_search_tool_result");
    let Some(result) = second[0].server_tool_result() else {
        panic!("a result")
    };
    assert_eq!(result.tool_use_id, search.id);
    assert_eq!(
        referenced_tools(&second[0]),
        ["readNoteTree", "executeEditorOperation"]
    );
    check_stream(name, &sse(name, 2));
}
