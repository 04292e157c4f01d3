//! The token-budget continuation: when the user asked for a lot of output ("+500k"), the
//! loop keeps the model working until the budget is nearly spent or the model stops making
//! progress.

use serde::{Deserialize, Serialize};

/// A target for the output tokens of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenBudget {
    /// The output tokens wanted.
    pub target: u64,
    /// At most this many continuations.
    pub max_continuations: u32,
}

impl TokenBudget {
    /// A budget of `target` output tokens, with at most 20 continuations.
    pub fn new(target: u64) -> TokenBudget {
        TokenBudget {
            target,
            max_continuations: 20,
        }
    }
}

/// The continuation message when the run should go on, `None` when it may end. `spent` is
/// the run's output so far, `at_last` its value at the previous continuation.
pub(crate) fn continuation(
    budget: &TokenBudget,
    spent: u64,
    at_last: u64,
    continuations: u32,
) -> Option<String> {
    if budget.target == 0 || continuations >= budget.max_continuations {
        return None;
    }
    if spent.saturating_mul(100)
        >= budget
            .target
            .saturating_mul(TokenBudget::COMPLETION_THRESHOLD_PERCENT)
    {
        return None;
    }
    if continuations >= 3 && spent.saturating_sub(at_last) < TokenBudget::DIMINISHING_RETURNS_TOKENS
    {
        return None;
    }
    let percent = spent.saturating_mul(100) / budget.target;
    Some(format!(
        "Stopped at {percent}% of the output token target ({spent} / {}). Keep working — do not summarize.",
        budget.target
    ))
}

impl TokenBudget {
    /// The share of the target after which the run may end.
    pub const COMPLETION_THRESHOLD_PERCENT: u64 = 90;

    /// After three continuations, one that produced fewer output tokens than this means the
    /// model has nothing left to add.
    pub const DIMINISHING_RETURNS_TOKENS: u64 = 500;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continues_below_the_threshold_and_stops_above() {
        let b = TokenBudget::new(1000);
        assert_eq!(
            continuation(&b, 100, 0, 0).as_deref(),
            Some(
                "Stopped at 10% of the output token target (100 / 1000). Keep working — do not summarize."
            )
        );
        assert_eq!(continuation(&b, 900, 0, 0), None);
    }

    #[test]
    fn stops_on_diminishing_returns_and_at_the_cap() {
        let b = TokenBudget::new(100_000);
        assert!(continuation(&b, 2000, 1900, 2).is_some());
        assert_eq!(continuation(&b, 2000, 1900, 3), None);
        assert_eq!(continuation(&b, 2000, 0, 20), None);
        assert_eq!(continuation(&TokenBudget::new(0), 0, 0, 0), None);
    }
}
