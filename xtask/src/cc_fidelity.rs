//! Fidelity of the requests Claude Code sent to what its transcript says (issue 28), measured
//! two ways on each main session transcript of a `cargo xtask claude-code` run, informative
//! only (nothing is asserted yet):
//!
//! * **records**: the request rebuilt from Claude Code 2.1.328's own `api-request` records
//!   (reference `api-2026-autumn.md` §7): `messages` = the first `keep` messages of request
//!   `base` + the messages named by the `tail` hashes, a hash naming an `api-request-blob` or a
//!   conversation message (a user record, as a string or one text block; an assistant message
//!   joined across its records by `message.id`; a run of consecutive tool-result records),
//!   hashed as SHA-256 of its JSON without `cache_control`, keys sorted, no spaces. A blob is
//!   named by the `hash` it records, which for some blobs is not the hash of their message.
//! * **import**: `threadline normalize` of the transcript cut just before the request's
//!   `api-request` record: what threadline says Claude Code sent.
//!
//! Each is compared with the body the mock received, `messages` only, ignoring
//! `cache_control` (and so the one-text-block form a marker forces on a string content). The
//! `n`-th `api-request` record of a session is paired with the `n`-th body of that session
//! (`metadata.user_id`'s `session_id`) that is not a compaction summary request (whose last
//! user message holds Claude Code's "CRITICAL: Respond with TEXT ONLY" prompt; it leaves no
//! record).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::util::{Context as _, XResult, write_file};

/// The text of Claude Code's compaction prompt that marks a summary request.
const SUMMARY_MARK: &str = "CRITICAL: Respond with TEXT ONLY";

/// `value` without any `cache_control` key, at any depth.
pub(crate) fn strip_cache_control(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), strip_cache_control(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_cache_control).collect()),
        other => other.clone(),
    }
}

