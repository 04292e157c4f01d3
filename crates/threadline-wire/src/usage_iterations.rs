//! `usage.iterations`: the per-sampling-pass usage of one response, and what a client bills
//! and counts from it.
//!
//! A response can be several passes of the model: a server-side compaction pass
//! (`compaction`), then the answer (`message`), an advisor's pass (`advisor_message`), or a
//! declined hop of a server-side fallback (`message`, with its `model`) before the serving
//! one (`fallback_message`). The top-level `input_tokens`/`output_tokens` cover only the
//! non-compaction passes (with a fallback, only the serving attempt), so:
//!
//! - the **bill** is the sum over every iteration ([`Usage::billed`]),
//! - the **context size** is the last non-compaction iteration's whole input
//!   ([`Usage::context_tokens`]: after a compaction that is the summary onward),
//! - the compaction passes are [`Usage::compaction_iterations`].
//!
//! Without `iterations` (or with an empty array) each falls back to the top-level figures.
//!
//! ```
//! use threadline_wire::Usage;
//!
//! // The recorded ruby_llm compaction exchange.
//! let usage: Usage = serde_json::from_str(r#"{"input_tokens":162,"output_tokens":11,
//!   "iterations":[{"type":"compaction","input_tokens":99195,"output_tokens":81},
//!                 {"type":"message","input_tokens":162,"output_tokens":11}]}"#)?;
//! let billed = usage.billed();
//! assert_eq!((billed.input_tokens, billed.output_tokens), (Some(99_357), Some(92)));
//! assert_eq!(usage.context_tokens(), 162);
//! assert_eq!(usage.compaction_iterations().count(), 1);
//! # Ok::<(), serde_json::Error>(())
//! ```

use crate::response::{CacheCreation, Usage};

wire_string_enum! {
    /// The kind of one sampling pass (`usage.iterations[].type`).
    pub enum IterationKind {
        /// A server-side compaction pass: the summary's writing.
        Compaction = "compaction",
        /// A normal pass (with a fallback: a hop that declined, carrying its `model`).
        Message = "message",
        /// The advisor tool's pass.
        AdvisorMessage = "advisor_message",
        /// The pass of the model a server-side fallback served from.
        FallbackMessage = "fallback_message",
    }
}

wire_struct! {
    /// One entry of `usage.iterations`. Unknown fields round-trip; every field is optional
    /// (the recorded entries carried no `model`, the SDK declares one).
    pub struct UsageIteration {
        required {}
        optional {
            /// The pass's kind (`type`).
            pub kind: IterationKind => "type",
            /// Uncached input tokens.
            pub input_tokens: u64,
            /// Output tokens.
            pub output_tokens: u64,
            /// Tokens written to the cache.
            pub cache_creation_input_tokens: u64,
            /// Tokens read from the cache.
            pub cache_read_input_tokens: u64,
            /// Cache writes by lifetime.
            pub cache_creation: CacheCreation,
            /// The model of this pass, when the API names it (fallback hops).
            pub model: String,
        }
    }
}

impl UsageIteration {
    /// Whether this is a compaction pass.
    pub fn is_compaction(&self) -> bool {
        self.kind == Some(IterationKind::Compaction)
    }

    /// All input tokens of the pass: uncached + cache writes + cache reads (saturating).
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens
            .unwrap_or(0)
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0))
            .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
    }

    /// The pass's token figures as a [`Usage`] (to price it with [`crate::model::Model::cost`]).
    pub fn as_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens,
            cache_read_input_tokens: self.cache_read_input_tokens,
            cache_creation: self.cache_creation.clone(),
            ..Usage::default()
        }
    }
}

impl Usage {
    /// The iterations, when the response reported a non-empty array.
    pub fn iterations(&self) -> Option<&[UsageIteration]> {
        self.iterations.as_deref().filter(|i| !i.is_empty())
    }

