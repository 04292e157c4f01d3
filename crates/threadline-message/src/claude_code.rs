//! Import of Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`) into the
//! internal message array.
//!
//! A Claude Code transcript is JSONL: one record per line, each with a `type`. Conversation
//! records (`user`, `assistant`, `system`) carry a `uuid` and the `parentUuid` of the record
//! before them, so a file holds a tree: a rewind or an edited prompt starts a new branch, and
//! sub-agents (`isSidechain: true`) write their own chains into the same file (older versions)
//! or into `agent-*.jsonl` files.
//!
//! # Which records become messages
//!
//! * **The main chain.** The leaf is the last record in the file (the newest write) that is not
//!   a sidechain, is a `user`, `assistant` or `system` record, and is nobody's parent; the chain
//!   is that leaf and its ancestors, found by following `parentUuid` — or, where it is null,
//!   `logicalParentUuid`, which a `compact_boundary` uses to point at the last message before
//!   the compaction (so the history before a compaction is imported too, followed by the
//!   boundary, which tells the normalizer where the model's view starts). This is the
//!   conversation Claude Code resumes. Where a record names a parent that is not in the file
//!   (a line lost to a crash or an edit), the chain continues from the latest earlier record
//!   that nothing follows — the record the lost line followed — and the gap is reported as
//!   [`LineProblemKind::BrokenChain`], so a lost line loses only itself. Records on other
//!   branches are counted in [`ImportResult::skipped_off_chain`]; a `uuid` seen twice (a
//!   resumed session copies records) is taken from its last occurrence.
//! * **Cycles.** A record that is its own ancestor (it names itself as its parent, or its
//!   `parentUuid` chain comes back to it) is reported as [`LineProblemKind::ParentCycle`]:
//!   when the main chain runs into a cycle, the walk stops after going round it once (the
//!   cycle's records are imported) and the record closing it is reported; a cycle no chain
//!   leads to is on no chain, and each of its records is reported as dropped. The walk visits
//!   each record at most once, so it ends on any graph.
//! * **Sidechains** (sub-agent conversations) are left out and counted in
//!   [`ImportResult::skipped_sidechain`], unless [`ImportOptions::include_sidechains`] is set:
//!   then every sidechain record is imported too, at its place in the file.
//! * Messages are returned in file order, which for files Claude Code wrote is chain order.
//!
//! # How records map
//!
//! * `user` → [`UserMessage`]: string content becomes one text block; `isMeta` →
//!   `is_meta`, `isCompactSummary` → `is_compact_summary`, `toolUseResult` → `tool_use_result`.
//! * `assistant` → [`AssistantMessage`]: `message.id` → `api_message_id`, `requestId` →
//!   `request_id`, `model`, `stop_reason`, `usage`, `isApiErrorMessage` → `is_api_error`.
//!   Claude Code writes one record per content block of a streamed response, all sharing
//!   `message.id`: each stays a separate fragment (the normalizer merges them).
//! * `system` → [`SystemMessage`]: `compact_boundary` (trigger and `preTokens` from
//!   `compactMetadata`, `logicalParentUuid` as the last message), `microcompact_boundary`,
//!   `local_command`, `api_error`, `stop_hook_summary`, `turn_duration`; any other subtype
//!   with a text `content` becomes [`SystemKind::Informational`] (a subtype without one is
//!   kept opaque).
//! * The record's `uuid` and `timestamp` make the [`Header`] (a missing timestamp is empty).
//! * Everything else — `summary` (a session title; see [`ImportResult::summaries`]; its
//!   `leafUuid` often names a record of another session, so it never picks the chain),
//!   `file-history-snapshot`, `queue-operation`, `attachment`, `progress`, and any type this
//!   version does not know — is kept verbatim in [`ImportResult::opaque`]. Records without a
//!   `uuid` are always kept; opaque records with one only when they are on the imported chain.
//!
//! Nothing fails the import: a line that is not JSON is skipped and reported (a cut last line
//! as [`LineProblemKind::CutLastLine`]), a known record whose shape is not understood is kept
//! opaque and reported, and a content block that does not parse is kept as an unknown block
//! and reported.
//!
//! ```
//! use threadline_message::claude_code::{ImportOptions, import_claude_code, is_claude_code_transcript};
//! use threadline_message::{LineProblemKind, Message};
//!
//! let transcript = concat!(
//!     r#"{"type":"file-history-snapshot","messageId":"m1","snapshot":{}}"#, "\n",
//!     r#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"sessionId":"s","timestamp":"2025-10-13T09:00:00.000Z","message":{"role":"user","content":"hi"}}"#, "\n",
//!     r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","isSidechain":false,"sessionId":"s","timestamp":"2025-10-13T09:00:01.000Z","requestId":"req_1","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn"}}"#, "\n",
//!     r#"{"type":"user","uuid":"w1","parentUuid":null,"isSidechain":true,"sessionId":"s","timestamp":"2025-10-13T09:00:02.000Z","message":{"role":"user","content":"Warmup"}}"#, "\n",
//!     r#"{"type":"user","uuid":"u2","parentUuid":"a1","isSidechain":false,"sessionId":"s","timest"#,
//! );
//! assert!(is_claude_code_transcript(transcript));
//!
//! let imported = import_claude_code(transcript, &ImportOptions::default());
//! assert_eq!(imported.messages.len(), 2);
//! assert!(matches!(&imported.messages[1],
//!     Message::Assistant(a) if a.api_message_id.as_deref() == Some("msg_1")));
//! assert_eq!(imported.opaque.len(), 1); // the file-history-snapshot
//! assert_eq!(imported.skipped_sidechain, 1);
//! assert_eq!(imported.problems[0].line, 5);
//! assert_eq!(imported.problems[0].kind, LineProblemKind::CutLastLine);
//! ```

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufReader};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};
use threadline_wire::{ContentBlock, StopReason, Usage};

