//! The requests Claude Code 2.1.3xx recorded in its own transcript (`api-request`,
//! `api-request-blob`, `api-request-shape`), rebuilt exactly.
//!
//! Claude Code 2.1.328 writes, before each main-loop or sub-agent request it sends (never
//! before a compaction summary request):
//!
//! * an `api-request-shape` record (before a session's first request and after a compaction):
//!   `shape.system` (the request's `system` without its first, billing, line and without
//!   `cache_control`) and `shape.tools`, named by `shapeHash`, the SHA-256 of the shape's
//!   canonical JSON;
//! * an `api-request-blob` record for each message of the request that is not written
//!   verbatim by a conversation record (system messages, user messages merged from several
//!   records), named by the `hash` it records;
//! * the `api-request` record: `messages` = the first `keep` messages of the earlier request
//!   `base` (none when absent), then the messages named by the `tail` hashes; `cacheControl`
//!   lists where the markers go; `params` holds the model, betas, `max_tokens`, `thinking`,
//!   `context_management` and `output_config`.
//!
//! A message is named by the SHA-256 (lower-case hex) of its canonical JSON without
//! `cache_control`: keys sorted, no spaces, non-ASCII written as is. Conversation records
//! name: each `user` record's message (a string content also in its one-text-block form), each
//! run of consecutive tool-result-only `user` records as one message, and each assistant
//! response, its records joined by `message.id`. A blob is named by the hash it records,
//! which for some blobs is not the hash of its message.
//!
//! # Bounds
//!
//! The rebuild is linear in the records whatever they say: each message they can name is
//! held once (a run of results once for all its lengths, see `message_store`), and each
//! request holds only its tail and a link to the request it keeps messages from (see
//! `recipes`), never a copy of them, so no `keep` makes it hold more; a shape is held once,
//! shared by the requests that name it. Rebuilding the messages
//! of one request ([`RecordedRequests::messages`]) costs what they are; finding the last
//! request that rebuilds ([`ImportResult::next_claude_code_request`]) rebuilds only that one.
//!
//! docs/claude-code-transcripts.md ("Request records") describes the records and the rebuild,
//! measured against the bodies Claude Code sent.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use serde::Deserialize as _;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};
use threadline_wire::cache_control::{CacheControl, without_cache_control};
use threadline_wire::{ContentBlock, MessageParam};

#[cfg(doc)]
use super::ImportResult;
use super::lines::Record;
use super::message_store::{BlockIdentity, MessageStore};
use super::recipes::Recipes;

/// Why a recorded request could not be rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestRecordError {
    /// `base` names no earlier request of the file, or one with fewer than `keep` messages.
    #[error("line {line}: base request {base} is unknown or has fewer than {keep} messages")]
    UnknownBase {
        /// The `api-request` record's line.
        line: usize,
        /// The `base` it names.
        base: String,
        /// The `keep` it asks for.
        keep: usize,
    },
    /// A `tail` hash names no blob and no conversation message of the file.
    #[error("line {line}: no message of the transcript has the hash {hash}")]
    UnknownMessage {
        /// The `api-request` record's line.
        line: usize,
        /// The hash.
        hash: String,
    },
    /// A message the records name is not a request message (no `user`, `assistant` or
    /// `system` role, or content of the wrong type).
    #[error("line {line}: the message named {hash} is not a request message: {error}")]
    BadMessage {
        /// The `api-request` record's line.
        line: usize,
        /// The hash.
        hash: String,
        /// Why it does not parse.
        error: String,
    },
}

/// The `system` and `tools` of a recorded request (`api-request-shape`).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedShape {
    /// `shape.system`: the request's system blocks after the billing line, without markers.
    pub system: Value,
    /// `shape.tools`: the request's tools.
    pub tools: Value,
    /// Whether the record's `shapeHash` is the SHA-256 of the shape's canonical JSON.
    pub hash_verified: bool,
}

