//! The API's cache diagnostics recorded in a transcript, beside `inspect`'s own prediction:
//! the table's line. The analysis is the library's ([`threadline_inspect::diagnostics`]).

use threadline_inspect::RequestRow;

pub use threadline_inspect::diagnostics::{DiagnosticsRow, Recorded, recorded};

/// The table's line for a row's `diagnostics` (empty when it has none).
pub fn render(row: &RequestRow) -> String {
    let Some(d) = &row.diagnostics else {
        return String::new();
    };
    let missed = d
        .missed_tokens()
        .map_or(String::new(), |n| format!(" (~{n} tokens)"));
    format!(
        "      diagnostics: {}{missed} | loop predicted {} ({}) | inspect predicts {} ({})\n",
        crate::terminal_text::terminal_safe(&d.reason, false),
        d.loop_predicted.as_deref().unwrap_or("-"),
        d.loop_agreement,
        d.inspect_predicted.as_deref().unwrap_or("-"),
        d.inspect_agreement,
    )
}
