//! Transcripts: the internal message array persisted as JSONL, one [`Message`] per line.
//!
//! The file is append-only. [`TranscriptWriter::append`] serializes a message into a buffer and
//! hands the whole line, newline included, to one `write_all`, then flushes: a crash can cut
//! the last line short, but never leaves half a line in the middle of the file.
//! [`read_transcript`] recovers from what a crash or a stray edit leaves behind:
//!
//! * a last line without its newline that does not parse was cut by a crash: it is dropped
//!   and reported as [`LineProblemKind::CutLastLine`];
//! * any other line that does not parse (or is longer than [`ReadOptions::max_line_bytes`])
//!   is skipped and reported as [`LineProblemKind::Malformed`], and the lines around it are
//!   read as usual;
//! * blank lines, a `\r` before the newline and a UTF-8 byte-order mark are accepted silently;
//! * a line marked as a rewrite (a message a context step changed in place, recorded as it
//!   now is, with its position in [`REWRITTEN_AT`]) replaces the message it rewrote; an
//!   unmarked line whose id was read before (a compaction's copy) is a message of its own
//!   ([`crate::rewrites`]).
//!
//! What the writer writes is guarded: every line passes through the key-shape redactor
//! ([`threadline_wire::secret::redact_key_shapes_in_bytes`]), so anything shaped like an
//! Anthropic key (`sk-ant-` and at least eight key characters) is written as
//! `sk-ant-…[redacted]` — whatever carried it (a model's text, a tool's output, an error a
//! server echoed). The line stays valid JSON. This is the last line of defence; the client
//! already removes its own key from the errors it builds. A new transcript is created with
//! mode `0600` on unix (only its owner may read it); an existing file keeps its mode.
//!
//! ```
//! use threadline_message::transcript::{TranscriptWriter, read_transcript, LineProblemKind};
//! use threadline_message::Message;
//!
//! let path = std::env::temp_dir().join(format!("threadline-doc-{}.jsonl", std::process::id()));
//! # let _ = std::fs::remove_file(&path);
//! let mut writer = TranscriptWriter::open(&path)?;
//! writer.append(&Message::user_text("List the files"))?;
//! writer.append(&Message::meta_user_text("<system-reminder>cwd: /src</system-reminder>"))?;
//! drop(writer);
//!
//! // A crash in the middle of the next append leaves a cut line behind.
//! let mut bytes = std::fs::read(&path)?;
//! bytes.extend_from_slice(br#"{"type":"user","id":"7f3c","timest"#);
//! std::fs::write(&path, &bytes)?;
//!
//! let read = read_transcript(&path)?;
//! assert_eq!(read.messages.len(), 2);
//! assert_eq!(read.problems.len(), 1);
//! assert_eq!(read.problems[0].line, 3);
//! assert_eq!(read.problems[0].kind, LineProblemKind::CutLastLine);
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use threadline_store::jsonl_file;
pub use threadline_store::jsonl_file::Tail;
use threadline_wire::secret::redact_key_shapes_in_bytes;

use crate::header::MessageId;
use crate::message::Message;
use crate::rewrites::{REWRITTEN_AT, Record, fold_rewrites, mark_rewrite};

