//! A response body, read incrementally, as a stream of [`StreamEvent`]s.
//!
//! [`SseEventStream`] decodes the body's bytes as they arrive (never buffering the whole
//! response), parses each event, and checks the protocol as far as a transport must: it ends
//! cleanly only after `message_stop`; a body that ends earlier, or inside an event, is a
//! [`Truncated`](ServiceErrorKind::Truncated) error; an `error` event becomes an API error; a
//! `message_stop` that leaves a block open after a `max_tokens` stop is a
//! [`MaxTokens`](ServiceErrorKind::MaxTokens) error. Every error after the first delivered
//! event is marked [`after_events`](ServiceError::after_events), so no layer resends it.
//! Memory is bounded by the largest event and the body by [`Limits`].

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use http_body::Body;
use threadline_wire::service::{ServiceError, ServiceErrorKind};
use threadline_wire::sse::{SseDecoder, SseError};
use threadline_wire::{ResponseMessage, StopReason, StreamEvent};

use crate::config::Limits;
use crate::secret::Redactor;
use threadline_wire::secret::Redact;
use threadline_wire::telemetry as names;

/// After `message_stop`, at most this much trailing body is read (to let the connection be
/// reused) before the body is dropped.
const MAX_TRAILING_BYTES: u64 = 64 * 1024;

/// The protocol state a transport tracks (not the message: the caller accumulates that).
#[derive(Debug, Default)]
struct Progress {
    delivered: bool,
    started: bool,
    stopped: bool,
    /// Indices of blocks started and not yet stopped, with their type (a map: a stream may
    /// open a million blocks before it stops any, and each stop must not walk them all).
    open: BTreeMap<usize, String>,
    stop_reason: Option<StopReason>,
    /// The input figures seen so far (`message_delta` usage may carry only some of them),
    /// recorded together as the conventions' total input.
    input: InputTokens,
}

/// The input token figures of a response, as last reported.
#[derive(Debug, Default, Clone, Copy)]
struct InputTokens {
    uncached: Option<u64>,
    cache_read: Option<u64>,
    cache_creation: Option<u64>,
}

impl Progress {
    fn fail(&self, error: ServiceError) -> ServiceError {
        if self.delivered {
            error.after_events()
        } else {
            error
        }
    }

