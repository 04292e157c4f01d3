//! Reading the command line's input files, never more than the input limit.
//!
//! Every file a command reads (and stdin, `-`) is read through here, cut at the limit
//! (`--max-input-bytes`, default [`DEFAULT_MAX_INPUT_BYTES`]): an input that never ends
//! (`/dev/zero`, an endless pipe) or a file larger than the limit is refused with one line that
//! names the limit and the flag, and the command exits with code 2. Formats that can be read
//! as they come (SSE) are streamed through [`open_input`] instead of held whole.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// The default input limit: 256 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The input limit of this process (set once from the command line).
static MAX_INPUT_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_MAX_INPUT_BYTES);

/// Sets the input limit (`--max-input-bytes`).
pub fn set_max_input_bytes(bytes: u64) {
    MAX_INPUT_BYTES.store(bytes, Ordering::SeqCst);
}

/// The input limit in bytes.
pub fn max_input_bytes() -> u64 {
    MAX_INPUT_BYTES.load(Ordering::SeqCst)
}

/// The line saying that `path` is over the limit.
pub fn too_large(path: &str) -> String {
    format!(
        "threadline: {path}: the input is larger than the limit of {} bytes (raise it with --max-input-bytes)",
        max_input_bytes()
    )
}

/// An input being read: at most one byte more than the limit comes out of it, so a reader can
/// tell "exactly the limit" from "over it" ([`BoundedInput::over_limit`]).
pub struct BoundedInput {
    inner: std::io::Take<Box<dyn Read>>,
    read: u64,
}

impl BoundedInput {
    /// Whether more than the limit was read.
    pub fn over_limit(&self) -> bool {
        self.read > max_input_bytes()
    }
}

impl Read for BoundedInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Opens `path` (stdin for `-`) for reading, cut one byte after the limit; the error is one
/// printable line.
pub fn open_input(path: &str) -> Result<BoundedInput, String> {
    let reader: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            std::fs::File::open(path)
                .map_err(|e| format!("threadline: cannot read {path}: {e}"))?,
        )
    };
    Ok(BoundedInput {
        inner: reader.take(max_input_bytes().saturating_add(1)),
        read: 0,
    })
}

/// The bytes of `path`, or of stdin for `-`, at most the limit; the error is one printable
/// line (unreadable, or larger than the limit).
pub fn read_input(path: &str) -> Result<Vec<u8>, String> {
    let mut input = open_input(path)?;
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes).map_err(|e| {
        if path == "-" {
            format!("threadline: cannot read stdin: {e}")
        } else {
            format!("threadline: cannot read {path}: {e}")
        }
    })?;
    if input.over_limit() {
        return Err(too_large(path));
    }
    Ok(bytes)
}
