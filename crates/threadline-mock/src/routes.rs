//! Routes: steps answered per conversation instead of in one order across all connections.
//! A request whose `system` or opening user turn (the messages before the first assistant
//! message) holds a route's marker (a substring of their JSON) is answered from that route's
//! own steps; any other request from the scenario's main list. Parallel conversations over
//! one server (subagents, sessions) then each get their script whatever the order their
//! requests arrive in. A route takes its steps in order, or by turn
//! ([`AnswerBy`]): its own `answer_by`, else the scenario's.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use threadline_wire::{MessagesRequest, Role};

use crate::scenario::{AnswerBy, Step};

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
    /// How its requests pick their step (`None`: as the scenario's `answer_by` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_by: Option<AnswerBy>,
}

impl Route {
    /// A route of `steps` for requests holding `marker`.
    pub fn new(marker: impl Into<String>, steps: impl IntoIterator<Item = Step>) -> Route {
        Route {
            marker: marker.into(),
            steps: steps.into_iter().collect(),
            answer_by: None,
        }
    }

    /// This route answering as `answer_by` says, whatever the scenario's.
    pub fn answered_by(mut self, answer_by: AnswerBy) -> Route {
        self.answer_by = Some(answer_by);
        self
    }
}

/// A request's position in its conversation: how many of its messages are the assistant's
/// (a trailing one, a prefill, included). The step [`AnswerBy::Turn`] answers with.
pub fn turn_of(request: &MessagesRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// The JSON of the request's `system` and opening user turn (the messages before the first
/// assistant message): where markers are looked for, and what identifies a conversation.
pub(crate) fn opening_text(request: &MessagesRequest) -> String {
    let mut text = serde_json::to_string(&request.system).unwrap_or_default();
    for message in request
        .messages
        .iter()
        .take_while(|m| m.role != Role::Assistant)
    {
        text.push_str(&serde_json::to_string(message).unwrap_or_default());
    }
    text
}

/// The index of the first route whose marker is in `opening` (from [`opening_text`]).
pub(crate) fn matching(routes: &[Route], opening: &str) -> Option<usize> {
    routes
        .iter()
        .position(|r| opening.contains(r.marker.as_str()))
}

/// The order cursors of the routes of a running server.
#[derive(Debug, Default)]
pub(crate) struct RouteCursors(Vec<AtomicU64>);

impl RouteCursors {
    pub(crate) fn new(routes: &[Route]) -> RouteCursors {
        RouteCursors(routes.iter().map(|_| AtomicU64::new(0)).collect())
    }

    /// Takes the next step index of route `index` (in order).
    pub(crate) fn next(&self, index: usize) -> usize {
        self.0.get(index).map_or(usize::MAX, |cursor| {
            usize::try_from(cursor.fetch_add(1, Ordering::Relaxed)).unwrap_or(usize::MAX)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn request(messages: Value) -> MessagesRequest {
        serde_json::from_value(json!({
            "model": "claude-sonnet-4-6", "max_tokens": 16, "messages": messages,
        }))
        .expect("a request")
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn assistant(text: &str) -> Value {
        json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
    }

    #[test]
    fn the_turn_counts_the_assistant_messages() {
        assert_eq!(turn_of(&request(json!([user("Hi")]))), 0);
        let after_two = request(json!([
            user("Hi"),
            assistant("a"),
            user("b"),
            assistant("c"),
            user("d")
        ]));
        assert_eq!(turn_of(&after_two), 2);
        // Tool results are user messages: they do not count.
        let tool_round = request(json!([
            user("Hi"),
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]},
        ]));
        assert_eq!(turn_of(&tool_round), 1);
    }

    #[test]
    fn a_trailing_assistant_message_counts_too() {
        // A prefill on the first request: step 1.
        assert_eq!(turn_of(&request(json!([user("Hi"), assistant("{")]))), 1);
        // A paused answer (step 0's) sent back to be continued: step 1.
        let paused = request(json!([user("Search"), assistant("searching")]));
        assert_eq!(turn_of(&paused), 1);
    }

    #[test]
    fn a_summary_request_has_the_step_of_the_request_it_precedes() {
        // The autocompact's request: the same messages, its prompt added to the last user
        // message. It counts as the request the loop was about to send.
        let main = request(json!([user("Hi"), assistant("a"), user("go on")]));
        let summary = request(json!([
            user("Hi"),
            assistant("a"),
            {"role": "user", "content": [{"type": "text", "text": "go on"}, {"type": "text", "text": "Summarize."}]},
        ]));
        assert_eq!(turn_of(&main), 1);
        assert_eq!(turn_of(&summary), 1);
        // After the compaction the count starts again from the compacted messages.
        assert_eq!(turn_of(&request(json!([user("Summary: …\n\ngo on")]))), 0);
    }

    #[test]
    fn markers_are_looked_for_in_the_system_and_the_opening_turn_only() {
        let routes = [Route::new("[a]", []), Route::new("[b]", [])];
        let in_opening = request(json!([user("[b] go"), assistant("[a]"), user("[a]")]));
        assert_eq!(matching(&routes, &opening_text(&in_opening)), Some(1));
        let mut in_system = request(json!([user("go")]));
        in_system.system = serde_json::from_value(json!("[a] system")).expect("a system");
        assert_eq!(matching(&routes, &opening_text(&in_system)), Some(0));
        let later = request(json!([user("go"), assistant("[a]"), user("[b]")]));
        assert_eq!(matching(&routes, &opening_text(&later)), None);
    }
}
