//! Import of real Claude Code transcripts (`fixtures/recorded/*/*.jsonl`) and of hand-made
//! variants: the main chain, sidechains, opaque records, system records, and damaged files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Value, json};
use threadline_message::claude_code::{
    ImportOptions, ImportResult, SessionSummary, import_claude_code, import_claude_code_file,
    is_claude_code_transcript,
};
use threadline_message::transcript::{LineProblem, LineProblemKind, TranscriptWriter};
use threadline_message::{CompactTrigger, Level, Message, MessageId, SystemKind};
use threadline_testkit::fixtures;
use threadline_wire::{Content, ContentBlock, StopReason};

fn fixture(name: &str) -> PathBuf {
    fixtures::repo_root().join("fixtures/recorded").join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).expect("the fixture exists")
}

fn import(text: &str) -> ImportResult {
    import_claude_code(text, &ImportOptions::default())
}

fn with_sidechains() -> ImportOptions {
    ImportOptions::default().with_sidechains(true)
}

fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.id().as_str()).collect()
}

/// How many messages of each kind, and how many users carry each flag.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    user: usize,
    assistant: usize,
    system: usize,
    meta: usize,
    tool_use_results: usize,
    api_message_ids: usize,
}

fn counts(messages: &[Message]) -> Counts {
    let mut counts = Counts::default();
    let mut api_ids = BTreeSet::new();
    for message in messages {
        match message {
            Message::User(user) => {
                counts.user += 1;
                counts.meta += usize::from(user.is_meta);
                counts.tool_use_results += usize::from(user.tool_use_result.is_some());
            }
            Message::Assistant(assistant) => {
                counts.assistant += 1;
                api_ids.extend(assistant.api_message_id.clone());
            }
            Message::System(_) => counts.system += 1,
            other => panic!("an import makes no {other:?}"),
        }
    }
    counts.api_message_ids = api_ids.len();
    counts
}

/// What the fixtures hold, counted once with jq over the raw files (the main chain of each is
/// exactly its `isSidechain == false` user, assistant and system records — none of them
/// branches for good: tool_heavy's parallel results branch and are pulled back in — except
/// compact.jsonl, whose main chain starts at its compact boundary (L11), and claude_agent,
/// which is all sidechain):
///
/// ```sh
/// jq -s '[.[] | select(.isSidechain == false)] | {
///   user: map(select(.type=="user")) | length,
///   assistant: map(select(.type=="assistant")) | length,
///   meta: map(select(.isMeta==true)) | length,
///   tur: map(select(has("toolUseResult"))) | length,
///   msgids: (map(select(.type=="assistant") | .message.id) | unique | length)}' FILE
/// jq -s '[.[] | select(has("uuid") | not) | .type] | group_by(.) | map({(.[0]): length}) | add' FILE
/// jq -c '[.type, .isSidechain]' FILE | sort | uniq -c
/// ```
struct Expected {
    file: &'static str,
    main: Counts,
    /// Records without a `uuid` (summary, file-history-snapshot).
    opaque: usize,
    /// `isSidechain: true` records.
    sidechain_users: usize,
    sidechain_assistants: usize,
    /// First and last `uuid` of the main chain.
    first: &'static str,
    last: &'static str,
}

const EXPECTED: &[Expected] = &[
    Expected {
        file: "d-kimuson__claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        main: Counts {
            user: 14,
            assistant: 15,
            system: 0,
            meta: 1,
            tool_use_results: 12,
            api_message_ids: 7,
        },
        opaque: 0,
        sidechain_users: 0,
        sidechain_assistants: 0,
        first: "e2ab9812-8be7-4e9e-8194-d9b7b9d6da14",
        last: "549b3502-6e30-4fa5-869f-c998df26c3f0",
    },
    Expected {
        file: "d-kimuson__claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        main: Counts {
            user: 15,
            assistant: 16,
            system: 0,
            meta: 1,
            tool_use_results: 13,
            api_message_ids: 10,
        },
        opaque: 0,
        sidechain_users: 10,
        sidechain_assistants: 12,
        first: "5877060c-0a35-4f68-90a6-fdaa3727859a",
        last: "e9bd5ce8-d37d-49a1-868c-8281d0d0a32b",
    },
    Expected {
        file: "d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        main: Counts {
            user: 14,
            assistant: 18,
            system: 0,
            meta: 1,
            tool_use_results: 11,
            api_message_ids: 9,
        },
        opaque: 1,
        sidechain_users: 161,
        sidechain_assistants: 244,
        first: "62e0bdc0-a1e4-4d5c-8509-3b9d0d57cc67",
        last: "5ac34508-f923-4ac5-8efa-749838e99760",
    },
    Expected {
        file: "lanegrid__agtrace/claude_agent.jsonl",
        main: Counts {
            user: 1,
            assistant: 1,
            system: 0,
            meta: 0,
            tool_use_results: 0,
            api_message_ids: 1,
        },
        opaque: 0,
        sidechain_users: 0,
        sidechain_assistants: 0,
        first: "32ddc5db-2a13-4047-adc2-f4fd68e90066",
        last: "ad1865d3-87e5-4efd-a6f5-28240f200894",
    },
    Expected {
        file: "lanegrid__agtrace/claude_session.jsonl",
        main: Counts {
            user: 9,
            assistant: 13,
            system: 0,
            meta: 1,
            tool_use_results: 4,
            api_message_ids: 6,
        },
        opaque: 4,
        sidechain_users: 0,
        sidechain_assistants: 0,
        first: "f370ce0f-84e8-42ab-a6c9-c5d925abd271",
        last: "61f4ec02-d975-4eb6-89be-fbb302f1167b",
    },
    // Every progress record (10) is kept opaque, on the chain (the SessionStart hooks are
    // its root) or off it. The main chain holds every user, assistant and system record: the
    // Glob call (L30) and its result (L32), which a `parentUuid` walk misses, are pulled in.
    Expected {
        file: "marot__spotter/tool_heavy.jsonl",
        main: Counts {
            user: 13,
            assistant: 9,
            system: 2,
            meta: 1,
            tool_use_results: 6,
            api_message_ids: 4,
        },
        opaque: 15,
        sidechain_users: 0,
        sidechain_assistants: 0,
        first: "5440873c-2d59-4c8c-88ec-c0a8c38a027d",
        last: "29e6224a-ea4f-445c-964f-d2bbddd138d0",
    },
    // The request view starts at the compact boundary (L11): the summary and the /compact
    // command records after it (L12–15). L2–8 are what the summary replaced.
    Expected {
        file: "tomjnsn__agentlogs/compact.jsonl",
        main: Counts {
            user: 4,
            assistant: 0,
            system: 1,
            meta: 1,
            tool_use_results: 0,
            api_message_ids: 0,
        },
        opaque: 4,
        sidechain_users: 0,
        sidechain_assistants: 0,
        first: "a623034a-2670-4ca8-83f6-b21d2b5eb3c0",
        last: "6b911413-edc7-479e-83d0-acbaddbc8ba7",
    },
    Expected {
        file: "tomjnsn__agentlogs/images.jsonl",
        main: Counts {
            user: 3,
            assistant: 7,
            system: 1,
            meta: 0,
            tool_use_results: 2,
            api_message_ids: 3,
        },
        opaque: 18,
        sidechain_users: 0,
        sidechain_assistants: 0,
        first: "c3e4d9d7-4c50-4d9e-8a52-58d49da172c6",
        last: "01d1b221-8442-432d-8106-8c1e76459ac2",
    },
];

#[test]
fn the_expectations_cover_every_recorded_transcript() {
    let recorded: BTreeSet<PathBuf> = fixtures::transcripts().into_iter().collect();
    let expected: BTreeSet<PathBuf> = EXPECTED.iter().map(|e| fixture(e.file)).collect();
    assert_eq!(recorded, expected);
}

