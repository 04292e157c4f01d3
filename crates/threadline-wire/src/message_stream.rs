//! Raw SSE bytes in, stream events and the final message out: the decoder, the event parser
//! and the accumulator in one incremental reader.
//!
//! ```
//! use threadline_wire::message_stream::MessageStreamReader;
//! let body = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
//! event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
//! event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
//! event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
//! event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
//! let mut reader = MessageStreamReader::new();
//! for chunk in body.chunks(7) {
//!     reader.push(chunk, |_event, _completed| {})?;
//! }
//! let message = reader.finish()?;
//! assert_eq!(message.text(), "Hi");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::accumulate::{AccumulateError, CompletedBlock, MessageAccumulator, StreamIncomplete};
use crate::response::ResponseMessage;
use crate::sse::{SseDecoder, SseError, SseEventRef};
use crate::stream_event::StreamEvent;

/// A failure while reading a streamed response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamReadError {
    /// The bytes are not a valid event stream (or an event is over the size bound).
    #[error("invalid event stream: {0}")]
    Sse(#[from] SseError),
    /// An event's data is not the JSON of a stream event.
    #[error("event {index} (`{event}`) is not valid stream-event JSON: {source}")]
    InvalidEvent {
        /// The event's position in the stream (0-based, pings included).
        index: usize,
        /// The SSE event name.
        event: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The event could not be applied (out of order, mid-stream API error, …).
    #[error("event {index}: {source}")]
    Accumulate {
        /// The event's position in the stream.
        index: usize,
        /// What went wrong.
        source: AccumulateError,
    },
    /// The stream ended without a complete message.
    #[error(transparent)]
    Incomplete(#[from] StreamIncomplete),
}

impl StreamReadError {
    /// The partial message, when the stream ended early.
    pub fn partial(&self) -> Option<&ResponseMessage> {
        match self {
            StreamReadError::Incomplete(incomplete) => incomplete.partial.as_deref(),
            _ => None,
        }
    }
}

/// An incremental reader from SSE bytes to a [`ResponseMessage`].
#[derive(Debug, Default)]
pub struct MessageStreamReader {
    decoder: SseDecoder,
    accumulator: MessageAccumulator,
    events: usize,
}

impl MessageStreamReader {
    /// A reader with the default bounds (16 MiB per event, 64 MiB per message).
    pub fn new() -> Self {
        MessageStreamReader::default()
    }

    /// A reader with explicit bounds.
    pub fn with_limits(max_event_bytes: usize, max_message_bytes: usize) -> Self {
        MessageStreamReader {
            decoder: SseDecoder::with_max_event_size(max_event_bytes),
            accumulator: MessageAccumulator::with_max_message_bytes(max_message_bytes),
            events: 0,
        }
    }

    /// The message accumulated so far.
    pub fn message(&self) -> Option<&ResponseMessage> {
        self.accumulator.message()
    }

    /// Feeds a chunk of bytes; `on_event` sees every parsed event, with the block it
    /// completed, as soon as it is decoded. Stops at the first error.
    pub fn push(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(&StreamEvent, Option<&CompletedBlock>),
    ) -> Result<(), StreamReadError> {
        let MessageStreamReader {
            decoder,
            accumulator,
            events,
        } = self;
        // Each event borrowed from the decoder's buffers: no copy of it is made.
        decoder.push_each(chunk, |sse| {
            let sse = sse?;
            let index = *events;
            *events += 1;
            apply(accumulator, index, sse, &mut on_event)
        })
    }

    /// Ends the input: the complete message, or why there is none (with the partial message).
    ///
    /// A last event that lacks only its closing blank line (some recordings end that way) is
    /// applied when its data is complete JSON, (the Python SDK drops it, and with it a final `message_stop`; we read it); a last event
    /// cut inside its data is dropped, and the missing pieces are reported by the accumulator
    /// as a [`Truncation`](crate::accumulate::Truncation) with the partial message.
    pub fn finish(mut self) -> Result<ResponseMessage, StreamReadError> {
        self.decoder.push(b"\n\n");
        while let Some(sse) = self.decoder.next_event()? {
            let index = self.events;
            self.events += 1;
            if sse.event.as_deref() == Some("ping") {
                continue;
            }
            match StreamEvent::from_json(&sse.data) {
                Ok(event) => {
                    self.accumulator
                        .push(&event)
                        .map_err(|source| StreamReadError::Accumulate { index, source })?;
                }
                // Cut mid-data: not an event the server finished sending.
                Err(_) => break,
            }
        }
        Ok(self.accumulator.finish()?)
    }
}

/// Parses and accumulates event `index` of the stream.
fn apply(
    accumulator: &mut MessageAccumulator,
    index: usize,
    sse: SseEventRef<'_>,
    on_event: &mut impl FnMut(&StreamEvent, Option<&CompletedBlock>),
) -> Result<(), StreamReadError> {
    // Pings carry nothing; skip them without parsing, as the SDKs do.
    if sse.event == Some("ping") {
        return Ok(());
    }
    let event =
        StreamEvent::from_json(sse.data).map_err(|source| StreamReadError::InvalidEvent {
            index,
            event: sse.event_type().to_owned(),
            source,
        })?;
    let completed = accumulator
        .push(&event)
        .map_err(|source| StreamReadError::Accumulate { index, source })?;
    on_event(&event, completed.as_ref());
    Ok(())
}

/// Reads a whole SSE body into its message.
pub fn read_message(body: &[u8]) -> Result<ResponseMessage, StreamReadError> {
    let mut reader = MessageStreamReader::new();
    reader.push(body, |_, _| {})?;
    reader.finish()
}
