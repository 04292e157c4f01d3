//! One function per fuzz target: it takes the fuzzer's bytes, must never panic on them except
//! to report a broken property, and checks the properties named in its docs.

use std::collections::BTreeMap;

use threadline_message::claude_code::{
    ImportOptions, import_claude_code, import_claude_code_file, is_claude_code_transcript,
};
use threadline_message::transcript::{ReadOptions, parse_transcript, read_transcript_with};
use threadline_wire::accumulate::MessageAccumulator;
use threadline_wire::message_stream::{MessageStreamReader, read_message};
use threadline_wire::partial_json::{PartialMode, parse_partial_with};
use threadline_wire::sse::{SseDecoder, SseError, SseEvent};
use threadline_wire::stream_event::StreamEvent;
use threadline_validate::{validate, validate_count_tokens};
use threadline_wire::{ContentDelta, CountTokensRequest, MessagesRequest};

use crate::{assert_normalizes, chunks, scratch_file};

/// The SSE decoder's event limit in the fuzz targets: small, so that the fuzzer reaches the
/// "event too large" paths with inputs of a few kilobytes.
pub const MAX_EVENT_BYTES: usize = 4096;

/// The accumulator's limit in the fuzz targets (small for the same reason).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Tool input buffers up to this length are parsed as partial JSON after every delta; longer
/// ones only once, at the end of the stream.
pub const PARTIAL_PREFIX_BYTES: usize = 1024;

/// The line limit of the transcript readers in the fuzz targets.
pub const MAX_LINE_BYTES: usize = 8 * 1024;

/// `sse_accumulate`: bytes into the incremental SSE decoder, events into the accumulator.
///
/// - Chunking does not change the decoded events or errors: the input pushed whole and the
///   input pushed in [`chunks`] give the same sequence, and the decoder never holds more than
///   its limit for the event being read.
/// - The fast delta parser agrees with the generic one on every event's data.
/// - The incremental reader (decoder + parser + accumulator) gives the same message or the
///   same error whether it reads the whole body or the chunks.
/// - A complete `input_json_delta` buffer that is valid JSON parses the same with the
///   partial-JSON parser.
pub fn sse_accumulate(data: &[u8]) {
    let whole = decode(data, [data]);
    let pieces = chunks(data);
    let chunked = decode(data, pieces.iter().copied());
    assert_eq!(whole, chunked, "chunking changed the decoded events");

    let mut accumulator = MessageAccumulator::with_max_message_bytes(MAX_MESSAGE_BYTES);
    let mut partial_json: BTreeMap<usize, String> = BTreeMap::new();
    for event in whole.iter().filter_map(|e| e.as_ref().ok()) {
        let fast = StreamEvent::from_json(&event.data);
        let generic = serde_json::from_str::<StreamEvent>(&event.data);
        match (&fast, &generic) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "fast and generic parsers disagree"),
            (Err(_), Err(_)) => {}
            _ => panic!("one parser failed: fast {fast:?}, generic {generic:?}"),
        }
        let Ok(event) = fast else { continue };
        if let StreamEvent::ContentBlockDelta(delta) = &event
            && let ContentDelta::InputJson(json) = &delta.delta
        {
            let buffer = partial_json.entry(delta.index).or_default();
            if buffer.len() + json.partial_json.len() <= MAX_MESSAGE_BYTES {
                buffer.push_str(&json.partial_json);
                // Every prefix the stream shows, while that stays cheap (quadratic).
                if buffer.len() <= PARTIAL_PREFIX_BYTES {
                    check_partial_json(buffer);
                }
            }
        }
        // Errors are the accumulator's answer to a bad order; what matters is no panic and that
        // it keeps going.
        let _ = accumulator.push(&event);
    }
    let _ = accumulator.finish();
    for buffer in partial_json.values() {
        check_partial_json(buffer);
    }

    let mut reader = MessageStreamReader::with_limits(MAX_EVENT_BYTES, MAX_MESSAGE_BYTES);
    let mut pushed = Ok(());
    for piece in &pieces {
        pushed = reader.push(piece, |_, _| {});
        if pushed.is_err() {
            break;
        }
    }
    let incremental = match pushed {
        Ok(()) => reader.finish(),
        Err(error) => Err(error),
    };
    if data.len() <= MAX_EVENT_BYTES {
        // `read_message` uses the default limits: compare only where they cannot matter.
        let at_once = read_message(data);
        assert_eq!(
            format!("{incremental:?}"),
            format!("{at_once:?}"),
            "chunking changed the stream reader's result"
        );
    }
}

