//! Every recorded Claude Code transcript (`threadline_testkit::fixtures::transcripts()`)
//! imports and normalizes to a request that `validate` accepts, with its repairs; each
//! normalized request is snapshotted. Hand-made damaged variants of each — a result line
//! removed, a tool-use line removed, the file cut right after a tool use, lines repeated,
//! the last line cut mid-way — validate too and lose no typed user text.

use crate::common;
#[path = "transcripts/hostile/mod.rs"]
mod hostile;

use std::collections::HashSet;
use std::path::Path;

use common::{MODEL, check_pairing, check_texts_kept, check_valid};
use insta::internals::{Content, ContentPath, Redaction};
use serde_json::Value;
use threadline_message::Message;
use threadline_message::claude_code::{ImportOptions, ImportResult, import_claude_code};
use threadline_normalize::{Normalized, Options, normalize};
use threadline_testkit::fixtures;
use threadline_testkit::insta_helpers::redact_signature;
use threadline_wire::model::ModelTable;
use threadline_wire::{MessageParam, MessagesRequest};

/// Texts longer than this are snapshotted as their length and hash.
const LONG: usize = 240;

/// At most this many variants of one kind per transcript (spread evenly over the file).
const VARIANTS_PER_KIND: usize = 24;

/// The transcript imported: its main chain (for a sub-agent's file, whose every record is a
/// sidechain, the importer takes the sidechain as the main chain).
fn import(text: &str) -> ImportResult {
    import_claude_code(text, &ImportOptions::default())
}

/// The model the session used (the importer's [`ImportResult::model`], else the last
/// assistant's), when the model table knows it; [`MODEL`] otherwise.
fn session_model(imported: &ImportResult) -> String {
    imported
        .model()
        .into_iter()
        .chain(imported.messages.iter().rev().filter_map(|m| match m {
            Message::Assistant(a) => Some(a.model.as_str()),
            _ => None,
        }))
        .find(|model| ModelTable::builtin().get(model).is_some())
        .map_or_else(|| MODEL.to_owned(), str::to_owned)
}

/// Normalizes `messages` and checks (a) valid for `model`, (c) typed text kept, (d) pairing.
fn normalize_checked(what: &str, messages: &[Message], model: &str) -> Normalized {
    let normalized = normalize(messages, &Options::default());
    let out = &normalized.messages;
    for check in [
        check_valid(out, model),
        check_texts_kept(messages, out),
        check_pairing(out),
    ] {
        if let Err(problem) = check {
            panic!("{what}: {problem}");
        }
    }
    normalized
}

fn name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("transcript");
    let dir = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|s| s.to_str())
        .unwrap_or("recorded");
    format!("{dir}__{stem}")
}

/// 32-bit FNV-1a, to identify a redacted text in a snapshot.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |hash, b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// A string longer than [`LONG`] becomes `"[N chars, fnv1a XXXXXXXX] <first 60 chars>…"`;
/// shorter ones stay. Checked: the value must be a non-blank string (the API rejects blank
/// text, so the normalizer must never send one).
fn redact_long(value: Content, path: ContentPath<'_>) -> Content {
    let Some(text) = value.as_str() else {
        panic!("redaction at {path}: expected a string, found {value:?}");
    };
    assert!(
        !text.trim().is_empty(),
        "redaction at {path}: a blank text reaches the API"
    );
    let chars = text.chars().count();
    if chars <= LONG {
        return value;
    }
    let head: String = text.chars().take(60).collect();
    format!("[{chars} chars, fnv1a {:08x}] {head}…", fnv1a(text)).into()
}

/// Text: see [`redact_long`].
fn long_text() -> Redaction {
    insta::dynamic_redaction(redact_long)
}

/// A tool result's content: a string (see [`redact_long`]) or a list of blocks (whose texts
/// the `.text` selector redacts). Checked: one or the other.
fn result_content() -> Redaction {
    insta::dynamic_redaction(|value: Content, path: ContentPath<'_>| {
        if value.as_str().is_some() {
            redact_long(value, path)
        } else {
            assert!(
                value.as_slice().is_some(),
                "redaction at {path}: expected a string or a list of blocks, found {value:?}"
            );
            value
        }
    })
}

