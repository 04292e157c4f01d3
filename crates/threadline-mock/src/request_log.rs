//! The request log: one JSON line per request on the messages and token-count paths of every
//! platform's front (`/v1/messages`, `/v1/messages/count_tokens`, Bedrock's, Vertex's,
//! Foundry's: [`MockServer`](crate::MockServer)), appended to a file as each request is answered, for a process
//! other than the test that started the mock (an orchestrator killing workers) to read what
//! the mock received and answered.
//!
//! A line is written once the answer is chosen and before its first byte is sent (for a
//! stream: before the response head), with one `write(2)` of the whole line on a file
//! opened for appending: no buffer to flush, so a line is in the file before the client
//! sees its answer, and a reader never sees half a line unless the disk is full. Lines are
//! not `fsync`ed (they survive the mock's crash, not the machine's). Keys, sorted:
//!
//! | key | value |
//! |---|---|
//! | `anthropic_beta` | the request's `anthropic-beta` header as received (to check the body as the mock did: `threadline check --beta`); `null` without one |
//! | `answer` | the step's kind: `message`, `error`, `fixture`, `reset`; `null` when no step was taken (a rejected request, `count_tokens`) |
//! | `answer_by` | `order` or `turn`, how the step was chosen; `null` with no step |
//! | `body` | the body as received, as a string (parse it for the JSON); absent when `body_omitted` says why |
//! | `body_bytes` | the body's size (for a body refused unread, the bytes read before) |
//! | `body_omitted` | `not_read` (refused or cut before its end), `too_large` (past `max_recorded_bytes`), `not_utf8` |
//! | `body_sha256` | lower-case hex SHA-256 of the exact body bytes; `null` when not read whole |
//! | `method`, `path` | `POST` and the path as received (`/v1/messages`, `/model/{id}/invoke-with-response-stream`, …) |
//! | `platform` | the front the path belongs to: `anthropic`, `bedrock`, `vertex` or `foundry` |
//! | `refused` | the error message the mock answered when it refused the request itself (a failed check, `model: <id>` for an unknown model, a missing credential or version, a body too large, overload); `null` when it did not (a scripted `error` step is `answer: "error"`) |
//! | `request_id` | the `request-id` the mock answered with |
//! | `route` | the index of the route (in the scenario's `routes`) that answered; `null`: the main steps |
//! | `seq` | the line's index in what this server wrote (0, 1, …) |
//! | `status` | the HTTP status answered; `null` for a connection cut before the answer (a `reset` step, a body too slow) |
//! | `step` | the index of the step in its list (past its end: the list's fallback answered) |
//! | `usage` | the `usage` object answered (`input_tokens`, `cache_creation_input_tokens`, `cache_read_input_tokens`, `output_tokens`, …) for a message, `{"input_tokens": N}` for `count_tokens`; else `null` |
//!
//! The file is bounded by [`ServerLimits::max_log_bytes`](crate::ServerLimits::max_log_bytes):
//! the line that would pass it is replaced by `{"log_full":true,"seq":N}` and nothing more is
//! written. A line holds a body only within
//! [`ServerLimits::max_recorded_bytes`](crate::ServerLimits::max_recorded_bytes).

use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::scenario::AnswerBy;

/// Which step answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chosen {
    /// The route that answered, or `None` for the main steps.
    pub(crate) route: Option<usize>,
    /// The step's index in its list.
    pub(crate) step: usize,
    /// How it was chosen.
    pub(crate) by: AnswerBy,
    /// The step's kind.
    pub(crate) kind: &'static str,
}

/// What the answer to one request was, beyond its status.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) chosen: Option<Chosen>,
    pub(crate) usage: Option<Value>,
    /// The error message the mock answered when it refused the request itself (a check,
    /// the body's size, overload), not a scripted error step.
    pub(crate) refused: Option<String>,
}

/// One request, as the log sees it.
pub(crate) struct Entry<'a> {
    pub(crate) request_id: &'a str,
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    /// The `anthropic-beta` header as received.
    pub(crate) beta: Option<&'a str>,
    pub(crate) status: Option<u16>,
    /// The whole body, when it was read to its end.
    pub(crate) body: Option<&'a [u8]>,
    pub(crate) body_bytes: usize,
    /// The largest body a line holds.
    pub(crate) max_body: usize,
    pub(crate) outcome: &'a Outcome,
}

