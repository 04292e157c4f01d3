//! JSONL transcripts: every kind round-trips, and the reader recovers from cut, malformed,
//! blank and CRLF lines without losing the lines around them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use serde_json::json;
#[path = "transcript/session_ops/mod.rs"]
mod session_ops;

use threadline_message::transcript::{
    LineProblem, LineProblemKind, ReadOptions, Tail, TranscriptError, TranscriptWriter,
    WriterOptions, parse_transcript, read_transcript, read_transcript_with,
};
use threadline_message::{
    Attachment, CompactTrigger, DeltaAnnouncement, DeltaItem, Header, Level, Message, MessageId,
    SystemKind, TodoItem,
};
use threadline_testkit::strategies::{content_block, hostile_text, tool_id};
use threadline_wire::{Content, ContentBlock, StopReason, Usage};

/// A file under the system temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "threadline-transcript-{}-{unique}-{name}.jsonl",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }

    fn with_bytes(name: &str, bytes: &[u8]) -> Self {
        let file = TempFile::new(name);
        std::fs::write(&file.0, bytes).expect("the temp dir is writable");
        file
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.0).expect("the file exists")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn header(i: usize) -> Header {
    Header::with(format!("m{i}"), "2026-11-29T10:00:00.000Z")
}

fn write(name: &str, messages: &[Message]) -> TempFile {
    let file = TempFile::new(name);
    let mut writer = TranscriptWriter::open(file.path()).expect("opens");
    writer.append_all(messages).expect("appends");
    file
}

fn malformed(line: usize) -> impl Fn(&LineProblem) -> bool {
    move |p| p.line == line && matches!(p.kind, LineProblemKind::Malformed { .. })
}

/// One message of every kind, every system subtype and every attachment kind.
fn every_kind() -> Vec<Message> {
    let response: threadline_wire::ResponseMessage = serde_json::from_value(json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "thinking", "thinking": "hm", "signature": "c2ln"},
                    {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"path": "a"}},
                    {"type": "future_block", "x": 1}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 7}
    }))
    .expect("a valid response");
    let mut tool_result = Message::tool_result("toolu_01", Content::Text("a.txt".into()), false);
    if let Message::User(user) = &mut tool_result {
        user.tool_use_result = Some(json!({"stdout": "a.txt", "interrupted": false}));
    }
    let mut api_error = Message::assistant(vec![ContentBlock::text("API Error: 529")]);
    if let Message::Assistant(assistant) = &mut api_error {
        assistant.is_api_error = true;
        assistant.stop_reason = Some(StopReason::Other("brand_new".into()));
        assistant.usage = Some(Box::new(Usage::default()));
    }
    let mut virtual_user = Message::user_text("shown, never sent");
    if let Message::User(user) = &mut virtual_user {
        user.is_virtual = true;
    }
    let systems = [
        SystemKind::Informational {
            level: Level::Error,
            content: "e".into(),
        },
        SystemKind::LocalCommand {
            content: "<local-command-stdout>ok</local-command-stdout>".into(),
        },
        SystemKind::CompactBoundary {
            trigger: CompactTrigger::Reactive,
            pre_tokens: 180_000,
            last_message_id: Some(MessageId::from("m3")),
        },
        SystemKind::MicrocompactBoundary {
            cleared_tool_use_ids: vec!["toolu_01".into()],
            tokens_saved: 1200,
        },
        SystemKind::ApiError {
            message: "overloaded".into(),
            attempt: 2,
            max_attempts: 10,
            retry_in_ms: Some(1500),
        },
        SystemKind::PermissionRetry {
            content: "Bash".into(),
        },
        SystemKind::StopHookSummary {
            content: "lint failed".into(),
            prevented_continuation: true,
        },
        SystemKind::TurnDuration {
            duration_ms: 88_947,
        },
        SystemKind::ForkedFrom {
            session: "3f1c-source".into(),
            message: MessageId::from("m7"),
        },
        SystemKind::Title {
            title: "Fix the \"flaky\" test".into(),
        },
    ];
    let attachments = [
        Attachment::File {
            path: "src/lib.rs".into(),
            content: "fn main() {}".into(),
            truncated: true,
        },
        Attachment::Directory {
            path: "src".into(),
            entries: vec!["lib.rs".into()],
            truncated: false,
        },
        Attachment::NestedInstructions {
            path: "src/CLAUDE.md".into(),
            content: "be brief".into(),
        },
        Attachment::DateChange {
            date: "2026-11-30".into(),
        },
        Attachment::QueuedCommand {
            prompt: "also run the tests".into(),
        },
        Attachment::TodoReminder {
            items: vec![TodoItem {
                content: "write tests".into(),
                status: "in_progress".into(),
            }],
        },
        Attachment::TokenUsage {
            used: 1000,
            total: 200_000,
        },
        Attachment::Delta(DeltaAnnouncement {
            set: "deferred_tools".into(),
            added: vec![DeltaItem {
                name: "WebFetch".into(),
                description: "fetches".into(),
            }],
            removed: vec!["Old".into()],
            initial: true,
        }),
        Attachment::AgentMention {
            agent: "reviewer".into(),
        },
        Attachment::Reminder {
            text: "quote \" backslash \\ 🦀\nnew line".into(),
        },
        Attachment::UiOnly { label: "ui".into() },
    ];
    let mut messages = vec![
        Message::user_text("List the files"),
        Message::meta_user_text("<system-reminder>x</system-reminder>"),
        Message::compact_summary("Summary of the conversation"),
        virtual_user,
        Message::assistant_fragment(
            "msg_01",
            "claude-sonnet-4-5",
            vec![ContentBlock::text("ok")],
        ),
        Message::from_response(&response, Some("req_01".into())),
        tool_result,
        Message::synthetic_error_result("toolu_02", "interrupted by user"),
        api_error,
        Message::progress("toolu_01", json!({"lines": 3})),
        Message::tombstone(MessageId::from("m4")),
        Message::tool_use_summary("Read 2 files", vec!["toolu_01".into(), "toolu_02".into()]),
    ];
    messages.extend(systems.into_iter().map(Message::system));
    messages.extend(attachments.into_iter().map(Message::attachment));
    messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| m.with_header(header(i)))
        .collect()
}

