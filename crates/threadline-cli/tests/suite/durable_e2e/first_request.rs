//! One agent, one request, durably: the first request a durable turn sends (`threadline
//! worker` behind a real Restate server, the turn submitted with `run --restate`) is byte for
//! byte the body `run --dry-run` prints for the same workspace, date and prompt, read back
//! from the mock's request log.

use std::process::Stdio;

use super::cluster::{Cluster, DATE, WorkerFlags, finish};
use crate::common;

#[test]
fn a_durable_turns_first_request_is_the_dry_runs_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "steps:\n  - {kind: message, content: [{type: text, text: \"Ship it.\"}]}\n",
    )
    .expect("scenario");
    let cluster = Cluster::start_with(&WorkerFlags::default(), &scenario);
    let workspace = cluster.workspace();
    let root = workspace.to_str().expect("a UTF-8 path");
    let prompt = "What does the note say? See @notes.txt.";

    let dry = common::command()
        .args([
            "run",
            "--dry-run",
            "--allow-shell",
            "--date",
            DATE,
            "--cwd",
            root,
            prompt,
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("THREADLINE_DATE")
        .stdin(Stdio::null())
        .output()
        .expect("the dry run runs");
    assert_eq!(common::code(&dry), 0, "{}", common::stderr(&dry));
    let printed = common::stdout(&dry);

    let answer = finish(cluster.submit(prompt), "the durable turn");
    assert!(answer.contains("Ship it."), "{answer}");
    let requests = cluster.mock_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let sent = requests[0]["body"].as_str().expect("the body, as text");
    assert_eq!(printed.strip_suffix('\n'), Some(sent));
    // The agent of `run`: its tools, the workspace's instructions, the mentioned file, the
    // date, cache markers.
    for needle in [
        "\"Read\"",
        "\"Bash\"",
        "Keep the notes short.",
        "ship it",
        DATE,
        "cache_control",
    ] {
        assert!(sent.contains(needle), "{needle} is not in {sent}");
    }
}
