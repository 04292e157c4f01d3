//! `threadline inspect` holds memory in proportion to the transcript, not to the sum of the
//! requests it implies: on a realistic 15 MB transcript (500 messages of 30 KB) the child's
//! peak RSS stays under four times the file's size. The peak is read with
//! `getrusage(RUSAGE_CHILDREN)` after the child is reaped, which counts every child the
//! process ever reaped, so `inspect` runs from a child of its own: this test binary again,
//! running this test alone in child mode.

use crate::common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};

use common::command;

/// A threadline transcript of `messages` messages of about `bytes` bytes each, alternating
/// prompts and answers (each answer with its request id and usage), a minute apart.
fn transcript(messages: usize, bytes: usize) -> String {
    let mut out = String::new();
    for i in 0..messages {
        let text: String = (0..)
            .map(|k| format!("line {k} of message {i}: some code and prose. "))
            .take_while({
                let mut len = 0;
                move |s: &String| {
                    len += s.len();
                    len <= bytes
                }
            })
            .collect();
        let at = format!("2026-01-01T{:02}:{:02}:00Z", i / 60 % 24, i % 60);
        if i % 2 == 0 {
            let _ = writeln!(
                out,
                r#"{{"type":"user","id":"u{i}","timestamp":"{at}","content":[{{"type":"text","text":"{text}"}}]}}"#
            );
        } else {
            let _ = writeln!(
                out,
                r#"{{"type":"assistant","id":"a{i}","timestamp":"{at}","api_message_id":"msg_{i:06}","request_id":"req_{i:06}","model":"claude-sonnet-4-6","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":4,"cache_creation_input_tokens":7000,"cache_read_input_tokens":{},"output_tokens":900}}}}"#,
                3_000 + 7_500 * i
            );
        }
    }
    out
}

/// The variable that puts this binary in the test's child mode (its value: the transcript).
const CHILD: &str = "THREADLINE_CLI_INSPECT_MEMORY_CHILD";

/// The test's name.
const TEST: &str = "inspect_peak_memory_stays_within_four_times_the_transcript";

/// The small-records test's name.
const SMALL_TEST: &str =
    "the_default_input_limit_keeps_inspect_of_small_records_under_two_gigabytes";

/// `test`'s name as the harness filters it: its module path below the test binary's root
/// (the same in a binary of its own and as a module of a larger one).
fn harness_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

/// Writes `text` as a transcript and runs `inspect --json` on it from a child of its own
/// (this binary again, running `test` alone in child mode); the file's size and the peak RSS
/// of `inspect`.
fn measure(test: &str, text: &str) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("session.jsonl");
    std::fs::write(&path, text).expect("written");
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .arg(harness_name(test))
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &path)
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let peak: u64 = printed(&stdout, "PEAK").trim().parse().expect("a number");
    let size = text.len() as u64;
    println!(
        "transcript {:.1} MB, peak RSS {:.1} MB ({:.2}x), {}",
        size as f64 / 1e6,
        peak as f64 / 1e6,
        peak as f64 / size as f64,
        printed(&stdout, "ELAPSED").trim()
    );
    (size, peak)
}

/// In the child: `threadline inspect --json` on `path`, then the peak RSS of the reaped
/// `inspect` (the only child this process has had) and the time it took printed.
fn child_inspect(path: &Path) {
    let mut child = command()
        .args(["inspect", "--json"])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // A generous bound for a loaded machine; the quadratic version took minutes here.
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("inspect still running after 60 s (killed)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    // Linux reports kilobytes.
    let peak = getrusage(UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage")
        .max_rss() as u64
        * 1024;
    println!("PEAK={peak}");
    println!("ELAPSED={:?}", start.elapsed());
}

/// The value the child printed as `KEY=value` to the end of a line (the harness may have
/// printed the test's name before it on the same line).
fn printed<'a>(stdout: &'a str, key: &str) -> &'a str {
    let marker = format!("{key}=");
    stdout
        .lines()
        .find_map(|line| Some(line.split_once(&marker)?.1))
        .unwrap_or_else(|| panic!("the child printed no {key}: {stdout}"))
}

#[test]
fn inspect_peak_memory_stays_within_four_times_the_transcript() {
    if let Some(path) = std::env::var_os(CHILD) {
        return child_inspect(Path::new(&path));
    }
    let text = transcript(500, 30 * 1024);
    let (size, peak) = measure(TEST, &text);
    assert!(size > 14 * 1024 * 1024, "{size}");
    assert!(
        peak <= 4 * size,
        "peak RSS {peak} bytes is over 4 x the transcript's {size} bytes"
    );
}

/// Small records cost far more per byte (a 76 MB transcript of 300 000 records
/// peaked at 1.8 GB, 24 x), so the default input limit (256 MiB) let `inspect` take several
/// gigabytes. Measured on 40 000 records of about 250 bytes, the default limit times the
/// amplification (the process's fixed part included) stays under 2 GB.
#[test]
fn the_default_input_limit_keeps_inspect_of_small_records_under_two_gigabytes() {
    if let Some(path) = std::env::var_os(CHILD) {
        return child_inspect(Path::new(&path));
    }
    let text = transcript(40_000, 80);
    let (size, peak) = measure(SMALL_TEST, &text);
    let at_the_limit =
        peak as f64 / size as f64 * threadline_cli::input::DEFAULT_MAX_INPUT_BYTES as f64;
    assert!(
        at_the_limit < 2e9,
        "{:.2}x the transcript: {:.2} GB at the default limit",
        peak as f64 / size as f64,
        at_the_limit / 1e9
    );
}
