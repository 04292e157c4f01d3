//! `cargo xtask fixtures record --request FILE --name NAME [--stream]`: records one
//! live exchange with the real Messages API.
//!
//! Needs `ANTHROPIC_API_KEY` (exit code 2 without it) and `curl`. The key reaches
//! curl through a config read from curl's stdin (`--config -`), so it never
//! appears in the process list, on disk or in any output; the stored exchange is
//! checked not to contain it. The exchange is written as
//! `fixtures/recorded/threadline__live/NAME.json` in the anthropic-sdk-python
//! inline-snapshot format, a row is added to SOURCES.md and the canonical
//! fixtures are regenerated. Never run by CI.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::RecordArgs;
use crate::fixtures::{self, RECORDED_DIR, to_pretty_json};
use crate::util::{
    Context, Failure, TempDir, XResult, read_text, repo_root, today_utc, write_file,
};

/// The endpoint recorded.
pub(crate) const API_URL: &str = "https://api.anthropic.com/v1/messages";
/// Folder of live recordings under `fixtures/recorded/`.
pub(crate) const LIVE_DIR: &str = "threadline__live";
/// `anthropic-version` header sent.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Environment variable holding the key.
pub(crate) const KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// Headers that carry credentials and are never stored.
const SECRET_HEADERS: &[&str] = &["x-api-key", "authorization", "cookie", "set-cookie"];

/// A validated recording request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub(crate) name: String,
    pub(crate) out_path: PathBuf,
    pub(crate) body: Value,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) stream: bool,
    pub(crate) what: String,
    pub(crate) force: bool,
}

/// What curl returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

/// Reads the API key through `lookup` (the environment in production).
pub(crate) fn api_key(lookup: impl Fn(&str) -> Option<String>) -> XResult<String> {
    let key = lookup(KEY_VAR).unwrap_or_default();
    if key.trim().is_empty() {
        return Err(Failure::with_code(
            2,
            format!(
                "{KEY_VAR} is not set: `cargo xtask fixtures record` sends a real request to {API_URL} and needs an API key in the environment (it is never run by CI)"
            ),
        ));
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\')
    {
        return Err(Failure::with_code(
            2,
            format!(
                "{KEY_VAR} contains whitespace, quotes or backslashes; refusing to pass it to curl"
            ),
        ));
    }
    Ok(key)
}

/// Validates the arguments and the request file (no network, no key needed).
pub(crate) fn plan(root: &Path, args: &RecordArgs) -> XResult<Plan> {
    let name = args.name.strip_suffix(".json").unwrap_or(&args.name);
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(Failure::new(format!(
            "--name `{}`: use letters, digits, `.`, `_` and `-` only (it becomes {RECORDED_DIR}/{LIVE_DIR}/NAME.json)",
            args.name
        )));
    }
    let text = read_text(&args.request)?;
    let mut body: Value = serde_json::from_str(&text)
        .context(|| format!("--request {}: not JSON", args.request.display()))?;
    let Some(obj) = body.as_object_mut() else {
        return Err(Failure::new(format!(
            "--request {}: the request body must be a JSON object",
            args.request.display()
        )));
    };
    for required in ["model", "messages", "max_tokens"] {
        if !obj.contains_key(required) {
            return Err(Failure::new(format!(
                "--request {}: the request body has no `{required}`",
                args.request.display()
            )));
        }
    }
    let body_streams = obj.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if body_streams && !args.stream {
        return Err(Failure::new(format!(
            "--request {}: the body has \"stream\": true; pass --stream to record an SSE response",
            args.request.display()
        )));
    }
    if args.stream {
        obj.insert("stream".to_owned(), Value::Bool(true));
    }
    let out_path = root
        .join(RECORDED_DIR)
        .join(LIVE_DIR)
        .join(format!("{name}.json"));
    if out_path.exists() && !args.force {
        return Err(Failure::new(format!(
            "{} already exists; pass --force to replace it",
            out_path.display()
        )));
    }
    let mut headers = BTreeMap::new();
    headers.insert("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned());
    headers.insert("content-type".to_owned(), "application/json".to_owned());
    if let Some(beta) = &args.beta {
        headers.insert("anthropic-beta".to_owned(), beta.clone());
    }
    let what = args.what.clone().unwrap_or_else(|| {
        format!(
            "Live {} recording made with cargo xtask fixtures record.",
            if args.stream {
                "streaming (SSE)"
            } else {
                "non-streaming"
            }
        )
    });
    Ok(Plan {
        name: name.to_owned(),
        out_path,
        body,
        headers,
        stream: args.stream,
        what,
        force: args.force,
    })
}

/// The curl config fed through stdin: the only place the key is written.
pub(crate) fn curl_config(key: &str) -> String {
    format!("header = \"x-api-key: {key}\"\n")
}

/// curl's command line (visible in the process list: must not hold the key).
pub(crate) fn curl_args(plan: &Plan, dir: &Path) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--silent".into(),
        "--show-error".into(),
        "--config".into(),
        "-".into(),
        "--request".into(),
        "POST".into(),
        "--url".into(),
        API_URL.into(),
    ];
    for (name, value) in &plan.headers {
        args.push("--header".into());
        args.push(format!("{name}: {value}"));
    }
    args.push("--data-binary".into());
    args.push(format!("@{}", dir.join("request.json").display()));
    args.push("--dump-header".into());
    args.push(dir.join("headers.txt").display().to_string());
    args.push("--output".into());
    args.push(dir.join("response.body").display().to_string());
    args
}

