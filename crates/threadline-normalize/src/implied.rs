//! The requests a transcript implies: one per assistant response (fragments sharing a request
//! id or an API message id are one response), each the normalized messages before it.
//!
//! A transcript records what the agent saw, not what it sent; this rebuilds the `messages` of
//! each request from the array itself, for tools that replay a session against a model of the
//! API (the prompt-cache simulator, `threadline inspect`). Tools and system prompt are not in
//! a transcript and are left to the caller.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use threadline_message::response_usage::{ResponseUsage, response_key};
use threadline_message::{Message, SystemKind};
use threadline_wire::{Messages, Usage};

use crate::prefix_change::{PrefixChange, PrefixWatch};
use crate::{Normalizer, Options};

/// One request implied by a transcript.
#[derive(Debug, Clone)]
pub struct ImpliedRequest {
    /// What the response's fragments share: its request id (`req_…`), else its API message
    /// id; `None` when the transcript recorded neither.
    pub key: Option<String>,
    /// The messages before the response, normalized with the default [`Options`].
    pub messages: Messages,
    /// When it was sent, in milliseconds since the Unix epoch: the time of the last message
    /// before the response, else of the response.
    pub at_ms: Option<u64>,
    /// The usage the transcript recorded for the response (its first fragment that has one).
    pub recorded: Option<Usage>,
    /// Whether a compaction boundary came since the previous request.
    pub after_compaction: bool,
    /// What changed since the previous request besides the messages (tools reloaded by a
    /// local command, another model): [`crate::prefix_change`].
    pub prefix_changes: Vec<PrefixChange>,
}

/// The requests `messages` implies, in order. API-error responses imply none, and neither
/// does a response at the very start (nothing was sent before it).
///
/// Each request owns a copy of its messages, so the result grows with the square of the
/// session; [`ImpliedRequests`] walks the same requests one at a time, borrowed.
///
/// ```
/// use threadline_message::Message;
/// use threadline_normalize::implied_requests;
/// use threadline_wire::ContentBlock;
///
/// let session = vec![
///     Message::user_text("Hi"),
///     Message::assistant_fragment("msg_01", "claude-sonnet-4-6", vec![ContentBlock::text("Hello")]),
///     Message::assistant_fragment("msg_01", "claude-sonnet-4-6", vec![ContentBlock::text("!")]),
///     Message::user_text("Bye"),
///     Message::assistant_fragment("msg_02", "claude-sonnet-4-6", vec![ContentBlock::text("Bye")]),
/// ];
/// let requests = implied_requests(&session);
/// assert_eq!(requests.len(), 2);
/// assert_eq!(requests[0].key.as_deref(), Some("msg_01"));
/// assert_eq!(requests[0].messages.len(), 1);
/// assert_eq!(requests[1].messages.len(), 3);
/// ```
pub fn implied_requests(messages: &[Message]) -> Vec<ImpliedRequest> {
    let mut walk = ImpliedRequests::new(messages);
    let mut out = Vec::with_capacity(walk.max_requests());
    while let Some(request) = walk.next_request() {
        out.push(ImpliedRequest {
            key: request.key,
            messages: request.messages.clone(),
            at_ms: request.at_ms,
            recorded: request.recorded,
            after_compaction: request.after_compaction,
            prefix_changes: request.prefix_changes,
        });
    }
    out
}

/// One request of an [`ImpliedRequests`] walk: what [`ImpliedRequest`] holds, with the
/// messages borrowed from the walk's normalizer.
#[derive(Debug)]
pub struct ImpliedView<'a> {
    /// What the response's fragments share (see [`ImpliedRequest::key`]).
    pub key: Option<String>,
    /// The messages before the response, normalized with the default [`Options`].
    pub messages: &'a Messages,
    /// How many leading `messages` are the previous request's, unchanged (0 for the first,
    /// and whenever the normalizer had to start over): a caller deriving something per
    /// message keeps it for these.
    pub unchanged: usize,
    /// When it was sent (see [`ImpliedRequest::at_ms`]).
    pub at_ms: Option<u64>,
    /// The usage the transcript recorded for the response.
    pub recorded: Option<Usage>,
    /// Whether a compaction boundary came since the previous request.
    pub after_compaction: bool,
    /// What changed since the previous request besides the messages (see
    /// [`ImpliedRequest::prefix_changes`]); a model switch is seen on the response itself.
    pub prefix_changes: Vec<PrefixChange>,
}

