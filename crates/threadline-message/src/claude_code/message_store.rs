//! The messages Claude Code's request records can name, each held once, and the hashes that
//! name them.
//!
//! A blob names its message by the hash it records; a conversation record names its message
//! by [`message_hash`]: each `user` record's message (a string content also in its
//! one-text-block form), each assistant response (its records joined by `message.id`), and
//! each run of consecutive tool-result-only `user` records at every length it reaches (a
//! request sent while the run grows names the run so far).
//!
//! A run is held once: its blocks (without `cache_control`) in one list, and each length as
//! an entry pointing into it. Each length's hash continues the previous length's hashing
//! state, so a run of `n` records costs time and memory linear in its blocks, not the `n²/2`
//! blocks of `n` copies. The store as a whole is linear in the records.

use std::collections::HashMap;

use serde::Deserialize as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use threadline_wire::cache_control::without_cache_control;
use threadline_wire::{ContentBlock, MessageParam};

use super::lines::Record;
use super::request_records::{canonical_json, hex, message_hash};

/// Every message the file's records can name, once (without `cache_control`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct MessageStore {
    entries: Vec<Entry>,
    /// The blocks of each run of consecutive tool-result-only user records, without
    /// `cache_control`.
    runs: Vec<Vec<Value>>,
}

/// One message of the store.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    /// A message held as is.
    Message(Value),
    /// The user message made of the first `len` blocks of run `run`.
    Results { run: usize, len: usize },
}

/// Which stored block a block of a message is ([`MessageStore::block_identity`]): every
/// length of a run shares the run's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum BlockIdentity {
    /// Block `block` of the message held as is at `at`.
    Message { at: usize, block: usize },
    /// Block `block` of run `run`, whichever length of the run holds it.
    Run { run: usize, block: usize },
}

/// The canonical JSON of a run's message is `{"content":[` + each block's canonical JSON,
/// comma-separated + `],"role":"user"}` (keys sorted: `content` before `role`).
const RUN_OPENING: &str = r#"{"content":["#;
const RUN_CLOSING: &str = r#"],"role":"user"}"#;

/// The hash of a growing run's message, one block at a time.
struct RunHash {
    /// The hashing state after the opening and the blocks so far.
    state: Sha256,
    blocks: usize,
}

impl RunHash {
    fn new() -> Self {
        let mut state = Sha256::new();
        state.update(RUN_OPENING.as_bytes());
        RunHash { state, blocks: 0 }
    }

    /// Adds a block (without `cache_control`).
    fn push(&mut self, block: &Value) {
        if self.blocks > 0 {
            self.state.update(b",");
        }
        self.state.update(canonical_json(block).as_bytes());
        self.blocks += 1;
    }

    /// The hash of the message made of the blocks so far: [`message_hash`] of it.
    fn hash(&self) -> String {
        let mut state = self.state.clone();
        state.update(RUN_CLOSING.as_bytes());
        hex(&state.finalize())
    }
}

