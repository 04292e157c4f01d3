//! Import of Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`, CC 1.0
//! to 2.1) into the internal message array.
//!
//! A Claude Code transcript is JSONL: one record per line, each with a `type`. Chain records
//! (`user`, `assistant`, `system`, `attachment`, `progress`) carry a `uuid` and the
//! `parentUuid` of the record before them, so a file holds a forest: a rewind or an edited
//! prompt starts a new branch, a compaction starts a new root, parallel tool results each
//! branch off their own `tool_use`, and sub-agents (`isSidechain: true`) write their own
//! chains into the same file (1.x) or into `agent-*.jsonl` files (2.x). Metadata records
//! (`summary`, `custom-title`, `ai-title`, `last-prompt`, `tag`, `file-history-snapshot`,
//! `queue-operation`, …) are outside the graph.
//!
//! The module is one file per idea: `lines` reads and assembles, `graph` places each record
//! (the leaf, the walk, what the walk misses), `records` maps a record to a message,
//! `attachments` maps `attachment` payloads, `summary` gathers what a session listing shows,
//! `request_records` rebuilds the requests Claude Code recorded (from the messages
//! `message_store` holds once and the `recipes` saying which of them each request is made
//! of), and `next_request` extends the last of them.
//!
//! # Which records become messages
//!
//! * **The main chain.** The leaf is the last record in the file (the newest write) that is not
//!   a sidechain, is a `user`, `assistant`, `system` or `attachment` record, and is nobody's
//!   parent; the chain is that leaf and its ancestors, found by following `parentUuid`. This is
//!   the conversation Claude Code resumes. Where a record names a parent that is not in the
//!   file (a line lost to a crash or an edit), the chain continues from the latest earlier
//!   record that nothing follows — the record the lost line followed — and the gap is reported
//!   as [`LineProblemKind::BrokenChain`], so a lost line loses only itself. Records on other
//!   branches are counted in [`ImportResult::skipped_off_chain`]; a `uuid` seen twice (a
//!   resumed session copies records) is taken from its last occurrence.
//! * **Compactions.** The walk stops at the last `compact_boundary` on the chain: the model's
//!   view after a compaction starts at the boundary and the `isCompactSummary` user record
//!   after it, and the history the summary replaced would otherwise be sent twice. The records
//!   before the boundary (its `logicalParentUuid` and that record's ancestors) are counted in
//!   [`ImportResult::skipped_compacted`]. [`ImportOptions::follow_compactions`] follows
//!   `logicalParentUuid` instead, for a history view (the boundary is then in the middle, and
//!   a caller building a request must start after it).
//! * **What a `parentUuid` walk misses** (2.1 writes parallel tool results each with its own
//!   `tool_use` fragment as parent, so the graph branches): after the walk, every other
//!   fragment of an on-chain response (same `message.id`) and every user record holding the
//!   `tool_result` of an on-chain `tool_use` is imported too, and a run of such results is put
//!   in the order of the tool uses they answer. A run of results on one chain (1.x) keeps its
//!   order.
//! * **Cycles.** A record that is its own ancestor (it names itself as its parent, or its
//!   `parentUuid` chain comes back to it) is reported as [`LineProblemKind::ParentCycle`]:
//!   when the main chain runs into a cycle, the walk stops after going round it once (the
//!   cycle's records are imported) and the record closing it is reported; a cycle no chain
//!   leads to is on no chain, and each of its records is reported as dropped. The walk visits
//!   each record at most once, so it ends on any graph, and each bridge across a lost link is
//!   one look-up in an ordered set: the walk is O(N log N) for N records, whatever the file.
//! * **Sidechains** (sub-agent conversations inside a parent's file) are left out and counted
//!   in [`ImportResult::skipped_sidechain`], unless [`ImportOptions::include_sidechains`] is
//!   set: then every sidechain record is imported too, at its place in the file. A file whose
//!   `user` and `assistant` records are **all** sidechains is a sub-agent's own file: its
//!   sidechain is its conversation, imported as the main chain
//!   ([`ImportResult::is_all_sidechain`]).
//! * Messages are returned in file order (which for files Claude Code wrote is chain order),
//!   except for the reordered parallel results above, and for consecutive fragments of one
//!   response whose records all carry an `apiBlockIndex` (recent 2.1), put in that order.
//!
//! # How records map
//!
//! * `user` → [`UserMessage`](crate::UserMessage): string content becomes one text block;
//!   `isMeta` → `is_meta`, `isCompactSummary` → `is_compact_summary`, `toolUseResult` (an
//!   object, a plain string or a list) → `tool_use_result`. Interrupts (`[Request interrupted
//!   by user]`) are the user text Claude Code sends. Images nested in a `tool_result` are kept.
//! * `assistant` → [`AssistantMessage`](crate::AssistantMessage): `message.id` →
//!   `api_message_id`, `requestId` → `request_id`, `model`, `stop_reason`, `usage`,
//!   `isApiErrorMessage` → `is_api_error` (never sent). Claude Code writes one record per
//!   content block of a streamed response, all sharing `message.id`: each stays a separate
//!   fragment (the normalizer merges them; usage is counted once, see [`SessionInfo::usage`]).
//! * `system` → [`SystemMessage`](crate::SystemMessage): `compact_boundary` (trigger and
//!   `preTokens` from `compactMetadata`, `logicalParentUuid` as the last message),
//!   `microcompact_boundary`, `local_command` (which the normalizer sends as user text),
//!   `api_error`, `stop_hook_summary`, `turn_duration`; any other subtype with a text
//!   `content` becomes [`SystemKind::Informational`](crate::SystemKind::Informational) (a
//!   subtype without one is kept opaque).
//! * `attachment` → [`AttachmentMessage`](crate::AttachmentMessage): `file`, `directory`,
//!   `nested_memory`, `date_change`, `queued_command`, `todo`/`todo_reminder`/`task_reminder`
//!   and the three `*_delta` kinds become their typed [`Attachment`](crate::Attachment) when
//!   their fields fit; every other kind (and a known kind whose fields do not fit) becomes
//!   [`Attachment::ClaudeCode`](crate::Attachment::ClaudeCode) holding the payload as written.
//!   A record without an `attachment` object is kept opaque and reported.
//! * The record's `uuid` and `timestamp` make the [`Header`](crate::Header) (a missing
//!   timestamp is empty).
//! * Everything else — `progress` (on the chain or a side leaf of it), the metadata records
//!   (`summary`: see [`ImportResult::summaries`]; its `leafUuid` often names a record of
//!   another session, so it never picks the chain), and any type this version does not know —
//!   is kept verbatim in [`ImportResult::opaque`]. Metadata and records without a `uuid` are
//!   always kept; an unknown type with a `uuid` is part of the graph (the chain runs through
//!   it) and kept when it is on the imported chain.
//!
//! # What the file says about its session
//!
//! [`ImportResult::session`] ([`SessionInfo`]) is gathered from every record, whichever chain
//! it is on: session and agent ids, the first timestamp, the title (last `custom-title`, else
//! `ai-title`, else `last-prompt`, else `summary`, else the first typed prompt), the tag, the
//! model, and the usage, one entry per `requestId`. [`ImportResult::title`],
//! [`ImportResult::session_id`], [`ImportResult::agent_id`], [`ImportResult::first_timestamp`],
//! [`ImportResult::is_all_sidechain`], [`ImportResult::model`] and [`ImportResult::usage`] are
//! its accessors.
//!
//! Nothing fails the import: a line that is not JSON is skipped and reported (a cut last line
//! as [`LineProblemKind::CutLastLine`]), a known record whose shape is not understood is kept
//! opaque and reported, and a content block that does not parse is kept as an unknown block
//! and reported.
//!
//! No file makes the import quadratic: for a file of N records it is O(N log N) (the walk's
//! bridges, the ordering of parallel results) plus what reading each record costs, whatever
//! the records say — however many parents are lost, uuids preserved, results in a run, or
//! messages a recorded request keeps ([`RecordedRequests`] holds each request's new messages
//! only, not a copy of what it keeps, and shares a shape among the requests that name it).
//! The walk, the compaction records, the request records and rewind are tested at sizes
//! where a quadratic pass would not finish.
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

