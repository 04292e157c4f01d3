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
use super::turns::{Tail, TurnBlocks};

pub(super) fn check_final_assistant(ctx: &mut Ctx<'_>, view: &View<'_>, tail: &Tail<'_>) {
    if !view.manual_thinking(ctx.model) {
        return;
    }
    let Some((start, turn)) = tail.final_chain_start() else {
        return;
    };
    let Some(first) = TurnBlocks::new(view.messages, &turn, start).next() else {
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