/// A tool use's input: kept when its JSON is short, else its length and hash. Checked: an
/// object.
fn tool_input() -> Redaction {
    insta::dynamic_redaction(|value: Content, path: ContentPath<'_>| {
        let json = serde_json::to_string(&value).unwrap_or_default();
        assert!(
            json.starts_with('{'),
            "redaction at {path}: a tool input must be an object, found {json}"
        );
        if json.chars().count() <= LONG {
            value
        } else {
            format!("[{} chars of JSON, fnv1a {:08x}]", json.len(), fnv1a(&json)).into()
        }
    })
}

/// Base64 media data: its length and hash (an image of a few hundred KB stays one line).
/// Checked: a non-empty string.
fn media_data() -> Redaction {
    insta::dynamic_redaction(|value: Content, path: ContentPath<'_>| -> Content {
        let Some(data) = value.as_str().filter(|d| !d.is_empty()) else {
            panic!("redaction at {path}: expected non-empty data, found {value:?}");
        };
        format!("[{} bytes of data, fnv1a {:08x}]", data.len(), fnv1a(data)).into()
    })
}

fn snapshot(name: &str, model: &str, normalized: &Normalized) {
    let request = MessagesRequest::new(model, 4096, normalized.messages.clone());
    let summary = normalized.report.summary();
    insta::with_settings!({
        description => format!("normalized request; repairs: {summary}"),
        omit_expression => true,
        snapshot_suffix => name,
    }, {
        insta::assert_json_snapshot!("transcript", request, {
            ".**.text" => long_text(),
            ".**.thinking" => long_text(),
            ".**.content" => result_content(),
            ".**.input" => tool_input(),
            ".**.signature" => redact_signature(),
            ".**.data" => media_data(),
        });
    });
}

#[test]
fn every_transcript_normalizes_to_a_valid_request() {
    let paths = fixtures::transcripts();
    assert!(paths.len() >= 5, "{paths:?}");
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("a fixture transcript is readable");
        let imported = import(&text);
        let model = session_model(&imported);
        let name = name(&path);
        let normalized = normalize_checked(&name, &imported.messages, &model);
        snapshot(&name, &model, &normalized);
        // With the sub-agents' sidechains mixed in at their place in the file (most of the
        // largest transcript): not a conversation the API ever saw, and still a valid request.
        let everything = import_claude_code(&text, &ImportOptions::default().with_sidechains(true));
        normalize_checked(
            &format!("{name} with sidechains"),
            &everything.messages,
            &model,
        );
    }
}

/// One record line of a transcript, parsed.
struct Line<'a> {
    text: &'a str,
    record: Value,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .map(|line| Line {
            text: line,
            record: serde_json::from_str(line).unwrap_or(Value::Null),
        })
        .collect()
}