mod attachments;
mod graph;
mod lines;
mod message_store;
mod next_request;
mod recipes;
mod records;
mod request_records;
mod summary;

use std::fs::File;
use std::io::{self, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use crate::message::Message;
use crate::transcript::{
    DEFAULT_MAX_LINE_BYTES, LineProblem, LineProblemKind, TranscriptError, for_each_line,
};

use lines::ParsedLines;
pub use next_request::NextRequest;
pub use request_records::{
    RecordedRequest, RecordedRequests, RecordedShape, RequestRecordError, body_shape_hash,
    canonical_json, message_hash,
};
pub use summary::{FIRST_PROMPT_CHARS, SessionInfo};

use crate::response_usage::UsageTotals;

/// Knobs of the import.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Import sidechain (sub-agent) records too, at their place in the file. Off by default.
    pub include_sidechains: bool,
    /// Follow a `compact_boundary`'s `logicalParentUuid` into the history before it (a
    /// history view: the pre-compaction messages, the boundary, the summary, and what came
    /// after). Off by default: the import is the conversation as the model sees it, which
    /// starts at the boundary and its summary; the records before it are counted in
    /// [`ImportResult::skipped_compacted`].
    pub follow_compactions: bool,
    /// The longest line accepted, in bytes; longer lines are reported as malformed without
    /// being held in memory. Default [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            include_sidechains: false,
            follow_compactions: false,
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

    /// These options following compaction boundaries into earlier history, or not (see
    /// [`ImportOptions::follow_compactions`]).
    pub fn with_compacted_history(mut self, follow_compactions: bool) -> Self {
        self.follow_compactions = follow_compactions;
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
    /// Records left out because they are before the last compaction boundary of the main
    /// chain (see [`ImportOptions::follow_compactions`]).
    pub skipped_compacted: usize,
    /// What the file says about its session (ids, title, tag, usage), from all its records.
    pub session: SessionInfo,
    /// The requests Claude Code 2.1.3xx recorded for this conversation (`api-request`
    /// records; the main loop's, or in a sub-agent's file the sub-agent's), rebuilt, in file
    /// order. Empty for transcripts written before those records existed.
    pub requests: RecordedRequests,
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
    /// The session's title: the last custom title, else AI title, else last prompt, else
    /// summary, else the first typed prompt (see [`SessionInfo::title`]).
    pub fn title(&self) -> Option<&str> {
        self.session.title()
    }

    /// The session id the records carry (see [`SessionInfo::session_id`]).
    pub fn session_id(&self) -> Option<&str> {
        self.session.session_id.as_deref()
    }

    /// The sub-agent id the records carry (2.x sub-agent files).
    pub fn agent_id(&self) -> Option<&str> {
        self.session.agent_id.as_deref()
    }

    /// The first `timestamp` in file order.
    pub fn first_timestamp(&self) -> Option<&str> {
        self.session.first_timestamp.as_deref()
    }

    /// Whether every user and assistant record of the file is a sidechain: a sub-agent's own
    /// file, imported as the main chain.
    pub fn is_all_sidechain(&self) -> bool {
        self.session.all_sidechain
    }

    /// The model of the last assistant record of the file's own conversation (see
    /// [`SessionInfo::model`]).
    pub fn model(&self) -> Option<&str> {
        self.session.model.as_deref()
    }

    /// The usage of the session's own conversation, each response counted once (see
    /// [`SessionInfo::usage`]).
    pub fn usage(&self) -> UsageTotals {
        self.session.usage
    }

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
    // One of our messages (`type` and `id`, no `message` object) decides for us even with a
    // `uuid`: a session store's line is our message with the store's `uuid` added.
    let ours = record_type.is_some_and(|t| !CLAUDE_CODE_TYPES.contains(&t))
        && record.contains_key("id")
        && !record.get("message").is_some_and(Value::is_object);
    if ours {
        Some(false)
    } else if CLAUDE_CODE_FIELDS.iter().any(|f| record.contains_key(*f))
        || record_type.is_some_and(|t| CLAUDE_CODE_TYPES.contains(&t))
    {
        Some(true)
    } else if record_type.is_some() && record.contains_key("id") {
        Some(false)
    } else {
        None
    }
}
