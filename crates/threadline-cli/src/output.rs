//! Writing to stdout: every write goes through here, so a failed write (a full disk, a closed
//! pipe) is seen once and turns the exit code into a failure ([`finish`]).

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use threadline_cli::stderr_line;
use threadline_cli::terminal_text::terminal_safe_json;

/// Whether a write to stdout failed: the output is incomplete.
static FAILED: AtomicBool = AtomicBool::new(false);

/// Records a failed write. The first failure is one line on stderr, except for a closed pipe
/// (the reader has what it wanted: `threadline … | head`), which ends the output quietly.
fn failed(error: &std::io::Error) {
    if !FAILED.swap(true, Ordering::SeqCst) && error.kind() != std::io::ErrorKind::BrokenPipe {
        stderr_line!("threadline: cannot write to stdout: {error}");
    }
}

/// Writes `text` to stdout as it is and flushes it (streamed model text). After a failed
/// write nothing more is written.
pub(crate) fn print(text: &str) {
    if FAILED.load(Ordering::SeqCst) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        failed(&error);
    }
}

/// Writes `line` and a newline to stdout. After a failed write nothing more is written.
pub(crate) fn print_line(line: &str) {
    if FAILED.load(Ordering::SeqCst) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{line}") {
        failed(&error);
    }
}

/// Writes `json` (serialized JSON, a document or JSON lines) and a newline to stdout, with
/// what the serializer leaves raw and a terminal would act on (a right-to-left override, C1
/// controls) written as JSON escapes: the same value ([`terminal_safe_json`]).
pub(crate) fn print_json(json: &str) {
    print_line(&terminal_safe_json(json));
}

/// The process's exit code once the command returned `code`: stdout is flushed, and when any
/// write to it failed, a success becomes exit code 1 (the output is incomplete).
pub(crate) fn finish(code: ExitCode) -> ExitCode {
    if let Err(error) = std::io::stdout().lock().flush() {
        failed(&error);
    }
    if FAILED.load(Ordering::SeqCst) && code == ExitCode::SUCCESS {
        ExitCode::from(1)
    } else {
        code
    }
}