use crate::header::{Header, MessageId, Timestamp};
use crate::message::{AssistantMessage, Message, SystemMessage, UserMessage};
use crate::system::{CompactTrigger, Level, SystemKind};
use crate::transcript::{
    DEFAULT_MAX_LINE_BYTES, LineContent, LineProblem, LineProblemKind, RawLine, TranscriptError,
    for_each_line, is_blank, too_long,
};

/// Knobs of the import.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Import sidechain (sub-agent) records too, at their place in the file. Off by default.
    pub include_sidechains: bool,
    /// The longest line accepted, in bytes; longer lines are reported as malformed without
    /// being held in memory. Default [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            include_sidechains: false,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

impl ImportOptions {
    /// These options with sidechains included or not.
    pub fn with_sidechains(mut self, include_sidechains: bool) -> Self {
        self.include_sidechains = include_sidechains;
        self
    }

    /// These options with the given line limit.
    pub fn with_max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes;
        self
    }
}

/// What an import produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportResult {
    /// The imported messages, in file order.
    pub messages: Vec<Message>,
    /// Records kept verbatim because they are not messages (summaries, file-history
    /// snapshots, record types this version does not know, known records whose shape was not
    /// understood), in file order.
    pub opaque: Vec<Value>,
    /// Lines skipped and records imported imperfectly, in file order.
    pub problems: Vec<LineProblem>,
    /// Sidechain records left out (see [`ImportOptions::include_sidechains`]).
    pub skipped_sidechain: usize,
    /// Records left out because they are not on the main chain (abandoned branches, earlier
    /// copies of a duplicated `uuid`).
    pub skipped_off_chain: usize,
}

/// A `summary` record: the title Claude Code gave a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSummary<'a> {
    /// The title.
    pub summary: &'a str,
    /// The last record of the conversation it names (often in another session's file).
    pub leaf_uuid: Option<&'a str>,
}