    /// The tokens billed for the response: the sum over every iteration when there are
    /// iterations (compaction passes and declined fallback hops included), else the
    /// top-level figures. Only the token fields are set (saturating sums); a cache-write
    /// split is summed when any pass reported one (a pass without counts its writes as
    /// five-minute ones; with none, the top level's split is kept). A declined fallback hop's
    /// pass is another model's: its tokens are in these sums, so price the response with
    /// [`crate::model::ModelTable::cost`], which prices each pass by its own model's row.
    pub fn billed(&self) -> Usage {
        let Some(iterations) = self.iterations() else {
            return Usage {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
                cache_creation_input_tokens: self.cache_creation_input_tokens,
                cache_read_input_tokens: self.cache_read_input_tokens,
                cache_creation: self.cache_creation.clone(),
                ..Usage::default()
            };
        };
        let add = |a: u64, b: Option<u64>| a.saturating_add(b.unwrap_or(0));
        let (mut input, mut output, mut write, mut read) = (0u64, 0u64, 0u64, 0u64);
        let (mut w5m, mut w1h, mut split) = (0u64, 0u64, false);
        for it in iterations {
            input = add(input, it.input_tokens);
            output = add(output, it.output_tokens);
            write = add(write, it.cache_creation_input_tokens);
            read = add(read, it.cache_read_input_tokens);
            match &it.cache_creation {
                Some(c) => {
                    split = true;
                    w5m = add(w5m, c.ephemeral_5m_input_tokens);
                    w1h = add(w1h, c.ephemeral_1h_input_tokens);
                }
                None => w5m = add(w5m, it.cache_creation_input_tokens),
            }
        }
        // No pass split its writes but the top level did (it covers the non-compaction
        // passes): its one-hour writes stay one-hour ones, the rest are five-minute ones, so
        // a one-hour write is never priced as a cheaper five-minute one.
        if !split
            && let Some(top) = &self.cache_creation
            && let Some(hour) = top.ephemeral_1h_input_tokens.filter(|h| *h > 0)
        {
            split = true;
            w1h = hour.min(write);
            w5m = write - w1h;
        }
        Usage {
            input_tokens: Some(input),
            output_tokens: Some(output),
            cache_creation_input_tokens: Some(write),
            cache_read_input_tokens: Some(read),
            cache_creation: split.then(|| CacheCreation {
                ephemeral_5m_input_tokens: Some(w5m),
                ephemeral_1h_input_tokens: Some(w1h),
                extra: crate::Extra::new(),
            }),
            ..Usage::default()
        }
    }

    /// The size of the context the response leaves: the whole input of the last pass of the
    /// conversation's own model (`message` or `fallback_message`: after a compaction, the
    /// summary onward; never a compaction pass or the advisor's, whose input is another
    /// model's prompt), else the top-level whole input.
    pub fn context_tokens(&self) -> u64 {
        self.iterations()
            .and_then(|i| {
                i.iter().rev().find(|it| {
                    matches!(
                        it.kind,
                        Some(IterationKind::Message | IterationKind::FallbackMessage)
                    )
                })
            })
            .map_or_else(
                || self.total_input_tokens(),
                UsageIteration::total_input_tokens,
            )
    }

    /// The compaction passes of the response, in order.
    pub fn compaction_iterations(&self) -> impl Iterator<Item = &UsageIteration> {
        self.iterations
            .iter()
            .flatten()
            .filter(|it| it.is_compaction())
    }
}

/// Billed tokens summed over responses: the four counts of [`Usage::billed`] (every
/// iteration, a server-side compaction pass's included), each added with saturation: the
/// counts are the server's, and a hostile one may send `u64::MAX`.
///
/// The one place billed usage is summed: `threadline-message`'s `UsageTotals` and
/// `threadline-client`'s cost meter both add through [`BilledTotals::add`].
///
/// ```
/// use threadline_wire::{BilledTotals, Usage};
///
/// let usage: Usage = serde_json::from_value(serde_json::json!({
///     "input_tokens": 162, "output_tokens": 11,
///     "iterations": [
///         {"type": "compaction", "input_tokens": 99195, "output_tokens": 81},
///         {"type": "message", "input_tokens": 162, "output_tokens": 11}
///     ]
/// }))?;
/// let mut totals = BilledTotals::default();
/// totals.add(&usage);
/// assert_eq!((totals.input_tokens, totals.output_tokens), (99_357, 92));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BilledTotals {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
}

