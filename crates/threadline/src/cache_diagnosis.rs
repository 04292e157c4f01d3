//! The loop's [`BreakDetector`] backed by `threadline-cache`'s [`RequestDivergence`], shared
//! by the runs of an agent so a run's first request is compared with the previous run's last.

use std::sync::{Arc, Mutex, PoisonError};

use threadline_cache::breaks::RequestDivergence;
use threadline_query::{BreakDetector, Prediction};
use threadline_wire::MessagesRequest;

/// threadline's own break detection, at the level the API's cache diagnostics report.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedDivergence(Arc<Mutex<RequestDivergence>>);

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
