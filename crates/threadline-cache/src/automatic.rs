//! [`Automatic`]: the top-level automatic `cache_control` for the conversation's tail.
//!
//! The API puts the automatic marker on the request's last cacheable block (walking back past
//! thinking and empty text; nothing is cached when no block is eligible): turn *n* writes
//! everything up to its last block and turn *n + 1* reads it back, with no marker to move.
//! It takes one of the four slots ([`Planner`](crate::Planner) counts it: explicit markers
//! plus the automatic one are never more than [`MAX_MARKERS`](crate::planner::MAX_MARKERS)).
//! Explicit markers go only where they earn more than the tail does: the last tool and the
//! static system block (a changed system prompt or a moving tail then still reads them), and
//! the [`LookbackAware`](crate::LookbackAware) bridge when a turn grew by 20 blocks or more
//! (the automatic marker alone would not find the previous write).
//!
//! The simulator reads the automatic marker where the API puts it
//! ([`Prefix::breakpoints`](crate::Prefix::breakpoints)).

use crate::planner::{Mark, Strategy, StrategyInput, bridge_mark, stable_marks};
use crate::prefix::Ttl;

/// Automatic caching for the tail, explicit markers on the tools and the static system block
/// (and the lookback bridge). `ttl` is the automatic marker's lifetime (default `5m`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Automatic {
    /// The automatic marker's lifetime.
    pub ttl: Ttl,
}

impl Automatic {
    /// With a `1h` automatic marker (every explicit marker then `1h` too: `1h` before `5m`).
    pub fn one_hour() -> Self {
        Automatic { ttl: Ttl::OneHour }
    }
}

impl Strategy for Automatic {
    fn name(&self) -> &'static str {
        match self.ttl {
            Ttl::FiveMinutes => "automatic",
            Ttl::OneHour => "automatic_1h",
        }
    }

    fn automatic(&self) -> Option<Ttl> {
        Some(self.ttl)
    }

    fn place(&self, input: &StrategyInput<'_>) -> Vec<Mark> {
        let mut marks = stable_marks(input, Ttl::FiveMinutes);
        let prefix = input.prefix;
        // Where the automatic marker lands: the bridge is measured from there.
        let landing = prefix
            .pieces
            .iter()
            .rposition(|p| p.eligible)
            .filter(|&p| prefix.first_message_piece().is_some_and(|first| p >= first))
            .map(|position| Mark {
                position,
                ttl: self.ttl,
            });
        marks.extend(bridge_mark(input, landing));
        marks
    }
}
