//! Compaction on models that bind thinking to its prefix.
//!
//! On such a model (the row's `prefix_bound_thinking`: Fable 5.1, Opus 5.5, Sonnet 5.5,
//! Haiku 5.5) a thinking block sent back is refused once the `system` prompt, the
//! non-deferred tools or any message before it changed since it was written
//! (`docs/api-notes.md`, "Thinking bound to its prefix"). Every local layer that rewrites
//! the past is therefore a refused request there:
//!
//! * autocompact keeps a verbatim tail after a new summary: the tail's thinking was written
//!   after other messages, so it goes without its `thinking` and `redacted_thinking` blocks
//!   ([`without_thinking`]; `text` and `tool_use` stay, as the API's guidance says);
//! * the time-based microcompact clears old tool results, an edit before every later
//!   thinking block: it does not run ([`local_edits_allowed`]); the server-side
//!   `clear_tool_uses` edit and server compaction remain, since the API accepts its own
//!   edits;
//! * snipping messages out of the history invalidates everything after the cut: the loop's
//!   policy never snips (`snip` is a library function for models that do not bind).
//!
//! What a model does not claim but may have (its row's `undocumented`) counts as binding:
//! dropping thinking costs some re-thinking, a refused request costs the session.

use threadline_message::Message;
use threadline_wire::ContentBlock;
use threadline_wire::model::Model;

/// Whether `model` binds thinking blocks to their prefix (or may: the docs are silent);
/// [`Model::binds_thinking`].
pub fn binds_thinking(model: &Model) -> bool {
    model.binds_thinking()
}

/// Whether local layers that edit messages already sent (the time-based microcompact, snip)
/// may run for `model`: not where thinking is bound to its prefix.
pub fn local_edits_allowed(model: &Model) -> bool {
    !binds_thinking(model)
}

/// `message` as it may be carried past a compaction on a binding model: an assistant
/// message without its thinking blocks (a fragment that held only thinking stays, empty, so
/// that its response keeps all its fragments; normalization drops an emptied assistant
/// message from the request), every other message unchanged.
pub fn without_thinking(message: &Message) -> Message {
    match message {
        Message::Assistant(a) if a.content.iter().any(ContentBlock::is_thinking) => {
            let mut copy = a.clone();
            copy.content.retain(|b| !b.is_thinking());
            Message::Assistant(copy)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_testkit::messages::{SessionBuilder, text, tool_use};
    use threadline_wire::model::ModelTable;

    #[test]
    fn the_binding_models_are_the_rows_that_say_so() {
        let table = ModelTable::builtin();
        for id in [
            "claude-opus-5-5",
            "claude-sonnet-5-5",
            "claude-haiku-5-5",
            "claude-fable-5-1",
        ] {
            assert!(binds_thinking(table.resolve(id).model()), "{id}");
            assert!(!local_edits_allowed(table.resolve(id).model()), "{id}");
        }
        for id in ["claude-opus-5", "claude-sonnet-4-5", "claude-opus-4-8"] {
            assert!(!binds_thinking(table.resolve(id).model()), "{id}");
        }
    }

    #[test]
    fn carried_assistant_messages_lose_only_their_thinking() {
        let thinking: ContentBlock = serde_json::from_value(
            json!({"type": "thinking", "thinking": "plan", "signature": "sig"}),
        )
        .expect("block");
        let redacted: ContentBlock =
            serde_json::from_value(json!({"type": "redacted_thinking", "data": "xx"}))
                .expect("block");
        let mut b = SessionBuilder::new();
        b.user("go");
        let msg = b.response_id();
        b.assistant(
            &msg,
            vec![
                thinking.clone(),
                text("reading"),
                tool_use("t1", "Read", json!({})),
            ],
        );
        b.assistant(&msg, vec![redacted]);
        let messages = b.into_messages();
        let carried = without_thinking(&messages[1]);
        let Message::Assistant(a) = &carried else {
            panic!("an assistant message");
        };
        assert_eq!(a.content.len(), 2);
        assert!(!a.content.iter().any(ContentBlock::is_thinking));
        assert_eq!(carried.id(), messages[1].id());
        // A fragment of only thinking stays, empty; a user message is untouched.
        let Message::Assistant(emptied) = without_thinking(&messages[2]) else {
            panic!("an assistant message");
        };
        assert!(emptied.content.is_empty());
        assert_eq!(without_thinking(&messages[0]), messages[0]);
    }
}
