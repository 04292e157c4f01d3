//! On-demand compaction (beta `compact-2026-09-04`; docs/api-notes.md#on-demand-compaction):
//! the top-level `compaction` parameter, and the signed `compaction` block it returns when
//! that block is sent back.
//!
//! Texts (source: the autumn-2026 reference, §2.1 and §2.4, from the on-demand compaction
//! page): the missing header on the compaction request names it (`requires anthropic-beta:
//! compact-2026-09-04` is the documented fragment; the sentence around it is ours); on a later
//! request the block is unknown (`` `compaction` is not an expected content block type ``,
//! quoted); extra fields on the echoed block are the strict schema's (`messages.0.content.0.
//! compaction.citations: Extra inputs are not permitted`, quoted). The parameter errors "carry
//! a message only; their texts are not published": those texts are ours, as are the texts of
//! the placement errors, whose codes (`compaction_block_misplaced`,
//! `compaction_nothing_to_summarize`) are documented and are these rules' names. Whether a
//! signature is the API's own needs the API's key: the mock checks it, not this file.

use super::View;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use super::turns::{Piece, TurnBlocks, Turns};
use threadline_wire::betas::COMPACT_ON_DEMAND;
use threadline_wire::content::{CompactionBlock, Content, ContentBlock, Role};
use threadline_wire::model::Feature;
use threadline_wire::tools::ToolChoice;

/// The longest `instructions` accepted, in characters.
pub(crate) const MAX_INSTRUCTIONS_CHARS: usize = 16_384;

const COMPACTION: Loc = Loc::Param("compaction", 8);
const CONTEXT_MANAGEMENT: Loc = Loc::Param("context_management", 6);
const STOP_SEQUENCES: Loc = Loc::Param("stop_sequences", 8);
const OUTPUT_FORMAT: Loc = Loc::Param("output_config.format", 5);
const TASK_BUDGET: Loc = Loc::Param("output_config.task_budget", 5);

/// The compaction request without its header (the documented fragment, in a sentence of ours).
pub(crate) const PARAMETER_NEEDS_BETA: &str =
    "compaction: the `compaction` parameter requires anthropic-beta: compact-2026-09-04";
/// A signed block sent without the header (quoted).
pub(crate) const BLOCK_NEEDS_BETA: &str = "`compaction` is not an expected content block type";

/// The fields a signed block may carry besides its `type` (an explicit `null` for one of them
/// is not an extra input).
const BLOCK_FIELDS: [&str; 4] = ["content", "signature", "cache_control", "encrypted_content"];

/// Whether `block` is an on-demand (signed) compaction block.
fn signed(block: &ContentBlock) -> Option<&CompactionBlock> {
    match block {
        ContentBlock::Compaction(c) if c.signature.is_some() => Some(c),
        _ => None,
    }
}

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let beta = ctx.options.names_beta(COMPACT_ON_DEMAND);
    let carries_block = check_blocks(ctx, view, beta);
    if let Some(budget) = view.output_config.and_then(|c| c.task_budget.as_ref())
        && budget.remaining.is_some()
        && (view.compaction.is_some() || carries_block)
    {
        let path = "output_config.task_budget.remaining".to_owned();
        let text = format!(
            "{path}: `remaining` cannot be set on a compaction request or on a request carrying a `compaction` block"
        );
        ctx.report_at(Rule::OnDemandCompactionInvalid, TASK_BUDGET, path, text);
    }
    if view.compaction.is_some() {
        check_parameter(ctx, view, beta);
    }
}

