//! Turn-scoped mid-conversation system messages: `clear_at` on a message (beta
//! `mid-conversation-system-clear-at-2026-08-21`;
//! docs/api-notes.md#mid-conversation-system-messages).
//!
//! The texts are the API's, as its documentation lists them. Their `messages.N` is the message
//! as sent: each is a check of one message's own fields, which merging would lose (inferred).
//! Where a turn-scoped message stands is the placement rule's (`tool_changes.rs`), as for any
//! system message; a turn-scoped message followed directly by a user message is one of its
//! cases.

use serde_json::Value;

use super::View;
use super::message_list::MessageList;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use super::turns::{Turn, Turns};
use threadline_wire::betas::MID_CONVERSATION_SYSTEM_CLEAR_AT;
use threadline_wire::content::{Content, ContentBlock, Role};
use threadline_wire::request::{CLEAR_AT_NEXT_USER_MESSAGE, MessageParam};

/// What the API's turn-scoped texts end with.
const SCOPE: &str = "(clear_at: 'next_user_message')";

/// Whether `message` is turn-scoped ([`MessageParam::is_turn_scoped`], the one rule).
pub(super) fn is_turn_scoped(message: &MessageParam) -> bool {
    message.is_turn_scoped()
}

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let messages = view.messages;
    let beta = ctx.options.names_beta(MID_CONVERSATION_SYSTEM_CLEAR_AT);
    let mut beta_reported = false;
    for (t, turn) in Turns::new(messages).enumerate() {
        for m in turn.start..turn.end {
            let message = messages.at(m);
            let Some(value) = message.extra.get("clear_at") else {
                continue;
            };
            let loc = Loc::Message { msg: m, turn: t };
            let path = format!("messages.{m}.clear_at");
            if beta == Some(false) {
                // Without its beta the field is unknown: nothing else about it is checked.
                if !beta_reported {
                    beta_reported = true;
                    let message = format!("{path}: Extra inputs are not permitted");
                    ctx.report_at(Rule::BetaHeaderMissing, loc, path, message);
                }
                continue;
            }
            if message.role != Role::System {
                let text = format!("{path}: clear_at is only permitted on role 'system' messages");
                ctx.report_at(Rule::ClearAtInvalid, loc, path, text);
                continue;
            }
            match value.as_str() {
                Some(CLEAR_AT_NEXT_USER_MESSAGE) => turn_scoped(ctx, messages, &turn, t, m),
                Some("never") => {}
                // `null` reads as "not set" (the default is `never`); whether the API agrees
                // is not documented, so it is not reported.
                None if value.is_null() => {}
                _ => {
                    let text = format!("{path}: Input should be 'next_user_message' or 'never'");
                    ctx.report_at(Rule::ClearAtInvalid, loc, path, text);
                }
            }
        }
    }
}

/// The rules of turn-scoped message `m` (of turn `t`): text blocks only, no `output_config`,
/// no `cache_control` on a block.
fn turn_scoped(ctx: &mut Ctx<'_>, messages: MessageList<'_>, turn: &Turn<'_>, t: usize, m: usize) {
    let message = messages.at(m);
    let loc = Loc::Message { msg: m, turn: t };
    let blocks: &[ContentBlock] = match &message.content {
        Content::Blocks(blocks) => blocks,
        Content::Text(_) => &[],
    };
    if blocks.iter().any(|b| !matches!(b, ContentBlock::Text(_))) {
        let text =
            format!("messages.{m}: a turn-scoped system message supports text blocks only {SCOPE}");
        ctx.report(Rule::TurnScopedSystemMessageInvalid, loc, text);
    }
    if message
        .extra
        .get("output_config")
        .is_some_and(|v| !v.is_null())
    {
        let text = format!(
            "messages.{m}: output_config is not permitted on a turn-scoped system message {SCOPE}"
        );
        let path = format!("messages.{m}.output_config");
        ctx.report_at(Rule::TurnScopedSystemMessageInvalid, loc, path, text);
    }
    // The block's position in the merged turn (for the sort order only).
    let before: usize = messages
        .range(turn.start..m)
        .map(|earlier| match &earlier.content {
            Content::Text(_) => 1,
            Content::Blocks(blocks) => blocks.len(),
        })
        .sum();
    for (b, block) in blocks.iter().enumerate() {
        let marked = block.cache_control().is_some()
            || matches!(block, ContentBlock::Unknown(value)
                if value.get("cache_control").is_some_and(Value::is_object));
        if marked {
            let loc = Loc::Block {
                msg: m,
                block: Some(b),
                nested: None,
                turn: t,
                merged: before + b,
            };
            let text = format!(
                "messages.{m}.content.{b}: cache_control is not permitted on a turn-scoped system message {SCOPE}"
            );
            ctx.report(Rule::TurnScopedSystemMessageInvalid, loc, text);
        }
    }
}
