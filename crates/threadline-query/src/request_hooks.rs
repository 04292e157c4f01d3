//! Hooks on the request after normalization: shaping (the synthetic context message, the
//! system-prompt append) and cache planning, in that order.

use threadline_cache::PrefixMemo;
use threadline_wire::MessagesRequest;

#[cfg(doc)]
use threadline_cache::Planner;

/// Changes the normalized request before cache planning: puts the user-context message in
/// front of the messages, appends session context to the system prompt, …
///
/// A closure `FnMut(&mut MessagesRequest)` is a shaper.
pub trait RequestShaper: Send {
    /// Shapes `request`.
    fn shape(&mut self, request: &mut MessagesRequest);
}

impl<F> RequestShaper for F
where
    F: FnMut(&mut MessagesRequest) + Send,
{
    fn shape(&mut self, request: &mut MessagesRequest) {
        self(request)
    }
}

/// Places the prompt-cache markers on the finished request (`threadline-cache`'s planner).
///
/// A closure `FnMut(&mut MessagesRequest)` is a planner.
pub trait CachePlanner: Send {
    /// Places the markers.
    fn plan(&mut self, request: &mut MessagesRequest);
    /// Forgets what was planned before (after a compaction). Default: nothing.
    fn reset(&mut self) {}
    /// Places the markers [`plan`](Self::plan) would place, without recording the request
    /// as sent: for a request that is not the conversation's next one (the autocompact
    /// summary request, a dry run), whose markers land as the next request's would. Default:
    /// [`plan`](Self::plan), right for a planner that keeps no state.
    fn plan_unrecorded(&mut self, request: &mut MessagesRequest) {
        self.plan(request);
    }
    /// Hands over what planning memoized (see [`Planner::take_memo`]), for the planner of
    /// the same conversation's next requests ([`give_memo`](Self::give_memo)). Default: none.
    fn take_memo(&mut self) -> Option<PrefixMemo> {
        None
    }
    /// Starts from `memo` (what [`take_memo`](Self::take_memo) handed over). It must not
    /// change a marker, only save work ([`Planner::set_memo`]). Default: drops it.
    fn give_memo(&mut self, memo: PrefixMemo) {
        drop(memo);
    }
}

impl<F> CachePlanner for F
where
    F: FnMut(&mut MessagesRequest) + Send,
{
    fn plan(&mut self, request: &mut MessagesRequest) {
        self(request)
    }
}

/// Neither shapes nor plans.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unchanged;

impl RequestShaper for Unchanged {
    fn shape(&mut self, _request: &mut MessagesRequest) {}
}

impl CachePlanner for Unchanged {
    fn plan(&mut self, _request: &mut MessagesRequest) {}
}
