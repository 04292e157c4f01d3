//! `threadline sessions DIR` and `DIR --session ID [--agent AGENT_ID]`, on a project directory
//! laid out as Claude Code 2.0 and 2.1 lay them out, built from the recorded transcripts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{code, repo, stderr, stdout, threadline};

const SESSION_20: &str = "7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9";
const SESSION_21: &str = "d6e0bada-1959-4eec-a9d2-0bfade768d8f";

fn recorded(path: &str) -> PathBuf {
    repo().join("fixtures/recorded").join(path)
}

/// A project directory: the agtrace session with its 2.0 agent file beside it, the spotter
/// session with a 2.1 `subagents/` folder (an agent with a sidecar and a compaction agent),
/// and things that are not sessions.
fn project(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "threadline-cli-project-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let subagents = dir.join(SESSION_21).join("subagents");
    std::fs::create_dir_all(&subagents).expect("dirs");
    let copy = |from: &str, to: &Path| std::fs::copy(recorded(from), to).expect("copied");
    copy(
        "lanegrid__agtrace/claude_session.jsonl",
        &dir.join(format!("{SESSION_20}.jsonl")),
    );
    copy(
        "lanegrid__agtrace/claude_agent.jsonl",
        &dir.join("agent-0c4c3cf8.jsonl"),
    );
    copy(
        "marot__spotter/tool_heavy.jsonl",
        &dir.join(format!("{SESSION_21}.jsonl")),
    );
    copy(
        "lanegrid__agtrace/claude_agent.jsonl",
        &subagents.join("agent-a1b2c3.jsonl"),
    );
    std::fs::write(
        subagents.join("agent-a1b2c3.meta.json"),
        r#"{"agentType":"Explore","description":"find the router","toolUseId":"toolu_1"}"#,
    )
    .expect("sidecar");
    copy(
        "lanegrid__agtrace/claude_agent.jsonl",
        &subagents.join("agent-acompact-9f.jsonl"),
    );
    // Not sessions: a note, an empty session file, a stem that is not a UUID.
    std::fs::write(dir.join("notes.txt"), "not a session").expect("note");
    std::fs::write(dir.join("00000000-0000-0000-0000-000000000000.jsonl"), "").expect("empty");
    std::fs::write(dir.join("backup.jsonl"), "{}\n").expect("backup");
    dir
}

/// Input, cache and output tokens of a transcript counted the way docs/claude-code-transcripts.md#response-fragments says: once
/// per `requestId`, the last record's usage winning, API-error records left out.
fn expected_tokens(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).expect("transcript");
    let mut by_request: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if record["type"] != "assistant" || record["isApiErrorMessage"] == true {
            continue;
        }
        let usage = &record["message"]["usage"];
        let Some(id) = record["requestId"].as_str() else {
            continue;
        };
        let total: u64 = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        ]
        .iter()
        .map(|f| usage[f].as_u64().unwrap_or(0))
        .sum();
        by_request.insert(id.to_owned(), total);
    }
    by_request.values().sum()
}

