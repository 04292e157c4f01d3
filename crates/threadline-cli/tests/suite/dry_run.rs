//! One agent, one request, through the binary: `run --dry-run` prints byte for byte the body
//! of the first request the live `run` sends for the same workspace and prompt (read back
//! from `threadline mock --record-log`), and with `run --autocompact-at TOKENS` a small
//! session compacts, its summary request being the main request plus the summary
//! instruction (same model, system, tools, thinking and betas, the main messages a prefix,
//! the main request's cached prefix read).

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};

use common::{Mock, code, command, git, stderr, stdout};
use serde_json::Value;
use threadline_testkit::request_json::message_blocks;
use threadline_wire::MessagesRequest;

const DATE: &str = "2026-11-30";

/// `threadline ARGS` in `cwd`, no key, stdin closed.
fn threadline(args: &[&str], cwd: &Path) -> Output {
    command()
        .args(args)
        .current_dir(cwd)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("THREADLINE_DATE")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// A git repository with an `AGENTS.md` and a note, committed.
fn repository(dir: &Path) -> std::path::PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("workspace");
    std::fs::write(ws.join("AGENTS.md"), "Run the tests before you say done.\n").expect("agents");
    std::fs::write(ws.join("notes.txt"), "buy oat milk\n").expect("notes");
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "AGENTS.md", "notes.txt"]);
    git(&ws, &["commit", "-q", "-m", "start"]);
    std::fs::canonicalize(ws).expect("canonical")
}

/// The lines of the mock's request log.
fn log_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .expect("the request log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The body a log line recorded, as text.
fn logged_body(line: &Value) -> &str {
    line["body"].as_str().expect("the body, as text")
}

fn request(body: &str) -> MessagesRequest {
    serde_json::from_str(body).expect("a request body")
}

#[test]
fn the_dry_run_prints_byte_for_byte_the_first_request_the_live_run_sends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = repository(dir.path());
    let root = ws.to_str().expect("utf-8 path");
    let prompt = "What do I have to buy? See @notes.txt.";
    let dry = threadline(
        &["run", "--dry-run", "--date", DATE, "--cwd", root, prompt],
        dir.path(),
    );
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert_eq!(stderr(&dry), "");

    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "steps:\n  - {kind: message, content: [{type: text, text: \"Oat milk.\"}]}\n",
    )
    .expect("scenario");
    let log = dir.path().join("requests.jsonl");
    let mock = Mock::start_logged(&scenario, &log);
    let live = threadline(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--date",
            DATE,
            "--cwd",
            root,
            prompt,
        ],
        dir.path(),
    );
    assert_eq!(code(&live), 0, "{}", stderr(&live));
    assert!(stdout(&live).contains("Oat milk."));
    drop(mock);

    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1);
    let sent = logged_body(&lines[0]);
    let printed = stdout(&dry);
    // The body, then a newline.
    assert_eq!(printed.strip_suffix('\n'), Some(sent));
    // What the live agent sends: its system prompt, its tools with cache markers, the
    // workspace's instructions and the mentioned file.
    let request = request(sent);
    let tools: Vec<&str> = request.tools.iter().flatten().map(|t| t.name()).collect();
    for name in ["Read", "Bash", "Edit"] {
        assert!(tools.contains(&name), "{tools:?}");
    }
    assert!(sent.contains("cache_control"));
    assert!(sent.contains("Run the tests before you say done."));
    assert!(sent.contains("buy oat milk"));
    assert!(sent.contains(DATE));
}

/// `value` without any `cache_control` member (markers move from request to request).
fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// About `lines` × 12 tokens of text, each line naming `tag`.
fn text_file(tag: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("{tag}-LINE-{i:04} the quick brown fox jumps\n"))
        .collect()
}

