//! The hot path of streaming: `content_block_delta` events in the exact shape the API sends.
//!
//! Nine events in ten of a streamed response are one small delta each, always written by the
//! API as
//!
//! ```text
//! {"type":"content_block_delta","index":N,"delta":{"type":"KIND","FIELD":"…"}}
//! ```
//!
//! with `KIND`/`FIELD` one of `text_delta`/`text`, `thinking_delta`/`thinking`,
//! `input_json_delta`/`partial_json` and `signature_delta`/`signature` (whitespace may pad the
//! end, before and after the last `}`). Going through serde's generic map machinery for them
//! costs more than decoding the SSE framing. [`parse`] recognizes exactly that shape with a
//! byte scanner and builds the same [`StreamEvent`] the generic parser would; anything else —
//! another key order, an extra field, a number it cannot read, a string with a control
//! character — is left to the generic parser by returning `None`. So the fast path can only
//! make a valid event faster, never change what any input parses to (a property test holds
//! the two parsers equal on valid and mangled input).

use crate::stream_event::{
    ContentBlockDelta, ContentDelta, InputJsonDelta, SignatureDelta, StreamEvent, TextDelta,
    ThinkingDelta,
};

const PREFIX: &[u8] = br#"{"type":"content_block_delta","index":"#;
const DELTA: &[u8] = br#","delta":{"type":""#;

/// The delta kinds the fast path knows, with the name of their one string field.
const KINDS: [(&[u8], &[u8]); 4] = [
    (b"text_delta", b"text"),
    (b"thinking_delta", b"thinking"),
    (b"input_json_delta", b"partial_json"),
    (b"signature_delta", b"signature"),
];

/// `data` as a `content_block_delta` event, when it has the API's own compact shape; `None`
/// when the generic parser must decide.
pub(super) fn parse(data: &str) -> Option<StreamEvent> {
    let bytes = data.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    at = expect(bytes, at, PREFIX)?;
    let (index, next) = parse_index(bytes, at)?;
    at = expect(bytes, next, DELTA)?;
    let kind = KINDS
        .iter()
        .position(|(kind, _)| bytes[at..].starts_with(kind))?;
    let (kind_name, field) = KINDS[kind];
    at = expect(bytes, at + kind_name.len(), b"\",\"")?;
    at = expect(bytes, at, field)?;
    at = expect(bytes, at, b"\":")?;
    let (value, next) = parse_string(data, at)?;
    at = expect(bytes, next, b"}")?;
    at = skip_whitespace(bytes, at);
    at = expect(bytes, at, b"}")?;
    if skip_whitespace(bytes, at) != bytes.len() {
        return None;
    }
    let extra = crate::Extra::new;
    let delta = match kind {
        0 => ContentDelta::Text(TextDelta {
            text: value,
            extra: extra(),
        }),
        1 => ContentDelta::Thinking(ThinkingDelta {
            thinking: value,
            extra: extra(),
        }),
        2 => ContentDelta::InputJson(InputJsonDelta {
            partial_json: value,
            extra: extra(),
        }),
        _ => ContentDelta::Signature(SignatureDelta {
            signature: value,
            extra: extra(),
        }),
    };
    Some(StreamEvent::ContentBlockDelta(ContentBlockDelta {
        index,
        delta,
        extra: extra(),
    }))
}

/// The position after `literal`, if `bytes` has it at `at`.
fn expect(bytes: &[u8], at: usize, literal: &[u8]) -> Option<usize> {
    bytes
        .get(at..)?
        .starts_with(literal)
        .then_some(at + literal.len())
}