/// The default longest line a reader accepts (256 MiB). A longer line is reported as
/// malformed instead of being held in memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// An error that stops reading or writing a transcript. Problems with single lines are not
/// errors: they are reported in [`TranscriptRead::problems`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// The file could not be opened or created.
    #[error("cannot open transcript {}: {source}", path.display())]
    Open {
        /// The transcript's path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file could not be read.
    #[error("cannot read transcript {}: {source}", path.display())]
    Read {
        /// The transcript's path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A line could not be written (the file was rolled back to its last whole line when
    /// possible).
    #[error("cannot append to transcript {}: {source}", path.display())]
    Write {
        /// The transcript's path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A message could not be serialized (nothing was written).
    #[error("cannot serialize message {id}: {source}")]
    Serialize {
        /// The message's id.
        id: MessageId,
        /// The cause.
        source: serde_json::Error,
    },
}

impl TranscriptError {
    /// The transcript could not be created because the path exists
    /// ([`TranscriptWriter::create_new`]).
    pub fn is_already_exists(&self) -> bool {
        matches!(self, TranscriptError::Open { source, .. } if source.kind() == io::ErrorKind::AlreadyExists)
    }
}

/// Knobs of [`TranscriptWriter`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterOptions {
    /// Call `sync_data` after every line, so that an appended line survives a power loss and
    /// not only a crash of the process. Off by default: it costs a disk round trip per line.
    pub sync_data: bool,
    /// Fields added to every line, after the message's own (a subagent's transcript is
    /// marked `"isSidechain": true, "agentId": …`, as Claude Code marks its subagents'
    /// records; a reader ignores them). A mark named
    /// [`REWRITTEN_AT`] is not written: that field marks
    /// rewrites.
    pub marks: Vec<(String, serde_json::Value)>,
}

impl WriterOptions {
    /// These options with `key: value` added to every line (see [`WriterOptions::marks`]).
    pub fn with_mark(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.marks.push((key.into(), value));
        self
    }

    /// These options with `sync_data` set.
    pub fn with_sync_data(mut self, sync_data: bool) -> Self {
        self.sync_data = sync_data;
        self
    }
}

/// The mode a new transcript is created with on unix: read and write for its owner only.
pub const TRANSCRIPT_MODE: u32 = threadline_wire::secret::PRIVATE_FILE_MODE;

/// Appends messages to a JSONL transcript, one whole line per message, with key-shaped
/// secrets redacted (see the [module docs](self)). The file is written through
/// [`threadline_store::jsonl_file`], the one writer of threadline's JSONL files, under its
/// rules (private creation, whole lines, the end of a file settled the same way).
///
/// One writer per file: the writer assumes nobody else appends while it is open (it cuts a
/// failed write back to the length it last wrote).
#[derive(Debug)]
pub struct TranscriptWriter {
    file: File,
    path: PathBuf,
    options: WriterOptions,
    /// The file's length after the last whole line.
    len: u64,
    /// What opening found after the file's last newline.
    tail: Tail,
    buffer: Vec<u8>,
}

impl TranscriptWriter {
    /// Opens `path` for appending, creating it if needed, with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TranscriptError> {
        Self::open_with(path, WriterOptions::default())
    }

    /// Opens `path` for appending, creating it if needed (with mode [`TRANSCRIPT_MODE`] on
    /// unix; an existing file keeps its mode).
    ///
    /// If the file does not end with a newline, its last line is settled first: a complete
    /// JSON value is kept and terminated; anything else is the remains of a write cut by a
    /// crash and is cut off (a reader drops it too, as [`LineProblemKind::CutLastLine`]), so
    /// it never swallows the next message. [`tail_found`](Self::tail_found) says which.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: WriterOptions,
    ) -> Result<Self, TranscriptError> {
        Self::open_inner(path.as_ref(), options, false)
    }

    /// Creates a new transcript at `path` (mode [`TRANSCRIPT_MODE`] on unix), refusing a
    /// path that exists: the error is then [`TranscriptError::Open`] with an
    /// [`io::ErrorKind::AlreadyExists`] cause (see [`TranscriptError::is_already_exists`]).
    /// For writing a whole new session (a fork, a rewind, an import) without ever
    /// overwriting or extending another one.
    pub fn create_new(
        path: impl AsRef<Path>,
        options: WriterOptions,
    ) -> Result<Self, TranscriptError> {
        Self::open_inner(path.as_ref(), options, true)
    }

    fn open_inner(
        path: &Path,
        options: WriterOptions,
        create_new: bool,
    ) -> Result<Self, TranscriptError> {
        let path = path.to_path_buf();
        let open_error = |source| TranscriptError::Open {
            path: path.clone(),
            source,
        };
        let file = jsonl_file::open(&path, create_new).map_err(open_error)?;
        let len = file.metadata().map_err(open_error)?.len();
        let tail = jsonl_file::tail(&file, len).map_err(open_error)?;
        let len =
            jsonl_file::settle(&file, len, tail).map_err(|source| TranscriptError::Write {
                path: path.clone(),
                source,
            })?;
        Ok(TranscriptWriter {
            file,
            path,
            options,
            len,
            tail,
            buffer: Vec::new(),
        })
    }

    /// Appends `message` as one line: serialized to a buffer first, key-shaped secrets
    /// redacted, then written with a single `write_all`, flushed, and synced if
    /// [`WriterOptions::sync_data`] is set.
    pub fn append(&mut self, message: &Message) -> Result<(), TranscriptError> {
        self.append_line(message, None)
    }

    /// Appends `message`, changed in place after it was appended, again: as
    /// [`append`](Self::append) does, marked as the rewrite of the message at `at` in the
    /// history ([`REWRITTEN_AT`]). The reader puts it in that message's place
    /// ([`fold_rewrites`]).
    pub fn append_rewrite(&mut self, message: &Message, at: usize) -> Result<(), TranscriptError> {
        self.append_line(message, Some(at))
    }

    fn append_line(
        &mut self,
        message: &Message,
        rewrite: Option<usize>,
    ) -> Result<(), TranscriptError> {
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.clear();
        let serialized = serde_json::to_writer(&mut buffer, message);
        let result = match serialized {
            Ok(()) => {
                self.add_marks(&mut buffer);
                if let Some(at) = rewrite {
                    mark_rewrite(&mut buffer, at);
                }
                buffer.push(b'\n');
                if let Cow::Owned(redacted) = redact_key_shapes_in_bytes(&buffer) {
                    buffer = redacted;
                }
                self.write_line(&buffer)
            }
            Err(source) => Err(TranscriptError::Serialize {
                id: message.id().clone(),
                source,
            }),
        };
        self.buffer = buffer;
        result
    }

    /// Appends every message of `messages`, in order, stopping at the first error.
    pub fn append_all<'a>(
        &mut self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Result<(), TranscriptError> {
        messages
            .into_iter()
            .try_for_each(|message| self.append(message))
    }

    /// Adds the [`WriterOptions::marks`] inside the object just serialized (it ends with `}`).
    fn add_marks(&self, buffer: &mut Vec<u8>) {
        for (key, value) in &self.options.marks {
            // Reserved: a mark of this name would make every line read as a rewrite.
            if key == REWRITTEN_AT {
                continue;
            }
            // A string and a JSON value always serialize.
            let _ = crate::json_line::add_field(buffer, key, value);
        }
    }

    /// The transcript's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What opening found after the file's last newline: nothing, a complete line it
    /// terminated, or the remains of a cut write it cut off.
    pub fn tail_found(&self) -> Tail {
        self.tail
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), TranscriptError> {
        match jsonl_file::append_lines(&self.file, self.len, line, self.options.sync_data) {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(source) => Err(TranscriptError::Write {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

/// What [`read_transcript`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscriptRead {
    /// The messages of every line that parsed, in file order; a line marked as a rewrite (a
    /// message a context step changed in place, recorded again) stands in the place of the
    /// message it rewrote ([`fold_rewrites`]).
    pub messages: Vec<Message>,
    /// The lines that did not, in file order.
    pub problems: Vec<LineProblem>,
}

/// A line that was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProblem {
    /// The line's number in the file (1-based; blank lines count).
    pub line: usize,
    /// What was wrong with it.
    pub kind: LineProblemKind,
}

/// What was wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineProblemKind {
    /// The last line has no newline and does not parse: a crash cut it while it was written.
    /// It was dropped.
    CutLastLine,
    /// The line is not valid JSON, not a record this reader understands, or longer than the
    /// limit. It was skipped; the lines around it were read.
    Malformed {
        /// Why it did not parse.
        error: String,
    },
    /// (Imports only.) A record of a known type whose shape was not understood; it was kept
    /// verbatim among the opaque records instead.
    Unmapped {
        /// The record's `type`.
        record_type: String,
        /// What was missing or wrong.
        error: String,
    },
    /// (Imports only.) The record names a parent that is not in the file (its line was lost);
    /// the chain was continued from the latest earlier record that nothing follows.
    BrokenChain {
        /// The `parentUuid` that was not found.
        missing_parent: String,
    },
    /// (Imports only.) A record without a parent after the conversation had started (its
    /// link was lost): the chain was continued from the record before it in the file instead
    /// of ending there.
    UnlinkedRecord,
    /// (Imports only.) A content block of a known type that did not parse; the message was
    /// imported with the block kept verbatim as an unknown block.
    BadBlock {
        /// The block's position in the message's content (0-based).
        index: usize,
        /// Why it did not parse.
        error: String,
    },
    /// (Imports only.) The record is its own ancestor: following `parentUuid` from it comes
    /// back to it (or it names itself as its parent).
    ParentCycle {
        /// The record's `uuid`.
        uuid: String,
        /// It names itself as its parent.
        self_parented: bool,
        /// It was left out: no record outside the cycle leads to it, so it is on no chain
        /// (and counted in `skipped_off_chain`). Otherwise the main chain ran into the cycle
        /// and stopped there, the cycle's records imported.
        dropped: bool,
    },
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: ", self.line)?;
        match &self.kind {
            LineProblemKind::CutLastLine => {
                f.write_str("cut off (last line without a newline, incomplete); dropped")
            }
            LineProblemKind::Malformed { error } => write!(f, "malformed, skipped: {error}"),
            LineProblemKind::Unmapped { record_type, error } => {
                write!(f, "`{record_type}` record kept opaque: {error}")
            }
            LineProblemKind::BrokenChain { missing_parent } => write!(
                f,
                "parent {missing_parent} is not in the file; the chain continues from the record before"
            ),
            LineProblemKind::UnlinkedRecord => f.write_str(
                "no parent although the conversation had started; the chain continues from the record before",
            ),
            LineProblemKind::BadBlock { index, error } => {
                write!(f, "content block {index} kept as unknown: {error}")
            }
            LineProblemKind::ParentCycle {
                uuid,
                self_parented,
                dropped,
            } => {
                if *self_parented {
                    write!(f, "record {uuid} names itself as its parent")?;
                } else {
                    write!(f, "record {uuid} is on a parentUuid cycle")?;
                }
                if *dropped {
                    f.write_str("; dropped")
                } else {
                    f.write_str("; the chain stops there")
                }
            }
        }
    }
}