#[test]
fn every_kind_round_trips_one_line_each() {
    let messages = every_kind();
    let file = write("every-kind", &messages);

    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.problems, []);
    assert_eq!(read.messages, messages);

    let bytes = file.bytes();
    assert_eq!(bytes.last(), Some(&b'\n'));
    assert_eq!(
        bytes.iter().filter(|&&b| b == b'\n').count(),
        messages.len(),
        "one line per message"
    );
    let text = String::from_utf8(bytes).expect("JSON is UTF-8");
    assert_eq!(parse_transcript(&text), read, "in memory and on disk agree");
}

/// Messages of every kind appended, then each appended again as a copy (a compaction keeps
/// its tail under the same ids), then each copy rewritten in place: the copies stay, each
/// rewrite takes its copy's place (not the original's, which has the same id), and the mark
/// is not part of any message read back.
#[test]
fn copies_stay_and_rewrites_of_every_kind_take_their_copys_place() {
    let messages = every_kind();
    let file = TempFile::new("copies-and-rewrites");
    let mut writer = TranscriptWriter::open(file.path()).expect("opens");
    writer.append_all(&messages).expect("appends");
    writer.append_all(&messages).expect("appends the copies");
    let mut history: Vec<Message> = messages.iter().chain(&messages).cloned().collect();
    let n = messages.len();
    for (at, message) in history.iter_mut().enumerate().skip(n) {
        // A rewrite that changes nothing but is recorded all the same (the fold takes it),
        // and, for user messages, one that changes the content.
        writer.append_rewrite(message, at).expect("appends");
        if let Message::User(user) = message {
            user.content = vec![ContentBlock::text(format!("cleared {at}"))];
            writer.append_rewrite(message, at).expect("appends");
        }
    }
    drop(writer);
    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.problems, []);
    assert_eq!(read.messages, history);
    assert_eq!(
        read.messages[..n],
        messages[..],
        "the originals are untouched"
    );
    assert!(
        history[n..] != messages[..],
        "some copies were changed: the test tells them from the originals"
    );
    let text = String::from_utf8(file.bytes()).expect("JSON is UTF-8");
    assert_eq!(parse_transcript(&text), read, "in memory and on disk agree");
}

#[test]
fn reopening_appends_after_what_is_there() {
    let messages = every_kind();
    let file = write("reopen", &messages[..3]);
    let mut writer =
        TranscriptWriter::open_with(file.path(), WriterOptions::default().with_sync_data(true))
            .expect("reopens");
    assert_eq!(writer.tail_found(), Tail::Clean);
    writer.append_all(&messages[3..]).expect("appends");
    assert_eq!(writer.path(), file.path());
    drop(writer);

    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.problems, []);
    assert_eq!(read.messages, messages);
}

