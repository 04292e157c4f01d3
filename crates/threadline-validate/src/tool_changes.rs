//! Mid-conversation system messages and the tool changes they carry (`tool_addition`,
//! `tool_removal`; beta `mid-conversation-tool-changes-2026-07-01`).
//!
//! What the other checks already enforce: the role itself on a model without system messages
//! ([`Rule::InvalidRole`], `messages.rs`), and "never between a `tool_use` and its
//! `tool_result`" (a system turn after an assistant turn with a `tool_use` leaves it
//! unanswered: [`Rule::ToolUseWithoutResult`]). This file adds the rest of the placement rules
//! (turn-scoped messages included: `clear_at` does not change where a system message may
//! stand) and the tool change rules. No documentation page publishes their texts. The three
//! placement texts are the API's as quoted from real 400s in public code
//! (docs/api-notes.md#mid-conversation-system-messages); the others are ours
//! (docs/api-notes.md#tool-changes and #unverified-points).

use std::collections::HashSet;

use super::View;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use super::turns::{Piece, Turn, TurnBlocks, Turns};
use threadline_wire::betas::{INLINE_TOOLS, MID_CONVERSATION_TOOL_CHANGES};
use threadline_wire::content::{ContentBlock, Role};
use threadline_wire::model::{Capability, Feature};
use threadline_wire::tool_change::{ToolChangeBlock, ToolRef};
use threadline_wire::tools::ToolDefinition;

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let messages = view.messages;
    let declared = Declared::of(view);
    let mut beta_reported = false;
    let mut unsupported_reported = false;
    let mut previous: Option<(Turn<'_>, bool, bool)> = None;
    let mut turns = Turns::new(messages).enumerate().peekable();
    while let Some((t, turn)) = turns.next() {
        let is_system = *turn.role == Role::System;
        // An effort-only system turn renders nothing and may stand anywhere.
        // A model whose row leaves system messages undocumented is held to the same placement
        // rules: a misplaced one is refused whether or not the model takes them.
        let takes_system =
            ctx.model.system_messages || ctx.model.is_undocumented(Capability::SystemMessages);
        if is_system && takes_system && !turn.is_effort_only(messages) {
            let next = turns.peek().map(|(_, next)| next.role);
            let has_change = TurnBlocks::new(messages, &turn, t).any(|tb| {
                matches!(
                    tb.piece,
                    Piece::Block(ContentBlock::ToolAddition(_) | ContentBlock::ToolRemoval(_))
                )
            });
            placement(ctx, t, &turn, previous, next, has_change);
        }
        let mut ends_in_server_result = false;
        let mut has_client_tool_use = false;
        for tb in TurnBlocks::new(messages, &turn, t) {
            let block = match tb.piece {
                Piece::Block(block) => block,
                Piece::Str(_) => {
                    ends_in_server_result = false;
                    continue;
                }
            };
            ends_in_server_result = block.server_tool_result().is_some();
            has_client_tool_use |= matches!(block, ContentBlock::ToolUse(_));
            let (tag, change) = match block {
                ContentBlock::ToolAddition(change) => ("tool_addition", change),
                ContentBlock::ToolRemoval(change) => ("tool_removal", change),
                _ => continue,
            };
            let loc = tb.loc;
            let api = loc.api();
            if !is_system {
                let message = format!("{api}: `{tag}` blocks can only be in `system` messages");
                ctx.report(Rule::ToolChangeOutsideSystemMessage, loc, message);
            }
            if !unsupported_reported && !ctx.model.supports(Feature::ToolChanges) {
                unsupported_reported = true;
                let message = format!("{api}: `{tag}` blocks are not supported on this model");
                let at = (loc, loc.path(), api.as_str());
                ctx.report_capability_at(
                    Feature::ToolChanges.into(),
                    Rule::ToolChangesUnsupported,
                    at,
                    message,
                );
            }
            // Either header carries tool changes (the older one, or `inline-tools`).
            if !beta_reported
                && ctx.options.names_beta(MID_CONVERSATION_TOOL_CHANGES) == Some(false)
                && ctx.options.names_beta(INLINE_TOOLS) == Some(false)
            {
                beta_reported = true;
                let message = format!(
                    "{api}: `{tag}` blocks require the `{MID_CONVERSATION_TOOL_CHANGES}` beta in the `anthropic-beta` header"
                );
                ctx.report(Rule::BetaHeaderMissing, loc, message);
            }
            declared.check(ctx, change, loc, &api);
        }
        previous = Some((turn, ends_in_server_result, has_client_tool_use));
    }
}

