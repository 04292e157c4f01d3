//! Forking a session at a message.

use crate::header::{Header, MessageId};
use crate::message::Message;
use crate::session_ops::error::SessionOpError;
use crate::session_ops::ids::derive_id;
use crate::system::SystemKind;

/// A forked session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Forked {
    /// The new session: its [`SystemKind::ForkedFrom`] record first, then the kept messages
    /// with fresh ids.
    pub messages: Vec<Message>,
    /// The source id of each kept message (of `messages[1..]`, in order).
    pub source_ids: Vec<MessageId>,
}

impl Forked {
    /// The kept messages, without the `forked_from` record.
    pub fn kept(&self) -> &[Message] {
        self.messages.get(1..).unwrap_or_default()
    }
}

/// The id a fork of `source_session` at `at` gives the message whose id was `old`.
fn fresh_id(source_session: &str, at: &MessageId, old: &MessageId) -> MessageId {
    derive_id(&["fork", source_session, at.as_str(), old.as_str()])
}

/// Forks `messages` (the session `source_session`) at the message `at`: a new session holding
/// every message up to and including the first one with id `at`, each with a fresh id, after
/// a [`SystemKind::ForkedFrom`] record naming the source.
///
/// The fresh ids are derived from `source_session`, `at` and the old id (see
/// [`derive_id`]): forking the same session at the same message twice gives the same
/// messages, and two messages that shared an id (a replayed copy) still share one. References
/// to ids inside kept messages — a tombstone's `retracts`, a compact boundary's
/// `last_message_id` — go through the same map. Nothing else changes: content blocks
/// (tool-use ids, thinking signatures, text), timestamps and every other field are kept as
/// they are. The record has an id derived the same way and the first kept message's
/// timestamp (so the fork starts when its source did).
///
/// The error is [`SessionOpError::UnknownMessage`] when no message has id `at`.
pub fn fork(
    messages: &[Message],
    at: &MessageId,
    source_session: &str,
) -> Result<Forked, SessionOpError> {
    let Some(end) = messages.iter().position(|m| m.id() == at) else {
        return Err(SessionOpError::UnknownMessage {
            session: source_session.to_owned(),
            id: at.clone(),
        });
    };
    let kept = &messages[..=end];
    let map = |old: &MessageId| fresh_id(source_session, at, old);
    let record = Message::system(SystemKind::ForkedFrom {
        session: source_session.to_owned(),
        message: at.clone(),
    })
    .with_header(Header {
        id: derive_id(&["forked_from", source_session, at.as_str()]),
        timestamp: kept[0].header().timestamp.clone(),
    });
    let mut out = Vec::with_capacity(kept.len() + 1);
    out.push(record);
    out.extend(kept.iter().map(|message| remap(message, &map)));
    Ok(Forked {
        messages: out,
        source_ids: kept.iter().map(|m| m.id().clone()).collect(),
    })
}

/// `message` with its id and the ids it refers to mapped through `map`.
fn remap(message: &Message, map: &impl Fn(&MessageId) -> MessageId) -> Message {
    let header = Header {
        id: map(message.id()),
        timestamp: message.header().timestamp.clone(),
    };
    let mut message = message.clone().with_header(header);
    match &mut message {
        Message::Tombstone(tombstone) => tombstone.retracts = map(&tombstone.retracts),
        Message::System(system) => {
            if let SystemKind::CompactBoundary {
                last_message_id: Some(last),
                ..
            } = &mut system.kind
            {
                *last = map(last);
            }
        }
        _ => {}
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::CompactTrigger;
    use threadline_wire::ContentBlock;

    fn at(n: u32) -> Header {
        Header::with(format!("m{n}"), format!("2026-01-01T00:00:{n:02}Z"))
    }

    #[test]
    fn references_follow_the_ids_and_content_stays() {
        let thinking: ContentBlock =
            serde_json::from_str(r#"{"type":"thinking","thinking":"hmm","signature":"sig=="}"#)
                .expect("a thinking block");
        let session = vec![
            Message::user_text("hi").with_header(at(1)),
            Message::assistant(vec![thinking, ContentBlock::text("partial")]).with_header(at(2)),
            Message::tombstone(MessageId::from("m2")).with_header(at(3)),
            Message::system(SystemKind::CompactBoundary {
                trigger: CompactTrigger::Manual,
                pre_tokens: 10,
                last_message_id: Some(MessageId::from("m1")),
            })
            .with_header(at(4)),
            Message::user_text("after").with_header(at(5)),
        ];
        let forked = fork(&session, &MessageId::from("m4"), "src").expect("m4 is there");
        let kept = forked.kept();
        assert_eq!(kept.len(), 4);
        let Message::Tombstone(tombstone) = &kept[2] else {
            panic!("a tombstone")
        };
        assert_eq!(&tombstone.retracts, kept[1].id());
        let Message::System(boundary) = &kept[3] else {
            panic!("a boundary")
        };
        assert!(matches!(
            &boundary.kind,
            SystemKind::CompactBoundary { last_message_id: Some(last), .. } if last == kept[0].id()
        ));
        // The assistant's content is the same, signature included.
        let (Message::Assistant(old), Message::Assistant(new)) = (&session[1], &kept[1]) else {
            panic!("assistants")
        };
        assert_eq!(old.content, new.content);
        assert_eq!(
            forked.messages[0].header().timestamp,
            session[0].header().timestamp
        );
        assert_eq!(forked.source_ids[3], MessageId::from("m4"));
    }

    #[test]
    fn an_unknown_fork_point_is_an_error() {
        let session = vec![Message::user_text("hi").with_header(at(1))];
        let error = fork(&session, &MessageId::from("nope"), "src").expect_err("unknown");
        assert!(error.is_unknown_message());
        assert!(fork(&[], &MessageId::from("m1"), "src").is_err());
    }

    #[test]
    fn different_sources_or_points_give_different_ids() {
        let session = vec![
            Message::user_text("a").with_header(at(1)),
            Message::user_text("b").with_header(at(2)),
        ];
        let one = fork(&session, &MessageId::from("m2"), "s1").expect("fork");
        let two = fork(&session, &MessageId::from("m2"), "s2").expect("fork");
        let three = fork(&session, &MessageId::from("m1"), "s1").expect("fork");
        assert_ne!(one.kept()[0].id(), two.kept()[0].id());
        assert_ne!(one.kept()[0].id(), three.kept()[0].id());
    }
}