#[test]
fn a_cut_last_line_is_dropped_and_reported() {
    let messages = every_kind();
    let file = write("cut", &messages[..4]);
    let line = serde_json::to_string(&messages[4]).expect("serializes");
    let mut bytes = file.bytes();
    bytes.extend_from_slice(&line.as_bytes()[..line.len() / 2]);
    std::fs::write(file.path(), &bytes).expect("writes");

    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.messages, messages[..4]);
    assert_eq!(
        read.problems,
        [LineProblem {
            line: 5,
            kind: LineProblemKind::CutLastLine
        }]
    );
    assert_eq!(
        read.problems[0].to_string(),
        "line 5: cut off (last line without a newline, incomplete); dropped"
    );
}

#[test]
fn a_complete_last_line_without_newline_is_kept() {
    let messages = every_kind();
    let mut text = String::new();
    for m in &messages[..3] {
        text.push_str(&serde_json::to_string(m).expect("serializes"));
        text.push('\n');
    }
    text.pop();
    let read = parse_transcript(&text);
    assert_eq!(read.problems, []);
    assert_eq!(read.messages, messages[..3]);
}

#[test]
fn reopening_after_a_crash_cuts_off_the_cut_line() {
    let messages = every_kind();
    let file = write("crash", &messages[..2]);
    let good = file.bytes();
    let mut bytes = good.clone();
    bytes.extend_from_slice(br#"{"type":"user","id":"lost","conte"#);
    std::fs::write(file.path(), &bytes).expect("writes");

    let mut writer = TranscriptWriter::open(file.path()).expect("reopens");
    assert_eq!(
        writer.tail_found(),
        Tail::Cut {
            at: good.len() as u64
        }
    );
    writer.append(&messages[2]).expect("appends");
    drop(writer);

    // The cut bytes (a write never acknowledged) are gone; nothing is glued to them.
    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.messages, messages[..3]);
    assert_eq!(read.problems, []);
}

#[test]
fn reopening_keeps_and_terminates_a_complete_last_line_without_its_newline() {
    let messages = every_kind();
    let file = write("unterminated", &messages[..2]);
    let mut bytes = file.bytes();
    bytes.pop();
    std::fs::write(file.path(), &bytes).expect("writes");
    // What a reader sees before the writer touches the file is what stays after.
    assert_eq!(
        read_transcript(file.path()).expect("reads").messages,
        messages[..2]
    );

    let mut writer = TranscriptWriter::open(file.path()).expect("reopens");
    assert_eq!(writer.tail_found(), Tail::Unterminated);
    writer.append(&messages[2]).expect("appends");
    drop(writer);
    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.messages, messages[..3]);
    assert_eq!(read.problems, []);
}

#[test]
fn malformed_lines_in_the_middle_are_skipped_and_reported() {
    let messages = every_kind();
    let line = |i: usize| serde_json::to_string(&messages[i]).expect("serializes");
    let text = [
        line(0),
        "garbage".to_owned(),
        line(1),
        r#"{"type":"user"}"#.to_owned(), // JSON, but not a message
        r#"{"type":"from_a_later_version","id":"x","timestamp":"t"}"#.to_owned(),
        "[1, 2]".to_owned(),
        line(2)[..20].to_owned(), // cut, but not last: malformed
        line(3),
    ]
    .join("\n")
        + "\n";
    let read = parse_transcript(&text);
    let survivors = [0, 1, 3].map(|i| messages[i].clone());
    assert_eq!(read.messages, survivors);
    let lines: Vec<usize> = read.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [2, 4, 5, 6, 7]);
    for problem in &read.problems {
        assert!(malformed(problem.line)(problem), "{problem:?}");
        assert!(
            problem
                .to_string()
                .starts_with(&format!("line {}: malformed", problem.line))
        );
    }
}

#[test]
fn blank_lines_are_ignored_and_still_counted() {
    let messages = every_kind();
    let line = |i: usize| serde_json::to_string(&messages[i]).expect("serializes");
    let text = format!("\n{}\n\n   \t\n{}\nnot json\n\n", line(0), line(1));
    let read = parse_transcript(&text);
    assert_eq!(read.messages, messages[..2]);
    assert_eq!(read.problems.len(), 1);
    assert!(malformed(6)(&read.problems[0]), "{:?}", read.problems);
    assert_eq!(parse_transcript(""), Default::default());
    assert_eq!(parse_transcript("\n\n"), Default::default());
}

