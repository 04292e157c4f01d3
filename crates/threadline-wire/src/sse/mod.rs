//! Incremental server-sent-events (SSE) codec.
//!
//! The Messages API streams its response as `text/event-stream`. This module
//! turns the raw bytes of such a stream, cut into chunks at arbitrary
//! points, into [`SseEvent`]s ([`SseDecoder`]), and writes events back as
//! bytes ([`encode_event`], [`SseEvent::encode`]) for mock servers and tests.
//!
//! The decoder follows the WHATWG `EventSource` parsing rules, as the
//! Anthropic SDKs implement them:
//!
//! - lines end in `\n`, `\r\n` or `\r` (a `\r\n` split across two chunks is
//!   one line ending); a UTF-8 byte-order mark at the very start is skipped;
//! - lines starting with `:` are comments; `name:value` is a field, with one
//!   leading space of the value removed; a line without `:` is a field with
//!   an empty value; unknown fields are ignored;
//! - `data` lines are joined with `\n`; `event` sets the event type; `id`
//!   sets the last event id, which sticks to later events (an `id` value
//!   containing NUL is ignored); `retry` is kept only if it is all ASCII
//!   digits;
//! - a blank line dispatches the event, **but only if it had at least one
//!   `data` line** (WHATWG: an empty data buffer dispatches nothing). A block
//!   with only `event:`/`id:`/`retry:` lines yields no event; its `id` and
//!   `retry` still update [`SseDecoder::last_event_id`] and
//!   [`SseDecoder::reconnection_time`].
//!
//! At end of input, [`SseDecoder::finish`] **discards** an event that was not
//! terminated by a blank line (as WHATWG does; the Python SDK instead
//! flushes it), but reports the discard as
//! [`SseError::TruncatedEvent`], so that a connection cut in the middle of
//! an event cannot pass for a clean end of stream.
//!
//! Memory is bounded: an event whose buffered bytes exceed the decoder's
//! limit (16 MiB by default) is refused with [`SseError::EventTooLarge`] as
//! soon as the limit is crossed, whatever the chunking.
//!
//! # Example
//!
//! ```rust
//! use threadline_wire::sse::{SseDecoder, SseError};
//!
//! let mut decoder = SseDecoder::new();
//! // The first chunk ends in the middle of the data line.
//! decoder.push(b"event: message_start\ndata: {\"type\":");
//! assert_eq!(decoder.next_event()?, None);
//!
//! decoder.push(b"\"message_start\"}\n\n: keep-alive\n");
//! let event = decoder.next_event()?.expect("the blank line ended the event");
//! assert_eq!(event.event.as_deref(), Some("message_start"));
//! assert_eq!(event.data, r#"{"type":"message_start"}"#);
//! assert_eq!(decoder.next_event()?, None);
//!
//! // A clean end of stream.
//! assert_eq!(decoder.finish()?, None);
//! # Ok::<(), SseError>(())
//! ```

mod decode;
mod encode;
mod error;

pub use decode::{DEFAULT_MAX_EVENT_SIZE, MAX_EVENT_ID_SIZE, SseDecoder};
pub use encode::{encode_comment, encode_event};
pub use error::{SseEncodeError, SseError};

/// One decoded server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SseEvent {
    /// The value of the event's last `event` field, as written (possibly
    /// empty); `None` if it had none. See [`SseEvent::event_type`] for the
    /// WHATWG default.
    pub event: Option<String>,
    /// The event's `data` lines, joined with `\n`.
    pub data: String,
    /// The last event id in force when the event was dispatched: set by an
    /// `id` field of this event or of an earlier one (ids are sticky).
    pub id: Option<String>,
    /// The value of this event's `retry` field, if it had a valid one.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// An event with only data.
    pub fn new(data: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            ..Self::default()
        }
    }

    /// An event with a type and data.
    pub fn with_event(event: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            event: Some(event.into()),
            data: data.into(),
            ..Self::default()
        }
    }

    /// The event type, with the WHATWG default: `"message"` when the event
    /// had no `event` field or an empty one.
    pub fn event_type(&self) -> &str {
        match self.event.as_deref() {
            Some(e) if !e.is_empty() => e,
            _ => "message",
        }
    }

    /// This event, borrowed.
    pub fn borrowed(&self) -> SseEventRef<'_> {
        SseEventRef {
            event: self.event.as_deref(),
            data: &self.data,
            id: self.id.as_deref(),
            retry: self.retry,
        }
    }
}

/// One decoded server-sent event, borrowed: what [`SseDecoder::push_each`] hands out, the
/// fields of an [`SseEvent`] without their allocations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SseEventRef<'a> {
    /// The value of the event's last `event` field, as written (possibly empty); `None` if
    /// it had none.
    pub event: Option<&'a str>,
    /// The event's `data` lines, joined with `\n`.
    pub data: &'a str,
    /// The last event id in force when the event was dispatched.
    pub id: Option<&'a str>,
    /// The value of this event's `retry` field, if it had a valid one.
    pub retry: Option<u64>,
}

impl SseEventRef<'_> {
    /// The event type, with the WHATWG default: `"message"` when the event had no `event`
    /// field or an empty one.
    pub fn event_type(&self) -> &str {
        match self.event {
            Some(e) if !e.is_empty() => e,
            _ => "message",
        }
    }

    /// The event, owned.
    pub fn into_owned(self) -> SseEvent {
        SseEvent {
            event: self.event.map(str::to_owned),
            data: self.data.to_owned(),
            id: self.id.map(str::to_owned),
            retry: self.retry,
        }
    }
}

impl From<SseEventRef<'_>> for SseEvent {
    fn from(event: SseEventRef<'_>) -> Self {
        event.into_owned()
    }
}