/// Whether the log records requests to `path`.
pub(crate) fn logs_path(path: &str) -> bool {
    crate::platforms::Front::of("POST", path).is_some()
}

/// The lower-case hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The first eight bytes of the SHA-256 of `bytes`, as a number.
pub(crate) fn sha256_u64(bytes: &[u8]) -> u64 {
    Sha256::digest(bytes)
        .iter()
        .take(8)
        .fold(0, |n, b| (n << 8) | u64::from(*b))
}

/// The JSON line of `entry` (without its newline).
pub(crate) fn line(seq: u64, entry: &Entry<'_>) -> Value {
    let chosen = entry.outcome.chosen;
    let front = crate::platforms::Front::of(entry.method, entry.path);
    let mut line = json!({
        "seq": seq,
        "request_id": entry.request_id,
        "method": entry.method,
        "path": entry.path,
        "platform": front.as_ref().map(|f| f.platform().key()),
        "status": entry.status,
        "route": chosen.and_then(|c| c.route),
        "step": chosen.map(|c| c.step),
        "answer_by": chosen.map(|c| c.by.as_str()),
        "answer": chosen.map(|c| c.kind),
        "body_bytes": entry.body_bytes,
        "body_sha256": entry.body.map(sha256_hex),
        "usage": entry.outcome.usage,
        "anthropic_beta": entry.beta,
        "refused": entry.outcome.refused,
    });
    let omitted = match entry.body {
        None => Some("not_read"),
        // A token request's body is a signed grant: a credential, never written down.
        Some(_) if front == Some(crate::platforms::Front::GoogleToken) => Some("credential"),
        Some(body) if body.len() > entry.max_body => Some("too_large"),
        Some(body) => match std::str::from_utf8(body) {
            Ok(text) => {
                line["body"] = Value::String(text.to_owned());
                None
            }
            Err(_) => Some("not_utf8"),
        },
    };
    if let Some(why) = omitted {
        line["body_omitted"] = Value::String(why.to_owned());
    }
    line
}

struct Inner {
    file: File,
    seq: u64,
    written: u64,
    /// The log reached its bound (or a write failed): nothing more is written.
    closed: bool,
}

/// An open request log.
pub(crate) struct RequestLog {
    inner: Mutex<Inner>,
    max_bytes: u64,
}

impl std::fmt::Debug for RequestLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLog").finish_non_exhaustive()
    }
}

impl RequestLog {
    /// Opens `path` for appending (created if missing, mode `0600` on unix: it holds the
    /// request bodies), writing at most `max_bytes`.
    pub(crate) fn open(path: &Path, max_bytes: u64) -> std::io::Result<RequestLog> {
        let file = threadline_wire::secret::private_file_options()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(RequestLog {
            inner: Mutex::new(Inner {
                file,
                seq: 0,
                written: 0,
                closed: false,
            }),
            max_bytes,
        })
    }

