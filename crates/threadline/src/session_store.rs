//! The [`Agent`](crate::Agent)'s link to a [`SessionStore`]: every message a run yields is
//! appended to the session's key before the caller sees it, and a session is read back from
//! the store to resume it.
//!
//! Each message is stored as its transcript line (the same JSON the JSONL transcript
//! holds, key-shaped secrets redacted) with a top-level `"uuid"` (the message's id) added,
//! the id the store's idempotent append goes by: a retried append writes nothing twice. A
//! message a context step changed in place is stored again under a uuid of its own
//! ([`rewrite_entry`]), and reads back in its first record's place.

use std::sync::Arc;

use futures::StreamExt as _;
use threadline_message::Message;
use threadline_query::Event;
use threadline_store::{Entry, SessionKey, SessionStore, StoreError};

use crate::agent::AgentRun;

/// The session's store could not be read, or holds what is not a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionStoreError {
    /// The store failed.
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    /// An entry of the session is not a message this crate wrote (or can read).
    #[error("session store: entry {index} of the session is not a message: {source}")]
    NotAMessage {
        /// Its position in the session (from 0).
        index: usize,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A message cannot be stored (it does not serialize, or is over the store's entry
    /// limit).
    #[error("session store: message {id} cannot be stored: {reason}")]
    Unstorable {
        /// The message's id.
        id: String,
        /// Why.
        reason: String,
    },
}

/// A store and the session key the agent appends to.
#[derive(Clone)]
pub(crate) struct StoreLink {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) key: SessionKey,
}

impl std::fmt::Debug for StoreLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreLink")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// `message` as a store entry: its JSON line with `"uuid"` added, secrets redacted.
pub fn message_entry(message: &Message) -> Result<Entry, SessionStoreError> {
    entry_with_uuid(message, message.id().as_str().to_owned())
}

/// A message a context step changed in place, recorded again as a store entry: its line as
/// [`message_entry`] makes it, under a `"uuid"` of its own (the message's id, `~`, and a
/// fresh id), so that the store keeps it beside the earlier records of the message — even
/// when a later rewrite gives back an earlier form. Read back, the last record of an id
/// stands where the first one stood ([`load_session`]).
pub fn rewrite_entry(message: &Message) -> Result<Entry, SessionStoreError> {
    let uuid = format!(
        "{}~{}",
        message.id().as_str(),
        threadline_message::MessageId::random().as_str()
    );
    entry_with_uuid(message, uuid)
}

/// `message`'s JSON line with `"uuid": uuid` added, secrets redacted.
fn entry_with_uuid(message: &Message, uuid: String) -> Result<Entry, SessionStoreError> {
    let unstorable = |reason: String| SessionStoreError::Unstorable {
        id: message.id().to_string(),
        reason,
    };
    let mut bytes = serde_json::to_vec(message).map_err(|e| unstorable(e.to_string()))?;
    if bytes.last() == Some(&b'}') {
        bytes.pop();
        bytes.extend_from_slice(b",\"uuid\":");
        serde_json::to_writer(&mut bytes, &uuid).map_err(|e| unstorable(e.to_string()))?;
        bytes.push(b'}');
    }
    let bytes = threadline_wire::secret::redact_key_shapes_in_bytes(&bytes).into_owned();
    Entry::new(bytes).map_err(|e| unstorable(e.to_string()))
}

/// The messages of `key` in `store`, in order (empty for a session never written); a
/// message recorded again (rewritten in place, [`rewrite_entry`]) stands where its first
/// record stood ([`fold_rewrites`](threadline_message::fold_rewrites)).
pub async fn load_session(
    store: &dyn SessionStore,
    key: &SessionKey,
) -> Result<Vec<Message>, SessionStoreError> {
    let entries = store.load(key).await?.unwrap_or_default();
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            serde_json::from_slice::<Message>(entry.bytes())
                .map_err(|source| SessionStoreError::NotAMessage { index, source })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(threadline_message::fold_rewrites)
}

