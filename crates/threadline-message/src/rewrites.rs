//! Messages rewritten in place after they were recorded, and how a recorded history is read
//! back with them.
//!
//! A context step may change a message already in the history, keeping its id: the
//! tool-result budget replaces a large result by a preview before the model first sees it,
//! microcompact clears old results. What was recorded — the append-only transcript, a
//! session store — holds the message as it was first appended; read back as it is, a
//! resumed session would send the full results the live one never sent again (another
//! prefix, a cache miss, and tokens the budget had saved). So the loop records a rewritten
//! message again, as it now is, marked as a rewrite of the message at its position in the
//! history (a top-level [`REWRITTEN_AT`] field), and a reader puts each rewrite where that
//! message stood ([`fold_rewrites`]): the history read back is the one the loop held.
//!
//! Only marked records replace anything. One id may stand more than once in a history: a
//! compaction keeps the latest messages after its summary as copies, under their ids, so an
//! unmarked record of an id read before is a message of its own, appended as it was. A
//! rewrite replaces the message at its position when that message has its id; when it does
//! not (a line lost before it, a history that began before the record did), the latest
//! message of its id; when there is none, it stands where it was read, so that no record is
//! dropped. That place is wrong when the message was never recorded at all — a starting
//! history given to an agent is not written again, and a step may rewrite one of its
//! messages: such a rewrite reads back after what was recorded before it.
//!
//! ```
//! use threadline_message::rewrites::{fold_rewrites, Record};
//! use threadline_message::Message;
//! use threadline_wire::Content;
//!
//! let prompt = Message::user_text("Read the log");
//! let result = Message::tool_result("toolu_01", Content::Text("x".repeat(60_000)), false);
//! // The budget's preview of the same message (the same id).
//! let mut preview = Message::tool_result("toolu_01", Content::Text("<persisted-output>…".into()), false);
//! if let (Message::User(preview), Message::User(result)) = (&mut preview, &result) {
//!     preview.header = result.header.clone();
//! }
//! // As recorded: the prompt, the result, then the result again as the budget left it.
//! let recorded = vec![
//!     Record::Appended(prompt.clone()),
//!     Record::Appended(result.clone()),
//!     Record::Rewritten { at: 1, message: preview.clone() },
//! ];
//! assert_eq!(fold_rewrites(recorded), vec![prompt.clone(), preview]);
//! // A copy of a message appended again (a compaction's kept tail) is not a rewrite.
//! let copies = vec![Record::Appended(result.clone()), Record::Appended(result.clone())];
//! assert_eq!(fold_rewrites(copies), vec![result.clone(), result]);
//! ```

use std::collections::HashMap;

use serde::Deserialize;

use crate::header::MessageId;
use crate::message::Message;

/// The top-level field that marks a recorded message as a rewrite; its value is the
/// message's position in the history (from 0). Reserved: a transcript mark of this name is
/// not written.
pub const REWRITTEN_AT: &str = "rewritten_at";

/// One record of a recorded history.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A message appended to the history.
    Appended(Message),
    /// A message changed in place, as it now is.
    Rewritten {
        /// Its position in the history.
        at: usize,
        /// The message.
        message: Message,
    },
}

impl Record {
    /// Reads one recorded line (a message's JSON): a [`Record::Rewritten`] when it carries
    /// [`REWRITTEN_AT`] with a position, a [`Record::Appended`] otherwise.
    pub fn from_json(bytes: &[u8]) -> Result<Record, serde_json::Error> {
        let message: Message = serde_json::from_slice(bytes)?;
        Ok(match rewritten_at(bytes) {
            Some(at) => Record::Rewritten { at, message },
            None => Record::Appended(message),
        })
    }

    /// The message recorded.
    pub fn message(&self) -> &Message {
        match self {
            Record::Appended(message) | Record::Rewritten { message, .. } => message,
        }
    }

    /// The message recorded, taken.
    pub fn into_message(self) -> Message {
        match self {
            Record::Appended(message) | Record::Rewritten { message, .. } => message,
        }
    }
}

