//! Parse JSON text that may be cut off anywhere, the way the Anthropic Python SDK shows a
//! streamed `tool_use` input before its `content_block_stop`.
//!
//! The SDK (anthropic 2.14.0, `lib/streaming/_messages.py`, `accumulate_event`) re-parses the
//! whole `input_json_delta` buffer after every delta with
//! `jiter.from_json(json_buf, partial_mode=True)`, and jiter reads `True` as its `"on"` mode:
//! incomplete trailing strings are dropped. [`parse_partial`] mirrors exactly that (checked
//! against jiter 0.19.0, which anthropic 2.14.0 installs). The beta helper
//! (`lib/streaming/_beta_messages.py`) switches to jiter's `"trailing-strings"` mode when the
//! request carried the `fine-grained-tool-streaming-2025-05-14` beta header;
//! [`parse_partial_with`] and [`PartialMode::TrailingStrings`] mirror that one.
//!
//! What jiter's partial mode does, and so what this module does:
//! - The first value is returned and anything after it is ignored: partial mode never checks
//!   for trailing characters (`[1] x` gives `[1]`).
//! - Empty or all-whitespace input, and a top-level scalar that is not complete (`tru`, `-`,
//!   `1.`, `1e+`, and in `"on"` mode `"abc`), give `None` (jiter raises).
//! - An array or object that is cut is closed with the members that were complete. An object
//!   member is kept only once its value is: a cut key, a key without its `:`, or a key and `:`
//!   without a value are dropped (`{"a":1,"b":` gives `{"a":1}`).
//! - A scalar cut inside a container is dropped: `[tru` and `[1.` and `[-` and `[1e+` give
//!   `[]`. A number counts as complete once its text is a valid number, so `[1` gives `[1]`
//!   and `[1.5` gives `[1.5]` (more digits could have followed).
//! - A string value cut inside a container is dropped in [`PartialMode::On`] (`["ab` gives
//!   `[]`) and kept as far as it goes in [`PartialMode::TrailingStrings`] (`["ab` gives
//!   `["ab"]`; an escape cut half-way, such as `\u00` or the first half of a surrogate pair,
//!   is left out). A cut object key is dropped in both modes.
//! - Where a container expects `,` or its closing bracket, any other byte ends the container
//!   as though the text had been cut there, and the enclosing container carries on from that
//!   byte: `[1 2]` gives `[1]`, `[{"a":1],2]` gives `[{"a":1}]`. (jiter lets the "expected `,`
//!   or `]`/`}`" errors through in partial mode, like the end-of-input errors.)
//! - Everything else that is not JSON gives `None`, even before the cut: a bad literal
//!   (`[tx`), a bad number (`[01`, `[1.x`, `[-x`), a trailing comma (`[1,]`), a missing `:`,
//!   a key that is not a string, a raw control character U+0000..=U+001F in a string, a bad
//!   escape, a lone surrogate escape, a value that does not start like one (`[x`), nesting more
//!   than 200 levels below the top-level value, and an integer part of more than 4300 digits.
//! - jiter accepts `NaN`, `Infinity` and `-Infinity` (its `allow_inf_nan` is on by default);
//!   a JSON value cannot hold them, so they become `null`, which is also what the SDK's own
//!   `to_json()` writes for them. A float out of `f64` range (`1e400`) becomes `null` the same
//!   way, since jiter makes it an infinity.
//! - Integers become `i64`, or `u64` when they only fit that; larger ones become the nearest
//!   `f64`, or `null` beyond its range (Python keeps them exact). `-0` is the integer `0`, as
//!   in jiter. Floats are correctly rounded, as jiter's are.
//! - A repeated key keeps its last value, as a Python `dict` does.
//!
//! The parser is a single left-to-right pass, linear in the input's length.

use serde_json::{Map, Number, Value};

/// How deep jiter lets values nest below the top-level value (its `DEFAULT_RECURSION_LIMIT`).
const MAX_DEPTH: usize = 200;

/// The most digits jiter accepts in a number's integer part (Python's `int` digit limit).
const MAX_INT_DIGITS: usize = 4300;

/// jiter's treatment of a string that is cut before its closing quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartialMode {
    /// `partial_mode=True` (jiter's `"on"`): a cut string is dropped, together with the array
    /// element or object member it belongs to. The SDK's tool-input accumulation uses this.
    #[default]
    On,
    /// `partial_mode="trailing-strings"`: a cut string value is kept as far as it goes. The
    /// SDK's beta accumulation uses this under the `fine-grained-tool-streaming-2025-05-14`
    /// beta.
    TrailingStrings,
}

/// Parses JSON text that may be cut off anywhere, returning what the Anthropic Python SDK
/// shows for it: the value of `jiter.from_json(json, partial_mode=True)` (jiter's `"on"`
/// mode, in which cut strings are dropped).
///
/// Returns `None` where jiter raises: on empty input, a cut top-level scalar, or text that
/// is not JSON before the cut. See the [module documentation](self) for the exact rules.
///
/// ```
/// use threadline_wire::partial_json::parse_partial;
/// use serde_json::json;
///
/// assert_eq!(parse_partial(r#"{"path": "src/", "recursive": tr"#), Some(json!({"path": "src/"})));
/// assert_eq!(parse_partial(r#"{"path": "sr"#), Some(json!({})));
/// assert_eq!(parse_partial(""), None);
/// ```
pub fn parse_partial(json: &str) -> Option<Value> {
    parse_partial_with(json, PartialMode::On)
}

