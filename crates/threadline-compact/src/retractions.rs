//! Retractions survive compaction: a tombstone retracts its message wherever it stands in the
//! array, so a layer that keeps a message must keep the tombstones that retract it, or a
//! retracted message (a cut response, an aborted turn) would reach the model again.

use std::collections::BTreeSet;

use threadline_message::Message;

/// The tombstones of `source` that retract a message of `kept` and are not in `kept`
/// themselves, in `source` order.
pub(crate) fn missing_tombstones<'a, 'k>(
    source: &'a [Message],
    kept: impl IntoIterator<Item = &'k Message>,
) -> Vec<&'a Message> {
    let kept_ids: BTreeSet<&str> = kept.into_iter().map(|m| m.id().as_str()).collect();
    source
        .iter()
        .filter(|m| match m {
            Message::Tombstone(t) => {
                kept_ids.contains(t.retracts.as_str()) && !kept_ids.contains(t.header.id.as_str())
            }
            _ => false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use threadline_message::{Header, MessageId, Tombstone};

    use super::*;

    fn tombstone(id: &str, retracts: &str) -> Message {
        Message::Tombstone(Tombstone {
            header: Header::with(id, "2026-01-01T00:00:00Z"),
            retracts: MessageId(retracts.to_owned()),
        })
    }

    fn text(id: &str) -> Message {
        Message::user_text("x").with_header(Header::with(id, "2026-01-01T00:00:00Z"))
    }

    #[test]
    fn only_the_tombstones_of_kept_messages_that_were_left_behind() {
        let source = [
            tombstone("t1", "kept"),
            tombstone("t2", "dropped"),
            text("dropped"),
            text("kept"),
            tombstone("t3", "kept"),
        ];
        let kept = [text("kept"), tombstone("t3", "kept")];
        let missing: Vec<&str> = missing_tombstones(&source, &kept)
            .iter()
            .map(|m| m.id().as_str())
            .collect();
        assert_eq!(missing, ["t1"]);
    }
}