/// The hash Claude Code names a message by in `api-request` records: SHA-256 (lower-case hex)
/// of its JSON without `cache_control`, keys sorted, no spaces, non-ASCII as is.
pub(crate) fn message_hash(message: &Value) -> String {
    // serde_json's maps are sorted (no `preserve_order` in this workspace).
    let text = strip_cache_control(message).to_string();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A message's comparable form: no `cache_control`, and a content of exactly one text block
/// written as the string it holds.
pub(crate) fn comparable(message: &Value) -> Value {
    let mut m = strip_cache_control(message);
    if let Some(content) = m.get_mut("content")
        && let Some([only]) = content.as_array().map(Vec::as_slice)
        && only.get("type").and_then(Value::as_str) == Some("text")
        && only.as_object().is_some_and(|o| o.len() == 2)
        && let Some(text) = only.get("text").and_then(Value::as_str)
    {
        *content = Value::String(text.to_owned());
    }
    m
}

/// Where two message lists first differ, in words (`None`: they are the same).
pub(crate) fn first_difference(got: &[Value], want: &[Value]) -> Option<String> {
    let short = |v: Option<&Value>| {
        let text = v.map_or_else(|| "(nothing)".to_owned(), Value::to_string);
        crate::claude_code::one_line(&text)
    };
    for i in 0..got.len().max(want.len()) {
        let (g, w) = (got.get(i).map(comparable), want.get(i).map(comparable));
        if g == w {
            continue;
        }
        let (Some(g), Some(w)) = (g, w) else {
            return Some(format!(
                "messages.{i}: got {}, sent {}",
                short(got.get(i)),
                short(want.get(i))
            ));
        };
        if g["role"] != w["role"] {
            return Some(format!(
                "messages.{i}: role {} where Claude Code sent {}",
                g["role"], w["role"]
            ));
        }
        let blocks = |m: &Value| match &m["content"] {
            Value::Array(items) => items.clone(),
            other => vec![json!({"type": "text", "text": other})],
        };
        let (gb, wb) = (blocks(&g), blocks(&w));
        for j in 0..gb.len().max(wb.len()) {
            if gb.get(j) != wb.get(j) {
                return Some(format!(
                    "messages.{i}.content.{j} ({}): got {} — sent {}",
                    w["role"].as_str().unwrap_or("?"),
                    short(gb.get(j)),
                    short(wb.get(j))
                ));
            }
        }
        return Some(format!("messages.{i}: differs outside its content"));
    }
    None
}

/// The messages a transcript's records can name by hash (see the module's documentation).
fn message_index(records: &[Value]) -> HashMap<String, Value> {
    let mut index = HashMap::new();
    // A blob is named by the hash it records: for some (the summary after a compaction, a
    // Read reminder) that is not the hash of the message it holds.
    for record in records.iter().filter(|r| r["type"] == "api-request-blob") {
        if let (Some(hash), Some(message)) = (record["hash"].as_str(), record.get("message")) {
            index.insert(hash.to_owned(), message.clone());
        }
    }
    let mut add = |message: Value| {
        index.entry(message_hash(&message)).or_insert(message);
    };
    let mut assistants: Vec<(String, Vec<Value>)> = Vec::new();
    let mut results_run: Vec<Value> = Vec::new();
    for record in records {
        let kind = record["type"].as_str().unwrap_or_default();
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let content = &record["message"]["content"];
        let only_results = content.as_array().is_some_and(|blocks| {
            !blocks.is_empty() && blocks.iter().all(|b| b["type"] == "tool_result")
        });
        if kind == "user" && only_results {
            results_run.extend(content.as_array().cloned().unwrap_or_default());
            add(json!({"role": "user", "content": results_run.clone()}));
        } else {
            results_run.clear();
        }
        if kind == "user" {
            add(json!({"role": "user", "content": content}));
            if let Some(text) = content.as_str() {
                add(json!({"role": "user", "content": [{"type": "text", "text": text}]}));
            }
        } else {
            let id = record["message"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let blocks = content.as_array().cloned().unwrap_or_default();
            match assistants.iter_mut().find(|(known, _)| *known == id) {
                Some((_, joined)) => joined.extend(blocks),
                None => assistants.push((id, blocks)),
            }
        }
    }
    for (_, blocks) in assistants {
        add(json!({"role": "assistant", "content": blocks}));
    }
    index
}

/// One `api-request` record: its line in the transcript and the messages it rebuilds to (or
/// why it does not).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecordedRequest {
    pub(crate) line: usize,
    pub(crate) messages: Result<Vec<Value>, String>,
}

/// The requests of a transcript's `api-request` records, in order, rebuilt.
pub(crate) fn rebuild(records: &[(usize, Value)]) -> Vec<RecordedRequest> {
    let values: Vec<Value> = records.iter().map(|(_, v)| v.clone()).collect();
    let index = message_index(&values);
    let mut by_id: HashMap<String, Vec<Value>> = HashMap::new();
    let mut out = Vec::new();
    for (line, record) in records {
        if record["type"] != "api-request" {
            continue;
        }
        let mut messages = Vec::new();
        let mut problem = None;
        if let Some(base) = record["base"].as_str() {
            let keep = usize::try_from(record["keep"].as_u64().unwrap_or(0)).unwrap_or(0);
            match by_id.get(base) {
                Some(earlier) if earlier.len() >= keep => {
                    messages.extend(earlier[..keep].iter().cloned());
                }
                _ => {
                    problem = Some(format!(
                        "base request {base} unknown or shorter than {keep}"
                    ))
                }
            }
        }
        for hash in record["tail"].as_array().into_iter().flatten() {
            let hash = hash.as_str().unwrap_or_default();
            match index.get(hash) {
                Some(message) => messages.push(message.clone()),
                None => {
                    problem.get_or_insert_with(|| format!("no message has the hash {hash}"));
                }
            }
        }
        if let Some(id) = record["id"].as_str() {
            by_id.insert(id.to_owned(), messages.clone());
        }
        out.push(RecordedRequest {
            line: *line,
            messages: problem.map_or(Ok(messages), Err),
        });
    }
    out
}

/// The session id a body names (`metadata.user_id`, a JSON string).
pub(crate) fn session_of(body: &Value) -> Option<String> {
    let user_id = body["metadata"]["user_id"].as_str()?;
    let parsed: Value = serde_json::from_str(user_id).ok()?;
    parsed["session_id"].as_str().map(str::to_owned)
}

/// Whether a body is a compaction summary request (it leaves no `api-request` record): its
/// last user message holds the compaction prompt (a system message may follow it, as the
/// `<total_tokens>` one on claude-opus-4-8).
pub(crate) fn is_summary_request(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .is_some_and(|last| last["content"].to_string().contains(SUMMARY_MARK))
}

/// The fidelity figures of one run (or several).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Fidelity {
    /// Requests paired with a body.
    pub(crate) requests: usize,
    /// Rebuilt from the `api-request` records with identical `messages`.
    pub(crate) records_same: usize,
    /// `threadline normalize` of the cut transcript with identical `messages`.
    pub(crate) import_same: usize,
    /// `api-request` records left without a body, and bodies without a record.
    pub(crate) unpaired: usize,
    /// One line per request that differs: which, and where first.
    pub(crate) differences: Vec<String>,
}

