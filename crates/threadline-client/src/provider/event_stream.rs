//! Bedrock's stream framing, the AWS event stream (`application/vnd.amazon.eventstream`),
//! read as the API's SSE: each frame is checked and parsed by `aws-smithy-eventstream` (both
//! CRC-32s, the typed headers), each `chunk`'s payload `{"bytes": "<base64>"}` decoded to the
//! event's JSON, and the JSON handed on as one SSE event — so the client's one stream reader
//! (limits, usage, the protocol's checks) reads Bedrock's streams as it reads the API's. An
//! `exception` frame (or a generic `error` frame) becomes the API's `error` event with the
//! error type the exception means, so a throttled stream is a rate-limit error here as on the
//! API. A frame is bounded before it is buffered: its declared length may not pass the
//! client's largest event (base64 and headers allowed for).

use std::pin::Pin;
use std::task::{Context, Poll};

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::Message;
use base64::Engine as _;
use bytes::{Buf as _, Bytes, BytesMut};
use http_body::{Body, Frame};

pub(crate) use threadline_wire::platform::EVENT_STREAM_CONTENT_TYPE;

/// What a frame may hold besides its event: the prelude, the headers, the JSON and base64
/// wrapping, a padding field.
const FRAME_OVERHEAD: usize = 64 * 1024;

/// Why an event stream could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventStreamError<E> {
    /// The body failed.
    #[error(transparent)]
    Body(E),
    /// A frame is malformed: a CRC that does not match, a header that does not parse.
    #[error("invalid event-stream frame: {0}")]
    Frame(String),
    /// A frame declares more bytes than the client takes for one event.
    #[error("an event-stream frame of {declared} bytes passes the limit of {limit}")]
    TooLarge {
        /// The frame's declared length.
        declared: usize,
        /// The largest frame taken.
        limit: usize,
    },
}

/// A response body of event-stream frames, read as the API's SSE bytes: an
/// [`http_body::Body`] over another. See the [module documentation](self).
///
/// ```
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Full};
/// use threadline_client::provider::EventStreamToSse;
///
/// # futures::executor::block_on(async {
/// // No frames, no events; a body cut inside a frame is an error.
/// let empty = EventStreamToSse::new(Full::new(Bytes::new()), 1 << 20);
/// assert!(empty.collect().await.expect("nothing to read").to_bytes().is_empty());
/// let cut = EventStreamToSse::new(Full::new(Bytes::from_static(&[0, 0, 0, 64, 0])), 1 << 20);
/// assert!(cut.collect().await.is_err());
/// # });
/// ```
pub struct EventStreamToSse<B> {
    inner: Pin<Box<B>>,
    buffer: BytesMut,
    max_frame: usize,
    done: bool,
}

impl<B> EventStreamToSse<B> {
    /// `inner` read frame by frame, no frame past `max_event_bytes` of event (plus its
    /// wrapping).
    pub fn new(inner: B, max_event_bytes: usize) -> Self {
        // base64 holds 3 bytes in 4.
        let max_frame = max_event_bytes
            .saturating_add(max_event_bytes / 3 + 4)
            .saturating_add(FRAME_OVERHEAD);
        EventStreamToSse {
            inner: Box::pin(inner),
            buffer: BytesMut::new(),
            max_frame,
            done: false,
        }
    }

    /// The SSE bytes of every complete frame buffered.
    fn drain<E>(&mut self) -> Result<Vec<u8>, EventStreamError<E>> {
        let mut out = Vec::new();
        while let Some(head) = self.buffer.get(..4) {
            let declared = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
            if declared > self.max_frame {
                return Err(EventStreamError::TooLarge {
                    declared,
                    limit: self.max_frame,
                });
            }
            // A frame is read only once all of it is there, from its own bytes (the parser's
            // slices of them are then shared, not copied).
            if self.buffer.len() < declared {
                break;
            }
            // A length below the prelude's and CRC's 16 bytes cannot be a frame.
            let frame = self
                .buffer
                .split_to(declared.max(16).min(self.buffer.len()))
                .freeze();
            match read_message_from(frame) {
                Ok(message) => sse_of(&message, &mut out)?,
                Err(e) => return Err(EventStreamError::Frame(e.to_string())),
            }
        }
        Ok(out)
    }
}

/// A header's string value.
fn header<'m>(message: &'m Message, name: &str) -> Option<&'m str> {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| h.value().as_string().ok())
        .map(|s| s.as_str())
}

/// The API's error type a stream exception of Bedrock's means (docs/api-notes.md#cloud-platforms).
fn error_type(exception: &str) -> &'static str {
    match exception {
        "throttlingException" => "rate_limit_error",
        "serviceUnavailableException" => "overloaded_error",
        "validationException" => "invalid_request_error",
        "modelTimeoutException" => "timeout_error",
        _ => "api_error",
    }
}