impl ImportResult {
    /// The `summary` records among the opaque ones.
    pub fn summaries(&self) -> impl Iterator<Item = SessionSummary<'_>> {
        self.opaque.iter().filter_map(|record| {
            (record.get("type")?.as_str()? == "summary").then_some(())?;
            Some(SessionSummary {
                summary: record.get("summary")?.as_str()?,
                leaf_uuid: record.get("leafUuid").and_then(Value::as_str),
            })
        })
    }
}

/// Imports a Claude Code transcript held in memory.
pub fn import_claude_code(text: &str, options: &ImportOptions) -> ImportResult {
    let mut parsed = ParsedLines::default();
    let result = for_each_line(text.as_bytes(), options.max_line_bytes, |line| {
        parsed.push(line, options.max_line_bytes);
    });
    if let Err(error) = result {
        // Reading from a slice does not fail; should it ever, say so rather than panic.
        parsed.problems.push(LineProblem {
            line: parsed.last_line + 1,
            kind: LineProblemKind::Malformed {
                error: error.to_string(),
            },
        });
    }
    parsed.import(options)
}

/// Imports the Claude Code transcript at `path`, streaming it line by line.
pub fn import_claude_code_file(
    path: impl AsRef<Path>,
    options: &ImportOptions,
) -> Result<ImportResult, TranscriptError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| TranscriptError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut parsed = ParsedLines::default();
    for_each_line(BufReader::new(file), options.max_line_bytes, |line| {
        parsed.push(line, options.max_line_bytes);
    })
    .map_err(|source: io::Error| TranscriptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(parsed.import(options))
}

/// Whether `text` looks like a Claude Code transcript rather than one of ours.
///
/// The first record that decides is the answer: one with a `uuid`, `parentUuid`, `sessionId`
/// or `leafUuid` field, or of a type only Claude Code writes (`summary`,
/// `file-history-snapshot`, `queue-operation`), says yes; one with `type` and `id` (our
/// [`Message`] lines) says no. Lines that are not JSON objects and records that decide
/// nothing are passed over; a text where nothing decides is not a Claude Code transcript.
pub fn is_claude_code_transcript(text: &str) -> bool {
    text.lines()
        .filter_map(|line| match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(record)) => decides(&record),
            _ => None,
        })
        .next()
        .unwrap_or(false)
}

fn decides(record: &Map<String, Value>) -> Option<bool> {
    const CLAUDE_CODE_FIELDS: [&str; 4] = ["uuid", "parentUuid", "sessionId", "leafUuid"];
    const CLAUDE_CODE_TYPES: [&str; 3] = ["summary", "file-history-snapshot", "queue-operation"];
    let record_type = record.get("type").and_then(Value::as_str);
    if CLAUDE_CODE_FIELDS.iter().any(|f| record.contains_key(*f))
        || record_type.is_some_and(|t| CLAUDE_CODE_TYPES.contains(&t))
    {
        Some(true)
    } else if record_type.is_some() && record.contains_key("id") {
        Some(false)
    } else {
        None
    }
}

// --- reading ---------------------------------------------------------------------------------

/// A record: a JSON object and the line it came from.
struct Record {
    line: usize,
    object: Map<String, Value>,
}

#[derive(Default)]
struct ParsedLines {
    records: Vec<Record>,
    problems: Vec<LineProblem>,
    last_line: usize,
}