#[test]
fn every_fixture_imports_without_problems_and_with_the_counted_records() {
    for expected in EXPECTED {
        let text = read(expected.file);
        let name = expected.file;
        assert!(is_claude_code_transcript(&text), "{name}");

        let main = import(&text);
        assert_eq!(main.problems, [], "{name}");
        assert_eq!(counts(&main.messages), expected.main, "{name}");
        assert_eq!(main.opaque.len(), expected.opaque, "{name}");
        assert_eq!(
            main.skipped_sidechain,
            expected.sidechain_users + expected.sidechain_assistants,
            "{name}"
        );
        assert_eq!(main.skipped_off_chain, 0, "{name}");
        let compacted = if name.ends_with("compact.jsonl") {
            6
        } else {
            0
        };
        assert_eq!(main.skipped_compacted, compacted, "{name}");
        let main_ids = ids(&main.messages);
        assert_eq!(
            main_ids.first().copied().unwrap_or(""),
            expected.first,
            "{name}"
        );
        assert_eq!(
            main_ids.last().copied().unwrap_or(""),
            expected.last,
            "{name}"
        );

        let all = import_claude_code(&text, &with_sidechains());
        assert_eq!(all.problems, [], "{name}");
        let all_counts = counts(&all.messages);
        assert_eq!(
            (all_counts.user, all_counts.assistant),
            (
                expected.main.user + expected.sidechain_users,
                expected.main.assistant + expected.sidechain_assistants
            ),
            "{name}"
        );
        assert_eq!(all.skipped_sidechain, 0, "{name}");

        let from_file = import_claude_code_file(fixture(name), &ImportOptions::default())
            .expect("the fixture is readable");
        assert_eq!(from_file, main, "{name}: file and text imports agree");
    }
}

#[test]
fn records_map_field_by_field() {
    let text = read("lanegrid__agtrace/claude_session.jsonl");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let imported = import(&text);
    let conversation = records
        .iter()
        .filter(|r| r["type"] != "file-history-snapshot");
    for (record, message) in conversation.zip(&imported.messages) {
        assert_eq!(message.id().as_str(), record["uuid"]);
        assert_eq!(message.header().timestamp.as_str(), record["timestamp"]);
        match message {
            Message::User(user) => {
                assert_eq!(record["type"], "user");
                assert_eq!(user.is_meta, record["isMeta"] == true);
                assert_eq!(user.tool_use_result.as_ref(), record.get("toolUseResult"));
                let content = &record["message"]["content"];
                let expected: Vec<ContentBlock> = match content.as_str() {
                    Some(text) => vec![ContentBlock::text(text)],
                    None => serde_json::from_value(content.clone()).expect("blocks"),
                };
                assert_eq!(user.content, expected);
            }
            Message::Assistant(assistant) => {
                assert_eq!(record["type"], "assistant");
                let api = &record["message"];
                assert_eq!(assistant.api_message_id.as_deref(), api["id"].as_str());
                assert_eq!(
                    assistant.request_id.as_deref(),
                    record["requestId"].as_str()
                );
                assert_eq!(assistant.model, api["model"]);
                assert_eq!(
                    assistant.stop_reason.as_ref().map(StopReason::as_str),
                    api["stop_reason"].as_str()
                );
                let usage = serde_json::to_value(assistant.usage.as_deref()).expect("usage");
                assert_eq!(usage, api["usage"]);
                assert_eq!(assistant.content.len(), 1, "one block per record");
                assert!(!assistant.is_api_error);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // Thinking blocks keep their signatures.
    let thinking = imported
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => a.content.first(),
            _ => None,
        })
        .filter(|b| matches!(b, ContentBlock::Thinking(t) if t.signature.as_deref().is_some_and(|s| !s.is_empty())))
        .count();
    assert_eq!(thinking, 6);
}

fn uuids_in_file_order(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let record: Value = serde_json::from_str(l).expect("JSON");
            record["uuid"].as_str().map(str::to_owned)
        })
        .collect()
}

#[test]
fn a_file_whose_records_are_all_sidechains_is_imported_as_the_main_chain() {
    let agent = read("lanegrid__agtrace/claude_agent.jsonl");
    let default = import(&agent);
    assert_eq!(default.problems, []);
    assert!(default.is_all_sidechain());
    assert_eq!(default.skipped_sidechain, 0);
    assert_eq!(ids(&default.messages), uuids_in_file_order(&agent));
    let Message::User(warmup) = &default.messages[0] else {
        panic!("a user message")
    };
    assert_eq!(warmup.content, [ContentBlock::text("Warmup")]);
    assert_eq!(default.agent_id(), Some("0c4c3cf8"));
    // Including sidechains changes nothing: they are the chain.
    assert_eq!(import_claude_code(&agent, &with_sidechains()), default);

    // One main-chain record is enough for the sidechains to be sub-agents again.
    let main = record("user", "m", None, "the parent's prompt");
    let mixed = format!("{}\n{main}\n", agent.trim_end());
    let mixed = import(&mixed);
    assert!(!mixed.is_all_sidechain());
    assert_eq!(ids(&mixed.messages), ["m"]);
    assert_eq!(mixed.skipped_sidechain, 2);
}

#[test]
fn sidechains_are_left_out_unless_asked_for() {
    // Interleaved sidechains are imported at their place in the file.
    let text = read("d-kimuson__claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl");
    let all = import_claude_code(&text, &with_sidechains());
    assert_eq!(ids(&all.messages), uuids_in_file_order(&text));
}

#[test]
fn the_summary_record_is_kept_and_does_not_pick_the_chain() {
    let text = read("d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let imported = import(&text);
    let summaries: Vec<SessionSummary<'_>> = imported.summaries().collect();
    // Its leafUuid names the last record of another session (1af7fc5e…), not of this file.
    assert_eq!(
        summaries,
        [SessionSummary {
            summary: "Empty Repo Setup: CLAUDE.md Foundation Created",
            leaf_uuid: Some("549b3502-6e30-4fa5-869f-c998df26c3f0"),
        }]
    );
    assert_eq!(
        imported.opaque[0],
        serde_json::from_str::<Value>(text.lines().next().expect("a line")).expect("JSON"),
        "kept verbatim"
    );
    assert_eq!(
        imported.messages.last().map(|m| m.id().as_str()),
        Some("5ac34508-f923-4ac5-8efa-749838e99760")
    );
}

// --- hand-made transcripts ------------------------------------------------------------------

/// A conversation record: `user`/`assistant` with text content, chained by `parent`.
fn record(kind: &str, uuid: &str, parent: Option<&str>, text: &str) -> Value {
    let message = if kind == "assistant" {
        json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}],
               "stop_reason": "end_turn", "stop_sequence": null,
               "usage": {"input_tokens": 1, "output_tokens": 2}})
    } else {
        json!({"role": "user", "content": text})
    };
    json!({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": false,
           "sessionId": "s1", "timestamp": format!("2026-01-01T00:00:00.{uuid}Z"),
           "message": message})
}

fn jsonl(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

#[test]
fn unknown_record_types_are_kept_opaque_and_the_chain_runs_through_them() {
    let future = json!({"type": "future-record", "uuid": "f", "parentUuid": "a", "x": [1, 2]});
    let queue = json!({"type": "queue-operation", "operation": "enqueue", "content": "hi"});
    let untyped = json!({"no_type": true});
    let text = jsonl(&[
        record("user", "u", None, "hello"),
        record("assistant", "a", Some("u"), "hi"),
        queue.clone(),
        future.clone(),
        record("user", "v", Some("f"), "next"),
        untyped.clone(),
    ]);
    let imported = import(&text);
    assert_eq!(imported.problems, []);
    assert_eq!(ids(&imported.messages), ["u", "a", "v"]);
    assert_eq!(imported.opaque, [queue, future, untyped]);
}

#[test]
fn branches_keep_the_newest_leaf_and_duplicates_count_once() {
    let text = jsonl(&[
        record("user", "u", None, "hello"),
        record("assistant", "a1", Some("u"), "first answer"),
        record("user", "x", Some("a1"), "abandoned after a rewind"),
        record("assistant", "a2", Some("u"), "second answer"),
        record("user", "y", Some("a2"), "kept"),
        // A resumed session repeats records it already holds.
        record("assistant", "a2", Some("u"), "second answer"),
        record("user", "y", Some("a2"), "kept"),
    ]);
    let imported = import(&text);
    assert_eq!(imported.problems, []);
    assert_eq!(ids(&imported.messages), ["u", "a2", "y"]);
    assert_eq!(
        imported.skipped_off_chain, 4,
        "a1, x and the first a2 and y"
    );
}

#[test]
fn cyclic_and_self_parented_records_are_reported_never_dropped_silently() {
    let text = jsonl(&[
        record("user", "s", Some("s"), "names itself as its parent"),
        record("user", "c1", Some("c2"), "a cycle nothing leads to"),
        record("assistant", "c2", Some("c1"), "its other half"),
        record("user", "u", None, "hello"),
        record("assistant", "a", Some("u"), "hi"),
        record("user", "v", Some("a"), "the main chain's leaf"),
    ]);
    let imported = import(&text);
    assert_eq!(ids(&imported.messages), ["u", "a", "v"]);
    assert_eq!(imported.skipped_off_chain, 3);
    let lines: Vec<usize> = imported.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 2, 3], "{:?}", imported.problems);
    assert_eq!(
        imported.problems[0].to_string(),
        "line 1: record s names itself as its parent; dropped"
    );
    assert_eq!(
        imported.problems[1].to_string(),
        "line 2: record c1 is on a parentUuid cycle; dropped"
    );

    // A chain that runs into a cycle: imported up to once round it, and the record closing
    // the cycle is reported.
    let text = jsonl(&[
        record("user", "p", Some("q"), "one end of the cycle"),
        record("assistant", "q", Some("p"), "the other"),
        record("user", "x", Some("p"), "the leaf"),
    ]);
    let imported = import(&text);
    assert_eq!(ids(&imported.messages), ["p", "q", "x"]);
    assert_eq!(imported.problems.len(), 1, "{:?}", imported.problems);
    assert_eq!(
        imported.problems[0].to_string(),
        "line 2: record q is on a parentUuid cycle; the chain stops there"
    );
}