/// The requests a transcript implies, one at a time: each request's messages are the
/// incremental [`Normalizer`]'s, borrowed until the next one, so a walk over a whole session
/// costs time and memory in proportion to the session (not to the sum of its requests).
///
/// ```
/// use threadline_message::Message;
/// use threadline_normalize::ImpliedRequests;
/// use threadline_wire::ContentBlock;
///
/// let session = vec![
///     Message::user_text("Hi"),
///     Message::assistant_fragment("msg_01", "claude-sonnet-4-6", vec![ContentBlock::text("Hello")]),
///     Message::user_text("Bye"),
///     Message::assistant_fragment("msg_02", "claude-sonnet-4-6", vec![ContentBlock::text("Bye")]),
/// ];
/// let mut walk = ImpliedRequests::new(&session);
/// let first = walk.next_request().expect("one");
/// assert_eq!((first.messages.len(), first.unchanged), (1, 0));
/// let second = walk.next_request().expect("two");
/// assert_eq!(second.messages.len(), 3);
/// assert!(walk.next_request().is_none());
/// ```
///
/// A clone walks on from where the original is, on its own; a clone of a new walk is the
/// cheap way to walk the same transcript twice (the recorded usage is shared, not recomputed). The walk is `Send` and `Sync`.
#[derive(Debug, Clone)]
pub struct ImpliedRequests<'s> {
    messages: &'s [Message],
    normalizer: Normalizer,
    /// For each assistant message, the usage of its response (the last fragment's).
    recorded: Arc<[Option<&'s Usage>]>,
    /// How many assistant messages there are, API errors aside: at most one request each.
    responses: usize,
    next: usize,
    previous_key: Option<String>,
    compacted: bool,
    watch: PrefixWatch,
    changes: Vec<PrefixChange>,
}

impl<'s> ImpliedRequests<'s> {
    /// A walk over the requests `messages` implies.
    pub fn new(messages: &'s [Message]) -> Self {
        // Each response's usage is its last fragment's (the earlier ones may carry a
        // streaming placeholder for output).
        let usage = ResponseUsage::of(messages);
        let recorded: Arc<[Option<&Usage>]> =
            messages.iter().map(|m| usage.of_message(m)).collect();
        let responses = messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant(a) if !a.is_api_error))
            .count();
        ImpliedRequests {
            messages,
            normalizer: Normalizer::new(Options::default()),
            recorded,
            responses,
            next: 0,
            previous_key: None,
            compacted: false,
            watch: PrefixWatch::new(),
            changes: Vec::new(),
        }
    }

    /// At most how many requests the whole walk gives (one per assistant message at most;
    /// fewer when fragments share a response): room to reserve for a row per request.
    pub fn max_requests(&self) -> usize {
        self.responses
    }

    /// The next request, or `None` after the last.
    pub fn next_request(&mut self) -> Option<ImpliedView<'_>> {
        let messages = self.messages;
        while let Some(message) = messages.get(self.next) {
            let i = self.next;
            self.next += 1;
            if let Message::System(system) = message
                && matches!(system.kind, SystemKind::CompactBoundary { .. })
            {
                self.compacted = true;
            }
            self.changes.extend(self.watch.observe(message));
            let Message::Assistant(assistant) = message else {
                continue;
            };
            if assistant.is_api_error {
                continue;
            }
            let key = response_key(message).map(str::to_owned);
            if key.is_some() && key == self.previous_key {
                continue;
            }
            self.previous_key.clone_from(&key);
            if i == 0 {
                continue;
            }
            let recorded = self.recorded.get(i).copied().flatten().cloned();
            let after_compaction = std::mem::take(&mut self.compacted);
            self.normalizer.update(&messages[..i]);
            return Some(ImpliedView {
                key,
                unchanged: self.normalizer.unchanged_prefix(),
                messages: self.normalizer.messages(),
                at_ms: millis(&messages[i - 1]).or_else(|| millis(message)),
                recorded,
                after_compaction,
                prefix_changes: std::mem::take(&mut self.changes),
            });
        }
        None
    }
}

