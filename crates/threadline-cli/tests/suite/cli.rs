//! The `threadline` binary end to end: outputs and exit codes of every subcommand, on the
//! shipped fixtures and on broken input. `session …` is in `cli/session/mod.rs`.

#[path = "cli/check_rules/mod.rs"]
mod check_rules;
use crate::common;
#[path = "cli/exit_codes/mod.rs"]
mod exit_codes;
#[path = "cli/mcp/mod.rs"]
pub(crate) mod mcp;
#[path = "cli/project/mod.rs"]
mod project;
#[path = "cli/session/mod.rs"]
mod session;
#[path = "cli/subagents/mod.rs"]
mod subagents;

use common::{code, repo, stderr, stdout, temp_file, threadline};

#[test]
fn accumulate_prints_the_message_and_flags_cut_streams() {
    let ok = threadline(&[
        "accumulate",
        "fixtures/recorded/anthropics__anthropic-sdk-python/tool_use_response.txt",
    ]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    let message: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("JSON on stdout");
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["content"][1]["input"]["location"], "Paris");

    let cut = threadline(&[
        "accumulate",
        "fixtures/recorded/anthropics__anthropic-sdk-python/incomplete_partial_json_response.txt",
    ]);
    assert_eq!(code(&cut), 1);
    let partial: serde_json::Value =
        serde_json::from_slice(&cut.stdout).expect("the partial message");
    assert_eq!(partial["stop_reason"], "max_tokens");
    assert!(
        stderr(&cut).contains("content_block_stop"),
        "{}",
        stderr(&cut)
    );
    assert_eq!(stderr(&cut).lines().count(), 1);
}