/// Knobs of the transcript readers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// The longest line accepted, in bytes (newline excluded); longer lines are reported as
    /// malformed without being held in memory. Default [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

impl ReadOptions {
    /// These options with the given line limit.
    pub fn with_max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes;
        self
    }
}

/// Reads the transcript at `path` with default options.
pub fn read_transcript(path: impl AsRef<Path>) -> Result<TranscriptRead, TranscriptError> {
    read_transcript_with(path, &ReadOptions::default())
}

/// Reads the transcript at `path`, streaming it line by line.
pub fn read_transcript_with(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<TranscriptRead, TranscriptError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| TranscriptError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = Reader::default();
    for_each_line(BufReader::new(file), options.max_line_bytes, |line| {
        reader.push(line, options.max_line_bytes);
    })
    .map_err(|source| TranscriptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(reader.finish())
}

/// The format of a session transcript: ours or Claude Code's.
///
/// It serializes, and displays, as its [`name`](Format::name): `threadline` or
/// `claude-code`.
///
/// ```
/// use threadline_message::transcript::Format;
///
/// let ours = r#"{"type":"user","id":"7f3c","timestamp":"2026-01-01T00:00:00Z","content":"hi"}"#;
/// assert_eq!(Format::detect(ours), Format::Threadline);
/// let theirs = r#"{"type":"user","uuid":"a1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}"#;
/// assert_eq!(Format::detect(theirs), Format::ClaudeCode);
/// assert_eq!(Format::ClaudeCode.to_string(), "claude-code");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// threadline's JSONL: one [`Message`] per line ([`parse_transcript`]).
    Threadline,
    /// A Claude Code session file ([`import_claude_code`](crate::claude_code::import_claude_code)).
    ClaudeCode,
}