impl MessageStore {
    /// The messages `records` can name, and the index in the store of each by the hashes
    /// that name it (the first message a hash names keeps it).
    pub(super) fn of(records: &[Record]) -> (MessageStore, HashMap<String, usize>) {
        let mut store = MessageStore::default();
        let mut index: HashMap<String, usize> = HashMap::new();
        // A blob is named by the hash it records: for some (the summary after a compaction,
        // a Read reminder) that is not the hash of the message it holds.
        for record in records.iter().filter(|r| r.kind() == "api-request-blob") {
            if let (Some(hash), Some(message)) = (
                record.object.get("hash").and_then(Value::as_str),
                record.object.get("message"),
            ) {
                store.add(&mut index, hash.to_owned(), || {
                    Entry::Message(without_cache_control(message))
                });
            }
        }
        let add_hashed = |store: &mut MessageStore, index: &mut HashMap<String, usize>, message| {
            store.add(index, message_hash(&message), || {
                Entry::Message(without_cache_control(&message))
            });
        };
        // The records of each response, by `message.id`, in the order the responses start.
        let mut responses: Vec<Vec<Value>> = Vec::new();
        let mut response_of: HashMap<String, usize> = HashMap::new();
        // The run being read, and its hash so far.
        let mut run: Option<(usize, RunHash)> = None;
        for record in records {
            let record_kind = record.kind();
            if record_kind != "user" && record_kind != "assistant" {
                continue;
            }
            let Some(content) = record.object.get("message").and_then(|m| m.get("content")) else {
                continue;
            };
            let results = content.as_array().filter(|blocks| {
                !blocks.is_empty() && blocks.iter().all(|b| b["type"] == "tool_result")
            });
            match results {
                Some(blocks) if record_kind == "user" => {
                    let (at, hash) = run.get_or_insert_with(|| {
                        store.runs.push(Vec::new());
                        (store.runs.len() - 1, RunHash::new())
                    });
                    let run_blocks = &mut store.runs[*at];
                    for block in blocks {
                        let block = without_cache_control(block);
                        hash.push(&block);
                        run_blocks.push(block);
                    }
                    let entry = Entry::Results {
                        run: *at,
                        len: run_blocks.len(),
                    };
                    store.add(&mut index, hash.hash(), || entry);
                }
                _ => run = None,
            }
            if record_kind == "user" {
                add_hashed(
                    &mut store,
                    &mut index,
                    json!({"role": "user", "content": content}),
                );
                if let Some(text) = content.as_str() {
                    add_hashed(
                        &mut store,
                        &mut index,
                        json!({"role": "user", "content": [{"type": "text", "text": text}]}),
                    );
                }
            } else {
                let id = record.object["message"]
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let blocks = content.as_array().cloned().unwrap_or_default();
                let at = *response_of.entry(id).or_insert_with(|| {
                    responses.push(Vec::new());
                    responses.len() - 1
                });
                responses[at].extend(blocks);
            }
        }
        for blocks in responses {
            add_hashed(
                &mut store,
                &mut index,
                json!({"role": "assistant", "content": blocks}),
            );
        }
        (store, index)
    }

    /// Adds the entry `hash` names, unless a message has that name already.
    fn add(
        &mut self,
        index: &mut HashMap<String, usize>,
        hash: String,
        entry: impl FnOnce() -> Entry,
    ) {
        index.entry(hash).or_insert_with(|| {
            self.entries.push(entry());
            self.entries.len() - 1
        });
    }

    /// Message `at` of the store.
    pub(super) fn message(&self, at: usize) -> Value {
        match &self.entries[at] {
            Entry::Message(message) => message.clone(),
            Entry::Results { run, len } => {
                json!({"role": "user", "content": self.runs[*run][..*len].to_vec()})
            }
        }
    }

    /// Block `block` of message `at` as a marker finds it: the `block`-th of its content
    /// list, or for a string content (which a marker turns into one text block) that block.
    pub(super) fn block(&self, at: usize, block: usize) -> Option<Value> {
        match &self.entries[at] {
            Entry::Message(message) => match message.get("content")? {
                Value::String(text) => (block == 0).then(|| json!({"type": "text", "text": text})),
                Value::Array(blocks) => blocks.get(block).cloned(),
                _ => None,
            },
            Entry::Results { run, len } => self.runs[*run][..*len].get(block).cloned(),
        }
    }

    /// Which stored block [`block`](Self::block)`(at, block)` is, when there is one: the
    /// same for every length of a run that holds it, so that what is found about a block
    /// (does it parse with a marker on?) is found once, not once per length.
    pub(super) fn block_identity(&self, at: usize, block: usize) -> Option<BlockIdentity> {
        match &self.entries[at] {
            Entry::Message(message) => {
                let exists = match message.get("content") {
                    Some(Value::String(_)) => block == 0,
                    Some(Value::Array(blocks)) => block < blocks.len(),
                    _ => false,
                };
                exists.then_some(BlockIdentity::Message { at, block })
            }
            Entry::Results { run, len } => {
                (block < *len).then_some(BlockIdentity::Run { run: *run, block })
            }
        }
    }

