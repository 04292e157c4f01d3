//! Hostile variants of every recorded transcript: a line removed, two adjacent lines swapped,
//! the file cut at any byte, a line repeated, a record of an unknown type inserted, a user
//! text emptied. Each imports, normalizes to a request `validate` accepts whose tool calls
//! pair up, and keeps every typed user text of the original's main chain whose record
//! survives (the emptied one excepted).
//!
//! Every fixture gets every kind once at a seeded position ([`each_kind_once_per_transcript`]),
//! and proptest draws more (fixture, kind, position) cases ([`hostile_variants`]); both keep to
//! a few seconds on the 844 KB image transcript.

use std::collections::HashSet;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{Value, json};
use threadline_message::Message;
use threadline_testkit::fixtures;

use super::common::typed_user_texts;
use super::{import, normalize_checked, session_model};

/// A recorded transcript, read and imported once.
struct Fixture {
    name: String,
    text: String,
    original: Vec<Message>,
    model: String,
}

fn fixtures_once() -> &'static [Fixture] {
    static FIXTURES: OnceLock<Vec<Fixture>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        fixtures::transcripts()
            .into_iter()
            .map(|path| {
                let text =
                    std::fs::read_to_string(&path).expect("a fixture transcript is readable");
                let imported = import(&text);
                Fixture {
                    name: super::name(&path),
                    model: session_model(&imported),
                    original: imported.messages,
                    text,
                }
            })
            .collect()
    })
}

/// The kinds of damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Remove,
    SwapAdjacent,
    CutAtByte,
    Repeat,
    InsertUnknown,
    EmptyUserText,
}

const KINDS: [Kind; 6] = [
    Kind::Remove,
    Kind::SwapAdjacent,
    Kind::CutAtByte,
    Kind::Repeat,
    Kind::InsertUnknown,
    Kind::EmptyUserText,
];

/// A variant of `text` damaged by `kind` at the position `seed` picks, and the id of the
/// record whose typed text it emptied (that text is gone on purpose).
fn damage(text: &str, kind: Kind, seed: u64) -> (String, Option<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let join = |lines: &[&str]| {
        let mut out = lines.join("\n");
        out.push('\n');
        out
    };
    if lines.is_empty() {
        return (text.to_owned(), None);
    }
    let at = usize::try_from(seed % lines.len() as u64).unwrap_or(0);
    match kind {
        Kind::Remove => {
            let mut kept = lines.clone();
            kept.remove(at);
            (join(&kept), None)
        }
        Kind::SwapAdjacent => {
            let mut swapped = lines.clone();
            if at + 1 < swapped.len() {
                swapped.swap(at, at + 1);
            } else if at > 0 {
                swapped.swap(at - 1, at);
            }
            (join(&swapped), None)
        }
        Kind::CutAtByte => {
            let mut cut = usize::try_from(seed % (text.len() as u64 + 1)).unwrap_or(0);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            (text[..cut].to_owned(), None)
        }
        Kind::Repeat => {
            let mut repeated = lines.clone();
            repeated.insert(at, lines[at]);
            (join(&repeated), None)
        }
        Kind::InsertUnknown => {
            // A record type from the future: in the chain (a uuid and the previous record as
            // parent) or outside it (no uuid), by the seed's parity.
            let previous = (at > 0)
                .then(|| serde_json::from_str::<Value>(lines[at - 1]).ok())
                .flatten()
                .and_then(|r| r["uuid"].as_str().map(str::to_owned));
            let record = if seed.is_multiple_of(2) {
                json!({"type": "x-future-record", "uuid": format!("future-{seed}"),
                       "parentUuid": previous, "isSidechain": false, "data": {"n": seed}})
            } else {
                json!({"type": "x-future-record", "data": [1, 2, 3]})
            };
            let record = record.to_string();
            let mut inserted = lines.clone();
            inserted.insert(at, &record);
            (join(&inserted), None)
        }
        Kind::EmptyUserText => {
            // The first user record with text at or after the position (wrapping round).
            for offset in 0..lines.len() {
                let n = (at + offset) % lines.len();
                let Ok(mut record) = serde_json::from_str::<Value>(lines[n]) else {
                    continue;
                };
                if record["type"] != "user" {
                    continue;
                }
                let content = &mut record["message"]["content"];
                let emptied = match content {
                    Value::String(text) if !text.is_empty() => {
                        text.clear();
                        true
                    }
                    Value::Array(blocks) => {
                        let mut any = false;
                        for block in blocks.iter_mut().filter(|b| b["type"] == "text") {
                            block["text"] = json!("");
                            any = true;
                        }
                        any
                    }
                    _ => false,
                };
                if emptied {
                    let id = record["uuid"].as_str().map(str::to_owned);
                    let line = record.to_string();
                    let mut changed = lines.clone();
                    changed[n] = &line;
                    return (join(&changed), id);
                }
            }
            (text.to_owned(), None)
        }
    }
}

