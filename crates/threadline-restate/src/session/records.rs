//! What a step journals: a model call's complete message (or its error, as a value), a tool
//! call's result, the step log's entries; and the event stream a journaled message is
//! re-emitted to the loop as.

use std::time::Duration;

use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use threadline_query::ToolOutput;
use threadline_wire::service::{
    EventStream, ServiceError, ServiceErrorKind, collect_message_bounded,
};
use threadline_wire::{ApiErrorResponse, ApiErrorType, Content};
use threadline_wire::{ResponseMessage, StreamEvent};

/// The most a step may journal (Restate's message limit is 32 MiB; a bigger result would be
/// retried forever): over it, the step journals an error value instead.
pub const MAX_STEP_BYTES: usize = threadline_store::MAX_ENTRY_BYTES;

/// A model step's journaled outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum ModelRecord {
    /// The accumulated message (content, usage, stop reason).
    Message { message: Box<ResponseMessage> },
    /// The failure, replayed as the same error so the loop takes the same recovery path.
    Error {
        kind: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_type: Option<ApiErrorType>,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
}

fn kind_name(kind: ServiceErrorKind) -> &'static str {
    match kind {
        ServiceErrorKind::Api => "api",
        ServiceErrorKind::Connection => "connection",
        ServiceErrorKind::Timeout => "timeout",
        ServiceErrorKind::Truncated => "truncated",
        ServiceErrorKind::MaxTokens => "max_tokens",
        _ => "decode",
    }
}

fn kind_of(name: &str) -> ServiceErrorKind {
    match name {
        "api" => ServiceErrorKind::Api,
        "connection" => ServiceErrorKind::Connection,
        "timeout" => ServiceErrorKind::Timeout,
        "truncated" => ServiceErrorKind::Truncated,
        "max_tokens" => ServiceErrorKind::MaxTokens,
        _ => ServiceErrorKind::Decode,
    }
}

impl ModelRecord {
    pub(crate) fn error(error: &ServiceError) -> ModelRecord {
        ModelRecord::Error {
            kind: kind_name(error.kind()).to_owned(),
            status: error.status(),
            api_type: error.api_error_type().cloned(),
            message: error.message().to_owned(),
            retry_after_ms: error
                .retry_after()
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    fn local(kind: ServiceErrorKind, message: impl Into<String>) -> ModelRecord {
        ModelRecord::Error {
            kind: kind_name(kind).to_owned(),
            status: None,
            api_type: None,
            message: message.into(),
            retry_after_ms: None,
        }
    }

    /// Calls nothing: consumes `stream` into the complete message or the error.
    pub(crate) async fn accumulate(
        opened: Result<EventStream, ServiceError>,
        max_bytes: usize,
    ) -> ModelRecord {
        let stream = match opened {
            Ok(stream) => stream,
            Err(error) => return ModelRecord::error(&error),
        };
        match collect_message_bounded(stream, max_bytes).await {
            Ok(message) => ModelRecord::Message {
                message: Box::new(message),
            },
            Err(error) => ModelRecord::error(&error),
        }
    }

    /// The bytes to journal, capped at `max_bytes` (over it, an error value).
    pub(crate) fn to_bytes(&self, max_bytes: usize) -> Vec<u8> {
        match serde_json::to_vec(self) {
            Ok(bytes) if bytes.len() <= max_bytes => bytes,
            Ok(bytes) => serde_json::to_vec(&ModelRecord::local(
                ServiceErrorKind::Decode,
                format!(
                    "the response ({} bytes) is over the journal's limit of {max_bytes} bytes",
                    bytes.len()
                ),
            ))
            .unwrap_or_default(),
            Err(error) => serde_json::to_vec(&ModelRecord::local(
                ServiceErrorKind::Decode,
                error.to_string(),
            ))
            .unwrap_or_default(),
        }
    }

    /// The loop's answer: the message as a complete event stream, or the error.
    pub(crate) fn into_response(self) -> Result<EventStream, ServiceError> {
        match self {
            ModelRecord::Message { message } => {
                let events: Vec<Result<StreamEvent, ServiceError>> =
                    message_events(*message).into_iter().map(Ok).collect();
                Ok(futures::stream::iter(events).boxed())
            }
            ModelRecord::Error {
                kind,
                status,
                api_type,
                message,
                retry_after_ms,
            } => {
                let retry_after = retry_after_ms.map(Duration::from_millis);
                Err(match (status, api_type) {
                    (Some(status), Some(api_type)) => ServiceError::from_api_response(
                        status,
                        ApiErrorResponse::new(api_type, message),
                        retry_after,
                    ),
                    _ => ServiceError::new(kind_of(&kind), message),
                })
            }
        }
    }

    /// Parses journaled bytes; undecodable bytes are a decode error (never a panic).
    pub(crate) fn from_bytes(bytes: &[u8]) -> ModelRecord {
        serde_json::from_slice(bytes).unwrap_or_else(|e| {
            ModelRecord::local(
                ServiceErrorKind::Decode,
                format!("undecodable journal entry: {e}"),
            )
        })
    }
}

/// The events that rebuild `message` exactly: `message_start` with no content and no stop
/// reason, each block whole (start then stop), `message_delta` with the stop reason and
/// usage, `message_stop`.
pub(crate) fn message_events(message: ResponseMessage) -> Vec<StreamEvent> {
    let mut values = Vec::with_capacity(message.content.len() * 2 + 3);
    let mut head = message.clone();
    head.content = Vec::new();
    head.stop_reason = None;
    head.stop_sequence = None;
    values.push(serde_json::json!({"type": "message_start", "message": head}));
    for (index, block) in message.content.iter().enumerate() {
        values.push(serde_json::json!({
            "type": "content_block_start", "index": index, "content_block": block}));
        values.push(serde_json::json!({"type": "content_block_stop", "index": index}));
    }
    let mut delta = serde_json::json!({"type": "message_delta", "delta": {
        "stop_reason": message.stop_reason, "stop_sequence": message.stop_sequence}});
    if let Some(usage) = &message.usage {
        delta["usage"] = serde_json::json!(usage);
    }
    values.push(delta);
    values.push(serde_json::json!({"type": "message_stop"}));
    values
        .into_iter()
        .filter_map(|value| serde_json::from_value(value).ok())
        .collect()
}

/// A tool step's journaled result (progress is not durable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolRecord {
    content: Content,
    #[serde(default)]
    is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw: Option<Value>,
}

impl ToolRecord {
    pub(crate) fn of(output: &ToolOutput) -> ToolRecord {
        ToolRecord {
            content: output.content.clone(),
            is_error: output.is_error,
            raw: output.raw.clone(),
        }
    }

