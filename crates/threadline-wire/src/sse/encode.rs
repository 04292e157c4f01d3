//! SSE encoder: events to `text/event-stream` bytes.

use memchr::{memchr, memchr2};

use super::{SseEncodeError, SseEvent};

/// Appends one event to `out`: an `event: …` line if `event` is given, one
/// `data: …` line per line of `data`, then the blank line that ends it.
///
/// Line breaks in `data` (`\n`, `\r\n` or `\r`) become separate `data`
/// lines, which a decoder joins with `\n`: the data round-trips exactly when
/// it uses `\n` only, and with `\r\n` and `\r` turned into `\n` otherwise.
///
/// # Errors
///
/// [`SseEncodeError::LineBreak`] if `event` contains `\r` or `\n`. Nothing
/// is written to `out` then.
pub fn encode_event(
    event: Option<&str>,
    data: &str,
    out: &mut Vec<u8>,
) -> Result<(), SseEncodeError> {
    encode_fields(event, None, None, data, out)
}

/// Appends a comment (`: …` lines; one per line of `comment`) to `out`, for
/// keep-alive pings. Decoders ignore it.
pub fn encode_comment(comment: &str, out: &mut Vec<u8>) {
    for_each_line(comment.as_bytes(), |line| {
        out.extend_from_slice(b": ");
        out.extend_from_slice(line);
        out.push(b'\n');
    });
}

impl SseEvent {
    /// Appends this event to `out`: its `event`, `id` and `retry` fields when
    /// set, its data as in [`encode_event`], and a blank line.
    ///
    /// Decoding the output gives back this event (with `\r\n` and `\r` in the
    /// data turned into `\n`), provided that a stream which once set an id
    /// keeps setting one: decoders carry the last id over to later events.
    ///
    /// # Errors
    ///
    /// [`SseEncodeError::LineBreak`] if `event` or `id` contains `\r` or
    /// `\n`; [`SseEncodeError::NulInId`] if `id` contains U+0000. Nothing is
    /// written to `out` then.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), SseEncodeError> {
        encode_fields(
            self.event.as_deref(),
            self.id.as_deref(),
            self.retry,
            &self.data,
            out,
        )
    }
}

fn encode_fields(
    event: Option<&str>,
    id: Option<&str>,
    retry: Option<u64>,
    data: &str,
    out: &mut Vec<u8>,
) -> Result<(), SseEncodeError> {
    if let Some(event) = event
        && memchr2(b'\r', b'\n', event.as_bytes()).is_some()
    {
        return Err(SseEncodeError::LineBreak { field: "event" });
    }
    if let Some(id) = id {
        if memchr2(b'\r', b'\n', id.as_bytes()).is_some() {
            return Err(SseEncodeError::LineBreak { field: "id" });
        }
        if memchr(0, id.as_bytes()).is_some() {
            return Err(SseEncodeError::NulInId);
        }
    }
    out.reserve(data.len() + event.map_or(0, str::len) + 16);
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    if let Some(retry) = retry {
        out.extend_from_slice(b"retry: ");
        push_decimal(retry, out);
        out.push(b'\n');
    }
    for_each_line(data.as_bytes(), |line| {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    });
    out.push(b'\n');
    Ok(())
}

/// Calls `f` on each line of `text`, split at `\n`, `\r\n` and `\r`. An empty
/// text is one empty line; a trailing line break is followed by an empty line.
fn for_each_line(mut text: &[u8], mut f: impl FnMut(&[u8])) {
    loop {
        let Some(i) = memchr2(b'\r', b'\n', text) else {
            f(text);
            return;
        };
        f(&text[..i]);
        let skip = if text[i] == b'\r' && text.get(i + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        text = &text[i + skip..];
    }
}

fn push_decimal(mut n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        // `n % 10` is below 10, so it fits in a `u8`.
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(event: Option<&str>, data: &str) -> String {
        let mut out = Vec::new();
        encode_event(event, data, &mut out).expect("valid event");
        String::from_utf8(out).expect("the encoder writes UTF-8 for UTF-8 input")
    }

    #[test]
    fn writes_event_and_data_lines() {
        assert_eq!(encoded(Some("ping"), "{}"), "event: ping\ndata: {}\n\n");
        assert_eq!(encoded(None, "x"), "data: x\n\n");
        assert_eq!(encoded(None, ""), "data: \n\n");
    }

    #[test]
    fn splits_data_on_every_line_ending() {
        assert_eq!(
            encoded(None, "a\nb\r\nc\rd\n"),
            "data: a\ndata: b\ndata: c\ndata: d\ndata: \n\n"
        );
        assert_eq!(encoded(None, "\r\r\n"), "data: \ndata: \ndata: \n\n");
    }

    #[test]
    fn keeps_leading_spaces() {
        assert_eq!(encoded(Some(" e"), " d"), "event:  e\ndata:  d\n\n");
    }

    #[test]
    fn refuses_unencodable_fields_without_writing() {
        let mut out = b"prefix".to_vec();
        assert_eq!(
            encode_event(Some("a\nb"), "x", &mut out),
            Err(SseEncodeError::LineBreak { field: "event" })
        );
        let ev = SseEvent {
            id: Some("1\r".into()),
            ..SseEvent::new("x")
        };
        assert_eq!(
            ev.encode(&mut out),
            Err(SseEncodeError::LineBreak { field: "id" })
        );
        let ev = SseEvent {
            id: Some("1\0".into()),
            ..SseEvent::new("x")
        };
        assert_eq!(ev.encode(&mut out), Err(SseEncodeError::NulInId));
        assert_eq!(out, b"prefix");
    }

    #[test]
    fn writes_id_and_retry() {
        let ev = SseEvent {
            event: Some("e".into()),
            data: "d".into(),
            id: Some("7".into()),
            retry: Some(1500),
        };
        let mut out = Vec::new();
        ev.encode(&mut out).expect("valid event");
        assert_eq!(out, b"event: e\nid: 7\nretry: 1500\ndata: d\n\n");
        let mut out = Vec::new();
        push_decimal(0, &mut out);
        out.push(b' ');
        push_decimal(u64::MAX, &mut out);
        assert_eq!(out, b"0 18446744073709551615");
    }

    #[test]
    fn comments() {
        let mut out = Vec::new();
        encode_comment("ping", &mut out);
        encode_comment("a\nb", &mut out);
        assert_eq!(out, b": ping\n: a\n: b\n");
    }
}
