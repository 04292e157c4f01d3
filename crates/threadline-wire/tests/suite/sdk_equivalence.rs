//! Our stream accumulator against the official Anthropic Python SDK's, on every recorded stream.
//!
//! `fixtures/sdk-accumulated/<dir>/<stem>.<exchange>.json` holds what the official Python SDK
//! (`client.beta.messages.stream(...).get_final_message().to_dict(mode="json")`, version in
//! each file's `"sdk"`) made of the SSE body of exchange `<exchange>` of the canonical fixture
//! `fixtures/canonical/<dir>/<stem>.json`. The files are generated once by
//! `fixtures/sdk-accumulated/generate.py` and committed; this test never runs Python.
//!
//! For each expectation file, the exact same bytes go through
//! [`threadline_wire::message_stream::read_message`], our message is serialized with
//! `serde_json`, and the two are compared as `serde_json::Value`s.
//!
//! The test fails when there are no expectation files, when an expectation names a fixture
//! or exchange that has no SSE body, and when a recorded SSE body has no expectation (re-run
//! the generator after adding recordings).
//!
//! Normalisation (one rule, applied identically to both sides; nothing else is changed):
//!
//! **A key the SDK's accumulator assigns unconditionally from a delta is dropped when its
//! value is `null`.** In `anthropic.lib.streaming._beta_messages.accumulate_event` these are:
//! - the message's `stop_details`: every `message_delta` does
//!   `snapshot.stop_details = event.delta.stop_details`;
//! - a `compaction` block's `content` and `encrypted_content`: every `compaction_delta` does
//!   `block.content = delta.content; block.encrypted_content = delta.encrypted_content`.
//!
//! When the API did not send the key, the SDK's typed event has it as `None`, and the
//! assignment makes pydantic count the field as "set", so `to_dict()` (which otherwise keeps
//! only fields that were set) emits `"key": null` for a key that was never on the wire. Our
//! accumulator writes these keys only when the delta carries them. Absent and `null` both
//! mean "none" for these fields. A non-null value on either side is never dropped, so an SDK
//! `null` against a value of ours (or the reverse) is still reported as a difference.
//!
//! When the SDK raised, the expectation has `"error"` instead of `"message"` and we must
//! return an error too. When the stream was cut (a block or the message never stopped), the
//! SDK returns its snapshot as if complete; we return a typed truncation error whose partial
//! message must equal the SDK's message.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use threadline_wire::message_stream::read_message;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `*.json` file one directory level below `dir`, sorted.
fn json_files_one_level_down(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let sub = entry.expect("dir entry").path();
        if !sub.is_dir() {
            continue;
        }
        for file in fs::read_dir(&sub).expect("read dir") {
            let file = file.expect("dir entry").path();
            if file.extension().is_some_and(|e| e == "json") {
                files.push(file);
            }
        }
    }
    files.sort();
    files
}

/// The normalisation documented in the module docs.
fn normalise(mut message: Value) -> Value {
    fn drop_null(obj: &mut serde_json::Map<String, Value>, key: &str) {
        if obj.get(key).is_some_and(Value::is_null) {
            obj.remove(key);
        }
    }
    if let Some(obj) = message.as_object_mut() {
        drop_null(obj, "stop_details");
        if let Some(Value::Array(content)) = obj.get_mut("content") {
            for block in content.iter_mut().filter_map(Value::as_object_mut) {
                if block.get("type").and_then(Value::as_str) == Some("compaction") {
                    drop_null(block, "content");
                    drop_null(block, "encrypted_content");
                }
            }
        }
    }
    message
}