/// Checks one variant (see the module documentation).
fn check(fixture: &Fixture, kind: Kind, seed: u64) -> Result<(), String> {
    let (variant, emptied) = damage(&fixture.text, kind, seed);
    let what = format!("{}: {kind:?} with seed {seed}", fixture.name);
    let imported = import(&variant);
    // A variant cut after a complete answer is a finished session: the request that continues
    // it ends with the user's next message, as `threadline check` builds it (without one it
    // would be a prefill, which some recorded models reject).
    let mut messages = imported.messages.clone();
    let finished = threadline_normalize::normalize(&messages, &Default::default())
        .messages
        .last()
        .is_some_and(|m| m.role == threadline_wire::Role::Assistant);
    if finished {
        messages.push(Message::user_text("(the next user message)"));
    }
    // Valid, paired, and the variant's own typed texts kept (panics with `what` otherwise).
    let normalized = normalize_checked(&what, &messages, &fixture.model);
    let kept: HashSet<&str> = imported.messages.iter().map(|m| m.id().as_str()).collect();
    let survivors: Vec<Message> = fixture
        .original
        .iter()
        .filter(|m| kept.contains(m.id().as_str()) && Some(m.id().as_str()) != emptied.as_deref())
        .cloned()
        .collect();
    // Present, in any order: a swap may legitimately reorder two records.
    let output = super::common::output_user_text(&normalized.messages);
    for text in typed_user_texts(&survivors) {
        if !output.contains(text) {
            return Err(format!("{what}: typed user text {text:?} was lost"));
        }
    }
    Ok(())
}

#[test]
fn each_kind_once_per_transcript() {
    let fixtures = fixtures_once();
    assert!(fixtures.len() >= 8, "every recorded transcript");
    for (n, fixture) in fixtures.iter().enumerate() {
        for (k, kind) in KINDS.into_iter().enumerate() {
            // A different spot for each fixture and kind; fixed, so a failure reproduces.
            let seed = 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul((n * KINDS.len() + k + 1) as u64);
            if let Err(problem) = check(fixture, kind, seed) {
                panic!("{problem}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn hostile_variants(fixture in any::<prop::sample::Index>(), kind in 0..KINDS.len(), seed in any::<u64>()) {
        let fixtures = fixtures_once();
        let fixture = &fixtures[fixture.index(fixtures.len())];
        if let Err(problem) = check(fixture, KINDS[kind], seed) {
            prop_assert!(false, "{}", problem);
        }
    }
}

#[test]
fn a_variant_cut_right_after_an_answer_is_checked_as_a_finished_session() {
    // Cut each transcript just after the first assistant record that ends with text: the
    // session is finished there, and on a model without prefill (tool_heavy's opus-4-6) the
    // history alone would not be a valid request; the one that continues it is.
    for fixture in fixtures_once() {
        let mut offset = 0usize;
        let mut cut = None;
        for line in fixture.text.split_inclusive('\n') {
            offset += line.len();
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let blocks = record["message"]["content"].as_array();
            let ends_with_text = blocks
                .and_then(|b| b.last())
                .is_some_and(|b| b["type"] == "text");
            if record["type"] == "assistant" && ends_with_text {
                cut = Some(offset);
                break;
            }
        }
        let Some(cut) = cut else {
            continue;
        };
        // `CutAtByte` cuts at `seed % (len + 1)`: the seed is the offset itself.
        if let Err(problem) = check(fixture, Kind::CutAtByte, cut as u64) {
            panic!("{problem}");
        }
    }
}
