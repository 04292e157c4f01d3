//! The events of a streamed response (`stream: true`).

use serde_json::Value;

use crate::api_error::ApiErrorBody;
use crate::content::{Citation, ContentBlock};
use crate::response::{ResponseMessage, StopReason, Usage};

mod delta_fast_path;

wire_struct! {
    /// `message_start`: the message shell, with empty content and initial usage.
    pub struct MessageStart {
        required {
            /// The message shell (boxed: it is large, and the other events are small).
            pub message: Box<ResponseMessage>,
        }
        optional {}
    }
}

wire_struct! {
    /// `content_block_start`: a block begins at `index`.
    pub struct ContentBlockStart {
        required {
            /// The block's position in the final content.
            pub index: usize,
            /// The block's initial value (empty text, `{}` input, …), boxed like the message.
            pub content_block: Box<ContentBlock>,
        }
        optional {}
    }
}

wire_struct! {
    /// `content_block_delta`: a piece of the block at `index`.
    pub struct ContentBlockDelta {
        required {
            /// The block's position.
            pub index: usize,
            /// The piece.
            pub delta: ContentDelta,
        }
        optional {}
    }
}

wire_struct! {
    /// `content_block_stop`: the block at `index` is complete.
    pub struct ContentBlockStop {
        required {
            /// The block's position.
            pub index: usize,
        }
        optional {}
    }
}

wire_struct! {
    /// `message_delta.delta`: top-level changes.
    pub struct MessageDeltaBody {
        required {}
        optional {
            /// Why the model stopped.
            pub stop_reason: StopReason,
            /// The stop sequence that matched.
            pub stop_sequence: String,
            /// Details of a refusal.
            pub stop_details: Value,
            /// The code-execution container.
            pub container: Value,
        }
    }
}

wire_struct! {
    /// `message_delta`: stop reason and cumulative usage.
    pub struct MessageDelta {
        required {
            /// The top-level changes (boxed, to keep every event small).
            pub delta: Box<MessageDeltaBody>,
        }
        optional {
            /// Cumulative usage: fields present overwrite, never add (boxed, to keep every
            /// event small).
            pub usage: Box<Usage>,
            /// Context edits applied (beta).
            pub context_management: Value,
        }
    }
}

wire_struct! {
    /// An event with no fields of its own (`message_stop`, `ping`).
    pub struct EmptyEvent {
        required {}
        optional {}
    }
}

wire_struct! {
    /// `error`: the stream failed after a 200.
    pub struct ErrorEvent {
        required {
            /// The error.
            pub error: ApiErrorBody,
        }
        optional {
            /// The request id.
            pub request_id: String,
        }
    }
}

wire_enum! {
    /// One event of a streamed response.
    pub enum StreamEvent (tag = "type") {
        /// The message begins.
        MessageStart(MessageStart) = "message_start",
        /// A content block begins.
        ContentBlockStart(ContentBlockStart) = "content_block_start",
        /// A content block grows.
        ContentBlockDelta(ContentBlockDelta) = "content_block_delta",
        /// A content block is complete.
        ContentBlockStop(ContentBlockStop) = "content_block_stop",
        /// Stop reason and usage.
        MessageDelta(MessageDelta) = "message_delta",
        /// The message is complete.
        MessageStop(EmptyEvent) = "message_stop",
        /// Keep-alive; ignored.
        Ping(EmptyEvent) = "ping",
        /// The stream failed.
        Error(ErrorEvent) = "error",
    }
}

impl StreamEvent {
    /// Parses the `data` of one server-sent event.
    ///
    /// Deltas in the API's own compact shape take a dedicated scanner (they are most of a
    /// stream); every other input goes through the generic parser. Both give the same result
    /// for the same input.
    ///
    /// ```
    /// use threadline_wire::StreamEvent;
    /// let event = StreamEvent::from_json(r#"{"type":"content_block_stop","index":0}"#)?;
    /// assert_eq!(event.tag(), "content_block_stop");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_json(data: &str) -> Result<StreamEvent, serde_json::Error> {
        match delta_fast_path::parse(data) {
            Some(event) => Ok(event),
            None => serde_json::from_str(data),
        }
    }
}

wire_struct! {
    /// `text_delta`.
    pub struct TextDelta {
        required {
            /// Text to append.
            pub text: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `input_json_delta`.
    pub struct InputJsonDelta {
        required {
            /// A piece of the tool input's JSON text, to append.
            pub partial_json: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `thinking_delta`.
    pub struct ThinkingDelta {
        required {
            /// Thinking text to append.
            pub thinking: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `signature_delta`.
    pub struct SignatureDelta {
        required {
            /// The signature; replaces any earlier one.
            pub signature: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `citations_delta`.
    pub struct CitationsDelta {
        required {
            /// A citation to push onto the text block's citations (boxed: it is the largest
            /// delta, and deltas are the hot path).
            pub citation: Box<Citation>,
        }
        optional {}
    }
}

wire_struct! {
    /// `compaction_delta` (beta): the whole summary at once.
    pub struct CompactionDelta {
        required {}
        optional {
            /// The summary.
            pub content: String,
            /// The encrypted state.
            pub encrypted_content: String,
        }
    }
}

wire_enum! {
    /// A piece of a content block.
    pub enum ContentDelta (tag = "type") {
        /// Text.
        Text(TextDelta) = "text_delta",
        /// Tool input JSON text.
        InputJson(InputJsonDelta) = "input_json_delta",
        /// Thinking text.
        Thinking(ThinkingDelta) = "thinking_delta",
        /// A thinking signature.
        Signature(SignatureDelta) = "signature_delta",
        /// A citation.
        Citations(CitationsDelta) = "citations_delta",
        /// A compaction summary.
        Compaction(CompactionDelta) = "compaction_delta",
    }
}