    /// Per message of the store: whether it parses as a request message. Linear in the
    /// store: the blocks of a run are parsed once, and a length of the run parses when the
    /// blocks up to it do (a user message of blocks parses exactly when each block does).
    pub(super) fn parses(&self) -> Vec<bool> {
        let first_bad_block: Vec<usize> = self
            .runs
            .iter()
            .map(|blocks| {
                blocks
                    .iter()
                    .position(|b| ContentBlock::deserialize(b).is_err())
                    .unwrap_or(usize::MAX)
            })
            .collect();
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Message(message) => MessageParam::deserialize(message).is_ok(),
                Entry::Results { run, len } => *len <= first_bad_block[*run],
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn records(values: Vec<Value>) -> Vec<Record> {
        Record::numbered(values)
    }

    fn result_record(blocks: Vec<Value>) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": blocks}})
    }

    fn block() -> impl Strategy<Value = Value> {
        let id = prop::sample::select(vec!["t1", "t2", "é\"\n"]);
        let content = prop_oneof![
            Just(Value::Null),
            ".{0,3}".prop_map(Value::from),
            Just(json!([{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}])),
            Just(json!({"b": 1, "a": [2, {"cache_control": 3}]})),
            any::<f64>().prop_map(Value::from),
        ];
        (id, content, any::<bool>(), any::<bool>()).prop_map(|(id, content, marked, error)| {
            let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": content});
            if marked {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
            if error {
                block["is_error"] = json!("not a bool");
            }
            block
        })
    }

    proptest! {
        /// Each length of a run is named by the hash of its message, held as that message
        /// without `cache_control`, and parses exactly when the message does: the same as
        /// building each length's message and hashing it.
        #[test]
        fn each_length_of_a_run_is_named_and_held_as_its_message(
            run in prop::collection::vec(prop::collection::vec(block(), 1..3), 1..6),
        ) {
            let all = records(run.iter().cloned().map(result_record).collect());
            let (store, index) = MessageStore::of(&all);
            let parses = store.parses();
            let mut blocks = Vec::new();
            for record in &run {
                blocks.extend(record.iter().cloned());
                let message = json!({"role": "user", "content": blocks.clone()});
                let at = index.get(&message_hash(&message)).copied();
                prop_assert!(at.is_some(), "each length is named");
                let at = at.unwrap_or_default();
                prop_assert_eq!(store.message(at), without_cache_control(&message));
                prop_assert_eq!(
                    parses[at],
                    serde_json::from_value::<MessageParam>(store.message(at)).is_ok()
                );
            }
        }
    }

    // Hostile files, at sizes where a quadratic import takes far longer than a linear one.

    /// A run of many one-result user records is held once: copying each length would hold
    /// `n²/2` blocks (1.25·10⁷ here, gigabytes) and hash as many.
    #[test]
    fn a_long_run_of_results_is_held_once() {
        const RECORDS: usize = 5_000;
        let result = json!({"type": "tool_result", "tool_use_id": "t", "content": "x"});
        let mut values = vec![json!({"type": "api-request", "id": "r"})];
        values.extend((0..RECORDS).map(|_| result_record(vec![result.clone()])));
        let (store, index) = MessageStore::of(&records(values));
        assert_eq!(store.runs.len(), 1);
        assert_eq!(store.runs[0].len(), RECORDS);
        // One entry per length (the first is also the first record's own message).
        assert_eq!(store.entries.len(), RECORDS);
        let whole = json!({"role": "user", "content": vec![result; RECORDS]});
        let at = index[&message_hash(&whole)];
        assert_eq!(store.message(at), whole);
        assert!(store.parses().into_iter().all(|p| p));
    }
}