#[test]
fn unreadable_input_is_one_line_and_exit_2() {
    for sub in ["accumulate", "check", "normalize"] {
        let out = threadline(&[sub, "/no/such/file"]);
        assert_eq!(code(&out), 2, "{sub}");
        assert_eq!(stderr(&out).lines().count(), 1, "{sub}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{sub}");
    }
    let garbage = temp_file("garbage.json", b"\xff\xfe{not json");
    let out = threadline(&["check", garbage.to_str().expect("utf-8 path")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// A file where no line is a message says why: the error names line 1 and its parse error
/// (our JSONL reader), or the Claude Code importer's first problem.
#[test]
fn a_claude_code_file_without_user_or_assistant_records_is_refused_in_one_line() {
    let metadata = temp_file(
        "metadata-only.jsonl",
        concat!(
            r#"{"type":"summary","summary":"A title","leafUuid":"x"}"#,
            "\n",
            r#"{"type":"custom-title","customTitle":"mine","sessionId":"s"}"#,
            "\n",
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","parentUuid":null,"sessionId":"s","content":"Conversation compacted"}"#,
            "\n",
        ),
    );
    let out = threadline(&["normalize", metadata.to_str().expect("utf-8 path")]);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no user or assistant record"), "{err}");
}

#[test]
fn a_claude_code_sub_agent_file_normalizes() {
    let agent = repo().join("fixtures/recorded/lanegrid__agtrace/claude_agent.jsonl");
    let out = threadline(&["normalize", agent.to_str().expect("utf-8 path")]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(err.contains("claude-code transcript, 2 messages"), "{err}");
    // With the next message, the request is the agent's own conversation.
    let out = threadline(&[
        "normalize",
        agent.to_str().expect("utf-8 path"),
        "--next",
        "go on",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Warmup"), "{}", stdout(&out));
}

#[test]
fn a_file_with_no_message_names_its_first_lines_problem() {
    let garbage = temp_file("no-message.jsonl", "<html> not JSON\n{broken\nnor this\n");
    let garbage = garbage.to_str().expect("utf-8 path");
    for args in [
        &["normalize", garbage][..],
        &["inspect", garbage],
        &["compact", garbage, "--model", "claude-sonnet-4-5"],
    ] {
        let sub = args[0];
        let out = threadline(args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{sub}: {err}");
        assert_eq!(err.lines().count(), 1, "{sub}: {err}");
        assert!(
            err.contains("no messages found")
                && err.contains("the first of 3 problems: line 1: malformed, skipped: expected value at line 1 column 1"),
            "{sub}: {err}"
        );
    }
    // JSON objects, none of them a message: `check` reads it as a transcript too.
    let objects = temp_file("objects.jsonl", "{\"hello\": 1}\n{\"world\": 2}\n");
    let out = threadline(&["check", objects.to_str().expect("utf-8 path")]);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains(
            "no messages found in the transcript; the first of 2 problems: line 1: malformed"
        ),
        "{err}"
    );
    // A Claude Code file whose records form a cycle: the import's report says so.
    let cycle = temp_file(
        "cycle.jsonl",
        concat!(
            r#"{"type":"user","uuid":"a","parentUuid":"b","sessionId":"s","message":{"role":"user","content":"x"}}"#,
            "\n",
            r#"{"type":"user","uuid":"b","parentUuid":"a","sessionId":"s","message":{"role":"user","content":"y"}}"#,
            "\n",
        ),
    );
    let out = threadline(&["normalize", cycle.to_str().expect("utf-8 path")]);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("line 1: record a is on a parentUuid cycle; dropped"),
        "{err}"
    );
}

#[test]
fn check_reports_in_the_apis_words() {
    let clean = threadline(&[
        "check",
        "fixtures/canonical/anthropics__anthropic-sdk-typescript/ToolRunner.json",
    ]);
    assert_eq!(
        code(&clean),
        0,
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );
    assert!(clean.stdout.is_empty());

    let recorded_400 = threadline(&[
        "check",
        "fixtures/canonical/anthropics__anthropic-sdk-python/f59a9391-643b-422c-96dc-1f28bc7ea4d7.json",
    ]);
    assert_eq!(code(&recorded_400), 1);
    let stdout = String::from_utf8_lossy(&recorded_400.stdout);
    assert!(
        stdout.contains("unexpected `tool_use_id` found in `tool_result` blocks"),
        "{stdout}"
    );

    let body = temp_file(
        "empty.json",
        br#"{"model":"claude-sonnet-4-6","max_tokens":10,"messages":[]}"#,
    );
    let empty = threadline(&["check", body.to_str().expect("utf-8 path")]);
    assert_eq!(code(&empty), 1);
    assert_eq!(
        String::from_utf8_lossy(&empty.stdout).trim(),
        "messages: at least one message is required"
    );
}

/// `check` agrees with the API on every recorded request of the fixtures: a fixture
/// whose requests were all accepted (or refused for reasons that are not the request's: 404,
/// 429, a "prompt is too long" whose text was replaced before recording) exits 0 with nothing
/// on stdout; one with a recorded 400 prints, for that exchange alone, the API's own message.
#[test]
fn check_agrees_with_the_api_on_every_recorded_fixture() {
    let root = repo().join("fixtures/canonical");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).expect("fixtures/canonical") {
        let dir = dir.expect("entry").path();
        if dir.is_dir() {
            for file in std::fs::read_dir(&dir).expect("a fixture directory") {
                files.push(file.expect("entry").path());
            }
        }
    }
    files.sort();
    assert!(files.len() >= 40, "only {} fixtures", files.len());
    let mut rejected = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a fixture");
        let fixture: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let mut expected = Vec::new();
        for (i, exchange) in fixture["exchanges"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let message = exchange["response"]["body"]["error"]["message"].as_str();
            if exchange["request"].is_null() || exchange["response"]["status"] != 400 {
                continue;
            }
            if let Some(message) = message.filter(|m| !m.starts_with("prompt is too long")) {
                expected.push((format!("exchange {i}: "), message.to_owned()));
            }
        }
        let path = file.to_str().expect("utf-8 path");
        let out = threadline(&["check", path]);
        let printed = stdout(&out);
        let lines: Vec<&str> = printed.lines().collect();
        if expected.is_empty() {
            assert_eq!(code(&out), 0, "{path}: {printed}{}", stderr(&out));
            assert!(lines.is_empty(), "{path}: {printed}");
        } else {
            rejected += 1;
            assert_eq!(code(&out), 1, "{path}: {}", stderr(&out));
            assert_eq!(lines.len(), expected.len(), "{path}: {printed}");
            for (line, (label, message)) in lines.iter().zip(&expected) {
                assert!(
                    line.starts_with(label.as_str()) && line.ends_with(message.as_str()),
                    "{path}: {line:?} is not {label}…{message}"
                );
            }
        }
    }
    assert_eq!(rejected, 2, "the offline-checkable recorded 400s");
}

/// The API answered this request with 200; the model table does not know the model,
/// so its guessed output limit gives a warning on stderr, not a violation.
#[test]
fn check_warns_but_accepts_an_unknown_model_over_the_guessed_limit() {
    let body = temp_file(
        "sonnet-3-7.json",
        br#"{"model":"claude-3-7-sonnet-latest","max_tokens":16000,"messages":[{"role":"user","content":"Hi"}]}"#,
    );
    let out = threadline(&["check", body.to_str().expect("utf-8 path")]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains("threadline: warning: unknown model `claude-3-7-sonnet-latest`"),
        "{err}"
    );
    assert!(
        err.contains(
            "threadline: warning: max_tokens: 16000 > 8192, which is the maximum allowed number \
             of output tokens for claude-3-7-sonnet-latest"
        ),
        "{err}"
    );
    assert!(err.contains("no violations"), "{err}");
    // A shape violation is still one, whatever the model.
    let broken = temp_file(
        "sonnet-3-7-broken.json",
        br#"{"model":"claude-3-7-sonnet-latest","max_tokens":16000,"messages":[]}"#,
    );
    let out = threadline(&["check", broken.to_str().expect("utf-8 path")]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "messages: at least one message is required"
    );
}

#[test]
fn transcripts_normalize_to_valid_requests() {
    for transcript in [
        "fixtures/recorded/lanegrid__agtrace/claude_session.jsonl",
        "fixtures/recorded/d-kimuson__claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    ] {
        // A session that ends with the model's answer is reported finished, with no request
        // printed, until the next message is given.
        let mut normalized = threadline(&["normalize", transcript]);
        assert_eq!(code(&normalized), 0, "{}", stderr(&normalized));
        if stderr(&normalized).contains("the session is finished") {
            assert!(normalized.stdout.is_empty());
            normalized = threadline(&["normalize", "--next", "Thanks; what next?", transcript]);
            assert_eq!(code(&normalized), 0, "{}", stderr(&normalized));
        }
        let request: serde_json::Value = serde_json::from_slice(&normalized.stdout).expect("JSON");
        assert!(
            request["messages"]
                .as_array()
                .is_some_and(|m| !m.is_empty())
        );
        assert!(
            stderr(&normalized).contains("claude-code transcript"),
            "{}",
            stderr(&normalized)
        );

        // The request it prints passes `check`, and so does the transcript itself.
        let printed = temp_file("request.json", &normalized.stdout);
        let checked = threadline(&["check", printed.to_str().expect("utf-8 path")]);
        assert_eq!(
            code(&checked),
            0,
            "{}",
            String::from_utf8_lossy(&checked.stdout)
        );
        let direct = threadline(&["check", transcript]);
        assert_eq!(
            code(&direct),
            0,
            "{}",
            String::from_utf8_lossy(&direct.stdout)
        );
    }
}

#[test]
fn a_transcript_cut_after_a_tool_use_is_repaired() {
    let text = std::fs::read_to_string(
        repo().join("fixtures/recorded/lanegrid__agtrace/claude_session.jsonl"),
    )
    .expect("fixture");
    // Keep the lines up to and including the first assistant tool_use record.
    let cut_at = text
        .lines()
        .position(|l| l.contains(r#""type":"tool_use""#) && l.contains(r#""type":"assistant""#))
        .expect("the session uses a tool");
    let cut: String = text
        .lines()
        .take(cut_at + 1)
        .map(|l| format!("{l}\n"))
        .collect();
    let file = temp_file("cut.jsonl", cut.as_bytes());
    let out = threadline(&["normalize", file.to_str().expect("utf-8 path")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("synthetic tool result"),
        "{}",
        stderr(&out)
    );
    let checked = threadline(&["check", file.to_str().expect("utf-8 path")]);
    assert_eq!(
        code(&checked),
        0,
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}

/// A threadline transcript of `messages`, in a temporary file.
fn transcript_of(name: &str, messages: &[threadline_message::Message]) -> std::path::PathBuf {
    let path = temp_file(name, b"");
    let mut writer = threadline_message::TranscriptWriter::open(&path).expect("transcript");
    for message in messages {
        writer.append(message).expect("appended");
    }
    path
}

#[test]
fn a_one_line_transcript_is_checked_as_the_session_it_starts() {
    // What a crash right after the prompt leaves.
    let path = transcript_of(
        "one_line.jsonl",
        &[threadline_message::Message::user_text(
            "Fix the failing test.",
        )],
    );
    let checked = threadline(&["check", path.to_str().expect("utf-8 path")]);
    assert_eq!(code(&checked), 0, "{}", stderr(&checked));
    assert!(
        stderr(&checked).contains("threadline transcript normalized"),
        "{}",
        stderr(&checked)
    );
    let normalized = threadline(&["normalize", path.to_str().expect("utf-8 path")]);
    assert_eq!(code(&normalized), 0, "{}", stderr(&normalized));
    let request: serde_json::Value = serde_json::from_slice(&normalized.stdout).expect("JSON");
    assert_eq!(
        request["messages"][0]["content"][0]["text"],
        "Fix the failing test."
    );
}

#[test]
fn a_finished_session_is_reported_finished_never_as_a_rejected_prefill() {
    use threadline_message::Message;
    let mut answer = Message::assistant_fragment(
        "msg_1",
        "claude-opus-4-7",
        vec![threadline_wire::ContentBlock::text("The test passes now.")],
    );
    if let Message::Assistant(a) = &mut answer {
        a.stop_reason = Some(threadline_wire::StopReason::EndTurn);
    }
    let path = transcript_of(
        "finished.jsonl",
        &[Message::user_text("Fix the failing test."), answer],
    );
    let path = path.to_str().expect("utf-8 path");
    // The default model (the transcript's) does not accept prefill.
    let checked = threadline(&["check", path]);
    assert_eq!(
        code(&checked),
        0,
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        stderr(&checked)
    );
    assert!(
        stderr(&checked).contains("the session is finished"),
        "{}",
        stderr(&checked)
    );
    let normalized = threadline(&["normalize", path]);
    assert_eq!(code(&normalized), 0, "{}", stderr(&normalized));
    assert!(
        normalized.stdout.is_empty(),
        "no request the API would reject"
    );
    let next = threadline(&["normalize", "--next", "Now the docs.", path]);
    assert_eq!(code(&next), 0, "{}", stderr(&next));
    let request = temp_file("next.json", &next.stdout);
    let checked = threadline(&["check", request.to_str().expect("utf-8 path")]);
    assert_eq!(
        code(&checked),
        0,
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}