/// One request Claude Code recorded, rebuilt.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The record's `id`.
    pub id: String,
    /// The record's line (1-based).
    pub line: usize,
    /// `querySource`: `sdk` for the main loop, `agent:…` for a sub-agent.
    pub query_source: Option<String>,
    /// `agentId`, in a sub-agent's file.
    pub agent_id: Option<String>,
    /// `params`: model, betas, `max_tokens`, `thinking`, `context_management`,
    /// `output_config`, as recorded.
    pub params: Map<String, Value>,
    /// The shape the record names, when the file holds it: shared by every request that
    /// names it (a file may name one large shape from each of many small records).
    pub shape: Option<Arc<RecordedShape>>,
    /// The request's `messages` as a recipe of [`RecordedRequests`]' recipes (indices into
    /// its store of distinct messages), or why they cannot be rebuilt
    /// ([`RecordedRequests::messages`] makes them).
    recipe: Result<usize, RequestRecordError>,
    /// The recorded `cacheControl` markers.
    markers: Vec<Value>,
    /// How many of the import's messages come from records written before this one: the
    /// messages after them are what the conversation added since the request was sent.
    pub messages_before: usize,
    /// Whether the import's last compaction came after this request: the request describes
    /// a conversation the compaction replaced.
    pub before_compaction: bool,
}

/// The requests a transcript recorded, in file order (a slice of [`RecordedRequest`]), and
/// the distinct messages they are made of: each request names its messages by a recipe of
/// store indices that links to the request it keeps messages from, so a session of `n`
/// requests over `m` messages holds each message once and each request's new messages once,
/// not `n × m` copies or indices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedRequests {
    requests: Vec<RecordedRequest>,
    /// Every message a record can name, once.
    store: MessageStore,
    /// Which stored messages each request is made of.
    recipes: Recipes,
}

impl std::ops::Deref for RecordedRequests {
    type Target = [RecordedRequest];

    fn deref(&self) -> &[RecordedRequest] {
        &self.requests
    }
}

impl RecordedRequests {
    /// The requests, to fill in what the import learns after reading them.
    pub(super) fn requests_mut(&mut self) -> &mut [RecordedRequest] {
        &mut self.requests
    }

    /// The `messages` of request `i`, cache markers in place, or why they cannot be rebuilt
    /// (`None`: there is no request `i`).
    pub fn messages(&self, i: usize) -> Option<Result<Vec<MessageParam>, RequestRecordError>> {
        let request = self.requests.get(i)?;
        let recipe = match request.recipe {
            Ok(recipe) => recipe,
            Err(ref problem) => return Some(Err(problem.clone())),
        };
        let marks = marks(&request.markers);
        let entries = self.recipes.messages(recipe);
        let mut messages = Vec::with_capacity(entries.len());
        for (position, &at) in entries.iter().enumerate() {
            let marked = || self.marked(at, marks.get(&position));
            match serde_json::from_value::<MessageParam>(marked()) {
                Ok(message) => messages.push(message),
                Err(e) => {
                    return Some(Err(RequestRecordError::BadMessage {
                        line: request.line,
                        hash: message_hash(&marked()),
                        error: e.to_string(),
                    }));
                }
            }
        }
        Some(Ok(messages))
    }

    /// Stored message `at` with its markers on.
    fn marked(&self, at: usize, marks: Option<&Vec<(usize, Value)>>) -> Value {
        let mut message = self.store.message(at);
        for (block, value) in marks.into_iter().flatten() {
            mark(&mut message, *block, value.clone());
        }
        message
    }

    /// Per request: whether [`RecordedRequests::messages`] rebuilds it, found without
    /// rebuilding any. Each stored message is parsed once, and a recipe's first message that
    /// does not parse is found from its base's; a message with markers on parses when it
    /// does without them (a marker only adds `cache_control`, which mends nothing) and each
    /// block it marks parses with its marker on, which is found once per stored block
    /// ([`BlockIdentity`]: every length of a run shares its blocks) and [`MarkerKind`].
    /// Linear in the records, whatever the requests keep and mark.
    pub(super) fn rebuilds(&self) -> Vec<bool> {
        self.rebuilds_noting(&mut HashMap::new())
    }

