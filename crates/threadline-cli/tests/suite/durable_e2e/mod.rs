//! `cargo xtask durable-e2e`: a durable session survives its worker's SIGKILL.
//!
//! Every part is a real process (see [`cluster`]): the Restate server, `threadline mock`, and
//! two `threadline worker`s behind one deployment address. The session has two turns, three
//! tool calls (a slow shell command whose start and completion each append a line to a file,
//! a read, a quick shell command) and one slowly streamed model answer. It runs once without
//! a crash, then once per crash point with the executing worker killed (SIGKILL of its
//! process group): (1) during the slow tool, (2) during the slow model stream, (3) between two
//! steps. Each time the session completes on the other worker, and:
//! - the mock saw every journaled model request once: only the request whose stream was cut
//!   is sent again, byte for byte, and the resend reads the prompt cache the first wrote;
//! - no completed tool call ran twice (the side-effect file has each tool_use id once);
//! - the final transcript equals the crash-free run's byte for byte apart from timestamps (and,
//!   for the cut stream, the usage of the answer sent twice: its cache split differs because
//!   the resend is a cache read, which is the point).
//!
//! A fourth crash, during the slow tool when the shell is NOT declared idempotent, shows the
//! other rule: the call is not run again; the model is told it was interrupted.
//!
//! These tests need the pinned Restate server (`cargo xtask restate-server`); `cargo xtask ci`
//! runs them in a step of their own (`cargo xtask durable-e2e`), not with the other tests.

mod cluster;
mod first_request;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cluster::{Cluster, WorkerFlags, finish, wait_for};

/// The first prompt carries a long brief, so that the requests' prefix is over the model's
/// minimum cacheable length (1,024 tokens): the cache is then written and read as with the API.
fn turn_1() -> String {
    let mut prompt = String::from("Run the slow check, then read the notes.\n\nThe brief:\n");
    for i in 1..=60 {
        prompt.push_str(&format!(
            "{i}. Every change keeps the public interface stable, is covered by a test that \
             fails without it, and is described in the changelog in one readable line.\n"
        ));
    }
    prompt
}
const TURN_2: &str = "Record that it shipped.";
const SLOW: &str = "toolu_e2e_slow";
const WRITE: &str = "toolu_e2e_write";

/// Where the executing worker is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Crash {
    None,
    DuringSlowTool,
    DuringSlowStream,
    BetweenSteps,
}

/// What one run of the session left.
#[derive(Debug)]
struct Outcome {
    transcript: Vec<String>,
    answers: [String; 2],
    requests: Vec<serde_json::Value>,
    starts: Vec<String>,
    effects: Vec<String>,
    /// Connections to worker B before the kill, and in all.
    to_b: (usize, usize),
    elapsed: Duration,
    /// From the kill to the first connection to worker b.
    recovery: Option<Duration>,
}

fn run(crash: Crash, flags: WorkerFlags) -> Outcome {
    let mut cluster = Cluster::start(&flags);
    let start = Instant::now();
    let turn = cluster.submit(&turn_1());
    match crash {
        Crash::None => {}
        Crash::DuringSlowTool => {
            wait_for("the slow tool's start", Duration::from_secs(60), || {
                cluster.lines_of("starts.log").iter().any(|l| l == SLOW)
            });
            assert!(
                cluster.lines_of("effects.log").is_empty(),
                "the slow tool is still running"
            );
            // The session can be inspected while it runs: the step log holds the first model
            // call (a step shows once the next one started: the SDK sends state writes with
            // the next journal entry).
            let view = cluster.view();
            assert_eq!(view["status"], "running", "{view}");
            let steps: Vec<&str> = view["steps"]
                .as_array()
                .map(|s| s.iter().filter_map(|s| s["name"].as_str()).collect())
                .unwrap_or_default();
            assert!(
                steps.contains(&"model#0"),
                "the first model call is logged: {steps:?}"
            );
        }
        Crash::DuringSlowStream => {
            wait_for("the slow stream's request", Duration::from_secs(60), || {
                cluster.mock_requests().iter().any(|r| r["step"] == 1)
            });
            // The stream takes about 3 s; cut it in the middle.
            std::thread::sleep(Duration::from_millis(800));
        }
        Crash::BetweenSteps => {
            // The slow tool completed; its result is journaled well within the workers'
            // pause after each step (1.5 s), and the next model request is not sent yet.
            wait_for(
                "the slow tool's completion",
                Duration::from_secs(60),
                || cluster.lines_of("effects.log").iter().any(|l| l == SLOW),
            );
            std::thread::sleep(Duration::from_millis(400));
            let requests = cluster.mock_requests();
            assert_eq!(
                requests.len(),
                1,
                "only the first model request was sent: {requests:?}"
            );
        }
    }
    let before = cluster.connections_to(1);
    let killed = (crash != Crash::None).then(|| {
        cluster.workers[0].kill();
        Instant::now()
    });
    // Failover: from the kill to the server's first connection to worker b.
    let recovery = killed.map(|at| {
        wait_for("a connection to worker b", Duration::from_secs(60), || {
            cluster.connections_to(1) > before
        });
        at.elapsed()
    });
    let first = finish(turn, "turn 1");
    let second = finish(cluster.submit(TURN_2), "turn 2");
    let transcript = cluster
        .show(&["--transcript"])
        .lines()
        .map(str::to_owned)
        .collect();
    let outcome = Outcome {
        transcript,
        answers: [first, second],
        requests: cluster.mock_requests(),
        starts: cluster.lines_of("starts.log"),
        effects: cluster.lines_of("effects.log"),
        to_b: (before, cluster.connections_to(1)),
        elapsed: start.elapsed(),
        recovery,
    };
    drop(cluster);
    outcome
}

