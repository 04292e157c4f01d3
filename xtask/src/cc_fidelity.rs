//! Fidelity of the requests Claude Code sent to what threadline's import of its transcript
//! says it sent (issue 28), measured on each main session transcript of a
//! `cargo xtask claude-code` run, two ways, both with `threadline normalize`:
//!
//! * **import**: the transcript as it stood when Claude Code sent the request: every line up
//!   to and including the request's `api-request` record (Claude Code writes it before it
//!   sends). The import rebuilds the request from Claude Code's own records
//!   (`threadline_message::claude_code::RecordedRequest`). This is the figure `claude-code`
//!   asserts.
//! * **predicted**: the transcript cut before the records Claude Code wrote for the request
//!   (its blobs, shape and `api-request` record): the import extends the last earlier
//!   recorded request with what the conversation added since, placed as Claude Code places it
//!   (`NextRequest`), or has no records at all (a session's first request, the first after a
//!   compaction) and normalizes. Informative.
//!
//! Each is compared with the body the mock received, `messages` only, ignoring
//! `cache_control` (and so the one-text-block form a marker forces on a string content). The
//! `n`-th `api-request` record of a transcript is paired with the `n`-th body of that
//! transcript that is not a compaction summary request (whose last user message holds Claude
//! Code's "CRITICAL: Respond with TEXT ONLY" prompt; it leaves no record).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{Context as _, XResult, write_file};

/// The text of Claude Code's compaction prompt that marks a summary request.
const SUMMARY_MARK: &str = "CRITICAL: Respond with TEXT ONLY";

use threadline_wire::cache_control::without_cache_control as strip_cache_control;

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
        let keys = |m: &Value| -> Vec<String> {
            m.as_object()
                .map(|o| o.keys().filter(|k| *k != "content").cloned().collect())
                .unwrap_or_default()
        };
        let mut names = keys(&g);
        names.extend(keys(&w));
        names.sort();
        names.dedup();
        let differing: Vec<String> = names
            .into_iter()
            .filter(|k| g.get(k) != w.get(k))
            .map(|k| format!("{k}: got {}, sent {}", short(g.get(&k)), short(w.get(&k))))
            .collect();
        return Some(format!(
            "messages.{i} ({}): differs outside its content: {}",
            w["role"].as_str().unwrap_or("?"),
            differing.join("; ")
        ));
    }
    None
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
    /// `threadline normalize` of the transcript as it stood when Claude Code sent the request
    /// (through its `api-request` record) with identical `messages`.
    pub(crate) import_same: usize,
    /// `threadline normalize` of the transcript cut before the records Claude Code wrote for
    /// the request (its blobs, shape and `api-request` record): the request predicted from the
    /// conversation and the records of the requests before it.
    pub(crate) predicted_same: usize,
    /// `api-request` records left without a body, and bodies without a record.
    pub(crate) unpaired: usize,
    /// `compact_boundary` records in the transcripts.
    pub(crate) compactions: usize,
    /// Requests `threadline inspect` puts right after a compaction with a cache break there.
    pub(crate) compaction_breaks: usize,
    /// One line per request that differs: which, and where first.
    pub(crate) differences: Vec<String>,
}

impl Fidelity {
    pub(crate) fn merge(&mut self, other: &Fidelity) {
        self.requests += other.requests;
        self.import_same += other.import_same;
        self.predicted_same += other.predicted_same;
        self.unpaired += other.unpaired;
        self.compactions += other.compactions;
        self.compaction_breaks += other.compaction_breaks;
        self.differences.extend(other.differences.iter().cloned());
    }

    /// Whether at least `percent` % of the requests were reproduced by the import, every
    /// body and record was paired, and `inspect` put a cache break at every compaction.
    pub(crate) fn meets(&self, percent: usize) -> bool {
        self.requests > 0
            && self.unpaired == 0
            && self.import_same * 100 >= percent * self.requests
            && self.compaction_breaks == self.compactions
    }

    pub(crate) fn lines(&self, indent: &str) -> Vec<String> {
        let mut out = vec![format!(
            "{indent}fidelity over {} request(s): threadline normalize of the transcript as sent {} same; predicted before the request's own records {} same; unpaired {}; inspect: a cache break at {} of {} compaction(s)",
            self.requests,
            self.import_same,
            self.predicted_same,
            self.unpaired,
            self.compaction_breaks,
            self.compactions
        )];
        out.extend(self.differences.iter().map(|d| format!("{indent}  {d}")));
        out
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "requests": self.requests,
            "import_same": self.import_same,
            "predicted_same": self.predicted_same,
            "unpaired": self.unpaired,
            "compactions": self.compactions,
            "compaction_breaks": self.compaction_breaks,
            "differences": self.differences,
        })
    }
}

/// The `messages` `threadline normalize` gives for `lines[..end]`, written to `cut`, or why
/// there are none.
fn normalized_messages(
    threadline: &Path,
    lines: &[&str],
    end: usize,
    cut: &Path,
) -> XResult<Result<Vec<Value>, String>> {
    let mut prefix = lines[..end].join("\n");
    prefix.push('\n');
    write_file(cut, prefix.as_bytes())?;
    let output = Command::new(threadline)
        .arg("normalize")
        .arg(cut)
        .output()
        .context(|| "claude-code: cannot run threadline normalize".to_owned())?;
    Ok(serde_json::from_slice::<Value>(&output.stdout)
        .ok()
        .and_then(|v| v["messages"].as_array().cloned())
        .ok_or_else(|| {
            format!(
                "normalize gave no request ({})",
                crate::claude_code::one_line(&String::from_utf8_lossy(&output.stderr))
            )
        }))
}