/// `events` with every message appended to the store before it is passed on; a failed
/// append is a warning after the message (the run goes on, as with the transcript).
pub(crate) fn persist(events: AgentRun, link: StoreLink) -> AgentRun {
    events
        .then(move |event| {
            let link = link.clone();
            async move {
                let entry = match &event {
                    Event::Message(message) => message_entry(message),
                    Event::Rewritten { message, .. } => rewrite_entry(message),
                    _ => return vec![event],
                };
                let appended = match entry {
                    Ok(entry) => link
                        .store
                        .append(&link.key, std::slice::from_ref(&entry))
                        .await
                        .map(drop)
                        .map_err(SessionStoreError::from),
                    Err(error) => Err(error),
                };
                match appended {
                    Ok(()) => vec![event],
                    Err(error) => vec![
                        event,
                        Event::Warning(format!("{error}; the message is not stored")),
                    ],
                }
            }
        })
        .flat_map(futures::stream::iter)
        .boxed()
}

#[cfg(test)]
mod tests {
    use threadline_wire::ContentBlock;

    use super::*;

    #[test]
    fn a_message_round_trips_through_its_entry_with_its_id_as_uuid() {
        let messages = [
            Message::user_text("hi"),
            Message::assistant_fragment(
                "msg_1",
                "claude-sonnet-4-5",
                vec![ContentBlock::text("hello")],
            ),
        ];
        for message in messages {
            let entry = message_entry(&message).expect("storable");
            assert_eq!(entry.id(), Some(message.id().as_str()));
            let back: Message = serde_json::from_slice(entry.bytes()).expect("parses back");
            assert_eq!(back, message);
        }
    }

    #[test]
    fn every_rewrite_is_stored_and_the_last_one_is_read_back_in_place() {
        let store = threadline_store::MemoryStore::new();
        let key = SessionKey::new("p", "s").expect("key");
        let first = Message::user_text("a long result");
        let second = Message::user_text("next");
        let with_text = |text: &str| {
            let mut message = first.clone();
            if let Message::User(user) = &mut message {
                user.content = vec![ContentBlock::text(text)];
            }
            message
        };
        // Rewritten to a preview, then to something else, then back to the preview.
        let preview = with_text("a preview");
        let entries = [
            message_entry(&first),
            message_entry(&second),
            rewrite_entry(&preview),
            rewrite_entry(&with_text("cleared")),
            rewrite_entry(&preview),
        ]
        .map(|entry| entry.expect("storable"));
        let uuids: std::collections::HashSet<_> = entries.iter().map(|e| e.id()).collect();
        assert_eq!(uuids.len(), entries.len(), "each record has its own uuid");
        futures::executor::block_on(async {
            store.append(&key, &entries).await.expect("append");
            let loaded = load_session(&store, &key).await.expect("loads");
            assert_eq!(loaded, [preview.clone(), second.clone()]);
        });
    }

    #[test]
    fn secrets_are_redacted_in_the_entry() {
        let message = Message::user_text("my key is sk-ant-api03-abcdefghijklmnop");
        let entry = message_entry(&message).expect("storable");
        let text = String::from_utf8_lossy(entry.bytes());
        assert!(!text.contains("abcdefghijklmnop"), "{text}");
    }

    #[test]
    fn an_entry_that_is_not_a_message_is_a_typed_error() {
        let store = threadline_store::MemoryStore::new();
        let key = SessionKey::new("p", "s").expect("key");
        let entry = Entry::new(&br#"{"uuid":"x","something":"else"}"#[..]).expect("entry");
        futures::executor::block_on(async {
            store.append(&key, &[entry]).await.expect("append");
            match load_session(&store, &key).await {
                Err(SessionStoreError::NotAMessage { index: 0, .. }) => {}
                other => panic!("not the typed error: {other:?}"),
            }
        });
    }
}
