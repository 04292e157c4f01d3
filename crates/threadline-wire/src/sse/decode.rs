//! Incremental SSE decoder.

use std::collections::VecDeque;

use memchr::{memchr, memchr2};

use super::{SseError, SseEvent, SseEventRef};

/// The default limit of [`SseDecoder::new`]: 16 MiB per event.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

/// An `id` field longer than this is ignored, as one holding NUL is. The last id is copied
/// into every event dispatched after it, so a long one would multiply a short stream into
/// gigabytes of queued copies; real event ids are short.
pub const MAX_EVENT_ID_SIZE: usize = 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A carried line buffer larger than this is released once its line is done,
/// so that one huge event does not pin its memory for the whole stream.
const KEEP_LINE_CAPACITY: usize = 64 * 1024;

/// Incremental decoder of a `text/event-stream` byte stream.
///
/// Feed the bytes with [`push`](Self::push), in chunks cut anywhere, and
/// take the decoded events with [`next_event`](Self::next_event) until it
/// returns `Ok(None)`. At end of input call [`finish`](Self::finish) until
/// it returns `Ok(None)` (or an error): it tells a clean end from a stream
/// cut inside an event.
///
/// `push` parses the chunk at once: lines complete inside the chunk are
/// parsed in place, only a line cut by the chunk's end is copied (and only
/// that part), and an event's data is copied once, into the `String` of the
/// returned event. Events decoded but not yet taken wait in a queue.
///
/// # Limits and errors
///
/// The decoder holds, for the event being read, its data, its event type
/// and the raw bytes of its unterminated line. When those exceed the limit
/// ([`DEFAULT_MAX_EVENT_SIZE`] or [`with_max_event_size`](Self::with_max_event_size)),
/// it queues [`SseError::EventTooLarge`] at once, frees its buffers and is
/// **poisoned**: it ignores further input and, once the events before the
/// error and the error itself are taken, returns [`SseError::Poisoned`].
/// Whether and where the error happens does not depend on the chunking.
///
/// An `id` field longer than [`MAX_EVENT_ID_SIZE`] is ignored (the last id stays in force),
/// as the specification ignores one holding NUL: every later event carries a copy of it.
///
/// [`SseError::InvalidUtf8`] only drops the offending event: the decoder
/// goes on with the next one.
///
/// # Example
///
/// ```rust
/// use threadline_wire::sse::SseDecoder;
///
/// let mut decoder = SseDecoder::with_max_event_size(1024);
/// decoder.push(b"data: a\r");
/// decoder.push(b"\ndata: b\r\n\r\n");
/// let event = decoder.next_event()?.expect("one event");
/// assert_eq!(event.data, "a\nb");
/// # Ok::<(), threadline_wire::sse::SseError>(())
/// ```
#[derive(Debug)]
pub struct SseDecoder {
    max: usize,
    /// The unterminated line carried over from earlier chunks (while the BOM
    /// is undecided: the first bytes of the stream).
    line: Vec<u8>,
    /// The current event's data lines, joined with `\n`.
    data: Vec<u8>,
    /// The current event's type.
    event: Vec<u8>,
    has_data: bool,
    has_event: bool,
    /// A field line (not a comment) was read since the last blank line.
    has_fields: bool,
    retry: Option<u64>,
    last_id: Option<String>,
    reconnection_time: Option<u64>,
    /// An invalid `id` line of the current event, reported at its dispatch.
    pending_error: Option<SseError>,
    queue: VecDeque<Result<SseEvent, SseError>>,
    bom_checked: bool,
    /// The last chunk ended in `\r`: a `\n` starting the next one is part of
    /// the same line ending.
    skip_lf: bool,
    poisoned: bool,
    finished: bool,
    /// Stream offset of the next byte to parse.
    received: u64,
    /// Stream offset of the start of the current line.
    line_start: u64,
    /// Stream offset of the current event's first line, once it has one.
    event_start: Option<u64>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder refusing events larger than [`DEFAULT_MAX_EVENT_SIZE`].
    pub fn new() -> Self {
        Self::with_max_event_size(DEFAULT_MAX_EVENT_SIZE)
    }