/// One record of a random parent graph: its kind, its `uuid` (from a small pool, so that
/// duplicates happen; or none), its parent (from the pool, itself, one not in the file, or
/// none), whether the parent is a `logicalParentUuid`, and whether it is a sidechain.
fn graph_record() -> impl Strategy<Value = (bool, Option<u8>, Option<u8>, bool, bool)> {
    (
        any::<bool>(),
        prop_oneof![9 => (0u8..8).prop_map(Some), 1 => Just(None)],
        prop_oneof![6 => (0u8..9).prop_map(Some), 1 => Just(None)],
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.15),
    )
}

proptest! {
    /// On any parent graph (cycles, self-parents, duplicates, lost parents, sidechains) the
    /// import ends, accounts for every record, and every record that is its own ancestor is
    /// either imported or reported as a cycle — and only such records are.
    #[test]
    fn every_record_on_a_parent_cycle_is_imported_or_reported(
        graph in prop::collection::vec(graph_record(), 1..24),
    ) {
        let name = |i: u8| if i == 8 { "lost".to_owned() } else { format!("r{i}") };
        let records: Vec<Value> = graph
            .iter()
            .enumerate()
            .map(|(line, &(assistant, id, parent, logical, sidechain))| {
                let id = id.map_or_else(String::new, name);
                let parent = parent.map(name);
                let mut value = record(
                    if assistant { "assistant" } else { "user" },
                    &id,
                    None,
                    &format!("line {}", line + 1),
                );
                let key = if logical { "logicalParentUuid" } else { "parentUuid" };
                value[key] = parent.map_or(Value::Null, Value::String);
                value["isSidechain"] = Value::Bool(sidechain);
                if id.is_empty() {
                    value.as_object_mut().expect("an object").remove("uuid");
                }
                value
            })
            .collect();
        // `logicalParentUuid` is a parent only when compactions are followed.
        for follow in [false, true] {
        let options = ImportOptions::default().with_compacted_history(follow);
        let imported = import_claude_code(&jsonl(&records), &options);

        prop_assert_eq!(
            imported.messages.len() + imported.opaque.len() + imported.skipped_sidechain
                + imported.skipped_off_chain + imported.skipped_compacted,
            records.len()
        );
        // The oracle: the last record of each uuid, each record's parent, and brute force.
        let uuid_of = |r: &Value| r["uuid"].as_str().filter(|u| !u.is_empty()).map(str::to_owned);
        let parent_of = |r: &Value| {
            ["parentUuid", "logicalParentUuid"][..if follow { 2 } else { 1 }]
                .iter()
                .find_map(|k| r[*k].as_str().filter(|u| !u.is_empty()).map(str::to_owned))
        };
        let mut last = std::collections::HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if let Some(u) = uuid_of(r) {
                last.insert(u, i);
            }
        }
        let next = |i: usize| parent_of(&records[i]).and_then(|p| last.get(&p).copied());
        let on_cycle = |i: usize| {
            let mut j = next(i);
            for _ in 0..records.len() {
                match j {
                    Some(k) if k == i => return true,
                    Some(k) => j = next(k),
                    None => return false,
                }
            }
            false
        };
        let imported_ids: BTreeSet<&str> =
            imported.messages.iter().map(|m| m.id().0.as_str()).collect();
        for (i, r) in records.iter().enumerate() {
            if !on_cycle(i) || r["isSidechain"] == true {
                continue;
            }
            let uuid = uuid_of(r).expect("a record on a cycle has a uuid");
            let reported = imported.problems.iter().any(|p| {
                p.line == i + 1
                    && matches!(&p.kind, LineProblemKind::ParentCycle { uuid: u, dropped: true, .. } if *u == uuid)
            });
            prop_assert!(
                imported_ids.contains(uuid.as_str()) || reported,
                "line {} ({}) is on a cycle, neither imported nor reported: {:?}",
                i + 1, uuid, imported.problems
            );
        }
        for problem in &imported.problems {
            if let LineProblemKind::ParentCycle { .. } = problem.kind {
                prop_assert!(on_cycle(problem.line - 1), "{}", problem);
            }
        }
        }
    }
}

#[test]
fn a_cut_last_line_imports_every_earlier_record_and_reports_the_cut() {
    let text = read("lanegrid__agtrace/claude_session.jsonl");
    let whole = import(&text);
    let last_line_start = text[..text.len() - 1].rfind('\n').expect("several lines") + 1;
    let cut = &text[..last_line_start + (text.len() - last_line_start) / 2];

    let imported = import(cut);
    assert_eq!(
        imported.messages,
        whole.messages[..whole.messages.len() - 1]
    );
    assert_eq!(imported.opaque, whole.opaque);
    assert_eq!(
        imported.problems,
        [LineProblem {
            line: 26,
            kind: LineProblemKind::CutLastLine
        }]
    );
}

#[test]
fn a_lost_line_in_the_middle_loses_only_itself() {
    let text = read("lanegrid__agtrace/claude_session.jsonl");
    let whole = import(&text);
    let lines: Vec<&str> = text.lines().collect();
    // Line 6 is the tool result answering line 5's tool use; line 7 names it as parent.
    let lost_uuid = serde_json::from_str::<Value>(lines[5]).expect("JSON")["uuid"].clone();

    for (variant, replacement) in [("garbage", Some("{\"type\":\"user\",")), ("removed", None)] {
        let damaged: String = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| if i == 5 { replacement } else { Some(*l) })
            .map(|l| format!("{l}\n"))
            .collect();
        let imported = import(&damaged);
        let mut expected = whole.messages.clone();
        expected.retain(|m| m.id().as_str() != lost_uuid);
        assert_eq!(imported.messages, expected, "{variant}");
        let broken_at = if replacement.is_some() { 7 } else { 6 };
        let broken = LineProblem {
            line: broken_at,
            kind: LineProblemKind::BrokenChain {
                missing_parent: lost_uuid.as_str().expect("a string").to_owned(),
            },
        };
        let problems = match replacement {
            Some(_) => {
                assert!(
                    matches!(
                        &imported.problems[0],
                        LineProblem {
                            line: 6,
                            kind: LineProblemKind::Malformed { .. }
                        }
                    ),
                    "{:?}",
                    imported.problems
                );
                vec![imported.problems[0].clone(), broken]
            }
            None => vec![broken],
        };
        assert_eq!(imported.problems, problems, "{variant}");
    }
}

