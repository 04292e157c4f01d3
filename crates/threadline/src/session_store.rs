//! The [`Agent`](crate::Agent)'s link to a [`SessionStore`]: every message a run yields is
//! appended to the session's key before the caller sees it, and a session is read back from
//! the store to resume it.
//!
//! Each message is stored as its transcript line (the same JSON the JSONL transcript
//! holds, key-shaped secrets redacted) with a top-level `"uuid"` (the message's id) added,
//! the id the store's idempotent append goes by: a retried append writes nothing twice. A
//! message appended again under its id — a compaction keeps the latest messages after its
//! summary as copies — is stored under the id and its occurrence (`id#2`, …; the next one no
//! entry has yet, since an id may itself read `a#2`), or the store would take it for a retry
//! and skip it. A message a context step changed in place is
//! stored again under a uuid of its own, marked as the rewrite of its position
//! ([`rewrite_entry`]), and reads back in that place.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use threadline_message::{Message, MessageId};
use threadline_query::Event;
use threadline_store::{Entry, SessionKey, SessionStore, StoreError};
use threadline_wire::secret::redact_key_shapes;

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
    /// The uuids of the key's entries, as far as this agent knows (what it resumed, and
    /// what it appended since).
    uuids: Arc<Mutex<Uuids>>,
}

impl StoreLink {
    pub(crate) fn new(store: Arc<dyn SessionStore>, key: SessionKey) -> Self {
        StoreLink {
            store,
            key,
            uuids: Arc::default(),
        }
    }

    /// Notes the uuids the key's entries have (read by [`resume`](crate::AgentBuilder::resume)):
    /// none is given again, whatever the history they read back as.
    pub(crate) fn note_stored(&self, stored: impl IntoIterator<Item = String>) {
        let mut uuids = self.uuids.lock().unwrap_or_else(PoisonError::into_inner);
        uuids.used.extend(stored);
    }

    /// Notes `messages` (the history an agent starts from) as appended, under the uuids
    /// [`appended_entry`](Self::appended_entry) gave them. Counting a message the key does
    /// not hold only skips a number; missing one the key holds would make its copy look like
    /// a retried append, unless the key's own uuids were noted ([`note_stored`](Self::note_stored)).
    pub(crate) fn note_loaded(&self, messages: &[Message]) {
        let mut uuids = self.uuids.lock().unwrap_or_else(PoisonError::into_inner);
        for message in messages {
            uuids.next(message.id());
        }
    }

    /// The entry of `message`, appended to the history: under its id for the first record
    /// of the id, under the id and its occurrence for a copy (`id#2`, …), in either case the
    /// next of these no entry was given (a message whose id is `a#2` after a copy of `a`
    /// is stored as `a#2#2`).
    pub(crate) fn appended_entry(&self, message: &Message) -> Result<Entry, SessionStoreError> {
        let uuid = self
            .uuids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next(message.id());
        entry_with_uuid(message, uuid, None)
    }

    /// [`rewrite_entry`], under a uuid no entry of the key this agent knows has.
    pub(crate) fn rewritten_entry(
        &self,
        message: &Message,
        at: usize,
    ) -> Result<Entry, SessionStoreError> {
        let uuid = {
            let mut uuids = self.uuids.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if let Some(uuid) = claim(&mut uuids.used, &rewrite_uuid(message)) {
                    break uuid;
                }
            }
        };
        entry_with_uuid(message, uuid, Some(at))
    }
}

/// The uuids given to a key's entries: each message's is its id for the first record of
/// the id and `id#N` for the N-th (a copy), skipping any taken already — an id may itself
/// read `a#2` — so that no two entries share one.
#[derive(Debug, Default)]
struct Uuids {
    /// How many records of each id were given a uuid.
    records: HashMap<MessageId, u32>,
    /// Every uuid given.
    used: HashSet<String>,
}