    /// Appends the line of `entry` (its `seq` is the next one).
    pub(crate) fn append(&self, entry: &Entry<'_>) {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if inner.closed {
            return;
        }
        let seq = inner.seq;
        let mut bytes = serde_json::to_vec(&line(seq, entry)).unwrap_or_default();
        bytes.push(b'\n');
        let total = inner.written.saturating_add(bytes.len() as u64);
        if total > self.max_bytes {
            inner.closed = true;
            bytes = format!("{{\"log_full\":true,\"seq\":{seq}}}\n").into_bytes();
        }
        match inner.file.write_all(&bytes) {
            Ok(()) => {
                inner.seq += 1;
                inner.written = inner.written.saturating_add(bytes.len() as u64);
            }
            Err(error) => {
                inner.closed = true;
                tracing::error!(%error, "the mock's request log cannot be written; it stops");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(body: Option<&'a [u8]>, outcome: &'a Outcome) -> Entry<'a> {
        Entry {
            request_id: "req_1",
            method: "POST",
            path: "/v1/messages",
            beta: None,
            status: Some(200),
            body,
            body_bytes: body.map_or(7, <[u8]>::len),
            max_body: 16,
            outcome,
        }
    }

    /// The log holds every request body, so it is created `0600` (it once was `0644`).
    #[cfg(unix)]
    #[test]
    fn the_log_is_created_for_its_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("requests.jsonl");
        let _log = RequestLog::open(&path, 1024).expect("opened");
        let mode = std::fs::metadata(&path)
            .expect("created")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    #[test]
    fn the_digest_is_sha256_in_lower_case_hex() {
        // The FIPS 180-2 test vector.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256_u64(b"abc"), 0xba78_16bf_8f01_cfea);
    }

    #[test]
    fn a_line_holds_the_body_as_received_and_its_choice() {
        let outcome = Outcome {
            chosen: Some(Chosen {
                route: Some(1),
                step: 2,
                by: AnswerBy::Turn,
                kind: "message",
            }),
            usage: Some(json!({"input_tokens": 3})),
            refused: None,
        };
        let body = br#"{"b":1,  "a":2}"#;
        let mut entry = entry(Some(body), &outcome);
        entry.beta = Some("effort-2025-11-24,thinking-display-updates-2026-08-18");
        let line = line(4, &entry);
        assert_eq!(
            line,
            json!({
                "seq": 4, "request_id": "req_1", "method": "POST", "path": "/v1/messages",
                "platform": "anthropic", "status": 200, "route": 1, "step": 2, "answer_by": "turn", "answer": "message",
                "body_bytes": 15, "body_sha256": sha256_hex(body),
                "body": r#"{"b":1,  "a":2}"#, "usage": {"input_tokens": 3},
                "anthropic_beta": "effort-2025-11-24,thinking-display-updates-2026-08-18",
                "refused": null,
            })
        );
    }

    #[test]
    fn a_body_is_omitted_past_the_bound_unread_or_not_utf8() {
        let outcome = Outcome::default();
        let cases: [(Option<&[u8]>, &str); 3] = [
            (Some(&[b'x'; 17]), "too_large"),
            (None, "not_read"),
            (Some(&[0xff, 0xfe]), "not_utf8"),
        ];
        for (body, why) in cases {
            let line = line(0, &entry(body, &outcome));
            assert_eq!(line["body_omitted"], why);
            assert_eq!(line.get("body"), None);
            assert_eq!(line["body_sha256"], json!(body.map(sha256_hex)));
            assert_eq!(line["route"], Value::Null);
            assert_eq!(line["answer_by"], Value::Null);
        }
    }

    proptest::proptest! {
        /// Whatever the bytes (not UTF-8, control characters, quotes, a line break), the line
        /// is one line of JSON whose body is the bytes exactly, or says why it is left out,
        /// and whose hash is theirs.
        #[test]
        fn any_body_makes_one_json_line_that_gives_it_back(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            max_body in 0usize..80,
        ) {
            let outcome = Outcome::default();
            let mut entry = entry(Some(&body), &outcome);
            entry.max_body = max_body;
            let bytes = serde_json::to_vec(&line(0, &entry)).expect("serializes");
            proptest::prop_assert!(!bytes.contains(&b'\n'));
            let parsed: Value = serde_json::from_slice(&bytes).expect("JSON");
            proptest::prop_assert_eq!(&parsed["body_sha256"], &json!(sha256_hex(&body)));
            match (parsed.get("body"), std::str::from_utf8(&body)) {
                (Some(text), Ok(utf8)) => {
                    proptest::prop_assert!(body.len() <= max_body);
                    proptest::prop_assert_eq!(text.as_str(), Some(utf8));
                }
                (None, utf8) => {
                    let why = if body.len() > max_body { "too_large" } else { "not_utf8" };
                    proptest::prop_assert!(why == "too_large" || utf8.is_err());
                    proptest::prop_assert_eq!(&parsed["body_omitted"], why);
                }
                (Some(_), Err(_)) => proptest::prop_assert!(false, "a body that is not UTF-8"),
            }
        }
    }

    #[test]
    fn the_log_stops_with_a_marker_at_its_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log.jsonl");
        let outcome = Outcome::default();
        let one = serde_json::to_vec(&line(0, &entry(Some(b"{}"), &outcome)))
            .expect("serializes")
            .len() as u64
            + 1;
        let log = RequestLog::open(&path, one * 2 + 1).expect("opens");
        for _ in 0..5 {
            log.append(&entry(Some(b"{}"), &outcome));
        }
        let text = std::fs::read_to_string(&path).expect("reads");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["seq"], 0);
        assert_eq!(lines[1]["seq"], 1);
        assert_eq!(lines[2], json!({"log_full": true, "seq": 2}));
    }
}