/// Whether the record's message content holds a block of `kind`.
fn has_block(record: &Value, kind: &str) -> bool {
    record["message"]["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == kind))
}

/// At most [`VARIANTS_PER_KIND`] of `items`, spread evenly, first and last included.
fn spread<T: Copy>(items: &[T]) -> Vec<T> {
    if items.len() <= VARIANTS_PER_KIND {
        return items.to_vec();
    }
    (0..VARIANTS_PER_KIND)
        .map(|k| items[k * (items.len() - 1) / (VARIANTS_PER_KIND - 1)])
        .collect()
}

fn join(lines: &[&str]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// Checks one variant: it imports; its normalized request is valid for `model`, pairs up,
/// keeps every typed text of its own import in order; and every typed user text the original
/// import had in a message whose record is still in the variant is in the output, in order.
fn check_variant(what: &str, variant: &str, original: &[Message], model: &str) {
    let imported = import(variant);
    let normalized = normalize_checked(what, &imported.messages, model);
    let kept_ids: HashSet<&str> = imported.messages.iter().map(|m| m.id().as_str()).collect();
    let survivors: Vec<Message> = original
        .iter()
        .filter(|m| kept_ids.contains(m.id().as_str()))
        .cloned()
        .collect();
    if let Err(problem) = check_texts_kept(&survivors, &normalized.messages) {
        panic!("{what}: a typed text of the original transcript was lost: {problem}");
    }
}

#[test]
fn damaged_transcripts_normalize_to_valid_requests_and_keep_typed_text() {
    for path in fixtures::transcripts() {
        let text = std::fs::read_to_string(&path).expect("a fixture transcript is readable");
        let original = import(&text);
        let model = session_model(&original);
        let name = name(&path);
        let lines = lines(&text);
        let all: Vec<&str> = lines.iter().map(|l| l.text).collect();
        let indices = |f: &dyn Fn(&Value) -> bool| -> Vec<usize> {
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| f(&l.record))
                .map(|(n, _)| n)
                .collect()
        };
        let results = indices(&|r| r["type"] == "user" && has_block(r, "tool_result"));
        let uses = indices(&|r| r["type"] == "assistant" && has_block(r, "tool_use"));
        let mut checked = 0;

        // A result line removed.
        for &n in &spread(&results) {
            let mut kept = all.clone();
            kept.remove(n);
            check_variant(
                &format!("{name}: result line {} removed", n + 1),
                &join(&kept),
                &original.messages,
                &model,
            );
            checked += 1;
        }
        // A tool-use line removed.
        for &n in &spread(&uses) {
            let mut kept = all.clone();
            kept.remove(n);
            check_variant(
                &format!("{name}: tool-use line {} removed", n + 1),
                &join(&kept),
                &original.messages,
                &model,
            );
            checked += 1;
        }
        // The file cut right after a tool use (the stream, or the process, died there).
        for &n in &spread(&uses) {
            check_variant(
                &format!("{name}: cut after tool-use line {}", n + 1),
                &join(&all[..=n]),
                &original.messages,
                &model,
            );
            checked += 1;
        }
        // Lines repeated: a stretch of up to 5 lines written twice, and the whole file twice
        // (a resumed session copying its history).
        let starts: Vec<usize> = (0..all.len()).collect();
        for &n in &spread(&starts) {
            let end = (n + 5).min(all.len());
            let mut repeated = all[..end].to_vec();
            repeated.extend_from_slice(&all[n..]);
            check_variant(
                &format!("{name}: lines {}..{end} repeated", n + 1),
                &join(&repeated),
                &original.messages,
                &model,
            );
            checked += 1;
        }
        let mut twice = all.clone();
        twice.extend_from_slice(&all);
        check_variant(
            &format!("{name}: the whole file twice"),
            &join(&twice),
            &original.messages,
            &model,
        );
        // The last line cut mid-way, for a spread of cut lines and a few cut points in each.
        for &n in &spread(&starts) {
            let line = all[n];
            for fraction in [1, 2, 3] {
                let mut cut = line.len() * fraction / 4;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                let mut variant = join(&all[..n]);
                variant.push_str(&line[..cut]);
                check_variant(
                    &format!("{name}: line {} cut at byte {cut}", n + 1),
                    &variant,
                    &original.messages,
                    &model,
                );
                checked += 1;
            }
        }
        assert!(checked > 0, "{name}: no variant");
    }
}

/// The normalized requests are what the snapshots say even after a round trip through the
/// request's JSON (what is sent is what was checked).
#[test]
fn normalized_transcripts_round_trip_through_json() {
    for path in fixtures::transcripts() {
        let text = std::fs::read_to_string(&path).expect("a fixture transcript is readable");
        let imported = import(&text);
        let messages = normalize(&imported.messages, &Options::default()).messages;
        let json = serde_json::to_string(&messages).expect("serializes");
        let back: Vec<MessageParam> = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, messages, "{}", path.display());
    }
}

