//! `threadline session fork|rewind|list|show` end to end: what they write (kept lines byte
//! for byte), what they refuse (an existing `--out`, an unknown message, too many turns) and
//! what they print.

use std::path::Path;

use crate::common::{code, repo, stderr, stdout, threadline};

/// A threadline transcript: a prompt, a response with signed thinking and a tool use (two
/// fragments of one response), its result, the answer, a second prompt typed while a second
/// tool call ran, then that call's late result and an answer.
const SESSION: &str = concat!(
    r#"{"type":"user","id":"u1","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"text","text":"Read my notes"}]}"#,
    "\n",
    r#"{"type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z","api_message_id":"msg_1","request_id":"req_1","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Let me read.","signature":"EqQBCkgIARABGAIiQL3Vx9=="}],"usage":{"input_tokens":100,"output_tokens":2}}"#,
    "\n",
    r#"{"type":"assistant","id":"a2","timestamp":"2026-01-01T00:00:02Z","api_message_id":"msg_1","request_id":"req_1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_01","name":"Read","input":{"path":"notes.txt"}}],"usage":{"input_tokens":100,"output_tokens":30}}"#,
    "\n",
    r#"{"type":"user","id":"u2","timestamp":"2026-01-01T00:00:03Z","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"buy oat milk"}]}"#,
    "\n",
    r#"{"type":"assistant","id":"a3","timestamp":"2026-01-01T00:00:04Z","api_message_id":"msg_2","request_id":"req_2","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_02","name":"Read","input":{"path":"todo.txt"}}],"usage":{"input_tokens":150,"output_tokens":20}}"#,
    "\n",
    r#"{"type":"user","id":"u3","timestamp":"2026-01-01T00:00:05Z","content":[{"type":"text","text":"Never mind, what is 2+2?"}]}"#,
    "\n",
    r#"{"type":"user","id":"u4","timestamp":"2026-01-01T00:00:06Z","content":[{"type":"tool_result","tool_use_id":"toolu_02","content":"nothing"}]}"#,
    "\n",
    r#"{"type":"assistant","id":"a4","timestamp":"2026-01-01T00:00:07Z","api_message_id":"msg_3","request_id":"req_3","model":"claude-opus-4-5","content":[{"type":"text","text":"4"}],"usage":{"input_tokens":200,"output_tokens":1}}"#,
    "\n",
);

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path.to_str().expect("utf-8 path").to_owned()
}

/// The `id` of a JSONL line.
fn id_of(line: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
    value["id"].as_str().expect("an id").to_owned()
}

