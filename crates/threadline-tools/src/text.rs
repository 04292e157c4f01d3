//! The texts the tools answer with when they refuse or cut.

use threadline_query::ToolOutput;
use threadline_workspace::{Refusal, Truncation};

/// The error result for a refused path.
pub(crate) fn refused(path: &str, refusal: &Refusal) -> ToolOutput {
    ToolOutput::error(format!("{path}: {refusal}"))
}

/// A line saying how a read was cut.
pub(crate) fn truncation_note(cut: &Truncation) -> String {
    match cut {
        Truncation::Bytes { limit } => {
            format!("[truncated: only the first {limit} bytes of the file were read]\n")
        }
        Truncation::Lines { limit } => format!("[truncated at {limit} lines]\n"),
        Truncation::Entries { limit } => format!("[truncated at {limit} entries]\n"),
        _ => "[truncated]\n".to_owned(),
    }
}

/// Cuts `text` to at most `max` bytes at a character boundary; says whether it cut.
pub(crate) fn cut_at(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    true
}
