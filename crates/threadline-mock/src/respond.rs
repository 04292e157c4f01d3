//! Building answers: the SSE events of a scripted message, its JSON form, and error bodies.

use serde_json::{Value, json};
use threadline_wire::sse::encode_event;
use threadline_wire::{ApiErrorResponse, ApiErrorType, Usage};

use crate::scenario::{Block, MessageStep, StreamFault};

/// What a scripted message turns into: its events (as SSE bytes), and where a fault cuts in.
pub(crate) struct Script {
    /// Each event, encoded.
    pub(crate) events: Vec<Vec<u8>>,
    /// The JSON of the complete message (for `stream: false`).
    pub(crate) message: Value,
    /// What happens after `events[..n]`.
    pub(crate) ending: Ending,
}

/// How a streamed answer ends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    /// All events, then the end of the body.
    Complete,
    /// `n` events, then the connection is cut.
    Cut(usize),
    /// `n` events, then an `error` event, then the end.
    Error(usize, Vec<u8>),
    /// `n` events, then nothing (the connection stays open).
    Stall(usize),
}

pub(crate) fn encode(event: &Value) -> Vec<u8> {
    let name = event["type"].as_str().unwrap_or("message").to_owned();
    let data = serde_json::to_string(event).expect("JSON values serialize");
    let mut out = Vec::with_capacity(data.len() + name.len() + 16);
    encode_event(Some(&name), &data, &mut out)
        .expect("event names and JSON data carry no line breaks");
    out
}