/// Parses curl's `--dump-header` output; the last block is the final response.
pub(crate) fn parse_header_dump(text: &str) -> XResult<(u16, Vec<(String, String)>)> {
    let normalized = text.replace("\r\n", "\n");
    let block = normalized
        .split("\n\n")
        .filter(|b| b.trim_start().starts_with("HTTP/"))
        .last()
        .ok_or_else(|| Failure::new("curl returned no HTTP status line"))?;
    let mut lines = block.trim_start().lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| Failure::new(format!("cannot parse HTTP status line `{status_line}`")))?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok((status, headers))
}

fn without_secrets<'a>(
    pairs: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .filter(|(k, _)| !SECRET_HEADERS.contains(&k.as_str()))
        .collect()
}

/// The stored file: the exchange in the inline-snapshot format, key-free.
pub(crate) fn build_record(plan: &Plan, raw: &RawResponse, key: &str) -> XResult<String> {
    let response_headers = without_secrets(raw.headers.iter().map(|(k, v)| (k, v)));
    let is_sse = response_headers
        .get("content-type")
        .is_some_and(|ct| ct.contains("text/event-stream"));
    let text = String::from_utf8(raw.body.clone())
        .map_err(|_| Failure::new("the response body is not UTF-8"))?;
    let body = if is_sse {
        Value::String(text)
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    let record = json!([{
        "request": {
            "method": "POST",
            "url": API_URL,
            "headers": without_secrets(&plan.headers),
            "body": plan.body,
        },
        "response": {
            "status_code": raw.status,
            "headers": response_headers,
            "body": body,
        },
    }]);
    let text = to_pretty_json(&record)?;
    if !key.is_empty() && text.contains(key) {
        return Err(Failure::new(
            "refusing to store the exchange: it contains the API key",
        ));
    }
    Ok(text)
}

/// Sends the request with curl.
fn perform(plan: &Plan, key: &str) -> XResult<RawResponse> {
    let tmp = TempDir::new("record")?;
    write_file(
        &tmp.path().join("request.json"),
        to_pretty_json(&plan.body)?.as_bytes(),
    )?;
    let mut child = Command::new("curl")
        .args(curl_args(plan, tmp.path()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context(|| "cannot run curl (is it installed?)".to_owned())?;
    {
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| Failure::new("cannot open curl's stdin"))?;
        stdin
            .write_all(curl_config(key).as_bytes())
            .context(|| "cannot write curl's config".to_owned())?;
    }
    let output = child
        .wait_with_output()
        .context(|| "curl did not finish".to_owned())?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).replace(key, "[redacted]");
        return Err(Failure::new(format!(
            "curl failed ({}): {}",
            output.status,
            stderr.trim()
        )));
    }
    let (status, headers) = parse_header_dump(&read_text(&tmp.path().join("headers.txt"))?)?;
    let body = std::fs::read(tmp.path().join("response.body"))
        .context(|| "cannot read the response body".to_owned())?;
    Ok(RawResponse {
        status,
        headers,
        body,
    })
}