/// Claude Code `attachment` records (no fixture has one; shapes from the docs/claude-code-transcripts.md#attachments) reach
/// the request as `<system-reminder>` text where Claude Code renders them, and never where it
/// does not (`prompt_snapshot`, unknown kinds).
#[test]
fn claude_code_attachments_reach_the_request_as_claude_code_renders_them() {
    let line = |value: Value| value.to_string();
    let attachment = |uuid: &str, parent: &str, payload: Value| {
        line(
            serde_json::json!({"type": "attachment", "uuid": uuid, "parentUuid": parent,
            "isSidechain": false, "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z",
            "attachment": payload}),
        )
    };
    let text = [
        line(serde_json::json!({"type": "user", "uuid": "u", "parentUuid": null,
            "isSidechain": false, "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "summarize @notes.md"}})),
        attachment("a1", "u", serde_json::json!({"type": "file", "filename": "notes.md",
            "content": {"type": "text", "file": {"filePath": "/p/notes.md", "content": "buy milk"}}})),
        attachment("a2", "a1", serde_json::json!({"type": "skill_listing",
            "content": "- pdf: read PDF files", "names": ["pdf"], "skillCount": 1})),
        attachment("a3", "a2", serde_json::json!({"type": "prompt_snapshot",
            "systemPrompt": ["You are Claude Code, SECRET SYSTEM PROMPT"], "tools": []})),
        attachment("a4", "a3", serde_json::json!({"type": "kind_from_the_future",
            "text": "FUTURE TEXT"})),
        attachment("a5", "a4", serde_json::json!("malformed")),
        line(serde_json::json!({"type": "assistant", "uuid": "m", "parentUuid": "a5",
            "isSidechain": false, "sessionId": "s", "requestId": "req_1",
            "message": {"id": "msg_1", "role": "assistant", "model": MODEL,
                "content": [{"type": "text", "text": "You need milk."}]}})),
    ]
    .join("\n");
    let imported = import(&text);
    let normalized = normalize_checked("attachments", &imported.messages, MODEL);
    let user = common::output_user_text(&normalized.messages);
    assert!(user.contains("summarize @notes.md"), "{user}");
    assert!(user.contains("buy milk"), "{user}");
    assert!(
        user.contains("<system-reminder>\n- pdf: read PDF files\n</system-reminder>"),
        "{user}"
    );
    assert!(!user.contains("SECRET SYSTEM PROMPT"), "{user}");
    assert!(!user.contains("FUTURE TEXT"), "{user}");
    // One user message (prompt and reminders merged), then the answer.
    assert_eq!(normalized.messages.len(), 2);
}

/// The request of a compacted session starts at the summary: the history before the
/// boundary is not sent next to the summary that replaced it.
#[test]
fn a_compacted_session_is_sent_from_its_summary() {
    let path = fixtures::repo_root().join("fixtures/recorded/tomjnsn__agentlogs/compact.jsonl");
    let text = std::fs::read_to_string(path).expect("the fixture");
    let sent = |options: &ImportOptions| {
        let imported = import_claude_code(&text, options);
        let normalized = normalize_checked("compact", &imported.messages, MODEL);
        serde_json::to_string(&normalized.messages).expect("serializes")
    };
    let request = sent(&ImportOptions::default());
    let history = sent(&ImportOptions::default().with_compacted_history(true));
    // The assistant's pre-compaction answer (L8) and the /clear command (L3).
    for before in [
        "I'm doing well, thanks for asking!",
        "<command-name>/clear</command-name>",
    ] {
        assert!(
            !request.contains(before),
            "{before:?} is sent after compaction"
        );
        assert!(
            history.contains(before),
            "{before:?} is in the history view"
        );
    }
    assert!(request.starts_with(
        r#"[{"role":"user","content":[{"type":"text","text":"This session is being continued"#
    ));
}

/// tool_heavy's parallel calls: the Glob call (L30) and its result (L32), which a
/// `parentUuid` walk misses, are in the request, answered in the order they were called.
#[test]
fn parallel_tool_calls_and_their_results_are_all_sent() {
    let path = fixtures::repo_root().join("fixtures/recorded/marot__spotter/tool_heavy.jsonl");
    let text = std::fs::read_to_string(path).expect("the fixture");
    let imported = import(&text);
    let normalized = normalize_checked("tool_heavy", &imported.messages, &session_model(&imported));
    assert_eq!(
        normalized.report.summary(),
        "2 repairs: 1 misplaced thinking block dropped, 1 empty text block removed"
    );
    let (web_search, glob) = (
        "toolu_01DKTWcKpZ2ksZQmoKKfxiw6",
        "toolu_01JJds55jYrYwd9TktNGndRY",
    );
    let position = |f: &dyn Fn(&threadline_wire::ContentBlock) -> bool| {
        normalized
            .messages
            .iter()
            .enumerate()
            .find_map(|(n, m)| common::blocks(m).iter().position(f).map(|at| (n, at)))
    };
    let call = |id: &'static str| {
        position(&move |b| matches!(b, threadline_wire::ContentBlock::ToolUse(u) if u.id == id))
    };
    let result = |id: &'static str| {
        position(
            &move |b| matches!(b, threadline_wire::ContentBlock::ToolResult(r) if r.tool_use_id == id),
        )
    };
    let (Some(search_call), Some(glob_call)) = (call(web_search), call(glob)) else {
        panic!("both calls are sent")
    };
    assert_eq!(search_call.0, glob_call.0, "one assistant message");
    let (Some(search_result), Some(glob_result)) = (result(web_search), result(glob)) else {
        panic!("both results are sent")
    };
    assert_eq!(
        (search_result.0, glob_result.0),
        (search_call.0 + 1, search_call.0 + 1)
    );
    assert!(
        search_result.1 < glob_result.1,
        "results in the order of the calls"
    );
}
