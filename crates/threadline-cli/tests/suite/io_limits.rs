//! The binary's input limit and its stdout errors: every file-reading command stops at
//! `--max-input-bytes` (an endless `/dev/zero` included) with one line and exit code 2, and a
//! stdout that cannot be written (`/dev/full`) makes the run fail with one line.

use crate::common;

use std::fs::File;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{code, command, repo, stderr, temp_file};

/// Far more than any of these runs needs on a loaded machine; a run still going is a hang.
const HANG: Duration = Duration::from_secs(20);

/// Runs `cmd` to the end, killing it (and failing the test) if it runs longer than [`HANG`].
fn run_bounded(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd
        .current_dir(repo())
        .env_remove("THREADLINE_DATE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Read both pipes on threads so a chatty child never blocks on a full pipe.
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut bytes);
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut bytes);
        bytes
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {HANG:?} (killed)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// The argument lists of every command that reads a file, with FILE where the file goes.
const READERS: &[&[&str]] = &[
    &["accumulate", "FILE"],
    &["check", "FILE"],
    &["normalize", "FILE"],
    &["inspect", "FILE"],
    &["compact", "--model", "claude-sonnet-4-6", "FILE"],
    &["mock", "--addr", "127.0.0.1:0", "--scenario", "FILE"],
    &["replay", "FILE"],
    &[
        "compact",
        "--model",
        "claude-sonnet-4-6",
        "--limit",
        "1",
        "--summary",
        "FILE",
        "fixtures/recorded/lanegrid__agtrace/claude_session.jsonl",
    ],
];

fn assert_refused(output: &Output, what: &str, limit: &str) {
    let err = stderr(output);
    assert_eq!(code(output), 2, "{what}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: one line: {err}");
    assert!(
        lines[0].contains(limit) && lines[0].contains("--max-input-bytes"),
        "{what}: names the limit and the flag: {err}"
    );
}

#[test]
fn every_file_reading_command_stops_at_the_limit_on_dev_zero() {
    for args in READERS {
        let mut cmd = command();
        for arg in *args {
            cmd.arg(if *arg == "FILE" { "/dev/zero" } else { arg });
        }
        cmd.args(["--max-input-bytes", "65536"])
            .stdin(Stdio::null());
        let what = args.join(" ");
        assert_refused(&run_bounded(cmd, &what), &what, "65536");
    }
}

#[test]
fn stdin_is_cut_at_the_limit_too() {
    for args in READERS
        .iter()
        .filter(|a| !a.contains(&"mock") && !a.contains(&"--summary"))
    {
        let mut cmd = command();
        for arg in *args {
            cmd.arg(if *arg == "FILE" { "-" } else { arg });
        }
        cmd.args(["--max-input-bytes", "65536"])
            .stdin(File::open("/dev/zero").expect("/dev/zero"));
        let what = format!("{} < /dev/zero", args.join(" "));
        assert_refused(&run_bounded(cmd, &what), &what, "65536");
    }
}

#[test]
fn a_file_at_the_limit_is_read_and_one_byte_more_is_refused() {
    let sse = std::fs::read(
        repo().join("fixtures/recorded/anthropics__anthropic-sdk-python/tool_use_response.txt"),
    )
    .expect("fixture");
    let path = temp_file("limit.sse", &sse);
    let path = path.to_str().expect("utf-8 path");
    let exact = sse.len().to_string();
    let mut at = command();
    at.args(["accumulate", path, "--max-input-bytes", &exact]);
    let at = run_bounded(at, "at the limit");
    assert_eq!(code(&at), 0, "{}", stderr(&at));
    let under = (sse.len() - 1).to_string();
    for args in [["accumulate", path], ["check", path]] {
        let mut over = command();
        over.args(args).args(["--max-input-bytes", &under]);
        assert_refused(
            &run_bounded(over, "over the limit"),
            "over the limit",
            &under,
        );
    }
}

/// `inspect` holds up to about 33 times its input, so the default limit (256 MiB)
/// let it take several gigabytes. The default is now 48 MiB: limit x amplification < 2 GB.
#[test]
fn the_default_limit_keeps_inspect_under_two_gigabytes() {
    let mut cmd = command();
    cmd.args(["inspect", "-"])
        .stdin(File::open("/dev/zero").expect("/dev/zero"));
    let output = run_bounded(cmd, "inspect < /dev/zero");
    assert_refused(&output, "inspect < /dev/zero", "50331648");
}

#[test]
fn accumulate_streams_sse_so_its_event_bound_ends_an_endless_stream() {
    // With the default limit (48 MiB) the stream reader's per-event bound (16 MiB) comes
    // first: the input is read as it comes, never held whole.
    let mut cmd = command();
    cmd.args(["accumulate", "-"])
        .stdin(File::open("/dev/zero").expect("/dev/zero"));
    let output = run_bounded(cmd, "accumulate < /dev/zero");
    let err = stderr(&output);
    assert_eq!(code(&output), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("invalid event stream"), "{err}");
}

#[test]
fn output_that_cannot_be_written_fails_the_run_with_one_line() {
    let transcript = "fixtures/recorded/lanegrid__agtrace/claude_session.jsonl";
    let sse = "fixtures/recorded/anthropics__anthropic-sdk-python/tool_use_response.txt";
    let runs: &[&[&str]] = &[
        &["normalize", transcript],
        &["inspect", transcript],
        &["inspect", "--json", transcript],
        &[
            "compact",
            "--model",
            "claude-sonnet-4-6",
            "--strategy",
            "snip",
            "--limit",
            "10",
            transcript,
        ],
        &["accumulate", sse],
        &[
            "run",
            "--dry-run",
            "--date",
            "2026-01-01",
            "--cwd",
            "crates/threadline-cli/demo/project",
            "hi",
        ],
    ];
    for args in runs {
        let what = args.join(" ");
        let mut cmd = command();
        cmd.args(*args);
        let mut child = cmd
            .current_dir(repo())
            .stdout(File::create("/dev/full").expect("/dev/full"))
            .stderr(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("the binary runs");
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr"), &mut err)
            .expect("stderr");
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(1), "{what}: {err}");
        let failures: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("cannot write to stdout"))
            .collect();
        assert_eq!(failures.len(), 1, "{what}: one line says so: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
}

/// An ingress that answers every `show` with one 64 KiB message and a next page one further
/// on, forever, claiming a history of `usize::MAX` messages. Serves on its own thread until
/// the test ends.
fn endless_ingress() -> String {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let address = listener.local_addr().expect("an address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("a clone"));
                let mut writer = stream;
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let since = serde_json::from_slice::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v.get("since").and_then(serde_json::Value::as_u64))
                        .unwrap_or(0);
                    let page = serde_json::json!({
                        "status": "idle", "turns": 1, "message_count": usize::MAX,
                        "since": since, "next": since + 1, "steps": [],
                        "messages": [{"type": "user", "id": format!("u{since}"),
                                      "timestamp": "2026-01-01T00:00:00Z",
                                      "content": [{"type": "text", "text": "x".repeat(64 * 1024)}]}],
                    })
                    .to_string();
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{page}",
                        page.len()
                    );
                    if writer.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{address}")
}

#[test]
fn a_session_shown_from_an_ingress_that_pages_forever_stops_at_the_limit() {
    let url = endless_ingress();
    let mut cmd = command();
    cmd.args(["session", "show", "--restate", &url, "s1"])
        .args(["--max-input-bytes", "1000000"])
        .stdin(Stdio::null());
    let what = "session show --restate (endless pages)";
    assert_refused(&run_bounded(cmd, what), what, "1000000");
}