fn chunks(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Builds the script of a message step.
pub(crate) fn script(
    step: &MessageStep,
    message_id: &str,
    model: &str,
    mut next_tool_id: impl FnMut() -> String,
    usage: impl FnOnce(u64) -> Usage,
) -> Script {
    let size = step.chunk_chars.unwrap_or(16);
    let mut events: Vec<Value> = Vec::new();
    let mut content: Vec<Value> = Vec::new();
    let mut output_bytes = 0usize;
    let mut cut_at: Option<usize> = None;
    let has_tool = step
        .content
        .iter()
        .any(|b| matches!(b, Block::ToolUse { .. }));
    let stop_reason = step
        .stop_reason
        .clone()
        .unwrap_or_else(|| if has_tool { "tool_use" } else { "end_turn" }.to_owned());

    let mut block_events: Vec<Value> = Vec::new();
    for (index, block) in step.content.iter().enumerate() {
        match block {
            Block::Text { text } => {
                output_bytes += text.len();
                block_events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}}));
                for piece in chunks(text, size) {
                    block_events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":piece}}));
                }
                content.push(json!({"type":"text","text":text}));
            }
            Block::ToolUse { id, name, input } | Block::ServerToolUse { id, name, input } => {
                let server = matches!(block, Block::ServerToolUse { .. });
                let kind = if server {
                    "server_tool_use"
                } else {
                    "tool_use"
                };
                let id = id.clone().unwrap_or_else(|| {
                    let id = next_tool_id();
                    if server { format!("srv{id}") } else { id }
                });
                let input_json = serde_json::to_string(input).expect("JSON values serialize");
                output_bytes += input_json.len() + name.len();
                block_events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":kind,"id":id,"name":name,"input":{}}}));
                block_events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":""}}));
                let pieces = chunks(&input_json, size);
                let half = pieces.len().div_ceil(2);
                for (i, piece) in pieces.into_iter().enumerate() {
                    block_events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":piece}}));
                    if i + 1 == half
                        && cut_at.is_none()
                        && matches!(step.fault, Some(StreamFault::CutInToolInput))
                    {
                        // +1: message_start comes first.
                        cut_at = Some(block_events.len() + 1);
                    }
                }
                content.push(json!({"type":kind,"id":id,"name":name,"input":input}));
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                output_bytes += thinking.len();
                block_events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":"thinking","thinking":"","signature":""}}));
                for piece in chunks(thinking, size) {
                    block_events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"thinking_delta","thinking":piece}}));
                }
                block_events.push(json!({"type":"content_block_delta","index":index,"delta":{"type":"signature_delta","signature":signature}}));
                content.push(json!({"type":"thinking","thinking":thinking,"signature":signature}));
            }
            Block::RedactedThinking { data } => {
                block_events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":"redacted_thinking","data":data}}));
                content.push(json!({"type":"redacted_thinking","data":data}));
            }
            Block::Compaction {
                content: summary,
                encrypted_content,
            } => {
                output_bytes += summary.as_ref().map_or(0, String::len);
                let mut block = json!({"type":"compaction","content":summary});
                let mut delta = json!({"type":"compaction_delta","content":summary});
                if let Some(encrypted) = encrypted_content {
                    block["encrypted_content"] = json!(encrypted);
                    delta["encrypted_content"] = json!(encrypted);
                }
                block_events.push(json!({"type":"content_block_start","index":index,"content_block":{"type":"compaction","content":null}}));
                block_events
                    .push(json!({"type":"content_block_delta","index":index,"delta":delta}));
                content.push(block);
            }
            Block::Verbatim { block } => {
                output_bytes += block.to_string().len();
                block_events.push(
                    json!({"type":"content_block_start","index":index,"content_block":block}),
                );
                content.push(block.clone());
            }
        }
        block_events.push(json!({"type":"content_block_stop","index":index}));
    }

    let output_tokens = crate::usage::estimate_tokens(output_bytes);
    let usage = match &step.usage {
        Some(explicit) => explicit.clone(),
        None => serde_json::to_value(usage(output_tokens)).expect("usage serializes"),
    };
    let mut start_usage = usage.clone();
    if let Some(obj) = start_usage.as_object_mut() {
        obj.insert("output_tokens".to_owned(), json!(1));
    }
    let model = step.model.as_deref().unwrap_or(model);
    events.push(json!({"type":"message_start","message":{
        "id":message_id,"type":"message","role":"assistant","content":[],"model":model,
        "stop_reason":null,"stop_sequence":null,"usage":start_usage}}));
    // A ping after the first block starts, as the API does.
    let mut pinged = false;
    for event in block_events {
        let is_start = event["type"] == "content_block_start";
        events.push(event);
        if is_start && !pinged {
            pinged = true;
            events.push(json!({"type":"ping"}));
            if let Some(cut) = cut_at.as_mut() {
                *cut += 1;
            }
        }
    }
    let mut delta = json!({"type":"message_delta","delta":with_stop_details(json!({"stop_reason":stop_reason,"stop_sequence":null}), &step.stop_details),"usage":usage});
    if let Some(management) = &step.context_management {
        delta["context_management"] = management.clone();
    }
    events.push(delta);
    events.push(json!({"type":"message_stop"}));

    let mut message = with_stop_details(
        json!({"id":message_id,"type":"message","role":"assistant","content":content,
            "model":model,"stop_reason":stop_reason,"stop_sequence":null,"usage":usage}),
        &step.stop_details,
    );
    if let Some(management) = &step.context_management {
        message["context_management"] = management.clone();
    }

    let ending = match &step.fault {
        None => Ending::Complete,
        Some(StreamFault::CutInToolInput) => match cut_at {
            Some(n) => Ending::Cut(n),
            None => Ending::Cut(events.len() / 2),
        },
        Some(StreamFault::CutAfterEvents { after_events }) => Ending::Cut(*after_events),
        Some(StreamFault::Stall { after_events }) => Ending::Stall(*after_events),
        Some(StreamFault::ErrorEvent {
            after_events,
            error_type,
            message,
        }) => {
            let kind = error_type.as_deref().unwrap_or("overloaded_error");
            let text = message.as_deref().unwrap_or("Overloaded");
            let event = json!({"type":"error","error":{"type":kind,"message":text},"request_id":message_id.replace("msg_", "req_")});
            Ending::Error(*after_events, encode(&event))
        }
    };
    Script {
        events: events.iter().map(encode).collect(),
        message,
        ending,
    }
}

/// The API's error body.
pub(crate) fn error_body(kind: ApiErrorType, message: &str, request_id: &str) -> Vec<u8> {
    coded_error_body(kind, message, None, request_id)
}

