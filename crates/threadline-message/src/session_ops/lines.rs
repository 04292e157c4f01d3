//! The lines of a threadline transcript as read, so that what a session operation keeps is
//! written back with the source's own bytes, not re-serialized: a line with another key
//! order, other whitespace or fields this version does not know stays as it was.

use std::ops::Range;

use crate::message::Message;
use crate::rewrites::Record;
use crate::system::SystemKind;

/// One line of a threadline transcript that holds a message, with its text as read (without
/// its newline, a `\r` before it or a byte-order mark).
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptLine<'a> {
    /// The line's text.
    pub text: &'a str,
    /// The message it holds.
    pub message: Message,
}

/// The lines of `text` that append a message, in order, each with its text (blank lines,
/// lines that do not parse and a cut last line are left out). Without rewrites, these are
/// the messages [`parse_transcript`](crate::transcript::parse_transcript) reads. A line that
/// records a rewrite ([`REWRITTEN_AT`](crate::rewrites::REWRITTEN_AT)) is left out: it is no
/// message of its own, and its text carries the mark. So when the transcript holds rewrites
/// these lines differ from what `parse_transcript` reads; compare them before reusing them.
pub fn transcript_lines(text: &str) -> Vec<TranscriptLine<'_>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter(|line| !line.bytes().all(|b| b.is_ascii_whitespace()))
        .filter_map(|line| match Record::from_json(line.as_bytes()) {
            Ok(Record::Appended(message)) => Some(TranscriptLine {
                text: line,
                message,
            }),
            Ok(Record::Rewritten { .. }) | Err(_) => None,
        })
        .collect()
}

/// The line of `message` made from `source`, the line of the message it was made from (by a
/// fork or a rewind): `source`'s bytes with the values of its top-level `id`, `retracts` and
/// `last_message_id` members replaced by `message`'s. `None` when that line would not read
/// back as `message` (the caller then serializes `message`).
///
/// ```
/// use threadline_message::session_ops::rewrite_line;
/// use threadline_message::{Header, Message};
///
/// // Not threadline's key order, a nested `id`, and a field this version does not know: all
/// // kept, only the message's id changes.
/// let source = r#"{"id":"m1", "type":"user","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"id\":\"m1\"}"}]}],"future":1}"#;
/// let read: Message = serde_json::from_str(source)?;
/// let forked = read.with_header(Header::with("new", "2026-01-01T00:00:00Z"));
/// assert_eq!(
///     rewrite_line(source, &forked).as_deref(),
///     Some(r#"{"id":"new", "type":"user","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"id\":\"m1\"}"}]}],"future":1}"#)
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn rewrite_line(source: &str, message: &Message) -> Option<String> {
    let mut replacements: Vec<(&str, String)> = vec![("id", message.id().to_string())];
    match message {
        Message::Tombstone(tombstone) => {
            replacements.push(("retracts", tombstone.retracts.to_string()));
        }
        Message::System(system) => {
            if let SystemKind::CompactBoundary {
                last_message_id: Some(last),
                ..
            } = &system.kind
            {
                replacements.push(("last_message_id", last.to_string()));
            }
        }
        _ => {}
    }
    let keys: Vec<&str> = replacements.iter().map(|(k, _)| *k).collect();
    let mut spans = top_level_string_values(source, &keys)?;
    spans.sort_by_key(|(_, range)| range.start);
    let mut out = String::with_capacity(source.len() + 16);
    let mut at = 0;
    for (key, range) in spans {
        let value = replacements.iter().find(|(k, _)| *k == key)?;
        out.push_str(source.get(at..range.start)?);
        out.push_str(&serde_json::to_string(&value.1).ok()?);
        at = range.end;
    }
    out.push_str(source.get(at..)?);
    let back: Message = serde_json::from_str(&out).ok()?;
    (back == *message).then_some(out)
}

/// The ranges (quotes included) of the string values of the members of the top-level object
/// `line` whose keys are in `keys`; `None` when `line` is not an object this scanner follows.
fn top_level_string_values<'k>(
    line: &str,
    keys: &[&'k str],
) -> Option<Vec<(&'k str, Range<usize>)>> {
    let bytes = line.as_bytes();
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(bytes, at + 1);
    let mut found = Vec::new();
    if bytes.get(at) == Some(&b'}') {
        return Some(found);
    }
    loop {
        let key_end = string_end(bytes, at)?;
        let key: String = serde_json::from_str(line.get(at..key_end)?).ok()?;
        at = skip_ws(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(bytes, at + 1);
        let value_end = value_end(bytes, at)?;
        if bytes.get(at) == Some(&b'"')
            && let Some(k) = keys.iter().find(|k| **k == key)
        {
            found.push((*k, at..value_end));
        }
        at = skip_ws(bytes, value_end);
        match bytes.get(at) {
            Some(b',') => at = skip_ws(bytes, at + 1),
            Some(b'}') => return Some(found),
            _ => return None,
        }
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// The end (after the closing quote) of the string starting at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The end of the JSON value starting at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = at;
            while bytes
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{Header, MessageId};

    #[test]
    fn lines_are_the_parsed_messages_with_their_text() {
        let text = "\u{feff}{\"type\":\"user\",\"id\":\"a\",\"timestamp\":\"t\",\"content\":[]}\r\n\n  \nnot json\n{\"type\":\"tombstone\",\"id\":\"b\",\"timestamp\":\"t\",\"retracts\":\"a\"}\n{\"type\":\"us";
        let lines = transcript_lines(text);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].text.starts_with("{\"type\":\"user\"") && lines[0].text.ends_with("[]}"));
        assert_eq!(
            lines.iter().map(|l| l.message.clone()).collect::<Vec<_>>(),
            crate::transcript::parse_transcript(text).messages
        );
    }

    #[test]
    fn references_are_rewritten_and_nested_ids_left_alone() {
        let source = r#"{"type":"tombstone","id":"b","timestamp":"t","retracts":"a"}"#;
        let message =
            Message::tombstone(MessageId::from("A2")).with_header(Header::with("B2", "t"));
        assert_eq!(
            rewrite_line(source, &message).as_deref(),
            Some(r#"{"type":"tombstone","id":"B2","timestamp":"t","retracts":"A2"}"#)
        );
        let boundary = r#"{"type":"system","id":"c","timestamp":"t","subtype":"compact_boundary","trigger":"auto","pre_tokens":5,"last_message_id":"a"}"#;
        let mut message: Message = serde_json::from_str(boundary).expect("a boundary");
        message = message.with_header(Header::with("C2", "t"));
        if let Message::System(system) = &mut message
            && let SystemKind::CompactBoundary {
                last_message_id, ..
            } = &mut system.kind
        {
            *last_message_id = Some(MessageId::from("A2"));
        }
        assert_eq!(
            rewrite_line(boundary, &message).as_deref(),
            Some(
                r#"{"type":"system","id":"C2","timestamp":"t","subtype":"compact_boundary","trigger":"auto","pre_tokens":5,"last_message_id":"A2"}"#
            )
        );
        // A line that does not read back as the message gives `None`.
        let other = Message::user_text("x").with_header(Header::with("B2", "t"));
        assert_eq!(rewrite_line(source, &other), None);
        assert_eq!(rewrite_line("[1,2]", &other), None);
        assert_eq!(rewrite_line("{\"id\":", &other), None);
    }
}