impl Format {
    /// The format of `text`: [`ClaudeCode`](Format::ClaudeCode) when the first record that
    /// decides is Claude Code's (a `uuid`, `parentUuid`, `sessionId` or `leafUuid` field, or a
    /// type only Claude Code writes), [`Threadline`](Format::Threadline) otherwise — our lines
    /// (`type` and `id` without a `message` object, a session store's `uuid` or not) and a
    /// text where nothing decides alike. Lines that are not JSON
    /// objects are passed over; the scan stops at the first deciding record.
    pub fn detect(text: &str) -> Format {
        if crate::claude_code::is_claude_code_transcript(text) {
            Format::ClaudeCode
        } else {
            Format::Threadline
        }
    }

    /// `threadline` or `claude-code`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Threadline => "threadline",
            Format::ClaudeCode => "claude-code",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a transcript held in memory, with the same rules as [`read_transcript`].
pub fn parse_transcript(text: &str) -> TranscriptRead {
    let options = ReadOptions::default();
    let mut reader = Reader::default();
    let result = for_each_line(text.as_bytes(), options.max_line_bytes, |line| {
        reader.push(line, options.max_line_bytes);
    });
    if let Err(error) = result {
        // Reading from a slice does not fail; should it ever, say so rather than panic.
        reader.problems.push(LineProblem {
            line: reader.problems.len() + reader.records.len() + 1,
            kind: LineProblemKind::Malformed {
                error: error.to_string(),
            },
        });
    }
    reader.finish()
}

/// The records and problems of the lines read so far.
#[derive(Default)]
struct Reader {
    records: Vec<Record>,
    problems: Vec<LineProblem>,
}

impl Reader {
    /// The messages, each rewrite in its place ([`fold_rewrites`]), and the problems.
    fn finish(self) -> TranscriptRead {
        TranscriptRead {
            messages: fold_rewrites(self.records),
            problems: self.problems,
        }
    }