/// Models named in the request and the response (for the SOURCES.md row).
fn models(plan: &Plan, record: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(m) = plan.body.get("model").and_then(Value::as_str) {
        out.push(m.to_owned());
    }
    if let Ok(value) = serde_json::from_str::<Value>(record) {
        let body = &value[0]["response"]["body"];
        let model = match body {
            Value::String(sse) => sse
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find_map(|d| {
                    d.pointer("/message/model")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                }),
            other => other
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        if let Some(m) = model.filter(|m| !out.contains(m)) {
            out.push(m);
        }
    }
    out
}

fn git_head(root: &Path) -> String {
    Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "no-commit-yet".to_owned())
}

/// The SOURCES.md section created by the first live recording.
pub(crate) fn live_section(head: &str) -> String {
    format!(
        "### threadline-rs/threadline  →  `{LIVE_DIR}/`\n\
         - Licence: MIT OR Apache-2.0 (this project's own recordings, made with `cargo xtask fixtures record`)\n\
         - Snapshot HEAD: `{head}`\n\
         - Format: anthropic-sdk-python inline-snapshot JSON (list of `{{request:{{method,url,headers,body}}, response:{{status_code,headers,body}}}}`) written by `cargo xtask fixtures record`; request headers without the API key; SSE bodies are raw strings.\n\
         \n\
         | File | Source path | Recorded | Size (B) | Stream | HTTP | Models | What it is |\n\
         |---|---|---|---|---|---|---|---|\n"
    )
}

