//! Placing records: the graph of `uuid`/`parentUuid`, the leaf, the walk to the root, and the
//! records a plain walk misses (the other fragments of a response and the results of parallel
//! tool calls).

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::lines::Record;
use crate::transcript::{LineProblem, LineProblemKind};

/// What happens to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// On the main chain, or a sidechain record when sidechains are included.
    Imported,
    /// Not a message: no `uuid` (summaries, snapshots), a metadata record type (titles,
    /// tags, queue operations), or a `progress` record of the conversation; kept opaque.
    Unchained,
    /// A sidechain record, left out.
    SkippedSidechain,
    /// On another branch, or an earlier copy of a duplicated `uuid`.
    SkippedOffChain,
    /// Before the last compaction boundary of the main chain (the history the compact
    /// summary replaced), left out.
    SkippedCompacted,
}

/// Where each record goes, and what the placing found.
pub(super) struct Placement {
    /// One place per record.
    pub(super) places: Vec<Place>,
    /// Bridged gaps and cycles.
    pub(super) problems: Vec<LineProblem>,
    /// Every conversation record of the file is a sidechain (a sub-agent's own file): they
    /// were placed as the main chain.
    pub(super) all_sidechain: bool,
    /// Per record: pulled onto the chain by [`pull_in_parallel_records`] (off the walk).
    pub(super) pulled: Vec<bool>,
}

/// How to walk the graph.
#[derive(Debug, Clone, Copy)]
pub(super) struct Walk {
    /// Import sidechain records too.
    pub(super) include_sidechains: bool,
    /// Follow a compaction boundary's `logicalParentUuid` into the history before it.
    pub(super) follow_compactions: bool,
}

/// The record types that become messages and may end the main chain.
pub(super) fn conversation_type(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| matches!(*t, "user" | "assistant" | "system" | "attachment"))
}

/// Record types that are session metadata, never part of the conversation graph even when a
/// store variant gives them a `uuid` (docs/claude-code-transcripts.md#record-types).
pub(super) fn is_metadata_type(object: &Map<String, Value>) -> bool {
    const METADATA: &[&str] = &[
        "summary",
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "custom-title",
        "ai-title",
        "last-prompt",
        "tag",
        "agent-name",
        "agent-color",
        "permission-mode",
        "mode",
        "atis-latch",
        "content-replacement",
        "pr-link",
        "worktree-state",
        "cost-state",
        "bridge-session",
        "agent_metadata",
    ];
    object
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| METADATA.contains(&t))
}

pub(super) fn uuid(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("uuid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
}

pub(super) fn is_sidechain(object: &Map<String, Value>) -> bool {
    object.get("isSidechain").and_then(Value::as_bool) == Some(true)
}

fn is_compact_boundary(object: &Map<String, Value>) -> bool {
    object.get("type").and_then(Value::as_str) == Some("system")
        && object.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
}

/// The record before this one: `parentUuid`, or — when compactions are followed —
/// `logicalParentUuid` where that is null (a compaction boundary).
fn parent(object: &Map<String, Value>, follow_compactions: bool) -> Option<&str> {
    let non_empty = |key| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|u: &&str| !u.is_empty())
    };
    non_empty("parentUuid").or_else(|| {
        follow_compactions
            .then(|| non_empty("logicalParentUuid"))
            .flatten()
    })
}

/// Whether the file is a sub-agent's own: it has user or assistant records, all of them
/// sidechains.
fn all_sidechain(records: &[Record]) -> bool {
    let mut conversation = records.iter().filter(|r| {
        uuid(&r.object).is_some()
            && matches!(
                r.object.get("type").and_then(Value::as_str),
                Some("user" | "assistant")
            )
    });
    conversation.next().is_some_and(|first| {
        is_sidechain(&first.object) && conversation.all(|r| is_sidechain(&r.object))
    })
}