impl ParsedLines {
    fn push(&mut self, line: RawLine<'_>, max_line_bytes: usize) {
        self.last_line = line.number;
        let problem = |kind| LineProblem {
            line: line.number,
            kind,
        };
        let bytes = match line.content {
            LineContent::TooLong(len) => {
                self.problems.push(problem(too_long(len, max_line_bytes)));
                return;
            }
            LineContent::Bytes(bytes) => bytes,
        };
        if is_blank(bytes) {
            return;
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(object)) => self.records.push(Record {
                line: line.number,
                object,
            }),
            Ok(_) => self.problems.push(problem(LineProblemKind::Malformed {
                error: "not a JSON object".to_owned(),
            })),
            Err(_) if !line.terminated => self.problems.push(problem(LineProblemKind::CutLastLine)),
            Err(error) => self.problems.push(problem(LineProblemKind::Malformed {
                error: error.to_string(),
            })),
        }
    }

    fn import(self, options: &ImportOptions) -> ImportResult {
        let (places, mut bridges) = place_records(&self.records, options.include_sidechains);
        let mut result = ImportResult {
            problems: self.problems,
            ..ImportResult::default()
        };
        result.problems.append(&mut bridges);
        for (record, place) in self.records.into_iter().zip(places) {
            match place {
                Place::Imported => match map_record(record, &mut result.problems) {
                    Mapped::Message(message) => result.messages.push(*message),
                    Mapped::Opaque(object) => result.opaque.push(Value::Object(object)),
                },
                Place::Unchained => {
                    if let Some(record_type) = conversation_type(&record.object) {
                        result.problems.push(LineProblem {
                            line: record.line,
                            kind: LineProblemKind::Unmapped {
                                record_type: record_type.to_owned(),
                                error: "no `uuid`".to_owned(),
                            },
                        });
                    }
                    result.opaque.push(Value::Object(record.object));
                }
                Place::SkippedSidechain => result.skipped_sidechain += 1,
                Place::SkippedOffChain => result.skipped_off_chain += 1,
            }
        }
        // Problems came from two passes (lines, then records): keep them in file order.
        result.problems.sort_by_key(|p| p.line);
        result
    }
}

// --- choosing the chain ----------------------------------------------------------------------

/// What happens to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// On the main chain, or a sidechain record when sidechains are included.
    Imported,
    /// No `uuid`: not part of any chain (summaries, snapshots); kept opaque.
    Unchained,
    /// A sidechain record, left out.
    SkippedSidechain,
    /// On another branch, or an earlier copy of a duplicated `uuid`.
    SkippedOffChain,
}

/// The record types that become messages and may end the main chain.
fn conversation_type(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| matches!(*t, "user" | "assistant" | "system"))
}

fn uuid(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("uuid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
}

fn is_sidechain(object: &Map<String, Value>) -> bool {
    object.get("isSidechain").and_then(Value::as_bool) == Some(true)
}

/// The record before this one: `parentUuid`, or `logicalParentUuid` where that is null (a
/// compaction boundary).
fn parent(object: &Map<String, Value>) -> Option<&str> {
    let non_empty = |key| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|u: &&str| !u.is_empty())
    };
    non_empty("parentUuid").or_else(|| non_empty("logicalParentUuid"))
}