    /// [`rebuilds`](Self::rebuilds), keeping in `marked_block_parses` what it found of each
    /// stored block it parsed with a marker on.
    fn rebuilds_noting(
        &self,
        marked_block_parses: &mut HashMap<(BlockIdentity, MarkerKind), bool>,
    ) -> Vec<bool> {
        let parses = self.store.parses();
        let first_bad = self.recipes.first_bad(|at| !parses[at]);
        self.requests
            .iter()
            .map(|request| {
                let Ok(recipe) = request.recipe else {
                    return false;
                };
                if first_bad[recipe].is_some() {
                    return false;
                }
                let len = self.recipes.len(recipe);
                marks(&request.markers).range(..len).all(|(&position, on)| {
                    let Some(at) = self.recipes.message(recipe, position) else {
                        return true;
                    };
                    // The last marker on a block is the one it keeps.
                    let last: BTreeMap<usize, &Value> =
                        on.iter().map(|(block, value)| (*block, value)).collect();
                    last.into_iter().all(|(block, value)| {
                        // A marker on a block the message does not have changes nothing.
                        let Some(identity) = self.store.block_identity(at, block) else {
                            return true;
                        };
                        let key = (identity, MarkerKind::of(value));
                        *marked_block_parses.entry(key).or_insert_with(|| {
                            self.store.block(at, block).is_none_or(|mut b| {
                                let Some(object) = b.as_object_mut() else {
                                    return true;
                                };
                                object.insert("cache_control".to_owned(), value.clone());
                                ContentBlock::deserialize(&b).is_ok()
                            })
                        })
                    })
                })
            })
            .collect()
    }
}

/// What a marker's value is, as far as whether a block parses with it on: a block type
/// either reads `cache_control` (then a valid one and a null parse, anything else does not)
/// or keeps it as it is, so a block parses with every marker of one kind or with none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MarkerKind {
    Null,
    CacheControl,
    Other,
}

impl MarkerKind {
    fn of(value: &Value) -> Self {
        if value.is_null() {
            MarkerKind::Null
        } else if CacheControl::deserialize(value).is_ok() {
            MarkerKind::CacheControl
        } else {
            MarkerKind::Other
        }
    }
}

impl RecordedRequest {
    /// Why the request's messages cannot be rebuilt from the records, if they cannot (a
    /// message that does not parse is found only by [`RecordedRequests::messages`]).
    pub fn problem(&self) -> Option<&RequestRecordError> {
        self.recipe.as_ref().err()
    }

    /// The model the request was sent to (`params.model`).
    pub fn model(&self) -> Option<&str> {
        self.params.get("model").and_then(Value::as_str)
    }

