//! Redaction of secrets from text that leaves the process: error messages, log lines,
//! transcript lines.
//!
//! Two mechanisms, one trait ([`Redact`]):
//!
//! - **Key shapes** ([`KeyShapes`], [`redact_key_shapes`]): anything shaped like an Anthropic
//!   key — `sk-ant-` followed by at least [`MIN_KEY_TAIL`] characters of `[A-Za-z0-9_-]` —
//!   becomes [`REDACTED_KEY`] (`sk-ant-…[redacted]`). No key needs to be known, so this is the
//!   last line of defence: every [`ServiceError`](crate::service::ServiceError) text passes
//!   through it, and so does every line `threadline-message`'s transcript writer writes.
//! - **An exact secret** ([`redact_exact`]): the one credential a client holds, whatever its
//!   shape (a proxy's token), replaced by [`REDACTED`] wherever it occurs. The HTTP client
//!   implements [`Redact`] with its own key (in any percent-encoding) on top of the key
//!   shapes and passes every error it builds through it.
//!
//! Both are a `memmem` scan when there is nothing to redact, and return the input borrowed.
//! The replacement texts contain no character JSON escapes and the key characters are never
//! escaped by a JSON serializer, so redacting a line of JSON leaves valid JSON (a string stays
//! a string). Redaction is idempotent: a redacted text redacts to itself.
//!
//! ```
//! use threadline_wire::secret::redact_key_shapes;
//!
//! let text = "invalid x-api-key: sk-ant-api03-AbC_dEf-0123456789";
//! assert_eq!(redact_key_shapes(text), "invalid x-api-key: sk-ant-…[redacted]");
//! // Too short to be a key: left alone.
//! assert_eq!(redact_key_shapes("see sk-ant-abc"), "see sk-ant-abc");
//! ```

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

/// What an exact secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The prefix of an Anthropic API key.
pub const KEY_PREFIX: &str = "sk-ant-";

/// The fewest key characters after [`KEY_PREFIX`] for a text to count as a key.
pub const MIN_KEY_TAIL: usize = 8;

/// What a key-shaped secret is replaced with (the prefix is kept, so a reader sees that a key
/// was there).
pub const REDACTED_KEY: &str = "sk-ant-…[redacted]";

/// The shortest exact secret [`redact_exact`] replaces: a shorter one would match ordinary
/// words (and the replacement text itself). Real keys are about a hundred characters.
pub const MIN_EXACT_SECRET: usize = 8;

static KEY_PREFIX_FINDER: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(KEY_PREFIX.as_bytes()));

/// A way of removing secrets from a text.
pub trait Redact {
    /// `text` without its secrets; borrowed when there were none.
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str>;
}

/// The key-shape redactor ([`redact_key_shapes`]) as a [`Redact`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyShapes;

impl Redact for KeyShapes {
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        redact_key_shapes(text)
    }
}

fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

/// The byte ranges of the key-shaped secrets in `bytes`, in order, not overlapping.
fn key_spans(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let start = at + KEY_PREFIX_FINDER.find(&bytes[at..])?;
            let tail_start = start + KEY_PREFIX.len();
            let tail = bytes[tail_start..]
                .iter()
                .take_while(|b| is_key_byte(**b))
                .count();
            at = tail_start + tail;
            if tail >= MIN_KEY_TAIL {
                return Some((start, at));
            }
        }
        None
    })
}

/// Whether `text` holds a key-shaped secret.
pub fn contains_key_shape(text: &str) -> bool {
    key_spans(text.as_bytes()).next().is_some()
}

/// `bytes` with every key-shaped secret replaced by [`REDACTED_KEY`]; borrowed when there was
/// none. Valid UTF-8 stays valid UTF-8 (the replaced ranges are ASCII).
pub fn redact_key_shapes_in_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    let mut spans = key_spans(bytes).peekable();
    if spans.peek().is_none() {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut copied = 0;
    for (start, end) in spans {
        out.extend_from_slice(&bytes[copied..start]);
        out.extend_from_slice(REDACTED_KEY.as_bytes());
        copied = end;
    }
    out.extend_from_slice(&bytes[copied..]);
    Cow::Owned(out)
}

