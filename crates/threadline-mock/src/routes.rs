//! Routes: steps answered per conversation instead of in one order across all connections.
//! A request whose `system` or opening user turn (the messages before the first assistant
//! message) holds a route's marker (a substring of their JSON) is answered from that route's own steps, in order; any other request from the
//! scenario's main list. Parallel conversations over one server (subagents) then each get
//! their script whatever the order their requests arrive in.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use threadline_wire::MessagesRequest;

use crate::scenario::Step;

/// One conversation's steps, chosen by a marker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Route {
    /// The text whose presence in the request's `system` or opening user turn picks the
    /// route.
    pub marker: String,
    /// Its answers, in order (once exhausted: the "no more answers" text).
    pub steps: Vec<Step>,
}

impl Route {
    /// A route of `steps` for requests holding `marker`.
    pub fn new(marker: impl Into<String>, steps: impl IntoIterator<Item = Step>) -> Route {
        Route {
            marker: marker.into(),
            steps: steps.into_iter().collect(),
        }
    }
}

/// The cursors of the routes of a running server.
#[derive(Debug, Default)]
pub(crate) struct RouteCursors(Vec<AtomicU64>);

impl RouteCursors {
    pub(crate) fn new(routes: &[Route]) -> RouteCursors {
        RouteCursors(routes.iter().map(|_| AtomicU64::new(0)).collect())
    }

    /// The step of the first route `request` matches, or `None` (the main list answers).
    pub(crate) fn take(&self, routes: &[Route], request: &MessagesRequest) -> Option<Step> {
        if routes.is_empty() {
            return None;
        }
        let mut text = serde_json::to_string(&request.system).unwrap_or_default();
        for message in request
            .messages
            .iter()
            .take_while(|m| m.role != threadline_wire::Role::Assistant)
        {
            text.push_str(&serde_json::to_string(message).unwrap_or_default());
        }
        let index = routes
            .iter()
            .position(|r| text.contains(r.marker.as_str()))?;
        let cursor = self.0.get(index)?;
        let n = usize::try_from(cursor.fetch_add(1, Ordering::Relaxed)).unwrap_or(usize::MAX);
        Some(
            routes[index]
                .steps
                .get(n)
                .cloned()
                .unwrap_or_else(|| Step::text("(the mock's route has no more answers)")),
        )
    }
}