#[test]
fn run_autocompact_at_compacts_with_the_main_request_plus_the_instruction_and_resume_sends_what_it_kept()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = repository(dir.path());
    std::fs::write(ws.join("first.txt"), text_file("FIRST", 400)).expect("first");
    std::fs::write(ws.join("second.txt"), text_file("SECOND", 400)).expect("second");
    let root = ws.to_str().expect("utf-8 path");
    let prompt = "Read first.txt, then second.txt.";

    // The threshold: the system prompt and tools (what every request carries, as the dry
    // run shows them) and room for one file, not two.
    let dry = threadline(
        &["run", "--dry-run", "--date", DATE, "--cwd", root, prompt],
        dir.path(),
    );
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    let overhead = threadline_compact::overhead_of(&request(stdout(&dry).trim_end()));
    let threshold = (overhead + 7_500).to_string();

    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        r#"
steps:
  - kind: message
    content: [{type: tool_use, id: toolu_first, name: Read, input: {path: first.txt}}]
  - kind: message
    content: [{type: tool_use, id: toolu_second, name: Read, input: {path: second.txt}}]
  - kind: message
    content: [{type: text, text: "<summary>first.txt was read, then second.txt.</summary>"}]
  - kind: message
    content: [{type: text, text: "Both are read."}]
  - kind: message
    content: [{type: text, text: "Resumed."}]
"#,
    )
    .expect("scenario");
    let log = dir.path().join("requests.jsonl");
    let mock = Mock::start_logged(&scenario, &log);
    let transcript = dir.path().join("session.jsonl");
    let transcript = transcript.to_str().expect("utf-8 path");
    let run_with = |session: [&str; 2], prompt: &str| {
        threadline(
            &[
                "run",
                "--base-url",
                &mock.base_url,
                "--date",
                DATE,
                "--cwd",
                root,
                "--autocompact-at",
                &threshold,
                session[0],
                session[1],
                prompt,
            ],
            dir.path(),
        )
    };
    let live = run_with(["--transcript", transcript], prompt);
    assert_eq!(code(&live), 0, "{}", stderr(&live));
    assert!(
        stdout(&live).contains("Both are read."),
        "{}",
        stdout(&live)
    );
    // Resumed from its transcript, the session sends what the live one sent after the
    // compaction — the summary and the messages the compaction kept, copies under their
    // ids — then the answer and the new prompt.
    let resumed = run_with(["--resume", transcript], "Go on.");
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    assert!(
        stdout(&resumed).contains("Resumed."),
        "{}",
        stdout(&resumed)
    );
    drop(mock);

    let lines = log_lines(&log);
    assert_eq!(lines.len(), 5, "{lines:?}");
    let messages_without_markers = |line: &Value| -> Vec<Value> {
        let mut body: Value = serde_json::from_str(logged_body(line)).expect("json");
        strip_cache_control(&mut body);
        body["messages"].as_array().expect("messages").clone()
    };
    let (sent_live, sent_resumed) = (
        messages_without_markers(&lines[3]),
        messages_without_markers(&lines[4]),
    );
    assert!(sent_resumed.len() > sent_live.len());
    assert_eq!(
        sent_resumed[..sent_live.len()],
        sent_live[..],
        "the resumed session's prefix is the live one's"
    );
    assert!(lines.iter().all(|l| l["status"] == 200), "{lines:?}");
    let (main_text, summary_text) = (logged_body(&lines[1]), logged_body(&lines[2]));
    let main: Value = serde_json::from_str(main_text).expect("json");
    let summary: Value = serde_json::from_str(summary_text).expect("json");
    for field in [
        "model",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "context_management",
    ] {
        assert_eq!(main.get(field), summary.get(field), "`{field}` differs");
    }
    assert_eq!(
        threadline_wire::betas::required(&request(main_text)),
        threadline_wire::betas::required(&request(summary_text)),
    );
    let (main_blocks, summary_blocks) = (message_blocks(&main), message_blocks(&summary));
    assert!(summary_blocks.len() > main_blocks.len());
    assert_eq!(summary_blocks[..main_blocks.len()], main_blocks[..]);
    let last = summary_blocks.last().expect("a block");
    assert_eq!(
        last.1["text"],
        threadline_compact::summarizer::SUMMARY_PROMPT
    );
    // The mock's cache: the summary request reads all the main request had cached.
    let tokens = |line: &Value, field: &str| line["usage"][field].as_u64().unwrap_or(0);
    let cached = tokens(&lines[1], "cache_read_input_tokens")
        + tokens(&lines[1], "cache_creation_input_tokens");
    assert!(cached > 0, "{}", lines[1]["usage"]);
    assert!(
        tokens(&lines[2], "cache_read_input_tokens") >= cached,
        "main {} / summary {}",
        lines[1]["usage"],
        lines[2]["usage"]
    );
    // After the summary, the first file is gone from what the model sees.
    let after = logged_body(&lines[3]);
    assert!(after.contains("first.txt was read"));
    assert!(!after.contains("FIRST-LINE-0000"));
    assert!(after.contains("SECOND-LINE-0000"));
}