/// How many requests `threadline inspect --json` of `transcript` puts right after a
/// compaction with a cache break, and the rows after a compaction that have none.
fn inspect_breaks(threadline: &Path, transcript: &Path) -> XResult<(usize, Vec<String>)> {
    let output = Command::new(threadline)
        .args(["inspect", "--json"])
        .arg(transcript)
        .output()
        .context(|| "claude-code: cannot run threadline inspect".to_owned())?;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let mut breaks = 0;
    let mut missing = Vec::new();
    for row in report["requests"].as_array().into_iter().flatten() {
        if row["after_compaction"] != true {
            continue;
        }
        if row["cache_break"].is_object() {
            breaks += 1;
        } else {
            missing.push(format!(
                "inspect: no cache break at request {} after a compaction",
                row["index"]
            ));
        }
    }
    if report.is_null() {
        missing.push(format!(
            "inspect gave no report ({})",
            crate::claude_code::one_line(&String::from_utf8_lossy(&output.stderr))
        ));
    }
    Ok((breaks, missing))
}

/// The 0-based indices of a transcript's main-loop `api-request` records (no `agentId`, or
/// the file's own sub-agent), and for each the first line of the records written for it
/// (the blobs and shape just before it).
fn request_lines(records: &[(usize, Value)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, (line, record)) in records.iter().enumerate() {
        if record["type"] != "api-request" {
            continue;
        }
        let mut first = *line;
        for (earlier, value) in records[..i].iter().rev() {
            let kind = value["type"].as_str().unwrap_or_default();
            if kind == "api-request-blob" || kind == "api-request-shape" {
                first = *earlier;
            } else {
                break;
            }
        }
        out.push((*line, first));
    }
    out
}

/// Measures one transcript (a main session's or a subagent's) against the bodies the mock
/// logged for it (`(seq, body)`, in order; `claude_code::split_bodies` tells whose a body
/// is), cutting copies of the transcript, named after its file, into `work`.
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
        .filter(|(_, b)| !is_summary_request(b))
        .collect();
    let requests = request_lines(&records);
    let short = &session[..session.len().min(8)];
    let compactions = records
        .iter()
        .filter(|(_, r)| r["type"] == "system" && r["subtype"] == "compact_boundary")
        .count();
    let (compaction_breaks, missing) = if compactions > 0 {
        inspect_breaks(threadline, transcript)?
    } else {
        (0, Vec::new())
    };
    let mut fidelity = Fidelity {
        unpaired: requests.len().abs_diff(sent.len()),
        compactions,
        compaction_breaks,
        differences: missing
            .into_iter()
            .map(|m| format!("{short}: {m}"))
            .collect(),
        ..Fidelity::default()
    };
    for (n, ((line, first), (seq, body))) in requests.iter().zip(sent).enumerate() {
        fidelity.requests += 1;
        let want = body["messages"].as_array().cloned().unwrap_or_default();
        let what = format!("{short} request {n} (body {seq})");
        let as_sent = work.join(format!("{session}.sent{n:03}.jsonl"));
        match normalized_messages(threadline, &lines, line + 1, &as_sent)? {
            Ok(got) => match first_difference(&got, &want) {
                None => fidelity.import_same += 1,
                Some(d) => fidelity.differences.push(format!("{what}, import: {d}")),
            },
            Err(why) => fidelity.differences.push(format!("{what}, import: {why}")),
        }
        let before = work.join(format!("{session}.cut{n:03}.jsonl"));
        match normalized_messages(threadline, &lines, *first, &before)? {
            Ok(got) => match first_difference(&got, &want) {
                None => fidelity.predicted_same += 1,
                Some(d) => fidelity.differences.push(format!("{what}, predicted: {d}")),
            },
            Err(why) => fidelity
                .differences
                .push(format!("{what}, predicted: {why}")),
        }
    }
    Ok(fidelity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_is_cut_before_the_records_written_for_it() {
        let records: Vec<(usize, Value)> = [
            json!({"type": "user"}),
            json!({"type": "api-request-shape"}),
            json!({"type": "api-request-blob"}),
            json!({"type": "api-request"}),
            json!({"type": "assistant"}),
            json!({"type": "api-request"}),
        ]
        .into_iter()
        .enumerate()
        .collect();
        assert_eq!(request_lines(&records), [(3, 1), (5, 5)]);
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
        let effort = vec![
            same[0].clone(),
            json!({"role": "system", "content": "env", "output_config": {"effort": "low"}}),
        ];
        let d = first_difference(&same, &effort).expect("effort");
        assert_eq!(
            d,
            r#"messages.1 (system): differs outside its content: output_config: got (nothing), sent {"effort":"low"}"#
        );
    }

    #[test]
    fn summary_requests_are_told_apart() {
        let body = json!({"metadata": {"user_id": r#"{"device_id":"d","account_uuid":"","session_id":"s-1"}"#},
            "messages": [{"role": "user", "content": [{"type": "text", "text": "x"},
                {"type": "text", "text": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."}]}]});
        assert!(is_summary_request(&body));
        assert!(!is_summary_request(
            &json!({"messages": [{"role": "user", "content": "hi"}]})
        ));
        let mut trailing = body.clone();
        trailing["messages"].as_array_mut().expect("messages").push(
            json!({"role": "system", "content": "<total_tokens>5 tokens left</total_tokens>"}),
        );
        assert!(is_summary_request(&trailing));
    }
}
