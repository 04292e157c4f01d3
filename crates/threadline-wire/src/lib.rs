//! The Anthropic Messages API as Rust values: request and response types that survive
//! whatever the API adds, an incremental SSE decoder, the stream accumulator, the model table,
//! the service contract, and the redaction of secrets from what
//! leaves the process ([`secret`]). No I/O, no async runtime.
//!
//! ```
//! use threadline_wire::message_stream::MessageStreamReader;
//! use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
//!
//! // A request, built from typed values and serialized as the API expects.
//! let request = MessagesRequest::new(
//!     "claude-sonnet-4-6",
//!     1024,
//!     vec![MessageParam::user(vec![ContentBlock::text("Hello")])],
//! );
//! let json = serde_json::to_string(&request)?;
//! assert!(json.contains(r#""role":"user""#));
//!
//! // A streamed answer, fed in whatever chunks the network delivers.
//! let sse = concat!(
//!     "event: message_start\n",
//!     r#"data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","usage":{"input_tokens":8,"output_tokens":1}}}"#, "\n\n",
//!     "event: content_block_start\n",
//!     r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#, "\n\n",
//!     "event: content_block_delta\n",
//!     r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi!"},"a_field_from_the_future":1}"#, "\n\n",
//!     "event: content_block_stop\n",
//!     r#"data: {"type":"content_block_stop","index":0}"#, "\n\n",
//!     "event: message_delta\n",
//!     r#"data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}"#, "\n\n",
//!     "event: message_stop\n",
//!     r#"data: {"type":"message_stop"}"#, "\n\n",
//! );
//! let mut reader = MessageStreamReader::new();
//! for chunk in sse.as_bytes().chunks(5) {
//!     reader.push(chunk, |_event, _completed_block| {})?;
//! }
//! let message = reader.finish()?;
//! assert_eq!(message.text(), "Hi!");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Building values
//!
//! Every wire struct is `#[non_exhaustive]` (the API adds fields): build one with `new`, which
//! takes its required fields, and `with_<field>` setters for the optional ones. A `Box`ed field
//! takes the value itself; a `String` one takes anything `Into<String>`; a request's `messages`
//! anything `Into<`[`Messages`]`>` (a `Vec<MessageParam>`, say).
//!
//! ```
//! use serde_json::json;
//! use threadline_wire::{
//!     CacheControl, ContentBlock, CustomTool, MessageParam, MessagesRequest, SystemPrompt,
//!     TextBlock, ToolDefinition,
//! };
//!
//! let system = TextBlock::new("You answer questions about the weather.")
//!     .with_cache_control(CacheControl::ephemeral());
//! let weather = CustomTool::new("get_weather", json!({"type": "object"}))
//!     .with_description("The current weather in a city.");
//! let request = MessagesRequest::new(
//!     "claude-sonnet-4-6",
//!     1024,
//!     vec![MessageParam::user(vec![ContentBlock::text("Is it raining in Paris?")])],
//! )
//! .with_system(SystemPrompt::Blocks(vec![system]))
//! .with_tools(vec![ToolDefinition::from(weather)]);
//!
//! assert_eq!(
//!     serde_json::to_string(&request)?,
//!     concat!(
//!         r#"{"model":"claude-sonnet-4-6","max_tokens":1024,"#,
//!         r#""messages":[{"role":"user","content":[{"type":"text","text":"Is it raining in Paris?"}]}],"#,
//!         r#""system":[{"type":"text","text":"You answer questions about the weather.","#,
//!         r#""cache_control":{"type":"ephemeral"}}],"#,
//!         r#""tools":[{"name":"get_weather","input_schema":{"type":"object"},"#,
//!         r#""description":"The current weather in a city."}]}"#,
//!     )
//! );
//! # Ok::<(), serde_json::Error>(())
//! ```
#![forbid(unsafe_code)]

#[macro_use]
pub mod open_object;
pub mod accumulate;
pub mod api_error;
pub mod betas;
pub mod cache_control;
mod cache_markers;
pub mod content;
pub mod defaults;
pub mod diagnostics;
pub mod json_size;
pub mod message_stream;
pub mod messages;
pub mod model;
pub mod partial_json;
pub mod platform;
pub mod request;
pub mod response;
pub mod secret;
pub mod service;
pub mod sse;
pub mod stream_event;
pub mod telemetry;
pub mod tokens;
pub mod tool_change;
pub mod tool_search;
pub mod tools;
pub mod usage_iterations;

pub use api_error::{ApiErrorBody, ApiErrorResponse, ApiErrorType};
pub use cache_control::{CacheControl, CacheTtl};
pub use content::{
    Content, ContentBlock, FallbackBlock, FallbackModelRef, Role, TextBlock, ToolResultBlock,
    ToolUseBlock,
};
pub use messages::Messages;
pub use open_object::Extra;
pub use request::{
    BlockBinding, CompactionParam, CountTokensRequest, FallbackModel, Fallbacks, MessageParam,
    MessagesRequest, PrefixMismatchBehavior, SystemPrompt, ThinkingConfig,
};
pub use response::{InputTransformation, ResponseMessage, StopDetails, StopReason, Usage};
pub use stream_event::{ContentDelta, StreamEvent};
pub use tools::{CustomTool, ToolChoice, ToolDefinition, VersionedTool};
pub use usage_iterations::{BilledTotals, IterationKind, UsageIteration};