/// Where each record goes, and the places where the chain had to be bridged.
fn place_records(records: &[Record], include_sidechains: bool) -> (Vec<Place>, Vec<LineProblem>) {
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut parents: HashSet<&str> = HashSet::new();
    for (index, record) in records.iter().enumerate() {
        if let Some(id) = uuid(&record.object) {
            by_uuid.insert(id, index);
            if !is_sidechain(&record.object) {
                parents.extend(parent(&record.object));
            }
        }
    }
    let is_leaf = |index: usize, record: &Record| {
        !is_sidechain(&record.object)
            && uuid(&record.object)
                .is_some_and(|id| by_uuid.get(id) == Some(&index) && !parents.contains(id))
    };
    let leaf = records
        .iter()
        .enumerate()
        .rev()
        .find(|(i, r)| is_leaf(*i, r) && conversation_type(&r.object).is_some())
        .or_else(|| {
            records
                .iter()
                .enumerate()
                .rev()
                .find(|(i, r)| is_leaf(*i, r))
        })
        .map(|(i, _)| i);

    let cycles = on_cycle(records, &by_uuid);
    let mut on_chain = vec![false; records.len()];
    let mut bridges = Vec::new();
    let mut next = leaf;
    let mut previous: Option<usize> = None;
    while let Some(index) = next {
        if on_chain[index] {
            // Back at a record of the chain: a cycle, closed by the record before naming an
            // ancestor of its own (unless a bridge led there: then it is a branch joining).
            if let Some(closing) = previous.filter(|&c| cycles[c]) {
                bridges.push(cycle_problem(&records[closing], closing == index, false));
            }
            break;
        }
        on_chain[index] = true;
        previous = Some(index);
        let Some(parent_id) = parent(&records[index].object) else {
            break; // a root
        };
        next = by_uuid.get(parent_id).copied().or_else(|| {
            // The parent is not in the file: a lost line (cut, malformed or removed), or a
            // parent in an earlier session's file. Continue from the latest earlier record that
            // nothing follows, if there is one; a lost line leaves exactly such a record behind.
            let bridge = (0..index).rev().find(|&i| {
                !on_chain[i]
                    && is_leaf(i, &records[i])
                    && conversation_type(&records[i].object).is_some()
            });
            if bridge.is_some() {
                bridges.push(LineProblem {
                    line: records[index].line,
                    kind: LineProblemKind::BrokenChain {
                        missing_parent: parent_id.to_owned(),
                    },
                });
            }
            bridge
        });
    }

    // Cycles no chain leads to: their records are on no chain; say so instead of dropping
    // them silently.
    for (index, record) in records.iter().enumerate() {
        if cycles[index] && !on_chain[index] && !is_sidechain(&record.object) {
            let self_parented = parent(&record.object) == uuid(&record.object);
            bridges.push(cycle_problem(record, self_parented, true));
        }
    }

    let places = records
        .iter()
        .zip(on_chain)
        .map(|(record, on_chain)| {
            if uuid(&record.object).is_none() {
                Place::Unchained
            } else if is_sidechain(&record.object) {
                if include_sidechains {
                    Place::Imported
                } else {
                    Place::SkippedSidechain
                }
            } else if on_chain {
                Place::Imported
            } else {
                Place::SkippedOffChain
            }
        })
        .collect();
    (places, bridges)
}

fn cycle_problem(record: &Record, self_parented: bool, dropped: bool) -> LineProblem {
    LineProblem {
        line: record.line,
        kind: LineProblemKind::ParentCycle {
            uuid: uuid(&record.object).unwrap_or_default().to_owned(),
            self_parented,
            dropped,
        },
    }
}

/// Which records are their own ancestor. Each record has at most one parent (the last record
/// with the `uuid` it names), so the records and their parents form a functional graph: one
/// walk per record, each record visited once over all walks (O(N)).
fn on_cycle(records: &[Record], by_uuid: &HashMap<&str, usize>) -> Vec<bool> {
    const UNSEEN: usize = usize::MAX;
    const DONE: usize = usize::MAX - 1;
    let parent_of =
        |index: usize| parent(&records[index].object).and_then(|p| by_uuid.get(p).copied());
    let mut cycle = vec![false; records.len()];
    // UNSEEN, DONE, or the position of the record on the current walk.
    let mut state = vec![UNSEEN; records.len()];
    let mut walk = Vec::new();
    for start in 0..records.len() {
        walk.clear();
        let mut current = Some(start);
        while let Some(index) = current {
            match state[index] {
                UNSEEN => {
                    state[index] = walk.len();
                    walk.push(index);
                    current = parent_of(index);
                }
                DONE => break,
                position => {
                    // Back on this walk: everything from there on is the cycle.
                    for &on in &walk[position..] {
                        cycle[on] = true;
                    }
                    break;
                }
            }
        }
        for &index in &walk {
            state[index] = DONE;
        }
    }
    cycle
}

// --- mapping records -------------------------------------------------------------------------

enum Mapped {
    // Boxed: a message is much larger than a map.
    Message(Box<Message>),
    Opaque(Map<String, Value>),
}