#[test]
fn system_records_map_to_their_kinds() {
    let system = |uuid: &str, parent: &str, fields: Value| {
        let mut record = json!({"type": "system", "uuid": uuid, "parentUuid": parent,
                                "isSidechain": false, "timestamp": "2026-01-01T00:00:09Z"});
        for (k, v) in fields.as_object().expect("an object") {
            record[k] = v.clone();
        }
        record
    };
    let mut summary = record("user", "cs", Some("cb"), "This session is being continued…");
    summary["isCompactSummary"] = json!(true);
    summary["isVisibleInTranscriptOnly"] = json!(true);
    let mut api_error = record("assistant", "e", Some("td"), "API Error: 529 overloaded");
    api_error["isApiErrorMessage"] = json!(true);
    api_error["message"]["model"] = json!("<synthetic>");
    let mut compact = system(
        "cb",
        "",
        json!({"subtype": "compact_boundary", "content": "Conversation compacted", "level": "info",
               "logicalParentUuid": "a", "compactMetadata": {"trigger": "manual", "preTokens": 155025}}),
    );
    compact["parentUuid"] = Value::Null;
    let text = jsonl(&[
        record("user", "u", None, "hello"),
        record("assistant", "a", Some("u"), "hi"),
        compact,
        summary,
        system(
            "lc",
            "cs",
            json!({"subtype": "local_command", "content": "<command-name>/cost</command-name>"}),
        ),
        system(
            "mc",
            "lc",
            json!({"subtype": "microcompact_boundary", "content": "Microcompact",
                   "microcompactMetadata": {"trigger": "auto", "preTokens": 100, "tokensSaved": 60,
                                            "compactedToolIds": ["toolu_1", "toolu_2"]}}),
        ),
        system(
            "ae",
            "mc",
            json!({"subtype": "api_error", "level": "error", "retryInMs": 558.94,
                   "retryAttempt": 1, "maxRetries": 10,
                   "error": {"status": 529, "error": {"type": "overloaded_error", "message": "Overloaded"}}}),
        ),
        system(
            "sh",
            "ae",
            json!({"subtype": "stop_hook_summary", "hookCount": 1, "hookErrors": ["lint failed"],
                   "preventedContinuation": true}),
        ),
        system(
            "td",
            "sh",
            json!({"subtype": "turn_duration", "durationMs": 88947}),
        ),
        api_error,
        system(
            "w",
            "e",
            json!({"subtype": "informational", "level": "warning", "content": "low disk"}),
        ),
        system(
            "n",
            "w",
            json!({"subtype": "future_subtype_without_text", "data": 1}),
        ),
        system(
            "z",
            "n",
            json!({"subtype": "away_summary", "content": "You were fixing the build"}),
        ),
    ]);

    // The model's view starts at the boundary: what the summary replaced is left out.
    let request_view = import(&text);
    assert_eq!(request_view.problems, []);
    assert_eq!(
        ids(&request_view.messages),
        ["cb", "cs", "lc", "mc", "ae", "sh", "td", "e", "w", "z"],
        "the chain stops at the compaction and runs through the opaque record"
    );
    assert_eq!(request_view.skipped_compacted, 2);
    assert_eq!(request_view.skipped_off_chain, 0);

    // The history view follows `logicalParentUuid` into the compacted history.
    let imported = import_claude_code(
        &text,
        &ImportOptions::default().with_compacted_history(true),
    );
    assert_eq!(imported.problems, []);
    assert_eq!(imported.skipped_compacted, 0);
    assert_eq!(
        ids(&imported.messages),
        [
            "u", "a", "cb", "cs", "lc", "mc", "ae", "sh", "td", "e", "w", "z"
        ],
        "the chain runs through the compaction and the opaque record"
    );
    assert_eq!(imported.opaque.len(), 1);
    assert_eq!(imported.opaque[0]["subtype"], "future_subtype_without_text");

    let kinds: Vec<&SystemKind> = imported
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System(s) => Some(&s.kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            &SystemKind::CompactBoundary {
                trigger: CompactTrigger::Manual,
                pre_tokens: 155_025,
                last_message_id: Some(MessageId::from("a")),
            },
            &SystemKind::LocalCommand {
                content: "<command-name>/cost</command-name>".into()
            },
            &SystemKind::MicrocompactBoundary {
                cleared_tool_use_ids: vec!["toolu_1".into(), "toolu_2".into()],
                tokens_saved: 60,
            },
            &SystemKind::ApiError {
                message: "Overloaded".into(),
                attempt: 1,
                max_attempts: 10,
                retry_in_ms: Some(559),
            },
            &SystemKind::StopHookSummary {
                content: "lint failed".into(),
                prevented_continuation: true,
            },
            &SystemKind::TurnDuration {
                duration_ms: 88_947
            },
            &SystemKind::Informational {
                level: Level::Warning,
                content: "low disk".into()
            },
            &SystemKind::Informational {
                level: Level::Info,
                content: "You were fixing the build".into()
            },
        ]
    );
    let Message::User(summary) = &imported.messages[3] else {
        panic!("the compact summary")
    };
    assert!(summary.is_compact_summary && !summary.is_meta && !summary.is_virtual);
    let Message::Assistant(error) = &imported.messages[9] else {
        panic!("the API error")
    };
    assert!(error.is_api_error);
    assert_eq!(error.model, "<synthetic>");
}

#[test]
fn damaged_records_are_reported_never_fatal() {
    let mut no_message = record("user", "b", Some("a"), "");
    no_message
        .as_object_mut()
        .expect("an object")
        .remove("message");
    let mut bad_block = record("user", "c", Some("b"), "");
    bad_block["message"]["content"] = json!([
        {"type": "text", "text": "fine"},
        {"type": "text"},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    ]);
    let mut no_uuid = record("user", "", None, "where do I go?");
    no_uuid.as_object_mut().expect("an object").remove("uuid");
    let text = jsonl(&[
        record("user", "a", None, "hello"),
        no_message.clone(),
        bad_block,
        json!([1, 2, 3]),
        no_uuid.clone(),
    ]);
    let imported = import(&text);
    assert_eq!(ids(&imported.messages), ["a", "c"]);
    let Message::User(user) = &imported.messages[1] else {
        panic!("a user")
    };
    assert_eq!(user.content[0], ContentBlock::text("fine"));
    assert_eq!(
        user.content[1],
        ContentBlock::Unknown(json!({"type": "text"}))
    );
    assert!(matches!(user.content[2], ContentBlock::ToolResult(_)));
    assert_eq!(imported.opaque, [no_message, no_uuid]);

    let kinds: Vec<(usize, &LineProblemKind)> = imported
        .problems
        .iter()
        .map(|p| (p.line, &p.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (
                2,
                &LineProblemKind::Unmapped {
                    record_type: "user".into(),
                    error: "no `message` object".into()
                }
            ),
            (
                3,
                &LineProblemKind::BadBlock {
                    index: 1,
                    error: "missing field `text`".into()
                }
            ),
            (
                4,
                &LineProblemKind::Malformed {
                    error: "not a JSON object".into()
                }
            ),
            (
                5,
                &LineProblemKind::Unmapped {
                    record_type: "user".into(),
                    error: "no `uuid`".into()
                }
            ),
        ]
    );
    for problem in &imported.problems {
        assert!(
            problem
                .to_string()
                .starts_with(&format!("line {}: ", problem.line))
        );
    }
}