#[test]
fn crlf_line_ends_and_a_byte_order_mark_are_accepted() {
    let messages = every_kind();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    for m in &messages {
        bytes.extend_from_slice(serde_json::to_string(m).expect("serializes").as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    let file = TempFile::with_bytes("crlf", &bytes);
    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.problems, []);
    assert_eq!(read.messages, messages);

    // A CRLF file cut mid-line still reports the cut.
    bytes.extend_from_slice(b"{\"type\":\"us");
    let file = TempFile::with_bytes("crlf-cut", &bytes);
    let read = read_transcript(file.path()).expect("reads");
    assert_eq!(read.messages, messages);
    assert_eq!(
        read.problems,
        [LineProblem {
            line: messages.len() + 1,
            kind: LineProblemKind::CutLastLine
        }]
    );
}

#[test]
fn a_line_over_the_limit_is_reported_not_held() {
    let messages = [
        Message::user_text("short").with_header(header(0)),
        Message::user_text("x".repeat(10_000)).with_header(header(1)),
        Message::user_text("short too").with_header(header(2)),
    ];
    let file = write("long", &messages);
    let options = ReadOptions::default().with_max_line_bytes(1000);
    let read = read_transcript_with(file.path(), &options).expect("reads");
    assert_eq!(read.messages, [messages[0].clone(), messages[2].clone()]);
    assert_eq!(read.problems.len(), 1);
    let LineProblemKind::Malformed { error } = &read.problems[0].kind else {
        panic!("malformed: {:?}", read.problems)
    };
    assert_eq!(read.problems[0].line, 2);
    assert!(error.contains("over the limit of 1000 bytes"), "{error}");
}

#[test]
fn io_errors_name_the_path() {
    let missing = std::env::temp_dir().join("threadline-no-such-dir/transcript.jsonl");
    let error = read_transcript(&missing).expect_err("does not exist");
    assert!(matches!(&error, TranscriptError::Open { path, .. } if path == &missing));
    assert!(
        error.to_string().contains("threadline-no-such-dir"),
        "{error}"
    );
    assert!(std::error::Error::source(&error).is_some());

    let error = TranscriptWriter::open(&missing).expect_err("no parent directory");
    assert!(matches!(error, TranscriptError::Open { .. }));
}

// --- properties ------------------------------------------------------------------------------

fn blocks() -> impl Strategy<Value = Vec<ContentBlock>> {
    prop::collection::vec(content_block(), 0..3).prop_map(|values| {
        values
            .into_iter()
            .map(|v| serde_json::from_value(v).expect("testkit blocks parse"))
            .collect()
    })
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        hostile_text().prop_map(Message::user_text),
        hostile_text().prop_map(Message::meta_user_text),
        hostile_text().prop_map(Message::compact_summary),
        blocks().prop_map(Message::user_blocks),
        (tool_id(), hostile_text(), any::<bool>())
            .prop_map(|(id, text, error)| Message::tool_result(id, Content::Text(text), error)),
        (hostile_text(), hostile_text(), blocks())
            .prop_map(|(id, model, content)| Message::assistant_fragment(id, model, content)),
        hostile_text().prop_map(|content| Message::system(SystemKind::Informational {
            level: Level::Warning,
            content
        })),
        (any::<u64>(), proptest::option::of(hostile_text())).prop_map(|(pre_tokens, last)| {
            Message::system(SystemKind::CompactBoundary {
                trigger: CompactTrigger::Auto,
                pre_tokens,
                last_message_id: last.map(MessageId),
            })
        }),
        hostile_text().prop_map(|text| Message::attachment(Attachment::Reminder { text })),
        (tool_id(), hostile_text()).prop_map(|(id, t)| Message::progress(id, json!({"out": t}))),
        hostile_text().prop_map(|id| Message::tombstone(MessageId(id))),
        (hostile_text(), prop::collection::vec(tool_id(), 0..3))
            .prop_map(|(summary, ids)| Message::tool_use_summary(summary, ids)),
    ]
}