fn map_record(record: Record, problems: &mut Vec<LineProblem>) -> Mapped {
    let Record { line, mut object } = record;
    let Some(record_type) = conversation_type(&object).map(str::to_owned) else {
        return Mapped::Opaque(object);
    };
    let header = Header {
        id: MessageId(uuid(&object).unwrap_or_default().to_owned()),
        timestamp: Timestamp(
            str_field(&object, "timestamp")
                .unwrap_or_default()
                .to_owned(),
        ),
    };
    let mut block_problems = Vec::new();
    let mapped = match record_type.as_str() {
        "user" => map_user(&object, header, &mut block_problems).map(|mut user| {
            user.tool_use_result = object.remove("toolUseResult").filter(|v| !v.is_null());
            Some(Message::User(user))
        }),
        "assistant" => map_assistant(&object, header, &mut block_problems)
            .map(|assistant| Some(Message::Assistant(assistant))),
        _ => Ok(map_system(&object).map(|kind| Message::System(SystemMessage { header, kind }))),
    };
    match mapped {
        Ok(Some(message)) => {
            problems.extend(
                block_problems
                    .into_iter()
                    .map(|kind| LineProblem { line, kind }),
            );
            Mapped::Message(Box::new(message))
        }
        Ok(None) => Mapped::Opaque(object),
        Err(error) => {
            problems.push(LineProblem {
                line,
                kind: LineProblemKind::Unmapped { record_type, error },
            });
            Mapped::Opaque(object)
        }
    }
}

fn str_field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn bool_field(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool) == Some(true)
}

/// A non-negative number as `u64` (fractions, which Claude Code writes for some durations,
/// are rounded).
fn u64_field(object: Option<&Map<String, Value>>, key: &str) -> Option<u64> {
    let value = object?.get(key)?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            // In range: finite, non-negative, and `as` saturates at u64::MAX.
            .map(|f| f.round() as u64)
    })
}

/// The API-style `message` object of a user or assistant record.
fn api_message(object: &Map<String, Value>) -> Result<&Map<String, Value>, String> {
    object
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| "no `message` object".to_owned())
}

/// `message.content`: a string (one text block) or a list of blocks. A block that does not
/// parse is kept verbatim as an unknown block and reported.
fn content_blocks(
    message: &Map<String, Value>,
    problems: &mut Vec<LineProblemKind>,
) -> Result<Vec<ContentBlock>, String> {
    match message.get("content") {
        Some(Value::String(text)) => Ok(vec![ContentBlock::text(text.clone())]),
        Some(Value::Array(items)) => Ok(items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                ContentBlock::deserialize(item).unwrap_or_else(|error| {
                    problems.push(LineProblemKind::BadBlock {
                        index,
                        error: error.to_string(),
                    });
                    ContentBlock::Unknown(item.clone())
                })
            })
            .collect()),
        Some(_) => Err("`message.content` is neither text nor a list of blocks".to_owned()),
        None => Err("no `message.content`".to_owned()),
    }
}

fn map_user(
    object: &Map<String, Value>,
    header: Header,
    problems: &mut Vec<LineProblemKind>,
) -> Result<UserMessage, String> {
    let message = api_message(object)?;
    Ok(UserMessage {
        header,
        content: content_blocks(message, problems)?,
        is_meta: bool_field(object, "isMeta"),
        is_virtual: false,
        is_compact_summary: bool_field(object, "isCompactSummary"),
        tool_use_result: None,
    })
}

fn map_assistant(
    object: &Map<String, Value>,
    header: Header,
    problems: &mut Vec<LineProblemKind>,
) -> Result<AssistantMessage, String> {
    let message = api_message(object)?;
    Ok(AssistantMessage {
        header,
        api_message_id: str_field(message, "id").map(str::to_owned),
        request_id: str_field(object, "requestId").map(str::to_owned),
        model: str_field(message, "model").unwrap_or_default().to_owned(),
        content: content_blocks(message, problems)?,
        stop_reason: str_field(message, "stop_reason").map(StopReason::from),
        // Usage is informational: one that does not parse is left out.
        usage: message
            .get("usage")
            .and_then(|u| Usage::deserialize(u).ok())
            .map(Box::new),
        is_api_error: bool_field(object, "isApiErrorMessage"),
    })
}

