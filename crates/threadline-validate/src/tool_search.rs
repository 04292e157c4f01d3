//! Tool search and deferred tools: not every tool deferred, every `tool_reference` names a
//! declared tool, and `defer_loading` only on a model with tool search.

use std::collections::HashSet;

use super::View;
use super::report::{Ctx, Loc};
use super::rule::{self, Rule};
use super::turns::{Piece, TurnBlocks, Turns};
use threadline_wire::content::{Content, ContentBlock};
use threadline_wire::model::Feature;
use threadline_wire::tool_search::referenced_tools;
use threadline_wire::tools::ToolDefinition;

/// The tool-definition rules (run with the other `tools` checks).
pub(super) fn check_tools(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let tools = view.tools;
    if tools.is_empty() {
        return;
    }
    if tools.iter().all(ToolDefinition::is_deferred) {
        // Audit: docs/api-notes.md#tool-search (DOC).
        let message = rule::ALL_TOOLS_DEFERRED.to_owned();
        ctx.report_at(
            Rule::AllToolsDeferred,
            Loc::Tool(0),
            "tools".to_owned(),
            message,
        );
    }
    if !ctx.model.supports(Feature::ToolSearch) {
        // Model-specific: the table's row says whether the model has tool search.
        for (n, tool) in tools.iter().enumerate().filter(|(_, t)| t.is_deferred()) {
            let loc = Loc::Tool(n);
            let message = rule::defer_loading_unsupported(tool.name(), &ctx.model.id);
            let path = loc.field("defer_loading");
            ctx.report_capability_at(
                Feature::ToolSearch.into(),
                Rule::DeferLoadingUnsupported,
                (loc, path.clone(), path.as_str()),
                message,
            );
        }
    }
}

/// Whether the tools can be listed at all: an MCP connector server or an `mcp_toolset`
/// provides tools this validator cannot see, which references may name.
fn tools_are_listed(view: &View<'_>) -> bool {
    !view.has_mcp_servers
        && !view
            .tools
            .iter()
            .any(|t| matches!(t, ToolDefinition::Versioned(v) if v.kind.starts_with("mcp_toolset")))
}

/// Every `tool_reference` in the messages (in `tool_result` content, in a
/// `tool_search_tool_result`, or on its own) names a declared tool.
pub(super) fn check_references(ctx: &mut Ctx<'_>, view: &View<'_>) {
    if !tools_are_listed(view) {
        return;
    }
    let mut declared: Option<HashSet<&str>> = None;
    let messages = view.messages;
    for (t, turn) in Turns::new(messages).enumerate() {
        for tb in TurnBlocks::new(messages, &turn, t) {
            let Piece::Block(block) = tb.piece else {
                continue;
            };
            let nested = match block {
                ContentBlock::ToolResult(result) => match &result.content {
                    Some(Content::Blocks(nested)) => Some(nested),
                    _ => None,
                },
                _ => None,
            };
            let refs = match nested {
                // Per nested block, so that the path names the reference itself.
                Some(nested) => nested
                    .iter()
                    .enumerate()
                    .flat_map(|(k, b)| {
                        referenced_tools(b)
                            .into_iter()
                            .map(move |name| (Some(k), name))
                    })
                    .collect::<Vec<_>>(),
                None => referenced_tools(block)
                    .into_iter()
                    .map(|name| (None, name))
                    .collect(),
            };
            if refs.is_empty() {
                continue;
            }
            let names = declared
                .get_or_insert_with(|| view.tools.iter().map(ToolDefinition::name).collect());
            for (k, name) in refs {
                if names.contains(name) {
                    continue;
                }
                let loc = match k {
                    Some(k) => tb.loc.nested(k),
                    None => tb.loc,
                };
                // Audit: docs/api-notes.md#tool-search (DOC).
                let message = rule::tool_reference_not_found(name);
                ctx.report(Rule::ToolReferenceNotFound, loc, message);
            }
        }
    }
}