#[test]
fn claude_code_transcripts_are_told_from_ours() {
    for expected in EXPECTED {
        assert!(
            is_claude_code_transcript(&read(expected.file)),
            "{}",
            expected.file
        );
    }
    let ours = std::env::temp_dir().join(format!("threadline-ours-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&ours);
    let mut writer = TranscriptWriter::open(&ours).expect("opens");
    writer
        .append(&Message::user_text("hello"))
        .and_then(|()| {
            writer.append(&Message::tool_result(
                "toolu_1",
                Content::Text("x".into()),
                false,
            ))
        })
        .expect("appends");
    let text = std::fs::read_to_string(&ours).expect("reads");
    let _ = std::fs::remove_file(&ours);
    assert!(!is_claude_code_transcript(&text));
    assert!(!is_claude_code_transcript(&format!("garbage\n\n{text}")));
    assert!(!is_claude_code_transcript(""));
    assert!(!is_claude_code_transcript("not json\n[1]\n"));
    assert!(is_claude_code_transcript(
        "garbage\n{\"type\":\"summary\",\"summary\":\"t\",\"leafUuid\":\"x\"}\n"
    ));
}

// --- snapshots -------------------------------------------------------------------------------

/// One line per message: position, kind, id, flags, block types and the first 60 characters
/// of its first text.
fn digest(result: &ImportResult) -> String {
    let mut out = String::new();
    for (index, message) in result.messages.iter().enumerate() {
        let (kind, flags, blocks): (&str, Vec<String>, &[ContentBlock]) = match message {
            Message::User(user) => {
                let mut flags = Vec::new();
                if user.is_meta {
                    flags.push("meta".to_owned());
                }
                if user.is_compact_summary {
                    flags.push("compact_summary".to_owned());
                }
                if user.tool_use_result.is_some() {
                    flags.push("tool_use_result".to_owned());
                }
                ("user", flags, &user.content)
            }
            Message::Assistant(assistant) => {
                let mut flags = Vec::new();
                if let Some(id) = &assistant.api_message_id {
                    flags.push(id.clone());
                }
                if let Some(stop) = &assistant.stop_reason {
                    flags.push(stop.to_string());
                }
                if assistant.is_api_error {
                    flags.push("api_error".to_owned());
                }
                ("assistant", flags, &assistant.content)
            }
            Message::System(system) => {
                let subtype =
                    serde_json::to_value(&system.kind).expect("serializes")["subtype"].to_string();
                ("system", vec![subtype], &[])
            }
            Message::Attachment(attachment) => {
                let kind =
                    serde_json::to_value(&attachment.attachment).expect("serializes")["kind"]
                        .to_string();
                ("attachment", vec![kind], &[])
            }
            other => panic!("an import makes no {other:?}"),
        };
        let types: Vec<&str> = blocks.iter().map(ContentBlock::tag).collect();
        let text: String = blocks
            .iter()
            .find_map(|block| match block {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                ContentBlock::Thinking(t) => Some(t.thinking.as_str()),
                ContentBlock::ToolUse(t) => Some(t.name.as_str()),
                ContentBlock::ToolResult(r) => match &r.content {
                    Some(Content::Text(text)) => Some(text.as_str()),
                    Some(Content::Blocks(blocks)) => blocks.iter().find_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    }),
                    None => None,
                },
                _ => None,
            })
            .unwrap_or_default()
            .chars()
            .take(60)
            .collect();
        out.push_str(&format!(
            "{index:>3} {kind:<9} {} {} [{}] {text:?}\n",
            message.id(),
            if flags.is_empty() {
                "-".to_owned()
            } else {
                flags.join(",")
            },
            types.join(",")
        ));
    }
    out.push_str(&format!(
        "opaque: {:?}\nskipped: {} sidechain, {} off chain, {} compacted\n",
        result
            .opaque
            .iter()
            .map(|o| o["type"].as_str().unwrap_or("?"))
            .collect::<Vec<_>>(),
        result.skipped_sidechain,
        result.skipped_off_chain,
        result.skipped_compacted
    ));
    let u = result.usage();
    out.push_str(&format!(
        "session: {:?} agent {:?} first {:?} all-sidechain {} model {:?}\ntitle: {:?}\n\
         usage: {} responses, {} in, {} out, {} cache write, {} cache read\n",
        result.session_id(),
        result.agent_id(),
        result.first_timestamp(),
        result.is_all_sidechain(),
        result.model(),
        result.title(),
        u.responses,
        u.input_tokens,
        u.output_tokens,
        u.cache_creation_input_tokens,
        u.cache_read_input_tokens
    ));
    out
}

fn snapshot_name(file: &str) -> String {
    Path::new(file)
        .with_extension("")
        .to_string_lossy()
        .replace('/', "__")
}

#[test]
fn digests_of_every_fixture() {
    for expected in EXPECTED {
        let imported = import(&read(expected.file));
        insta::assert_snapshot!(snapshot_name(expected.file), digest(&imported));
    }
    let agent = import_claude_code(
        &read("lanegrid__agtrace/claude_agent.jsonl"),
        &with_sidechains(),
    );
    insta::assert_snapshot!(
        "lanegrid__agtrace__claude_agent__with_sidechains",
        digest(&agent)
    );
    let history = import_claude_code(
        &read("tomjnsn__agentlogs/compact.jsonl"),
        &ImportOptions::default().with_compacted_history(true),
    );
    insta::assert_snapshot!("tomjnsn__agentlogs__compact__history", digest(&history));
}

#[test]
fn parallel_tool_results_are_pulled_into_the_chain() {
    let text = read("marot__spotter/tool_heavy.jsonl");
    let imported = import(&text);
    let ids = ids(&imported.messages);
    // L29 WebSearch and L30 Glob are fragments of one response; L32 answers Glob (parent
    // L30), L33 answers WebSearch (parent L29) and the conversation continues from L33.
    for (line, uuid) in [
        (29, "479992dc"),
        (30, "50199023"),
        (32, "d2b1430f"),
        (33, "1979167d"),
    ] {
        assert!(
            ids.iter().any(|id| id.starts_with(uuid)),
            "line {line} ({uuid}) is on the chain: {ids:?}"
        );
    }
    let position = |prefix: &str| ids.iter().position(|id| id.starts_with(prefix));
    assert!(
        position("50199023") < position("d2b1430f"),
        "the call before its result"
    );
    // The results answer the calls in the order they were made (WebSearch, then Glob), not
    // in the order the tools finished (Glob's result was written first).
    assert_eq!(position("1979167d").map(|p| p + 1), position("d2b1430f"));
    // Without them a parentUuid walk would have skipped two records.
    assert_eq!(imported.skipped_off_chain, 0);
}

#[test]
fn the_request_view_of_a_compacted_session_starts_at_the_boundary() {
    let text = read("tomjnsn__agentlogs/compact.jsonl");
    let request = import(&text);
    let Message::System(boundary) = &request.messages[0] else {
        panic!("the boundary first")
    };
    assert!(matches!(boundary.kind, SystemKind::CompactBoundary { .. }));
    let Message::User(summary) = &request.messages[1] else {
        panic!("the summary second")
    };
    assert!(summary.is_compact_summary);
    let pre_boundary = "how are you doing";
    let has_text = |messages: &[Message], needle: &str| {
        messages.iter().any(|m| match m {
            Message::User(u) => u
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::Text(t) if t.text == needle)),
            _ => false,
        })
    };
    assert!(!has_text(&request.messages, pre_boundary));
    assert_eq!(request.skipped_compacted, 6);

    let history = import_claude_code(
        &text,
        &ImportOptions::default().with_compacted_history(true),
    );
    assert!(has_text(&history.messages, pre_boundary));
    assert_eq!(history.messages.len(), 11);
    assert_eq!(history.skipped_compacted, 0);
}

#[test]
fn the_session_information_of_each_fixture() {
    struct Info {
        file: &'static str,
        session_id: &'static str,
        first_timestamp: &'static str,
        title: &'static str,
        model: &'static str,
        /// responses, input, output, cache creation, cache read — counted with jq:
        /// `group_by(.requestId) | map(.[-1].message.usage)` over the non-sidechain
        /// assistant records.
        usage: [u64; 5],
    }
    let infos = [
        Info {
            file: "marot__spotter/tool_heavy.jsonl",
            session_id: "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
            first_timestamp: "2026-02-10T22:57:51.291Z",
            title: "start phoenix in background",
            model: "claude-opus-4-6",
            usage: [4, 54, 212, 17_696, 88_231],
        },
        Info {
            file: "tomjnsn__agentlogs/compact.jsonl",
            session_id: "0e26ec2f-937e-482c-b889-bc126f996913",
            first_timestamp: "2025-10-10T21:56:01.418Z",
            // The /clear command records before it are not typed prompts.
            title: "how are you doing",
            // Before the boundary, and still the session's model.
            model: "claude-sonnet-4-5-20250929",
            // The one response is before the boundary: still billed.
            usage: [1, 10, 148, 2128, 13_522],
        },
        Info {
            file: "tomjnsn__agentlogs/images.jsonl",
            session_id: "794b4c5f-6354-422a-9e6d-c9f18e89e427",
            first_timestamp: "2026-01-10T15:02:23.149Z",
            // The last of its 18 summary records.
            title: "Pricing tier system with Polar.sh integration",
            model: "claude-opus-4-5-20251101",
            usage: [3, 26, 145, 5927, 67_843],
        },
    ];
    for info in infos {
        let imported = import(&read(info.file));
        let name = info.file;
        assert_eq!(imported.session_id(), Some(info.session_id), "{name}");
        assert_eq!(
            imported.first_timestamp(),
            Some(info.first_timestamp),
            "{name}"
        );
        assert_eq!(imported.title(), Some(info.title), "{name}");
        assert_eq!(imported.model(), Some(info.model), "{name}");
        assert!(!imported.is_all_sidechain(), "{name}");
        assert_eq!(imported.agent_id(), None, "{name}");
        let u = imported.usage();
        assert_eq!(
            [
                u.responses,
                u.input_tokens,
                u.output_tokens,
                u.cache_creation_input_tokens,
                u.cache_read_input_tokens
            ],
            info.usage,
            "{name}"
        );
    }
}

