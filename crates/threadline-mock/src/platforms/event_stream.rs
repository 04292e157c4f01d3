//! Bedrock's streaming framing: the AWS event stream (`application/vnd.amazon.eventstream`).
//!
//! Each Messages API event is one binary frame (framed by `aws-smithy-eventstream`: a
//! length prelude and a CRC-32 over it, string headers, the payload, a CRC-32 over all of it)
//! with the headers `:event-type: chunk`, `:content-type: application/json` and
//! `:message-type: event`, and the payload `{"bytes":"<base64 of the event's JSON>"}`, as the
//! recorded Bedrock streams in `fixtures/recorded/bedrock/` carry them. There is no `event:`
//! name: the type is the JSON's own. Bedrock sends no `ping`. An error inside the stream is an
//! `exception` frame (`:exception-type` the stream member's name, payload `{"message": …}`).

use std::pin::Pin;
use std::task::{Context, Poll};

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use base64::Engine as _;
use bytes::Bytes;
use http_body::{Body, Frame};
use threadline_wire::sse::{SseDecoder, SseEvent};

use crate::server::{Abort, MockBody};

pub(crate) use threadline_wire::platform::EVENT_STREAM_CONTENT_TYPE as CONTENT_TYPE;

fn string_header(name: &'static str, value: &'static str) -> Header {
    Header::new(name, HeaderValue::String(value.into()))
}

/// One `chunk` frame carrying the event JSON `data`.
pub(crate) fn chunk_frame(data: &[u8], out: &mut Vec<u8>) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    let payload = serde_json::to_vec(&serde_json::json!({ "bytes": encoded }))
        .expect("a JSON object serializes");
    let message = Message::new_from_parts(
        vec![
            string_header(":event-type", "chunk"),
            string_header(":content-type", "application/json"),
            string_header(":message-type", "event"),
        ],
        payload,
    );
    write_message_to(&message, out).expect("a chunk frame is within the framing's limits");
}

/// One `exception` frame: `exception` is the stream member's name (`throttlingException`,
/// `internalServerException`, …), the payload `{"message": …}`.
pub(crate) fn exception_frame(exception: &'static str, message: &str, out: &mut Vec<u8>) {
    let payload = serde_json::to_vec(&serde_json::json!({ "message": message }))
        .expect("a JSON object serializes");
    let message = Message::new_from_parts(
        vec![
            string_header(":exception-type", exception),
            string_header(":content-type", "application/json"),
            string_header(":message-type", "exception"),
        ],
        payload,
    );
    write_message_to(&message, out).expect("an exception frame is within the framing's limits");
}

/// The events of the SSE text `sse` framed as Bedrock streams them (what the mock answers a
/// Bedrock stream with, for a test or a benchmark of a reader).
pub fn bedrock_event_stream(sse: &[u8]) -> Vec<u8> {
    let mut decoder = SseDecoder::new();
    decoder.push(sse);
    let mut out = Vec::new();
    while let Ok(Some(event)) = decoder.next_event() {
        frame_event(&event, &mut out);
    }
    out
}

/// The frame of one API event: a `chunk`, but for an `error` event, which Bedrock sends as
/// the exception its stream declares for it (a `ping` is not sent at all).
fn frame_event(event: &SseEvent, out: &mut Vec<u8>) {
    match event.event_type() {
        "ping" => {}
        "error" => {
            let error: serde_json::Value = serde_json::from_str(&event.data).unwrap_or_default();
            let message = error["error"]["message"].as_str().unwrap_or("");
            exception_frame(stream_exception(&error["error"]["type"]), message, out);
        }
        _ => chunk_frame(event.data.as_bytes(), out),
    }
}

/// The member of Bedrock's `ResponseStream` an API error type arrives as (docs/platforms.md
/// §1.4).
fn stream_exception(error_type: &serde_json::Value) -> &'static str {
    match error_type.as_str().unwrap_or("") {
        "rate_limit_error" => "throttlingException",
        "overloaded_error" => "serviceUnavailableException",
        "invalid_request_error" => "validationException",
        "timeout_error" => "modelTimeoutException",
        _ => "internalServerException",
    }
}

/// A streamed answer's SSE body re-framed as the event stream, event by event as they come.
pub(crate) struct EventStreamBody {
    inner: MockBody,
    sse: SseDecoder,
    done: bool,
}

impl EventStreamBody {
    pub(crate) fn new(inner: MockBody) -> EventStreamBody {
        EventStreamBody {
            inner,
            sse: SseDecoder::new(),
            done: false,
        }
    }

    /// The frames of the complete events decoded so far.
    fn frames(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Ok(Some(event)) = self.sse.next_event() {
            frame_event(&event, &mut out);
        }
        out
    }
}

impl Body for EventStreamBody {
    type Data = Bytes;
    type Error = Abort;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Abort>>> {
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(abort))) => return Poll::Ready(Some(Err(abort))),
                Poll::Ready(None) => {
                    self.done = true;
                    let mut out = self.frames();
                    if let Ok(Some(event)) = self.sse.finish() {
                        frame_event(&event, &mut out);
                    }
                    if out.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    self.sse.push(&data);
                    let out = self.frames();
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_smithy_eventstream::frame::read_message_from;

    use super::*;

    #[test]
    fn a_chunk_frame_carries_the_event_json_in_base64() {
        let mut out = Vec::new();
        chunk_frame(br#"{"type":"message_stop"}"#, &mut out);
        let message = read_message_from(&mut Bytes::from(out)).expect("a valid frame");
        let header = |name: &str| {
            message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| h.value().as_string().ok())
                .map(|s| s.as_str().to_owned())
        };
        assert_eq!(header(":event-type").as_deref(), Some("chunk"));
        assert_eq!(header(":message-type").as_deref(), Some("event"));
        let payload: serde_json::Value =
            serde_json::from_slice(message.payload()).expect("JSON payload");
        let bytes = payload["bytes"].as_str().expect("a bytes field");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(bytes)
            .expect("base64");
        assert_eq!(decoded, br#"{"type":"message_stop"}"#);
    }

    #[test]
    fn an_exception_frame_names_the_exception() {
        let mut out = Vec::new();
        exception_frame("throttlingException", "Too many requests", &mut out);
        let message = read_message_from(&mut Bytes::from(out)).expect("a valid frame");
        let names: Vec<_> = message
            .headers()
            .iter()
            .map(|h| h.name().as_str().to_owned())
            .collect();
        assert_eq!(names, [":exception-type", ":content-type", ":message-type"]);
        assert_eq!(
            &message.payload()[..],
            br#"{"message":"Too many requests"}"#
        );
    }
}
