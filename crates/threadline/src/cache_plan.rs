//! The loop's [`CachePlanner`] backed by `threadline-cache`'s [`Planner`], shared by the runs
//! of an agent so the markers of one run's last request are known to the next.

use std::sync::{Arc, Mutex, PoisonError};

use threadline_cache::Planner;
use threadline_query::CachePlanner;
use threadline_wire::MessagesRequest;

/// Places markers with a shared planner; `None` places none.
#[derive(Debug, Clone)]
pub(crate) struct SharedPlanner(pub(crate) Option<Arc<Mutex<Planner>>>);

impl CachePlanner for SharedPlanner {
    fn plan(&mut self, request: &mut MessagesRequest) {
        if let Some(planner) = &self.0 {
            planner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .plan(request);
        }
    }

    fn reset(&mut self) {
        if let Some(planner) = &self.0 {
            planner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .reset();
        }
    }
}