/// Parses JSON text that may be cut off anywhere, as `jiter.from_json(json, partial_mode=…)`
/// does with the given `mode`.
///
/// Returns `None` where jiter raises. See the [module documentation](self) for the rules.
///
/// ```
/// use threadline_wire::partial_json::{parse_partial_with, PartialMode};
/// use serde_json::json;
///
/// let cut = r#"{"path": "sr"#;
/// assert_eq!(parse_partial_with(cut, PartialMode::On), Some(json!({})));
/// assert_eq!(parse_partial_with(cut, PartialMode::TrailingStrings), Some(json!({"path": "sr"})));
/// ```
pub fn parse_partial_with(json: &str, mode: PartialMode) -> Option<Value> {
    let mut parser = Parser {
        text: json,
        bytes: json.as_bytes(),
        pos: 0,
        mode,
    };
    let first = parser.skip_whitespace()?;
    parser.value(first, 0).ok()
}

/// Why parsing stopped before a value was complete.
enum Stop {
    /// An error jiter lets through in partial mode (the input ended, or a `,` or closing
    /// bracket was expected): the nearest enclosing container ends with what it has.
    Partial,
    /// Any other error: the whole parse fails.
    Fatal,
}

type Step<T> = Result<T, Stop>;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    /// The next byte to read. A failed scalar leaves it at the scalar's first byte, as jiter
    /// does, so that the enclosing containers see that byte.
    pos: usize,
    mode: PartialMode,
}