/// Every JSON path where `a` and `b` differ, with both values.
fn diff(path: &str, sdk: &Value, ours: &Value, out: &mut Vec<String>) {
    match (sdk, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{path}.{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(&p, x, y, out),
                    (Some(x), None) => out.push(format!("{p}: sdk {x} vs ours <absent>")),
                    (None, Some(y)) => out.push(format!("{p}: sdk <absent> vs ours {y}")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ if sdk == ours => {}
        _ => {
            let show = |v: &Value| {
                let s = v.to_string();
                if s.len() > 300 {
                    format!("{}…", &s[..s.floor_char_boundary(300)])
                } else {
                    s
                }
            };
            out.push(format!("{path}: sdk {} vs ours {}", show(sdk), show(ours)));
        }
    }
}

/// `(canonical path relative to the root, exchange index)` of every recorded SSE body.
fn recorded_streams(root: &Path) -> Vec<(String, usize)> {
    let mut streams = Vec::new();
    for path in json_files_one_level_down(&root.join("fixtures/canonical")) {
        let fixture = read_json(&path);
        if fixture["format"] != "threadline-fixture/1" {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .expect("under root")
            .to_string_lossy()
            .replace('\\', "/");
        for (i, exchange) in fixture["exchanges"]
            .as_array()
            .expect("exchanges")
            .iter()
            .enumerate()
        {
            if exchange["response"]["kind"] == "sse" {
                streams.push((rel.clone(), i));
            }
        }
    }
    streams
}

#[test]
fn accumulated_messages_equal_the_python_sdk() {
    let root = repo_root();
    let expectations = json_files_one_level_down(&root.join("fixtures/sdk-accumulated"));
    assert!(
        !expectations.is_empty(),
        "no expectation files under fixtures/sdk-accumulated/: run fixtures/sdk-accumulated/generate.py"
    );

    let mut failures = Vec::new();
    let mut covered = Vec::new();
    for file in &expectations {
        let name = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        let expectation = read_json(file);
        let fixture_path = expectation["fixture"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no \"fixture\""));
        let exchange = expectation["exchange"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: no \"exchange\"")) as usize;
        covered.push((fixture_path.to_owned(), exchange));

        let canonical = root.join(fixture_path);
        assert!(
            canonical.is_file(),
            "{name}: fixture {fixture_path} does not exist"
        );
        let fixture = read_json(&canonical);
        let sse = fixture["exchanges"][exchange]["response"]["sse"]
            .as_str()
            .unwrap_or_else(|| {
                panic!("{name}: {fixture_path} has no SSE body in exchange {exchange}")
            });

        let ours = read_message(sse.as_bytes());
        match (&expectation["message"], &expectation["error"], ours) {
            (Value::Null, Value::String(sdk_error), Ok(_)) => failures.push(format!(
                "{name}: the SDK raised ({sdk_error}) but we returned a message"
            )),
            (Value::Null, Value::String(_), Err(_)) => {}
            (sdk, Value::Null, result) if sdk.is_object() => match result {
                // A cut stream: the SDK hands back its snapshot as if it were complete; we
                // return the same message as the partial of a typed truncation error. The
                // partial must equal the SDK's message.
                Err(e) => {
                    let differences = e.partial().map(|partial| {
                        let mut d = Vec::new();
                        diff(
                            "$",
                            &normalise(sdk.clone()),
                            &normalise(serde_json::to_value(partial).expect("serialize")),
                            &mut d,
                        );
                        d
                    });
                    match differences {
                        Some(d) if d.is_empty() => {}
                        Some(d) => failures.push(format!(
                            "{name}: truncated ({e}); our partial message differs from the SDK's:\n    {}",
                            d.join("\n    ")
                        )),
                        None => failures.push(format!(
                            "{name}: the SDK returned a message but we failed without one: {e}"
                        )),
                    }
                }
                Ok(message) => {
                    let ours = normalise(serde_json::to_value(&message).expect("serialize"));
                    let sdk = normalise(sdk.clone());
                    if sdk != ours {
                        let mut d = Vec::new();
                        diff("$", &sdk, &ours, &mut d);
                        failures.push(format!("{name}:\n    {}", d.join("\n    ")));
                    }
                }
            },
            _ => panic!("{name}: needs exactly one of \"message\" (object) or \"error\" (string)"),
        }
    }

    let mut missing: Vec<String> = recorded_streams(&root)
        .into_iter()
        .filter(|s| !covered.contains(s))
        .map(|(f, i)| format!("{f} exchange {i}"))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "recorded streams without an SDK expectation (run fixtures/sdk-accumulated/generate.py):\n  {}",
        missing.join("\n  ")
    );

    assert!(
        failures.is_empty(),
        "{} of {} streams differ from the Python SDK:\n{}",
        failures.len(),
        expectations.len(),
        failures.join("\n")
    );
}