/// Adds `"rewritten_at": at` inside the JSON object `line` holds (it ends with `}`; a line
/// that does not is left as it is).
pub fn mark_rewrite(line: &mut Vec<u8>, at: usize) {
    // A number always serializes.
    let _ = crate::json_line::add_field(line, REWRITTEN_AT, &at);
}

/// The position a line's [`REWRITTEN_AT`] holds, if it has one. Lines without the field's
/// name anywhere (almost all) are not parsed again.
fn rewritten_at(bytes: &[u8]) -> Option<usize> {
    memchr::memmem::find(bytes, REWRITTEN_AT.as_bytes())?;
    // The field's name again, as serde needs it; `mark_rewrite`'s test ties the two.
    #[derive(Deserialize)]
    struct Mark {
        rewritten_at: Option<usize>,
    }
    serde_json::from_slice::<Mark>(bytes).ok()?.rewritten_at
}

/// The history `records` recorded: each appended message in order, each rewrite in the place
/// of the message it rewrote (see the module documentation). Records without rewrites give
/// their messages as they are.
pub fn fold_rewrites(records: impl IntoIterator<Item = Record>) -> Vec<Message> {
    let records = records.into_iter();
    let mut latest: HashMap<MessageId, usize> = HashMap::with_capacity(records.size_hint().0);
    let mut folded: Vec<Message> = Vec::with_capacity(records.size_hint().0);
    for record in records {
        let target = match &record {
            Record::Appended(_) => None,
            Record::Rewritten { at, message } => folded
                .get(*at)
                .filter(|there| there.id() == message.id())
                .map(|_| *at)
                .or_else(|| latest.get(message.id()).copied()),
        };
        let message = record.into_message();
        match target {
            Some(at) => folded[at] = message,
            None => {
                latest.insert(message.id().clone(), folded.len());
                folded.push(message);
            }
        }
    }
    folded
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn rewritten(message: &Message, text: &str) -> Message {
        let mut message = message.clone();
        if let Message::User(user) = &mut message {
            user.content = vec![threadline_wire::ContentBlock::text(text)];
        }
        message
    }

    /// What a history is recorded as, and the history, after each step of `steps` (see the
    /// property below).
    fn record(steps: &[(u8, usize, String)]) -> (Vec<Record>, Vec<Message>) {
        let mut history: Vec<Message> = Vec::new();
        let mut recorded: Vec<Record> = Vec::new();
        for (kind, which, text) in steps {
            match kind % 3 {
                // A new message.
                0 => {
                    let message = Message::user_text(text.as_str());
                    history.push(message.clone());
                    recorded.push(Record::Appended(message));
                }
                // A copy of an earlier one appended again (a compaction's kept tail).
                1 if !history.is_empty() => {
                    let copy = history[which % history.len()].clone();
                    history.push(copy.clone());
                    recorded.push(Record::Appended(copy));
                }
                // A message rewritten in place.
                _ if !history.is_empty() => {
                    let at = which % history.len();
                    history[at] = rewritten(&history[at], text);
                    recorded.push(Record::Rewritten {
                        at,
                        message: history[at].clone(),
                    });
                }
                _ => {}
            }
        }
        (recorded, history)
    }

    proptest! {
        /// A history recorded as the loop records it — each message appended once (a copy of
        /// an earlier one too, under its id, as a compaction keeps its tail), and again,
        /// marked, each time it is rewritten in place (any message, any number of times,
        /// between any appends) — folds back to the history as it ends; through the lines
        /// a transcript holds too.
        #[test]
        fn a_recorded_history_with_copies_and_rewrites_folds_back_to_the_history(
            steps in proptest::collection::vec((any::<u8>(), any::<usize>(), "\\PC{0,12}"), 0..24),
        ) {
            let (recorded, history) = record(&steps);
            let lines: Vec<Vec<u8>> = recorded
                .iter()
                .map(|record| {
                    let mut line = serde_json::to_vec(record.message()).expect("serializes");
                    if let Record::Rewritten { at, .. } = record {
                        mark_rewrite(&mut line, *at);
                    }
                    line
                })
                .collect();
            prop_assert_eq!(fold_rewrites(recorded), history.clone());
            let read: Vec<Record> = lines
                .iter()
                .map(|line| Record::from_json(line).expect("parses"))
                .collect();
            prop_assert_eq!(fold_rewrites(read), history);
        }

        /// Whatever position a rewrite names — beyond the history, at another message — the
        /// fold does not panic, loses no appended message, and the rewrite lands on a message
        /// of its id or stands on its own.
        #[test]
        fn a_rewrite_naming_any_position_loses_nothing(
            steps in proptest::collection::vec((any::<u8>(), any::<usize>(), "\\PC{0,12}"), 0..16),
            at in any::<usize>(),
            target in any::<usize>(),
        ) {
            let (mut recorded, history) = record(&steps);
            let message = if history.is_empty() {
                Message::user_text("stray")
            } else {
                rewritten(&history[target % history.len()], "stray rewrite")
            };
            recorded.push(Record::Rewritten { at, message: message.clone() });
            let folded = fold_rewrites(recorded);
            let ids = |messages: &[Message]| -> Vec<MessageId> {
                messages.iter().map(|m| m.id().clone()).collect()
            };
            if history.iter().any(|m| m.id() == message.id()) {
                prop_assert_eq!(ids(&folded), ids(&history));
                prop_assert!(folded.contains(&message));
            } else {
                prop_assert_eq!(folded.len(), history.len() + 1);
                prop_assert_eq!(folded.last(), Some(&message));
            }
        }
    }

    #[test]
    fn a_rewrite_replaces_the_copy_at_its_position_not_the_first_of_its_id() {
        let a = Message::user_text("a");
        let b = Message::user_text("b");
        let cleared = rewritten(&a, "cleared");
        // `a`, `b`, then `a` kept after a compaction; the copy (at 2) is cleared.
        let folded = fold_rewrites([
            Record::Appended(a.clone()),
            Record::Appended(b.clone()),
            Record::Appended(a.clone()),
            Record::Rewritten {
                at: 2,
                message: cleared.clone(),
            },
        ]);
        assert_eq!(folded, [a.clone(), b.clone(), cleared.clone()]);
        // A position that does not hold the id: the latest message of the id.
        let folded = fold_rewrites([
            Record::Appended(a.clone()),
            Record::Appended(b.clone()),
            Record::Appended(a.clone()),
            Record::Rewritten {
                at: 1,
                message: cleared.clone(),
            },
        ]);
        assert_eq!(folded, [a.clone(), b.clone(), cleared]);
        // Unmarked records of one id are all kept.
        assert_eq!(
            fold_rewrites([Record::Appended(a.clone()), Record::Appended(a.clone())]),
            [a.clone(), a]
        );
        assert!(fold_rewrites(Vec::new()).is_empty());
    }

    #[test]
    fn the_mark_reads_back_and_nothing_else_is_a_rewrite() {
        let message = Message::user_text("mentions rewritten_at in its text");
        let mut line = serde_json::to_vec(&message).expect("serializes");
        assert_eq!(
            Record::from_json(&line).expect("parses"),
            Record::Appended(message.clone())
        );
        mark_rewrite(&mut line, 7);
        assert!(String::from_utf8_lossy(&line).ends_with(",\"rewritten_at\":7}"));
        assert_eq!(
            Record::from_json(&line).expect("parses"),
            Record::Rewritten { at: 7, message }
        );
        // Not a position: not a rewrite.
        let odd = br#"{"type":"user","id":"u1","timestamp":"t","content":[],"rewritten_at":"7"}"#;
        assert!(
            matches!(Record::from_json(odd), Ok(Record::Appended(_))),
            "{:?}",
            Record::from_json(odd)
        );
        // Not an object: left alone.
        let mut not_an_object = b"[1]".to_vec();
        mark_rewrite(&mut not_an_object, 1);
        assert_eq!(not_an_object, b"[1]");
        let mut empty = b"{}".to_vec();
        mark_rewrite(&mut empty, 0);
        assert_eq!(empty, br#"{"rewritten_at":0}"#);
    }
}
