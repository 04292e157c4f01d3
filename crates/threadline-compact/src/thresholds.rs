//! When compaction triggers, from the model table.
//!
//! The effective window keeps room for the answer: `window − min(max_output, 20,000)`.
//! Autocompact triggers 13,000 tokens below it (167,000 on a 200k model with 64k output), a
//! warning 20,000 tokens before that, and the blocking limit (refuse to send; compact first)
//! 3,000 tokens below the effective window.

use threadline_wire::model::Model;

/// The most output tokens reserved from the window for the answer.
pub const OUTPUT_RESERVE_CAP: u64 = 20_000;
/// The room left below the effective window when autocompact triggers.
pub const AUTOCOMPACT_BUFFER: u64 = 13_000;
/// How far below the autocompact threshold the warning starts.
pub const WARNING_BUFFER: u64 = 20_000;
/// The room left below the effective window at the blocking limit.
pub const BLOCKING_BUFFER: u64 = 3_000;

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
}