#[test]
fn the_title_comes_from_the_latest_metadata_record_of_the_strongest_kind() {
    let prompt = record("user", "u", None, "fix the build please");
    let meta = |kind: &str, key: &str, value: &str| {
        let mut record = json!({"type": kind, "sessionId": "s1"});
        record[key] = json!(value);
        record
    };
    let title = |records: &[Value]| import(&jsonl(records)).title().map(str::to_owned);
    assert_eq!(
        title(std::slice::from_ref(&prompt)).as_deref(),
        Some("fix the build please")
    );
    let summary = meta("summary", "summary", "Build fixes");
    assert_eq!(
        title(&[summary.clone(), prompt.clone()]).as_deref(),
        Some("Build fixes")
    );
    let last_prompt = meta("last-prompt", "lastPrompt", "and the tests");
    assert_eq!(
        title(&[summary.clone(), prompt.clone(), last_prompt.clone()]).as_deref(),
        Some("and the tests")
    );
    let ai = meta("ai-title", "aiTitle", "Fixing CI");
    let custom = meta("custom-title", "customTitle", "my title");
    let custom2 = meta("custom-title", "customTitle", "renamed");
    assert_eq!(
        title(&[custom, prompt.clone(), ai.clone(), custom2, last_prompt]).as_deref(),
        Some("renamed")
    );
    assert_eq!(
        title(&[
            prompt.clone(),
            ai.clone(),
            meta("custom-title", "customTitle", "  ")
        ])
        .as_deref(),
        Some("Fixing CI"),
        "a blank custom title is no title"
    );
    // Harness text is not a typed prompt; a long prompt is cut to 200 characters.
    let caveat = record(
        "user",
        "c",
        None,
        "<local-command-caveat>Caveat: …</local-command-caveat>",
    );
    let long = "é".repeat(300);
    let typed = record("user", "t", Some("c"), &long);
    let cut = title(&[caveat, typed]).expect("a title");
    assert_eq!(cut.chars().count(), 200);
    // Metadata records stay opaque, with a uuid too, and never join the chain.
    let mut tagged = meta("tag", "tag", "release");
    tagged["uuid"] = json!("tag-1");
    let imported = import(&jsonl(&[prompt.clone(), tagged.clone(), ai]));
    assert_eq!(imported.session.tag.as_deref(), Some("release"));
    assert_eq!(ids(&imported.messages), ["u"]);
    assert_eq!(imported.opaque.len(), 2);
    let cleared = import(&jsonl(&[prompt, tagged, meta("tag", "tag", "")]));
    assert_eq!(cleared.session.tag, None, "an empty tag clears it");
}

#[test]
fn usage_counts_each_request_once_with_its_last_fragment() {
    let fragment = |uuid: &str, parent: Option<&str>, request: Option<&str>, output: u64| {
        let mut r = record("assistant", uuid, parent, "part");
        r["message"]["id"] = json!("msg_same");
        r["message"]["usage"] = json!({"input_tokens": 10, "output_tokens": output,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100,
            "cache_creation": {"ephemeral_5m_input_tokens": 3, "ephemeral_1h_input_tokens": 4}});
        if let Some(request) = request {
            r["requestId"] = json!(request);
        }
        r
    };
    let mut error = record("assistant", "e", Some("a3"), "API Error: 529");
    error["isApiErrorMessage"] = json!(true);
    error["message"]["model"] = json!("<synthetic>");
    let mut side = fragment("s", None, Some("req_side"), 50);
    side["isSidechain"] = json!(true);
    let text = jsonl(&[
        record("user", "u", None, "hi"),
        fragment("a1", Some("u"), Some("req_1"), 6),
        fragment("a2", Some("a1"), Some("req_1"), 148),
        // No requestId: keyed by message.id, a separate response.
        fragment("a3", Some("a2"), None, 20),
        error,
        side,
    ]);
    let imported = import(&text);
    let usage = imported.usage();
    assert_eq!(usage.responses, 2);
    assert_eq!(usage.input_tokens, 20);
    assert_eq!(usage.output_tokens, 148 + 20);
    assert_eq!(usage.cache_read_input_tokens, 200);
    // The flat cache-creation field is 0 and the breakdown is not (before 2.1.152).
    assert_eq!(usage.cache_creation_input_tokens, 14);
    assert_eq!(imported.session.sidechain_usage.responses, 1);
    assert_eq!(imported.session.sidechain_usage.output_tokens, 50);
    assert_eq!(imported.model(), Some("claude-sonnet-4-5"));
}

/// An `attachment` record (docs/claude-code-transcripts.md#attachments: chain fields and `attachment: {type, …}`).
fn attachment_record(uuid: &str, parent: &str, attachment: Value) -> Value {
    json!({"type": "attachment", "uuid": uuid, "parentUuid": parent, "isSidechain": false,
           "sessionId": "s1", "timestamp": "2026-01-01T00:00:01Z", "attachment": attachment})
}