    fn push(&mut self, line: RawLine<'_>, max_line_bytes: usize) {
        let number = line.number;
        let problem = |kind| LineProblem { line: number, kind };
        let bytes = match line.content {
            LineContent::TooLong(len) => {
                self.problems.push(problem(too_long(len, max_line_bytes)));
                return;
            }
            LineContent::Bytes(bytes) => bytes,
        };
        if is_blank(bytes) {
            return;
        }
        match Record::from_json(bytes) {
            Ok(record) => self.records.push(record),
            Err(_) if !line.terminated => self.problems.push(problem(LineProblemKind::CutLastLine)),
            Err(error) => self.problems.push(problem(LineProblemKind::Malformed {
                error: error.to_string(),
            })),
        }
    }
}

// --- line splitting, shared with the Claude Code import ------------------------------------

/// The content of one line.
pub(crate) enum LineContent<'a> {
    /// The line, without its newline, a `\r` before it or a leading byte-order mark.
    Bytes(&'a [u8]),
    /// The line was longer than the limit; this many bytes (newline excluded) were skipped.
    TooLong(usize),
}

/// One line of a JSONL file.
pub(crate) struct RawLine<'a> {
    /// 1-based.
    pub(crate) number: usize,
    pub(crate) content: LineContent<'a>,
    /// Whether a newline ended it (only the last line of a file may lack one).
    pub(crate) terminated: bool,
}

pub(crate) fn too_long(len: usize, max_line_bytes: usize) -> LineProblemKind {
    LineProblemKind::Malformed {
        error: format!("line is {len} bytes long, over the limit of {max_line_bytes} bytes"),
    }
}

pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Calls `on_line` for every line of `reader`, holding at most `max_line_bytes` of a line in
/// memory (a whole line that sits in the reader's buffer is passed without a copy).
pub(crate) fn for_each_line<R: BufRead>(
    mut reader: R,
    max_line_bytes: usize,
    mut on_line: impl FnMut(RawLine<'_>),
) -> io::Result<()> {
    let mut pending: Vec<u8> = Vec::new();
    // Some(total) once the current line has passed the limit: its bytes are counted, not kept.
    let mut overflow: Option<usize> = None;
    let mut number = 0usize;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if chunk.is_empty() {
            if !pending.is_empty() || overflow.is_some() {
                number += 1;
                on_line(raw_line(number, &pending, overflow, false));
            }
            return Ok(());
        }
        let newline = chunk.iter().position(|&b| b == b'\n');
        let (piece, used) = match newline {
            Some(at) => (&chunk[..at], at + 1),
            None => (chunk, chunk.len()),
        };
        if newline.is_some() && pending.is_empty() && overflow.is_none() {
            // The common case: the whole line is in the buffer.
            number += 1;
            let line = if piece.len() > max_line_bytes {
                raw_line(number, &[], Some(piece.len()), true)
            } else {
                raw_line(number, piece, None, true)
            };
            on_line(line);
            reader.consume(used);
            continue;
        }
        match overflow.as_mut() {
            Some(total) => *total += piece.len(),
            None if pending.len() + piece.len() > max_line_bytes => {
                overflow = Some(pending.len() + piece.len());
                pending = Vec::new();
            }
            None => pending.extend_from_slice(piece),
        }
        reader.consume(used);
        if newline.is_some() {
            number += 1;
            on_line(raw_line(number, &pending, overflow, true));
            pending.clear();
            overflow = None;
        }
    }
}