fn listing(dir: &Path) -> Value {
    let out = threadline(&["sessions", dir.to_str().expect("utf-8"), "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn sessions_lists_both_layouts_with_their_agents_and_true_token_counts() {
    let dir = project("list");
    let report = listing(&dir);
    let sessions = report["sessions"].as_array().expect("sessions");
    let ids: Vec<&str> = sessions
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    // Ordered by start; the empty file and the non-UUID stems are not sessions.
    assert_eq!(ids, [SESSION_20, SESSION_21], "{report:#}");
    for session in sessions {
        let path = PathBuf::from(session["path"].as_str().expect("path"));
        assert_eq!(
            session["tokens"]["total"].as_u64(),
            Some(expected_tokens(&path)),
            "{session:#}"
        );
        assert!(
            session["messages"].as_u64().expect("messages") > 2,
            "{session:#}"
        );
        assert!(
            session["start"]
                .as_str()
                .is_some_and(|s| s.starts_with("20"))
        );
        assert!(
            session["model"]
                .as_str()
                .is_some_and(|m| m.starts_with("claude-"))
        );
        assert!(session["title"].as_str().is_some_and(|t| !t.is_empty()));
    }
    let agents = |i: usize| -> Vec<(String, String)> {
        sessions[i]["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .map(|a| {
                (
                    a["id"].as_str().expect("id").to_owned(),
                    a["kind"].as_str().expect("kind").to_owned(),
                )
            })
            .collect()
    };
    // 2.0: the agent file beside the session, found by the session id inside it.
    assert_eq!(agents(0), [("0c4c3cf8".to_owned(), "subagent".to_owned())]);
    // 2.1: the subagents folder; the compaction agent is told apart.
    assert_eq!(
        agents(1),
        [
            ("a1b2c3".to_owned(), "subagent".to_owned()),
            ("acompact-9f".to_owned(), "compaction".to_owned())
        ]
    );
    assert_eq!(sessions[1]["agents"][0]["agent_type"], "Explore");
    assert_eq!(sessions[1]["agents"][0]["description"], "find the router");

    let table = threadline(&["sessions", dir.to_str().expect("utf-8")]);
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    let text = stdout(&table);
    assert!(
        text.contains(SESSION_20) && text.contains(SESSION_21),
        "{text}"
    );
    assert!(text.contains("  agent 0c4c3cf8"), "{text}");
    assert!(text.contains("(compaction)"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_and_an_agent_of_a_directory_read_as_their_files_do() {
    let dir = project("pick");
    let d = dir.to_str().expect("utf-8");
    for sub in ["normalize", "inspect"] {
        let by_id = threadline(&[sub, d, "--session", SESSION_21]);
        let file = dir.join(format!("{SESSION_21}.jsonl"));
        let by_file = threadline(&[sub, file.to_str().expect("utf-8")]);
        assert_eq!(code(&by_id), 0, "{sub}: {}", stderr(&by_id));
        assert_eq!(by_id.stdout, by_file.stdout, "{sub}");

        let agent = threadline(&[sub, d, "--session", SESSION_20, "--agent", "0c4c3cf8"]);
        let agent_file = dir.join("agent-0c4c3cf8.jsonl");
        let by_file = threadline(&[sub, agent_file.to_str().expect("utf-8")]);
        assert_eq!(code(&agent), code(&by_file), "{sub}: {}", stderr(&agent));
        assert_eq!(agent.stdout, by_file.stdout, "{sub}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_without_a_known_session_is_one_line_and_exit_2() {
    let dir = project("errors");
    let d = dir.to_str().expect("utf-8");
    let file = recorded("marot__spotter/tool_heavy.jsonl");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["normalize", d], "--session"),
        (
            vec!["inspect", d, "--session", "../../etc/passwd"],
            "no session",
        ),
        (
            vec!["normalize", d, "--session", SESSION_20, "--agent", "nope"],
            "0c4c3cf8",
        ),
        (
            vec![
                "normalize",
                file.to_str().expect("utf-8"),
                "--session",
                SESSION_21,
            ],
            "project directory",
        ),
        (vec!["sessions", "/no/such/dir"], "cannot list"),
        (
            vec!["sessions", file.to_str().expect("utf-8")],
            "not a directory",
        ),
    ];
    for (args, says) in cases {
        let out = threadline(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).lines().count(),
            1,
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_title_with_terminal_escapes_is_shown_escaped() {
    let dir = project("escapes");
    let file = dir.join(format!("{SESSION_21}.jsonl"));
    let mut text = std::fs::read_to_string(&file).expect("session");
    text.push_str(r#"{"type":"custom-title","customTitle":"\u001b[2Jred\u001b[31m title","sessionId":"d6e0bada-1959-4eec-a9d2-0bfade768d8f"}"#);
    text.push('\n');
    std::fs::write(&file, text).expect("written");
    let out = threadline(&["sessions", dir.to_str().expect("utf-8")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let table = stdout(&out);
    assert!(!table.contains('\u{1b}'), "{table:?}");
    assert!(table.contains("[2Jred [31m title"), "{table}");
    // The JSON keeps the title as written.
    assert_eq!(
        listing(&dir)["sessions"][1]["title"],
        "\u{1b}[2Jred\u{1b}[31m title"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_over_the_input_limit_is_listed_with_why_and_not_read() {
    let dir = project("limit");
    let out = threadline(&[
        "--max-input-bytes",
        "30000",
        "sessions",
        dir.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // tool_heavy (39 KB) is over the limit; the agtrace session (23 KB) is not.
    let rows = report["sessions"].as_array().expect("sessions");
    let over: Vec<&Value> = rows.iter().filter(|r| r["error"].is_string()).collect();
    assert_eq!(over.len(), 1, "{report:#}");
    assert_eq!(over[0]["id"], SESSION_21);
    assert!(
        over[0]["error"]
            .as_str()
            .expect("why")
            .contains("--max-input-bytes")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_compacted_session_counts_the_tokens_spent_before_its_boundary() {
    // compact.jsonl's request view starts at its summary, but the session cost what every
    // response recorded, before the boundary too.
    let dir = project("compacted");
    let id = "0e26ec2f-937e-482c-b889-bc126f996913";
    let file = dir.join(format!("{id}.jsonl"));
    std::fs::copy(recorded("tomjnsn__agentlogs/compact.jsonl"), &file).expect("copied");
    let report = listing(&dir);
    let row = report["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["id"] == id)
        .expect("listed")
        .clone();
    assert_eq!(
        row["tokens"]["total"].as_u64(),
        Some(expected_tokens(&file)),
        "{row:#}"
    );
    assert!(expected_tokens(&file) > 0);
    // Its start is its first record's, not its summary's (the request view's first message).
    let first = std::fs::read_to_string(&file)
        .expect("read")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|r| r["timestamp"].as_str().map(str::to_owned))
        .expect("a timestamp");
    assert_eq!(row["start"].as_str(), Some(first.as_str()), "{row:#}");
    let _ = std::fs::remove_dir_all(&dir);
}
