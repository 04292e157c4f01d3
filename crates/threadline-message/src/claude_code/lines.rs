//! Reading: each line of the file parsed into a record, or reported.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use threadline_wire::ContentBlock;

use crate::message::Message;
use crate::system::SystemKind;

use super::ImportOptions;
use super::ImportResult;
use super::graph::{Place, Placement, Walk, conversation_type, place_records, uuid};
use super::records::{Mapped, map_record};
use super::request_records::recorded_requests;
use super::summary::SessionInfo;
use crate::transcript::{LineContent, LineProblem, LineProblemKind, RawLine, is_blank, too_long};

/// A record: a JSON object and the line it came from.
pub(super) struct Record {
    pub(super) line: usize,
    pub(super) object: Map<String, Value>,
}

impl Record {
    /// The records of `values` (JSON objects), as lines 1, 2, … of a file: for tests.
    #[cfg(test)]
    pub(super) fn numbered(values: Vec<Value>) -> Vec<Record> {
        values
            .into_iter()
            .enumerate()
            .map(|(n, v)| Record {
                line: n + 1,
                object: v.as_object().cloned().expect("an object"),
            })
            .collect()
    }

    /// The record's `type` (empty without one).
    pub(super) fn kind(&self) -> &str {
        self.object
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

#[derive(Default)]
pub(super) struct ParsedLines {
    pub(super) records: Vec<Record>,
    pub(super) problems: Vec<LineProblem>,
    pub(super) last_line: usize,
}

impl ParsedLines {
    pub(super) fn push(&mut self, line: RawLine<'_>, max_line_bytes: usize) {
        self.last_line = line.number;
        let problem = |kind| LineProblem {
            line: line.number,
            kind,
        };
        let bytes = match line.content {
            LineContent::TooLong(len) => {
                self.problems.push(problem(too_long(len, max_line_bytes)));
                return;
            }
            LineContent::Bytes(bytes) => bytes,
        };
        if is_blank(bytes) {
            return;
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(object)) => self.records.push(Record {
                line: line.number,
                object,
            }),
            Ok(_) => self.problems.push(problem(LineProblemKind::Malformed {
                error: "not a JSON object".to_owned(),
            })),
            Err(_) if !line.terminated => self.problems.push(problem(LineProblemKind::CutLastLine)),
            Err(error) => self.problems.push(problem(LineProblemKind::Malformed {
                error: error.to_string(),
            })),
        }
    }

    pub(super) fn import(self, options: &ImportOptions) -> ImportResult {
        let Placement {
            places,
            problems: mut bridges,
            all_sidechain,
            pulled,
        } = place_records(
            &self.records,
            Walk {
                include_sidechains: options.include_sidechains,
                follow_compactions: options.follow_compactions,
            },
        );
        let session = SessionInfo::gather(&self.records, all_sidechain);
        let requests = recorded_requests(&self.records, session.agent_id.as_deref());
        let mut result = ImportResult {
            problems: self.problems,
            session,
            requests,
            ..ImportResult::default()
        };
        result.problems.append(&mut bridges);
        // Per message: whether it was pulled onto the chain off the walk.
        let mut pulled_messages = Vec::new();
        // Per message: its `apiBlockIndex` (recent 2.1), the place of its block in the response.
        let mut block_indices = Vec::new();
        // Per message: the line of its record.
        let mut message_lines = Vec::new();
        let preserved = if options.follow_compactions {
            HashSet::new()
        } else {
            preserved_uuids(&self.records, &places)
        };
        // The records the last compaction kept (`compactMetadata.preservedMessages`), mapped:
        // they go after the compaction's summary.
        let mut kept: Vec<Message> = Vec::new();
        for ((record, place), pulled) in self.records.into_iter().zip(places).zip(pulled) {
            match place {
                Place::Imported => {
                    let block_index = record.object.get("apiBlockIndex").and_then(Value::as_u64);
                    let line = record.line;
                    match map_record(record, &mut result.problems) {
                        Mapped::Message(message) => {
                            result.messages.push(*message);
                            message_lines.push(line);
                            pulled_messages.push(pulled);
                            block_indices.push(block_index);
                        }
                        Mapped::Opaque(object) => result.opaque.push(Value::Object(object)),
                    }
                }
                Place::Unchained => {
                    if let Some(record_type) = conversation_type(&record.object) {
                        result.problems.push(LineProblem {
                            line: record.line,
                            kind: LineProblemKind::Unmapped {
                                record_type: record_type.to_owned(),
                                error: "no `uuid`".to_owned(),
                            },
                        });
                    }
                    result.opaque.push(Value::Object(record.object));
                }
                Place::SkippedSidechain => result.skipped_sidechain += 1,
                Place::SkippedOffChain => result.skipped_off_chain += 1,
                Place::SkippedCompacted
                    if uuid(&record.object).is_some_and(|u| preserved.contains(u)) =>
                {
                    if let Mapped::Message(message) = map_record(record, &mut result.problems) {
                        kept.push(*message);
                    }
                }
                Place::SkippedCompacted => result.skipped_compacted += 1,
            }
        }
        if !kept.is_empty() {
            // After the summary (the first compact-summary user message), or first.
            let at = result
                .messages
                .iter()
                .position(|m| matches!(m, Message::User(u) if u.is_compact_summary))
                .map_or(0, |i| i + 1);
            let line = message_lines
                .get(at.saturating_sub(1))
                .copied()
                .unwrap_or(0);
            let n = kept.len();
            result.messages.splice(at..at, kept);
            message_lines.splice(at..at, std::iter::repeat_n(line, n));
            pulled_messages.splice(at..at, std::iter::repeat_n(false, n));
            block_indices.splice(at..at, std::iter::repeat_n(None, n));
        }
        let last_compaction = result
            .messages
            .iter()
            .zip(&message_lines)
            .filter(|(m, _)| {
                matches!(m, Message::System(s) if matches!(s.kind, SystemKind::CompactBoundary { .. }))
            })
            .map(|(_, &line)| line)
            .next_back();
        for request in result.requests.requests_mut() {
            request.messages_before = message_lines.partition_point(|&l| l < request.line);
            request.before_compaction = last_compaction.is_some_and(|b| request.line < b);
        }
        order_fragments(&mut result.messages, &block_indices);
        order_parallel_results(&mut result.messages, &pulled_messages);
        // Problems came from two passes (lines, then records): keep them in file order.
        result.problems.sort_by_key(|p| p.line);
        result
    }
}

/// The `uuid`s of the records the last imported compaction boundary says Claude Code kept
/// (`compactMetadata.preservedMessages.uuids`, 2.1.3xx): the last answer of a manual
/// `/compact`, the tool call in flight and its result of an automatic one. A set: the list
/// comes from the file, and each compacted record is looked up in it.
fn preserved_uuids(records: &[Record], places: &[Place]) -> HashSet<String> {
    records
        .iter()
        .zip(places)
        .rfind(|(r, place)| {
            **place == Place::Imported
                && r.object.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
        })
        .and_then(|(r, _)| {
            r.object
                .get("compactMetadata")?
                .get("preservedMessages")?
                .get("uuids")?
                .as_array()
                .map(|uuids| {
                    uuids
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
        })
        .unwrap_or_default()
}

/// Puts each run of consecutive tool-result-only user messages that holds a result pulled in
/// off the walk in the order of the tool uses they answer (stable: results of unknown uses
/// keep their place after the known ones). Claude Code 2.1 writes parallel results in the
/// order the tools finished, each on its own branch; the request answers them in the order
/// they were called (docs/claude-code-transcripts.md#parallel-tool-calls (c)). Runs on one chain (1.x wrote parallel results as a
/// linear chain) keep their chain order.
fn order_parallel_results(messages: &mut [Message], pulled: &[bool]) {
    let mut ordinal: HashMap<&str, usize> = HashMap::new();
    for message in messages.iter() {
        if let Message::Assistant(assistant) = message {
            for block in &assistant.content {
                if let ContentBlock::ToolUse(tool_use) = block {
                    let next = ordinal.len();
                    ordinal.entry(tool_use.id.as_str()).or_insert(next);
                }
            }
        }
    }
    let results_only = |message: &Message| match message {
        Message::User(user) => {
            !user.content.is_empty()
                && user
                    .content
                    .iter()
                    .all(|b| matches!(b, ContentBlock::ToolResult(_)))
        }
        _ => false,
    };
    let key = |message: &Message| match message {
        Message::User(user) => user
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => ordinal.get(r.tool_use_id.as_str()).copied(),
                _ => None,
            })
            .min()
            .unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let keys: Vec<usize> = messages.iter().map(key).collect();
    let runs: Vec<bool> = messages.iter().map(results_only).collect();
    let mut start = 0;
    while start < messages.len() {
        if !runs[start] {
            start += 1;
            continue;
        }
        let end = (start..messages.len())
            .find(|&i| !runs[i])
            .unwrap_or(messages.len());
        if end - start > 1
            && pulled.get(start..end).is_some_and(|p| p.contains(&true))
            && keys[start..end].windows(2).any(|w| w[0] > w[1])
        {
            let mut run: Vec<(usize, Message)> = messages[start..end]
                .iter()
                .cloned()
                .zip(keys[start..end].iter().copied())
                .map(|(m, k)| (k, m))
                .collect();
            run.sort_by_key(|(k, _)| *k);
            for (slot, (_, message)) in messages[start..end].iter_mut().zip(run) {
                *slot = message;
            }
        }
        start = end;
    }
}

/// Puts each run of consecutive fragments of one response (same `api_message_id`) whose
/// records all carry an `apiBlockIndex` in that order (docs/claude-code-transcripts.md#common-fields: recent 2.1 builds say
/// where each block sits in the response). Runs without it keep their order.
fn order_fragments(messages: &mut [Message], block_indices: &[Option<u64>]) {
    let response = |message: &Message| match message {
        Message::Assistant(a) => a.api_message_id.clone(),
        _ => None,
    };
    let mut start = 0;
    while start < messages.len() {
        let Some(id) = response(&messages[start]) else {
            start += 1;
            continue;
        };
        let end = (start..messages.len())
            .find(|&i| response(&messages[i]).as_deref() != Some(id.as_str()))
            .unwrap_or(messages.len());
        let indices: Option<Vec<u64>> = block_indices
            .get(start..end)
            .and_then(|run| run.iter().copied().collect());
        if let Some(indices) = indices.filter(|ix| ix.windows(2).any(|w| w[0] > w[1])) {
            let mut run: Vec<(u64, Message)> = indices
                .into_iter()
                .zip(messages[start..end].iter().cloned())
                .collect();
            run.sort_by_key(|(index, _)| *index);
            for (slot, (_, message)) in messages[start..end].iter_mut().zip(run) {
                *slot = message;
            }
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn parsed(values: Vec<Value>) -> ParsedLines {
        let mut lines = ParsedLines::default();
        for value in values {
            let Value::Object(object) = value else {
                panic!("an object")
            };
            lines.last_line += 1;
            lines.records.push(Record {
                line: lines.last_line,
                object,
            });
        }
        lines
    }

    // Hostile files, at sizes where a quadratic import takes far longer than a linear one.

    /// A compaction of many records whose boundary lists many more preserved `uuid`s, only
    /// one of them a record's: each compacted record is one look-up in the list, not a pass
    /// over it (a pass would be 2·10⁹ string comparisons at this size).
    #[test]
    fn a_long_preserved_list_is_looked_up_not_scanned() {
        const COMPACTED: usize = 10_000;
        const LISTED: usize = 200_000;
        let mut values = Vec::with_capacity(COMPACTED + 2);
        for i in 0..COMPACTED {
            let parent = i.checked_sub(1).map(|p| format!("c_{p}"));
            values.push(
                json!({"type": "user", "uuid": format!("c_{i}"), "parentUuid": parent,
                               "message": {"role": "user", "content": format!("prompt {i}")}}),
            );
        }
        let mut uuids: Vec<String> = (0..LISTED).map(|i| format!("g{i}")).collect();
        uuids.push(format!("c_{}", COMPACTED - 1));
        values.push(
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "b",
            "parentUuid": null, "logicalParentUuid": format!("c_{}", COMPACTED - 1),
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual", "preTokens": 1,
                                "preservedMessages": {"uuids": uuids}}}),
        );
        values.push(
            json!({"type": "user", "uuid": "s", "parentUuid": "b", "isCompactSummary": true,
                           "message": {"role": "user", "content": "Summary."}}),
        );
        let imported = parsed(values).import(&ImportOptions::default());
        assert_eq!(imported.skipped_compacted, COMPACTED - 1);
        // The boundary, the summary, then the one preserved record.
        assert_eq!(imported.messages.len(), 3);
        assert!(matches!(&imported.messages[2], Message::User(u)
            if u.header.id.to_string() == format!("c_{}", COMPACTED - 1)));
    }
}
