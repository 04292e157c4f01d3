//! `cargo xtask turn-cost`: what a turn costs the agent itself, threadline beside the pinned
//! Claude Code, measured from outside both (issue 31).
//!
//! Both agents run against the same scripted model on loopback: a small HTTP/1.1 server in
//! this process that answers every request holding a `Read` tool with a call to `Read` of
//! the next 8 KB file of the workspace (`files/f0000.txt`, …, each different, so that no
//! agent can answer a Read from memory), counting the `tool_result` blocks the request
//! carries, until the run's number of turns; then a final text. Every other request (a title,
//! a quota check) gets a short text; `count_tokens` gets a count. Usage is reported small, so
//! that neither agent compacts.
//!
//! **Overhead per turn** is the time from the end of the server's answer (its last byte
//! written) to the first byte of the agent's next request: the agent reads the answer, runs
//! the Read, builds and sends the next request. **CPU per turn** is the agent process's user
//! plus system time (`cutime` + `cstime` after it is reaped, 10 ms ticks) divided by the
//! turns, start-up included. **Peak RSS** is `VmHWM`, sampled every 50 ms.
//!
//! `cargo xtask turn-cost [--turns 50,200,400] [--reps 3] [--without-claude-code]` builds
//! `threadline` (release), installs Claude Code if missing (`claude_code::install`), runs the
//! agents interleaved (for each repetition, each length, each agent) and prints, for each
//! agent and length, the median of the per-run medians, the median of each run's last tenth
//! of turns (the cost at that history length), CPU per turn and peak RSS, then Claude Code ÷
//! threadline. The figures go to `target/turn-cost/report.json`; each run's server log and
//! agent output stay under `target/turn-cost/`.
//!
//! Not a CI step: it measures time, which the machine's load moves; the issue's goals are
//! checked by reading its report.

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::claude_code::{self, Finished};
use crate::util::{Context as _, Failure, XResult, run_cargo, write_file};

/// Arguments of `cargo xtask turn-cost`.
#[derive(Debug, clap::Args)]
pub(crate) struct TurnCostArgs {
    /// The session lengths, in turns (one Read each).
    #[arg(long, value_delimiter = ',', default_values_t = [50, 200, 400])]
    turns: Vec<usize>,
    /// How many times each agent runs each length (interleaved).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Measure threadline alone (no Claude Code install or run).
    #[arg(long)]
    without_claude_code: bool,
}

/// The size of each file the agents read.
const FILE_BYTES: usize = 8 * 1024;

/// The longest header section and body the scripted server reads.
const MAX_HEADER_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The prompt both agents get.
const PROMPT: &str = "Read the files under files/ one at a time, in order, until told to stop.";

/// Where the runs and the report are kept, relative to the repository root.
const RUNS: &str = "target/turn-cost";

/// One request the scripted server answered.
#[derive(Debug, Clone, Copy)]
struct Exchange {
    /// A request of the agent's main loop (it offers `Read`).
    main: bool,
    /// When its first byte was read.
    first_byte: Instant,
    /// When the last byte of the answer was written.
    answered: Instant,
}

/// What the scripted server answers, and what it saw.
struct Script {
    /// Turns of the current run: Read calls before the final text.
    turns: AtomicUsize,
    /// How many answers it gave: each answer's id is its own.
    answers: AtomicUsize,
    /// The directory holding the files, as the Read calls name them.
    files: PathBuf,
    log: Mutex<Vec<Exchange>>,
}

impl Script {
    fn begin(&self, turns: usize) {
        self.turns.store(turns, Ordering::SeqCst);
        self.log.lock().expect("not poisoned").clear();
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().expect("not poisoned").clone()
    }
}

/// An HTTP request as the server read it.
#[derive(Debug, PartialEq)]
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
    close: bool,
}

