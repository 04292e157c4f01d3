//! The one way threadline writes a JSONL file of session data: [`JsonlStore`]'s session
//! files and `threadline-message`'s transcripts both append through it.
//!
//! - A file is created private: mode `0600` on unix (the workspace's one rule,
//!   `threadline_wire::secret::private_file_options`); an existing file keeps its mode.
//! - An append is whole lines handed to one `write_all`, then flushed (and synced when
//!   asked); a failed append is truncated back, so a later line is never glued to half of it.
//! - The end of a file: a last line without its newline is **kept** (terminated before the
//!   next append) when it is a complete JSON value, and **dropped** (truncated before the next
//!   append) when it is not — the remains of a write cut short, never acknowledged. Readers
//!   apply the same rule, so what a reader sees is what stays.
//!
//! ```
//! use threadline_store::jsonl_file::{self, Tail};
//!
//! let dir = std::env::temp_dir().join(format!("jsonl-file-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("s.jsonl");
//! std::fs::write(&path, "{\"n\":1}\n{\"n\":2")?; // a crash cut the second line
//! let file = jsonl_file::open(&path, false)?;
//! let len = file.metadata()?.len();
//! let tail = jsonl_file::tail(&file, len)?;
//! assert_eq!(tail, Tail::Cut { at: 8 });
//! let len = jsonl_file::settle(&file, len, tail)?;
//! jsonl_file::append_lines(&file, len, b"{\"n\":3}\n", false)?;
//! assert_eq!(std::fs::read_to_string(&path)?, "{\"n\":1}\n{\"n\":3}\n");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`JsonlStore`]: crate::JsonlStore

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The longest unterminated last line that is checked: a longer one is kept (never delete
/// what was not looked at); a reader reports it if it does not parse.
pub const MAX_TAIL_CHECK: u64 = 64 * 1024 * 1024;

/// What follows a JSONL file's last newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Nothing: the file is empty or ends with a newline.
    Clean,
    /// A complete JSON value without its newline (cut just before it, or written by a
    /// writer that does not end the last line): kept, terminated before the next append.
    Unterminated,
    /// Bytes that are not a complete JSON value (a write cut short), from byte `at`: dropped
    /// before the next append.
    Cut {
        /// Where they start (the end of the last whole line).
        at: u64,
    },
}

/// Whether `line` (without its newline) is a complete JSON value: what a reader keeps of an
/// unterminated last line.
pub fn is_complete(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line).is_ok()
}

/// Opens `path` for reading and appending, creating it private (or, with `create_new`,
/// refusing a path that exists).
pub fn open(path: &Path, create_new: bool) -> io::Result<File> {
    let mut options = threadline_wire::secret::private_file_options();
    options.read(true).append(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    options.open(path)
}

/// What follows the last newline of `file`, `len` bytes long.
pub fn tail(file: &File, len: u64) -> io::Result<Tail> {
    let start = last_line_start(file, len)?;
    if start == len {
        return Ok(Tail::Clean);
    }
    if len - start > MAX_TAIL_CHECK {
        return Ok(Tail::Unterminated);
    }
    let mut line = vec![0; usize::try_from(len - start).unwrap_or(usize::MAX)];
    let mut reader = file;
    reader.seek(SeekFrom::Start(start))?;
    reader.read_exact(&mut line)?;
    Ok(if is_complete(trim_cr(&line)) {
        Tail::Unterminated
    } else {
        Tail::Cut { at: start }
    })
}

/// Makes `file` (`len` bytes long, ending with `tail`) end with a whole line: an
/// unterminated complete line gets its newline, a cut one is truncated away. Its new length.
pub fn settle(file: &File, len: u64, tail: Tail) -> io::Result<u64> {
    match tail {
        Tail::Clean => Ok(len),
        Tail::Unterminated => {
            append_lines(file, len, b"\n", false)?;
            Ok(len + 1)
        }
        Tail::Cut { at } => {
            file.set_len(at)?;
            Ok(at)
        }
    }
}

/// Appends `lines` (whole lines, each ending with a newline) to `file`, which ends with a
/// whole line at `len`: anything after `len` (a failed append that could not be rolled
/// back) is truncated first; then one `write_all`, a flush and, with `sync`, `sync_data`. On
/// failure the file is truncated back to `len` (best effort: the disk may be gone).
pub fn append_lines(file: &File, len: u64, lines: &[u8], sync: bool) -> io::Result<()> {
    if file.metadata()?.len() != len {
        file.set_len(len)?;
    }
    let mut writer = file;
    let written = writer
        .write_all(lines)
        .and_then(|()| writer.flush())
        .and_then(|()| if sync { file.sync_data() } else { Ok(()) });
    if written.is_err() {
        let _ = file.set_len(len);
    }
    written
}

/// Where the last line of `file` (`len` bytes long) starts: just after its last newline
/// (`len` when it ends with one, 0 when it has none).
fn last_line_start(file: &File, len: u64) -> io::Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut reader = file;
    let mut end = len;
    let mut buffer = vec![0; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let chunk = &mut buffer[..usize::try_from(end - start).unwrap_or(0)];
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(chunk)?;
        if let Some(at) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        if len - start > MAX_TAIL_CHECK {
            // Longer than anything checked: where it starts does not matter.
            return Ok(start);
        }
        end = start;
    }
    Ok(0)
}