impl Parser<'_> {
    /// Skips JSON whitespace and returns the next byte, or `None` at the end of the input.
    fn skip_whitespace(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes.get(self.pos) {
            match byte {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                _ => return Some(byte),
            }
        }
        None
    }

    /// Parses the value starting at `self.pos`, whose first byte is `first`.
    fn value(&mut self, first: u8, depth: usize) -> Step<Value> {
        match first {
            b'[' => self.array(depth),
            b'{' => self.object(depth),
            b'"' => {
                let keep_cut = self.mode == PartialMode::TrailingStrings;
                self.string(keep_cut).map(Value::String)
            }
            b't' => self.literal(self.pos, b"true").map(|()| Value::Bool(true)),
            b'f' => self
                .literal(self.pos, b"false")
                .map(|()| Value::Bool(false)),
            b'n' => self.literal(self.pos, b"null").map(|()| Value::Null),
            b'-' | b'0'..=b'9' | b'I' | b'N' => self.number(),
            _ => Err(Stop::Fatal),
        }
    }

    /// Parses a value inside a container at `depth`, enforcing jiter's nesting limit.
    fn nested_value(&mut self, first: u8, depth: usize) -> Step<Value> {
        let depth = depth + 1;
        if depth > MAX_DEPTH {
            return Err(Stop::Fatal);
        }
        self.value(first, depth)
    }

    fn array(&mut self, depth: usize) -> Step<Value> {
        self.pos += 1; // `[`
        let mut items = Vec::new();
        match self.array_items(&mut items, depth) {
            Ok(()) | Err(Stop::Partial) => Ok(Value::Array(items)),
            Err(Stop::Fatal) => Err(Stop::Fatal),
        }
    }

    fn array_items(&mut self, items: &mut Vec<Value>, depth: usize) -> Step<()> {
        let mut next = match self.skip_whitespace() {
            None => return Err(Stop::Partial),
            Some(b']') => {
                self.pos += 1;
                return Ok(());
            }
            Some(byte) => byte,
        };
        loop {
            items.push(self.nested_value(next, depth)?);
            match self.skip_whitespace() {
                Some(b',') => {
                    self.pos += 1;
                    next = match self.skip_whitespace() {
                        None => return Err(Stop::Partial),
                        Some(b']') => return Err(Stop::Fatal), // trailing comma
                        Some(byte) => byte,
                    };
                }
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                // The end of the input, or a byte where `,` or `]` was expected.
                _ => return Err(Stop::Partial),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Step<Value> {
        self.pos += 1; // `{`
        let mut members = Map::new();
        match self.object_members(&mut members, depth) {
            Ok(()) | Err(Stop::Partial) => Ok(Value::Object(members)),
            Err(Stop::Fatal) => Err(Stop::Fatal),
        }
    }

    fn object_members(&mut self, members: &mut Map<String, Value>, depth: usize) -> Step<()> {
        match self.skip_whitespace() {
            None => return Err(Stop::Partial),
            Some(b'}') => {
                self.pos += 1;
                return Ok(());
            }
            Some(b'"') => {}
            Some(_) => return Err(Stop::Fatal), // key must be a string
        }
        loop {
            let key = self.string(false)?;
            match self.skip_whitespace() {
                None => return Err(Stop::Partial),
                Some(b':') => self.pos += 1,
                Some(_) => return Err(Stop::Fatal), // expected `:`
            }
            let first = self.skip_whitespace().ok_or(Stop::Partial)?;
            let value = self.nested_value(first, depth)?;
            members.insert(key, value);
            match self.skip_whitespace() {
                Some(b',') => {
                    self.pos += 1;
                    match self.skip_whitespace() {
                        None => return Err(Stop::Partial),
                        Some(b'"') => {}
                        // A trailing comma, or a key that is not a string.
                        Some(_) => return Err(Stop::Fatal),
                    }
                }
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                // The end of the input, or a byte where `,` or `}` was expected.
                _ => return Err(Stop::Partial),
            }
        }
    }

    /// Checks that `word` is spelled from `at` on and moves past it; a prefix of `word` that
    /// runs to the end of the input is [`Stop::Partial`], any other difference is fatal.
    fn literal(&mut self, at: usize, word: &[u8]) -> Step<()> {
        for (offset, &expected) in word.iter().enumerate().skip(1) {
            match self.bytes.get(at + offset) {
                Some(&byte) if byte == expected => {}
                Some(_) => return Err(Stop::Fatal),
                None => return Err(Stop::Partial),
            }
        }
        self.pos = at + word.len();
        Ok(())
    }

    /// Parses a number (or `NaN`, `Infinity`, `-Infinity`) at `self.pos`.
    fn number(&mut self) -> Step<Value> {
        let start = self.pos;
        let mut at = start;
        if self.bytes.get(at) == Some(&b'N') {
            self.literal(at, b"NaN")?;
            return Ok(Value::Null);
        }
        if self.bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match self.bytes.get(at) {
            None => return Err(Stop::Partial),
            Some(b'I') => {
                self.literal(at, b"Infinity")?;
                return Ok(Value::Null);
            }
            Some(b'0') => {
                at += 1;
                if self.bytes.get(at).is_some_and(u8::is_ascii_digit) {
                    return Err(Stop::Fatal); // a leading zero
                }
            }
            Some(b'1'..=b'9') => {
                let digits_start = at;
                at = self.skip_digits(at);
                if at - digits_start > MAX_INT_DIGITS {
                    return Err(Stop::Fatal);
                }
            }
            Some(_) => return Err(Stop::Fatal),
        }
        let mut is_float = false;
        if self.bytes.get(at) == Some(&b'.') {
            is_float = true;
            at = self.required_digits(at + 1)?;
        }
        if matches!(self.bytes.get(at), Some(b'e' | b'E')) {
            is_float = true;
            at += 1;
            if matches!(self.bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            at = self.required_digits(at)?;
        }
        let text = self.text.get(start..at).ok_or(Stop::Fatal)?;
        self.pos = at;
        Ok(number_value(text, is_float))
    }

    /// Moves past one or more digits at `at`: none before the end is [`Stop::Partial`],
    /// another byte is fatal.
    fn required_digits(&self, at: usize) -> Step<usize> {
        match self.bytes.get(at) {
            Some(byte) if byte.is_ascii_digit() => Ok(self.skip_digits(at)),
            Some(_) => Err(Stop::Fatal),
            None => Err(Stop::Partial),
        }
    }

    fn skip_digits(&self, mut at: usize) -> usize {
        while self.bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        at
    }

    /// Parses the string whose opening quote is at `self.pos`. If the input ends first, the
    /// string is [`Stop::Partial`], or, with `keep_cut`, what was decoded so far.
    fn string(&mut self, keep_cut: bool) -> Step<String> {
        let mut out = String::new();
        let mut at = self.pos + 1;
        let mut run_start = at;
        loop {
            match self.bytes.get(at) {
                Some(b'"') => {
                    out.push_str(self.text.get(run_start..at).ok_or(Stop::Fatal)?);
                    self.pos = at + 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    out.push_str(self.text.get(run_start..at).ok_or(Stop::Fatal)?);
                    match self.escape(at, &mut out) {
                        Ok(next) => {
                            at = next;
                            run_start = at;
                        }
                        Err(Stop::Partial) if keep_cut => {
                            self.pos = self.bytes.len();
                            return Ok(out);
                        }
                        Err(stop) => return Err(stop),
                    }
                }
                Some(0x00..=0x1f) => return Err(Stop::Fatal),
                Some(_) => at += 1,
                None if keep_cut => {
                    out.push_str(self.text.get(run_start..).ok_or(Stop::Fatal)?);
                    self.pos = at;
                    return Ok(out);
                }
                None => return Err(Stop::Partial),
            }
        }
    }

    /// Decodes the escape whose backslash is at `at` onto `out`, returning the index after it.
    fn escape(&self, at: usize, out: &mut String) -> Step<usize> {
        let decoded = match self.bytes.get(at + 1) {
            None => return Err(Stop::Partial),
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => return self.unicode_escape(at + 1, out),
            Some(_) => return Err(Stop::Fatal),
        };
        out.push(decoded);
        Ok(at + 2)
    }

    /// Decodes the `\uXXXX` escape (and a following low surrogate) whose `u` is at `u_at`.
    fn unicode_escape(&self, u_at: usize, out: &mut String) -> Step<usize> {
        let first = self.hex4(u_at)?;
        let after = u_at + 5;
        let code = match first {
            0xDC00..=0xDFFF => return Err(Stop::Fatal), // a lone trailing surrogate
            0xD800..=0xDBFF => match (self.bytes.get(after), self.bytes.get(after + 1)) {
                (Some(b'\\'), Some(b'u')) => {
                    let second = self.hex4(after + 1)?;
                    if !(0xDC00..=0xDFFF).contains(&second) {
                        return Err(Stop::Fatal);
                    }
                    let code = 0x1_0000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                    out.push(char::from_u32(code).ok_or(Stop::Fatal)?);
                    return Ok(after + 6);
                }
                (None, _) | (Some(b'\\'), None) => return Err(Stop::Partial),
                _ => return Err(Stop::Fatal), // a lone leading surrogate
            },
            code => code,
        };
        out.push(char::from_u32(code).ok_or(Stop::Fatal)?);
        Ok(after)
    }

    /// Reads the four hex digits after the `u` at `u_at`; fewer than four bytes left is
    /// [`Stop::Partial`] whatever they are, as in jiter.
    fn hex4(&self, u_at: usize) -> Step<u32> {
        let digits = self.bytes.get(u_at + 1..u_at + 5).ok_or(Stop::Partial)?;
        digits.iter().try_fold(0, |acc, &digit| {
            let nibble = char::from(digit).to_digit(16).ok_or(Stop::Fatal)?;
            Ok(acc << 4 | nibble)
        })
    }
}

/// Converts the text of a valid JSON number as jiter's `float_mode="float"` does, with
/// non-finite results as `null`.
fn number_value(text: &str, is_float: bool) -> Value {
    if !is_float {
        if let Ok(int) = text.parse::<i64>() {
            return Value::Number(Number::from(int));
        }
        if let Ok(int) = text.parse::<u64>() {
            return Value::Number(Number::from(int));
        }
    }
    text.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A document and, for each mode, what jiter returns for its prefixes: each
    /// `(from, expected)` holds for every prefix of `from` bytes or more (cut on a character
    /// boundary) up to the next entry's `from`. `expected` is JSON text, `None` where jiter
    /// raises. An empty list means the mode is not tabled for that document.
    struct PrefixCase {
        doc: &'static str,
        on: &'static [(usize, Option<&'static str>)],
        trailing: &'static [(usize, Option<&'static str>)],
    }

    // The tables were produced by running `jiter.from_json(prefix.encode(), partial_mode=…)`
    // (jiter 0.19.0, as installed with anthropic 2.14.0) with `True` and `"trailing-strings"`
    // on every prefix, writing NaN and infinities as `null`.
    /// Every document below, cut after each of its characters, against jiter 0.19.0 in both modes.
    #[rustfmt::skip]
    const PREFIX_CASES: &[PrefixCase] = &[
        PrefixCase {
            doc: r#"{"path": "src/main.rs", "recursive": true, "depth": 3, "exclude": null}"#,
            on: &[
                (0, None),
                (1, Some("{}")),
                (22, Some(r#"{"path":"src/main.rs"}"#)),
                (41, Some(r#"{"path":"src/main.rs","recursive":true}"#)),
                (53, Some(r#"{"path":"src/main.rs","recursive":true,"depth":3}"#)),
                (70, Some(r#"{"path":"src/main.rs","recursive":true,"depth":3,"exclude":null}"#)),
            ],
            trailing: &[],
        },
        PrefixCase {
            doc: r#"{"text": "Café \"q\" \u00e9\\", "emoji": "😀\ud83d\ude00", "tab": "a\tb\/"}"#,
            on: &[
                (0, None),
                (1, Some("{}")),
                (31, Some(r#"{"text":"Café \"q\" é\\"}"#)),
                (60, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀"}"#)),
                (77, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀","tab":"a\tb/"}"#)),
            ],
            trailing: &[
                (0, None),
                (1, Some("{}")),
                (10, Some(r#"{"text":""}"#)),
                (11, Some(r#"{"text":"C"}"#)),
                (12, Some(r#"{"text":"Ca"}"#)),
                (13, Some(r#"{"text":"Caf"}"#)),
                (15, Some(r#"{"text":"Café"}"#)),
                (16, Some(r#"{"text":"Café "}"#)),
                (18, Some(r#"{"text":"Café \""}"#)),
                (19, Some(r#"{"text":"Café \"q"}"#)),
                (21, Some(r#"{"text":"Café \"q\""}"#)),
                (22, Some(r#"{"text":"Café \"q\" "}"#)),
                (28, Some(r#"{"text":"Café \"q\" é"}"#)),
                (30, Some(r#"{"text":"Café \"q\" é\\"}"#)),
                (43, Some(r#"{"text":"Café \"q\" é\\","emoji":""}"#)),
                (47, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀"}"#)),
                (59, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀"}"#)),
                (70, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀","tab":""}"#)),
                (71, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀","tab":"a"}"#)),
                (73, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀","tab":"a\t"}"#)),
                (74, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀","tab":"a\tb"}"#)),
                (76, Some(r#"{"text":"Café \"q\" é\\","emoji":"😀😀","tab":"a\tb/"}"#)),
            ],
        },
        PrefixCase {
            doc: r#"{"edits": [{"line": 1, "ops": [["ins", "x"], ["del", 2]]}, {"line": -12, "ok": false}], "meta": {}}"#,
            on: &[
                (0, None),
                (1, Some("{}")),
                (11, Some(r#"{"edits":[]}"#)),
                (12, Some(r#"{"edits":[{}]}"#)),
                (21, Some(r#"{"edits":[{"line":1}]}"#)),
                (31, Some(r#"{"edits":[{"line":1,"ops":[]}]}"#)),
                (32, Some(r#"{"edits":[{"line":1,"ops":[[]]}]}"#)),
                (37, Some(r#"{"edits":[{"line":1,"ops":[["ins"]]}]}"#)),
                (42, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"]]}]}"#)),
                (46, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],[]]}]}"#)),
                (51, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del"]]}]}"#)),
                (54, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]}]}"#)),
                (60, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{}]}"#)),
                (70, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-1}]}"#)),
                (71, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-12}]}"#)),
                (84, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-12,"ok":false}]}"#)),
                (97, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-12,"ok":false}],"meta":{}}"#)),
            ],
            trailing: &[
                (0, None),
                (1, Some("{}")),
                (11, Some(r#"{"edits":[]}"#)),
                (12, Some(r#"{"edits":[{}]}"#)),
                (21, Some(r#"{"edits":[{"line":1}]}"#)),
                (31, Some(r#"{"edits":[{"line":1,"ops":[]}]}"#)),
                (32, Some(r#"{"edits":[{"line":1,"ops":[[]]}]}"#)),
                (33, Some(r#"{"edits":[{"line":1,"ops":[[""]]}]}"#)),
                (34, Some(r#"{"edits":[{"line":1,"ops":[["i"]]}]}"#)),
                (35, Some(r#"{"edits":[{"line":1,"ops":[["in"]]}]}"#)),
                (36, Some(r#"{"edits":[{"line":1,"ops":[["ins"]]}]}"#)),
                (40, Some(r#"{"edits":[{"line":1,"ops":[["ins",""]]}]}"#)),
                (41, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"]]}]}"#)),
                (46, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],[]]}]}"#)),
                (47, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],[""]]}]}"#)),
                (48, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["d"]]}]}"#)),
                (49, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["de"]]}]}"#)),
                (50, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del"]]}]}"#)),
                (54, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]}]}"#)),
                (60, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{}]}"#)),
                (70, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-1}]}"#)),
                (71, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-12}]}"#)),
                (84, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-12,"ok":false}]}"#)),
                (97, Some(r#"{"edits":[{"line":1,"ops":[["ins","x"],["del",2]]},{"line":-12,"ok":false}],"meta":{}}"#)),
            ],
        },
        PrefixCase {
            doc: "[0, -0, 12.5, -3.25e+2, 1E3, 6.02e23, 18446744073709551615, -9223372036854775808, 0.5]",
            on: &[
                (0, None),
                (1, Some("[]")),
                (2, Some("[0]")),
                (6, Some("[0,0]")),
                (9, Some("[0,0,1]")),
                (10, Some("[0,0,12]")),
                (11, Some("[0,0]")),
                (12, Some("[0,0,12.5]")),
                (16, Some("[0,0,12.5,-3]")),
                (17, Some("[0,0,12.5]")),
                (18, Some("[0,0,12.5,-3.2]")),
                (19, Some("[0,0,12.5,-3.25]")),
                (20, Some("[0,0,12.5]")),
                (22, Some("[0,0,12.5,-325.0]")),
                (25, Some("[0,0,12.5,-325.0,1]")),
                (26, Some("[0,0,12.5,-325.0]")),
                (27, Some("[0,0,12.5,-325.0,1000.0]")),
                (30, Some("[0,0,12.5,-325.0,1000.0,6]")),
                (31, Some("[0,0,12.5,-325.0,1000.0]")),
                (32, Some("[0,0,12.5,-325.0,1000.0,6.0]")),
                (33, Some("[0,0,12.5,-325.0,1000.0,6.02]")),
                (34, Some("[0,0,12.5,-325.0,1000.0]")),
                (35, Some("[0,0,12.5,-325.0,1000.0,602.0]")),
                (36, Some("[0,0,12.5,-325.0,1000.0,6.02e+23]")),
                (39, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,1]")),
                (40, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18]")),
                (41, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,184]")),
                (42, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,1844]")),
                (43, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446]")),
                (44, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,184467]")),
                (45, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,1844674]")),
                (46, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744]")),
                (47, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,184467440]")),
                (48, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,1844674407]")),
                (49, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073]")),
                (50, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,184467440737]")),
                (51, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,1844674407370]")),
                (52, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709]")),
                (53, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,184467440737095]")),
                (54, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,1844674407370955]")),
                (55, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551]")),
                (56, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,184467440737095516]")),
                (57, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,1844674407370955161]")),
                (58, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615]")),
                (62, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9]")),
                (63, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-92]")),
                (64, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-922]")),
                (65, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223]")),
                (66, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-92233]")),
                (67, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-922337]")),
                (68, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372]")),
                (69, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-92233720]")),
                (70, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-922337203]")),
                (71, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372036]")),
                (72, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-92233720368]")),
                (73, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-922337203685]")),
                (74, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372036854]")),
                (75, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-92233720368547]")),
                (76, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-922337203685477]")),
                (77, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372036854775]")),
                (78, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-92233720368547758]")),
                (79, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-922337203685477580]")),
                (80, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372036854775808]")),
                (83, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372036854775808,0]")),
                (84, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372036854775808]")),
                (85, Some("[0,0,12.5,-325.0,1000.0,6.02e+23,18446744073709551615,-9223372036854775808,0.5]")),
            ],
            trailing: &[],
        },
        PrefixCase {
            doc: "{\n  \"a\": [true, false, null],\n  \"b\": {\"c\": [ ], \"d\": \"ü\"}\n}",
            on: &[
                (0, None),
                (1, Some("{}")),
                (10, Some(r#"{"a":[]}"#)),
                (14, Some(r#"{"a":[true]}"#)),
                (21, Some(r#"{"a":[true,false]}"#)),
                (27, Some(r#"{"a":[true,false,null]}"#)),
                (38, Some(r#"{"a":[true,false,null],"b":{}}"#)),
                (44, Some(r#"{"a":[true,false,null],"b":{"c":[]}}"#)),
                (57, Some(r#"{"a":[true,false,null],"b":{"c":[],"d":"ü"}}"#)),
            ],
            trailing: &[],
        },
        PrefixCase {
            doc: r#""top\u00e9 level""#,
            on: &[
                (0, None),
                (17, Some(r#""topé level""#)),
            ],
            trailing: &[
                (0, None),
                (1, Some(r#""""#)),
                (2, Some(r#""t""#)),
                (3, Some(r#""to""#)),
                (4, Some(r#""top""#)),
                (10, Some(r#""topé""#)),
                (11, Some(r#""topé ""#)),
                (12, Some(r#""topé l""#)),
                (13, Some(r#""topé le""#)),
                (14, Some(r#""topé lev""#)),
                (15, Some(r#""topé leve""#)),
                (16, Some(r#""topé level""#)),
            ],
        },
    ];

    /// Hand-picked inputs (input, `"on"`, `"trailing-strings"`), against jiter 0.19.0.
    #[rustfmt::skip]
    const EDGE_CASES: &[(&str, Option<&str>, Option<&str>)] = &[
        ("", None, None),
        (" ", None, None),
        ("\n", None, None),
        ("t", None, None),
        ("tru", None, None),
        ("true", Some("true"), Some("true")),
        ("true ", Some("true"), Some("true")),
        ("truex", Some("true"), Some("true")),
        ("nul", None, None),
        ("null", Some("null"), Some("null")),
        ("f", None, None),
        ("fals", None, None),
        ("-", None, None),
        ("-0", Some("0"), Some("0")),
        ("1", Some("1"), Some("1")),
        ("1.", None, None),
        ("1.5", Some("1.5"), Some("1.5")),
        ("1e", None, None),
        ("1e+", None, None),
        ("1e5", Some("100000.0"), Some("100000.0")),
        ("01", None, None),
        ("0.", None, None),
        ("-x", None, None),
        ("1 2", Some("1"), Some("1")),
        ("[1] x", Some("[1]"), Some("[1]")),
        (r#"{"a":1}}"#, Some(r#"{"a":1}"#), Some(r#"{"a":1}"#)),
        ("[", Some("[]"), Some("[]")),
        ("[ ", Some("[]"), Some("[]")),
        ("[1", Some("[1]"), Some("[1]")),
        ("[1,", Some("[1]"), Some("[1]")),
        ("[1, ", Some("[1]"), Some("[1]")),
        ("[1,]", None, None),
        ("[,", None, None),
        ("[1 2", Some("[1]"), Some("[1]")),
        ("[1x", Some("[1]"), Some("[1]")),
        ("[1.2.3", Some("[1.2]"), Some("[1.2]")),
        ("[0x", Some("[0]"), Some("[0]")),
        ("[1-2", Some("[1]"), Some("[1]")),
        ("[1.", Some("[]"), Some("[]")),
        ("[1.x", None, None),
        ("[1e", Some("[]"), Some("[]")),
        ("[1e-", Some("[]"), Some("[]")),
        ("[1E+", Some("[]"), Some("[]")),
        ("[-", Some("[]"), Some("[]")),
        ("[-x", None, None),
        ("[-0.", Some("[]"), Some("[]")),
        ("[01", None, None),
        ("[00", None, None),
        ("[+1", None, None),
        ("[.5", None, None),
        ("[t", Some("[]"), Some("[]")),
        ("[tru", Some("[]"), Some("[]")),
        ("[tx", None, None),
        ("[tru]", None, None),
        ("[nul", Some("[]"), Some("[]")),
        ("[nulx", None, None),
        ("[fals", Some("[]"), Some("[]")),
        ("[falsex", Some("[false]"), Some("[false]")),
        ("[truex", Some("[true]"), Some("[true]")),
        ("[null x", Some("[null]"), Some("[null]")),
        ("NaN", Some("null"), Some("null")),
        ("Na", None, None),
        ("[N", Some("[]"), Some("[]")),
        ("[NaN", Some("[null]"), Some("[null]")),
        ("[NaNx", Some("[null]"), Some("[null]")),
        ("[Infin", Some("[]"), Some("[]")),
        ("[Infinity", Some("[null]"), Some("[null]")),
        ("[-I", Some("[]"), Some("[]")),
        ("[-Infinity", Some("[null]"), Some("[null]")),
        ("-Infinity", Some("null"), Some("null")),
        ("[-N", None, None),
        ("[Ix", None, None),
        ("[1e400", Some("[null]"), Some("[null]")),
        ("[-1e400]", Some("[null]"), Some("[null]")),
        ("[1e-400", Some("[0.0]"), Some("[0.0]")),
        ("[x", None, None),
        ("[ix", None, None),
        ("{", Some("{}"), Some("{}")),
        ("{ ", Some("{}"), Some("{}")),
        (r#"{""#, Some("{}"), Some("{}")),
        (r#"{"a"#, Some("{}"), Some("{}")),
        (r#"{"a""#, Some("{}"), Some("{}")),
        (r#"{"a" "#, Some("{}"), Some("{}")),
        (r#"{"a":"#, Some("{}"), Some("{}")),
        (r#"{"a": "#, Some("{}"), Some("{}")),
        (r#"{"a":""#, Some("{}"), Some(r#"{"a":""}"#)),
        (r#"{"a":"x"#, Some("{}"), Some(r#"{"a":"x"}"#)),
        (r#"{"a":"x""#, Some(r#"{"a":"x"}"#), Some(r#"{"a":"x"}"#)),
        (r#"{"a":"x","#, Some(r#"{"a":"x"}"#), Some(r#"{"a":"x"}"#)),
        (r#"{"a":"x", ""#, Some(r#"{"a":"x"}"#), Some(r#"{"a":"x"}"#)),
        (r#"{"a" 1"#, None, None),
        (r#"{"a"}"#, None, None),
        (r#"{"a":}"#, None, None),
        ("{1", None, None),
        ("{,", None, None),
        (r#"{"a":1,}"#, None, None),
        (r#"{"a":1,,"#, None, None),
        (r#"{"a":1 "b":2}"#, Some(r#"{"a":1}"#), Some(r#"{"a":1}"#)),
        (r#"{"a":1 x"#, Some(r#"{"a":1}"#), Some(r#"{"a":1}"#)),
        (r#"{"a":1,"a":2}"#, Some(r#"{"a":2}"#), Some(r#"{"a":2}"#)),
        (r#"{"a":1,"a":"x"#, Some(r#"{"a":1}"#), Some(r#"{"a":"x"}"#)),
        (r#"{"a":1,"a":["#, Some(r#"{"a":[]}"#), Some(r#"{"a":[]}"#)),
        (r#"""#, None, Some(r#""""#)),
        (r#""abc"#, None, Some(r#""abc""#)),
        (r#""abc""#, Some(r#""abc""#), Some(r#""abc""#)),
        (r#""abc"x"#, Some(r#""abc""#), Some(r#""abc""#)),
        (r#""\"#, None, Some(r#""""#)),
        (r#""\u"#, None, Some(r#""""#)),
        (r#""\u00"#, None, Some(r#""""#)),
        (r#""\u00e9""#, Some(r#""é""#), Some(r#""é""#)),
        (r#"["a\"#, Some("[]"), Some(r#"["a"]"#)),
        (r#"["a\""#, Some("[]"), Some(r#"["a\""]"#)),
        (r#"["a\u00"#, Some("[]"), Some(r#"["a"]"#)),
        (r#"["a\u12x"#, Some("[]"), Some(r#"["a"]"#)),
        (r#"["a\x"#, None, None),
        (r#""\x""#, None, None),
        (r#""\u00zz""#, None, None),
        (r#"["é"#, Some("[]"), Some(r#"["é"]"#)),
        (r#"["\ud83d"#, Some("[]"), Some(r#"[""]"#)),
        (r#"["\ud83d\"#, Some("[]"), Some(r#"[""]"#)),
        (r#"["\ud83d\u"#, Some("[]"), Some(r#"[""]"#)),
        (r#"["\ud83d\ude0"#, Some("[]"), Some(r#"[""]"#)),
        (r#"["\ud83d\ude00"#, Some("[]"), Some(r#"["😀"]"#)),
        (r#"["\ud83dx"#, None, None),
        (r#"["\ud83d\x"#, None, None),
        (r#"["\ud83d\u0041"#, None, None),
        (r#"["\udc00"#, None, None),
        (r#""\ud83d""#, None, None),
        ("\"a\u{1}b\"", None, None),
        ("[\"a\u{1f}", None, None),
        ("\"a\nb\"", None, None),
        ("\"a\u{7f}b\"", Some("\"a\u{7f}b\""), Some("\"a\u{7f}b\"")),
        ("﻿1", None, None),
        ("\u{c}1", None, None),
        ("[1\u{c}]", Some("[1]"), Some("[1]")),
        ("[[1,[2,[3", Some("[[1,[2,[3]]]]"), Some("[[1,[2,[3]]]]")),
        (r#"[{"a":"b"},{"c"#, Some(r#"[{"a":"b"},{}]"#), Some(r#"[{"a":"b"},{}]"#)),
        (r#"[{"a":1],2"#, Some(r#"[{"a":1}]"#), Some(r#"[{"a":1}]"#)),
        (r#"{"a":[1},"b":2}"#, Some(r#"{"a":[1]}"#), Some(r#"{"a":[1]}"#)),
        (r#"[{"a":[1 2]},3]"#, Some(r#"[{"a":[1]}]"#), Some(r#"[{"a":[1]}]"#)),
        ("[[] []]", Some("[[]]"), Some("[[]]")),
        (r#"["a" "b"]"#, Some(r#"["a"]"#), Some(r#"["a"]"#)),
        ("[[1.", Some("[[]]"), Some("[[]]")),
        ("[[1.,2", None, None),
        (r#"{"a":{"b":[1,{"c":"d"#, Some(r#"{"a":{"b":[1,{}]}}"#), Some(r#"{"a":{"b":[1,{"c":"d"}]}}"#)),
        (r#"{"a":1,"b":"c\"#, Some(r#"{"a":1}"#), Some(r#"{"a":1,"b":"c"}"#)),
        (r#"{"a\u00e9":1"#, Some(r#"{"aé":1}"#), Some(r#"{"aé":1}"#)),
        (r#"{"\ud800"#, Some("{}"), Some("{}")),
        ("12345678901234567890123", Some("12345678901234567890123"), Some("12345678901234567890123")),
        ("-9223372036854775809", Some("-9223372036854775809"), Some("-9223372036854775809")),
        ("18446744073709551616", Some("18446744073709551616"), Some("18446744073709551616")),
    ];

    fn expected(json: Option<&str>) -> Option<Value> {
        json.map(|text| serde_json::from_str(text).expect("table JSON parses"))
    }

    #[test]
    fn every_prefix_matches_jiter() {
        let mut checked = 0;
        for case in PREFIX_CASES {
            for (mode, runs) in [
                (PartialMode::On, case.on),
                (PartialMode::TrailingStrings, case.trailing),
            ] {
                if runs.is_empty() {
                    continue;
                }
                assert_eq!(
                    runs[0].0, 0,
                    "{:?}: the table starts at the empty prefix",
                    case.doc
                );
                for (cut, _) in case.doc.char_indices().chain([(case.doc.len(), ' ')]) {
                    let run = runs
                        .iter()
                        .rev()
                        .find(|(from, _)| *from <= cut)
                        .expect("a run");
                    assert_eq!(
                        parse_partial_with(&case.doc[..cut], mode),
                        expected(run.1),
                        "{mode:?} on {:?}",
                        &case.doc[..cut]
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 600, "{checked} prefixes checked");
    }

    #[test]
    fn edge_cases_match_jiter() {
        for &(input, on, trailing) in EDGE_CASES {
            assert_eq!(parse_partial(input), expected(on), "on: {input:?}");
            assert_eq!(
                parse_partial_with(input, PartialMode::On),
                expected(on),
                "on: {input:?}"
            );
            assert_eq!(
                parse_partial_with(input, PartialMode::TrailingStrings),
                expected(trailing),
                "trailing-strings: {input:?}"
            );
        }
    }

    /// jiter allows 200 levels below the top-level value, and 4300 digits in an integer part.
    #[test]
    fn nesting_and_digit_limits_match_jiter() {
        let nested = |levels: usize, leaf: Value, wrap: fn(Value) -> Value| {
            (0..levels).fold(leaf, |inner, _| wrap(inner))
        };
        let array = |inner: Value| Value::Array(vec![inner]);
        let object = |inner: Value| serde_json::json!({ "a": inner });
        for mode in [PartialMode::On, PartialMode::TrailingStrings] {
            let parse = |text: &str| parse_partial_with(text, mode);
            assert_eq!(
                parse(&"[".repeat(201)),
                Some(nested(200, Value::Array(vec![]), array))
            );
            assert_eq!(parse(&"[".repeat(202)), None);
            assert_eq!(
                parse(&format!("{}1", "[".repeat(200))),
                Some(nested(200, 1.into(), array))
            );
            assert_eq!(parse(&format!("{}1", "[".repeat(201))), None);
            assert_eq!(
                parse(&r#"{"a":"#.repeat(201)),
                Some(nested(200, serde_json::json!({}), object))
            );
            assert_eq!(parse(&r#"{"a":"#.repeat(202)), None);
            // Python keeps a 4300-digit integer exactly; it is beyond f64, so it is `null` here.
            assert_eq!(parse(&"1".repeat(4300)), Some(Value::Null));
            assert_eq!(parse(&"1".repeat(4301)), None);
            assert_eq!(
                parse(&format!("[-{}.5", "1".repeat(4300))),
                Some(serde_json::json!([null]))
            );
            assert_eq!(parse(&format!("[{}", "1".repeat(4301))), None);
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{0,8}",
            "\\PC{0,8}",
            "[\"\\\\/\u{0}-\u{1f}\u{7f}é😀\u{2028}]{0,6}",
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((text(), inner), 0..5)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn complete_text_parses_to_the_value(value in json_value()) {
            for text in [
                serde_json::to_string(&value).expect("serializes"),
                serde_json::to_string_pretty(&value).expect("serializes"),
            ] {
                prop_assert_eq!(parse_partial(&text), Some(value.clone()));
                prop_assert_eq!(parse_partial_with(&text, PartialMode::TrailingStrings), Some(value.clone()));
            }
        }

        /// No prefix panics, and every non-empty prefix of an object is an object, as the SDK
        /// relies on for tool input.
        #[test]
        fn every_prefix_of_an_object_is_an_object(
            members in prop::collection::vec((text(), json_value()), 0..4),
            pretty in any::<bool>(),
        ) {
            let value = Value::Object(members.into_iter().collect());
            let text = if pretty {
                serde_json::to_string_pretty(&value)
            } else {
                serde_json::to_string(&value)
            }
            .expect("serializes");
            for (cut, _) in text.char_indices().skip(1).chain([(text.len(), ' ')]) {
                for mode in [PartialMode::On, PartialMode::TrailingStrings] {
                    let parsed = parse_partial_with(&text[..cut], mode);
                    prop_assert!(matches!(parsed, Some(Value::Object(_))), "{:?} gave {:?}", &text[..cut], parsed);
                }
            }
            prop_assert_eq!(parse_partial(&text), Some(value));
        }

        #[test]
        fn arbitrary_text_never_panics(
            text in prop_oneof![
                "\\PC{0,40}",
                "[\\[\\]{}\",:\\\\ \n0-9.eE+\\-tfrueNaIy]{0,40}",
                "[\\[{\"\\\\u0-9a-fA-F]{0,24}",
            ]
        ) {
            let _ = parse_partial(&text);
            let _ = parse_partial_with(&text, PartialMode::TrailingStrings);
        }
    }
}