/// Reads one request whose first byte is in `reader`'s buffer; `None` at a clean end.
fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<Request>> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut head = Vec::new();
    loop {
        let before = head.len();
        reader
            .by_ref()
            .take((MAX_HEADER_BYTES + 1 - before) as u64)
            .read_until(b'\n', &mut head)?;
        if head.len() == before {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(bad("the connection closed inside the headers"))
            };
        }
        if head.len() > MAX_HEADER_BYTES {
            return Err(bad("headers too long"));
        }
        if head.ends_with(b"\r\n\r\n") || head == b"\r\n" {
            break;
        }
    }
    let head = String::from_utf8(head).map_err(|_| bad("headers are not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let mut start = lines.next().unwrap_or_default().split(' ');
    let method = start.next().unwrap_or_default().to_owned();
    let path = start.next().unwrap_or_default().to_owned();
    let (mut length, mut chunked, mut close) = (0usize, false, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().map_err(|_| bad("bad content-length"))?,
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    let body = if chunked {
        read_chunked(reader)?
    } else {
        if length > MAX_BODY_BYTES {
            return Err(bad("body too long"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    Ok(Some(Request {
        method,
        path,
        body,
        close,
    }))
}

/// Reads a chunked body (and its trailers).
fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        reader.by_ref().take(1024).read_line(&mut line)?;
        let size = line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
        if size == 0 {
            loop {
                let mut trailer = String::new();
                if reader.by_ref().take(1024).read_line(&mut trailer)? == 0
                    || trailer.trim().is_empty()
                {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(bad("body too long"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

/// The file turn `turn` reads, under `files`.
fn file_for(files: &Path, turn: usize) -> PathBuf {
    files.join(format!("f{turn:04}.txt"))
}

/// The contents of turn `turn`'s file: numbered lines of code-like text (quotes,
/// backslashes), `FILE_BYTES` long, different for every turn.
fn file_text(turn: usize) -> String {
    let mut text = String::with_capacity(FILE_BYTES + 80);
    let mut line = 0;
    while text.len() < FILE_BYTES {
        text.push_str(&format!(
            "    let path_{turn}_{line} = \"src/lib.rs\"; // a \\ line of code, file {turn}\n"
        ));
        line += 1;
    }
    text.truncate(FILE_BYTES - 1);
    text.push('\n');
    text
}

/// How many `tool_result` blocks a request's messages carry.
fn tool_results(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .count()
}

/// Whether a request offers the `Read` tool (a request of the agent's main loop).
fn offers_read(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Read"))
}

/// The answer to a request: whether it is a main-loop request, and the HTTP response's
/// bytes.
fn answer(request: &Request, script: &Script) -> (bool, Vec<u8>) {
    if request.method != "POST" {
        return (false, http(404, "application/json", b"{}"));
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    if request.path.starts_with("/v1/messages/count_tokens") {
        return (
            false,
            http(200, "application/json", br#"{"input_tokens":100}"#),
        );
    }
    if !request.path.starts_with("/v1/messages") {
        return (false, http(404, "application/json", b"{}"));
    }
    let model = body["model"].as_str().unwrap_or("claude-sonnet-4-5");
    let main = offers_read(&body);
    let done = tool_results(&body);
    let turns = script.turns.load(Ordering::SeqCst);
    let content = if main && done < turns {
        json!({
            "type": "tool_use",
            "id": format!("toolu_turncost_{done:04}"),
            "name": "Read",
            "input": {"file_path": file_for(&script.files, done).to_string_lossy()},
        })
    } else if main {
        json!({"type": "text", "text": "All files read."})
    } else {
        json!({"type": "text", "text": "ok"})
    };
    let stop = if content["type"] == "tool_use" {
        "tool_use"
    } else {
        "end_turn"
    };
    // Each answer its own id: both agents merge answers that share one (a split message).
    let id = format!(
        "msg_turncost_{}",
        script.answers.fetch_add(1, Ordering::SeqCst)
    );
    let response = if body["stream"] == true {
        http(
            200,
            "text/event-stream",
            sse(&id, model, &content, stop).as_bytes(),
        )
    } else {
        let message = json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [content], "stop_reason": stop, "stop_sequence": null,
            "usage": usage(20),
        });
        http(200, "application/json", message.to_string().as_bytes())
    };
    (main, response)
}

/// The usage every answer reports: small, so that no agent compacts.
fn usage(output: u64) -> Value {
    json!({"input_tokens": 100, "output_tokens": output,
           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

/// The SSE events of an answer holding one block.
fn sse(id: &str, model: &str, block: &Value, stop: &str) -> String {
    let start = json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage(1)}});
    let (opening, delta) = if block["type"] == "tool_use" {
        (
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": block["text"]}),
        )
    };
    let events = [
        ("message_start", start),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": opening}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": 20}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// An HTTP/1.1 response with a known length.
fn http(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let reason = if status == 200 { "OK" } else { "Not Found" };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nrequest-id: req_turncost\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Serves one connection until it closes.
fn serve(stream: TcpStream, script: &Script) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    loop {
        if reader.fill_buf()?.is_empty() {
            return Ok(());
        }
        let first_byte = Instant::now();
        let Some(request) = read_request(&mut reader)? else {
            return Ok(());
        };
        let (main, response) = answer(&request, script);
        writer.write_all(&response)?;
        writer.flush()?;
        let answered = Instant::now();
        script.log.lock().expect("not poisoned").push(Exchange {
            main,
            first_byte,
            answered,
        });
        if request.close {
            return Ok(());
        }
    }
}

/// Starts the scripted server on loopback; its base URL.
fn start(script: Arc<Script>) -> XResult<String> {
    let listener = TcpListener::bind("127.0.0.1:0").context(|| "turn-cost: bind".to_owned())?;
    let addr = listener
        .local_addr()
        .context(|| "turn-cost: local address".to_owned())?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let script = Arc::clone(&script);
            std::thread::spawn(move || {
                let _ = serve(stream, &script);
            });
        }
    });
    Ok(format!("http://{addr}"))
}

/// The per-turn overheads of a run: for each main-loop request after the first, the time
/// from the end of the previous main-loop answer to its first byte.
fn overheads(exchanges: &[Exchange]) -> Vec<Duration> {
    let mut main: Vec<&Exchange> = exchanges.iter().filter(|e| e.main).collect();
    main.sort_by_key(|e| e.first_byte);
    main.windows(2)
        .map(|pair| {
            pair[1]
                .first_byte
                .saturating_duration_since(pair[0].answered)
        })
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count); zero when empty.
fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

/// One agent's run of one length.
#[derive(Debug, Clone)]
struct Run {
    agent: &'static str,
    turns: usize,
    /// The median overhead over all turns.
    median: Duration,
    /// The median overhead over the last tenth of the turns.
    late_median: Duration,
    cpu_per_turn: Option<Duration>,
    peak_rss_kib: Option<u64>,
}

/// Measures `exchanges` of a run of `turns` turns that ended as `finished`.
fn measure(
    agent: &'static str,
    turns: usize,
    exchanges: &[Exchange],
    finished: Finished,
) -> XResult<Run> {
    let main = exchanges.iter().filter(|e| e.main).count();
    if finished.code != Some(0) || main != turns + 1 {
        return Err(Failure::new(format!(
            "turn-cost: {agent} at {turns} turns sent {main} main-loop requests (expected {}) and exited {:?}",
            turns + 1,
            finished.code
        )));
    }
    let all = overheads(exchanges);
    let late = &all[all.len() - all.len().div_ceil(10)..];
    Ok(Run {
        agent,
        turns,
        median: median(&all),
        late_median: median(late),
        cpu_per_turn: finished.cpu.map(|cpu| cpu / turns.max(1) as u32),
        peak_rss_kib: finished.peak_rss_kib,
    })
}

/// The command running `agent` (`threadline` or `claude-code`) for one run.
fn agent_command(
    agent: &str,
    binary: &Path,
    dir: &Path,
    base_url: &str,
    turns: usize,
) -> XResult<Command> {
    let home = dir.join("home");
    let tmp = dir.join("tmp");
    let workspace = dir.join("workspace");
    for d in [&home, &tmp] {
        std::fs::create_dir_all(d).context(|| format!("cannot create {}", d.display()))?;
    }
    let mut command = Command::new(binary);
    if agent == "threadline" {
        command
            .args(["run", "--base-url", base_url, "--cwd"])
            .arg(&workspace)
            .args(["--max-turns", &(turns + 10).to_string(), PROMPT])
            .current_dir(&workspace)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("ANTHROPIC_API_KEY", "sk-ant-dummy");
    } else {
        command
            .args(["-p", PROMPT, "--output-format", "stream-json", "--verbose"])
            .arg("--dangerously-skip-permissions");
        claude_code::offline(&mut command, &workspace, &home, &tmp, base_url);
        // Its own estimate of the history (not the usage we report) would stop it near 340
        // turns of 8 KB with `blocking_limit` on a 1M window.
        command
            .env("CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE", "100000000")
            .env("DISABLE_AUTO_COMPACT", "1");
    }
    Ok(command)
}

/// Runs the agents and reports.
pub(crate) fn run(root: &Path, args: &TurnCostArgs) -> XResult<()> {
    let longest = args.turns.iter().copied().max().unwrap_or(0);
    if longest == 0 || args.reps == 0 {
        return Err(Failure::new(
            "turn-cost: give at least one length and one repetition",
        ));
    }
    let runs_dir = root.join(RUNS);
    if runs_dir.exists() {
        std::fs::remove_dir_all(&runs_dir)
            .context(|| format!("cannot empty {}", runs_dir.display()))?;
    }
    let workspace = runs_dir.join("workspace");
    let files = workspace.join("files");
    for turn in 0..longest {
        write_file(&file_for(&files, turn), file_text(turn).as_bytes())?;
    }
    claude_code::git_init(&workspace, &runs_dir)?;

    run_cargo(
        "turn-cost",
        root,
        &[
            "build",
            "--release",
            "-p",
            "threadline-cli",
            "--bin",
            "threadline",
        ],
        &[],
    )?;
    let mut agents: Vec<(&'static str, PathBuf)> =
        vec![("threadline", root.join("target/release/threadline"))];
    if !args.without_claude_code {
        agents.push(("claude-code", claude_code::install(root)?));
    }

    let script = Arc::new(Script {
        turns: AtomicUsize::new(0),
        answers: AtomicUsize::new(0),
        files: files.clone(),
        log: Mutex::new(Vec::new()),
    });
    let base_url = start(Arc::clone(&script))?;
    let mut runs = Vec::new();
    for rep in 0..args.reps {
        for &turns in &args.turns {
            for (agent, binary) in &agents {
                let dir = runs_dir.join(format!("{agent}-{turns}-{rep}"));
                std::fs::create_dir_all(&dir)
                    .context(|| format!("cannot create {}", dir.display()))?;
                // The workspace is shared (the files are large); each run has its own HOME.
                std::os::unix::fs::symlink(&workspace, dir.join("workspace"))
                    .context(|| format!("cannot link the workspace into {}", dir.display()))?;
                script.begin(turns);
                let command = agent_command(agent, binary, &dir, &base_url, turns)?;
                let finished = claude_code::run_with_timeout(
                    command,
                    &dir.join("stdout"),
                    &dir.join("stderr"),
                    Duration::from_secs(120 + turns as u64),
                )?;
                let run = measure(agent, turns, &script.exchanges(), finished)?;
                println!(
                    "turn-cost: {agent:<11} {turns:>4} turns (rep {}): median {:>6.2} ms, last tenth {:>6.2} ms, CPU/turn {}, peak RSS {}",
                    rep + 1,
                    ms(run.median),
                    ms(run.late_median),
                    run.cpu_per_turn
                        .map_or("?".to_owned(), |c| format!("{:.2} ms", ms(c))),
                    run.peak_rss_kib
                        .map_or("?".to_owned(), |k| format!("{} MiB", k / 1024)),
                );
                runs.push(run);
            }
        }
    }
    let report = report(&args.turns, &agents, &runs);
    println!("{}", report.0);
    write_file(
        &runs_dir.join("report.json"),
        serde_json::to_string_pretty(&report.1)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The summary table and its JSON: per agent and length, the median over repetitions of each
/// figure, and Claude Code ÷ threadline.
fn report(lengths: &[usize], agents: &[(&'static str, PathBuf)], runs: &[Run]) -> (String, Value) {
    let mut lines = vec![
        "turns  agent        overhead (median)  overhead (last tenth)  CPU/turn   peak RSS"
            .to_owned(),
    ];
    let mut rows = Vec::new();
    for &turns in lengths {
        let mut per_agent = Vec::new();
        for (agent, _) in agents {
            let mine: Vec<&Run> = runs
                .iter()
                .filter(|r| r.agent == *agent && r.turns == turns)
                .collect();
            let pick = |f: &dyn Fn(&Run) -> Option<Duration>| {
                let values: Vec<Duration> = mine.iter().filter_map(|r| f(r)).collect();
                (!values.is_empty()).then(|| median(&values))
            };
            let overhead = pick(&|r| Some(r.median));
            let late = pick(&|r| Some(r.late_median));
            let cpu = pick(&|r| r.cpu_per_turn);
            let mut rss: Vec<u64> = mine.iter().filter_map(|r| r.peak_rss_kib).collect();
            rss.sort_unstable();
            let rss = rss.get(rss.len() / 2).copied();
            lines.push(format!(
                "{turns:>5}  {agent:<11}  {:>14.2} ms  {:>18.2} ms  {:>8}  {:>8}",
                overhead.map_or(f64::NAN, ms),
                late.map_or(f64::NAN, ms),
                cpu.map_or("?".to_owned(), |c| format!("{:.2} ms", ms(c))),
                rss.map_or("?".to_owned(), |k| format!("{} MiB", k / 1024)),
            ));
            per_agent.push((*agent, overhead, late, cpu, rss));
            rows.push(json!({
                "turns": turns, "agent": agent, "runs": mine.len(),
                "overhead_median_ms": overhead.map(ms),
                "overhead_last_tenth_ms": late.map(ms),
                "cpu_per_turn_ms": cpu.map(ms),
                "peak_rss_kib": rss,
            }));
        }
        if let [
            (_, Some(t), Some(tl), tc, tr),
            (_, Some(c), Some(cl), cc, cr),
        ] = per_agent[..]
        {
            let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
            let cpu = tc.zip(cc).map(|(t, c)| ratio(c, t));
            let rss = tr.zip(cr).map(|(t, c)| c as f64 / t.max(1) as f64);
            lines.push(format!(
                "{turns:>5}  Claude Code ÷ threadline: overhead {:.1}×, last tenth {:.1}×, CPU {}, RSS {}",
                ratio(c, t),
                ratio(cl, tl),
                cpu.map_or("?".to_owned(), |r| format!("{r:.1}×")),
                rss.map_or("?".to_owned(), |r| format!("{r:.1}×")),
            ));
            rows.push(json!({
                "turns": turns, "ratio": "claude-code / threadline",
                "overhead": ratio(c, t), "overhead_last_tenth": ratio(cl, tl),
                "cpu": cpu, "rss": rss,
            }));
        }
    }
    (lines.join("\n"), Value::Array(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(turns: usize) -> Script {
        Script {
            turns: AtomicUsize::new(turns),
            answers: AtomicUsize::new(0),
            files: PathBuf::from("/ws/files"),
            log: Mutex::new(Vec::new()),
        }
    }

    fn post(path: &str, body: &Value) -> Request {
        Request {
            method: "POST".to_owned(),
            path: path.to_owned(),
            body: body.to_string().into_bytes(),
            close: false,
        }
    }

    /// The JSON of each `data:` line of an HTTP response holding SSE.
    fn events(response: &[u8]) -> Vec<Value> {
        let text = String::from_utf8_lossy(response);
        let (_, body) = text.split_once("\r\n\r\n").expect("a head");
        body.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).expect("JSON"))
            .collect()
    }

    fn main_request(results: usize) -> Value {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for i in 0..results {
            messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Read", "input": {}}]}));
            messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "x"}]}));
        }
        json!({"model": "claude-x", "stream": true, "tools": [{"name": "Bash"}, {"name": "Read"}], "messages": messages})
    }

    #[test]
    fn requests_are_read_with_a_length_or_in_chunks_and_keep_alive() {
        let raw = b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloPOST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let mut reader = BufReader::new(&raw[..]);
        let first = read_request(&mut reader)
            .expect("readable")
            .expect("a request");
        assert_eq!(
            (first.path.as_str(), first.body.as_slice(), first.close),
            ("/v1/messages?beta=true", &b"hello"[..], false)
        );
        let second = read_request(&mut reader)
            .expect("readable")
            .expect("a request");
        assert_eq!(
            (second.body.as_slice(), second.close),
            (&b"abcde"[..], true)
        );
        assert_eq!(read_request(&mut reader).expect("readable"), None);
        let cut = b"POST / HTTP/1.1\r\nContent-Le";
        assert!(read_request(&mut BufReader::new(&cut[..])).is_err());
        let huge = format!(
            "POST / HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEADER_BYTES)
        );
        assert!(read_request(&mut BufReader::new(huge.as_bytes())).is_err());
    }

    #[test]
    fn the_main_loop_is_sent_one_read_per_turn_then_a_text() {
        let script = script(2);
        let mut ids = std::collections::BTreeSet::new();
        for (results, expected) in [(0, Some(0)), (1, Some(1)), (2, None)] {
            let (main, response) = answer(
                &post("/v1/messages?beta=true", &main_request(results)),
                &script,
            );
            assert!(main);
            let events = events(&response);
            assert_eq!(events.len(), 6);
            // Answers sharing an id would be merged into one message by both agents.
            assert!(
                ids.insert(events[0]["message"]["id"].to_string()),
                "{ids:?}"
            );
            let block = &events[1]["content_block"];
            match expected {
                Some(turn) => {
                    assert_eq!(block["type"], "tool_use");
                    let input: Value = serde_json::from_str(
                        events[2]["delta"]["partial_json"]
                            .as_str()
                            .expect("a string"),
                    )
                    .expect("JSON");
                    assert_eq!(input["file_path"], format!("/ws/files/f{turn:04}.txt"));
                    assert_eq!(events[4]["delta"]["stop_reason"], "tool_use");
                }
                None => {
                    assert_eq!(block["type"], "text");
                    assert_eq!(events[4]["delta"]["stop_reason"], "end_turn");
                }
            }
        }
        let side =
            json!({"model": "claude-x", "messages": [{"role": "user", "content": "title?"}]});
        let (main, response) = answer(&post("/v1/messages", &side), &script);
        assert!(!main);
        let text = String::from_utf8_lossy(&response);
        assert!(
            text.contains("\"text\":\"ok\"") && text.contains("application/json"),
            "{text}"
        );
        let (main, _) = answer(&post("/v1/messages/count_tokens", &side), &script);
        assert!(!main);
    }

    #[test]
    fn every_file_is_its_own_and_eight_kilobytes() {
        assert_eq!(file_text(0).len(), FILE_BYTES);
        assert_eq!(file_text(399).len(), FILE_BYTES);
        assert_ne!(file_text(1), file_text(2));
    }

    #[test]
    fn overheads_pair_consecutive_main_loop_requests_only() {
        let t = Instant::now();
        let at = |ms: u64| t + Duration::from_millis(ms);
        let exchanges = [
            Exchange {
                main: true,
                first_byte: at(0),
                answered: at(10),
            },
            Exchange {
                main: false,
                first_byte: at(11),
                answered: at(12),
            },
            Exchange {
                main: true,
                first_byte: at(13),
                answered: at(20),
            },
            Exchange {
                main: true,
                first_byte: at(27),
                answered: at(30),
            },
        ];
        assert_eq!(
            overheads(&exchanges),
            [Duration::from_millis(3), Duration::from_millis(7)]
        );
        assert_eq!(median(&overheads(&exchanges)), Duration::from_millis(5));
        assert_eq!(median(&[]), Duration::ZERO);
        let finished = Finished {
            code: Some(0),
            cpu: Some(Duration::from_millis(30)),
            peak_rss_kib: Some(1),
        };
        let run = measure("threadline", 2, &exchanges, finished).expect("measured");
        assert_eq!(run.late_median, Duration::from_millis(7));
        assert_eq!(run.cpu_per_turn, Some(Duration::from_millis(15)));
        assert!(measure("threadline", 3, &exchanges, finished).is_err());
        let failed = Finished {
            code: Some(1),
            ..finished
        };
        assert!(measure("threadline", 2, &exchanges, failed).is_err());
    }
}