/// `line` without a `\r` before its (missing) newline.
fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File, u64) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, bytes).expect("written");
        let file = open(&path, false).expect("opens");
        (dir, file, bytes.len() as u64)
    }

    fn contents(dir: &tempfile::TempDir) -> String {
        std::fs::read_to_string(dir.path().join("f.jsonl")).expect("reads")
    }

    #[test]
    fn the_tail_decides_what_stays() {
        for (bytes, tail, after) in [
            (&b""[..], Tail::Clean, ""),
            (b"{\"a\":1}\n", Tail::Clean, "{\"a\":1}\n"),
            (b"{\"a\":1}", Tail::Unterminated, "{\"a\":1}\n"),
            (
                b"{\"a\":1}\n{\"b\":2}",
                Tail::Unterminated,
                "{\"a\":1}\n{\"b\":2}\n",
            ),
            (b"{\"a\":1}\n{\"b\":", Tail::Cut { at: 8 }, "{\"a\":1}\n"),
            (b"{\"b\":", Tail::Cut { at: 0 }, ""),
            (b"{\"a\":1}\n\xff\xfe", Tail::Cut { at: 8 }, "{\"a\":1}\n"),
        ] {
            let (dir, file, len) = file_with(bytes);
            assert_eq!(tail_of(&file, len), tail, "{bytes:?}");
            let len = settle(&file, len, tail).expect("settles");
            assert_eq!(contents(&dir), after, "{bytes:?}");
            assert_eq!(len, after.len() as u64);
        }
    }

    fn tail_of(file: &File, len: u64) -> Tail {
        tail(file, len).expect("reads")
    }

    #[test]
    fn a_last_line_longer_than_a_chunk_is_found() {
        let long = format!("{{\"a\":\"{}\"}}", "x".repeat(200_000));
        let bytes = format!("{{\"z\":0}}\n{long}");
        let (_dir, file, len) = file_with(bytes.as_bytes());
        assert_eq!(tail_of(&file, len), Tail::Unterminated);
        let cut = &bytes.as_bytes()[..bytes.len() - 3];
        let (_dir, file, len) = file_with(cut);
        assert_eq!(tail_of(&file, len), Tail::Cut { at: 8 });
    }

    #[test]
    fn an_append_never_glues_to_what_a_failed_one_left() {
        let (dir, file, len) = file_with(b"{\"a\":1}\n");
        // What a failed append whose rollback failed too would leave.
        let mut writer = &file;
        writer.write_all(b"{\"half\":").expect("writes");
        append_lines(&file, len, b"{\"b\":2}\n", false).expect("appends");
        assert_eq!(contents(&dir), "{\"a\":1}\n{\"b\":2}\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_is_private_and_an_existing_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new.jsonl");
        let file = open(&path, true).expect("creates");
        let mode = file.metadata().expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(
            open(&path, true).is_err(),
            "create_new refuses an existing path"
        );
        let shared = dir.path().join("shared.jsonl");
        std::fs::write(&shared, b"").expect("written");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let file = open(&shared, false).expect("opens");
        let mode = file.metadata().expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
}
