//! When compaction triggers, from the model table.
//!
//! The effective window keeps room for the answer: `window − min(max_output, 20,000)`.
//! Autocompact triggers 13,000 tokens below it (167,000 on a 200k model with 64k output), a
//! warning 20,000 tokens before that, and the blocking limit (refuse to send; compact first)
//! 3,000 tokens below the effective window.
//!
//! The decisions that read them live here too, so every user of the crate decides alike:
//! [`Thresholds::exact_count_from`] (when an exact `count_tokens` is worth its round trip),
//! [`Thresholds::autocompact_due`] (the count decides, but never vetoes the blocking limit)
//! and [`Thresholds::blocked`] (refuse to send).

use threadline_wire::model::Model;

/// The most output tokens reserved from the window for the answer.
pub const OUTPUT_RESERVE_CAP: u64 = 20_000;
/// The room left below the effective window when autocompact triggers.
pub const AUTOCOMPACT_BUFFER: u64 = 13_000;
/// How far below the autocompact threshold the warning starts.
pub const WARNING_BUFFER: u64 = 20_000;
/// The room left below the effective window at the blocking limit.
pub const BLOCKING_BUFFER: u64 = 3_000;

/// How close to the autocompact threshold the estimate must come (this share of it) before
/// an exact count is asked for: the estimate is off by a few percent either way.
pub const EXACT_COUNT_BAND: f64 = 0.9;

/// The token thresholds of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// `window − min(max_output, 20,000)`.
    pub effective_window: u64,
    /// Autocompact at or above this.
    pub autocompact: u64,
    /// Warn the user at or above this.
    pub warning: u64,
    /// Do not send at or above this.
    pub blocking: u64,
}

/// Where a context size stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Below the warning.
    Ok,
    /// At or above the warning.
    Warning,
    /// At or above the autocompact threshold.
    Autocompact,
    /// At or above the blocking limit.
    Blocking,
}

impl Thresholds {
    /// The thresholds of `model`.
    pub fn for_model(model: &Model) -> Self {
        let effective_window = model
            .context_window
            .saturating_sub(model.max_output_tokens.min(OUTPUT_RESERVE_CAP));
        let autocompact = effective_window.saturating_sub(AUTOCOMPACT_BUFFER);
        Thresholds {
            effective_window,
            autocompact,
            warning: autocompact.saturating_sub(WARNING_BUFFER),
            blocking: effective_window.saturating_sub(BLOCKING_BUFFER),
        }
    }

    /// Thresholds with only the autocompact threshold given (tests, experiments): the others
    /// keep their distances to it.
    pub fn with_autocompact(autocompact: u64) -> Self {
        let effective_window = autocompact.saturating_add(AUTOCOMPACT_BUFFER);
        Thresholds {
            effective_window,
            autocompact,
            warning: autocompact.saturating_sub(WARNING_BUFFER),
            blocking: effective_window - BLOCKING_BUFFER,
        }
    }

    /// The thresholds of `model`, or those of [`Thresholds::with_autocompact`] when an
    /// autocompact threshold is given (small windows, demos).
    pub fn for_model_or(model: &Model, autocompact_at: Option<u64>) -> Self {
        match autocompact_at {
            Some(tokens) => Thresholds::with_autocompact(tokens),
            None => Thresholds::for_model(model),
        }
    }

    /// The estimate from which the autocompact decision is worth anything: the threshold
    /// itself when the estimate decides alone, [`EXACT_COUNT_BAND`] of it when an exact count
    /// will decide (the estimate may be a few percent low). Below it, nothing is built or
    /// counted.
    pub fn exact_count_from(&self, exact_count: bool) -> u64 {
        if exact_count {
            // At most `autocompact` (the band is below 1), so the conversion cannot overflow.
            (self.autocompact as f64 * EXACT_COUNT_BAND) as u64
        } else {
            self.autocompact
        }
    }

    /// Whether autocompact runs now: with an exact count of the request (`counted`), the
    /// count decides — but a count never vetoes a compaction the `estimate` says is needed to
    /// stay under the blocking limit; without one, the estimate decides.
    pub fn autocompact_due(&self, estimate: u64, counted: Option<u64>) -> bool {
        match counted {
            Some(tokens) => tokens >= self.autocompact || estimate >= self.blocking,
            None => estimate >= self.autocompact,
        }
    }

    /// `Some((tokens, limit))` when `tokens` is at or over the blocking limit: the request
    /// must not be sent (compact first).
    pub fn blocked(&self, tokens: u64) -> Option<(u64, u64)> {
        (tokens >= self.blocking).then_some((tokens, self.blocking))
    }

    /// Where `tokens` stands.
    pub fn level(&self, tokens: u64) -> Level {
        if tokens >= self.blocking {
            Level::Blocking
        } else if tokens >= self.autocompact {
            Level::Autocompact
        } else if tokens >= self.warning {
            Level::Warning
        } else {
            Level::Ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::model::ModelTable;

    #[test]
    fn a_200k_model_with_64k_output_compacts_at_167k() {
        let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
        assert_eq!(
            (model.context_window, model.max_output_tokens),
            (200_000, 64_000)
        );
        let t = Thresholds::for_model(model);
        assert_eq!(t.effective_window, 180_000);
        assert_eq!(t.autocompact, 167_000);
        assert_eq!(t.warning, 147_000);
        assert_eq!(t.blocking, 177_000);
        assert_eq!(t.level(146_999), Level::Ok);
        assert_eq!(t.level(167_000), Level::Autocompact);
        assert_eq!(t.level(177_000), Level::Blocking);
    }

    #[test]
    fn an_override_replaces_the_model_thresholds() {
        let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
        assert_eq!(Thresholds::for_model_or(model, None).autocompact, 167_000);
        let small = Thresholds::for_model_or(model, Some(4_000));
        assert_eq!(small, Thresholds::with_autocompact(4_000));
        assert_eq!((small.autocompact, small.blocking), (4_000, 14_000));
    }

    #[test]
    fn an_exact_count_is_asked_for_within_the_band() {
        let t = Thresholds::with_autocompact(10_000);
        assert_eq!(t.exact_count_from(false), 10_000);
        assert_eq!(t.exact_count_from(true), 9_000);
        assert_eq!(Thresholds::with_autocompact(0).exact_count_from(true), 0);
        let huge = Thresholds::with_autocompact(u64::MAX - AUTOCOMPACT_BUFFER);
        assert!(huge.exact_count_from(true) < huge.autocompact);
    }

    #[test]
    fn the_count_decides_but_never_vetoes_the_blocking_limit() {
        // autocompact 10,000, blocking 20,000
        let t = Thresholds::with_autocompact(10_000);
        assert_eq!(t.blocking, 20_000);
        // the estimate alone
        assert!(!t.autocompact_due(9_999, None));
        assert!(t.autocompact_due(10_000, None));
        // the count says no although the estimate says yes
        assert!(!t.autocompact_due(12_000, Some(9_999)));
        // the count says yes although the estimate says no
        assert!(t.autocompact_due(9_500, Some(10_000)));
        // over the blocking limit by the estimate: compact whatever the count says
        assert!(t.autocompact_due(20_000, Some(1)));
        assert!(!t.autocompact_due(19_999, Some(1)));
    }

    #[test]
    fn blocked_at_and_over_the_limit() {
        let t = Thresholds::with_autocompact(10_000);
        assert_eq!(t.blocked(19_999), None);
        assert_eq!(t.blocked(20_000), Some((20_000, 20_000)));
        assert_eq!(t.blocked(u64::MAX), Some((u64::MAX, 20_000)));
    }
}
