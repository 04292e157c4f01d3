//! Placing records: the graph of `uuid`/`parentUuid`, the leaf, and the walk to the root.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::lines::Record;
use crate::transcript::{LineProblem, LineProblemKind};

/// What happens to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// On the main chain, or a sidechain record when sidechains are included.
    Imported,
    /// No `uuid`: not part of any chain (summaries, snapshots); kept opaque.
    Unchained,
    /// A sidechain record, left out.
    SkippedSidechain,
    /// On another branch, or an earlier copy of a duplicated `uuid`.
    SkippedOffChain,
}

/// The record types that become messages and may end the main chain.
pub(super) fn conversation_type(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| matches!(*t, "user" | "assistant" | "system"))
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

/// The record before this one: `parentUuid`, or `logicalParentUuid` where that is null (a
/// compaction boundary).
pub(super) fn parent(object: &Map<String, Value>) -> Option<&str> {
    let non_empty = |key| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|u: &&str| !u.is_empty())
    };
    non_empty("parentUuid").or_else(|| non_empty("logicalParentUuid"))
}

/// Where each record goes, and the places where the chain had to be bridged.
pub(super) fn place_records(
    records: &[Record],
    include_sidechains: bool,
) -> (Vec<Place>, Vec<LineProblem>) {
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut parents: HashSet<&str> = HashSet::new();
    for (index, record) in records.iter().enumerate() {
        if let Some(id) = uuid(&record.object) {
            by_uuid.insert(id, index);
            if !is_sidechain(&record.object) {
                parents.extend(parent(&record.object));
            }
        }
    }
    let is_leaf = |index: usize, record: &Record| {
        !is_sidechain(&record.object)
            && uuid(&record.object)
                .is_some_and(|id| by_uuid.get(id) == Some(&index) && !parents.contains(id))
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

    let cycles = on_cycle(records, &by_uuid);
    let mut on_chain = vec![false; records.len()];
    let mut bridges = Vec::new();
    let mut next = leaf;
    let mut previous: Option<usize> = None;
    while let Some(index) = next {
        if on_chain[index] {
            // Back at a record of the chain: a cycle, closed by the record before naming an
            // ancestor of its own (unless a bridge led there: then it is a branch joining).
            if let Some(closing) = previous.filter(|&c| cycles[c]) {
                bridges.push(cycle_problem(&records[closing], closing == index, false));
            }
            break;
        }
        on_chain[index] = true;
        previous = Some(index);
        let Some(parent_id) = parent(&records[index].object) else {
            break; // a root
        };
        next = by_uuid.get(parent_id).copied().or_else(|| {
            // The parent is not in the file: a lost line (cut, malformed or removed), or a
            // parent in an earlier session's file. Continue from the latest earlier record that
            // nothing follows, if there is one; a lost line leaves exactly such a record behind.
            let bridge = (0..index).rev().find(|&i| {
                !on_chain[i]
                    && is_leaf(i, &records[i])
                    && conversation_type(&records[i].object).is_some()
            });
            if bridge.is_some() {
                bridges.push(LineProblem {
                    line: records[index].line,
                    kind: LineProblemKind::BrokenChain {
                        missing_parent: parent_id.to_owned(),
                    },
                });
            }
            bridge
        });
    }

    // Cycles no chain leads to: their records are on no chain; say so instead of dropping
    // them silently.
    for (index, record) in records.iter().enumerate() {
        if cycles[index] && !on_chain[index] && !is_sidechain(&record.object) {
            let self_parented = parent(&record.object) == uuid(&record.object);
            bridges.push(cycle_problem(record, self_parented, true));
        }
    }

    let places = records
        .iter()
        .zip(on_chain)
        .map(|(record, on_chain)| {
            if uuid(&record.object).is_none() {
                Place::Unchained
            } else if is_sidechain(&record.object) {
                if include_sidechains {
                    Place::Imported
                } else {
                    Place::SkippedSidechain
                }
            } else if on_chain {
                Place::Imported
            } else {
                Place::SkippedOffChain
            }
        })
        .collect();
    (places, bridges)
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
fn on_cycle(records: &[Record], by_uuid: &HashMap<&str, usize>) -> Vec<bool> {
    const UNSEEN: usize = usize::MAX;
    const DONE: usize = usize::MAX - 1;
    let parent_of =
        |index: usize| parent(&records[index].object).and_then(|p| by_uuid.get(p).copied());
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
            place_records(&records, false).0,
            vec![
                Place::Imported,
                Place::Imported,
                Place::Imported,
                Place::Imported
            ]
        );
    }
}
