//! A conversation that ends with an assistant message (prefill): rejected on models whose row
//! says `prefill: false`, and must not end with whitespace where it is accepted.
//!
//! A final assistant message holding server tool calls or results is the continuation of a
//! paused server-tool turn (`pause_turn`, which the documentation says to re-send as is), not a
//! prefill, and is left alone; so is one holding a `compaction` block, the turn a server-side
//! compaction paused (`stop_reason: compaction`: the documentation says to append it and call
//! again). A compaction request (top-level `compaction`) is summarized, not continued: its
//! final assistant message is no prefill either.

use super::View;
use super::report::Ctx;
use super::rule::{self, Rule};
use super::turns::{Piece, Tail, TurnBlocks};
use threadline_wire::content::{ContentBlock, Role};

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>, tail: &Tail<'_>) {
    let Some((t, last)) = tail.last() else {
        return;
    };
    if *last.role != Role::Assistant || view.compaction.is_some() {
        return;
    }
    let mut continuation = false;
    let mut last_piece = None;
    for tb in TurnBlocks::new(view.messages, &last, t) {
        if let Piece::Block(block) = tb.piece
            && (matches!(
                block,
                ContentBlock::ServerToolUse(_) | ContentBlock::McpToolUse(_)
            ) || block.server_tool_result().is_some()
                || matches!(block, ContentBlock::Compaction(_)))
        {
            continuation = true;
        }
        last_piece = Some(tb);
    }
    if continuation {
        return;
    }
    if !ctx.model.prefill {
        let message = rule::PREFILL_UNSUPPORTED.to_owned();
        ctx.report_model(Rule::PrefillUnsupported, last.loc(t), message);
        return;
    }
    if let Some(tb) = last_piece
        && tb
            .piece
            .text()
            .is_some_and(|text| text.ends_with(char::is_whitespace))
    {
        let message = rule::TRAILING_WHITESPACE.to_owned();
        ctx.report_model(Rule::TrailingWhitespace, tb.loc, message);
    }
}
