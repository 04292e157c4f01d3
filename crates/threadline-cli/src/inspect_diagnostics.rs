//! The API's cache diagnostics recorded in a transcript, beside `inspect`'s own prediction:
//! the table's line. The analysis is the library's ([`threadline_inspect::diagnostics`]).

use std::fmt;

use threadline_inspect::RequestRow;

pub use threadline_inspect::diagnostics::{DiagnosticsRow, Recorded, recorded};

/// Writes the table's line for a row's `diagnostics` (nothing when it has none). Every part is
/// escaped on its own, lines included: the recorded reason and the loop's prediction and
/// verdict are the file's text, and a newline in them must not print a row of its own.
pub fn write(out: &mut impl fmt::Write, row: &RequestRow) -> fmt::Result {
    let Some(d) = &row.diagnostics else {
        return Ok(());
    };
    let missed = fmt::from_fn(|f| match d.missed_tokens() {
        Some(n) => write!(f, " (~{n} tokens)"),
        None => Ok(()),
    });
    writeln!(
        out,
        "      diagnostics: {}{missed} | loop predicted {} ({}) | inspect predicts {} ({})",
        safe(&d.reason),
        safe(d.loop_predicted.as_deref().unwrap_or("-")),
        safe(&d.loop_agreement),
        safe(d.inspect_predicted.as_deref().unwrap_or("-")),
        safe(&d.inspect_agreement),
    )
}

fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    crate::terminal_text::terminal_safe(text, false)
}