#[test]
fn attachment_records_map_to_typed_attachments_or_stay_whole() {
    use threadline_message::{Attachment, DeltaAnnouncement, DeltaItem, TodoItem};
    let kinds = [
        json!({"type": "file", "filename": "src/lib.rs", "content": {"type": "text",
               "file": {"filePath": "/p/src/lib.rs", "content": "pub fn f() {}", "numLines": 1}}}),
        json!({"type": "directory", "path": "src", "content": "lib.rs\nmain.rs\n"}),
        json!({"type": "nested_memory", "path": "/p/src/CLAUDE.md", "displayPath": "src/CLAUDE.md",
               "content": {"type": "Project", "content": "Use tabs."}}),
        json!({"type": "date_change", "newDate": "2026-01-02"}),
        json!({"type": "queued_command", "prompt": [{"type": "text", "text": "also run the tests"}],
               "commandMode": "prompt"}),
        json!({"type": "task_reminder", "itemCount": 1,
               "content": [{"subject": "write docs", "status": "in_progress"}]}),
        json!({"type": "deferred_tools_delta", "addedNames": ["WebFetch"],
               "addedLines": ["WebFetch: fetch a URL"], "removedNames": []}),
        json!({"type": "agent_listing_delta", "addedTypes": ["Explore"], "addedLines": ["Explore: read-only"],
               "removedTypes": [], "isInitial": true, "showConcurrencyNote": false}),
        json!({"type": "mcp_instructions_delta", "addedNames": ["tidewave"],
               "addedBlocks": ["Use tidewave for Elixir."], "removedNames": ["old"]}),
        // Kinds with no typed counterpart, and a known kind with more than a typed one holds.
        json!({"type": "skill_listing", "content": "- pdf: read PDFs", "names": ["pdf"], "skillCount": 1}),
        json!({"type": "prompt_snapshot", "systemPrompt": ["You are Claude Code."], "tools": []}),
        json!({"type": "deferred_tools_delta", "addedNames": ["A"], "readdedNames": ["B"]}),
        json!({"type": "a_kind_from_the_future", "x": 1}),
        // Malformed: fields of the wrong shape.
        json!({"type": "file", "filename": 7, "content": null}),
        json!({"type": "date_change"}),
    ];
    let mut records = vec![record("user", "u", None, "hello")];
    let mut parent = "u".to_owned();
    for (n, attachment) in kinds.iter().enumerate() {
        let uuid = format!("at{n}");
        records.push(attachment_record(&uuid, &parent, attachment.clone()));
        parent = uuid;
    }
    // No `attachment` object at all: kept opaque, reported, the chain runs through it.
    records.push(
        json!({"type": "attachment", "uuid": "bad", "parentUuid": parent,
                        "isSidechain": false, "attachment": "not an object"}),
    );
    records.push(record("assistant", "a", Some("bad"), "ok"));
    let imported = import(&jsonl(&records));

    let attachments: Vec<&Attachment> = imported
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Attachment(a) => Some(&a.attachment),
            _ => None,
        })
        .collect();
    assert_eq!(attachments.len(), kinds.len());
    let whole = |n: usize| Attachment::ClaudeCode {
        attachment_type: kinds[n]["type"].as_str().unwrap_or_default().to_owned(),
        payload: kinds[n].clone(),
    };
    let expected = vec![
        Attachment::File {
            path: "src/lib.rs".into(),
            content: "pub fn f() {}".into(),
            truncated: false,
        },
        Attachment::Directory {
            path: "src".into(),
            entries: vec!["lib.rs".into(), "main.rs".into()],
            truncated: false,
        },
        Attachment::NestedInstructions {
            path: "/p/src/CLAUDE.md".into(),
            content: "Use tabs.".into(),
        },
        Attachment::DateChange {
            date: "2026-01-02".into(),
        },
        Attachment::QueuedCommand {
            prompt: "also run the tests".into(),
        },
        Attachment::TodoReminder {
            items: vec![TodoItem {
                content: "write docs".into(),
                status: "in_progress".into(),
            }],
        },
        Attachment::Delta(DeltaAnnouncement {
            set: "deferred_tools".into(),
            added: vec![DeltaItem {
                name: "WebFetch".into(),
                description: "WebFetch: fetch a URL".into(),
            }],
            removed: vec![],
            initial: false,
        }),
        Attachment::Delta(DeltaAnnouncement {
            set: "agent_listing".into(),
            added: vec![DeltaItem {
                name: "Explore".into(),
                description: "Explore: read-only".into(),
            }],
            removed: vec![],
            initial: true,
        }),
        Attachment::Delta(DeltaAnnouncement {
            set: "mcp_instructions".into(),
            added: vec![DeltaItem {
                name: "tidewave".into(),
                description: "Use tidewave for Elixir.".into(),
            }],
            removed: vec!["old".into()],
            initial: false,
        }),
        whole(9),
        whole(10),
        whole(11),
        whole(12),
        whole(13),
        whole(14),
    ];
    for (n, (got, want)) in attachments.iter().zip(&expected).enumerate() {
        assert_eq!(*got, want, "attachment {n}: {}", kinds[n]);
    }
    // The malformed record is kept and reported; nothing else is a problem.
    assert_eq!(imported.opaque.len(), 1);
    assert_eq!(imported.opaque[0]["uuid"], "bad");
    assert_eq!(imported.problems.len(), 1, "{:?}", imported.problems);
    assert!(matches!(
        &imported.problems[0].kind,
        LineProblemKind::Unmapped { record_type, .. } if record_type == "attachment"
    ));
    // The chain ran through every attachment to the assistant.
    assert_eq!(
        imported.messages.first().map(|m| m.id().as_str()),
        Some("u")
    );
    assert_eq!(imported.messages.last().map(|m| m.id().as_str()), Some("a"));
    assert_eq!(imported.skipped_off_chain, 0);
}