/// Every event and error the decoder gives for `input` pushed as `pieces`, then `finish`.
fn decode<'a>(
    input: &[u8],
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<Result<SseEvent, SseError>> {
    let mut decoder = SseDecoder::with_max_event_size(MAX_EVENT_BYTES);
    let mut out = Vec::new();
    let mut pushed = 0usize;
    for piece in pieces {
        decoder.push(piece);
        pushed += piece.len();
        assert!(
            decoder.buffered_len() <= MAX_EVENT_BYTES,
            "the decoder holds {} bytes, over its limit {MAX_EVENT_BYTES}",
            decoder.buffered_len()
        );
        loop {
            match decoder.next_event() {
                Ok(Some(event)) => out.push(Ok(event)),
                Ok(None) | Err(SseError::Poisoned) => break,
                Err(error) => out.push(Err(error)),
            }
        }
    }
    assert_eq!(pushed, input.len(), "the pieces are the input");
    loop {
        match decoder.finish() {
            Ok(Some(event)) => out.push(Ok(event)),
            Ok(None) | Err(SseError::Poisoned) => return out,
            Err(error) => out.push(Err(error)),
        }
    }
}

/// The partial-JSON parser on a tool input buffer: no panic in either mode, and a buffer that
/// is complete JSON reads as that JSON.
fn check_partial_json(buffer: &str) {
    let on = parse_partial_with(buffer, PartialMode::On);
    let trailing = parse_partial_with(buffer, PartialMode::TrailingStrings);
    if let Ok(complete) = serde_json::from_str::<serde_json::Value>(buffer) {
        assert_eq!(
            on.as_ref(),
            Some(&complete),
            "partial mode `on` on complete JSON"
        );
        assert_eq!(
            trailing.as_ref(),
            Some(&complete),
            "partial mode `trailing-strings` on complete JSON"
        );
    }
}

/// `request_json`: bytes as a `/v1/messages` (and a count-tokens) request body.
///
/// A body that parses is validated (no panic), re-serializes, parses back to an equal value,
/// and serializes to the same bytes again (unknown fields round-trip).
pub fn request_json(data: &[u8]) {
    if let Ok(request) = serde_json::from_slice::<MessagesRequest>(data) {
        let _ = validate(&request, model_for(&request.model));
        round_trip(&request);
    }
    if let Ok(request) = serde_json::from_slice::<CountTokensRequest>(data) {
        let _ = validate_count_tokens(&request, model_for(&request.model));
        round_trip(&request);
    }
}

/// The model a request names, or conservative defaults for an unknown id (as `check` does).
fn model_for(id: &str) -> &threadline_wire::model::Model {
    threadline_wire::model::ModelTable::builtin()
        .resolve(id)
        .model()
}

fn round_trip<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).expect("a parsed request serializes");
    let again: T = match serde_json::from_str(&text) {
        Ok(again) => again,
        Err(error) => panic!("the serialized request does not parse back ({error}): {text}"),
    };
    assert_eq!(&again, value, "the request changed in a round trip: {text}");
    let text_again = serde_json::to_string(&again).expect("a parsed request serializes");
    assert_eq!(text, text_again, "serialization is not stable");
}

/// `transcript_jsonl`: bytes as a threadline JSONL transcript.
///
/// - The file reader (streaming, with a small line limit and with the default one) never
///   panics; with the default limit it reads what the in-memory parser reads.
/// - Every message read writes back to a line that reads as the same message.
/// - What was read normalizes to a valid request, idempotently.
pub fn transcript_jsonl(data: &[u8]) {
    let path = scratch_file("transcript");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let small_lines = ReadOptions::default().with_max_line_bytes(MAX_LINE_BYTES);
    if let Ok(read) = read_transcript_with(&path, &small_lines) {
        assert_normalizes(&read.messages);
    }
    let from_file = match read_transcript_with(&path, &ReadOptions::default()) {
        Ok(read) => read,
        Err(error) => panic!("reading the scratch file failed: {error}"),
    };
    let Ok(text) = std::str::from_utf8(data) else {
        assert_normalizes(&from_file.messages);
        return;
    };
    let read = parse_transcript(text);
    assert_eq!(from_file, read, "the file reader and the parser disagree");

    let mut lines = String::new();
    for message in &read.messages {
        let line = serde_json::to_string(message).expect("a parsed message serializes");
        lines.push_str(&line);
        lines.push('\n');
    }
    let reread = parse_transcript(&lines);
    assert_eq!(
        reread.problems,
        [],
        "written lines do not read back: {lines}"
    );
    assert_eq!(
        reread.messages, read.messages,
        "messages changed in a round trip"
    );

    assert_normalizes(&read.messages);
}