/// Where each record goes, and the places where the chain had to be bridged.
pub(super) fn place_records(records: &[Record], walk: Walk) -> Placement {
    let all_sidechain = all_sidechain(records);
    // In a sub-agent's file the sidechain is the conversation.
    let side = |object: &Map<String, Value>| !all_sidechain && is_sidechain(object);
    let follow = walk.follow_compactions;
    let in_graph =
        |object: &Map<String, Value>| uuid(object).is_some() && !is_metadata_type(object);

    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut parents: HashSet<&str> = HashSet::new();
    for (index, record) in records.iter().enumerate() {
        if !in_graph(&record.object) {
            continue;
        }
        if let Some(id) = uuid(&record.object) {
            by_uuid.insert(id, index);
            if !side(&record.object) {
                parents.extend(parent(&record.object, follow));
            }
        }
    }
    // The last copy of a `uuid`, in the graph.
    let canonical = |index: usize, record: &Record| {
        in_graph(&record.object)
            && uuid(&record.object).is_some_and(|id| by_uuid.get(id) == Some(&index))
    };
    let is_leaf = |index: usize, record: &Record| {
        !side(&record.object)
            && canonical(index, record)
            && uuid(&record.object).is_some_and(|id| !parents.contains(id))
    };
    let leaf = records
        .iter()
        .enumerate()
        .rev()
        .find(|(i, r)| is_leaf(*i, r) && conversation_type(&r.object).is_some())
        .or_else(|| {
            records
                .iter()
                .enumerate()
                .rev()
                .find(|(i, r)| is_leaf(*i, r))
        })
        .map(|(i, _)| i);

    let cycles = on_cycle(records, &by_uuid, follow);
    // Where a broken link continues: the records the walk may bridge to, by kind. Whether a
    // record is one does not change during the walk, except that a record on the chain is no
    // longer one; so each set is built once, a record leaves it when the walk reaches it, and
    // each bridge is one look-up (the nearest member before the break) instead of a scan of
    // everything before it. The walk is O(N log N) whatever the file.
    let mut open_leaves: BTreeSet<usize> = BTreeSet::new();
    let mut open_records: BTreeSet<usize> = BTreeSet::new();
    for (i, record) in records.iter().enumerate() {
        if conversation_type(&record.object).is_none() {
            continue;
        }
        // A conversation record that nothing follows: what a lost line leaves behind.
        if is_leaf(i, record) {
            open_leaves.insert(i);
        }
        // A conversation record of the chain's kind, not on a cycle: the record before.
        if !cycles[i] && !side(&record.object) && canonical(i, record) {
            open_records.insert(i);
        }
    }
    let nearest_before =
        |open: &BTreeSet<usize>, index: usize| open.range(..index).next_back().copied();
    let mut on_chain = vec![false; records.len()];
    let mut problems = Vec::new();
    let mut next = leaf;
    let mut previous: Option<usize> = None;
    // The last compaction boundary on the chain, when the walk stopped there.
    let mut boundary: Option<usize> = None;
    while let Some(index) = next {
        if on_chain[index] {
            // Back at a record of the chain: a cycle, closed by the record before naming an
            // ancestor of its own (unless a bridge led there: then it is a branch joining).
            if let Some(closing) = previous.filter(|&c| cycles[c]) {
                problems.push(cycle_problem(&records[closing], closing == index, false));
            }
            break;
        }
        on_chain[index] = true;
        open_leaves.remove(&index);
        open_records.remove(&index);
        previous = Some(index);
        if !follow && is_compact_boundary(&records[index].object) {
            // The request starts at the summary after the boundary: the history before it
            // is what the summary replaced.
            boundary = Some(index);
            break;
        }
        let Some(parent_id) = parent(&records[index].object, follow) else {
            // A root. After the conversation has started, a record without a parent is a lost
            // link (a crash between writing a record and linking it), not a new conversation:
            // continue from the record before it (the nearest earlier conversation record of
            // the chain's kind, not on it yet nor on a cycle), so the history before it is not
            // lost.
            next = nearest_before(&open_records, index);
            if next.is_some() {
                problems.push(LineProblem {
                    line: records[index].line,
                    kind: LineProblemKind::UnlinkedRecord,
                });
            }
            continue;
        };
        next = by_uuid.get(parent_id).copied().or_else(|| {
            // The parent is not in the file: a lost line (cut, malformed or removed), or a
            // parent in an earlier session's file. Continue from the latest earlier record that
            // nothing follows, if there is one (a lost line leaves exactly such a record
            // behind), else from the record before (a lost line whose parent still has
            // progress records after it).
            let bridge = nearest_before(&open_leaves, index)
                .or_else(|| nearest_before(&open_records, index));
            if bridge.is_some() {
                problems.push(LineProblem {
                    line: records[index].line,
                    kind: LineProblemKind::BrokenChain {
                        missing_parent: parent_id.to_owned(),
                    },
                });
            }
            bridge
        });
    }

    let walked = on_chain.clone();
    pull_in_parallel_records(records, &mut on_chain, |i, r| {
        !side(&r.object) && canonical(i, r)
    });
    let pulled = on_chain
        .iter()
        .zip(&walked)
        .map(|(&now, &before)| now && !before)
        .collect();

    // What the boundary cut off: its logical parent and that record's ancestors.
    let mut compacted = vec![false; records.len()];
    let mut next = boundary
        .and_then(|b| parent(&records[b].object, true))
        .and_then(|id| by_uuid.get(id).copied());
    while let Some(index) = next {
        if compacted[index] || on_chain[index] {
            break;
        }
        compacted[index] = true;
        next = parent(&records[index].object, false).and_then(|id| by_uuid.get(id).copied());
    }

    // Cycles no chain leads to: their records are on no chain; say so instead of dropping
    // them silently.
    for (index, record) in records.iter().enumerate() {
        if cycles[index] && !on_chain[index] && !compacted[index] && !side(&record.object) {
            let self_parented = parent(&record.object, follow) == uuid(&record.object);
            problems.push(cycle_problem(record, self_parented, true));
        }
    }

    let places = records
        .iter()
        .enumerate()
        .map(|(index, record)| {
            if !in_graph(&record.object) {
                Place::Unchained
            } else if side(&record.object) {
                if walk.include_sidechains {
                    Place::Imported
                } else {
                    Place::SkippedSidechain
                }
            } else if record_type(&record.object) == Some("progress") {
                // UI progress: on the chain (a hook can be its root) or a side leaf of it;
                // never a message, always kept.
                Place::Unchained
            } else if on_chain[index] {
                Place::Imported
            } else if compacted[index] {
                Place::SkippedCompacted
            } else {
                Place::SkippedOffChain
            }
        })
        .collect();
    Placement {
        places,
        problems,
        all_sidechain,
        pulled,
    }
}

