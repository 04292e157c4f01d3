//! Reading the command line's input files, never more than the input limit.
//!
//! Every file a command reads (and stdin, `-`) is read through here, cut at the limit
//! (`--max-input-bytes`, default [`DEFAULT_MAX_INPUT_BYTES`]): an input that never ends
//! (`/dev/zero`, an endless pipe) or a file larger than the limit is refused with one line that
//! names the limit and the flag, and the command exits with code 2. Formats that can be read
//! as they come (SSE) are streamed through [`open_input`] instead of held whole. What goes
//! wrong is an [`InputError`], whose text is the one line the command prints.

use std::io::Read;

/// The default input limit: 48 MiB. `inspect` holds about 24 times a transcript of small
/// records in memory (a 76 MB transcript of 300 000 records peaked at 1.8 GB RSS), and up to
/// 33 times one of the smallest records: at this limit the worst stays under 2 GB. A larger
/// input needs `--max-input-bytes`.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 48 * 1024 * 1024;

/// The most a command reads of one input (`--max-input-bytes`): passed to every reader, never
/// held by the process, so two callers of the library in one process can hold different
/// limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimit(u64);

impl InputLimit {
    /// A limit of `bytes` bytes.
    pub const fn new(bytes: u64) -> InputLimit {
        InputLimit(bytes)
    }

    /// The limit in bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl Default for InputLimit {
    /// [`DEFAULT_MAX_INPUT_BYTES`].
    fn default() -> Self {
        InputLimit(DEFAULT_MAX_INPUT_BYTES)
    }
}

/// Why an input cannot be read as a command reads it. The text is the one line the command
/// prints (it starts with `threadline: ` and names the input); the command exits with code 2.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The file cannot be opened or read.
    #[error("threadline: cannot read {name}: {source}")]
    Read {
        /// The input as the line names it: the path, or `stdin`.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// The input is larger than the limit (`--max-input-bytes`), or never ends.
    #[error(
        "threadline: {path}: the input is larger than the limit of {limit} bytes (raise it with --max-input-bytes)"
    )]
    TooLarge {
        /// The input.
        path: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The input is not UTF-8 text.
    #[error("threadline: {path}: not UTF-8 text")]
    NotUtf8 {
        /// The input (or the flag and the file, `--summary FILE`).
        path: String,
    },
    /// A transcript gave no user or assistant message ([`crate::session::no_messages`]).
    #[error("threadline: {path}: {what}{}", first_problem(first.as_deref(), *problems))]
    NoMessages {
        /// The transcript.
        path: String,
        /// What was found instead.
        what: String,
        /// The first problem the reader reported (a printable line), if any.
        first: Option<String>,
        /// How many problems it reported.
        problems: usize,
    },
}

/// `; PROBLEM` (or `; the first of N problems: PROBLEM`) when the reader reported any.
fn first_problem(first: Option<&str>, problems: usize) -> String {
    match (first, problems) {
        (None, _) => String::new(),
        (Some(only), 0 | 1) => format!("; {only}"),
        (Some(first), n) => format!("; the first of {n} problems: {first}"),
    }
}

/// The error saying that `path` is over `limit`.
pub fn too_large(path: &str, limit: InputLimit) -> InputError {
    InputError::TooLarge {
        path: path.to_owned(),
        limit: limit.bytes(),
    }
}

/// An input being read: at most one byte more than the limit comes out of it, so a reader can
/// tell "exactly the limit" from "over it" ([`BoundedInput::over_limit`]).
pub struct BoundedInput {
    inner: std::io::Take<Box<dyn Read>>,
    read: u64,
    limit: InputLimit,
}

impl BoundedInput {
    /// Whether more than the limit was read.
    pub fn over_limit(&self) -> bool {
        self.read > self.limit.bytes()
    }

    /// The limit this input is read with.
    pub fn limit(&self) -> InputLimit {
        self.limit
    }
}

impl Read for BoundedInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Opens `path` (stdin for `-`) for reading, cut one byte after `limit`.
pub fn open_input(path: &str, limit: InputLimit) -> Result<BoundedInput, InputError> {
    let reader: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            std::fs::File::open(path).map_err(|source| InputError::Read {
                name: path.to_owned(),
                source,
            })?,
        )
    };
    Ok(BoundedInput {
        inner: reader.take(limit.bytes().saturating_add(1)),
        read: 0,
        limit,
    })
}

/// The bytes of `path`, or of stdin for `-`, at most `limit` (unreadable, or larger than the
/// limit, is the error).
pub fn read_input(path: &str, limit: InputLimit) -> Result<Vec<u8>, InputError> {
    let mut input = open_input(path, limit)?;
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Read {
            name: if path == "-" { "stdin" } else { path }.to_owned(),
            source,
        })?;
    if input.over_limit() {
        return Err(too_large(path, limit));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_file_is_one_line_with_the_io_error_as_its_source() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing.json");
        let path = missing.display().to_string();
        let error = read_input(&path, InputLimit::default()).expect_err("no such file");
        let io = std::fs::File::open(&missing).expect_err("no such file");
        assert_eq!(
            error.to_string(),
            format!("threadline: cannot read {path}: {io}")
        );
        let kind = error
            .source()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        assert_eq!(kind, Some(std::io::ErrorKind::NotFound));
    }

    #[test]
    fn a_transcript_without_messages_names_its_first_problem() {
        let none = crate::session::no_messages("t.jsonl", "no messages found", &[]);
        assert_eq!(none.to_string(), "threadline: t.jsonl: no messages found");
        let one =
            crate::session::no_messages("t.jsonl", "no messages found", &["line 1: x".into()]);
        assert_eq!(
            one.to_string(),
            "threadline: t.jsonl: no messages found; line 1: x"
        );
        let two = crate::session::no_messages(
            "t.jsonl",
            "no messages found",
            &["line 1: x".into(), "line 2: y".into()],
        );
        assert_eq!(
            two.to_string(),
            "threadline: t.jsonl: no messages found; the first of 2 problems: line 1: x"
        );
    }

    #[test]
    fn each_reader_holds_the_limit_it_is_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("ten.txt");
        std::fs::write(&file, b"0123456789").expect("written");
        let path = file.display().to_string();
        // Two limits in one process, read in turn and interleaved: neither leaks into the other.
        let small = InputLimit::new(9);
        let exact = InputLimit::new(10);
        let mut open_small = open_input(&path, small).expect("opens");
        assert_eq!(
            read_input(&path, exact).expect("at the limit"),
            b"0123456789"
        );
        let mut bytes = Vec::new();
        open_small.read_to_end(&mut bytes).expect("reads");
        assert!(open_small.over_limit());
        assert_eq!(open_small.limit(), small);
        let error = read_input(&path, small).expect_err("over the limit");
        assert_eq!(
            error.to_string(),
            format!(
                "threadline: {path}: the input is larger than the limit of 9 bytes (raise it with --max-input-bytes)"
            )
        );
        assert_eq!(InputLimit::default().bytes(), DEFAULT_MAX_INPUT_BYTES);
    }
}
