//! The `threadline` binary end to end: outputs and exit codes of every subcommand, on the
//! shipped fixtures and on broken input.

mod common;

use common::{code, repo, stderr, temp_file, threadline};

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

#[test]
fn transcripts_normalize_to_valid_requests() {
    for transcript in [
        "fixtures/recorded/lanegrid__agtrace/claude_session.jsonl",
        "fixtures/recorded/d-kimuson__claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    ] {
        let normalized = threadline(&["normalize", transcript]);
        assert_eq!(code(&normalized), 0, "{}", stderr(&normalized));
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
