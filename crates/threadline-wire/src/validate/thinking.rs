//! Manual extended thinking (`thinking: {type: "enabled"}`): the final assistant turn must
//! begin with a thinking block.
//!
//! A tool-use loop is one assistant turn: `assistant(tool_use) → user(tool_result) →
//! assistant(…)` continues the same turn. The "final assistant message" of the API's text is
//! therefore the first assistant message of the last such chain — the one preceding the
//! lastmost set of `tool_use` and `tool_result` blocks — when the request ends inside that
//! chain: with its `tool_result` message, or with an assistant message (prefill or
//! continuation). A request that ends with a fresh user message starts a new turn and has no
//! final assistant message to check. Adaptive thinking relaxes the rule entirely.

use super::View;
use super::report::Ctx;
use super::rule::{self, Rule};
use super::turns::{Turn, TurnBlocks};
use crate::content::Role;

pub(super) fn check_final_assistant(ctx: &mut Ctx<'_>, view: &View<'_>, turns: &[Turn<'_>]) {
    if !view.manual_thinking(ctx.model) {
        return;
    }
    let Some(last) = turns.len().checked_sub(1) else {
        return;
    };
    let continues_chain = |user: usize| {
        user >= 1
            && *turns[user].role == Role::User
            && *turns[user - 1].role == Role::Assistant
            && TurnBlocks::new(view.messages, &turns[user], user)
                .next()
                .is_some_and(|first| first.piece.is_tool_result())
    };
    let mut start = match turns[last].role {
        Role::Assistant => last,
        Role::User if continues_chain(last) => last - 1,
        _ => return,
    };
    while start >= 2 && continues_chain(start - 1) {
        start -= 2;
    }
    let Some(first) = TurnBlocks::new(view.messages, &turns[start], start).next() else {
        return;
    };
    if first.piece.is_thinking() {
        return;
    }
    let message = rule::final_assistant_missing_thinking(start, first.piece.tag());
    let path = first.loc.field("type");
    ctx.report_at(
        Rule::FinalAssistantMissingThinking,
        first.loc,
        path,
        message,
    );
}