fn raw_line(number: usize, bytes: &[u8], overflow: Option<usize>, terminated: bool) -> RawLine<'_> {
    let content = match overflow {
        Some(len) => LineContent::TooLong(len),
        None => {
            let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            let bytes = if number == 1 {
                bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
            } else {
                bytes
            };
            LineContent::Bytes(bytes)
        }
    };
    RawLine {
        number,
        content,
        terminated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize, chunk: usize) -> Vec<(usize, Result<Vec<u8>, usize>, bool)> {
        let reader = BufReader::with_capacity(chunk, input);
        let mut out = Vec::new();
        for_each_line(reader, max, |line| {
            let content = match line.content {
                LineContent::Bytes(b) => Ok(b.to_vec()),
                LineContent::TooLong(n) => Err(n),
            };
            out.push((line.number, content, line.terminated));
        })
        .expect("reading a slice does not fail");
        out
    }

    #[test]
    fn splitting_does_not_depend_on_the_buffer_size() {
        let input = b"\xEF\xBB\xBFab\r\n\ncdefgh\nxyz";
        let expected = vec![
            (1, Ok(b"ab".to_vec()), true),
            (2, Ok(Vec::new()), true),
            (3, Ok(b"cdefgh".to_vec()), true),
            (4, Ok(b"xyz".to_vec()), false),
        ];
        for chunk in 1..=input.len() + 1 {
            assert_eq!(lines(input, 100, chunk), expected, "chunk {chunk}");
        }
    }

    #[test]
    fn long_lines_are_counted_not_kept() {
        let input = b"abc\n0123456789\nxy\n0123456789";
        let expected = vec![
            (1, Ok(b"abc".to_vec()), true),
            (2, Err(10), true),
            (3, Ok(b"xy".to_vec()), true),
            (4, Err(10), false),
        ];
        for chunk in 1..=input.len() + 1 {
            assert_eq!(lines(input, 5, chunk), expected, "chunk {chunk}");
        }
    }

    #[test]
    fn format_detect_tells_our_lines_from_claude_codes() {
        let ours = [
            serde_json::to_string(&Message::user_text("List the files")).expect("serializes"),
            serde_json::to_string(&Message::meta_user_text("cwd: /src")).expect("serializes"),
        ]
        .join("\n");
        assert_eq!(Format::detect(&ours), Format::Threadline);
        assert_eq!(
            Format::detect(&format!("garbage\n\n{ours}")),
            Format::Threadline
        );
        // Nothing decides: ours (the reader then reports what it cannot read).
        assert_eq!(Format::detect(""), Format::Threadline);
        assert_eq!(Format::detect("not json\n[1]\n"), Format::Threadline);
        // The first deciding record is the answer, whatever comes before or after it.
        let summary = r#"{"type":"summary","summary":"t","leafUuid":"x"}"#;
        assert_eq!(
            Format::detect(&format!("garbage\n{summary}\n")),
            Format::ClaudeCode
        );
        assert_eq!(
            Format::detect(&format!("{summary}\n{ours}")),
            Format::ClaudeCode
        );
        assert_eq!(
            Format::detect(&format!("{ours}\n{summary}")),
            Format::Threadline
        );
        for field in ["uuid", "parentUuid", "sessionId", "leafUuid"] {
            let record = format!(r#"{{"type":"user","{field}":"x"}}"#);
            assert_eq!(Format::detect(&record), Format::ClaudeCode, "{field}");
        }
        for kind in ["file-history-snapshot", "queue-operation"] {
            let record = format!(r#"{{"type":"{kind}","id":"x"}}"#);
            assert_eq!(Format::detect(&record), Format::ClaudeCode, "{kind}");
        }
        // A session store's line: our message with the store's `uuid` added.
        let mut stored =
            serde_json::to_vec(&Message::user_text("List the files")).expect("serializes");
        crate::json_line::add_field(&mut stored, "uuid", "u-1").expect("an object");
        let stored = String::from_utf8(stored).expect("UTF-8");
        assert_eq!(Format::detect(&stored), Format::Threadline, "{stored}");
        // Claude Code's records carry their message in a `message` object.
        let theirs =
            r#"{"type":"user","id":"x","uuid":"u","message":{"role":"user","content":"hi"}}"#;
        assert_eq!(Format::detect(theirs), Format::ClaudeCode);
    }

    #[test]
    fn format_names_serialize_and_display_alike() {
        for (format, name) in [
            (Format::Threadline, "threadline"),
            (Format::ClaudeCode, "claude-code"),
        ] {
            assert_eq!(format.name(), name);
            assert_eq!(format.to_string(), name);
            assert_eq!(
                serde_json::to_value(format).expect("serializes"),
                serde_json::Value::from(name)
            );
            assert_eq!(
                serde_json::from_value::<Format>(serde_json::Value::from(name)).ok(),
                Some(format)
            );
        }
    }
}