impl BilledTotals {
    /// Adds what `usage` bills ([`Usage::billed`]), saturating; a missing count adds 0.
    pub fn add(&mut self, usage: &Usage) {
        let billed = usage.billed();
        let add = |total: &mut u64, tokens: Option<u64>| {
            *total = total.saturating_add(tokens.unwrap_or(0));
        };
        add(&mut self.input_tokens, billed.input_tokens);
        add(&mut self.output_tokens, billed.output_tokens);
        add(
            &mut self.cache_creation_input_tokens,
            billed.cache_creation_input_tokens,
        );
        add(
            &mut self.cache_read_input_tokens,
            billed.cache_read_input_tokens,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn billed_totals_sum_every_iteration_and_saturate() {
        let usage: Usage = serde_json::from_value(json!({
            "input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 7,
            "iterations": [
                {"type": "compaction", "input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 3},
                {"type": "message", "input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 7}
            ]
        }))
        .expect("usage");
        let mut totals = BilledTotals::default();
        totals.add(&usage);
        assert_eq!(
            totals,
            BilledTotals {
                input_tokens: 105,
                output_tokens: 11,
                cache_creation_input_tokens: 3,
                cache_read_input_tokens: 7,
            }
        );
        let huge = Usage {
            input_tokens: Some(u64::MAX),
            ..Usage::default()
        };
        totals.add(&huge);
        totals.add(&huge);
        assert_eq!(totals.input_tokens, u64::MAX);
        assert_eq!(totals.output_tokens, 11);
    }

    #[test]
    fn iterations_round_trip_with_unknown_kinds_and_fields() {
        let value = json!({"input_tokens": 5, "iterations": [
            {"type": "compaction", "input_tokens": 1, "output_tokens": 2, "future": true},
            {"type": "fallback_message", "model": "claude-sonnet-4-6", "input_tokens": 3},
            {"type": "a_new_pass", "input_tokens": 4, "model": null}
        ]});
        let usage: Usage = serde_json::from_value(value.clone()).expect("parses");
        let its = usage.iterations().expect("iterations");
        assert_eq!(its[0].kind, Some(IterationKind::Compaction));
        assert_eq!(its[1].kind, Some(IterationKind::FallbackMessage));
        assert_eq!(its[1].model.as_deref(), Some("claude-sonnet-4-6"));
        assert_eq!(its[2].kind, Some(IterationKind::Other("a_new_pass".into())));
        assert_eq!(serde_json::to_value(&usage).expect("serializes"), value);
    }

    #[test]
    fn billed_sums_every_iteration_and_context_is_the_last_non_compaction_pass() {
        let usage: Usage = serde_json::from_value(json!({
        "input_tokens": 30, "output_tokens": 7, "cache_read_input_tokens": 100,
        "iterations": [
            {"type": "compaction", "input_tokens": 1000, "output_tokens": 50,
             "cache_read_input_tokens": 9000},
            {"type": "message", "input_tokens": 10, "output_tokens": 3,
             "cache_read_input_tokens": 100},
            {"type": "compaction", "input_tokens": 500, "output_tokens": 40},
            {"type": "message", "input_tokens": 20, "output_tokens": 4,
             "cache_creation_input_tokens": 6,
             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 6}}
        ]}))
        .expect("parses");
        let billed = usage.billed();
        assert_eq!(billed.input_tokens, Some(1530));
        assert_eq!(billed.output_tokens, Some(97));
        assert_eq!(billed.cache_read_input_tokens, Some(9100));
        assert_eq!(billed.cache_creation_input_tokens, Some(6));
        let split = billed.cache_creation.expect("split");
        assert_eq!(split.ephemeral_1h_input_tokens, Some(6));
        assert_eq!(split.ephemeral_5m_input_tokens, Some(0));
        assert_eq!(usage.context_tokens(), 26);
        assert_eq!(usage.compaction_iterations().count(), 2);
    }

    #[test]
    fn a_top_level_one_hour_split_survives_and_the_advisor_pass_is_not_the_context() {
        let usage: Usage = serde_json::from_value(json!({
        "input_tokens": 10, "cache_creation_input_tokens": 40,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 40},
        "iterations": [
            {"type": "compaction", "input_tokens": 900, "cache_creation_input_tokens": 5},
            {"type": "message", "input_tokens": 10, "cache_creation_input_tokens": 40},
            {"type": "advisor_message", "model": "claude-opus-4-8", "input_tokens": 7000}
        ]}))
        .expect("parses");
        let split = usage
            .billed()
            .cache_creation
            .expect("the top level's split is kept");
        assert_eq!(
            (
                split.ephemeral_5m_input_tokens,
                split.ephemeral_1h_input_tokens
            ),
            (Some(5), Some(40))
        );
        assert_eq!(usage.context_tokens(), 50);
    }

    #[test]
    fn without_iterations_the_top_level_is_billed() {
        let usage: Usage = serde_json::from_value(
            json!({"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 5, "iterations": []}),
        )
        .expect("parses");
        assert_eq!(usage.billed().input_tokens, Some(3));
        assert_eq!(usage.billed().cache_read_input_tokens, Some(5));
        assert_eq!(usage.context_tokens(), 8);
        assert_eq!(usage.compaction_iterations().count(), 0);
        let huge: Usage = serde_json::from_value(json!({"iterations": [
            {"type": "message", "input_tokens": u64::MAX}, {"type": "message", "input_tokens": 1}]}))
        .expect("parses");
        assert_eq!(huge.billed().input_tokens, Some(u64::MAX));
    }
}
