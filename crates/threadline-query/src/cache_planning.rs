//! The loop's [`CachePlanner`] backed by `threadline-cache`'s [`Planner`], shared by the runs
//! of a session so the markers of one run's last request are known to the next (and to a
//! forked subagent).

use std::sync::{Arc, Mutex, PoisonError};

use threadline_cache::{LookbackAware, Planner, PrefixMemo};
use threadline_wire::MessagesRequest;

use crate::request_hooks::CachePlanner;

/// Places markers with a planner shared by its clones; [`SharedPlanner::none`] places none.
/// The default shares `Planner::default()` (the lookback-aware strategy).
///
/// ```
/// use threadline_cache::{LookbackAware, Planner};
/// use threadline_query::{CachePlanner as _, SharedPlanner};
/// use threadline_wire::{MessagesRequest, SystemPrompt};
///
/// let mut planner = SharedPlanner::new(Planner::new(LookbackAware));
/// let mut request = MessagesRequest::new("claude-sonnet-4-5", 1024, Vec::new());
/// request.system = Some(SystemPrompt::Text("Be brief. ".repeat(400)));
/// planner.plan(&mut request);
/// let marked = serde_json::to_string(&request).expect("serializes");
/// assert!(marked.contains("cache_control"));
/// assert!(SharedPlanner::none().is_none());
/// // Its clones share it: a fork continues from the markers planned so far.
/// assert!(!planner.forked().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct SharedPlanner(Option<Arc<Mutex<Planner>>>);

impl Default for SharedPlanner {
    fn default() -> Self {
        SharedPlanner::new(Planner::default())
    }
}

impl SharedPlanner {
    /// Shares `planner`.
    pub fn new(planner: Planner) -> SharedPlanner {
        SharedPlanner(Some(Arc::new(Mutex::new(planner))))
    }

    /// Places no markers.
    pub fn none() -> SharedPlanner {
        SharedPlanner(None)
    }

    /// Whether this places no markers.
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }

    /// A planner of its own for a conversation forked from this session (a forked
    /// subagent): its first request keeps this planner's last message marker where the prefix
    /// is unchanged ([`Planner::forked`]). Places none when this places none.
    pub fn forked(&self) -> SharedPlanner {
        self.derived(|planner| planner.forked(LookbackAware))
    }

    /// A fresh default planner, for a conversation of its own (a subagent that is not a
    /// fork), with this one's model table. Places none when this places none.
    pub fn fresh(&self) -> SharedPlanner {
        self.derived(|planner| Planner::default().with_models(planner.models().clone()))
    }

    fn derived(&self, make: impl FnOnce(&Planner) -> Planner) -> SharedPlanner {
        SharedPlanner(self.0.as_ref().map(|shared| {
            let planner = shared.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::new(Mutex::new(make(&planner)))
        }))
    }
}

impl CachePlanner for SharedPlanner {
    fn plan(&mut self, request: &mut MessagesRequest) {
        if let Some(planner) = &self.0 {
            planner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .plan(request);
        }
    }

    fn plan_unrecorded(&mut self, request: &mut MessagesRequest) {
        if let Some(planner) = &self.0 {
            planner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .plan_unrecorded(request);
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

    fn take_memo(&mut self) -> Option<PrefixMemo> {
        self.0.as_ref().map(|planner| {
            planner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take_memo()
        })
    }

    fn give_memo(&mut self, memo: PrefixMemo) {
        if let Some(planner) = &self.0 {
            planner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .set_memo(memo);
        }
    }
}