/// A JSON value of any shape, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        "[a-z<>/ ]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One record: a type from every kind docs/claude-code-transcripts.md#record-types names (and one it does not), ids from a
/// small pool, and each known field either well-formed or of a random shape.
fn any_record() -> impl Strategy<Value = Value> {
    let types = prop::sample::select(vec![
        "user",
        "assistant",
        "system",
        "attachment",
        "progress",
        "summary",
        "custom-title",
        "ai-title",
        "last-prompt",
        "tag",
        "queue-operation",
        "file-history-snapshot",
        "x-unknown",
    ]);
    (
        types,
        prop::option::of(0u8..6),
        prop::option::of(0u8..7),
        any::<bool>(),
        prop::collection::vec(
            (
                prop::sample::select(vec![
                    "message",
                    "attachment",
                    "toolUseResult",
                    "subtype",
                    "content",
                    "customTitle",
                    "aiTitle",
                    "lastPrompt",
                    "summary",
                    "tag",
                    "requestId",
                    "timestamp",
                    "sessionId",
                    "agentId",
                    "logicalParentUuid",
                    "compactMetadata",
                    "isApiErrorMessage",
                    "isMeta",
                    "isCompactSummary",
                ]),
                any_json(),
            ),
            0..4,
        ),
    )
        .prop_map(|(kind, id, parent, sidechain, fields)| {
            let mut r = record(
                if kind == "assistant" {
                    "assistant"
                } else {
                    "user"
                },
                &id.map_or_else(String::new, |i| format!("r{i}")),
                None,
                "text",
            );
            r["type"] = json!(kind);
            r["parentUuid"] = parent.map_or(Value::Null, |p| json!(format!("r{p}")));
            r["isSidechain"] = json!(sidechain);
            for (key, value) in fields {
                r[key] = value;
            }
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever the records hold, the import ends without panicking, accounts for every
    /// record, and every accessor answers.
    #[test]
    fn arbitrary_records_never_fail_the_import(records in prop::collection::vec(any_record(), 0..20)) {
        for follow in [false, true] {
            let options = ImportOptions::default().with_compacted_history(follow);
            let imported = import_claude_code(&jsonl(&records), &options);
            prop_assert_eq!(
                imported.messages.len() + imported.opaque.len() + imported.skipped_sidechain
                    + imported.skipped_off_chain + imported.skipped_compacted,
                records.len()
            );
            let _ = (imported.title(), imported.session_id(), imported.agent_id());
            let _ = (imported.first_timestamp(), imported.model(), imported.usage());
            let _ = imported.summaries().count();
        }
    }
}

#[test]
fn fragments_are_put_in_api_block_index_order_when_every_one_has_it() {
    let fragment = |uuid: &str, parent: &str, index: Option<u64>| {
        let mut r = record("assistant", uuid, Some(parent), uuid);
        r["message"]["id"] = json!("msg_one");
        if let Some(index) = index {
            r["apiBlockIndex"] = json!(index);
        }
        r
    };
    let ordered = |records: &[Value]| {
        let imported = import(&jsonl(records));
        ids(&imported.messages)
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let u = record("user", "u", None, "hi");
    assert_eq!(
        ordered(&[
            u.clone(),
            fragment("b", "u", Some(1)),
            fragment("a", "b", Some(0)),
            fragment("c", "a", Some(2)),
        ]),
        ["u", "a", "b", "c"]
    );
    // One fragment without an index: the file's order stands.
    assert_eq!(
        ordered(&[
            u,
            fragment("b", "u", Some(1)),
            fragment("a", "b", None),
            fragment("c", "a", Some(2)),
        ]),
        ["u", "b", "a", "c"]
    );
}

#[test]
fn a_lost_tool_result_line_loses_only_itself_not_the_first_prompt() {
    // In this 2.1 transcript the assistant's tool use (line 5) is followed by progress
    // records, so once its tool result (line 11) is lost no earlier record is a leaf: the
    // chain continues from the record before the broken link.
    let text = read("marot__spotter/tool_heavy.jsonl");
    let whole = import(&text);
    let lines: Vec<&str> = text.lines().collect();
    let lost: Value = serde_json::from_str(lines[10]).expect("JSON");
    assert_eq!(lost["message"]["content"][0]["type"], "tool_result");
    let damaged: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 10)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let imported = import(&damaged);
    let mut expected = whole.messages.clone();
    expected.retain(|m| Some(m.id().as_str()) != lost["uuid"].as_str());
    assert_eq!(expected.len(), whole.messages.len() - 1);
    assert_eq!(ids(&imported.messages), ids(&expected));
    assert_eq!(imported.messages, expected);
    assert_eq!(
        imported.problems,
        [LineProblem {
            line: 11,
            kind: LineProblemKind::BrokenChain {
                missing_parent: lost["uuid"].as_str().expect("a uuid").to_owned(),
            },
        }]
    );
}

#[test]
fn a_parentless_record_appended_to_a_real_transcript_keeps_the_conversation_before_it() {
    let text = read("d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let whole = import(&text);
    assert!(whole.messages.len() > 2);
    // What a crash between writing a record and linking it leaves: a parentless, empty user
    // record at the end of the file.
    let appended = json!({"type": "user", "uuid": "00000000-0000-4000-8000-0000000000aa",
        "parentUuid": null, "timestamp": "2025-09-01T00:00:00.000Z", "sessionId": "s",
        "message": {"role": "user", "content": ""}});
    let damaged = format!("{text}{appended}\n");
    let imported = import(&damaged);
    assert_eq!(
        imported.messages[..whole.messages.len()],
        whole.messages[..],
        "the conversation before it is kept"
    );
    assert_eq!(
        imported.messages.last().map(|m| m.id().as_str()),
        Some("00000000-0000-4000-8000-0000000000aa")
    );
    let lines = damaged.lines().count();
    assert_eq!(
        imported.problems,
        [LineProblem {
            line: lines,
            kind: LineProblemKind::UnlinkedRecord,
        }]
    );
    assert_eq!(
        imported.problems[0].to_string(),
        format!(
            "line {lines}: no parent although the conversation had started; the chain continues from the record before"
        )
    );
}

#[test]
fn claude_code_2_1_attachments_keep_the_text_claude_code_rendered() {
    // Claude Code 2.1.328 itself wrote this transcript (fixtures/claude-code-2.1.328).
    let text = std::fs::read_to_string(
        fixtures::repo_root().join("fixtures/claude-code-2.1.328/compact-opus-4-8.jsonl"),
    )
    .expect("the fixture");
    let imported = import(&text);
    let rendered: Vec<(&str, &[String], Option<&str>, bool)> = imported
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Attachment(a) => match &a.attachment {
                threadline_message::Attachment::ClaudeCodeRendered {
                    attachment_type,
                    texts,
                    role,
                    beside_tool_result,
                    ..
                } => Some((
                    attachment_type.as_str(),
                    texts.as_slice(),
                    role.as_deref(),
                    *beside_tool_result,
                )),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let context = rendered
        .iter()
        .find(|(kind, ..)| *kind == "session_context")
        .expect("the session context");
    assert_eq!(context.2, Some("user"));
    assert!(
        context.1[0].starts_with(
            "<system-reminder>\nAs you answer the user's questions, you can use the following context:"
        ),
        "{:?}",
        context.1
    );
    let attribution = rendered
        .iter()
        .find(|(kind, ..)| *kind == "remote_session_change")
        .expect("the commit attribution");
    assert!(attribution.3, "rendered beside the tool results");
    assert!(
        rendered
            .iter()
            .any(|(kind, _, role, _)| *kind == "environment" && *role == Some("system"))
    );
    // A record without `rendered` (a prompt snapshot) stays as it was written.
    assert!(imported.messages.iter().any(|m| matches!(m,
        Message::Attachment(a) if matches!(&a.attachment,
            threadline_message::Attachment::ClaudeCode { attachment_type, .. } if attachment_type == "prompt_snapshot"))));
}

/// A message as compared with what Claude Code sent: no `cache_control`, and a content of one
/// plain text block written as its string (a marker forces that form on a string content).
fn as_compared(message: &Value) -> Value {
    let mut m = threadline_testkit::request_json::without_cache_control(message);
    if let Some([only]) = m["content"].as_array().map(Vec::as_slice)
        && only["type"] == "text"
        && only.as_object().is_some_and(|o| o.len() == 2)
    {
        let text = only["text"].clone();
        m["content"] = text;
    }
    m
}

/// The fixture's transcript through its first `end` lines, imported, and the `messages` of
/// the request Claude Code sends next according to it.
fn next_messages(lines: &[&str], end: usize) -> Option<Vec<Value>> {
    let text: String = lines[..end].iter().map(|l| format!("{l}\n")).collect();
    let next = import(&text).next_claude_code_request()?;
    Some(
        next.messages
            .iter()
            .map(|m| as_compared(&serde_json::to_value(m).expect("serializes")))
            .collect(),
    )
}

#[test]
fn the_requests_claude_code_2_1_328_sent_are_reproduced_from_the_transcript_it_wrote() {
    // Captured by `cargo xtask claude-code` (scenario `compact`, claude-opus-5-5): the
    // transcript Claude Code wrote and the `messages` of every body the mock received.
    let dir = fixtures::repo_root().join("fixtures/claude-code-2.1.328");
    let text = std::fs::read_to_string(dir.join("compact-opus-5-5.jsonl")).expect("transcript");
    let sent: Vec<Vec<Value>> =
        std::fs::read_to_string(dir.join("compact-opus-5-5.requests.jsonl"))
            .expect("requests")
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("json"))
            // The compaction summary request leaves no record of its own.
            .filter(|body| {
                !body["messages"]
                    .to_string()
                    .contains("CRITICAL: Respond with TEXT ONLY")
            })
            .map(|body| {
                body["messages"]
                    .as_array()
                    .expect("messages")
                    .iter()
                    .map(as_compared)
                    .collect()
            })
            .collect();
    let lines: Vec<&str> = text.lines().collect();
    let records: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let requests: Vec<usize> = (0..records.len())
        .filter(|&i| records[i]["type"] == "api-request")
        .collect();
    assert_eq!((requests.len(), sent.len()), (3, 3));
    let imported = import(&text);
    assert_eq!(imported.requests.len(), 3);
    assert!((0..3).all(|i| {
        imported.requests.messages(i).is_some_and(|m| m.is_ok())
            && imported.requests[i]
                .shape
                .as_ref()
                .is_some_and(|s| s.hash_verified)
    }));

    // As it stood when each request was sent (Claude Code writes the record first): exact.
    for (n, (&line, want)) in requests.iter().zip(&sent).enumerate() {
        let got = next_messages(&lines, line + 1).expect("recorded");
        assert_eq!(&got, want, "request {n}");
    }

    // Before the records Claude Code wrote for each request: predicted from the conversation
    // and the earlier records. The first request differs only by the effort Claude Code puts
    // on its first system message, which nothing before its own record says.
    for (n, (&line, want)) in requests.iter().zip(&sent).enumerate() {
        let first = (0..line)
            .rev()
            .take_while(|&i| {
                records[i]["type"] == "api-request-blob"
                    || records[i]["type"] == "api-request-shape"
            })
            .last()
            .unwrap_or(line);
        let got = next_messages(&lines, first).expect("a 2.1.3xx transcript");
        if n == 0 {
            let mut without_effort = want.clone();
            let system = without_effort[1].as_object_mut().expect("system message");
            assert_eq!(
                system.remove("output_config"),
                Some(json!({"effort": "medium"}))
            );
            assert_eq!(got, without_effort, "request 0");
        } else {
            assert_eq!(&got, want, "request {n}");
        }
    }
}

proptest! {
    /// A real 2.1.328 transcript with lines lost anywhere and cut anywhere: the import and the
    /// next request never panic, and a next request built on a recorded one starts with
    /// exactly that request's messages.
    #[test]
    fn a_damaged_claude_code_2_1_328_transcript_still_gives_a_next_request_that_extends_what_was_sent(
        lost in prop::collection::vec(prop::bool::weighted(0.15), 0..120),
        cut in 0usize..200,
    ) {
        let text = std::fs::read_to_string(
            fixtures::repo_root().join("fixtures/claude-code-2.1.328/compact-opus-5-5.jsonl"),
        )
        .expect("the fixture");
        let lines: Vec<&str> = text.lines().collect();
        let kept: String = lines
            .iter()
            .enumerate()
            .take(cut.min(lines.len()))
            // Each line is lost with probability 0.15.
            .filter(|(i, _)| !lost.get(*i).copied().unwrap_or(false))
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let imported = import(&kept);
        if let Some(next) = imported.next_claude_code_request() {
            prop_assert!(next.appended <= next.messages.len());
            if let Some(anchor) = next.anchor {
                let recorded = imported.requests.messages(anchor).expect("a request").expect("an anchor rebuilds");
                prop_assert_eq!(&next.messages[..recorded.len()], &recorded[..]);
                prop_assert_eq!(next.messages.len(), recorded.len() + next.appended);
            }
        }
    }
}