    /// A decoder refusing events larger than `max` bytes, counting the
    /// event's data (with its joining newlines), its event type, and the raw
    /// bytes of the line being read (without its line ending).
    pub fn with_max_event_size(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            data: Vec::new(),
            event: Vec::new(),
            has_data: false,
            has_event: false,
            has_fields: false,
            retry: None,
            last_id: None,
            reconnection_time: None,
            pending_error: None,
            queue: VecDeque::new(),
            bom_checked: false,
            skip_lf: false,
            poisoned: false,
            finished: false,
            received: 0,
            line_start: 0,
            event_start: None,
        }
    }

    /// The decoder's event size limit, in bytes.
    pub fn max_event_size(&self) -> usize {
        self.max
    }

    /// The last event id set by an `id` field, whether or not an event was
    /// dispatched since (WHATWG "last event ID").
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last valid `retry` value read, whether or not an event was
    /// dispatched since (WHATWG "reconnection time"), in milliseconds.
    pub fn reconnection_time(&self) -> Option<u64> {
        self.reconnection_time
    }

    /// Bytes held for the event being read (its unterminated line, data and
    /// event type). Never more than the limit.
    #[doc(hidden)]
    pub fn buffered_len(&self) -> usize {
        self.line.len() + self.data.len() + self.event.len()
    }

    /// Feeds the next chunk of the stream and decodes every event it
    /// completes; take them with [`next_event`](Self::next_event).
    ///
    /// Ignored after [`finish`](Self::finish) or once the decoder is
    /// poisoned.
    pub fn push(&mut self, chunk: &[u8]) {
        self.push_into(chunk, &mut Queue);
    }

    /// Feeds the next chunk like [`push`](Self::push), and hands `on_event` what
    /// [`next_event`](Self::next_event) would then return, in the same order: the events
    /// still queued, then those of the chunk, until `next_event` would return `Ok(None)`
    /// (an [`SseError::Poisoned`] is passed once, last). The events of the chunk are
    /// borrowed from the decoder's buffers, which are reused: no allocation per event.
    ///
    /// The first error `on_event` returns stops the hand-over and is returned; the events
    /// not yet handed over stay queued for [`next_event`](Self::next_event) or the next
    /// `push_each`, exactly as after [`push`](Self::push).
    ///
    /// ```rust
    /// use threadline_wire::sse::SseDecoder;
    ///
    /// let mut decoder = SseDecoder::new();
    /// let mut seen = Vec::new();
    /// decoder.push_each(b"event: a\ndata: 1\n\ndata: 2\n\n", |event| {
    ///     let event = event?;
    ///     seen.push((event.event_type().to_owned(), event.data.to_owned()));
    ///     Ok::<(), threadline_wire::sse::SseError>(())
    /// })?;
    /// assert_eq!(seen, [("a".into(), "1".into()), ("message".into(), "2".into())]);
    /// # Ok::<(), threadline_wire::sse::SseError>(())
    /// ```
    pub fn push_each<E>(
        &mut self,
        chunk: &[u8],
        on_event: impl FnMut(Result<SseEventRef<'_>, SseError>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut sink = Callback {
            on_event,
            failed: None,
        };
        // What earlier chunks left queued comes first.
        while sink.is_open()
            && let Some(queued) = self.queue.pop_front()
        {
            match queued {
                Ok(event) => sink.pass(Ok(event.borrowed())),
                Err(error) => sink.pass(Err(error)),
            }
        }
        // Events reach the sink directly only while nothing waits in the queue.
        self.push_into(chunk, &mut sink);
        while sink.is_open()
            && let Some(queued) = self.queue.pop_front()
        {
            match queued {
                Ok(event) => sink.pass(Ok(event.borrowed())),
                Err(error) => sink.pass(Err(error)),
            }
        }
        if sink.is_open() && self.poisoned {
            sink.pass(Err(SseError::Poisoned));
        }
        match sink.failed {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn push_into(&mut self, chunk: &[u8], sink: &mut impl Sink) {
        if self.poisoned || self.finished || chunk.is_empty() {
            return;
        }
        let mut input = chunk;
        if !self.bom_checked {
            // Gather the first three bytes of the stream in `line`.
            let take = (BOM.len() - self.line.len()).min(input.len());
            self.line.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return;
            }
            self.bom_checked = true;
            if self.line == BOM {
                self.line.clear();
                self.received = BOM.len() as u64;
                self.line_start = self.received;
            } else {
                let head = std::mem::take(&mut self.line);
                self.feed(&head, sink);
            }
        }
        self.feed(input, sink);
    }

    /// The next decoded event, `Ok(None)` if the input pushed so far
    /// completes no more events.
    ///
    /// # Errors
    ///
    /// The errors of the events in stream order: [`SseError::InvalidUtf8`]
    /// (that event is dropped, the next call goes on) or
    /// [`SseError::EventTooLarge`], after which every call returns
    /// [`SseError::Poisoned`].
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        match self.queue.pop_front() {
            Some(result) => result.map(Some),
            None if self.poisoned => Err(SseError::Poisoned),
            None => Ok(None),
        }
    }

    /// Ends the input: returns the events still queued, one per call, then
    /// `Ok(None)` if the stream ended cleanly between events.
    ///
    /// An event not terminated by a blank line is **not** dispatched (WHATWG;
    /// unlike the Python SDK, which flushes it): its fields may be cut short,
    /// and a half-received `data` line is not the data the server sent.
    /// Instead of silently dropping it, `finish` returns
    /// [`SseError::TruncatedEvent`] once, then `Ok(None)`. A final comment
    /// line without terminator is not a truncation.
    ///
    /// # Errors
    ///
    /// Those of [`next_event`](Self::next_event), and
    /// [`SseError::TruncatedEvent`].
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        if let Some(result) = self.queue.pop_front() {
            return result.map(Some);
        }
        if self.poisoned {
            return Err(SseError::Poisoned);
        }
        if self.finished {
            return Ok(None);
        }
        self.finished = true;
        let partial_line = self.line.first().is_some_and(|&b| b != b':');
        if self.has_fields || partial_line {
            let offset = self.event_start.unwrap_or(self.line_start);
            let buffered = self.buffered_len();
            self.line = Vec::new();
            self.reset_event();
            return Err(SseError::TruncatedEvent { offset, buffered });
        }
        Ok(None)
    }

    /// Decodes a whole stream held in memory with the default limit:
    /// every event and error, in order, ending with the result of
    /// [`finish`](Self::finish) if it is an error.
    pub fn decode_all(input: &[u8]) -> Vec<Result<SseEvent, SseError>> {
        let mut decoder = Self::new();
        decoder.push(input);
        let mut out = Vec::new();
        loop {
            match decoder.finish() {
                Ok(Some(event)) => out.push(Ok(event)),
                Ok(None) | Err(SseError::Poisoned) => return out,
                Err(e) => out.push(Err(e)),
            }
        }
    }

    /// Parses `input`, the stream bytes from offset `self.received`.
    fn feed(&mut self, mut input: &[u8], sink: &mut impl Sink) {
        let mut base = self.received;
        self.received += input.len() as u64;
        if self.skip_lf
            && let Some(&first) = input.first()
        {
            self.skip_lf = false;
            if first == b'\n' {
                input = &input[1..];
                base += 1;
                self.line_start = base;
            }
        }
        while !self.poisoned {
            let Some(i) = memchr2(b'\n', b'\r', input) else {
                if !input.is_empty() {
                    self.carry(input);
                }
                return;
            };
            let terminator = if input[i] == b'\n' {
                1
            } else {
                match input.get(i + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    None => {
                        self.skip_lf = true;
                        1
                    }
                }
            };
            let part = &input[..i];
            if self.exceeds(self.line.len() + part.len()) {
                self.fail_too_large();
                return;
            }
            if self.line.is_empty() {
                self.process_line(part, sink);
            } else {
                let mut line = std::mem::take(&mut self.line);
                reserve_bounded(&mut line, part.len(), self.max);
                line.extend_from_slice(part);
                self.process_line(&line, sink);
                if !self.poisoned {
                    line.clear();
                    if line.capacity() > KEEP_LINE_CAPACITY {
                        line = Vec::new();
                    }
                    self.line = line;
                }
            }
            let consumed = i + terminator;
            input = &input[consumed..];
            base += consumed as u64;
            self.line_start = base;
        }
    }

    /// Whether a line of `line_len` bytes would take the current event past
    /// the limit.
    fn exceeds(&self, line_len: usize) -> bool {
        line_len
            .saturating_add(self.data.len())
            .saturating_add(self.event.len())
            > self.max
    }

    /// Keeps the unterminated end of a chunk for the next one.
    fn carry(&mut self, rest: &[u8]) {
        if self.exceeds(self.line.len() + rest.len()) {
            self.fail_too_large();
            return;
        }
        reserve_bounded(&mut self.line, rest.len(), self.max);
        self.line.extend_from_slice(rest);
    }

    fn fail_too_large(&mut self) {
        let offset = self.event_start.unwrap_or(self.line_start);
        self.queue.push_back(Err(SseError::EventTooLarge {
            limit: self.max,
            offset,
        }));
        self.poisoned = true;
        self.line = Vec::new();
        self.data = Vec::new();
        self.event = Vec::new();
    }

    /// Handles one complete line, without its terminator. The caller checked
    /// it against the limit, so the data and event type stay within it.
    fn process_line(&mut self, line: &[u8], sink: &mut impl Sink) {
        let Some(&first) = line.first() else {
            self.dispatch(sink);
            return;
        };
        if self.event_start.is_none() {
            self.event_start = Some(self.line_start);
        }
        if first == b':' {
            return;
        }
        self.has_fields = true;
        let (name, value) = match memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    reserve_bounded(&mut self.data, value.len() + 1, self.max);
                    self.data.push(b'\n');
                } else {
                    // Most events have one data line: allocate it exactly.
                    self.data.reserve_exact(value.len());
                    self.has_data = true;
                }
                self.data.extend_from_slice(value);
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
                self.has_event = true;
            }
            b"id" => self.set_id(value),
            b"retry" => {
                if let Some(ms) = parse_retry(value) {
                    self.retry = Some(ms);
                    self.reconnection_time = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn set_id(&mut self, value: &[u8]) {
        if value.len() > MAX_EVENT_ID_SIZE || memchr(0, value).is_some() {
            return;
        }
        match std::str::from_utf8(value) {
            Ok(id) => match &mut self.last_id {
                Some(last) => {
                    last.clear();
                    last.push_str(id);
                }
                None => self.last_id = Some(id.to_owned()),
            },
            Err(e) => {
                if self.pending_error.is_none() {
                    self.pending_error = Some(SseError::InvalidUtf8 {
                        field: "id",
                        offset: self.line_start,
                        valid_up_to: e.valid_up_to(),
                    });
                }
            }
        }
    }

    /// The blank line: hands the event to `sink` when it has data, is valid and nothing is
    /// queued before it; else queues it (or its error). Then resets it.
    fn dispatch(&mut self, sink: &mut impl Sink) {
        let direct = sink.is_open()
            && self.queue.is_empty()
            && self.pending_error.is_none()
            && self.has_data;
        match direct.then(|| self.event_ref()).flatten() {
            Some(event) => sink.pass(Ok(event)),
            // Invalid UTF-8 too: `build_event` makes its error.
            None => {
                if let Some(result) = self.build_event() {
                    self.queue.push_back(result);
                }
            }
        }
        self.reset_event();
        // The data buffer is reused from event to event, but not kept when huge.
        if self.data.capacity() > KEEP_LINE_CAPACITY {
            self.data = Vec::new();
        }
    }

    /// The current event, borrowed, when its event type and data are valid UTF-8.
    fn event_ref(&self) -> Option<SseEventRef<'_>> {
        let event = match self.has_event {
            true => Some(std::str::from_utf8(&self.event).ok()?),
            false => None,
        };
        Some(SseEventRef {
            event,
            data: std::str::from_utf8(&self.data).ok()?,
            id: self.last_id.as_deref(),
            retry: self.retry,
        })
    }

    fn build_event(&mut self) -> Option<Result<SseEvent, SseError>> {
        if let Some(error) = self.pending_error.take() {
            return Some(Err(error));
        }
        if !self.has_data {
            return None;
        }
        let offset = self.event_start.unwrap_or(self.line_start);
        let event = if self.has_event {
            match std::str::from_utf8(&self.event) {
                Ok(event) => Some(event.to_owned()),
                Err(e) => {
                    return Some(Err(SseError::InvalidUtf8 {
                        field: "event",
                        offset,
                        valid_up_to: e.valid_up_to(),
                    }));
                }
            }
        } else {
            None
        };
        let data = match String::from_utf8(std::mem::take(&mut self.data)) {
            Ok(data) => data,
            Err(e) => {
                let valid_up_to = e.utf8_error().valid_up_to();
                self.data = e.into_bytes();
                return Some(Err(SseError::InvalidUtf8 {
                    field: "data",
                    offset,
                    valid_up_to,
                }));
            }
        };
        Some(Ok(SseEvent {
            event,
            data,
            id: self.last_id.clone(),
            retry: self.retry,
        }))
    }

    fn reset_event(&mut self) {
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        self.has_event = false;
        self.has_fields = false;
        self.retry = None;
        self.pending_error = None;
        self.event_start = None;
    }
}