/// Appends one frame's SSE event (if it carries one) to `out`.
fn sse_of<E>(message: &Message, out: &mut Vec<u8>) -> Result<(), EventStreamError<E>> {
    let bad = |what: &str| EventStreamError::Frame(what.to_owned());
    let data = match header(message, ":message-type") {
        Some("event") => {
            if header(message, ":event-type") != Some("chunk") {
                return Ok(());
            }
            #[derive(serde::Deserialize)]
            struct Chunk<'a> {
                #[serde(borrow)]
                bytes: std::borrow::Cow<'a, str>,
            }
            let chunk: Chunk<'_> = serde_json::from_slice(message.payload())
                .map_err(|_| bad("a chunk's payload is not {\"bytes\": …}"))?;
            // Decoded in place after `data: `; a JSON written over several lines (never
            // compact JSON) is then split into one `data:` line each.
            let start = out.len();
            out.extend_from_slice(b"data: ");
            base64::engine::general_purpose::STANDARD
                .decode_vec(chunk.bytes.as_bytes(), out)
                .map_err(|_| bad("a chunk's bytes are not base64"))?;
            // A lone `\r` ends an SSE line too: it is split on like `\n` (so that no byte of
            // the payload can start a line of its own, an `id:` or `event:`).
            if memchr::memchr2(b'\n', b'\r', &out[start + 6..]).is_none() {
                out.extend_from_slice(b"\n\n");
                return Ok(());
            }
            let data = out.split_off(start + 6);
            out.truncate(start);
            data
        }
        Some(kind @ ("exception" | "error")) => {
            let (name, text) = if kind == "exception" {
                #[derive(serde::Deserialize, Default)]
                struct Payload {
                    #[serde(default, alias = "Message")]
                    message: String,
                }
                let payload: Payload =
                    serde_json::from_slice(message.payload()).unwrap_or_default();
                let name = header(message, ":exception-type").unwrap_or("exception");
                (name.to_owned(), payload.message)
            } else {
                let name = header(message, ":error-code").unwrap_or("error");
                let text = header(message, ":error-message").unwrap_or("");
                (name.to_owned(), text.to_owned())
            };
            let event = serde_json::json!({
                "type": "error",
                "error": {
                    "type": error_type(&name),
                    "message": format!("Amazon Bedrock {name}: {text}"),
                },
            });
            serde_json::to_vec(&event).map_err(|_| bad("cannot write the error"))?
        }
        _ => return Err(bad("a frame without a known :message-type")),
    };
    // One `data:` line per line of the JSON (compact JSON has one; SSE joins them back).
    for line in data.split(|&b| b == b'\n') {
        for part in line
            .strip_suffix(b"\r")
            .unwrap_or(line)
            .split(|&b| b == b'\r')
        {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(part);
            out.push(b'\n');
        }
    }
    out.push(b'\n');
    Ok(())
}

