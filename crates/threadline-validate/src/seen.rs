//! What the rarer rules look for, noted during the one walk over the messages
//! (`messages.rs`), so that each of them walks the messages again only when the request
//! holds something it checks.
//!
//! A rule's own walk over a 100k-message request is not free: the messages and their blocks
//! are far larger than the CPU caches, so every walk misses the cache on every block again.
//! Each flag is set exactly when the matching check could find something (it looks at
//! nothing else), so skipping the check when its flag is unset changes no report.

use threadline_wire::content::{ContentBlock, Role};
use threadline_wire::request::MessageParam;
use threadline_wire::tool_search::referenced_tools;

/// The rare things the request holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Seen {
    /// A `role: "system"` message.
    pub(super) system_message: bool,
    /// A `tool_addition` or `tool_removal` block.
    pub(super) tool_change: bool,
    /// A message with a `clear_at` field.
    pub(super) clear_at: bool,
    /// A message with an `output_config` field.
    pub(super) message_output_config: bool,
    /// A block that references tools (`referenced_tools` is not empty).
    pub(super) tool_reference: bool,
    /// A `compaction` block (the on-demand rules check the signed ones).
    pub(super) compaction_block: bool,
}

impl Seen {
    /// Takes note of one message (not of its blocks).
    pub(super) fn message(&mut self, message: &MessageParam) {
        self.system_message |= message.role == Role::System;
        if !message.extra.is_empty() {
            self.clear_at |= message.extra.contains_key("clear_at");
            self.message_output_config |= message.extra.contains_key("output_config");
        }
    }

    /// Takes note of one top-level block of a message.
    pub(super) fn block(&mut self, block: &ContentBlock) {
        match block {
            ContentBlock::ToolAddition(_) | ContentBlock::ToolRemoval(_) => {
                self.tool_change = true;
            }
            ContentBlock::Text(_) | ContentBlock::ToolUse(_) => {}
            ContentBlock::Compaction(_) => self.compaction_block = true,
            other => self.tool_reference |= !referenced_tools(other).is_empty(),
        }
    }

    /// Whether the tool-change and system-message placement rules have anything to check.
    pub(super) fn tool_changes(&self) -> bool {
        self.system_message || self.tool_change
    }

    /// Everything set: every check runs.
    #[cfg(test)]
    pub(super) fn everything() -> Self {
        Seen {
            system_message: true,
            tool_change: true,
            clear_at: true,
            message_output_config: true,
            tool_reference: true,
            compaction_block: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use threadline_testkit::strategies;
    use threadline_wire::MessagesRequest;
    use threadline_wire::model::ModelTable;

    use super::Seen;
    use crate::message_list::MessageList;
    use crate::{ValidateOptions, View, run_checks};

    /// A message holding what only the rarer rules look at.
    fn rare_message() -> impl Strategy<Value = Value> {
        let change = |kind: &str, name: &str| json!({"type": kind, "tool": {"type": "tool_reference", "name": name}});
        prop_oneof![
            Just(json!({"role": "system", "content": "Be brief."})),
            Just(json!({"role": "system", "content": [change("tool_addition", "ls")]})),
            Just(json!({"role": "user", "content": [change("tool_removal", "nope")]})),
            Just(json!({"role": "system", "clear_at": "next_user_message", "content": "Now."})),
            Just(json!({"role": "user", "clear_at": "bogus", "content": "x"})),
            Just(json!({"role": "system", "content": [], "output_config": {"effort": "low"}})),
            Just(json!({"role": "user", "output_config": null, "content": "y"})),
            Just(
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                "content": [{"type": "tool_reference", "tool_name": "missing"}]}]})
            ),
            Just(
                json!({"role": "user", "content": [{"type": "tool_reference", "tool_name": "ls"}]})
            ),
            Just(
                json!({"role": "assistant", "content": [{"type": "compaction", "content": "s", "signature": "sig"}]})
            ),
            Just(
                json!({"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "compaction", "content": "s", "signature": "sig", "citations": null}]})
            ),
            Just(
                json!({"role": "assistant", "content": [{"type": "tool_search_tool_result",
                "tool_use_id": "srvtoolu_1", "content": {"type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "gone"}]}}]})
            ),
        ]
    }

    proptest! {
        /// Skipping the checks the walk saw nothing for changes no report: the same
        /// violations and warnings, in the same order, as running every check.
        #[test]
        fn skipping_unneeded_checks_changes_no_report(
            body in strategies::messages_request(),
            rare in prop::collection::vec((any::<prop::sample::Index>(), rare_message()), 0..4),
            model in prop::sample::select(vec![
                "claude-sonnet-4-6", "claude-fable-5-1", "claude-haiku-5-5", "claude-future-9",
            ]),
            header in prop::option::of(prop::sample::select(vec![
                "", "mid-conversation-tool-changes-2026-07-01",
                "mid-conversation-system-clear-at-2026-08-21,per-turn-control-2026-07-01",
            ])),
        ) {
            let mut body = body;
            if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
                for (at, message) in rare {
                    let at = at.index(messages.len() + 1);
                    messages.insert(at, message);
                }
            }
            let Ok(request) = serde_json::from_value::<MessagesRequest>(body) else {
                return Ok(());
            };
            let model = ModelTable::builtin().resolve(model).model();
            let options = match header {
                Some(header) => ValidateOptions::default().with_beta_header(header),
                None => ValidateOptions::default(),
            };
            let refs = MessageList::gather(&request.messages);
            let view = View::of_messages(&request, MessageList::new(&refs));
            let skipping = run_checks(&view, model, &options, None);
            let everything = run_checks(&view, model, &options, Some(Seen::everything()));
            prop_assert_eq!(skipping, everything);
        }
    }

    #[test]
    fn a_plain_conversation_needs_no_rare_check() {
        let request: MessagesRequest = serde_json::from_value(json!({
            "model": "claude-sonnet-4-6", "max_tokens": 16,
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "a.rs"}]}]}
            ]
        }))
        .expect("a valid request");
        let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
        let options = ValidateOptions::default();
        let mut ctx = crate::report::Ctx::new(model, &options);
        let mut breakpoints = crate::cache::Breakpoints::default();
        let refs = MessageList::gather(&request.messages);
        let view = View::of_messages(&request, MessageList::new(&refs));
        let (_, seen) = crate::messages::check(&mut ctx, &view, &mut breakpoints);
        assert_eq!(seen, Seen::default());
    }
}