/// `run --compaction on-demand`: at the threshold the API's on-demand compaction writes the
/// summary (the loop's request plus `compaction`, with its beta), and the next request starts
/// with the signed block the mock returned, on a model that binds thinking to its prefix.
#[test]
fn run_compaction_on_demand_sends_the_compaction_request_then_starts_with_the_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = repository(dir.path());
    std::fs::write(ws.join("first.txt"), text_file("FIRST", 400)).expect("first");
    std::fs::write(ws.join("second.txt"), text_file("SECOND", 400)).expect("second");
    let root = ws.to_str().expect("utf-8 path");
    let prompt = "Read first.txt, then second.txt.";
    let model = "claude-opus-5-5";
    let dry = threadline(
        &[
            "run",
            "--dry-run",
            "--model",
            model,
            "--date",
            DATE,
            "--cwd",
            root,
            prompt,
        ],
        dir.path(),
    );
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    let overhead = threadline_compact::overhead_of(&request(stdout(&dry).trim_end()));
    let threshold = (overhead + 7_500).to_string();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        r#"
steps:
  - kind: message
    content: [{type: thinking, thinking: "First.", signature: s}, {type: tool_use, id: toolu_first, name: Read, input: {path: first.txt}}]
  - kind: message
    content: [{type: thinking, thinking: "Second.", signature: s}, {type: tool_use, id: toolu_second, name: Read, input: {path: second.txt}}]
  - kind: message
    content: [{type: text, text: "first.txt was read, then second.txt."}]
  - kind: message
    content: [{type: thinking, thinking: "Done.", signature: s}, {type: text, text: "Both are read."}]
"#,
    )
    .expect("scenario");
    let log = dir.path().join("requests.jsonl");
    let mock = Mock::start_logged(&scenario, &log);
    let live = threadline(
        &[
            "run",
            "--base-url",
            &mock.base_url,
            "--model",
            model,
            "--date",
            DATE,
            "--cwd",
            root,
            "--autocompact-at",
            &threshold,
            "--compaction",
            "on-demand",
            prompt,
        ],
        dir.path(),
    );
    assert_eq!(code(&live), 0, "{}", stderr(&live));
    assert!(
        stdout(&live).contains("Both are read."),
        "{}",
        stdout(&live)
    );
    drop(mock);
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines.iter().all(|l| l["status"] == 200), "{lines:?}");
    let compaction: Value = serde_json::from_str(logged_body(&lines[2])).expect("json");
    assert_eq!(
        compaction["compaction"],
        serde_json::json!({"type": "summarize"})
    );
    assert!(
        lines[2]["anthropic_beta"]
            .as_str()
            .is_some_and(|b| b.contains("compact-2026-09-04")),
        "{}",
        lines[2]["anthropic_beta"]
    );
    let after: Value = serde_json::from_str(logged_body(&lines[3])).expect("json");
    let block = &after["messages"][0]["content"][0];
    assert_eq!(block["type"], "compaction");
    assert_eq!(block["content"], "first.txt was read, then second.txt.");
    assert!(block["signature"].is_string());
    assert!(!logged_body(&lines[3]).contains("FIRST-LINE-0000"));
}