/// `claude_code_import`: bytes as a Claude Code transcript.
///
/// The importer (streaming from a file and in memory, which agree; with and without
/// sidechains; with and without the history before compactions; with a small line limit)
/// never panics, its session accessors never panic, the detector never panics, and what was imported normalizes to a valid request, idempotently.
pub fn claude_code_import(data: &[u8]) {
    let options = ImportOptions::default().with_max_line_bytes(MAX_LINE_BYTES);
    let path = scratch_file("claude-code");
    let from_file = match std::fs::write(&path, data) {
        Ok(()) => match import_claude_code_file(&path, &options) {
            Ok(imported) => Some(imported),
            Err(error) => panic!("reading the scratch file failed: {error}"),
        },
        Err(_) => None,
    };
    let Ok(text) = std::str::from_utf8(data) else {
        if let Some(imported) = from_file {
            assert_normalizes(&imported.messages);
        }
        return;
    };
    let _ = is_claude_code_transcript(text);
    let main_chain = import_claude_code(text, &options);
    if let Some(from_file) = from_file {
        assert_eq!(
            from_file, main_chain,
            "the file importer and the in-memory one disagree"
        );
    }
    assert_normalizes(&main_chain.messages);
    let with_sidechains = import_claude_code(text, &options.clone().with_sidechains(true));
    assert_normalizes(&with_sidechains.messages);
    let history = import_claude_code(text, &options.clone().with_compacted_history(true));
    assert_normalizes(&history.messages);
    let _ = main_chain.summaries().count();
    let _ = (main_chain.title(), main_chain.model(), main_chain.usage());
}

/// `mcp_config`: bytes as a workspace's `.mcp.json`, and as the user's MCP approvals file.
///
/// - Parsing never panics, for a user-named file ([`McpConfig::parse`]) and a workspace's.
/// - Unapproved, no workspace server is approved, and every entry that has the right shape is
///   pending exactly as written.
/// - Every pending entry approved, each server is approved or one warning, and what is
///   approved does not depend on the value of any `ANTHROPIC_*` variable (two environments
///   that differ only there give equal servers): the key never reaches a workspace server.
/// - Each entry serializes (as an approval stores it) and reads back equal.
/// - As an approvals file: what parses serializes and parses back equal.
pub fn mcp_config(data: &[u8]) {
    use threadline_mcp::{Approvals, McpConfig, WorkspaceServers};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let root = std::path::Path::new("/fuzz/ws");
    let env_with = |secret: &'static str| {
        move |name: &str| {
            if name.starts_with("ANTHROPIC_") {
                Some(secret.to_owned())
            } else {
                (name.len() % 2 == 0).then(|| format!("v-{name}"))
            }
        }
    };
    let (env, other_env) = (env_with("sk-ant-FUZZ-ONE"), env_with("sk-ant-FUZZ-TWO"));
    let _ = McpConfig::parse(text, std::path::Path::new("f.json"), &env);

    let none = WorkspaceServers::from_text(root, text, &Approvals::default(), None, &env);
    assert!(none.approved.servers.is_empty(), "nothing is approved yet");
    let mut approvals = Approvals::default();
    for pending in &none.pending {
        assert!(!pending.changed);
        let stored = serde_json::to_string(&pending.entry).expect("an entry serializes");
        let back: threadline_mcp::ServerEntry =
            serde_json::from_str(&stored).expect("an entry reads back");
        assert_eq!(back, pending.entry);
        approvals.approve(root, &pending.name, &pending.entry);
    }
    let all = WorkspaceServers::from_text(root, text, &approvals, None, &env);
    assert!(all.pending.is_empty(), "every entry was approved");
    assert_eq!(
        all.approved.servers.len() + all.warnings.len() - none.warnings.len(),
        none.pending.len(),
        "each approved entry starts or is one warning"
    );
    let other = WorkspaceServers::from_text(root, text, &approvals, None, &other_env);
    assert_eq!(
        all.approved, other.approved,
        "an ANTHROPIC_* value reached a workspace server"
    );

    if let Ok(parsed) = serde_json::from_str::<Approvals>(text) {
        let again = serde_json::to_string(&parsed).expect("approvals serialize");
        let back: Approvals = serde_json::from_str(&again).expect("approvals read back");
        assert_eq!(back, parsed);
    }
}