/// The kind of a `system` record; `None` for a subtype this version does not map and that
/// has no text to show.
fn map_system(object: &Map<String, Value>) -> Option<SystemKind> {
    let content = str_field(object, "content");
    let text = || content.unwrap_or_default().to_owned();
    let metadata = |key| object.get(key).and_then(Value::as_object);
    let kind = match str_field(object, "subtype") {
        Some("compact_boundary") => {
            let meta = metadata("compactMetadata");
            SystemKind::CompactBoundary {
                trigger: match meta.and_then(|m| str_field(m, "trigger")) {
                    Some("manual") => CompactTrigger::Manual,
                    Some("reactive") => CompactTrigger::Reactive,
                    // `auto`, and whatever a later version adds.
                    _ => CompactTrigger::Auto,
                },
                pre_tokens: u64_field(meta, "preTokens").unwrap_or(0),
                last_message_id: str_field(object, "logicalParentUuid").map(MessageId::from),
            }
        }
        Some("microcompact_boundary") => {
            let meta = metadata("microcompactMetadata");
            SystemKind::MicrocompactBoundary {
                cleared_tool_use_ids: meta
                    .and_then(|m| m.get("compactedToolIds"))
                    .and_then(Value::as_array)
                    .map(|ids| {
                        ids.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                tokens_saved: u64_field(meta, "tokensSaved").unwrap_or(0),
            }
        }
        Some("local_command") => SystemKind::LocalCommand { content: text() },
        Some("api_error") => SystemKind::ApiError {
            message: content
                .map(str::to_owned)
                .unwrap_or_else(|| api_error_message(object.get("error"))),
            attempt: u32_from(u64_field(Some(object), "retryAttempt")),
            max_attempts: u32_from(u64_field(Some(object), "maxRetries")),
            retry_in_ms: u64_field(Some(object), "retryInMs"),
        },
        Some("stop_hook_summary") => SystemKind::StopHookSummary {
            content: content.map(str::to_owned).unwrap_or_else(|| {
                object
                    .get("hookErrors")
                    .and_then(Value::as_array)
                    .map(|errors| {
                        errors
                            .iter()
                            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default()
            }),
            prevented_continuation: bool_field(object, "preventedContinuation"),
        },
        Some("turn_duration") => SystemKind::TurnDuration {
            duration_ms: u64_field(Some(object), "durationMs").unwrap_or(0),
        },
        _ => SystemKind::Informational {
            level: match str_field(object, "level") {
                Some("warning") => Level::Warning,
                Some("error") => Level::Error,
                _ => Level::Info,
            },
            content: content?.to_owned(),
        },
    };
    Some(kind)
}

fn u32_from(value: Option<u64>) -> u32 {
    value.map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// The text of an `api_error` record's `error`: its `message` (possibly nested one level, as
/// the API's error bodies are), else the error as JSON.
fn api_error_message(error: Option<&Value>) -> String {
    let Some(error) = error else {
        return "API error".to_owned();
    };
    error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| {
            error
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
        })
        .map_or_else(|| error.to_string(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: usize, json: Value) -> Record {
        let Value::Object(object) = json else {
            panic!("an object")
        };
        Record { line, object }
    }

    #[test]
    fn the_newest_leaf_wins_and_cycles_end_the_walk() {
        let records = vec![
            record(
                1,
                serde_json::json!({"type":"user","uuid":"a","parentUuid":"c"}),
            ),
            record(
                2,
                serde_json::json!({"type":"assistant","uuid":"b","parentUuid":"a"}),
            ),
            record(
                3,
                serde_json::json!({"type":"user","uuid":"c","parentUuid":"b"}),
            ),
            record(
                4,
                serde_json::json!({"type":"user","uuid":"d","parentUuid":"a"}),
            ),
        ];
        // `d` is the only leaf; `a` → `c` → `b` → `a` is a cycle.
        assert_eq!(
            place_records(&records, false).0,
            vec![
                Place::Imported,
                Place::Imported,
                Place::Imported,
                Place::Imported
            ]
        );
    }
}