/// Where [`SseDecoder::feed`] hands the events it completes.
trait Sink {
    /// Whether an event may be handed over now (else it is queued).
    fn is_open(&self) -> bool;
    /// Hands over an event or an error, in stream order.
    fn pass(&mut self, event: Result<SseEventRef<'_>, SseError>);
}

/// No sink: every event is queued ([`SseDecoder::push`]).
struct Queue;

impl Sink for Queue {
    fn is_open(&self) -> bool {
        false
    }

    fn pass(&mut self, _event: Result<SseEventRef<'_>, SseError>) {}
}

/// The caller's callback of [`SseDecoder::push_each`], closed by its first error.
struct Callback<F, E> {
    on_event: F,
    failed: Option<E>,
}

impl<F, E> Sink for Callback<F, E>
where
    F: FnMut(Result<SseEventRef<'_>, SseError>) -> Result<(), E>,
{
    fn is_open(&self) -> bool {
        self.failed.is_none()
    }

    fn pass(&mut self, event: Result<SseEventRef<'_>, SseError>) {
        if let Err(error) = (self.on_event)(event) {
            self.failed = Some(error);
        }
    }
}

/// Reserves room for `additional` more bytes, growing geometrically but
/// never past `max` (the caller checked that `len + additional <= max`).
fn reserve_bounded(buf: &mut Vec<u8>, additional: usize, max: usize) {
    let needed = buf.len() + additional;
    if needed > buf.capacity() {
        let target = buf
            .capacity()
            .saturating_mul(2)
            .max(64)
            .min(max)
            .max(needed);
        buf.reserve_exact(target - buf.len());
    }
}

/// A `retry` value: ASCII digits only, fitting in a `u64`.
fn parse_retry(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    type Decoded = Vec<Result<SseEvent, SseError>>;

    /// Pushes `chunks` one by one, taking the events after each, then
    /// finishes: the whole output of the decoder.
    fn decode_chunks<'a>(max: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Decoded {
        let mut decoder = SseDecoder::with_max_event_size(max);
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            // Up to two bytes of a possible BOM are held before any limit can apply.
            assert!(decoder.buffered_len() <= max.max(BOM.len() - 1));
            loop {
                match decoder.next_event() {
                    Ok(Some(event)) => out.push(Ok(event)),
                    Ok(None) | Err(SseError::Poisoned) => break,
                    Err(e) => out.push(Err(e)),
                }
            }
        }
        loop {
            match decoder.finish() {
                Ok(Some(event)) => out.push(Ok(event)),
                Ok(None) | Err(SseError::Poisoned) => return out,
                Err(e) => out.push(Err(e)),
            }
        }
    }

