//! Messages rewritten in place after they were recorded, and how a recorded history is read
//! back with them.
//!
//! A context step may change a message already in the history, keeping its id: the
//! tool-result budget replaces a large result by a preview before the model first sees it,
//! microcompact clears old results. What was recorded — the append-only transcript, a
//! session store — holds the message as it was first appended; read back as it is, a
//! resumed session would send the full results the live one never sent again (another
//! prefix, a cache miss, and tokens the budget had saved). So the loop records a rewritten
//! message again, as it now is, under the same id, and a reader keeps the last record of
//! each id where the first one stood ([`fold_rewrites`]): the history read back is the one
//! the loop held.
//!
//! ```
//! use threadline_message::{Message, fold_rewrites};
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
//! let recorded = vec![prompt.clone(), result, preview.clone()];
//! assert_eq!(fold_rewrites(recorded), vec![prompt, preview]);
//! ```

use std::collections::HashMap;

use crate::header::MessageId;
use crate::message::Message;

/// `messages` as recorded, with each message whose id was recorded before put in place of
/// the earlier record (the last record of an id wins, at the first one's position). A
/// history without repeated ids is returned as it is.
pub fn fold_rewrites(messages: Vec<Message>) -> Vec<Message> {
    let mut first_at: HashMap<MessageId, usize> = HashMap::with_capacity(messages.len());
    let mut folded: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match first_at.get(message.id()) {
            Some(&at) => folded[at] = message,
            None => {
                first_at.insert(message.id().clone(), folded.len());
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

    proptest! {
        /// A history recorded as the loop records it — each message appended once, and again
        /// each time it is rewritten in place (any message, any number of times, between any
        /// appends) — folds back to the history as it ends.
        #[test]
        fn a_recorded_history_with_rewrites_folds_back_to_the_history(
            texts in proptest::collection::vec("\\PC{0,12}", 0..12),
            edits in proptest::collection::vec((any::<usize>(), any::<usize>(), "\\PC{0,12}"), 0..16),
        ) {
            let mut history: Vec<Message> = Vec::new();
            let mut recorded: Vec<Message> = Vec::new();
            for (appended, text) in texts.iter().enumerate() {
                let message = Message::user_text(text.as_str());
                history.push(message.clone());
                recorded.push(message);
                // The rewrites that come after message `when % texts.len()`, in order.
                for (_, which, text) in edits.iter().filter(|e| e.0 % texts.len() == appended) {
                    let at = which % history.len();
                    history[at] = rewritten(&history[at], text);
                    recorded.push(history[at].clone());
                }
            }
            prop_assert_eq!(fold_rewrites(recorded), history);
        }
    }

    #[test]
    fn the_last_record_of_an_id_takes_the_first_ones_place() {
        let a = Message::user_text("a");
        let b = Message::user_text("b");
        let mut a2 = a.clone();
        let mut a3 = a.clone();
        if let (Message::User(two), Message::User(three)) = (&mut a2, &mut a3) {
            two.content = vec![threadline_wire::ContentBlock::text("a, rewritten")];
            three.content = vec![threadline_wire::ContentBlock::text("a, rewritten again")];
        }
        let c = Message::user_text("c");
        let folded = fold_rewrites(vec![a.clone(), b.clone(), a2, c.clone(), a3.clone()]);
        assert_eq!(folded, vec![a3, b.clone(), c.clone()]);
        // Nothing repeated: unchanged.
        assert_eq!(
            fold_rewrites(vec![a.clone(), b.clone(), c.clone()]),
            vec![a, b, c]
        );
        assert!(fold_rewrites(Vec::new()).is_empty());
    }
}