impl Uuids {
    /// The uuid of the next record of `id`.
    fn next(&mut self, id: &MessageId) -> String {
        let count = self.records.entry(id.clone()).or_default();
        loop {
            *count = count.saturating_add(1);
            let uuid = match *count {
                1 => id.as_str().to_owned(),
                n => format!("{}#{n}", id.as_str()),
            };
            match claim(&mut self.used, &uuid) {
                Some(uuid) => return uuid,
                // Unreachable in practice; a repeated uuid beats an endless loop.
                None if *count == u32::MAX => return uuid,
                None => {}
            }
        }
    }
}

/// `uuid` as the entry holds it (key-shaped secrets redacted: two ids that differ only in
/// a secret would otherwise share the stored one), noted in `used`, if no entry has it yet.
fn claim(used: &mut HashSet<String>, uuid: &str) -> Option<String> {
    let stored = redact_key_shapes(uuid).into_owned();
    used.insert(stored.clone()).then_some(stored)
}

impl std::fmt::Debug for StoreLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreLink")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// `message` as a store entry: its JSON line with `"uuid"` (its id) added, secrets
/// redacted.
pub fn message_entry(message: &Message) -> Result<Entry, SessionStoreError> {
    entry_with_uuid(message, message.id().as_str().to_owned(), None)
}

/// A message a context step changed in place, now at `at` in the history, recorded again as
/// a store entry: its line as [`message_entry`] makes it, marked as the rewrite of the
/// message at `at` ([`REWRITTEN_AT`](threadline_message::rewrites::REWRITTEN_AT)), under a
/// `"uuid"` of its own (the message's id, `~`, and a fresh id), so that the store keeps it
/// beside the earlier records of the message — even when a later rewrite gives back an
/// earlier form. Read back, it stands in that message's place ([`load_session`]).
pub fn rewrite_entry(message: &Message, at: usize) -> Result<Entry, SessionStoreError> {
    entry_with_uuid(message, rewrite_uuid(message), Some(at))
}

/// A fresh uuid for a rewrite of `message`: its id, `~`, and a fresh id.
fn rewrite_uuid(message: &Message) -> String {
    format!(
        "{}~{}",
        message.id().as_str(),
        threadline_message::MessageId::random().as_str()
    )
}

/// `message`'s JSON line with `"uuid": uuid` added (and the rewrite mark of `rewrite`),
/// secrets redacted.
fn entry_with_uuid(
    message: &Message,
    uuid: String,
    rewrite: Option<usize>,
) -> Result<Entry, SessionStoreError> {
    let unstorable = |reason: String| SessionStoreError::Unstorable {
        id: message.id().to_string(),
        reason,
    };
    let mut bytes = serde_json::to_vec(message).map_err(|e| unstorable(e.to_string()))?;
    threadline_message::json_line::add_field(&mut bytes, "uuid", &uuid)
        .map_err(|e| unstorable(e.to_string()))?;
    if let Some(at) = rewrite {
        threadline_message::rewrites::mark_rewrite(&mut bytes, at);
    }
    let bytes = threadline_wire::secret::redact_key_shapes_in_bytes(&bytes).into_owned();
    Entry::new(bytes).map_err(|e| unstorable(e.to_string()))
}

/// The messages of `key` in `store`, in order (empty for a session never written); a
/// message recorded again because it was rewritten in place ([`rewrite_entry`]) stands in
/// the place of the message it rewrote
/// ([`fold_rewrites`](threadline_message::fold_rewrites)).
pub async fn load_session(
    store: &dyn SessionStore,
    key: &SessionKey,
) -> Result<Vec<Message>, SessionStoreError> {
    let entries = store.load(key).await?.unwrap_or_default();
    read_entries(&entries)
}

/// [`load_session`] for `link`'s key, noting the uuids its entries have on `link`.
pub(crate) async fn resume_from(link: &StoreLink) -> Result<Vec<Message>, SessionStoreError> {
    let entries = link.store.load(&link.key).await?.unwrap_or_default();
    link.note_stored(entries.iter().filter_map(|e| e.id().map(str::to_owned)));
    read_entries(&entries)
}

