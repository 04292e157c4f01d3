//! Errors of the SSE codec.

/// An error found while decoding a server-sent-events byte stream.
///
/// Offsets are byte offsets in the whole stream as pushed into the
/// [`SseDecoder`](super::SseDecoder), counting a stripped byte-order mark.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// The event being read (or a single line of it) grew past the
    /// decoder's limit. The decoder refused to buffer more and is now
    /// poisoned: every later call returns [`SseError::Poisoned`].
    #[error("SSE event starting at byte {offset} exceeds the limit of {limit} bytes")]
    EventTooLarge {
        /// The limit, in bytes (see
        /// [`SseDecoder::with_max_event_size`](super::SseDecoder::with_max_event_size)).
        limit: usize,
        /// Stream offset of the first line of the refused event.
        offset: u64,
    },
    /// A field kept by the decoder (`data`, `event` or `id`) is not valid
    /// UTF-8. The event is dropped; the decoder stays usable and continues
    /// with the next event.
    #[error(
        "SSE `{field}` field of the event at byte {offset} is not valid UTF-8 \
         (valid up to byte {valid_up_to} of the field)"
    )]
    InvalidUtf8 {
        /// The field's name: `"data"`, `"event"` or `"id"`.
        field: &'static str,
        /// Stream offset of the event's first line (for `id`: of the `id` line).
        offset: u64,
        /// Length of the valid UTF-8 prefix of the field's value.
        valid_up_to: usize,
    },
    /// The stream ended inside an event: fields were read after the last
    /// blank line, or the last line had no line terminator. The partial
    /// event is discarded (as WHATWG specifies) and reported with this error
    /// so that a cut connection can be told apart from a clean end.
    #[error(
        "SSE stream ended inside the event starting at byte {offset} ({buffered} bytes discarded)"
    )]
    TruncatedEvent {
        /// Stream offset of the first line of the discarded event.
        offset: u64,
        /// Number of bytes the decoder held for that event and discarded.
        buffered: usize,
    },
    /// The decoder already reported [`SseError::EventTooLarge`] and decodes
    /// nothing more.
    #[error("SSE decoder is unusable after an earlier error")]
    Poisoned,
}

/// An error of the SSE encoder: a value that the SSE format cannot carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseEncodeError {
    /// An `event` or `id` value contains a carriage return or a line feed;
    /// SSE has no escape for them in those fields.
    #[error("SSE `{field}` value contains a line break")]
    LineBreak {
        /// The field's name: `"event"` or `"id"`.
        field: &'static str,
    },
    /// An `id` value contains U+0000 NULL, which decoders ignore.
    #[error("SSE `id` value contains a NUL character")]
    NulInId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_context() {
        let e = SseError::EventTooLarge {
            limit: 10,
            offset: 42,
        };
        let s = e.to_string();
        assert!(s.contains("42") && s.contains("10"), "{s}");
        let e = SseError::InvalidUtf8 {
            field: "data",
            offset: 7,
            valid_up_to: 3,
        };
        assert!(e.to_string().contains("`data`"));
        let e = SseEncodeError::LineBreak { field: "event" };
        assert!(e.to_string().contains("`event`"));
    }
}
