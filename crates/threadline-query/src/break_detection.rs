//! The loop's [`BreakDetector`] backed by `threadline-cache`'s [`RequestDivergence`], shared
//! by the runs of a session so a run's first request is compared with the previous run's
//! last.

use std::sync::{Arc, Mutex, PoisonError};

use threadline_cache::breaks::RequestDivergence;
use threadline_wire::MessagesRequest;

use crate::cache_diagnosis::{BreakDetector, Prediction};

/// threadline's own break detection, at the level the API's cache diagnostics report
/// (`Query::with_break_detector`); clones share what was seen.
#[derive(Debug, Clone, Default)]
pub struct SharedDivergence(Arc<Mutex<RequestDivergence>>);

impl BreakDetector for SharedDivergence {
    fn observe(&mut self, request: &MessagesRequest) -> Prediction {
        let seen = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(request);
        match seen {
            None => Prediction::Unknown,
            Some(None) => Prediction::NoDivergence,
            Some(Some(found)) => found
                .cause
                .prompt_part()
                .map_or(Prediction::NoDivergence, Prediction::Changed),
        }
    }
}
