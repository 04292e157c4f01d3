//! Session operations over files: a fork or a rewind written with
//! `TranscriptWriter::create_new` (which refuses an existing file) reads back as written, and
//! `list_sessions` summarizes a directory, skipping what is not a threadline transcript.

use std::path::Path;

use threadline_message::session_ops::{fork, list_sessions, rewind};
use threadline_message::transcript::{
    ReadOptions, TranscriptWriter, WriterOptions, read_transcript,
};
use threadline_message::{Header, Message, MessageId, SystemKind};
use threadline_wire::ContentBlock;

fn session() -> Vec<Message> {
    let at = |n: u32| Header::with(format!("m{n}"), format!("2026-02-0{n}T10:00:00Z"));
    vec![
        Message::user_text("Rename the module").with_header(at(1)),
        Message::assistant_fragment(
            "msg_1",
            "claude-sonnet-4-6",
            vec![ContentBlock::text("Done.")],
        )
        .with_header(at(2)),
        Message::user_text("And the tests").with_header(at(3)),
        Message::assistant_fragment(
            "msg_2",
            "claude-opus-4-6",
            vec![ContentBlock::text("Also done.")],
        )
        .with_header(at(4)),
    ]
}

fn write_new(path: &Path, messages: &[Message]) {
    let mut writer =
        TranscriptWriter::create_new(path, WriterOptions::default()).expect("a new file");
    writer.append_all(messages).expect("written");
}

#[test]
fn create_new_refuses_an_existing_file_and_leaves_it_alone() {
    let dir = tempfile_dir("create-new");
    let path = dir.join("s.jsonl");
    write_new(&path, &session());
    let before = std::fs::read(&path).expect("written");
    let error =
        TranscriptWriter::create_new(&path, WriterOptions::default()).expect_err("the file exists");
    assert!(error.is_already_exists(), "{error}");
    assert_eq!(std::fs::read(&path).expect("still there"), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_of_forks_and_rewinds_lists_newest_first() {
    let dir = tempfile_dir("list");
    let source = session();
    write_new(&dir.join("source.jsonl"), &source);
    let forked = fork(&source, &MessageId::from("m2"), "source").expect("m2 is there");
    write_new(&dir.join("fork.jsonl"), &forked.messages);
    let rewound = rewind(&source, 1).expect("two prompts");
    write_new(&dir.join("rewound.jsonl"), &rewound.messages);
    write_new(
        &dir.join("titled.jsonl"),
        &[
            Message::user_text("x").with_header(Header::with("t1", "2026-03-01T00:00:00Z")),
            Message::system(SystemKind::Title {
                title: "Named".into(),
            })
            .with_header(Header::with("t2", "2026-03-01T00:00:01Z")),
        ],
    );
    std::fs::write(dir.join("notes.jsonl"), "not a transcript\n").expect("written");
    std::fs::write(dir.join("ignored.txt"), "not listed\n").expect("written");

    let listing = list_sessions(&dir, &ReadOptions::default()).expect("the directory reads");
    let ids: Vec<&str> = listing
        .sessions
        .iter()
        .map(|s| s.info.id.as_str())
        .collect();
    // Newest first by start time, then by id; a fork starts when its source did.
    assert_eq!(ids, ["titled", "fork", "rewound", "source"]);
    assert_eq!(listing.skipped.len(), 1);
    assert!(listing.skipped[0].path.ends_with("notes.jsonl"));

    let by_id = |id: &str| {
        &listing
            .sessions
            .iter()
            .find(|s| s.info.id == id)
            .expect("listed")
            .info
    };
    assert_eq!(by_id("titled").title.as_deref(), Some("Named"));
    assert_eq!(by_id("source").message_count, 4);
    assert_eq!(by_id("source").model.as_deref(), Some("claude-opus-4-6"));
    assert_eq!(by_id("rewound").message_count, 2);
    assert_eq!(by_id("rewound").model.as_deref(), Some("claude-sonnet-4-6"));
    let origin = by_id("fork").forked_from.as_ref().expect("a fork");
    assert_eq!(origin.session, "source");
    assert_eq!(origin.message, MessageId::from("m2"));
    assert_eq!(by_id("fork").title.as_deref(), Some("Rename the module"));

    // What was written reads back as the fork made it.
    let read = read_transcript(dir.join("fork.jsonl")).expect("reads");
    assert_eq!(read.messages, forked.messages);
    assert!(read.problems.is_empty());

    let error = list_sessions(&dir.join("missing"), &ReadOptions::default())
        .expect_err("no such directory");
    assert!(error.is_io());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory under the system temp directory.
fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "threadline-session-ops-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    dir
}