/// Adds (or replaces) the row of `file` in the live section, creating the section if needed.
pub(crate) fn add_sources_row(text: &str, file: &str, row: &str, head: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let marker = format!("`{LIVE_DIR}/`");
    let Some(start) = lines
        .iter()
        .position(|l| l.starts_with("### ") && l.contains(&marker))
    else {
        let mut out = text.trim_end().to_owned();
        out.push_str("\n\n");
        out.push_str(&live_section(head));
        out.push_str(row);
        out.push('\n');
        return out;
    };
    let end = lines
        .iter()
        .enumerate()
        .skip(start + 1)
        .find(|(_, l)| l.starts_with('#'))
        .map_or(lines.len(), |(i, _)| i);
    let file_cell = format!("| `{file}` |");
    if let Some(existing) = (start..end).find(|&i| lines[i].starts_with(&file_cell)) {
        lines[existing] = row.to_owned();
    } else if let Some(last_row) = (start..end).rev().find(|&i| lines[i].starts_with('|')) {
        lines.insert(last_row + 1, row.to_owned());
    } else {
        let section_end = (start..end)
            .rev()
            .find(|&i| !lines[i].trim().is_empty())
            .unwrap_or(start);
        let table = live_section(head);
        let header: Vec<String> = table
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(str::to_owned)
            .collect();
        let mut insert = vec![String::new()];
        insert.extend(header);
        insert.push(row.to_owned());
        lines.splice(section_end + 1..section_end + 1, insert);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The SOURCES.md table row of one recording.
pub(crate) fn sources_row(plan: &Plan, record: &str, status: u16) -> String {
    let file = format!("{}.json", plan.name);
    format!(
        "| `{file}` | `{RECORDED_DIR}/{LIVE_DIR}/{file}` | {} | {} | {} | {status} | {} | {} |",
        today_utc(),
        record.len(),
        if plan.stream { "yes" } else { "-" },
        models(plan, record).join(", "),
        plan.what.replace('|', "/")
    )
}

/// Entry point of `cargo xtask fixtures record`.
pub(crate) fn run(args: &RecordArgs) -> XResult<()> {
    let key = api_key(|name| std::env::var(name).ok())?;
    let root = repo_root();
    let plan = plan(&root, args)?;
    if plan.force && plan.out_path.exists() {
        println!("record: replacing {}", plan.out_path.display());
    }
    println!("record: POST {API_URL} (stream: {})", plan.stream);
    let raw = perform(&plan, &key)?;
    let record = build_record(&plan, &raw, &key)?;
    write_file(&plan.out_path, record.as_bytes())?;
    let sources_path = root.join(RECORDED_DIR).join("SOURCES.md");
    let sources = read_text(&sources_path)?;
    let row = sources_row(&plan, &record, raw.status);
    let updated = add_sources_row(
        &sources,
        &format!("{}.json", plan.name),
        &row,
        &git_head(&root),
    );
    write_file(&sources_path, updated.as_bytes())?;
    println!(
        "record: HTTP {} stored in {RECORDED_DIR}/{LIVE_DIR}/{}.json; SOURCES.md updated",
        raw.status, plan.name
    );
    let summary = fixtures::write_all(&root)?;
    println!("fixtures: {summary}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "fake-test-key-0123456789abcdef";

    fn args(dir: &Path, body: &str, name: &str, stream: bool) -> RecordArgs {
        let request = dir.join("req.json");
        std::fs::write(&request, body).expect("write request file");
        RecordArgs {
            request,
            name: name.to_owned(),
            stream,
            beta: None,
            what: None,
            force: false,
        }
    }

    const BODY: &str = r#"{"model":"claude-haiku-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}"#;

    #[test]
    fn missing_key_is_exit_code_2() {
        let err = api_key(|_| None).expect_err("no key");
        assert_eq!(err.code, 2);
        assert!(err.message.contains(KEY_VAR), "{}", err.message);
        let err = api_key(|_| Some("  ".to_owned())).expect_err("blank key");
        assert_eq!(err.code, 2);
        let err = api_key(|_| Some("a\"b".to_owned())).expect_err("quote in key");
        assert_eq!(err.code, 2);
        assert!(!err.message.contains("a\"b"));
        assert_eq!(api_key(|_| Some(KEY.to_owned())).expect("valid key"), KEY);
    }

    #[test]
    fn plan_validates_arguments() {
        let tmp = TempDir::new("record-plan").expect("temp dir");
        let root = tmp.path();
        let plan_ok = plan(root, &args(root, BODY, "hello.json", true)).expect("valid");
        assert_eq!(plan_ok.name, "hello");
        assert_eq!(plan_ok.body["stream"], Value::Bool(true));
        assert!(
            plan_ok
                .out_path
                .ends_with("fixtures/recorded/threadline__live/hello.json")
        );
        assert_eq!(
            plan_ok.headers.get("anthropic-version").map(String::as_str),
            Some(ANTHROPIC_VERSION)
        );

        let bad_name = plan(root, &args(root, BODY, "../x", false)).expect_err("bad name");
        assert!(bad_name.message.contains("--name"), "{}", bad_name.message);

        let streaming = BODY.replace("\"max_tokens\"", "\"stream\":true,\"max_tokens\"");
        let err = plan(root, &args(root, &streaming, "x", false)).expect_err("needs --stream");
        assert!(err.message.contains("--stream"), "{}", err.message);

        let err = plan(root, &args(root, "[1]", "x", false)).expect_err("not an object");
        assert!(err.message.contains("object"), "{}", err.message);

        let err = plan(root, &args(root, r#"{"model":"m"}"#, "x", false)).expect_err("no messages");
        assert!(err.message.contains("messages"), "{}", err.message);

        write_file(&plan_ok.out_path, b"[]").expect("existing recording");
        let err = plan(root, &args(root, BODY, "hello", true)).expect_err("exists");
        assert!(err.message.contains("--force"), "{}", err.message);
        let mut forced = args(root, BODY, "hello", true);
        forced.force = true;
        assert!(plan(root, &forced).is_ok());
    }

    #[test]
    fn key_never_on_the_command_line() {
        let tmp = TempDir::new("record-args").expect("temp dir");
        let plan = plan(tmp.path(), &args(tmp.path(), BODY, "x", false)).expect("valid");
        let cli = curl_args(&plan, tmp.path());
        assert!(cli.iter().all(|a| !a.contains(KEY)));
        assert!(cli.windows(2).any(|w| w[0] == "--config" && w[1] == "-"));
        assert!(curl_config(KEY).contains(KEY));
    }

    #[test]
    fn stored_record_has_no_key() {
        let tmp = TempDir::new("record-build").expect("temp dir");
        let mut plan = plan(tmp.path(), &args(tmp.path(), BODY, "x", false)).expect("valid");
        // Even if a credential header slipped into the plan, it is not stored.
        plan.headers.insert("x-api-key".to_owned(), KEY.to_owned());
        plan.headers
            .insert("Authorization".to_owned(), format!("Bearer {KEY}"));
        let raw = RawResponse {
            status: 200,
            headers: vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("set-cookie".to_owned(), "session=1".to_owned()),
                ("request-id".to_owned(), "req_1".to_owned()),
            ],
            body: br#"{"id":"msg_1","model":"claude-haiku-4-5-20251001","type":"message"}"#
                .to_vec(),
        };
        let record = build_record(&plan, &raw, KEY).expect("builds");
        assert!(!record.contains(KEY));
        assert!(!record.contains("x-api-key"));
        assert!(!record.to_ascii_lowercase().contains("authorization"));
        assert!(!record.contains("set-cookie"));
        let value: Value = serde_json::from_str(&record).expect("valid JSON");
        assert_eq!(value[0]["request"]["url"], API_URL);
        assert_eq!(value[0]["response"]["status_code"], 200);
        assert_eq!(value[0]["response"]["body"]["id"], "msg_1");
        // The stored file converts like any inline-snapshot recording.
        let exchanges = crate::fixtures::read_inline_snapshot(&record, "live").expect("converts");
        assert_eq!(exchanges.len(), 1);
        assert_eq!(
            models(&plan, &record),
            vec!["claude-haiku-4-5", "claude-haiku-4-5-20251001"]
        );

        // A key echoed in a body is caught too.
        let leaky = RawResponse {
            body: format!("{{\"echo\":\"{KEY}\"}}").into_bytes(),
            ..raw
        };
        let err = build_record(&plan, &leaky, KEY).expect_err("key in body");
        assert!(!err.message.contains(KEY));
    }

    #[test]
    fn sse_response_is_stored_as_text() {
        let tmp = TempDir::new("record-sse").expect("temp dir");
        let plan = plan(tmp.path(), &args(tmp.path(), BODY, "x", true)).expect("valid");
        let raw = RawResponse {
            status: 200,
            headers: vec![(
                "Content-Type".to_owned(),
                "text/event-stream; charset=utf-8".to_owned(),
            )],
            body: b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m2\"}}\n\n".to_vec(),
        };
        let record = build_record(&plan, &raw, KEY).expect("builds");
        let value: Value = serde_json::from_str(&record).expect("valid JSON");
        assert!(value[0]["response"]["body"].is_string());
        assert_eq!(models(&plan, &record), vec!["claude-haiku-4-5", "m2"]);
    }

    #[test]
    fn header_dump_uses_last_block() {
        let dump = "HTTP/1.1 100 Continue\r\n\r\nHTTP/2 429 \r\nRetry-After: 3\r\nrequest-id: req_9\r\n\r\n";
        let (status, headers) = parse_header_dump(dump).expect("parses");
        assert_eq!(status, 429);
        assert_eq!(
            headers,
            vec![
                ("retry-after".to_owned(), "3".to_owned()),
                ("request-id".to_owned(), "req_9".to_owned())
            ]
        );
        assert!(parse_header_dump("").is_err());
    }

    #[test]
    fn sources_rows_are_added_and_parse() {
        let base = "# SOURCES\n\n### a/b  →  `a__b/`\n- Licence: MIT\n- Snapshot HEAD: `1`\n\n| `x.json` | `x.json` | d |\n\n## Gaps\n\ntext\n";
        let row1 =
            "| `one.json` | `threadline__live/one.json` | 2026-01-01 | 10 | - | 200 | m | First. |";
        let with_section = add_sources_row(base, "one.json", row1, "abc");
        assert!(with_section.starts_with(base.trim_end()));
        let row2 = "| `two.json` | `threadline__live/two.json` | 2026-01-01 | 10 | yes | 200 | m | Second. |";
        let two = add_sources_row(&with_section, "two.json", row2, "abc");
        let row1b = row1.replace("First.", "First again.");
        let replaced = add_sources_row(&two, "one.json", &row1b, "abc");
        let parsed = crate::sources::parse(&replaced).expect("still parses");
        let one = parsed.get(LIVE_DIR, "one.json").expect("row one");
        assert_eq!(one.description, "First again.");
        assert_eq!(one.repo.commit, "abc");
        assert_eq!(one.repo.licence, "MIT OR Apache-2.0");
        assert!(parsed.get(LIVE_DIR, "two.json").is_some());
        assert!(parsed.get("a__b", "x.json").is_some());
        assert_eq!(replaced.matches("`threadline__live/`").count(), 1);
    }
}