    /// [`decode_chunks`] through [`SseDecoder::push_each`], its callback failing at the
    /// (1-based) hand-overs in `fail_at`: what it is handed (a `Poisoned` left out, as
    /// `decode_chunks` stops there), then what `finish` returns.
    fn decode_chunks_each<'a>(
        max: usize,
        chunks: impl IntoIterator<Item = &'a [u8]>,
        fail_at: &[usize],
    ) -> Decoded {
        let mut decoder = SseDecoder::with_max_event_size(max);
        let mut out = Vec::new();
        let mut handed = 0;
        for chunk in chunks {
            let result = decoder.push_each(chunk, |event| {
                handed += 1;
                match event {
                    Err(SseError::Poisoned) => {}
                    other => out.push(other.map(SseEventRef::into_owned)),
                }
                if fail_at.contains(&handed) {
                    Err(handed)
                } else {
                    Ok(())
                }
            });
            if let Err(at) = result {
                assert!(fail_at.contains(&at));
            }
        }
        loop {
            match decoder.finish() {
                Ok(Some(event)) => out.push(Ok(event)),
                Ok(None) | Err(SseError::Poisoned) => return out,
                Err(e) => out.push(Err(e)),
            }
        }
    }

    /// Decodes `input` whole and at every single split point, checks that
    /// all agree, and returns the result.
    fn decode_every_split(input: &[u8]) -> Decoded {
        let whole = SseDecoder::decode_all(input);
        for cut in 0..=input.len() {
            let (a, b) = input.split_at(cut);
            assert_eq!(
                decode_chunks(DEFAULT_MAX_EVENT_SIZE, [a, b]),
                whole,
                "split at {cut}"
            );
        }
        assert_eq!(
            decode_chunks(DEFAULT_MAX_EVENT_SIZE, input.chunks(1)),
            whole,
            "byte by byte"
        );
        assert_eq!(
            decode_chunks_each(DEFAULT_MAX_EVENT_SIZE, input.chunks(1), &[1]),
            whole,
            "byte by byte, borrowed"
        );
        whole
    }