/// The API's text for a system message first in `messages` (observed once, 2026-09-30).
const FIRST: &str = "use the top-level 'system' parameter for the initial system prompt";
/// The API's text for a system message after anything but a user turn or an assistant turn
/// ending in a server tool result (observed once, 2026-09-10; its `messages.N: ` by analogy
/// with [`MUST_PRECEDE`]).
const MUST_FOLLOW: &str = "role 'system' must follow a 'user' message or an 'assistant' message ending in a server tool result; the directive-only form (content: [] with output_config) is accepted at any position";
/// The API's text for a system message followed by anything but an assistant turn (observed
/// several times, September and October 2026; earlier quotes end at "the array").
const MUST_PRECEDE: &str = "role 'system' must precede an 'assistant' message or end the array; the directive-only form (content: [] with output_config) is accepted at any position";

/// The placement rules of a system turn `t`; `previous` is the turn before it with whether it
/// ends in a server tool result and whether it holds a client `tool_use`, `next` the role of
/// the turn after it, `has_change` whether the turn holds a tool change block.
fn placement(
    ctx: &mut Ctx<'_>,
    t: usize,
    turn: &Turn<'_>,
    previous: Option<(Turn<'_>, bool, bool)>,
    next: Option<&Role>,
    has_change: bool,
) {
    let loc = turn.loc(t);
    match previous {
        None => {
            let message = format!("messages.{t}: {FIRST}");
            ctx.report(Rule::SystemMessagePlacement, loc, message);
        }
        Some((before, ends_in_server_result, has_tool_use)) => {
            let follows_user = *before.role == Role::User;
            let follows_server_result = *before.role == Role::Assistant && ends_in_server_result;
            // After an assistant turn with a client `tool_use`, the pairing rule already says
            // the call went unanswered.
            let pairing_reports = *before.role == Role::Assistant && has_tool_use;
            if !follows_user && !follows_server_result && !pairing_reports {
                let message = format!("messages.{t}: {MUST_FOLLOW}");
                ctx.report(Rule::SystemMessagePlacement, loc, message);
            }
            // After a paused turn (one ending in a server tool result) text is accepted, tool
            // changes are not: the turn is resumed first.
            if follows_server_result && has_change {
                let message = format!(
                    "messages.{t}: `tool_addition` and `tool_removal` blocks are not accepted directly after a paused `assistant` turn (one ending in a server tool result); resume the turn first"
                );
                ctx.report(Rule::SystemMessagePlacement, loc, message);
            }
        }
    }
    if next.is_some_and(|role| *role != Role::Assistant) {
        let message = format!("messages.{t}: {MUST_PRECEDE}");
        ctx.report(Rule::SystemMessagePlacement, loc, message);
    }
}

/// What a tool change may refer to: the names in `tools`, and the MCP servers (of
/// `mcp_servers` and of `mcp_toolset` tools).
struct Declared<'a> {
    tools: HashSet<&'a str>,
    servers: HashSet<&'a str>,
}

impl<'a> Declared<'a> {
    fn of(view: &View<'a>) -> Self {
        let tools = view.tools.iter().map(ToolDefinition::name).collect();
        let mut servers: HashSet<&str> = HashSet::new();
        if let Some(serde_json::Value::Array(list)) = view.mcp_servers {
            servers.extend(
                list.iter()
                    .filter_map(|s| s.get("name").and_then(|n| n.as_str())),
            );
        }
        for tool in view.tools {
            if let ToolDefinition::Versioned(versioned) = tool
                && let Some(name) = versioned
                    .extra
                    .get("mcp_server_name")
                    .and_then(|n| n.as_str())
            {
                servers.insert(name);
            }
        }
        Declared { tools, servers }
    }

    fn check(&self, ctx: &mut Ctx<'_>, change: &ToolChangeBlock, loc: Loc, api: &str) {
        match &*change.tool {
            ToolRef::Tool(reference) if !self.tools.contains(reference.name.as_str()) => {
                let message = format!(
                    "{api}.tool.name: Tool '{}' not found in provided tools",
                    reference.name
                );
                ctx.report_at(
                    Rule::ToolChangeUnknownTool,
                    loc,
                    loc.field("tool.name"),
                    message,
                );
            }
            ToolRef::McpTool(reference)
                if !self.servers.contains(reference.server_name.as_str()) =>
            {
                self.unknown_server(ctx, &reference.server_name, loc, api);
            }
            ToolRef::McpToolset(reference)
                if !self.servers.contains(reference.server_name.as_str()) =>
            {
                self.unknown_server(ctx, &reference.server_name, loc, api);
            }
            _ => {}
        }
    }

    fn unknown_server(&self, ctx: &mut Ctx<'_>, server: &str, loc: Loc, api: &str) {
        let message = format!(
            "{api}.tool.server_name: MCP server '{server}' not found in provided MCP servers"
        );
        let path = loc.field("tool.server_name");
        ctx.report_at(Rule::ToolChangeUnknownTool, loc, path, message);
    }
}
