//! The simulated prompt cache's entries and the rules that read, refresh and write them: one
//! copy, shared by [`crate::Simulator`] (a request at a time) and
//! [`crate::SessionSimulator`] (a growing conversation).

use std::collections::HashMap;

use crate::breaks::{BreakCause, CacheBreak};
use crate::planner::LOOKBACK;
use crate::prefix::{PrefixPiece, Ttl};
use crate::simulator::Predicted;

/// One cached prefix: when it expires, and for how long a read keeps it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    expires: u64,
    ttl: Ttl,
}

/// The cache: entries by prefix hash.
#[derive(Debug, Default)]
pub(crate) struct CacheTable {
    entries: HashMap<u64, Entry>,
}

/// What a request wrote after its reads.
pub(crate) struct Written {
    /// The predicted usage.
    pub(crate) usage: Predicted,
    /// The last breakpoint past the read, if any.
    pub(crate) last_breakpoint: Option<usize>,
}

impl CacheTable {
    /// How many entries are held (live or not yet swept).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Drops every entry expired at `at_ms`.
    pub(crate) fn sweep(&mut self, at_ms: u64) {
        self.entries.retain(|_, e| e.expires > at_ms);
    }

    /// Whether the prefix `hash` is cached and alive at `at_ms`.
    pub(crate) fn is_alive(&self, hash: u64, at_ms: u64) -> bool {
        self.entries.get(&hash).is_some_and(|e| e.expires > at_ms)
    }

    /// Cached before the first request: the breakpoint closest to `warm` tokens (at most a
    /// tenth over it, for the estimate's error), for five minutes.
    pub(crate) fn warm_start(
        &mut self,
        pieces: &[PrefixPiece],
        breakpoints: &[(usize, Ttl)],
        warm: u64,
        at_ms: u64,
    ) {
        let limit = warm.saturating_add(warm / 10);
        let closest = breakpoints
            .iter()
            .filter(|&&(p, _)| pieces[p].cumulative_tokens <= limit)
            .min_by_key(|&&(p, _)| pieces[p].cumulative_tokens.abs_diff(warm));
        if let Some(&(p, _)) = closest {
            self.entries.insert(
                pieces[p].prefix_hash,
                Entry {
                    expires: at_ms.saturating_add(Ttl::FiveMinutes.millis()),
                    ttl: Ttl::FiveMinutes,
                },
            );
        }
    }

    /// Reads: for each breakpoint, the longest live prefix within the lookback. The positions
    /// read, and the furthest of them.
    pub(crate) fn reads(
        &self,
        pieces: &[PrefixPiece],
        breakpoints: &[(usize, Ttl)],
        at_ms: u64,
    ) -> (Option<usize>, Vec<usize>) {
        let mut hit: Option<usize> = None;
        let mut hits = Vec::new();
        for &(p, _) in breakpoints {
            let from = p.saturating_sub(LOOKBACK - 1);
            if let Some(q) = (from..=p)
                .rev()
                .find(|&q| self.is_alive(pieces[q].prefix_hash, at_ms))
            {
                hits.push(q);
                hit = Some(hit.map_or(q, |h: usize| h.max(q)));
            }
        }
        (hit, hits)
    }

    /// Refreshes the entries read (`hits`), writes every breakpoint past the furthest read
    /// (`hit`), and predicts the usage. An entry that expired by `pruned_at` counts as gone
    /// even if it was not swept yet; `tail_tokens` are the uncached tokens after the pieces.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write(
        &mut self,
        pieces: &[PrefixPiece],
        breakpoints: &[(usize, Ttl)],
        hits: &[usize],
        hit: Option<usize>,
        at_ms: u64,
        pruned_at: u64,
        tail_tokens: u64,
    ) -> Written {
        for &q in hits {
            if let Some(entry) = self.entries.get_mut(&pieces[q].prefix_hash) {
                entry.expires = entry.expires.max(at_ms.saturating_add(entry.ttl.millis()));
            }
        }
        let cum = |p: Option<usize>| p.map_or(0, |p| pieces[p].cumulative_tokens);
        let read = cum(hit);
        let after: Vec<(usize, Ttl)> = breakpoints
            .iter()
            .copied()
            .filter(|&(p, _)| hit.is_none_or(|h| p > h))
            .collect();
        let last_bp = after.last().map(|&(p, _)| p);
        let last_1h = after
            .iter()
            .rev()
            .find(|&&(_, t)| t == Ttl::OneHour)
            .map(|&(p, _)| p);
        let write_1h = last_1h.map_or(0, |b| cum(Some(b)).saturating_sub(read));
        let write_5m = last_bp.map_or(0, |c| cum(Some(c)).saturating_sub(read.max(cum(last_1h))));
        for &(p, ttl) in &after {
            let entry = self
                .entries
                .entry(pieces[p].prefix_hash)
                .or_insert(Entry { expires: 0, ttl });
            if entry.expires <= pruned_at {
                // Expired before: gone, as if swept.
                *entry = Entry { expires: 0, ttl };
            }
            entry.expires = entry.expires.max(at_ms.saturating_add(ttl.millis()));
            if ttl == Ttl::OneHour {
                entry.ttl = Ttl::OneHour;
            }
        }
        let total = pieces.last().map_or(0, |p| p.cumulative_tokens);
        let covered = read.max(cum(last_bp));
        Written {
            usage: Predicted {
                input_tokens: total.saturating_sub(covered).saturating_add(tail_tokens),
                cache_creation_input_tokens: write_1h.saturating_add(write_5m),
                ephemeral_5m_input_tokens: write_5m,
                ephemeral_1h_input_tokens: write_1h,
                cache_read_input_tokens: read,
            },
            last_breakpoint: last_bp,
        }
    }

    /// Why a request whose pieces up to `cached_to` are unchanged read less than the previous
    /// one left cached there (`cached_hash`, written at `last_at`): the entry expired, the
    /// request has no marker, or its nearest marker is past the lookback. `None` when the read
    /// reached `cached_to`.
    pub(crate) fn unchanged_prefix_break(
        &self,
        cached_hash: u64,
        cached_to: usize,
        hit: Option<usize>,
        breakpoints: &[(usize, Ttl)],
        last_at: u64,
        at_ms: u64,
    ) -> Option<CacheBreak> {
        if hit.is_some_and(|h| h >= cached_to) {
            return None;
        }
        if !self.is_alive(cached_hash, at_ms) {
            return Some(CacheBreak {
                location: None,
                cause: BreakCause::TtlExpired {
                    idle_ms: at_ms.saturating_sub(last_at),
                },
            });
        }
        if breakpoints.is_empty() {
            return Some(CacheBreak {
                location: None,
                cause: BreakCause::NoMarker,
            });
        }
        let nearest = breakpoints
            .iter()
            .map(|&(p, _)| p)
            .filter(|&p| p >= cached_to)
            .min()
            .unwrap_or(cached_to);
        Some(CacheBreak {
            location: None,
            cause: BreakCause::LookbackExceeded {
                blocks: nearest - cached_to,
            },
        })
    }
}