    pub(crate) fn output(self) -> ToolOutput {
        let output = ToolOutput::content(self.content).with_is_error(self.is_error);
        match self.raw {
            Some(raw) => output.with_raw(raw),
            None => output,
        }
    }

    /// The bytes to journal, capped at `max_bytes` (over it, an error result saying so).
    pub(crate) fn to_bytes(&self, max_bytes: usize) -> Vec<u8> {
        let error = |text: String| {
            serde_json::to_vec(&ToolRecord::of(&ToolOutput::error(text))).unwrap_or_default()
        };
        match serde_json::to_vec(self) {
            Ok(bytes) if bytes.len() <= max_bytes => bytes,
            Ok(bytes) => error(format!(
                "Error: the tool's result ({} bytes) is over the session journal's limit of {max_bytes} bytes",
                bytes.len()
            )),
            Err(e) => error(format!("Error: the tool's result cannot be journaled: {e}")),
        }
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> ToolOutput {
        match serde_json::from_slice::<ToolRecord>(bytes) {
            Ok(record) => record.output(),
            Err(e) => ToolOutput::error(format!("Error: undecodable journal entry: {e}")),
        }
    }
}

/// One entry of a turn's step log (`s/{k}`), for inspection while the turn runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRecord {
    /// `clock`, `model`, `marker`, `tool` or `ask`.
    pub kind: String,
    /// The step's journal name (`model#2`, `tool:toolu_1`, …).
    pub name: String,
    /// Whether it succeeded (a model error, an error tool result, a denial: false).
    pub ok: bool,
    /// The journaled bytes.
    pub bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message() -> ResponseMessage {
        serde_json::from_value(serde_json::json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "hi"},
                        {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"a": 1.5}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 3, "output_tokens": 4}
        }))
        .expect("a message")
    }

    #[tokio::test]
    async fn a_message_survives_events_and_accumulation_byte_for_byte() {
        let original = message();
        let record = ModelRecord::Message {
            message: Box::new(original.clone()),
        };
        let stream = record.into_response();
        let back = ModelRecord::accumulate(stream, MAX_STEP_BYTES).await;
        let ModelRecord::Message { message } = back else {
            panic!("not a message: {back:?}")
        };
        assert_eq!(
            serde_json::to_vec(&message).ok(),
            serde_json::to_vec(&original).ok()
        );
    }

    #[test]
    fn errors_round_trip_as_the_same_error() {
        let error = ServiceError::from_api_response(
            529,
            ApiErrorResponse::new(ApiErrorType::Overloaded, "Overloaded"),
            Some(Duration::from_secs(2)),
        );
        let bytes = ModelRecord::error(&error).to_bytes(MAX_STEP_BYTES);
        let Err(back) = ModelRecord::from_bytes(&bytes).into_response() else {
            panic!("not an error")
        };
        assert_eq!(back.status(), Some(529));
        assert!(back.is_overloaded());
        assert_eq!(back.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(back.message(), "Overloaded");
        let Err(garbage) = ModelRecord::from_bytes(b"{nope").into_response() else {
            panic!("not an error")
        };
        assert_eq!(garbage.kind(), ServiceErrorKind::Decode);
    }

    #[test]
    fn oversized_results_become_errors_not_entries() {
        let big = ToolRecord::of(&ToolOutput::text("x".repeat(200)));
        let bytes = big.to_bytes(100);
        assert!(bytes.len() < 200);
        let output = ToolRecord::from_bytes(&bytes);
        assert!(output.is_error);
        let model = ModelRecord::Message {
            message: Box::new(message()),
        }
        .to_bytes(50);
        assert!(matches!(
            ModelRecord::from_bytes(&model),
            ModelRecord::Error { ref kind, .. } if kind == "decode"
        ));
    }
}
