//! The command line's view of the client's cost meter ([`threadline::client::meter`]): the
//! layer counts requests, tokens and cost; this module only words its totals.

pub(crate) use threadline::client::meter::{Meter, MeterTotals as Totals, Metered};

/// The server-side compaction passes as a summary line's value (`None` when there were none).
pub(crate) fn compaction_line(totals: &Totals) -> Option<String> {
    (totals.compaction_iterations > 0).then(|| {
        format!(
            "{} server-side compaction iteration{}: input {}, output {} (billed, in the tokens above)",
            totals.compaction_iterations,
            if totals.compaction_iterations == 1 {
                ""
            } else {
                "s"
            },
            totals.compaction_input_tokens,
            totals.compaction_output_tokens
        )
    })
}

#[cfg(test)]
mod tests {
    use threadline::wire::Usage;
    use threadline::wire::model::ModelTable;

    use super::*;

    #[test]
    fn the_compaction_line_counts_the_passes_and_their_tokens() {
        // The recorded ruby_llm compaction exchange.
        let usage: Usage = serde_json::from_str(
            r#"{"input_tokens":162,"output_tokens":11,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,
            "iterations":[{"type":"compaction","input_tokens":99195,"output_tokens":81},
                          {"type":"message","input_tokens":162,"output_tokens":11}]}"#,
        )
        .expect("parses");
        let mut totals = Totals::default();
        totals.add_usage(&usage, "claude-sonnet-4-6", ModelTable::builtin());
        assert_eq!(
            compaction_line(&totals).as_deref(),
            Some(
                "1 server-side compaction iteration: input 99195, output 81 (billed, in the tokens above)"
            )
        );
        assert_eq!(compaction_line(&Totals::default()), None);
    }
}
