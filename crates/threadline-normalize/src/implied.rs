//! The requests a transcript implies: one per assistant response (fragments sharing a request
//! id or an API message id are one response), each the normalized messages before it.
//!
//! A transcript records what the agent saw, not what it sent; this rebuilds the `messages` of
//! each request from the array itself, for tools that replay a session against a model of the
//! API (the prompt-cache simulator, `threadline inspect`). Tools and system prompt are not in
//! a transcript and are left to the caller.

use std::time::UNIX_EPOCH;

use threadline_message::{Message, SystemKind};
use threadline_wire::{MessageParam, Usage};

use crate::{Normalizer, Options};

/// One request implied by a transcript.
#[derive(Debug, Clone)]
pub struct ImpliedRequest {
    /// What the response's fragments share: its request id (`req_…`), else its API message
    /// id; `None` when the transcript recorded neither.
    pub key: Option<String>,
    /// The messages before the response, normalized with the default [`Options`].
    pub messages: Vec<MessageParam>,
    /// When it was sent, in milliseconds since the Unix epoch: the time of the last message
    /// before the response, else of the response.
    pub at_ms: Option<u64>,
    /// The usage the transcript recorded for the response (its first fragment that has one).
    pub recorded: Option<Usage>,
    /// Whether a compaction boundary came since the previous request.
    pub after_compaction: bool,
}

/// The requests `messages` implies, in order. API-error responses imply none, and neither
/// does a response at the very start (nothing was sent before it).
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
    let mut normalizer = Normalizer::new(Options::default());
    let mut out = Vec::new();
    let mut previous_key: Option<String> = None;
    let mut compacted = false;
    for (i, message) in messages.iter().enumerate() {
        if let Message::System(system) = message
            && matches!(system.kind, SystemKind::CompactBoundary { .. })
        {
            compacted = true;
        }
        let Message::Assistant(assistant) = message else {
            continue;
        };
        if assistant.is_api_error {
            continue;
        }
        let key = response_key(message);
        if key.is_some() && key == previous_key {
            continue;
        }
        previous_key.clone_from(&key);
        if i == 0 {
            continue;
        }
        let recorded = messages[i..]
            .iter()
            .filter_map(|m| match m {
                Message::Assistant(a) if response_key(m) == key => a.usage.as_deref().cloned(),
                _ => None,
            })
            .next();
        out.push(ImpliedRequest {
            messages: normalizer.update(&messages[..i]).to_vec(),
            at_ms: millis(&messages[i - 1]).or_else(|| millis(message)),
            recorded,
            after_compaction: std::mem::take(&mut compacted),
            key,
        });
    }
    out
}

/// An assistant message's request id, else its API message id.
fn response_key(message: &Message) -> Option<String> {
    match message {
        Message::Assistant(a) => a.request_id.clone().or_else(|| a.api_message_id.clone()),
        _ => None,
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
    fn a_response_first_implies_nothing() {
        assert!(implied_requests(&[fragment("msg_1", "a")]).is_empty());
        assert!(implied_requests(&[]).is_empty());
    }
}
