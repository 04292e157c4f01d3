//! Model-written text made safe to show on a terminal: control characters (escape sequences
//! that move the cursor, clear lines or recolour) and invisible Unicode format characters
//! (bidirectional overrides, zero-width characters) are shown escaped, so what the user reads
//! is what the model wrote — in particular the command a permission question quotes.
//!
//! Text from a peer (the model, an API server's error, a transcript's ids, a file name in a
//! project directory) reaches a terminal only through [`terminal_safe`]: stdout's tables and
//! lines through the command that prints them, every line on stderr (warnings, problems, the
//! error `main` prints) through [`stderr_line`].

use std::borrow::Cow;

/// `text` with every control character escaped (`\u{1b}`), except newlines and tabs when
/// `keep_lines` (streamed prose), and every invisible format character escaped.
pub fn terminal_safe(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| shown_escaped(c, keep_lines);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `json`, serialized JSON, with every character [`terminal_safe`] escapes written as a JSON
/// escape (`\u202e`): the same JSON value, safe on a terminal. The serializer escapes the C0
/// controls already; this adds DEL, the C1 controls (CSI, U+009B) and the invisible format
/// characters (a right-to-left override), which it writes raw. Outside its strings JSON is
/// ASCII, so only string contents change.
pub fn terminal_safe_json(json: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| shown_escaped(c, true);
    if !json.chars().any(unsafe_char) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if unsafe_char(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is shown escaped: a control character (but newlines and tabs when
/// `keep_lines`) or an invisible format character.
fn shown_escaped(c: char, keep_lines: bool) -> bool {
    let kept = keep_lines && (c == '\n' || c == '\t');
    (c.is_control() && !kept) || is_invisible_format(c)
}

/// `line` written to stderr as one line, escaped ([`terminal_safe`], newlines too): the one
/// way the command line writes to stderr, so that a warning or an error quoting a peer's text
/// can neither drive the terminal nor print a line of its own.
pub fn stderr_line(line: &str) {
    // The choke point itself: the only line-writing macro on stderr (`clippy.toml`).
    #[allow(clippy::disallowed_macros)]
    {
        eprintln!("{}", terminal_safe(line, false));
    }
}

/// [`stderr_line`] with `format!` arguments: `stderr_line!("threadline: {path}: {problem}")`.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::terminal_text::stderr_line(&::std::format!($($arg)*))
    };
}

/// The Unicode format characters (category Cf) that change how surrounding text is shown
/// without being visible: soft hyphen, Arabic and Mongolian marks, zero-width characters,
/// bidirectional embeddings, overrides and isolates, invisible operators, the byte order mark
/// and interlinear annotations.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(
            terminal_safe("ls -la ✓\nnext\tline", true),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn escapes_and_invisible_characters_are_shown() {
        assert_eq!(
            terminal_safe("rm \u{1b}[2K\r-rf", true),
            "rm \\u{1b}[2K\\u{d}-rf"
        );
        assert_eq!(terminal_safe("a\nb", false), "a\\u{a}b");
        // A right-to-left override that would show `rm -rf /` as something else.
        assert_eq!(
            terminal_safe("echo \u{202E}fr- mr", false),
            "echo \\u{202e}fr- mr"
        );
        assert_eq!(
            terminal_safe("a\u{200B}b\u{FEFF}", false),
            "a\\u{200b}b\\u{feff}"
        );
    }

    #[test]
    fn json_keeps_its_value_and_loses_what_the_serializer_leaves_raw() {
        let text = "\u{1b}]0;PWNED\u{7}\u{202e}\u{9b}2K\u{7f}\u{200b}\nok ✓";
        let json =
            serde_json::to_string_pretty(&serde_json::json!({ "text": text })).expect("serialized");
        assert!(
            json.contains('\u{202e}') && json.contains('\u{9b}'),
            "{json}"
        );
        let safe = terminal_safe_json(&json);
        assert!(!safe.chars().any(|c| shown_escaped(c, true)), "{safe}");
        assert!(
            safe.contains("\\u202e") && safe.contains("\\u009b"),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back["text"], text);
        assert!(matches!(
            terminal_safe_json("{\"a\": \"ok ✓\"}\n"),
            Cow::Borrowed(_)
        ));
    }
}
