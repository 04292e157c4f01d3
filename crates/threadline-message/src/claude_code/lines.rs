//! Reading: each line of the file parsed into a record, or reported.

use serde_json::{Map, Value};

use super::ImportOptions;
use super::ImportResult;
use super::graph::{Place, conversation_type, place_records};
use super::records::{Mapped, map_record};
use crate::transcript::{LineContent, LineProblem, LineProblemKind, RawLine, is_blank, too_long};

/// A record: a JSON object and the line it came from.
pub(super) struct Record {
    pub(super) line: usize,
    pub(super) object: Map<String, Value>,
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
        let (places, mut bridges) = place_records(&self.records, options.include_sidechains);
        let mut result = ImportResult {
            problems: self.problems,
            ..ImportResult::default()
        };
        result.problems.append(&mut bridges);
        for (record, place) in self.records.into_iter().zip(places) {
            match place {
                Place::Imported => match map_record(record, &mut result.problems) {
                    Mapped::Message(message) => result.messages.push(*message),
                    Mapped::Opaque(object) => result.opaque.push(Value::Object(object)),
                },
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
            }
        }
        // Problems came from two passes (lines, then records): keep them in file order.
        result.problems.sort_by_key(|p| p.line);
        result
    }
}