/// `text` with every key-shaped secret (`sk-ant-` and at least [`MIN_KEY_TAIL`] characters of
/// `[A-Za-z0-9_-]`) replaced by [`REDACTED_KEY`]; borrowed when there was none.
pub fn redact_key_shapes(text: &str) -> Cow<'_, str> {
    let mut spans = key_spans(text.as_bytes()).peekable();
    if spans.peek().is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end) in spans {
        // The spans start and end at ASCII bytes: character boundaries.
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED_KEY);
        copied = end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// `text` with every occurrence of `secret` replaced by [`REDACTED`]; borrowed when there was
/// none, or when `secret` is shorter than [`MIN_EXACT_SECRET`] bytes.
pub fn redact_exact<'t>(text: &'t str, secret: &[u8]) -> Cow<'t, str> {
    if secret.len() < MIN_EXACT_SECRET {
        return Cow::Borrowed(text);
    }
    let finder = Finder::new(secret);
    let bytes = text.as_bytes();
    let mut found = finder.find_iter(bytes).peekable();
    if found.peek().is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut copied = 0;
    for start in found {
        if start < copied {
            continue; // overlaps the previous occurrence, already replaced
        }
        out.extend_from_slice(&bytes[copied..start]);
        out.extend_from_slice(REDACTED.as_bytes());
        copied = start + secret.len();
    }
    out.extend_from_slice(&bytes[copied..]);
    // A secret that is not UTF-8 on its own may cut a character: then the text is kept
    // printable (lossy) rather than refused.
    match String::from_utf8(out) {
        Ok(text) => Cow::Owned(text),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// The mode of a file that may hold what a session said (a transcript, a log, a mock's
/// request log), created on unix: read and write for its owner only.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Options that create a file with [`PRIVATE_FILE_MODE`] on unix (an existing file keeps its
/// mode); the caller adds how it opens it (`append`, `truncate`, …). The one place every
/// writer of session data gets its mode from.
pub fn private_file_options() -> std::fs::OpenOptions {
    #[allow(unused_mut)] // not mutated off unix
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
    options
}

/// Creates `dir` and its missing parents with mode `0700` on unix (only the owner may list
/// or enter them); directories that exist keep their mode. Where session files are kept.
pub fn create_private_dir_all(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The percent-encoded form of `secret` (every byte outside `A-Za-z0-9-._~` as `%XX`), if it
/// differs from `secret`: the form a server echoing a query string or a form body shows.
pub fn percent_encoded(secret: &[u8]) -> Option<String> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    if secret.iter().all(|b| unreserved(*b)) {
        return None;
    }
    let mut out = String::with_capacity(secret.len() * 3);
    for &b in secret {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xF)]));
        }
    }
    Some(out)
}

/// An error whose texts were redacted: the `Display` and `Debug` of an error chain, kept as
/// text with its structure (one node per error of the chain).
pub(crate) struct RedactedError {
    display: String,
    debug: String,
    source: Option<Box<RedactedError>>,
}

impl std::fmt::Display for RedactedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

impl std::fmt::Debug for RedactedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.debug)
    }
}

impl std::error::Error for RedactedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// The longest error chain rebuilt by [`redact_error_chain`]; deeper causes are dropped.
const MAX_CHAIN: usize = 32;