#[test]
fn fork_keeps_each_line_byte_for_byte_but_its_id_and_is_deterministic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "source.jsonl", SESSION);
    let out = dir.path().join("fork.jsonl");
    let out_str = out.to_str().expect("utf-8 path");
    let forked = threadline(&["session", "fork", &source, "--at", "u2", "--out", out_str]);
    assert_eq!(code(&forked), 0, "{}", stderr(&forked));
    assert_eq!(stderr(&forked).lines().count(), 1, "{}", stderr(&forked));
    assert!(
        stderr(&forked).contains("fork.jsonl"),
        "{}",
        stderr(&forked)
    );
    let written = std::fs::read_to_string(&out).expect("the fork is written");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), 5, "{written}");
    let record: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(record["subtype"], "forked_from");
    assert_eq!(record["session"], "source");
    assert_eq!(record["message"], "u2");
    for (new, old) in lines[1..].iter().zip(SESSION.lines()) {
        let (new_id, old_id) = (id_of(new), id_of(old));
        assert_ne!(new_id, old_id);
        // The line with its old id back is the source line, signature and all.
        assert_eq!(new.replace(&new_id, &old_id), old);
    }

    // Forking again gives the same bytes; `--out` is never overwritten.
    let again = dir.path().join("again.jsonl");
    let second = threadline(&[
        "session",
        "fork",
        &source,
        "--at",
        "u2",
        "--out",
        again.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(std::fs::read(&again).expect("written"), written.as_bytes());
    let refused = threadline(&["session", "fork", &source, "--at", "u2", "--out", out_str]);
    assert_eq!(code(&refused), 2);
    assert_eq!(stderr(&refused).lines().count(), 1, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("exists"), "{}", stderr(&refused));
    assert_eq!(std::fs::read_to_string(&out).expect("still there"), written);

    let unknown = threadline(&[
        "session",
        "fork",
        &source,
        "--at",
        "nope",
        "--out",
        dir.path().join("x.jsonl").to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code(&unknown), 2);
    assert_eq!(
        stderr(&unknown).trim(),
        format!("threadline: session fork: {source}: message nope is not in session source")
    );
    assert!(!dir.path().join("x.jsonl").exists());
}

#[test]
fn rewind_drops_the_last_prompts_and_answers_what_it_leaves_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "source.jsonl", SESSION);
    let out = dir.path().join("rewound.jsonl");
    let rewound = threadline(&[
        "session",
        "rewind",
        &source,
        "--turns",
        "1",
        "--out",
        out.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code(&rewound), 0, "{}", stderr(&rewound));
    assert!(
        stderr(&rewound).contains("toolu_02"),
        "{}",
        stderr(&rewound)
    );
    let written = std::fs::read_to_string(&out).expect("written");
    let lines: Vec<&str> = written.lines().collect();
    // Five source lines as they were, then the error result for the open tool use.
    assert_eq!(lines.len(), 6, "{written}");
    assert_eq!(lines[..5], SESSION.lines().take(5).collect::<Vec<_>>()[..]);
    let results: serde_json::Value = serde_json::from_str(lines[5]).expect("JSON");
    assert_eq!(results["content"][0]["tool_use_id"], "toolu_02");
    assert_eq!(results["content"][0]["is_error"], true);

    // What is left makes a valid request.
    let checked = threadline(&["check", out.to_str().expect("utf-8 path")]);
    assert_eq!(code(&checked), 0, "{}", stderr(&checked));

    let too_many = threadline(&[
        "session",
        "rewind",
        &source,
        "--turns",
        "3",
        "--out",
        dir.path().join("x.jsonl").to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code(&too_many), 2);
    assert_eq!(
        stderr(&too_many).lines().count(),
        1,
        "{}",
        stderr(&too_many)
    );
    assert!(
        stderr(&too_many).contains("cannot rewind 3 turns: the session has 2 typed prompts"),
        "{}",
        stderr(&too_many)
    );
    let zero = threadline(&[
        "session", "rewind", &source, "--turns", "0", "--out", "y.jsonl",
    ]);
    assert_eq!(code(&zero), 2);
}

#[test]
fn list_and_show_summarize_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "source.jsonl", SESSION);
    write(dir.path(), "broken.jsonl", "not a transcript\n");
    let fork_out = dir.path().join("fork.jsonl");
    let forked = threadline(&[
        "session",
        "fork",
        &source,
        "--at",
        "a3",
        "--out",
        fork_out.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code(&forked), 0, "{}", stderr(&forked));

    let dir_str = dir.path().to_str().expect("utf-8 path");
    let table = threadline(&["session", "list", dir_str]);
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    let text = stdout(&table);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[0].starts_with("ID") && rows[0].contains("TITLE"),
        "{text}"
    );
    // Same start time: by id.
    assert!(rows[1].starts_with("fork "), "{text}");
    assert!(rows[2].starts_with("source "), "{text}");
    // Tokens: req_1 counted once (its last fragment), then req_2 and req_3.
    assert!(
        rows[2].contains(" 8 ") && rows[2].contains("claude-opus-4-5"),
        "{text}"
    );
    assert!(rows[2].contains(&(130 + 170 + 201).to_string()), "{text}");
    assert!(rows[2].ends_with("Read my notes"), "{text}");
    assert!(
        stderr(&table).contains("broken.jsonl: skipped"),
        "{}",
        stderr(&table)
    );

    let json = threadline(&["session", "list", dir_str, "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(listed[0]["id"], "fork");
    assert_eq!(listed[0]["forked_from"]["message"], "a3");
    assert_eq!(listed[0]["message_count"], 6);

    let shown = threadline(&["session", "show", &source, "--json"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    let info: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON");
    assert_eq!(info["id"], "source");
    assert_eq!(info["format"], "threadline");
    assert_eq!(info["title"], "Read my notes");
    assert_eq!(info["started"], "2026-01-01T00:00:00Z");
    assert_eq!(info["model"], "claude-opus-4-5");
    assert_eq!(info["tokens"]["input"], 450);
    assert_eq!(info["tokens"]["output"], 51);

    let human = threadline(&["session", "show", fork_out.to_str().expect("utf-8 path")]);
    assert_eq!(code(&human), 0, "{}", stderr(&human));
    assert!(
        stdout(&human).contains("forked    from source at a3"),
        "{}",
        stdout(&human)
    );

    let missing = threadline(&["session", "list", "/no/such/dir"]);
    assert_eq!(code(&missing), 2);
    assert_eq!(stderr(&missing).lines().count(), 1, "{}", stderr(&missing));
}

#[test]
fn show_and_fork_read_a_claude_code_transcript() {
    let fixture = repo().join(
        "fixtures/recorded/d-kimuson__claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    );
    let fixture = fixture.to_str().expect("utf-8 path");
    let shown = threadline(&["session", "show", fixture, "--json"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    let info: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON");
    assert_eq!(info["format"], "claude-code");
    assert_eq!(info["id"], "1af7fc5e-8455-4414-9ccd-011d40f70b2a");
    assert!(
        info["message_count"].as_u64().is_some_and(|n| n > 2),
        "{info}"
    );
}

/// Lines threadline did not write itself (another key order, spaces, a field this version
/// does not know, a signature before its thinking) are kept as they are, only the ids
/// changing.
#[test]
fn fork_and_rewind_keep_lines_they_did_not_write_byte_for_byte() {
    let source_text = concat!(
        r#"{"id": "u1", "type": "user", "timestamp": "2026-01-01T00:00:00Z", "content": [{"text": "Hi", "type": "text"}], "from_a_newer_version": {"x": 1}}"#,
        "\n",
        r#"{"content":[{"signature":"c2ln","thinking":"…","type":"thinking"},{"type":"text","text":"Hello"}],"model":"claude-sonnet-4-5","type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z"}"#,
        "\n",
        r#"{"type":"tombstone","retracts":"a1","id":"t1","timestamp":"2026-01-01T00:00:02Z"}"#,
        "\n",
        r#"{"type":"user","id":"u2","timestamp":"2026-01-01T00:00:03Z","content":[{"type":"text","text":"Again"}]}"#,
        "\n",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "hand.jsonl", source_text);
    let out = dir.path().join("fork.jsonl");
    let forked = threadline(&[
        "session",
        "fork",
        &source,
        "--at",
        "t1",
        "--out",
        out.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code(&forked), 0, "{}", stderr(&forked));
    let written = std::fs::read_to_string(&out).expect("written");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), 4, "{written}");
    let new_a1 = id_of(lines[2]);
    for (new, old) in lines[1..].iter().zip(source_text.lines()) {
        // The tombstone's `retracts` follows a1's new id.
        let back = new.replace(&id_of(new), &id_of(old)).replace(&new_a1, "a1");
        assert_eq!(back, old);
    }
    assert!(lines[1].contains("from_a_newer_version"));

    let rewound = dir.path().join("rewound.jsonl");
    let output = threadline(&[
        "session",
        "rewind",
        &source,
        "--turns",
        "1",
        "--out",
        rewound.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let kept = std::fs::read_to_string(&rewound).expect("written");
    assert_eq!(
        kept,
        source_text
            .lines()
            .take(3)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
}