/// The `compaction` parameter and what may not come with it.
fn check_parameter(ctx: &mut Ctx<'_>, view: &View<'_>, beta: Option<bool>) {
    let Some(param) = view.compaction else {
        return;
    };
    if beta == Some(false) {
        ctx.report(
            Rule::BetaHeaderMissing,
            COMPACTION,
            PARAMETER_NEEDS_BETA.to_owned(),
        );
        return;
    }
    if !ctx.model.supports(Feature::OnDemandCompaction) {
        let text = "compaction: on-demand compaction is not supported on this model".to_owned();
        ctx.report_capability_at(
            Feature::OnDemandCompaction.into(),
            Rule::OnDemandCompactionUnsupported,
            (COMPACTION, "compaction".to_owned(), "compaction"),
            text,
        );
    }
    let invalid = |ctx: &mut Ctx<'_>, loc: Loc, path: &str, text: String| {
        ctx.report_at(Rule::OnDemandCompactionInvalid, loc, path.to_owned(), text);
    };
    if param.kind != "summarize" {
        let text = "compaction.type: Input should be 'summarize'".to_owned();
        invalid(ctx, COMPACTION, "compaction.type", text);
    }
    for (key, value) in &param.extra {
        if key == "instructions" && value.is_null() {
            continue;
        }
        let path = format!("compaction.{key}");
        let text = format!("{path}: Extra inputs are not permitted");
        invalid(ctx, COMPACTION, &path, text);
    }
    if let Some(instructions) = &param.instructions {
        let path = "compaction.instructions";
        if instructions.trim().is_empty() {
            let text = format!("{path}: `instructions` must not be blank");
            invalid(ctx, COMPACTION, path, text);
        } else if instructions.chars().count() > MAX_INSTRUCTIONS_CHARS {
            let text =
                format!("{path}: String should have at most {MAX_INSTRUCTIONS_CHARS} characters");
            invalid(ctx, COMPACTION, path, text);
        }
    }
    let not_with = |name: &str| format!("{name}: `{name}` cannot be used with `compaction`");
    if view.context_management.is_some() {
        let path = "context_management";
        invalid(ctx, CONTEXT_MANAGEMENT, path, not_with(path));
    }
    if view.stop_sequences.is_some_and(|s| !s.is_empty()) {
        let path = "stop_sequences";
        invalid(ctx, STOP_SEQUENCES, path, not_with(path));
    }
    if view
        .output_config
        .and_then(|c| c.format.as_ref())
        .is_some_and(|f| !f.is_null())
    {
        let path = "output_config.format";
        invalid(ctx, OUTPUT_FORMAT, path, not_with(path));
    }
    if let Some(choice @ (ToolChoice::Any(_) | ToolChoice::Tool(_))) = view.tool_choice {
        let kind = if matches!(choice, ToolChoice::Any(_)) {
            "any"
        } else {
            "tool"
        };
        let text =
            format!("tool_choice: `tool_choice` of type `{kind}` cannot be used with `compaction`");
        invalid(ctx, Loc::ToolChoice, "tool_choice", text);
    }
    check_conversation(ctx, view);
}

/// What the conversation of a compaction request must hold: user or assistant content to
/// summarize, and no pending tool call at its end.
fn check_conversation(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let messages = view.messages;
    let mut last = None;
    for (t, turn) in Turns::new(messages).enumerate() {
        last = Some((t, turn));
    }
    if let Some((t, turn)) = last
        && *turn.role == Role::Assistant
        && TurnBlocks::new(messages, &turn, t)
            .any(|tb| matches!(tb.piece, Piece::Block(ContentBlock::ToolUse(_))))
    {
        let loc = turn.loc(t);
        let text = format!(
            "{}: the conversation ends with an assistant `tool_use` block that has no `tool_result`; a compaction request cannot end in a pending tool call",
            loc.api()
        );
        ctx.report(Rule::OnDemandCompactionInvalid, loc, text);
    }
    let has_content = messages
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant))
        .any(|m| match &m.content {
            Content::Text(text) => !text.is_empty(),
            Content::Blocks(blocks) => blocks.iter().any(|b| signed(b).is_none()),
        });
    if !has_content && !messages.is_empty() {
        let text = "messages: there is nothing to summarize: no user or assistant content besides a `compaction` block".to_owned();
        ctx.report(Rule::CompactionNothingToSummarize, Loc::Messages, text);
    }
}

/// The signed blocks of the conversation: the header, how many, where, and their fields.
/// Whether the request carries one.
fn check_blocks(ctx: &mut Ctx<'_>, view: &View<'_>, beta: Option<bool>) -> bool {
    let messages = view.messages;
    let mut seen = 0usize;
    for (t, turn) in Turns::new(messages).enumerate() {
        for tb in TurnBlocks::new(messages, &turn, t) {
            let Piece::Block(block) = tb.piece else {
                continue;
            };
            let Some(compaction) = signed(block) else {
                continue;
            };
            seen += 1;
            if beta == Some(false) {
                // Without the header the block type is unknown: nothing else is checked.
                ctx.report(Rule::BetaHeaderMissing, tb.loc, BLOCK_NEEDS_BETA.to_owned());
                return true;
            }
            let api = tb.loc.api();
            let first = matches!(
                tb.loc,
                Loc::Block {
                    msg: 0,
                    block: Some(0),
                    ..
                }
            );
            if seen == 2 {
                let text = format!(
                    "{api}: only one `compaction` block may be sent, the newest; found more than one"
                );
                ctx.report(Rule::OnDemandCompactionInvalid, tb.loc, text);
            } else if seen == 1 && !first {
                let text = format!(
                    "{api}: a `compaction` block must be the first block of the first message; the messages it summarized must not be sent before it"
                );
                ctx.report(Rule::CompactionBlockMisplaced, tb.loc, text);
            }
            for (key, value) in &compaction.extra {
                if key == "type" || (BLOCK_FIELDS.contains(&key.as_str()) && value.is_null()) {
                    continue;
                }
                let text = format!("{api}.compaction.{key}: Extra inputs are not permitted");
                let path = tb.loc.field(key);
                ctx.report_at(Rule::OnDemandCompactionInvalid, tb.loc, path, text);
            }
        }
    }
    seen > 0
}