/// The messages of a session's `entries` (see [`load_session`]).
fn read_entries(entries: &[Entry]) -> Result<Vec<Message>, SessionStoreError> {
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            threadline_message::Record::from_json(entry.bytes())
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
                    Event::Message(message) => link.appended_entry(message),
                    Event::Rewritten { index, message } => link.rewritten_entry(message, *index),
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
            rewrite_entry(&preview, 0),
            rewrite_entry(&with_text("cleared"), 0),
            rewrite_entry(&preview, 0),
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

    /// A compaction keeps the latest messages after its summary as copies, under their ids:
    /// the store keeps every copy (it would take one for a retried append under the id
    /// alone), a retried append of one still writes nothing twice, a rewrite of a copy takes
    /// the copy's place, and an agent resuming the session counts on from what it read.
    #[test]
    fn copies_are_stored_beside_their_originals_and_rewrites_take_their_place() {
        let store: Arc<dyn SessionStore> = Arc::new(threadline_store::MemoryStore::new());
        let key = SessionKey::new("p", "copies").expect("key");
        let a = Message::user_text("a");
        let b = Message::user_text("b");
        let mut cleared = a.clone();
        if let Message::User(user) = &mut cleared {
            user.content = vec![ContentBlock::text("cleared")];
        }
        let link = StoreLink::new(Arc::clone(&store), key.clone());
        futures::executor::block_on(async {
            let mut entries = Vec::new();
            for message in [&a, &b, &a] {
                entries.push(link.appended_entry(message).expect("storable"));
            }
            store.append(&key, &entries).await.expect("append");
            // Retried: nothing is written twice.
            store.append(&key, &entries).await.expect("append");
            // The copy (at 2) is cleared.
            let rewrite = rewrite_entry(&cleared, 2).expect("storable");
            store.append(&key, &[rewrite]).await.expect("append");
            let loaded = load_session(store.as_ref(), &key).await.expect("loads");
            assert_eq!(loaded, [a.clone(), b.clone(), cleared.clone()]);

            // A new agent resumes: its next copy of `a` is the third, stored as such.
            let resumed = StoreLink::new(Arc::clone(&store), key.clone());
            resumed.note_loaded(&loaded);
            let third = resumed.appended_entry(&a).expect("storable");
            assert_eq!(third.id(), Some(format!("{}#3", a.id().as_str()).as_str()));
            store.append(&key, &[third]).await.expect("append");
            let loaded = load_session(store.as_ref(), &key).await.expect("loads");
            assert_eq!(loaded, [a.clone(), b, cleared, a]);
        });
    }

    /// An id may look like a copy's uuid (`a#2`, crafted or imported): the copy of `a` and
    /// the message `a#2` are both stored, in either order, and a resumed agent numbers on
    /// without reusing either.
    #[test]
    fn an_id_shaped_like_a_copy_uuid_does_not_hide_a_copy() {
        let a = Message::user_text("a");
        let mut shaped = Message::user_text("shaped like a copy");
        if let Message::User(user) = &mut shaped {
            user.header.id = MessageId(format!("{}#2", a.id().as_str()));
        }
        for (order, history) in [
            ("copy first", [&a, &a, &shaped]),
            ("id first", [&a, &shaped, &a]),
        ] {
            let store: Arc<dyn SessionStore> = Arc::new(threadline_store::MemoryStore::new());
            let key = SessionKey::new("p", "shaped").expect("key");
            let link = StoreLink::new(Arc::clone(&store), key.clone());
            futures::executor::block_on(async {
                for message in history {
                    let entry = link.appended_entry(message).expect("storable");
                    store.append(&key, &[entry]).await.expect("append");
                }
                let loaded = load_session(store.as_ref(), &key).await.expect("loads");
                let expected: Vec<Message> = history.iter().map(|m| (*m).clone()).collect();
                assert_eq!(loaded, expected, "{order}");

                let resumed = StoreLink::new(Arc::clone(&store), key.clone());
                resumed.note_loaded(&loaded);
                for message in [&a, &shaped] {
                    let entry = resumed.appended_entry(message).expect("storable");
                    store.append(&key, &[entry]).await.expect("append");
                }
                let loaded = load_session(store.as_ref(), &key).await.expect("loads");
                let mut expected = expected;
                expected.extend([a.clone(), shaped.clone()]);
                assert_eq!(loaded, expected, "{order}, resumed");
            });
        }
    }

    /// Ids that differ only in a key-shaped secret are stored redacted, uuids included:
    /// each still gets a uuid of its own, so neither is taken for a retry of the other.
    #[test]
    fn ids_that_differ_only_in_a_secret_are_both_stored() {
        let shaped = |tail: &str| {
            let mut message = Message::user_text(tail);
            if let Message::User(user) = &mut message {
                user.header.id = MessageId(format!("sk-ant-api03-{}", tail.repeat(24)));
            }
            message
        };
        let store: Arc<dyn SessionStore> = Arc::new(threadline_store::MemoryStore::new());
        let key = SessionKey::new("p", "secret-ids").expect("key");
        let link = StoreLink::new(Arc::clone(&store), key.clone());
        futures::executor::block_on(async {
            for message in [shaped("A"), shaped("B")] {
                let entry = link.appended_entry(&message).expect("storable");
                let text = String::from_utf8_lossy(entry.bytes()).into_owned();
                assert!(!text.contains(&"A".repeat(24)) && !text.contains(&"B".repeat(24)));
                store.append(&key, &[entry]).await.expect("append");
            }
            let loaded = load_session(store.as_ref(), &key).await.expect("loads");
            let texts: Vec<_> = loaded
                .iter()
                .map(|m| match m {
                    Message::User(user) => format!("{:?}", user.content),
                    other => format!("{other:?}"),
                })
                .collect();
            assert_eq!(loaded.len(), 2, "{texts:?}");
        });
    }

    proptest::proptest! {
        /// Whatever the ids — copies, ids shaped like a copy's uuid (`a#2`, `a#2#2`), the
        /// same id again much later — every message appended reads back, in order, also
        /// after an agent resumes part way (a fresh link counting from what it read, and
        /// noting the key's uuids as `resume` does, or not, as a caller's own read does).
        #[test]
        fn every_appended_message_reads_back_whatever_its_id(
            picks in proptest::collection::vec(0usize..7, 0..24),
            resume_at in 0usize..24,
            note_stored in proptest::bool::ANY,
        ) {
            const IDS: [&str; 7] = ["a", "a#2", "a#3", "a#2#2", "a#", "#2", "b"];
            let history: Vec<Message> = picks
                .iter()
                .map(|&pick| {
                    let mut message = Message::user_text(format!("{pick}"));
                    if let Message::User(user) = &mut message {
                        user.header.id = MessageId(IDS[pick].to_owned());
                    }
                    message
                })
                .collect();
            let store: Arc<dyn SessionStore> = Arc::new(threadline_store::MemoryStore::new());
            let key = SessionKey::new("p", "ids").expect("key");
            let resume_at = resume_at.min(history.len());
            futures::executor::block_on(async {
                let first = StoreLink::new(Arc::clone(&store), key.clone());
                for message in &history[..resume_at] {
                    let entry = first.appended_entry(message).expect("storable");
                    store.append(&key, &[entry]).await.expect("append");
                }
                let resumed = StoreLink::new(Arc::clone(&store), key.clone());
                let loaded = if note_stored {
                    resume_from(&resumed).await.expect("loads")
                } else {
                    load_session(store.as_ref(), &key).await.expect("loads")
                };
                proptest::prop_assert_eq!(&loaded[..], &history[..resume_at]);
                resumed.note_loaded(&loaded);
                for message in &history[resume_at..] {
                    let entry = resumed.appended_entry(message).expect("storable");
                    store.append(&key, &[entry]).await.expect("append");
                }
                let loaded = load_session(store.as_ref(), &key).await.expect("loads");
                proptest::prop_assert_eq!(loaded, history);
                Ok(())
            })?;
        }
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
