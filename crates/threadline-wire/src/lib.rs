//! The Anthropic Messages API as Rust values.
#![forbid(unsafe_code)]

#[macro_use]
pub mod open_object;
pub mod accumulate;
pub mod api_error;
pub mod cache_control;
pub mod content;
pub mod message_stream;
pub mod model;
pub mod request;
pub mod response;
pub mod service;
pub mod sse;
pub mod stream_event;
pub mod tools;

pub use api_error::{ApiErrorBody, ApiErrorResponse, ApiErrorType};
pub use cache_control::{CacheControl, CacheTtl};
pub use content::{Content, ContentBlock, Role, TextBlock, ToolResultBlock, ToolUseBlock};
pub use open_object::Extra;
pub use request::{
    CountTokensRequest, MessageParam, MessagesRequest, SystemPrompt, ThinkingConfig,
};
pub use response::{Message, StopReason, Usage};
pub use stream_event::{ContentDelta, StreamEvent};
pub use tools::{Tool, ToolChoice};