impl<B> Body for EventStreamToSse<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = EventStreamError<B::Error>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match this.inner.as_mut().poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(EventStreamError::Body(e))));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    if this.buffer.has_remaining() {
                        let left = this.buffer.len();
                        return Poll::Ready(Some(Err(EventStreamError::Frame(format!(
                            "the body ended inside a frame ({left} bytes left)"
                        )))));
                    }
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    this.buffer.extend_from_slice(&data);
                    match this.drain() {
                        Ok(sse) if sse.is_empty() => {}
                        Ok(sse) => return Poll::Ready(Some(Ok(Frame::data(Bytes::from(sse))))),
                        Err(e) => {
                            this.done = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::{Header, HeaderValue};
    use http_body_util::{BodyExt, StreamBody};

    use super::*;

    fn frame(headers: &[(&'static str, &'static str)], payload: &[u8]) -> Vec<u8> {
        let headers = headers
            .iter()
            .map(|(n, v)| Header::new(*n, HeaderValue::String((*v).into())))
            .collect();
        let mut out = Vec::new();
        write_message_to(
            &Message::new_from_parts(headers, Bytes::copy_from_slice(payload)),
            &mut out,
        )
        .expect("writes");
        out
    }

    fn chunk(json: &str) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(json);
        let payload = format!(r#"{{"bytes":"{b64}","p":"abcdefgh"}}"#);
        frame(
            &[
                (":event-type", "chunk"),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.as_bytes(),
        )
    }

    /// The SSE text of `bytes` delivered in pieces of `step` bytes.
    async fn sse(bytes: Vec<u8>, step: usize, max_event: usize) -> Result<String, String> {
        let pieces: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = bytes
            .chunks(step.max(1))
            .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
            .collect();
        let body = StreamBody::new(futures::stream::iter(pieces));
        let collected = EventStreamToSse::new(body, max_event)
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8(collected.to_bytes().to_vec()).expect("UTF-8"))
    }

    #[tokio::test]
    async fn chunks_become_sse_events_in_any_piece_sizes() {
        let mut bytes = chunk(r#"{"type":"message_start"}"#);
        bytes.extend(chunk(r#"{"type":"message_stop"}"#));
        let expected =
            "data: {\"type\":\"message_start\"}\n\ndata: {\"type\":\"message_stop\"}\n\n";
        for step in [1, 3, 16, 1000] {
            assert_eq!(
                sse(bytes.clone(), step, 1 << 20).await.as_deref(),
                Ok(expected)
            );
        }
    }

    #[tokio::test]
    async fn a_lone_carriage_return_cannot_start_a_line_of_its_own() {
        let bytes = chunk("{\"type\":\"ping\"}\rid: injected\revent: error\r\r");
        let text = sse(bytes, 1000, 1 << 20).await.expect("reads");
        assert_eq!(
            text,
            "data: {\"type\":\"ping\"}\ndata: id: injected\ndata: event: error\ndata: \n\n"
        );
        let mut decoder = threadline_wire::sse::SseDecoder::new();
        decoder.push(text.as_bytes());
        let event = decoder.next_event().expect("valid").expect("one event");
        assert_eq!((event.id, event.event), (None, None));
    }

    #[tokio::test]
    async fn an_exception_frame_is_the_apis_error_event() {
        let bytes = frame(
            &[
                (":exception-type", "throttlingException"),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            br#"{"message":"Too many requests"}"#,
        );
        let text = sse(bytes, 7, 1 << 20).await.expect("decodes");
        let data = text.trim().strip_prefix("data: ").expect("one event");
        let event: serde_json::Value = serde_json::from_str(data).expect("JSON");
        assert_eq!(event["type"], "error");
        assert_eq!(event["error"]["type"], "rate_limit_error");
        assert_eq!(
            event["error"]["message"],
            "Amazon Bedrock throttlingException: Too many requests"
        );
    }

    #[tokio::test]
    async fn corrupt_cut_and_oversized_frames_are_errors() {
        let mut corrupt = chunk(r#"{"type":"ping"}"#);
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        let error = sse(corrupt, 5, 1 << 20).await.expect_err("a bad CRC");
        assert!(error.contains("invalid event-stream frame"), "{error}");
        let mut cut = chunk(r#"{"type":"ping"}"#);
        cut.truncate(cut.len() - 3);
        let error = sse(cut, 5, 1 << 20).await.expect_err("cut short");
        assert!(error.contains("ended inside a frame"), "{error}");
        // A frame declaring 4 GiB is refused from its first four bytes, never buffered.
        let error = sse(vec![0xff, 0xff, 0xff, 0xff, 0, 0], 6, 1024)
            .await
            .expect_err("too large");
        assert!(error.contains("passes the limit"), "{error}");
    }

    mod properties {
        use proptest::prelude::*;
        use threadline_wire::sse::SseDecoder;

        use super::*;

        fn run(bytes: Vec<u8>, cuts: &[usize]) -> Result<String, String> {
            let mut pieces = Vec::new();
            let mut start = 0;
            for &cut in cuts {
                let end = (start + cut).min(bytes.len());
                pieces.push(bytes[start..end].to_vec());
                start = end;
            }
            pieces.push(bytes[start..].to_vec());
            let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = pieces
                .into_iter()
                .map(|p| Ok(Frame::data(Bytes::from(p))))
                .collect();
            let body = StreamBody::new(futures::stream::iter(frames));
            let collected =
                futures::executor::block_on(EventStreamToSse::new(body, 1 << 16).collect())
                    .map_err(|e| e.to_string())?;
            Ok(String::from_utf8_lossy(&collected.to_bytes()).into_owned())
        }

        proptest! {
            /// Whatever the events (any JSON text, line breaks included) and however the body
            /// is cut, the SSE read back is each event's data, in order.
            #[test]
            fn every_chunk_reads_back_as_its_event(
                events in prop::collection::vec("[ -~\\n\\u{e9}\\u{1F600}]{1,60}", 0..8),
                cuts in prop::collection::vec(0usize..40, 0..30),
            ) {
                let mut bytes = Vec::new();
                for event in &events {
                    bytes.extend(chunk(event));
                }
                let sse = run(bytes, &cuts).expect("valid frames decode");
                let mut decoder = SseDecoder::new();
                decoder.push(sse.as_bytes());
                let mut read = Vec::new();
                while let Ok(Some(event)) = decoder.next_event() {
                    read.push(event.data);
                }
                let expected: Vec<String> = events.iter().map(|e| e.replace('\r', "")).collect();
                prop_assert_eq!(read, expected);
            }

            /// Hostile bytes never panic and never make the reader hold past its bound: they
            /// read as events or fail as framing errors.
            #[test]
            fn hostile_bytes_fail_cleanly(
                bytes in prop::collection::vec(any::<u8>(), 0..400),
                cuts in prop::collection::vec(0usize..50, 0..10),
            ) {
                let _ = run(bytes, &cuts);
            }
        }
    }
}
