//! Reading the history: what the model has been told since the last compaction.

use std::collections::BTreeSet;

use threadline_message::{Attachment, Message, MessageId, SystemKind};

/// The messages after the last compaction boundary (all of them when there is none): what
/// the model still sees of the session, so what it can still be assumed to know.
pub fn since_last_compaction(history: &[Message]) -> &[Message] {
    let start = history
        .iter()
        .rposition(|m| {
            matches!(m, Message::System(s) if matches!(s.kind, SystemKind::CompactBoundary { .. }))
        })
        .map_or(0, |boundary| boundary + 1);
    &history[start..]
}

/// The attachments after the last compaction boundary, oldest first, leaving out any a
/// tombstone retracts (the model never sees those).
pub fn attachments_since_last_compaction(
    history: &[Message],
) -> impl DoubleEndedIterator<Item = &Attachment> {
    let visible = since_last_compaction(history);
    let retracted: BTreeSet<&MessageId> = visible
        .iter()
        .filter_map(|m| match m {
            Message::Tombstone(t) => Some(&t.retracts),
            _ => None,
        })
        .collect();
    visible.iter().filter_map(move |m| match m {
        Message::Attachment(a) if !retracted.contains(&a.header.id) => Some(&a.attachment),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_message::CompactTrigger;

    fn boundary() -> Message {
        Message::system(SystemKind::CompactBoundary {
            trigger: CompactTrigger::Auto,
            pre_tokens: 10,
            last_message_id: None,
        })
    }

    #[test]
    fn the_last_boundary_starts_what_the_model_sees() {
        let history = [
            Message::user_text("a"),
            boundary(),
            Message::user_text("b"),
            boundary(),
            Message::user_text("c"),
        ];
        assert_eq!(since_last_compaction(&history).len(), 1);
        assert_eq!(since_last_compaction(&history[..2]).len(), 0);
        assert_eq!(since_last_compaction(&history[..1]).len(), 1);
    }

    #[test]
    fn retracted_attachments_were_never_told() {
        let kept = Message::attachment(Attachment::DateChange { date: "a".into() });
        let gone = Message::attachment(Attachment::DateChange { date: "b".into() });
        let history = [kept, gone.clone(), Message::tombstone(gone.id().clone())];
        let dates: Vec<&Attachment> = attachments_since_last_compaction(&history).collect();
        assert_eq!(dates, [&Attachment::DateChange { date: "a".into() }]);
    }
}