    /// The events of a stream that must decode without error.
    fn events(input: &str) -> Vec<SseEvent> {
        decode_every_split(input.as_bytes())
            .into_iter()
            .map(|r| r.expect("no error expected"))
            .collect()
    }

    fn data(d: &str) -> SseEvent {
        SseEvent::new(d)
    }

    #[test]
    fn all_line_endings() {
        for input in [
            "data: a\n\ndata: b\n\n",
            "data: a\r\n\r\ndata: b\r\n\r\n",
            "data: a\r\rdata: b\r\r",
            "data: a\r\n\rdata: b\n\r\n",
        ] {
            assert_eq!(events(input), [data("a"), data("b")], "{input:?}");
        }
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_ending() {
        let out = decode_chunks(
            100,
            [&b"data: a\r"[..], b"\n", b"\r", b"\n", b"data: b\r\n\r\n"],
        );
        assert_eq!(out, [Ok(data("a")), Ok(data("b"))]);
        // A lone `\r` at a chunk's end ends the line at once.
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: a\r\r");
        assert_eq!(decoder.next_event(), Ok(Some(data("a"))));
        decoder.push(b"\ndata: b\n\n");
        assert_eq!(decoder.next_event(), Ok(Some(data("b"))));
        assert_eq!(decoder.finish(), Ok(None));
    }

    #[test]
    fn utf8_split_across_chunks() {
        assert_eq!(
            events("event: é\ndata: é€😀\ndata: ∑\n\n"),
            [SseEvent::with_event("é", "é€😀\n∑")]
        );
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(
            events(": hello\ndata: x\n:\n: data: y\n\n:tail\n"),
            [data("x")]
        );
    }

    #[test]
    fn multi_line_data() {
        assert_eq!(
            events("data: a\ndata: b\ndata:\ndata: c\n\n"),
            [data("a\nb\n\nc")]
        );
        assert_eq!(events("data\ndata\n\n"), [data("\n")]);
    }

    #[test]
    fn field_without_colon_has_empty_value() {
        assert_eq!(events("data\n\n"), [data("")]);
        assert_eq!(
            events("event\ndata: x\n\n"),
            [SseEvent::with_event("", "x")]
        );
        assert_eq!(events("event\ndata: x\n\n")[0].event_type(), "message");
    }

    #[test]
    fn one_leading_space_is_stripped() {
        assert_eq!(
            events("data:  two\n\ndata:none\n\ndata:\tt\n\nevent:  e\ndata: \n\n"),
            [
                data(" two"),
                data("none"),
                data("\tt"),
                SseEvent::with_event(" e", "")
            ]
        );
        assert_eq!(events("data: a:b: c\n\n"), [data("a:b: c")]);
    }

    #[test]
    fn unknown_and_miscased_fields_are_ignored() {
        assert_eq!(
            events("foo: bar\nData: no\ndata : no\n data: no\ndata: yes\n\n"),
            [data("yes")]
        );
    }

    #[test]
    fn event_field_last_one_wins_and_resets_per_event() {
        assert_eq!(
            events("event: a\nevent: b\ndata: 1\n\ndata: 2\n\n"),
            [SseEvent::with_event("b", "1"), data("2")]
        );
    }

    #[test]
    fn block_without_data_is_not_dispatched() {
        assert_eq!(events("event: ping\n\n\n\n:c\n\ndata: x\n\n"), [data("x")]);
    }

    #[test]
    fn retry() {
        let with_retry = |ms| SseEvent {
            retry: Some(ms),
            ..data("x")
        };
        assert_eq!(
            events("retry: 1000\ndata: x\n\ndata: x\n\nretry: 18446744073709551615\ndata: x\n\n"),
            [with_retry(1000), data("x"), with_retry(u64::MAX)]
        );
        for bad in [
            "retry: 10a",
            "retry: -1",
            "retry: +1",
            "retry:",
            "retry",
            "retry: 1 ",
            "retry: 18446744073709551616",
        ] {
            let mut decoder = SseDecoder::new();
            decoder.push(format!("{bad}\ndata: x\n\n").as_bytes());
            assert_eq!(decoder.next_event(), Ok(Some(data("x"))), "{bad}");
            assert_eq!(decoder.reconnection_time(), None);
        }
        // A retry-only block dispatches nothing but sets the reconnection time.
        let mut decoder = SseDecoder::new();
        decoder.push(b"retry: 5\n\ndata: x\n\n");
        assert_eq!(decoder.next_event(), Ok(Some(data("x"))));
        assert_eq!(decoder.reconnection_time(), Some(5));
    }

    #[test]
    fn id_is_sticky() {
        let with_id = |id: &str, d: &str| SseEvent {
            id: Some(id.into()),
            ..data(d)
        };
        assert_eq!(
            events(
                "data: 0\n\nid: 1\ndata: a\n\ndata: b\n\nid: 2\n\ndata: c\n\nid\ndata: d\n\nid: n\0l\ndata: e\n\n"
            ),
            [
                data("0"),
                with_id("1", "a"),
                with_id("1", "b"),
                with_id("2", "c"),
                with_id("", "d"),
                with_id("", "e"),
            ]
        );
        let mut decoder = SseDecoder::new();
        decoder.push(b"id: 9\n\n");
        assert_eq!(decoder.last_event_id(), Some("9"));
    }

    #[test]
    fn bom_is_stripped_at_start_only() {
        assert_eq!(events("\u{feff}data: x\n\n"), [data("x")]);
        // A second BOM is part of the first line's field name.
        assert_eq!(
            events("\u{feff}\u{feff}data: x\n\ndata: y\n\n"),
            [data("y")]
        );
        assert_eq!(events("data: \u{feff}\n\n"), [data("\u{feff}")]);
        // Short streams that start like a BOM.
        assert_eq!(
            decode_every_split(b"\xEF\xBB"),
            [Err(SseError::TruncatedEvent {
                offset: 0,
                buffered: 2
            })]
        );
        assert_eq!(decode_every_split(b"\xEF\xBB\xBF"), []);
        assert_eq!(events("\n"), []);
    }

    #[test]
    fn eof_handling() {
        assert_eq!(decode_every_split(b""), []);
        assert_eq!(decode_every_split(b"data: x\n\n: ping"), [Ok(data("x"))]);
        assert_eq!(decode_every_split(b"data: x\r\n\r\n\r"), [Ok(data("x"))]);
        for (input, offset, buffered) in [
            (&b"data: x\n\ndata: y\n"[..], 9, 1),
            (b"data: x\n\ndata: y", 9, 7),
            (b"data: x\n\nevent: e\r", 9, 1),
            (b"data: x\n\n: c\nid: 1\n", 9, 0),
            (b"data: x\n\nfoo", 9, 3),
        ] {
            assert_eq!(
                decode_every_split(input),
                [
                    Ok(data("x")),
                    Err(SseError::TruncatedEvent { offset, buffered })
                ],
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        // Queued events come first; after the truncation, a clean `None`;
        // pushes after `finish` are ignored.
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: a\n\ndata: b");
        assert_eq!(decoder.finish(), Ok(Some(data("a"))));
        assert!(matches!(
            decoder.finish(),
            Err(SseError::TruncatedEvent { .. })
        ));
        assert_eq!(decoder.finish(), Ok(None));
        decoder.push(b"data: c\n\n");
        assert_eq!(decoder.next_event(), Ok(None));
        assert_eq!(decoder.finish(), Ok(None));
    }

    #[test]
    fn invalid_utf8_drops_only_that_event() {
        assert_eq!(
            decode_every_split(b"data: ok\n\ndata: a\xFF\n\nevent: \xC3\ndata: x\n\nid: \xE2\x82\ndata: y\n\ndata: \xF0\x9F\x98\x80\n\n"),
            [
                Ok(data("ok")),
                Err(SseError::InvalidUtf8 {
                    field: "data",
                    offset: 10,
                    valid_up_to: 1
                }),
                Err(SseError::InvalidUtf8 {
                    field: "event",
                    offset: 20,
                    valid_up_to: 0
                }),
                Err(SseError::InvalidUtf8 {
                    field: "id",
                    offset: 38,
                    valid_up_to: 0
                }),
                Ok(data("😀")),
            ]
        );
    }

    #[test]
    fn limit_counts_data_event_and_current_line() {
        // The line `data: 1234` is exactly 10 bytes.
        assert_eq!(
            decode_chunks(10, [&b"data: 1234\n\ndata:\n\n"[..]]),
            [Ok(data("1234")), Ok(data(""))]
        );
        let too_long = b"data: 1\n\ndata: 12345\n\ndata: 2\n\n";
        let expected = [
            Ok(data("1")),
            Err(SseError::EventTooLarge {
                limit: 10,
                offset: 9,
            }),
        ];
        for cut in 0..too_long.len() {
            let (a, b) = too_long.split_at(cut);
            assert_eq!(decode_chunks(10, [a, b]), expected, "split at {cut}");
        }
        // Data accumulated over several lines counts too: 9 bytes of data
        // (with the joining newline), then a 6-byte line.
        assert_eq!(
            decode_chunks(14, [&b"data:1234\ndata:5678\ndata:9\n\n"[..]]),
            [Err(SseError::EventTooLarge {
                limit: 14,
                offset: 0
            })]
        );
        // After the error the decoder is poisoned.
        let mut decoder = SseDecoder::with_max_event_size(4);
        decoder.push(b"data: 12345");
        assert!(matches!(
            decoder.next_event(),
            Err(SseError::EventTooLarge {
                limit: 4,
                offset: 0
            })
        ));
        assert_eq!(decoder.next_event(), Err(SseError::Poisoned));
        decoder.push(b"\n\n");
        assert_eq!(decoder.next_event(), Err(SseError::Poisoned));
        assert_eq!(decoder.finish(), Err(SseError::Poisoned));
    }

    #[test]
    fn hostile_endless_line_is_refused_with_bounded_memory() {
        const LIMIT: usize = 1 << 20;
        const CHUNK: usize = 64 << 10;
        const TOTAL: usize = 100 << 20;
        let mut chunk = vec![b'x'; CHUNK];
        chunk[..6].copy_from_slice(b"data: ");
        let mut decoder = SseDecoder::with_max_event_size(LIMIT);
        let mut refused_at = None;
        for i in 0..TOTAL / CHUNK {
            decoder.push(&chunk);
            assert!(decoder.line.capacity() <= 2 * LIMIT);
            assert!(decoder.buffered_len() <= LIMIT);
            match decoder.next_event() {
                Ok(None) => assert!(refused_at.is_none()),
                Err(SseError::EventTooLarge { limit, offset }) => {
                    assert_eq!((limit, offset), (LIMIT, 0));
                    assert!(refused_at.is_none());
                    refused_at = Some(i);
                }
                Err(SseError::Poisoned) => assert!(refused_at.is_some()),
                other => panic!("unexpected {other:?}"),
            }
        }
        // 16 chunks are exactly the limit; the 17th crosses it.
        assert_eq!(refused_at, Some(LIMIT / CHUNK));
        assert_eq!(decoder.buffered_len(), 0);
        assert_eq!(decoder.line.capacity(), 0);
    }

    #[test]
    fn hostile_many_data_lines_are_refused() {
        // Many short data lines, never a blank line.
        let chunk = b"data: xxxxxxxxxxxxxxxxxxxxxxxxx\n".repeat(2048);
        let mut decoder = SseDecoder::with_max_event_size(1 << 20);
        let mut refused = false;
        for _ in 0..100 {
            decoder.push(&chunk);
            assert!(decoder.data.capacity() <= 2 << 20);
            match decoder.next_event() {
                Ok(None) => {}
                Err(SseError::EventTooLarge { .. }) => refused = true,
                Err(SseError::Poisoned) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(refused);
    }

    #[test]
    fn capacity_is_reused_and_released() {
        let mut decoder = SseDecoder::new();
        let long = format!("data: {}", "y".repeat(200_000));
        let (a, b) = long.as_bytes().split_at(100_000);
        decoder.push(a);
        decoder.push(b);
        decoder.push(b"\n\n");
        let event = decoder.next_event().expect("valid").expect("one event");
        assert_eq!(event.data.len(), 200_000);
        assert!(decoder.line.capacity() <= KEEP_LINE_CAPACITY);
    }

    #[test]
    fn decode_all_reports_errors_in_order() {
        let mut input = b"data: a\n\n".to_vec();
        input.extend(std::iter::repeat_n(b'z', DEFAULT_MAX_EVENT_SIZE + 1));
        let out = SseDecoder::decode_all(&input);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], Ok(data("a")));
        assert!(matches!(
            out[1],
            Err(SseError::EventTooLarge { offset: 9, .. })
        ));
    }

    /// Cuts `bytes` at the given positions (taken modulo its length + 1).
    fn cut(bytes: &[u8], cuts: &[prop::sample::Index]) -> Vec<Vec<u8>> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for p in points {
            chunks.push(bytes[start..p].to_vec());
            start = p;
        }
        chunks.push(bytes[start..].to_vec());
        chunks
    }

    #[test]
    fn push_each_passes_a_poisoned_decoder_once_per_call() {
        let mut decoder = SseDecoder::with_max_event_size(8);
        let mut seen = Vec::new();
        let first = decoder.push_each(b"data: ok\n\ndata: far too long\n\n", |event| {
            seen.push(event.map(SseEventRef::into_owned));
            Ok::<(), ()>(())
        });
        assert_eq!(first, Ok(()));
        assert_eq!(
            seen,
            [
                Ok(data("ok")),
                Err(SseError::EventTooLarge {
                    limit: 8,
                    offset: 10
                }),
                Err(SseError::Poisoned)
            ]
        );
        seen.clear();
        let again = decoder.push_each(b"data: x\n\n", |event| {
            seen.push(event.map(SseEventRef::into_owned));
            Err("stop")
        });
        assert_eq!(again, Err("stop"));
        assert_eq!(seen, [Err(SseError::Poisoned)]);
    }

    #[test]
    fn push_each_leaves_what_follows_a_failure_queued() {
        let mut decoder = SseDecoder::new();
        let mut seen = Vec::new();
        let result = decoder.push_each(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", |event| {
            let event = event.map_err(|_| "decode")?;
            seen.push(event.data.to_owned());
            if event.data == "1" {
                Err("stop")
            } else {
                Ok(())
            }
        });
        assert_eq!(result, Err("stop"));
        assert_eq!(seen, ["1"]);
        assert_eq!(decoder.next_event(), Ok(Some(data("2"))));
        decoder
            .push_each(b"data: 4\n\n", |event| {
                seen.push(event.map_err(|_| "decode")?.data.to_owned());
                Ok::<(), &str>(())
            })
            .expect("no failure");
        assert_eq!(seen, ["1", "3", "4"]);
        assert_eq!(decoder.finish(), Ok(None));
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                4 => any::<char>(),
                1 => Just('\n'),
                1 => Just('\r'),
                1 => Just(':'),
                1 => Just(' '),
            ],
            0..24,
        )
        .prop_map(String::from_iter)
    }

    fn arb_field() -> impl Strategy<Value = String> {
        "[^\r\n\u{0}]{0,10}"
    }

    fn arb_event() -> impl Strategy<Value = SseEvent> {
        (
            prop::option::of(arb_field()),
            arb_text(),
            prop::option::of(arb_field()),
            prop::option::of(any::<u64>()),
        )
            .prop_map(|(event, data, id, retry)| SseEvent {
                event,
                data,
                id,
                retry,
            })
    }

    #[test]
    fn a_long_id_is_ignored_not_copied_into_every_event() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"id: short\n\n");
        let longest = "i".repeat(MAX_EVENT_ID_SIZE);
        decoder.push(format!("id: {longest}\ndata: kept\n\n").as_bytes());
        let mut hostile = b"id: ".to_vec();
        hostile.extend(std::iter::repeat_n(b'a', 64 * 1024));
        hostile.extend_from_slice(b"\n\n");
        decoder.push(&hostile);
        decoder.push(&b"data:\n\n".repeat(1000));
        let mut ids = Vec::new();
        while let Some(event) = decoder.next_event().expect("valid events") {
            ids.push(event.id);
        }
        assert_eq!(ids.len(), 1001);
        // An id of the limit's length is an id; a longer one leaves the last in force.
        assert!(ids.iter().all(|id| id.as_deref() == Some(longest.as_str())));
        assert_eq!(decoder.last_event_id(), Some(longest.as_str()));
    }

    proptest! {
        #[test]
        fn round_trip_under_any_chunking(
            originals in prop::collection::vec(arb_event(), 0..8),
            ending in prop::sample::select(vec!["\n", "\r\n", "\r"]),
            bom in any::<bool>(),
            byte_by_byte in any::<bool>(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let mut encoded = Vec::new();
            if bom {
                encoded.extend_from_slice(BOM);
            }
            for event in &originals {
                event.encode(&mut encoded).expect("the strategy makes encodable events");
            }
            // The encoder writes `\n` only as line endings.
            let mut stream = Vec::with_capacity(encoded.len() * 2);
            for &b in &encoded {
                if b == b'\n' {
                    stream.extend_from_slice(ending.as_bytes());
                } else {
                    stream.push(b);
                }
            }
            let chunks = if byte_by_byte {
                stream.chunks(1).map(<[u8]>::to_vec).collect()
            } else {
                cut(&stream, &cuts)
            };
            let decoded = decode_chunks(DEFAULT_MAX_EVENT_SIZE, chunks.iter().map(Vec::as_slice));

            let mut last_id = None;
            let expected: Vec<_> = originals
                .iter()
                .map(|e| {
                    if e.id.is_some() {
                        last_id.clone_from(&e.id);
                    }
                    Ok(SseEvent {
                        event: e.event.clone(),
                        data: e.data.replace("\r\n", "\n").replace('\r', "\n"),
                        id: last_id.clone(),
                        retry: e.retry,
                    })
                })
                .collect();
            prop_assert_eq!(decoded, expected);
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_chunking_does_not_matter(
            bytes in prop::collection::vec(
                prop_oneof![
                    3 => any::<u8>(),
                    6 => prop::sample::select(b"data:event:id:retry: 09\r\n\n\xEF\xBB\xBF\xFF".to_vec()),
                ],
                0..600,
            ),
            max in 0usize..80,
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..16),
        ) {
            let whole = decode_chunks(max, [bytes.as_slice()]);
            let chunks = cut(&bytes, &cuts);
            let chunked = decode_chunks(max, chunks.iter().map(Vec::as_slice));
            prop_assert_eq!(&chunked, &whole);
            let bytewise = decode_chunks(max, bytes.chunks(1));
            prop_assert_eq!(&bytewise, &whole);
        }

        /// `push_each` hands over what `push` then `next_event` return, in the same order,
        /// whatever the chunking and wherever its callback fails.
        #[test]
        fn push_each_hands_over_what_next_event_returns(
            bytes in prop::collection::vec(
                prop_oneof![
                    3 => any::<u8>(),
                    6 => prop::sample::select(b"data:event:id:retry: 09\r\n\n\xEF\xBB\xBF\xFF".to_vec()),
                ],
                0..600,
            ),
            max in prop_oneof![0usize..80, Just(DEFAULT_MAX_EVENT_SIZE)],
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..16),
            fail_at in prop::collection::vec(1usize..40, 0..6),
        ) {
            let chunks = cut(&bytes, &cuts);
            let expected = decode_chunks(max, chunks.iter().map(Vec::as_slice));
            let each = decode_chunks_each(max, chunks.iter().map(Vec::as_slice), &fail_at);
            prop_assert_eq!(each, expected);
        }
    }
}