/// The API's error body, with `error.details.error_code` when `code` is given.
pub(crate) fn coded_error_body(
    kind: ApiErrorType,
    message: &str,
    code: Option<&str>,
    request_id: &str,
) -> Vec<u8> {
    let mut envelope = ApiErrorResponse::new(kind, message);
    if let Some(code) = code {
        (envelope.error.extra).insert("details".to_owned(), json!({ "error_code": code }));
    }
    envelope.request_id = Some(request_id.to_owned());
    serde_json::to_vec(&envelope).expect("error envelopes serialize")
}

/// `object` with `stop_details` set, when the step gives them (absent otherwise).
fn with_stop_details(mut object: Value, details: &Option<Value>) -> Value {
    if let (Some(details), Some(map)) = (details, object.as_object_mut()) {
        map.insert("stop_details".to_owned(), details.clone());
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Scenario, Step};

    fn tool_id() -> String {
        "toolu_test".to_owned()
    }

    /// The streamed events of every scripted message accumulate to its non-streamed JSON.
    #[test]
    fn streamed_and_whole_answers_agree() {
        let yaml = r#"
steps:
  - kind: message
    content:
      - {type: thinking, thinking: "Let me think about this for a while.", signature: "c2ln"}
      - {type: text, text: "Hello, world — with unicode: héllo ✓"}
      - {type: tool_use, name: ls, input: {path: ".", deep: {a: [1, 2, "x\"y"]}}}
      - {type: redacted_thinking, data: "ZW5j"}
      - {type: verbatim, block: {type: server_tool_use, id: srvtoolu_01, name: web_search, input: {query: "rust"}}}
      - {type: verbatim, block: {type: web_search_tool_result, tool_use_id: srvtoolu_01, content: []}}
      - {type: server_tool_use, id: srvtoolu_02, name: tool_search_tool_regex, input: {pattern: "weather|forecast", limit: 3}}
      - {type: verbatim, block: {type: tool_search_tool_result, tool_use_id: srvtoolu_02, content: {type: tool_search_tool_search_result, tool_references: [{type: tool_reference, tool_name: get_weather}]}}}
    chunk_chars: 3
  - kind: message
    content: [{type: text, text: ""}]
    stop_reason: max_tokens
  - kind: message
    content: []
    stop_reason: refusal
    stop_details: {type: refusal, category: cyber, explanation: "Declined."}
  - kind: message
    content:
      - {type: verbatim, block: {type: fallback, from: {model: claude-opus-5}, to: {model: claude-sonnet-5}, trigger: {type: refusal, category: cyber}}}
      - {type: text, text: "Served by the fallback."}
  - kind: message
    content: [{type: text, text: "cut"}]
    stop_reason: model_context_window_exceeded
  - kind: message
    content:
      - {type: compaction, content: null, encrypted_content: "RQ=="}
      - {type: compaction, content: "<summary>S.</summary>"}
      - {type: text, text: "After."}
"#;
        let scenario: Scenario = serde_yaml::from_str(yaml).expect("valid");
        for step in &scenario.steps {
            let Step::Message(step) = step else {
                unreachable!("only messages above")
            };
            let script = script(step, "msg_1", "claude-sonnet-4-6", tool_id, |out| {
                Usage::new().with_output_tokens(out)
            });
            assert_eq!(script.ending, Ending::Complete);
            let body = script.events.concat();
            let message = threadline_wire::message_stream::read_message(&body).expect("complete");
            assert_eq!(
                serde_json::to_value(&message).expect("serializes"),
                script.message
            );
        }
    }

    #[test]
    fn a_cut_in_tool_input_falls_inside_the_input() {
        let step = match Step::tool_use("ls", json!({"path": "a/very/long/path/to/list"}))
            .with_chunk_chars(4)
            .with_fault(StreamFault::CutInToolInput)
        {
            Step::Message(m) => m,
            _ => unreachable!("a message step"),
        };
        let script = script(&step, "msg_1", "m", tool_id, |_| Usage::default());
        let Ending::Cut(n) = script.ending else {
            panic!("expected a cut, got {:?}", script.ending)
        };
        let sent = String::from_utf8(script.events[..n].concat()).expect("UTF-8");
        assert!(sent.contains("input_json_delta"));
        assert!(
            !sent.contains("content_block_stop"),
            "cut before the block ends"
        );
        let rest = String::from_utf8(script.events[n..].concat()).expect("UTF-8");
        assert!(rest.contains("input_json_delta"), "and inside the input");
    }
}