/// The position of the first byte at or after `at` that is not JSON whitespace.
fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// A JSON non-negative integer at `at` that fits a `usize`, and the position after it.
fn parse_index(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let digits = bytes
        .get(at..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    // JSON forbids leading zeros; a fraction or exponent is not a digit and fails the next
    // literal, so the generic parser decides those.
    if digits == 0 || (digits > 1 && bytes[at] == b'0') {
        return None;
    }
    let mut index: usize = 0;
    for &digit in &bytes[at..at + digits] {
        index = index
            .checked_mul(10)?
            .checked_add(usize::from(digit - b'0'))?;
    }
    Some((index, at + digits))
}

/// The JSON string starting with the quote at `at`, decoded, and the position after its
/// closing quote. `None` for anything serde_json would not accept as a string.
fn parse_string(data: &str, at: usize) -> Option<(String, usize)> {
    let bytes = data.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let mut i = at + 1;
    loop {
        // The next quote or backslash; everything before it is copied as is, unless it holds
        // a raw control character (invalid JSON, for the generic parser to report).
        let rest = bytes.get(i..)?;
        let offset = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[..offset]
            .iter()
            .fold(false, |seen, &b| seen | (b < 0x20))
        {
            return None;
        }
        i += offset;
        if bytes[i] == b'"' {
            break;
        }
        escaped = true;
        // The escaped byte is never the closing quote; serde_json checks the escape.
        i += 2;
    }
    let end = i + 1;
    let value = if escaped {
        // serde_json decides what the plain unescaper leaves (surrogates, invalid escapes).
        match unescape(data.get(at + 1..i)?) {
            Some(value) => value,
            None => serde_json::from_str::<String>(data.get(at..end)?).ok()?,
        }
    } else {
        data.get(at + 1..i)?.to_owned()
    };
    Some((value, end))
}

/// The content of a JSON string (between its quotes, no raw control character) unescaped,
/// when its escapes are the short ones or `\uXXXX` of a code point that is not a surrogate;
/// `None` for anything else. Where it answers, serde_json answers the same (a property test
/// holds them equal); it only spares a deserializer for the escaped deltas (a line break in
/// the text is one).
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = memchr::memchr(b'\\', rest.as_bytes()) {
        out.push_str(rest.get(..at)?);
        let (c, len) = match rest.as_bytes().get(at + 1)? {
            b'"' => ('"', 2),
            b'\\' => ('\\', 2),
            b'/' => ('/', 2),
            b'b' => ('\u{8}', 2),
            b'f' => ('\u{c}', 2),
            b'n' => ('\n', 2),
            b'r' => ('\r', 2),
            b't' => ('\t', 2),
            b'u' => {
                let hex = rest.as_bytes().get(at + 2..at + 6)?;
                let code = hex.iter().try_fold(0u32, |code, &digit| {
                    Some(code * 16 + char::from(digit).to_digit(16)?)
                })?;
                // Surrogates (pairs or lone) are left to serde_json.
                (char::from_u32(code)?, 6)
            }
            _ => return None,
        };
        out.push(c);
        rest = rest.get(at + len..)?;
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn generic(data: &str) -> Option<StreamEvent> {
        serde_json::from_str(data).ok()
    }

    fn delta_json(index: u64, kind: usize, value: &str) -> String {
        let (kind, field) = KINDS[kind];
        format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"{}","{}":{}}}}}"#,
            String::from_utf8_lossy(kind),
            String::from_utf8_lossy(field),
            serde_json::to_string(value).expect("a string serializes"),
        )
    }

    #[test]
    fn takes_the_api_shape_of_every_kind() {
        for kind in 0..KINDS.len() {
            let data = delta_json(3, kind, "a \"quoted\" line\nand é");
            let fast = parse(&data).expect("the API's own shape takes the fast path");
            assert_eq!(Some(fast), generic(&data), "{data}");
        }
    }

    #[test]
    fn unescapes_what_the_api_sends_without_serde_json() {
        assert_eq!(
            unescape(r#"a\n\n\"b\" \\ \/ \t\u00e9\u001F"#).as_deref(),
            Some("a\n\n\"b\" \\ / \t\u{e9}\u{1f}")
        );
        for left in [r"\ud83d\ude00", r"\ud800", r"\q", r"\u12", r"\u+123", "a\\"] {
            assert_eq!(unescape(left), None, "{left}");
        }
    }

    #[test]
    fn accepts_the_padding_the_api_sends() {
        let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"This"}       }  "#;
        assert_eq!(parse(data), generic(data));
        assert!(parse(data).is_some());
    }

    #[test]
    fn leaves_every_other_shape_to_the_generic_parser() {
        for data in [
            // another key order
            r#"{"index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}"#,
            // a field from the future, inside and outside the delta
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","x":1}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"},"x":1}"#,
            // another kind
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            // numbers JSON or usize refuse
            r#"{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":1.0,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":99999999999999999999999,"delta":{"type":"text_delta","text":"a"}}"#,
            // strings JSON refuses
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\u{1}\"}}",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\q"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud800"}}"#,
            // cut short, or followed by more
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}} x"#,
        ] {
            assert_eq!(parse(data), None, "{data}");
        }
    }

    fn arb_value() -> impl Strategy<Value = String> {
        prop_oneof![
            ".*",
            // the characters that matter to a JSON string scanner
            prop::collection::vec(
                prop::sample::select(vec!['"', '\\', 'u', 'n', '\u{0}', '\u{1f}', 'é', '😀', 'a']),
                0..24
            )
            .prop_map(String::from_iter),
        ]
    }

    /// A JSON string's content: text, every escape, `\\u` with any four hex digits (any case,
    /// surrogates included) and broken escapes.
    fn arb_escaped() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z é😀]{0,3}",
            prop::sample::select(vec![
                r#"\""#, r"\\", r"\/", r"\b", r"\f", r"\n", r"\r", r"\t", r"\q", r"\u12", r"\",
            ])
            .prop_map(str::to_owned),
            "[0-9a-fA-FdD]{4}".prop_map(|hex| format!(r"\u{hex}")),
            Just(r"\ud83d\ude00".to_owned()),
        ];
        prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        /// A string the scanner reads whole is the string serde_json reads, whether the plain
        /// unescaper or serde_json unescapes it.
        #[test]
        fn strings_read_as_serde_json_reads_them(raw in arb_escaped()) {
            let quoted = format!("\"{raw}\"");
            if let Some((value, end)) = parse_string(&quoted, 0)
                && end == quoted.len()
            {
                prop_assert_eq!(Some(value), serde_json::from_str::<String>(&quoted).ok());
            }
        }

        /// Valid deltas of every kind take the fast path and parse as the generic parser
        /// parses them.
        #[test]
        fn equals_the_generic_parser_on_valid_deltas(
            index in prop_oneof![0u64..4, any::<u64>()],
            kind in 0..KINDS.len(),
            value in arb_value(),
        ) {
            let data = delta_json(index, kind, &value);
            let fast = parse(&data);
            prop_assert!(fast.is_some() || usize::try_from(index).is_err());
            prop_assert_eq!(fast, generic(&data));
        }

        /// Mangled deltas (bytes replaced, inserted, cut): the fast path either declines or
        /// agrees with the generic parser; it never accepts what the generic parser refuses.
        #[test]
        fn never_disagrees_on_mangled_deltas(
            kind in 0..KINDS.len(),
            value in arb_value(),
            at in any::<prop::sample::Index>(),
            insert in prop::sample::select(vec!["", "\"", "\\", "}", " ", ",\"x\":1", "\u{1}", "0", "é"]),
            cut in any::<bool>(),
        ) {
            let data = delta_json(7, kind, &value);
            let mut at = at.index(data.len() + 1);
            while !data.is_char_boundary(at) {
                at -= 1;
            }
            let mangled = if cut {
                format!("{}{insert}", &data[..at])
            } else {
                format!("{}{insert}{}", &data[..at], &data[at..])
            };
            if let Some(fast) = parse(&mangled) {
                prop_assert_eq!(Some(fast), generic(&mangled), "{}", mangled);
            }
        }
    }
}
