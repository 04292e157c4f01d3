//! Writing to stdout without panicking when the reader goes away (`threadline … | head`).

use std::io::Write;

/// Writes `line` and a newline to stdout. A closed pipe ends the output quietly (the reader
/// has what it wanted); any other failure is one line on stderr.
pub(crate) fn print_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{line}")
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("threadline: cannot write to stdout: {e}");
    }
}