    /// Updates the state with an event, or turns it into the error it means.
    fn observe(
        &mut self,
        event: &StreamEvent,
        span: &tracing::Span,
        redactor: &Redactor,
    ) -> Result<(), ServiceError> {
        match event {
            StreamEvent::MessageStart(start) => {
                self.started = true;
                span.record(
                    names::GEN_AI_RESPONSE_ID,
                    redactor.redact(start.message.id.as_str()).as_ref(),
                );
                if let Some(usage) = &start.message.usage {
                    record_usage(span, usage, &mut self.input);
                }
            }
            StreamEvent::ContentBlockStart(start) => {
                self.open
                    .insert(start.index, start.content_block.tag().to_owned());
            }
            StreamEvent::ContentBlockStop(stop) => {
                self.open.remove(&stop.index);
            }
            StreamEvent::MessageDelta(delta) => {
                if let Some(reason) = &delta.delta.stop_reason {
                    span.record(
                        names::GEN_AI_RESPONSE_FINISH_REASONS,
                        redactor.redact(reason.as_str()).as_ref(),
                    );
                    self.stop_reason = Some(reason.clone());
                }
                if let Some(usage) = &delta.usage {
                    record_usage(span, usage, &mut self.input);
                }
            }
            StreamEvent::MessageStop(_) => {
                self.stopped = true;
                if let Some((index, block)) = self.open.first_key_value() {
                    let error = if self.stop_reason == Some(StopReason::MaxTokens) {
                        ServiceError::new(
                            ServiceErrorKind::MaxTokens,
                            format!(
                                "the output reached max_tokens inside block {index} (`{block}`), \
                                 which is incomplete"
                            ),
                        )
                    } else {
                        ServiceError::new(
                            ServiceErrorKind::Truncated,
                            format!(
                                "`message_stop` arrived with block {index} (`{block}`) still open"
                            ),
                        )
                    };
                    return Err(error);
                }
            }
            StreamEvent::Error(error) => {
                return Err(ServiceError::from_error_event(
                    error.error.clone(),
                    error.request_id.clone(),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The error for a body that ended before `message_stop`.
    fn ended_early(&self) -> ServiceError {
        if !self.delivered {
            return ServiceError::new(
                ServiceErrorKind::Connection,
                "the connection closed before the first event",
            );
        }
        let message = match self.open.first_key_value() {
            Some((index, block)) => format!(
                "the stream ended inside block {index} (`{block}`) before its `content_block_stop`"
            ),
            None if self.started => "the stream ended before `message_stop`".to_owned(),
            None => "the stream ended before `message_start`".to_owned(),
        };
        ServiceError::new(ServiceErrorKind::Truncated, message)
    }
}

/// Records `usage` on the span. The conventions' input tokens count cached tokens in: the
/// total of the figures last reported for each kind.
fn record_usage(span: &tracing::Span, usage: &threadline_wire::Usage, input: &mut InputTokens) {
    let before = (input.uncached, input.cache_read, input.cache_creation);
    input.uncached = usage.input_tokens.or(input.uncached);
    input.cache_read = usage.cache_read_input_tokens.or(input.cache_read);
    input.cache_creation = usage.cache_creation_input_tokens.or(input.cache_creation);
    if before != (input.uncached, input.cache_read, input.cache_creation) {
        let total = [input.uncached, input.cache_read, input.cache_creation]
            .into_iter()
            .flatten()
            .fold(0u64, u64::saturating_add);
        span.record(names::GEN_AI_USAGE_INPUT_TOKENS, names::int(total));
    }
    for (name, count) in names::usage_counts(usage) {
        span.record(name, count);
    }
}

/// The events of one streamed response body.
pub(crate) struct SseEventStream<B> {
    body: Pin<Box<B>>,
    decoder: SseDecoder,
    progress: Progress,
    read: u64,
    limits: Limits,
    /// Events decoded from a JSON (non-streamed) answer, served before the body.
    ready: VecDeque<StreamEvent>,
    /// The body has ended.
    eof: bool,
    done: bool,
    span: tracing::Span,
    redactor: Redactor,
}

impl<B> SseEventStream<B>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    pub(crate) fn new(body: B, limits: Limits, span: tracing::Span, redactor: Redactor) -> Self {
        SseEventStream {
            body: Box::pin(body),
            decoder: SseDecoder::with_max_event_size(limits.max_event_bytes),
            progress: Progress::default(),
            read: 0,
            limits,
            ready: VecDeque::new(),
            eof: false,
            done: false,
            span,
            redactor,
        }
    }

    /// A stream replaying a complete non-streamed message as the events that build it.
    pub(crate) fn from_message(
        body: B,
        message: ResponseMessage,
        limits: Limits,
        span: tracing::Span,
        redactor: Redactor,
    ) -> Self {
        let mut stream = SseEventStream::new(body, limits, span, redactor);
        stream.ready = message_events(message).into();
        stream
    }

    fn finish(&mut self, error: ServiceError) -> Poll<Option<Result<StreamEvent, ServiceError>>> {
        self.done = true;
        let error = self.redactor.error(self.progress.fail(error));
        self.span
            .record(names::ERROR_TYPE, names::error_type(&error));
        tracing::debug!(parent: &self.span, error = %error, "stream failed");
        Poll::Ready(Some(Err(error)))
    }

    fn deliver(&mut self, event: StreamEvent) -> Poll<Option<Result<StreamEvent, ServiceError>>> {
        if let Err(error) = self.progress.observe(&event, &self.span, &self.redactor) {
            return self.finish(error);
        }
        self.progress.delivered = true;
        Poll::Ready(Some(Ok(event)))
    }

    /// Reads (and discards) what follows `message_stop`, so the connection can be reused.
    fn poll_drain(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<StreamEvent, ServiceError>>> {
        loop {
            match self.body.as_mut().poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        self.read += data.len() as u64;
                        if self.read > MAX_TRAILING_BYTES {
                            self.done = true;
                            return Poll::Ready(None);
                        }
                    }
                }
                Poll::Ready(_) => {
                    self.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<B> Stream for SseEventStream<B>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<StreamEvent, ServiceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(event) = this.ready.pop_front() {
                return this.deliver(event);
            }
            if this.progress.stopped {
                if this.eof {
                    this.done = true;
                    return Poll::Ready(None);
                }
                return this.poll_drain(cx);
            }
            if this.eof {
                let error = this.progress.ended_early();
                return this.finish(error);
            }
            match this.decoder.next_event() {
                Ok(Some(sse)) => {
                    return match StreamEvent::from_json(&sse.data) {
                        Ok(event) => this.deliver(event),
                        Err(e) => {
                            let message = format!(
                                "event `{}` is not valid stream-event JSON: {e}",
                                sse.event_type()
                            );
                            this.finish(
                                ServiceError::new(ServiceErrorKind::Decode, message).with_source(e),
                            )
                        }
                    };
                }
                Ok(None) => {}
                Err(e) => return this.finish(sse_error(e)),
            }
            match this.body.as_mut().poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        this.read += data.len() as u64;
                        if this.read > this.limits.max_response_bytes {
                            let message = format!(
                                "the response body passed the limit of {} bytes",
                                this.limits.max_response_bytes
                            );
                            return this
                                .finish(ServiceError::new(ServiceErrorKind::Decode, message));
                        }
                        this.decoder.push(data);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    // Before any event the exchange failed (retryable); after, the output is cut.
                    let error = if this.progress.delivered {
                        let cut = this.progress.ended_early();
                        ServiceError::new(
                            ServiceErrorKind::Truncated,
                            format!("the connection failed mid-stream ({e}): {}", cut.message()),
                        )
                    } else {
                        ServiceError::new(
                            ServiceErrorKind::Connection,
                            format!("the connection failed before the first event: {e}"),
                        )
                    };
                    return this.finish(error.with_source(e));
                }
                Poll::Ready(None) => {
                    this.eof = true;
                    // A final event that lacks only its blank line still counts (some servers
                    // end that way); one cut inside its data does not.
                    this.decoder.push(b"\n\n");
                    loop {
                        match this.decoder.next_event() {
                            Ok(Some(sse)) => match StreamEvent::from_json(&sse.data) {
                                Ok(event) => this.ready.push_back(event),
                                Err(_) => break,
                            },
                            Ok(None) => break,
                            Err(e) => return this.finish(sse_error(e)),
                        }
                    }
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

fn sse_error(e: SseError) -> ServiceError {
    let kind = match e {
        SseError::TruncatedEvent { .. } => ServiceErrorKind::Truncated,
        _ => ServiceErrorKind::Decode,
    };
    ServiceError::new(kind, e.to_string()).with_source(e)
}

/// The events that build `message`: `message_start` with empty content, each block whole
/// (start, stop), `message_delta` with the stop reason and usage, `message_stop`.
fn message_events(message: ResponseMessage) -> Vec<StreamEvent> {
    let mut shell = message.clone();
    shell.content = Vec::new();
    shell.stop_reason = None;
    shell.stop_sequence = None;
    let mut events = Vec::with_capacity(message.content.len() * 2 + 3);
    let start = serde_json::json!({"type": "message_start", "message": shell});
    events.push(start);
    for (index, block) in message.content.iter().enumerate() {
        events.push(serde_json::json!({"type": "content_block_start", "index": index, "content_block": block}));
        events.push(serde_json::json!({"type": "content_block_stop", "index": index}));
    }
    let mut delta = serde_json::json!({"type": "message_delta", "delta": {
        "stop_reason": message.stop_reason, "stop_sequence": message.stop_sequence}});
    if let Some(usage) = &message.usage {
        delta["usage"] = serde_json::json!(usage);
    }
    events.push(delta);
    events.push(serde_json::json!({"type": "message_stop"}));
    events
        .into_iter()
        .filter_map(|value| serde_json::from_value(value).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: &str) -> StreamEvent {
        StreamEvent::from_json(json).expect("a valid event")
    }

    #[test]
    fn many_blocks_open_at_once_are_tracked_without_a_walk_per_stop() {
        // With a walk of the open blocks per stop this is 10^10 steps; with the map, a moment.
        const BLOCKS: usize = 100_000;
        let (span, redactor) = (tracing::Span::none(), Redactor::default());
        let mut progress = Progress::default();
        let start = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}"#;
        progress
            .observe(&event(start), &span, &redactor)
            .expect("a start");
        for index in 0..BLOCKS {
            let opened = format!(
                r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
            );
            progress
                .observe(&event(&opened), &span, &redactor)
                .expect("opened");
        }
        // Stopped from the last: a list kept in order would be walked whole each time.
        for index in (1..BLOCKS).rev() {
            let stopped = format!(r#"{{"type":"content_block_stop","index":{index}}}"#);
            progress
                .observe(&event(&stopped), &span, &redactor)
                .expect("stopped");
        }
        let error = progress
            .observe(&event(r#"{"type":"message_stop"}"#), &span, &redactor)
            .expect_err("block 0 is still open");
        assert!(error.message().contains("block 0 (`text`)"), "{error}");
    }
}