/// The `tool_use` ids of an assistant record, or the `tool_use_id`s its `tool_result` blocks
/// answer for a user record.
fn block_ids<'a>(object: &'a Map<String, Value>, block_type: &str, key: &str) -> Vec<&'a str> {
    object
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some(block_type))
                .filter_map(|b| b.get(key).and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

fn message_id(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("message")
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
}

fn record_type(object: &Map<String, Value>) -> Option<&str> {
    object.get("type").and_then(Value::as_str)
}

/// Adds to the chain what a `parentUuid` walk misses since Claude Code 2.1 (docs/claude-code-transcripts.md#parallel-tool-calls):
/// (a) every fragment of a response (same `message.id`) of which one fragment is on the
/// chain, and (b) every user record holding the `tool_result` of a `tool_use` of an on-chain
/// assistant record. Parallel tool results each name the fragment of their own `tool_use`
/// as parent, so the graph branches and the walk follows only one of them. `eligible` says
/// which records may be pulled in (the last copy of a `uuid`, of the chain's own kind). One
/// pass over the records for each step: O(N).
fn pull_in_parallel_records(
    records: &[Record],
    on_chain: &mut [bool],
    eligible: impl Fn(usize, &Record) -> bool,
) {
    // (a) The other fragments of on-chain responses.
    let chained_responses: HashSet<&str> = records
        .iter()
        .enumerate()
        .filter(|(i, r)| on_chain[*i] && record_type(&r.object) == Some("assistant"))
        .filter_map(|(_, r)| message_id(&r.object))
        .collect();
    for (index, record) in records.iter().enumerate() {
        if !on_chain[index]
            && record_type(&record.object) == Some("assistant")
            && message_id(&record.object).is_some_and(|id| chained_responses.contains(id))
            && eligible(index, record)
        {
            on_chain[index] = true;
        }
    }
    // (b) The results of their tool uses.
    let uses: HashSet<&str> = records
        .iter()
        .enumerate()
        .filter(|(i, r)| on_chain[*i] && record_type(&r.object) == Some("assistant"))
        .flat_map(|(_, r)| block_ids(&r.object, "tool_use", "id"))
        .collect();
    if uses.is_empty() {
        return;
    }
    let answered: HashSet<&str> = records
        .iter()
        .enumerate()
        .filter(|(i, r)| on_chain[*i] && record_type(&r.object) == Some("user"))
        .flat_map(|(_, r)| block_ids(&r.object, "tool_result", "tool_use_id"))
        .collect();
    // The last record answering each unanswered use.
    let mut answer: HashMap<&str, usize> = HashMap::new();
    for (index, record) in records.iter().enumerate() {
        if on_chain[index] || record_type(&record.object) != Some("user") {
            continue;
        }
        for id in block_ids(&record.object, "tool_result", "tool_use_id") {
            if uses.contains(id) && !answered.contains(id) && eligible(index, record) {
                answer.insert(id, index);
            }
        }
    }
    for index in answer.into_values() {
        on_chain[index] = true;
    }
}

fn cycle_problem(record: &Record, self_parented: bool, dropped: bool) -> LineProblem {
    LineProblem {
        line: record.line,
        kind: LineProblemKind::ParentCycle {
            uuid: uuid(&record.object).unwrap_or_default().to_owned(),
            self_parented,
            dropped,
        },
    }
}

/// Which records are their own ancestor. Each record has at most one parent (the last record
/// with the `uuid` it names), so the records and their parents form a functional graph: one
/// walk per record, each record visited once over all walks (O(N)).
fn on_cycle(
    records: &[Record],
    by_uuid: &HashMap<&str, usize>,
    follow_compactions: bool,
) -> Vec<bool> {
    const UNSEEN: usize = usize::MAX;
    const DONE: usize = usize::MAX - 1;
    let parent_of = |index: usize| {
        parent(&records[index].object, follow_compactions).and_then(|p| by_uuid.get(p).copied())
    };
    let mut cycle = vec![false; records.len()];
    // UNSEEN, DONE, or the position of the record on the current walk.
    let mut state = vec![UNSEEN; records.len()];
    let mut walk = Vec::new();
    for start in 0..records.len() {
        walk.clear();
        let mut current = Some(start);
        while let Some(index) = current {
            match state[index] {
                UNSEEN => {
                    state[index] = walk.len();
                    walk.push(index);
                    current = parent_of(index);
                }
                DONE => break,
                position => {
                    // Back on this walk: everything from there on is the cycle.
                    for &on in &walk[position..] {
                        cycle[on] = true;
                    }
                    break;
                }
            }
        }
        for &index in &walk {
            state[index] = DONE;
        }
    }
    cycle
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: usize, json: Value) -> Record {
        let Value::Object(object) = json else {
            panic!("an object")
        };
        Record { line, object }
    }

    #[test]
    fn the_newest_leaf_wins_and_cycles_end_the_walk() {
        let records = vec![
            record(
                1,
                serde_json::json!({"type":"user","uuid":"a","parentUuid":"c"}),
            ),
            record(
                2,
                serde_json::json!({"type":"assistant","uuid":"b","parentUuid":"a"}),
            ),
            record(
                3,
                serde_json::json!({"type":"user","uuid":"c","parentUuid":"b"}),
            ),
            record(
                4,
                serde_json::json!({"type":"user","uuid":"d","parentUuid":"a"}),
            ),
        ];
        // `d` is the only leaf; `a` → `c` → `b` → `a` is a cycle.
        assert_eq!(
            place_records(
                &records,
                Walk {
                    include_sidechains: false,
                    follow_compactions: false
                }
            )
            .places,
            vec![
                Place::Imported,
                Place::Imported,
                Place::Imported,
                Place::Imported
            ]
        );
    }

    // Hostile files, at sizes where a quadratic import would take minutes.
    const WALK: Walk = Walk {
        include_sidechains: false,
        follow_compactions: false,
    };

    /// A file where every bridge across a missing parent finds no leaf before it: `c_i`
    /// (i > 0) names a parent that is not in the file, and a progress record after each
    /// `c_i` but the last makes `c_i` a parent, so no earlier conversation record is a leaf.
    /// A scan of everything before each break would make this O(K²) (about 10⁸ record
    /// checks for K = 10 000); the bridges are each one look-up.
    #[test]
    fn bridges_across_many_missing_parents_are_each_one_look_up() {
        const K: usize = 10_000;
        let mut records = Vec::with_capacity(2 * K);
        for i in 0..K {
            let parent = (i > 0).then(|| format!("gone_{i}"));
            records.push(record(
                records.len() + 1,
                serde_json::json!({"type": "user", "uuid": format!("c_{i}"), "parentUuid": parent}),
            ));
            if i + 1 < K {
                records.push(record(
                    records.len() + 1,
                    serde_json::json!({"type": "progress", "uuid": format!("p_{i}"),
                                       "parentUuid": format!("c_{i}")}),
                ));
            }
        }
        let placement = place_records(&records, WALK);
        let imported = placement
            .places
            .iter()
            .filter(|p| **p == Place::Imported)
            .count();
        assert_eq!(imported, K, "every user record is on the bridged chain");
        assert_eq!(placement.problems.len(), K - 1);
        assert!(placement.problems.iter().all(|p| matches!(
            &p.kind,
            LineProblemKind::BrokenChain { missing_parent } if missing_parent.starts_with("gone_")
        )));
    }

    /// A file where every lost link is bridged past many records: `x_i` names `y_i`, a
    /// progress record without a parent written after all the `x`s, so each `y_i` continues
    /// from the record before it, `x_(i-1)`, across every `y` before it and every `x` already
    /// on the chain. A scan back from each `y_i` would make this O(K²).
    #[test]
    fn bridges_across_many_lost_links_are_each_one_look_up() {
        const K: usize = 10_000;
        let mut records = Vec::with_capacity(2 * K + 1);
        for i in 0..K {
            records.push(record(
                records.len() + 1,
                serde_json::json!({"type": "user", "uuid": format!("x_{i}"),
                                   "parentUuid": format!("y_{i}")}),
            ));
        }
        for i in 0..K {
            records.push(record(
                records.len() + 1,
                serde_json::json!({"type": "progress", "uuid": format!("y_{i}")}),
            ));
        }
        records.push(record(
            records.len() + 1,
            serde_json::json!({"type": "user", "uuid": "last", "parentUuid": format!("x_{}", K - 1)}),
        ));
        let placement = place_records(&records, WALK);
        let imported = placement
            .places
            .iter()
            .filter(|p| **p == Place::Imported)
            .count();
        assert_eq!(imported, K + 1, "every user record is on the bridged chain");
        // Every `y` but the first continues from the `x` before its own.
        assert_eq!(placement.problems.len(), K - 1);
        assert!(
            placement
                .problems
                .iter()
                .all(|p| p.kind == LineProblemKind::UnlinkedRecord)
        );
    }
}