/// The message's timestamp in milliseconds since the Unix epoch, when it has a valid one.
fn millis(message: &Message) -> Option<u64> {
    let time = message.header().timestamp.to_system_time()?;
    let since = time.duration_since(UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::ContentBlock;

    fn fragment(id: &str, text: &str) -> Message {
        Message::assistant_fragment(id, "claude-sonnet-4-6", vec![ContentBlock::text(text)])
    }

    #[test]
    fn each_request_is_the_normalized_messages_before_its_response() {
        let session = vec![
            Message::user_text("one"),
            fragment("msg_1", "a"),
            fragment("msg_1", "b"),
            Message::user_text("two"),
            fragment("msg_2", "c"),
        ];
        let requests = implied_requests(&session);
        let keys: Vec<_> = requests.iter().map(|r| r.key.as_deref()).collect();
        assert_eq!(keys, [Some("msg_1"), Some("msg_2")]);
        for (request, end) in requests.iter().zip([1, 4]) {
            assert_eq!(
                request.messages,
                crate::normalize(&session[..end], &Options::default()).messages
            );
            assert!(!request.after_compaction);
            assert_eq!(request.recorded, None);
        }
    }

    #[test]
    fn the_walk_gives_each_request_and_what_it_shares_with_the_one_before() {
        // Images past the media cap make later requests replace the oldest ones in place,
        // an id repeated across the boundary makes the normalizer start over: `unchanged`
        // must stay true through both.
        let mut session = Vec::new();
        for turn in 0..160 {
            session.push(Message::user_blocks(vec![
                ContentBlock::text(format!("turn {turn}")),
                crate::testing::image(),
            ]));
            session.push(fragment(&format!("msg_{turn}"), "a"));
            if turn == 90 {
                session.push(session[0].clone());
            }
        }
        let batch = implied_requests(&session);
        let mut walk = ImpliedRequests::new(&session);
        let mut previous: Vec<threadline_wire::MessageParam> = Vec::new();
        for (index, expected) in batch.iter().enumerate() {
            let view = walk.next_request().expect("as many requests");
            assert_eq!(view.messages, &expected.messages);
            assert_eq!(view.key, expected.key);
            assert!(view.unchanged <= previous.len().min(view.messages.len()));
            assert_eq!(
                view.messages.to_vec()[..view.unchanged],
                previous[..view.unchanged]
            );
            if (1..50).contains(&index) {
                // Below the cap, each request keeps all but the last two turns.
                assert!(view.unchanged + 4 >= view.messages.len(), "{index}");
            }
            previous = view.messages.to_vec();
        }
        assert!(walk.next_request().is_none());
    }

    #[test]
    fn each_request_carries_the_prefix_changes_since_the_previous_one() {
        let on = |id: &str, model: &str| {
            Message::assistant_fragment(id, model, vec![ContentBlock::text("ok")])
        };
        let session = vec![
            Message::user_text("one"),
            on("msg_1", "claude-opus-4-6"),
            Message::user_text("<command-name>/mcp</command-name>"),
            Message::user_text(
                "<local-command-stdout>Reconnected to tidewave.</local-command-stdout>",
            ),
            Message::user_text("two"),
            on("msg_2", "claude-opus-4-6"),
            on("msg_2", "claude-opus-4-6"),
            Message::user_text("three"),
            on("msg_3", "claude-sonnet-4-6"),
        ];
        let changes: Vec<Vec<PrefixChange>> = implied_requests(&session)
            .into_iter()
            .map(|r| r.prefix_changes)
            .collect();
        assert_eq!(
            changes,
            [
                vec![],
                vec![PrefixChange::ToolsReloaded {
                    command: "/mcp".into(),
                    output: "Reconnected to tidewave.".into()
                }],
                vec![PrefixChange::ModelSwitched {
                    from: "claude-opus-4-6".into(),
                    to: "claude-sonnet-4-6".into()
                }],
            ]
        );
    }

    #[test]
    fn the_walk_can_move_to_another_thread() {
        fn send_and_sync<T: Send + Sync>(_: &T) {}
        let session = vec![Message::user_text("one"), fragment("msg_1", "a")];
        send_and_sync(&ImpliedRequests::new(&session));
    }

    #[test]
    fn a_response_first_implies_nothing() {
        assert!(implied_requests(&[fragment("msg_1", "a")]).is_empty());
        assert!(implied_requests(&[]).is_empty());
    }
}