    /// The betas it was sent with (`params.betas`).
    pub fn betas(&self) -> Vec<&str> {
        self.params
            .get("betas")
            .and_then(Value::as_array)
            .map(|betas| betas.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// `params.max_tokens`.
    pub fn max_tokens(&self) -> Option<u64> {
        self.params.get("max_tokens").and_then(Value::as_u64)
    }
}

/// The canonical JSON Claude Code hashes: object keys sorted, no spaces, non-ASCII as is.
/// Written by hand rather than relying on `serde_json`'s map order, which a feature of
/// another crate in the build (`preserve_order`) could change.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (n, key) in keys.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// SHA-256 of `text`, lower-case hex.
fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// `bytes` in lower-case hex.
pub(super) fn hex(bytes: &[u8]) -> String {
    let mut hex = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The hash Claude Code names a request message by: SHA-256 of its canonical JSON without
/// `cache_control`.
pub fn message_hash(message: &Value) -> String {
    sha256_hex(&canonical_json(&without_cache_control(message)))
}

/// The `shapeHash` Claude Code records for the request `body` is: SHA-256 of the canonical
/// JSON of `{"system", "tools"}`, where `system` is the body's `system` without its first
/// block (Claude Code's billing line) and without `cache_control`. `None` without a `system`
/// list or `tools`.
pub fn body_shape_hash(body: &Value) -> Option<String> {
    let system = body.get("system")?.as_array()?.get(1..)?.to_vec();
    let shape = json!({
        "system": without_cache_control(&Value::Array(system)),
        "tools": body.get("tools")?,
    });
    Some(sha256_hex(&canonical_json(&shape)))
}

/// The shapes of the file, by `shapeHash`.
fn shapes(records: &[Record]) -> HashMap<String, Arc<RecordedShape>> {
    records
        .iter()
        .filter(|r| r.kind() == "api-request-shape")
        .filter_map(|r| {
            let hash = r.object.get("shapeHash")?.as_str()?;
            let shape = r.object.get("shape")?;
            Some((
                hash.to_owned(),
                Arc::new(RecordedShape {
                    system: shape.get("system").cloned().unwrap_or(Value::Null),
                    tools: shape.get("tools").cloned().unwrap_or(Value::Null),
                    hash_verified: sha256_hex(&canonical_json(shape)) == hash,
                }),
            ))
        })
        .collect()
}

/// The recorded `cacheControl` markers that go on messages (`["messages", i, "content", j]`),
/// by message `i`: each block `j` and marker, in record order. Paths into `system` are left
/// to the caller (they index the shape's system blocks).
fn marks(markers: &[Value]) -> BTreeMap<usize, Vec<(usize, Value)>> {
    let mut marks: BTreeMap<usize, Vec<(usize, Value)>> = BTreeMap::new();
    for marker in markers {
        let Some(path) = marker.get("path").and_then(Value::as_array) else {
            continue;
        };
        let index = |n: usize| {
            path.get(n)
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
        };
        if path.first().and_then(Value::as_str) != Some("messages")
            || path.get(2).and_then(Value::as_str) != Some("content")
        {
            continue;
        }
        let (Some(i), Some(j)) = (index(1), index(3)) else {
            continue;
        };
        let value = marker.get("value").cloned().unwrap_or(Value::Null);
        marks.entry(i).or_default().push((j, value));
    }
    marks
}

/// Puts a `cache_control` marker on block `block` of `message`, a string content turned into
/// one text block to carry it.
fn mark(message: &mut Value, block: usize, value: Value) {
    if let Some(text) = message.get("content").and_then(Value::as_str) {
        message["content"] = json!([{"type": "text", "text": text}]);
    }
    if let Some(block) = message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|blocks| blocks.get_mut(block))
        .and_then(Value::as_object_mut)
    {
        block.insert("cache_control".to_owned(), value);
    }
}

/// The requests recorded in `records` that belong to the conversation of `agent_id` (`None`:
/// the main loop), in file order.
pub(super) fn recorded_requests(records: &[Record], agent_id: Option<&str>) -> RecordedRequests {
    let requests: Vec<&Record> = records
        .iter()
        .filter(|r| r.kind() == "api-request")
        .filter(|r| r.object.get("agentId").and_then(Value::as_str) == agent_id)
        .collect();
    if requests.is_empty() {
        return RecordedRequests::default();
    }
    let (store, index) = MessageStore::of(records);
    let mut recipes = Recipes::default();
    let shapes = shapes(records);
    // Each request's position in `out` by its id, for the later ones that name it as `base`.
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<RecordedRequest> = Vec::with_capacity(requests.len());
    for record in requests {
        let line = record.line;
        let field = |name: &str| record.object.get(name).and_then(Value::as_str);
        let mut kept = None;
        let mut problem = None;
        if let Some(base) = field("base") {
            let keep = record
                .object
                .get("keep")
                .and_then(Value::as_u64)
                .and_then(|k| usize::try_from(k).ok())
                .unwrap_or(0);
            let earlier = by_id
                .get(base)
                .and_then(|&at| out[at].recipe.as_ref().ok())
                .filter(|&&earlier| recipes.len(earlier) >= keep);
            match earlier {
                Some(&earlier) => kept = Some((earlier, keep)),
                None => {
                    problem = Some(RequestRecordError::UnknownBase {
                        line,
                        base: base.to_owned(),
                        keep,
                    });
                }
            }
        }
        let mut tail = Vec::new();
        for hash in record
            .object
            .get("tail")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            match index.get(hash) {
                Some(&at) => tail.push(at),
                None => {
                    problem.get_or_insert_with(|| RequestRecordError::UnknownMessage {
                        line,
                        hash: hash.to_owned(),
                    });
                }
            }
        }
        if let Some(id) = field("id") {
            by_id.insert(id.to_owned(), out.len());
        }
        out.push(RecordedRequest {
            id: field("id").unwrap_or_default().to_owned(),
            line,
            query_source: field("querySource").map(str::to_owned),
            agent_id: field("agentId").map(str::to_owned),
            params: record
                .object
                .get("params")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            shape: field("shapeHash").and_then(|h| shapes.get(h).cloned()),
            recipe: match problem {
                Some(problem) => Err(problem),
                None => Ok(recipes.add(kept, tail)),
            },
            markers: record
                .object
                .get("cacheControl")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            messages_before: 0,
            before_compaction: false,
        });
    }
    RecordedRequests {
        requests: out,
        store,
        recipes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(values: Vec<Value>) -> Vec<Record> {
        Record::numbered(values)
    }

    #[test]
    fn the_hash_is_of_sorted_compact_json_without_cache_control() {
        let message = json!({"role": "user", "content": [
            {"type": "text", "text": "héllo\n\"x\"", "cache_control": {"type": "ephemeral"}}
        ]});
        // Python: hashlib.sha256(json.dumps({"role":"user","content":[{"type":"text",
        // "text":"héllo\n\"x\""}]}, separators=(",",":"), sort_keys=True,
        // ensure_ascii=False).encode()).hexdigest()
        assert_eq!(
            canonical_json(&without_cache_control(&message)),
            r#"{"content":[{"text":"héllo\n\"x\"","type":"text"}],"role":"user"}"#
        );
        assert_eq!(
            message_hash(&message),
            sha256_hex(r#"{"content":[{"text":"héllo\n\"x\"","type":"text"}],"role":"user"}"#)
        );
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    fn user(uuid: &str, content: Value) -> Value {
        json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}})
    }

    fn assistant(id: &str, blocks: Value) -> Value {
        json!({"type": "assistant", "message": {"id": id, "role": "assistant", "content": blocks}})
    }

    #[test]
    fn requests_are_rebuilt_from_blobs_base_keep_and_tail_with_their_markers() {
        let system =
            json!({"role": "system", "content": "env", "output_config": {"effort": "medium"}});
        let text = json!({"type": "text", "text": "I look."});
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}});
        let result = json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]);
        let joined = json!({"role": "assistant", "content": [text, call]});
        let results = json!({"role": "user", "content": result});
        let prompt = json!({"role": "user", "content": "Go"});
        let shape = json!({"system": [{"type": "text", "text": "You are"}], "tools": []});
        let shape_hash = sha256_hex(&canonical_json(&shape));
        let all = records(vec![
            user("u1", json!("Go")),
            json!({"type": "api-request-shape", "shapeHash": shape_hash, "shape": shape}),
            json!({"type": "api-request-blob", "hash": message_hash(&system), "message": system}),
            json!({"type": "api-request", "id": "r1", "base": null, "keep": 0,
                   "shapeHash": shape_hash, "params": {"model": "claude-opus-5-5", "max_tokens": 9},
                   "tail": [message_hash(&prompt), message_hash(&system)],
                   "cacheControl": [{"path": ["messages", 1, "content", 0], "value": {"type": "ephemeral"}}]}),
            assistant("msg_1", json!([text])),
            assistant("msg_1", json!([call])),
            user("u2", result.clone()),
            json!({"type": "api-request", "id": "r2", "base": "r1", "keep": 2,
                   "tail": [message_hash(&joined), message_hash(&results)]}),
            json!({"type": "api-request", "id": "r3", "base": "r2", "keep": 9, "tail": []}),
            json!({"type": "api-request", "id": "r4", "base": "r2", "keep": 1, "tail": ["00"]}),
            json!({"type": "api-request", "id": "r5", "agentId": "a1", "tail": []}),
        ]);
        let rebuilt = recorded_requests(&all, None);
        assert_eq!(
            rebuilt.len(),
            4,
            "the sub-agent's request is not the main loop's"
        );
        let to_values = |i: usize| {
            rebuilt
                .messages(i)
                .expect("a request")
                .expect("rebuilt")
                .iter()
                .map(|m| serde_json::to_value(m).expect("serializes"))
                .collect::<Vec<_>>()
        };
        let mut marked_system = system.clone();
        marked_system["content"] =
            json!([{"type": "text", "text": "env", "cache_control": {"type": "ephemeral"}}]);
        assert_eq!(to_values(0), [prompt.clone(), marked_system]);
        assert_eq!(rebuilt[0].model(), Some("claude-opus-5-5"));
        assert_eq!(rebuilt[0].max_tokens(), Some(9));
        let shape = rebuilt[0].shape.as_ref().expect("shape");
        assert!(shape.hash_verified);
        assert_eq!(rebuilt[0].line, 4);
        assert_eq!(to_values(1), [prompt, system, joined, results]);
        assert!(matches!(
            rebuilt.messages(2),
            Some(Err(RequestRecordError::UnknownBase { keep: 9, .. }))
        ));
        assert!(matches!(
            rebuilt[3].problem(),
            Some(RequestRecordError::UnknownMessage { hash, .. }) if hash == "00"
        ));
        assert_eq!(recorded_requests(&all, Some("a1")).len(), 1);
    }

    #[test]
    fn a_bodys_shape_hash_is_the_hash_of_its_system_after_the_billing_line_and_its_tools() {
        let body = json!({"system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328.abc;"},
            {"type": "text", "text": "You are", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "Read"}]});
        let shape =
            json!({"system": [{"type": "text", "text": "You are"}], "tools": [{"name": "Read"}]});
        assert_eq!(
            body_shape_hash(&body),
            Some(sha256_hex(&canonical_json(&shape)))
        );
        assert_eq!(body_shape_hash(&json!({"tools": []})), None);
    }

    #[test]
    fn a_shape_whose_hash_is_not_its_own_is_reported_unverified() {
        let shape = json!({"system": [], "tools": []});
        let all = records(vec![
            json!({"type": "api-request-shape", "shapeHash": "feed", "shape": shape}),
            json!({"type": "api-request", "id": "r1", "shapeHash": "feed", "tail": []}),
        ]);
        let rebuilt = recorded_requests(&all, None);
        assert!(!rebuilt[0].shape.as_ref().expect("shape").hash_verified);
        assert_eq!(rebuilt.messages(0), Some(Ok(Vec::new())));
    }

    fn hostile_record() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let id = prop::sample::select(vec!["r1", "r2", "r3", "", "toolu"]);
        let hash = prop::sample::select(vec!["h1", "h2", "", "00"]);
        let any_value = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            ".{0,4}".prop_map(Value::from),
            Just(json!([])),
            Just(json!({"role": "system", "content": []})),
            Just(json!({"role": "robot", "content": 3})),
        ];
        (
            prop::sample::select(vec!["api-request", "api-request-blob", "api-request-shape", "user", "assistant"]),
            id,
            hash,
            any_value.clone(),
            any_value.clone(),
            any_value,
        )
            .prop_map(|(kind, id, hash, a, b, c)| {
                json!({"type": kind, "id": id, "base": id, "keep": a, "hash": hash,
                       "tail": [hash, b], "message": c, "cacheControl": [{"path": ["messages", a, "content", b], "value": c}],
                       "shapeHash": hash, "shape": b, "params": c})
            })
    }

    proptest::proptest! {
        /// Hostile records never panic the rebuild, which answers every `api-request` record
        /// (rebuilt, or why not).
        #[test]
        fn hostile_request_records_never_panic(values in proptest::collection::vec(hostile_record(), 0..24)) {
            let all = records(values);
            let rebuilt = recorded_requests(&all, None);
            let count = all.iter().filter(|r| r.kind() == "api-request").count();
            proptest::prop_assert_eq!(rebuilt.len(), count);
            for i in 0..count {
                proptest::prop_assert!(rebuilt.messages(i).is_some());
            }
        }
    }

    /// A record of a small file whose requests name its messages: blobs (some not request
    /// messages), user records (runs of results, some results that do not parse), and
    /// requests keeping from each other, with markers (some that do not parse). A request's
    /// tail is a list of numbers, each made the name of a message of the file by
    /// [`naming_messages`].
    fn request_file_record() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let blob = (
            prop::sample::select(vec!["h1", "h2"]),
            prop::sample::select(vec![
                json!({"role": "system", "content": "env"}),
                json!({"role": "user", "content": "hi"}),
                json!({"role": "robot", "content": 3}),
                json!({"role": "user", "content": [{"type": "text", "text": 3}]}),
                json!({"role": "assistant", "content": [{"type": "text", "text": "a"}]}),
                json!({"role": "user", "content": [{"type": "mystery", "x": 1}, {"type": "text", "text": "b"}]}),
                json!({"role": "user", "content": [7, {"type": "text", "text": "c"}]}),
                json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}),
                json!({"role": "user", "content": [{"type": "tool_reference", "tool_name": "Read"}]}),
            ]),
        )
            .prop_map(|(hash, message)| json!({"type": "api-request-blob", "hash": hash, "message": message}));
        let result = prop::sample::select(vec![
            json!({"type": "tool_result", "tool_use_id": "t", "content": "x"}),
            json!({"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}),
        ]);
        let user = prop_oneof![
            Just(json!("Go")),
            prop::collection::vec(result, 1..3).prop_map(Value::from),
            Just(json!([{"type": "text", "text": "Go"}])),
        ]
        .prop_map(
            |content| json!({"type": "user", "message": {"role": "user", "content": content}}),
        );
        let marker = (
            0usize..4,
            0usize..3,
            prop::sample::select(vec![
                json!({"type": "ephemeral"}),
                json!({"type": "ephemeral", "ttl": "1h"}),
                json!({"type": "ephemeral", "ttl": "2h"}),
                json!(3),
                json!("x"),
                Value::Null,
            ]),
        )
            .prop_map(
                |(i, j, value)| json!({"path": ["messages", i, "content", j], "value": value}),
            );
        let request = (
            prop::sample::select(vec!["r1", "r2", "r3"]),
            prop::option::of(prop::sample::select(vec!["r1", "r2", "r3", "r9"])),
            0usize..5,
            prop::collection::vec(0usize..64, 0..4),
            prop::collection::vec(marker, 0..3),
        )
            .prop_map(|(id, base, keep, tail, markers)| {
                json!({"type": "api-request", "id": id, "base": base, "keep": keep,
                       "tail": tail, "cacheControl": markers})
            });
        prop_oneof![blob, user, request]
    }

    /// `values` with each request's tail numbers made names of the file's messages (each
    /// number, modulo how many names there are, picks one in sorted order).
    fn naming_messages(values: Vec<Value>) -> Vec<Record> {
        let all = records(values);
        let (_, index) = MessageStore::of(&all);
        let mut names: Vec<&String> = index.keys().collect();
        names.sort();
        let name = |n: &Value| {
            let n = usize::try_from(n.as_u64().unwrap_or_default()).unwrap_or_default();
            names
                .get(n % names.len().max(1))
                .map_or(json!("00"), |h| json!(h))
        };
        let named: Vec<Value> = all
            .iter()
            .map(|record| {
                let mut object = Value::Object(record.object.clone());
                if let Some(tail) = object.get_mut("tail").and_then(Value::as_array_mut) {
                    for n in tail.iter_mut() {
                        *n = name(n);
                    }
                }
                object
            })
            .collect();
        records(named)
    }

    proptest::proptest! {
        /// Whether a request rebuilds is found without rebuilding it, and is what the rebuild
        /// says.
        #[test]
        fn the_rebuild_check_says_what_the_rebuild_does(
            values in proptest::collection::vec(request_file_record(), 0..24),
        ) {
            let all = naming_messages(values);
            let rebuilt = recorded_requests(&all, None);
            let rebuilds = rebuilt.rebuilds();
            proptest::prop_assert_eq!(rebuilds.len(), rebuilt.len());
            for (i, rebuilds) in rebuilds.into_iter().enumerate() {
                proptest::prop_assert_eq!(
                    rebuilds,
                    rebuilt.messages(i).is_some_and(|m| m.is_ok()),
                    "request {}", i
                );
            }
        }
    }

    // Hostile files, at sizes where a quadratic import takes far longer than a linear one.

    /// One large shape named by many small requests: each request shares it (a copy each
    /// would be 20 GB for a 1 MB shape and 20,000 records of 70 bytes).
    #[test]
    fn requests_naming_one_shape_share_it() {
        let values = vec![
            json!({"type": "api-request-shape", "shapeHash": "H",
                   "shape": {"system": [], "tools": [{"name": "t", "description": "d".repeat(4096)}]}}),
            json!({"type": "api-request", "id": "a", "shapeHash": "H", "tail": []}),
            json!({"type": "api-request", "id": "b", "shapeHash": "H", "tail": []}),
        ];
        let rebuilt = recorded_requests(&records(values), None);
        let (Some(a), Some(b)) = (&rebuilt[0].shape, &rebuilt[1].shape) else {
            panic!("both requests name the shape");
        };
        assert!(Arc::ptr_eq(a, b));
        assert!(!a.hash_verified, "H is not the shape's hash");
    }

    /// One large tool result, a run of short ones after it, and a request at every length of
    /// the run marking the large one: the large block is parsed with its marker once, not
    /// once per length (a copy of it each time: 20 GB for a 5 MB result and 4,000 lengths).
    #[test]
    fn a_marker_on_every_length_of_a_run_parses_its_block_once() {
        const LENGTHS: usize = 4_000;
        let large = json!({"type": "tool_result", "tool_use_id": "t0",
                           "content": "x".repeat(64 * 1024)});
        let mut blocks = vec![large];
        blocks.extend((1..LENGTHS).map(
            |n| json!({"type": "tool_result", "tool_use_id": format!("t{n}"), "content": "y"}),
        ));
        let mut values: Vec<Value> = blocks
            .iter()
            .enumerate()
            .map(|(n, block)| user(&format!("u{n}"), json!([block])))
            .collect();
        // Each length's name, hashed as it grows (hashing each length whole would cost this
        // test what the bug cost): the framing is `message_hash`'s, as checked for two.
        let mut prefix = Sha256::new();
        prefix.update(br#"{"content":["#);
        let mut names = Vec::with_capacity(LENGTHS);
        for (n, block) in blocks.iter().enumerate() {
            if n > 0 {
                prefix.update(b",");
            }
            prefix.update(canonical_json(&without_cache_control(block)).as_bytes());
            let mut whole = prefix.clone();
            whole.update(br#"],"role":"user"}"#);
            names.push(hex(&whole.finalize()));
        }
        for len in [1, 2] {
            let whole = json!({"role": "user", "content": blocks[..len]});
            assert_eq!(names[len - 1], message_hash(&whole), "{len}");
        }
        values.extend(names.iter().enumerate().map(|(n, name)| {
            let len = n + 1;
            json!({"type": "api-request", "id": format!("r{len}"), "tail": [name],
                   "cacheControl": [{"path": ["messages", 0, "content", 0],
                                     "value": {"type": "ephemeral"}}]})
        }));
        let rebuilt = recorded_requests(&records(values), None);
        assert_eq!(rebuilt.len(), LENGTHS);
        let mut parsed = HashMap::new();
        assert!(rebuilt.rebuilds_noting(&mut parsed).into_iter().all(|r| r));
        assert_eq!(
            parsed.len(),
            1,
            "one block, one kind of marker: parsed once"
        );
        let last = rebuilt
            .messages(LENGTHS - 1)
            .expect("a request")
            .expect("rebuilt");
        let content = last[0].content.to_blocks();
        assert_eq!(content.len(), LENGTHS);
        assert!(content[0].cache_control().is_some());
    }

    /// One request of many messages, then many requests each keeping all of them: each holds
    /// its own tail and a link, not a copy (copies would be 10⁹ indices, 8 GB, at this size).
    #[test]
    fn requests_keeping_a_long_request_do_not_copy_it() {
        const LONG: usize = 50_000;
        const KEEPING: usize = 20_000;
        let prompt = json!({"role": "user", "content": "Go"});
        let name = message_hash(&prompt);
        let mut values = vec![
            user("u1", json!("Go")),
            json!({"type": "api-request", "id": "long", "tail": vec![name.clone(); LONG]}),
        ];
        values.extend((0..KEEPING).map(|n| {
            json!({"type": "api-request", "id": format!("r{n}"), "base": "long", "keep": LONG,
                   "tail": [name]})
        }));
        let rebuilt = recorded_requests(&records(values), None);
        assert_eq!(rebuilt.len(), KEEPING + 1);
        assert!(rebuilt.iter().all(|r| r.problem().is_none()));
        assert!(rebuilt.rebuilds().into_iter().all(|r| r));
        let last = rebuilt
            .messages(KEEPING)
            .expect("a request")
            .expect("rebuilt");
        assert_eq!(last.len(), LONG + 1);
        // A request keeping more than its base has is still refused.
        let refused = recorded_requests(
            &records(vec![
                json!({"type": "api-request", "id": "a", "tail": []}),
                json!({"type": "api-request", "id": "b", "base": "a", "keep": LONG}),
            ]),
            None,
        );
        assert!(matches!(
            refused[1].problem(),
            Some(RequestRecordError::UnknownBase { keep: LONG, .. })
        ));
    }
}
