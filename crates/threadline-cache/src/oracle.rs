//! The best any marker placement can do for a session, in the simulator: the yardstick of the
//! strategies' benchmark.
//!
//! "Best" is an upper bound, not a strategy: an ideal cache in which **every** prefix of every
//! request (every piece boundary, not just four) is written, with an unlimited lookback, under
//! the same lifetime, refresh and minimum-length rules as the real one. A request then reads
//! the longest prefix it shares with any earlier request whose entry is still alive. No
//! placement of at most four markers with a 20-block lookback can read more, so a strategy's
//! hit ratio divided by this one is at most 1.

use std::collections::HashMap;

use threadline_wire::model::Model;

use crate::prefix::{Prefix, Ttl};
use crate::simulator::Predicted;

/// The usage of each request under the ideal cache with lifetime `ttl`.
pub fn best_usage(model: &Model, session: &[(u64, Prefix)], ttl: Ttl) -> Vec<Predicted> {
    let minimum = model.min_cacheable_tokens;
    let mut expires: HashMap<u64, u64> = HashMap::new();
    let mut out = Vec::with_capacity(session.len());
    for (at, prefix) in session {
        let read = prefix
            .pieces
            .iter()
            .rev()
            .find(|p| {
                p.cumulative_tokens >= minimum
                    && expires.get(&p.prefix_hash).is_some_and(|&e| e > *at)
            })
            .map_or(0, |p| p.cumulative_tokens);
        for piece in prefix
            .pieces
            .iter()
            .filter(|p| p.cumulative_tokens >= minimum)
        {
            expires.insert(piece.prefix_hash, at + ttl.millis());
        }
        let total = prefix.total_tokens();
        let written = if total >= minimum { total - read } else { 0 };
        out.push(Predicted {
            input_tokens: total - read - written,
            cache_creation_input_tokens: written,
            ephemeral_5m_input_tokens: if ttl == Ttl::FiveMinutes { written } else { 0 },
            ephemeral_1h_input_tokens: if ttl == Ttl::OneHour { written } else { 0 },
            cache_read_input_tokens: read,
        });
    }
    out
}
