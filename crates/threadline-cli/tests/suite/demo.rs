//! `threadline demo` end to end: the binary, run from an unrelated directory, against its
//! embedded mock over loopback. The summary must name each event the demo exists to show.

use crate::common;

use common::summary;

/// The leading number of a summary value.
fn count(value: &str) -> u64 {
    value
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_demo_shows_every_required_event_and_exits_0() {
    let elsewhere = tempfile::tempdir().expect("a temp dir");
    let output = common::command()
        .arg("demo")
        .current_dir(elsewhere.path())
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status.code()
    );
    let summary = summary(&stdout);

    assert_eq!(
        summary.get("terminal").map(String::as_str),
        Some("completed")
    );
    let transitions: Vec<&str> = summary["transitions"].split(", ").collect();
    for required in [
        "next_turn",
        "max_output_tokens_escalate",
        "max_output_tokens_recovery",
    ] {
        assert!(
            transitions.contains(&required),
            "{required} in {transitions:?}"
        );
    }
    // The escalation comes first, then the "resume directly" recovery.
    let escalate = transitions
        .iter()
        .position(|t| *t == "max_output_tokens_escalate");
    let recovery = transitions
        .iter()
        .position(|t| *t == "max_output_tokens_recovery");
    assert!(escalate < recovery, "{transitions:?}");

    assert_eq!(
        count(&summary["retries"]),
        1,
        "one 529 retried by the client"
    );
    assert!(summary["retries"].contains("529"));
    assert_eq!(count(&summary["autocompact"]), 1, "one autocompact");
    assert!(count(&summary["parallel batches"]) >= 1);
    assert!(summary["tool calls"].contains("started while the model was streaming"));
    let started_while_streaming = summary["tool calls"].split(", ").nth(1).map_or(0, count);
    assert!(started_while_streaming >= 1, "{}", summary["tool calls"]);
    assert!(count(&summary["turns"]) >= 2);
    assert_eq!(summary.get("fix in place").map(String::as_str), Some("yes"));

    // The summary request went to the mock: 8 loop requests + 1 summary + 1 answered 529.
    assert!(
        summary["requests"].contains("1 summary"),
        "{}",
        summary["requests"]
    );
    let read_share: f64 = summary["cache-read share"]
        .trim_end_matches('%')
        .parse()
        .expect("a percentage");
    assert!(read_share > 0.0, "the simulator reported cache reads");
    assert!(summary["cost"].starts_with('$'));
    // Every step is on the timeline with the tools started while the model streamed.
    assert!(stdout.contains("started while the model is still streaming"));
    assert!(stderr.is_empty(), "nothing went wrong: {stderr}");
}

#[test]
fn the_demo_with_server_compaction_names_its_compaction_iterations_and_exits_0() {
    let elsewhere = tempfile::tempdir().expect("a temp dir");
    let output = common::command()
        .args(["demo", "--compaction", "server"])
        .current_dir(elsewhere.path())
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status.code()
    );
    let summary = summary(&stdout);
    assert_eq!(summary["terminal"], "completed");
    // The server compacted once; no local autocompact, no summary request.
    assert_eq!(count(&summary["autocompact"]), 0);
    assert!(
        summary["requests"].contains("0 summary"),
        "{}",
        summary["requests"]
    );
    let compaction = &summary["server compaction"];
    assert!(
        compaction.starts_with("1 server-side compaction iteration: input "),
        "{compaction}"
    );
    // The compaction pass read more than the trigger, and it is billed in the totals.
    let pass_input = compaction.split("input ").nth(1).map_or(0, count);
    assert!(pass_input >= 60_000, "{compaction}");
    let billed_input = count(&summary["tokens"].replace("input ", ""));
    assert!(billed_input >= pass_input, "{}", summary["tokens"]);
    assert_eq!(summary.get("fix in place").map(String::as_str), Some("yes"));
    let transitions: Vec<&str> = summary["transitions"].split(", ").collect();
    assert!(transitions.contains(&"max_output_tokens_recovery"));
    assert!(stdout.contains("server-side compaction: the API summarised the conversation"));
    assert!(stderr.is_empty(), "nothing went wrong: {stderr}");
}

/// Every value under `key` anywhere in `value` (the JSON subscriber nests span fields under
/// `span` and `spans`).
fn values_of<'a>(value: &'a serde_json::Value, key: &str, out: &mut Vec<&'a serde_json::Value>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k == key {
                    out.push(v);
                }
                values_of(v, key, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| values_of(v, key, out)),
        _ => {}
    }
}

#[test]
fn the_demo_writes_genai_spans_as_json_lines_without_the_key() {
    let elsewhere = tempfile::tempdir().expect("a temp dir");
    let output = common::command()
        .args(["demo", "--log", "spans.jsonl"])
        .env("RUST_LOG", "info")
        .current_dir(elsewhere.path())
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status.code()
    );
    assert!(stderr.is_empty(), "the log goes to the file only: {stderr}");
    let log = std::fs::read_to_string(elsewhere.path().join("spans.jsonl")).expect("the log");
    // Created for its owner only, like a transcript.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(elsewhere.path().join("spans.jsonl"))
            .expect("the log")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is one JSON object"))
        .collect();
    assert!(lines.iter().all(serde_json::Value::is_object));

    let mut models = Vec::new();
    let mut inputs = Vec::new();
    let mut tools = Vec::new();
    let mut operations = Vec::new();
    for line in &lines {
        values_of(line, "gen_ai.request.model", &mut models);
        values_of(line, "gen_ai.usage.input_tokens", &mut inputs);
        values_of(line, "gen_ai.tool.name", &mut tools);
        values_of(line, "gen_ai.operation.name", &mut operations);
    }
    assert!(
        models.iter().any(|m| m.as_str() == Some("claude-sonnet-5")),
        "{models:?}"
    );
    assert!(
        inputs.iter().any(|n| n.as_u64().is_some_and(|n| n > 0)),
        "{inputs:?}"
    );
    for tool in ["Read", "Grep", "Edit"] {
        assert!(
            tools.iter().any(|t| t.as_str() == Some(tool)),
            "{tool}: {tools:?}"
        );
    }
    for operation in ["chat", "execute_tool", "invoke_agent"] {
        assert!(
            operations.iter().any(|o| o.as_str() == Some(operation)),
            "{operation}: {operations:?}"
        );
    }
    assert!(
        log.contains("threadline.compaction"),
        "the demo's autocompact is an event"
    );
    assert!(
        log.contains("\"process.exit.code\":0"),
        "the demo's Bash call is an event with its exit code"
    );
    // The key the demo sends the mock (`commands/demo.rs`), and any long piece of it.
    let key = "sk-ant-demo-offline";
    for window in key.as_bytes().windows(10) {
        let piece = std::str::from_utf8(window).expect("ASCII");
        assert!(!log.contains(piece), "`{piece}` of the key is in the log");
    }
}