impl Fidelity {
    pub(crate) fn merge(&mut self, other: &Fidelity) {
        self.requests += other.requests;
        self.records_same += other.records_same;
        self.import_same += other.import_same;
        self.unpaired += other.unpaired;
        self.differences.extend(other.differences.iter().cloned());
    }

    pub(crate) fn lines(&self, indent: &str) -> Vec<String> {
        let mut out = vec![format!(
            "{indent}fidelity over {} request(s): rebuilt from api-request records {} same; threadline normalize of the cut transcript {} same; unpaired {}",
            self.requests, self.records_same, self.import_same, self.unpaired
        )];
        out.extend(self.differences.iter().map(|d| format!("{indent}  {d}")));
        out
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "requests": self.requests,
            "records_same": self.records_same,
            "import_same": self.import_same,
            "unpaired": self.unpaired,
            "differences": self.differences,
        })
    }
}

/// Measures one session transcript against the bodies the mock logged (`(seq, body)`, in
/// order), cutting copies of the transcript into `work`.
pub(crate) fn measure(
    threadline: &Path,
    transcript: &Path,
    bodies: &[(u64, Value)],
    work: &Path,
) -> XResult<Fidelity> {
    let text = crate::util::read_text(transcript)?;
    let lines: Vec<&str> = text.lines().collect();
    let records: Vec<(usize, Value)> = lines
        .iter()
        .enumerate()
        .filter_map(|(n, l)| serde_json::from_str(l).ok().map(|v| (n, v)))
        .collect();
    let session = transcript
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sent: Vec<&(u64, Value)> = bodies
        .iter()
        .filter(|(_, b)| session_of(b).as_deref() == Some(session.as_str()))
        .filter(|(_, b)| !is_summary_request(b))
        .collect();
    let requests = rebuild(&records);
    let short = &session[..session.len().min(8)];
    let mut fidelity = Fidelity {
        unpaired: requests.len().abs_diff(sent.len()),
        ..Fidelity::default()
    };
    for (n, (request, (seq, body))) in requests.iter().zip(sent).enumerate() {
        fidelity.requests += 1;
        let want = body["messages"].as_array().cloned().unwrap_or_default();
        match &request.messages {
            Ok(rebuilt) => match first_difference(rebuilt, &want) {
                None => fidelity.records_same += 1,
                Some(d) => fidelity
                    .differences
                    .push(format!("{short} request {n} (body {seq}), records: {d}")),
            },
            Err(why) => fidelity
                .differences
                .push(format!("{short} request {n} (body {seq}), records: {why}")),
        }
        let cut = work.join(format!("{session}.cut{n:03}.jsonl"));
        let mut prefix = lines[..request.line].join("\n");
        prefix.push('\n');
        write_file(&cut, prefix.as_bytes())?;
        let output = Command::new(threadline)
            .arg("normalize")
            .arg(&cut)
            .output()
            .context(|| "claude-code: cannot run threadline normalize".to_owned())?;
        let imported: Option<Vec<Value>> = serde_json::from_slice::<Value>(&output.stdout)
            .ok()
            .and_then(|v| v["messages"].as_array().cloned());
        match imported {
            Some(got) => match first_difference(&got, &want) {
                None => fidelity.import_same += 1,
                Some(d) => fidelity
                    .differences
                    .push(format!("{short} request {n} (body {seq}), import: {d}")),
            },
            None => fidelity.differences.push(format!(
                "{short} request {n} (body {seq}), import: normalize gave no request ({})",
                crate::claude_code::one_line(&String::from_utf8_lossy(&output.stderr))
            )),
        }
    }
    Ok(fidelity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_of_sorted_compact_json_without_cache_control() {
        let message = json!({"role": "user", "content": [
            {"type": "text", "text": "héllo", "cache_control": {"type": "ephemeral"}}
        ]});
        // sha256 of {"content":[{"text":"héllo","type":"text"}],"role":"user"} in UTF-8.
        let expected: String = Sha256::digest(
            r#"{"content":[{"text":"héllo","type":"text"}],"role":"user"}"#.as_bytes(),
        )
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
        assert_eq!(message_hash(&message), expected);
    }

    fn user(uuid: &str, content: Value) -> Value {
        json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}})
    }

    fn assistant(id: &str, blocks: Value) -> Value {
        json!({"type": "assistant", "message": {"id": id, "role": "assistant", "content": blocks}})
    }

    #[test]
    fn requests_are_rebuilt_from_blobs_base_keep_and_tail() {
        let system = json!({"role": "system", "content": "env"});
        let text = json!({"type": "text", "text": "I look."});
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}});
        let result = json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]);
        let joined = json!({"role": "assistant", "content": [text, call]});
        let results = json!({"role": "user", "content": result});
        let prompt_block = json!({"role": "user", "content": [{"type": "text", "text": "Go"}]});
        let records: Vec<(usize, Value)> = vec![
            user("u1", json!("Go")),
            json!({"type": "api-request-blob", "hash": message_hash(&system), "message": system}),
            json!({"type": "api-request", "id": "r1", "base": null, "keep": 0,
                   "tail": [message_hash(&prompt_block), message_hash(&system)]}),
            assistant("msg_1", json!([text])),
            assistant("msg_1", json!([call])),
            user("u2", result.clone()),
            json!({"type": "api-request", "id": "r2", "base": "r1", "keep": 2,
                   "tail": [message_hash(&joined), message_hash(&results)]}),
            json!({"type": "api-request-blob", "hash": "recorded", "message": {"role": "user", "content": "s"}}),
            json!({"type": "api-request", "id": "r3", "base": "r2", "keep": 9, "tail": ["00"]}),
            json!({"type": "api-request", "id": "r4", "base": "r2", "keep": 1, "tail": ["recorded"]}),
        ]
        .into_iter()
        .enumerate()
        .collect();
        let rebuilt = rebuild(&records);
        assert_eq!(rebuilt.len(), 4);
        assert_eq!(
            rebuilt[3].messages.as_deref(),
            Ok(&[
                prompt_block.clone(),
                json!({"role": "user", "content": "s"})
            ][..])
        );
        assert_eq!(rebuilt[0].line, 2);
        assert_eq!(
            rebuilt[0].messages.as_deref(),
            Ok(&[prompt_block.clone(), system.clone()][..])
        );
        assert_eq!(
            rebuilt[1].messages.as_deref(),
            Ok(&[prompt_block, system, joined, results][..])
        );
        let error = rebuilt[2].messages.as_ref().expect_err("unknown");
        assert!(error.contains("shorter than 9"), "{error}");
    }

    #[test]
    fn differences_name_the_first_differing_block_ignoring_markers() {
        let sent = vec![
            json!({"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]}),
            json!({"role": "system", "content": "env"}),
        ];
        let same = vec![json!({"role": "user", "content": "a"}), sent[1].clone()];
        assert_eq!(first_difference(&same, &sent), None);
        let folded = vec![json!({"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "<system-reminder>env"}]})];
        let d = first_difference(&folded, &sent).expect("differs");
        assert!(d.starts_with("messages.0.content.1 (user): got"), "{d}");
        let d = first_difference(&same[..1], &sent).expect("shorter");
        assert!(d.starts_with("messages.1: got (nothing), sent"), "{d}");
        let roles = vec![same[0].clone(), json!({"role": "user", "content": "env"})];
        let d = first_difference(&roles, &sent).expect("role");
        assert_eq!(
            d,
            r#"messages.1: role "user" where Claude Code sent "system""#
        );
    }

    #[test]
    fn bodies_name_their_session_and_summary_requests_are_told_apart() {
        let body = json!({"metadata": {"user_id": r#"{"device_id":"d","account_uuid":"","session_id":"s-1"}"#},
            "messages": [{"role": "user", "content": [{"type": "text", "text": "x"},
                {"type": "text", "text": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."}]}]});
        assert_eq!(session_of(&body).as_deref(), Some("s-1"));
        assert!(is_summary_request(&body));
        assert!(!is_summary_request(
            &json!({"messages": [{"role": "user", "content": "hi"}]})
        ));
        let mut trailing = body.clone();
        trailing["messages"].as_array_mut().expect("messages").push(
            json!({"role": "system", "content": "<total_tokens>5 tokens left</total_tokens>"}),
        );
        assert!(is_summary_request(&trailing));
        assert_eq!(session_of(&json!({})), None);
    }
}