fn messages() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec((hostile_text(), message()), 0..8).prop_map(|items| {
        items
            .into_iter()
            .enumerate()
            .map(|(i, (id, m))| m.with_header(Header::with(format!("{i}{id}"), "t")))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Written, then cut at any byte (a crash mid-append): the reader returns exactly the
    /// messages whose lines are complete, and at most the cut line as a problem.
    #[test]
    fn a_transcript_cut_anywhere_reads_as_its_complete_prefix(
        messages in messages(),
        cut in any::<prop::sample::Index>(),
    ) {
        let file = write("prop-cut", &messages);
        let bytes = file.bytes();
        let cut = cut.index(bytes.len() + 1);
        std::fs::write(file.path(), &bytes[..cut]).expect("writes");

        // Line k (0-based) spans [starts[k], ends[k]) with its newline at ends[k].
        let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i).collect();
        prop_assert_eq!(ends.len(), messages.len());
        let complete = ends.iter().filter(|&&end| end <= cut).count();
        let starts_inside = complete < messages.len()
            && cut > ends.get(complete.wrapping_sub(1)).map_or(0, |e| e + 1);

        let read = read_transcript(file.path()).expect("reads");
        prop_assert_eq!(&read.messages[..], &messages[..complete]);
        let expected: Vec<LineProblem> = if starts_inside {
            vec![LineProblem { line: complete + 1, kind: LineProblemKind::CutLastLine }]
        } else {
            vec![]
        };
        prop_assert_eq!(read.problems, expected);
    }

    /// Garbage lines anywhere: every message survives, in order, and every non-blank garbage
    /// line is reported where it is.
    #[test]
    fn garbage_lines_lose_nothing_around_them(
        messages in messages(),
        garbage in prop::collection::vec((any::<prop::sample::Index>(), hostile_text()), 0..5),
    ) {
        let mut lines: Vec<(String, bool)> = messages
            .iter()
            .map(|m| (serde_json::to_string(m).expect("serializes"), false))
            .collect();
        for (at, text) in garbage {
            let text: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
            lines.insert(at.index(lines.len() + 1), (text, true));
        }
        let text: String = lines.iter().map(|(l, _)| format!("{l}\n")).collect();
        let expected: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, (l, bad))| *bad && !l.bytes().all(|b| b.is_ascii_whitespace()))
            .map(|(i, _)| i + 1)
            .collect();

        let read = parse_transcript(&text);
        prop_assert_eq!(read.messages, messages);
        let reported: Vec<usize> = read.problems.iter().map(|p| p.line).collect();
        prop_assert_eq!(reported, expected);
        let all_malformed = read.problems.iter().all(|p| matches!(p.kind, LineProblemKind::Malformed { .. }));
        prop_assert!(all_malformed, "{:?}", read.problems);
    }
}

/// A key a server, a model or a tool put in front of the writer: every line is written with it
/// redacted, stays JSON and reads back as the same kind of message.
#[test]
fn a_key_shaped_secret_is_redacted_from_every_line_written() {
    const KEY: &str = "sk-ant-api03-THEKEY-0123456789_abcdef";
    let file = TempFile::new("redacted");
    let tool_use: ContentBlock = serde_json::from_value(json!({
        "type": "tool_use", "id": "toolu_1", "name": "Bash",
        "input": {"command": format!("echo {KEY}"), KEY: KEY},
    }))
    .expect("a tool use");
    let messages = vec![
        Message::user_text(format!("my key is {KEY}, and again:{KEY}")),
        Message::assistant(vec![ContentBlock::text(format!("`{KEY}`")), tool_use]),
        Message::tool_result("toolu_1", Content::Text(format!("{KEY}\n")), false),
        Message::system(SystemKind::ApiError {
            message: format!("API error 401 authentication_error: invalid x-api-key: {KEY}"),
            attempt: 1,
            max_attempts: 1,
            retry_in_ms: None,
        }),
    ];
    let mut writer = TranscriptWriter::open(&file.0).expect("opens");
    writer.append_all(&messages).expect("written");
    drop(writer);

    let text = std::fs::read_to_string(&file.0).expect("readable");
    assert!(!text.contains("THEKEY"), "{text}");
    assert_eq!(text.matches("sk-ant-…[redacted]").count(), 8, "{text}");
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("every line is still JSON");
    }
    let read = read_transcript(&file.0).expect("reads");
    assert!(read.problems.is_empty(), "{:?}", read.problems);
    assert_eq!(read.messages.len(), messages.len());
    for (back, written) in read.messages.iter().zip(&messages) {
        assert_eq!(back.id(), written.id());
    }
}

/// A transcript holds what the user and the tools said: a new one is readable by its owner
/// only; an existing file's mode is left as the user set it.
#[cfg(unix)]
#[test]
fn a_new_transcript_is_created_0600_and_an_existing_one_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    };
    let fresh = TempFile::new("mode-new");
    TranscriptWriter::open(&fresh.0)
        .expect("opens")
        .append(&Message::user_text("hi"))
        .expect("written");
    assert_eq!(mode(&fresh.0), 0o600);

    let existing = TempFile::with_bytes("mode-existing", b"");
    std::fs::set_permissions(&existing.0, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    TranscriptWriter::open(&existing.0)
        .expect("opens")
        .append(&Message::user_text("hi"))
        .expect("written");
    assert_eq!(mode(&existing.0), 0o640);
}