/// `error` itself when no text of its chain (`Display` or `Debug` of any cause) holds a
/// secret; otherwise a [`RedactedError`] chain with the redacted texts (downcasting to the
/// original types is then no longer possible, which is the price of not leaking).
pub(crate) fn redact_error_chain(
    error: Box<dyn std::error::Error + Send + Sync>,
    redact: &dyn Redact,
) -> Box<dyn std::error::Error + Send + Sync> {
    let mut nodes = Vec::new();
    let mut changed = false;
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(&*error);
    while let Some(e) = current {
        if nodes.len() == MAX_CHAIN {
            changed = true;
            break;
        }
        let display = e.to_string();
        let debug = format!("{e:?}");
        let redacted_display = redact.redact(&display).into_owned();
        let redacted_debug = redact.redact(&debug).into_owned();
        changed |= redacted_display != display || redacted_debug != debug;
        nodes.push((redacted_display, redacted_debug));
        current = e.source();
    }
    if !changed {
        return error;
    }
    let mut chain: Option<Box<RedactedError>> = None;
    for (display, debug) in nodes.into_iter().rev() {
        chain = Some(Box::new(RedactedError {
            display,
            debug,
            source: chain,
        }));
    }
    match chain {
        Some(chain) => chain,
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_shapes_are_replaced_wherever_they_stand() {
        let cases = [
            ("sk-ant-api03-0123456789", "sk-ant-…[redacted]"),
            ("a sk-ant-12345678 b", "a sk-ant-…[redacted] b"),
            ("xsk-ant-12345678.", "xsk-ant-…[redacted]."),
            (
                "sk-ant-sk-ant-12345678 and sk-ant-abcdefgh",
                "sk-ant-…[redacted] and sk-ant-…[redacted]",
            ),
            ("sk-ant-1234567", "sk-ant-1234567"),
            ("sk-ant-", "sk-ant-"),
            ("sk-ant-é12345678", "sk-ant-é12345678"),
            ("", ""),
            ("no key here", "no key here"),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_key_shapes(input), expected, "{input}");
            assert_eq!(
                redact_key_shapes_in_bytes(input.as_bytes()).as_ref(),
                expected.as_bytes(),
                "{input}"
            );
            // Idempotent.
            assert_eq!(redact_key_shapes(expected), expected);
        }
        assert!(matches!(redact_key_shapes("plain"), Cow::Borrowed(_)));
        assert!(contains_key_shape("x sk-ant-api03-abcdefgh"));
        assert!(!contains_key_shape("x sk-ant-…[redacted]"));
    }

    #[test]
    fn json_stays_json() {
        let line =
            serde_json::json!({"sk-ant-api03-keyname": ["sk-ant-api03-0123456789", 1]}).to_string();
        let redacted = redact_key_shapes(&line);
        let value: serde_json::Value = serde_json::from_str(&redacted).expect("still JSON");
        assert_eq!(
            value,
            serde_json::json!({"sk-ant-…[redacted]": ["sk-ant-…[redacted]", 1]})
        );
    }

    #[test]
    fn exact_secrets_are_replaced_and_short_ones_ignored() {
        let key = b"proxy-token-0123456789";
        assert_eq!(
            redact_exact("a proxy-token-0123456789 b proxy-token-0123456789", key),
            "a [redacted] b [redacted]"
        );
        assert_eq!(redact_exact("aaaa", b"aaaa"), "aaaa");
        assert_eq!(
            redact_exact("aaaaaaaaaaaaaaaa", b"aaaaaaaa"),
            "[redacted][redacted]"
        );
        assert!(matches!(redact_exact("nothing", key), Cow::Borrowed(_)));
        assert_eq!(percent_encoded(b"abc-_.~09"), None);
        assert_eq!(percent_encoded(b"a/b+c=").as_deref(), Some("a%2Fb%2Bc%3D"));
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer: {0}")]
    struct Outer(String, #[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner sk-ant-api03-0123456789")]
    struct Inner;

    #[test]
    fn an_error_chain_holding_a_key_is_rebuilt_redacted() {
        let error: Box<dyn std::error::Error + Send + Sync> = Box::new(Outer("x".into(), Inner));
        let redacted = redact_error_chain(error, &KeyShapes);
        assert_eq!(redacted.to_string(), "outer: x");
        let inner = redacted.source().expect("the chain is kept");
        assert_eq!(inner.to_string(), "inner sk-ant-…[redacted]");
        assert_eq!(format!("{inner:?}"), "Inner");

        let clean: Box<dyn std::error::Error + Send + Sync> = Box::new(std::fmt::Error);
        let kept = redact_error_chain(clean, &KeyShapes);
        assert!(kept.downcast_ref::<std::fmt::Error>().is_some());
    }
}