/// The workspace every run of one test uses: the agent's requests name its path (its system
/// context), and the runs of a test are compared byte for byte.
fn shared_workspace(test: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("durable-e2e")
        .join(test)
        .join("workspace")
}

/// `line` with every `"timestamp":"…"` value blanked.
fn without_timestamps(line: &str) -> String {
    const KEY: &str = "\"timestamp\":\"";
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(KEY) {
        out.push_str(&rest[..at + KEY.len()]);
        rest = &rest[at + KEY.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The transcript of `o` with its timestamps blanked.
fn timeless(o: &Outcome) -> Vec<String> {
    o.transcript.iter().map(|l| without_timestamps(l)).collect()
}

/// What a crash run without a resent request must show: no model request sent twice and
/// the crash-free transcript, apart from timestamps.
fn assert_nothing_resent(name: &str, baseline: &Outcome, o: &Outcome) {
    assert_eq!(
        sent(&o.requests),
        sent(&baseline.requests),
        "{name}: no model request sent twice"
    );
    let (lines, expected) = (timeless(o), timeless(baseline));
    let first = lines.iter().zip(&expected).position(|(a, b)| a != b);
    assert!(
        first.is_none() && lines.len() == expected.len(),
        "{name}: the transcript, apart from timestamps, differs at line {first:?} of {}/{}:\n{}\n{}",
        lines.len(),
        expected.len(),
        first.map_or("", |i| lines[i].as_str()),
        first.map_or("", |i| expected[i].as_str()),
    );
}

/// `line` (a message) with its usage removed, for the one answer whose cache split differs.
fn without_usage(line: &str) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_str(line).expect("a message line");
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.remove("usage");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

/// Model requests (`/v1/messages`) by body hash: how many times each was received.
fn sent(requests: &[serde_json::Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for r in requests.iter().filter(|r| r["path"] == "/v1/messages") {
        let hash = r["body_sha256"].as_str().expect("a hash").to_owned();
        *counts.entry(hash).or_default() += 1;
    }
    counts
}

fn count(lines: &[String], id: &str) -> usize {
    lines.iter().filter(|l| *l == id).count()
}

fn report(name: &str, o: &Outcome) {
    let sent = sent(&o.requests);
    eprintln!(
        "durable-e2e {name}: {} s; model requests {} ({} distinct); tool starts {} ({} slow), \
         completions {}; connections to worker b {} before the kill, {} in all; failover {}",
        o.elapsed.as_secs_f64(),
        sent.values().sum::<usize>(),
        sent.len(),
        o.starts.len(),
        count(&o.starts, SLOW),
        o.effects.len(),
        o.to_b.0,
        o.to_b.1,
        o.recovery
            .map_or("-".to_owned(), |d| format!("{:.2} s", d.as_secs_f64())),
    );
}

/// Asserts what every crash run shares with the crash-free one.
fn assert_survived(name: &str, baseline: &Outcome, o: &Outcome) {
    assert_eq!(o.answers, baseline.answers, "{name}: the answers");
    assert_eq!(o.to_b.0, 0, "{name}: worker b was idle before the kill");
    assert!(o.to_b.1 > 0, "{name}: the session continued on worker b");
    assert_eq!(
        count(&o.effects, SLOW),
        1,
        "{name}: the slow tool completed once"
    );
    assert_eq!(
        count(&o.effects, WRITE),
        1,
        "{name}: the quick tool completed once"
    );
    assert_eq!(o.effects.len(), 2, "{name}: {:?}", o.effects);
    assert_eq!(
        o.transcript.len(),
        baseline.transcript.len(),
        "{name}: the history's length"
    );
}

#[test]
fn a_session_survives_sigkill_at_three_points_byte_for_byte() {
    let workspace = shared_workspace("survives");
    let idempotent = WorkerFlags {
        bash_idempotent: true,
        step_delay_ms: 0,
        workspace: Some(workspace.clone()),
        mcp_config: None,
        bedrock: false,
    };
    let baseline = run(Crash::None, idempotent.clone());
    report("crash-free", &baseline);
    let sent_once = sent(&baseline.requests);
    assert_eq!(sent_once.len(), 5, "five model requests: {sent_once:?}");
    assert!(sent_once.values().all(|n| *n == 1));
    assert_eq!(baseline.effects, [SLOW, WRITE]);
    assert_eq!(baseline.starts, [SLOW, WRITE]);
    let baseline_lines = timeless(&baseline);

    // (1) During the slow tool: its call was not journaled, so (declared idempotent) it runs
    // again on worker b; the killed attempt never completed. Nothing else is sent again.
    let tool = run(Crash::DuringSlowTool, idempotent.clone());
    report("killed during the slow tool", &tool);
    assert_survived("slow tool", &baseline, &tool);
    assert_eq!(
        count(&tool.starts, SLOW),
        2,
        "started on a, then again on b"
    );
    assert_nothing_resent("slow tool", &baseline, &tool);

    // (3) Between steps: the slow tool's result is journaled, the pause after it is not a
    // step; nothing runs or is sent twice.
    let between = run(
        Crash::BetweenSteps,
        WorkerFlags {
            bash_idempotent: true,
            step_delay_ms: 1500,
            workspace: Some(workspace),
            mcp_config: None,
            bedrock: false,
        },
    );
    report("killed between steps", &between);
    assert_survived("between steps", &baseline, &between);
    assert_eq!(between.starts, [SLOW, WRITE], "no tool started twice");
    assert_nothing_resent("between steps", &baseline, &between);

    // (2) During the slow stream: that one request was not journaled and is sent again, byte
    // for byte; its resend reads the cache its first sending wrote.
    let stream = run(Crash::DuringSlowStream, idempotent);
    report("killed during the slow stream", &stream);
    assert_survived("slow stream", &baseline, &stream);
    assert_eq!(stream.starts, [SLOW, WRITE], "no tool started twice");
    let counts = sent(&stream.requests);
    assert_eq!(
        counts.len(),
        5,
        "the same five distinct requests: {counts:?}"
    );
    let twice: Vec<&String> = counts
        .iter()
        .filter(|(_, n)| **n == 2)
        .map(|(h, _)| h)
        .collect();
    assert_eq!(twice.len(), 1, "exactly one request sent twice: {counts:?}");
    assert_eq!(counts.values().sum::<usize>(), 6);
    let copies: Vec<&serde_json::Value> = stream
        .requests
        .iter()
        .filter(|r| r["body_sha256"] == *twice[0])
        .collect();
    assert_eq!(
        copies[0]["step"], 1,
        "the resent request is the slow stream's"
    );
    let read = |r: &serde_json::Value| r["usage"]["cache_read_input_tokens"].as_u64().unwrap_or(0);
    let written = |r: &serde_json::Value| {
        r["usage"]["cache_creation_input_tokens"]
            .as_u64()
            .unwrap_or(0)
    };
    assert!(
        written(copies[0]) > 0,
        "the first sending wrote the cache: {}",
        copies[0]["usage"]
    );
    assert_eq!(
        read(copies[1]),
        read(copies[0]) + written(copies[0]),
        "the resend reads all the first wrote: {} then {}",
        copies[0]["usage"],
        copies[1]["usage"]
    );
    eprintln!(
        "durable-e2e cache after failover: first sending read {} wrote {}, resend read {} wrote {}",
        read(copies[0]),
        written(copies[0]),
        read(copies[1]),
        written(copies[1])
    );
    let lines = timeless(&stream);
    // The one answer sent twice is stored as one message per block (its fragments), each
    // with the response's usage: those lines, and only those, differ, and only in usage.
    let differ: Vec<usize> = (0..lines.len())
        .filter(|i| lines[*i] != baseline_lines[*i])
        .collect();
    assert!(
        !differ.is_empty(),
        "the resend's usage is a cache read, not a write"
    );
    let answers: std::collections::BTreeSet<String> = differ
        .iter()
        .map(|i| without_usage(&lines[*i])["api_message_id"].to_string())
        .collect();
    assert_eq!(
        answers.len(),
        1,
        "the differing lines are one answer's fragments: {differ:?}"
    );
    for i in &differ {
        assert_eq!(
            without_usage(&lines[*i]),
            without_usage(&baseline_lines[*i]),
            "line {i} differs only in usage"
        );
    }
    eprintln!(
        "durable-e2e transcripts: {} lines; equal to the crash-free run's but for timestamps in \
         every case, and for the usage of the {} fragments of the resent answer {}",
        lines.len(),
        differ.len(),
        answers.iter().next().map_or("", String::as_str)
    );
}

#[test]
fn a_non_idempotent_tool_cut_by_a_crash_is_not_run_again() {
    let flags = WorkerFlags {
        workspace: Some(shared_workspace("non-idempotent")),
        ..WorkerFlags::default()
    };
    let outcome = run(Crash::DuringSlowTool, flags);
    report("killed during a non-idempotent tool", &outcome);
    assert!(outcome.to_b.1 > 0, "the session continued on worker b");
    assert_eq!(
        outcome.starts,
        [SLOW, WRITE],
        "the cut shell command was not started again"
    );
    assert_eq!(outcome.effects, [WRITE], "it never completed");
    assert!(
        sent(&outcome.requests).values().all(|n| *n == 1),
        "no model request sent twice"
    );
    let result = outcome
        .transcript
        .iter()
        .find(|l| l.contains("tool_result") && l.contains(SLOW))
        .expect("the slow call has a result");
    assert!(
        result.contains(threadline::query::recovery::INTERRUPTED),
        "the model is told the call was interrupted: {result}"
    );
}
