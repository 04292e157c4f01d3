//! Tool definitions and `tool_choice`: name pattern, unique names, no cache marker on a
//! deferred tool, a chosen tool that exists.

use std::collections::HashSet;

use super::View;
use super::cache::Breakpoints;
use super::ids::is_valid_tool_name;
use super::report::{Ctx, Loc};
use super::rule::{self, Rule};
use threadline_wire::tools::{ToolChoice, ToolDefinition};

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>, breakpoints: &mut Breakpoints) {
    let max_len = ctx.options.max_tool_name_len;
    let mut names: HashSet<&str> = HashSet::with_capacity(view.tools.len());
    for (n, tool) in view.tools.iter().enumerate() {
        let loc = Loc::Tool(n);
        // Versioned tools have fixed names, checked by their own schema.
        if let ToolDefinition::Custom(custom) = tool
            && !is_valid_tool_name(&custom.name, max_len)
        {
            let message = rule::tool_name_pattern(n, max_len);
            ctx.report_at(Rule::ToolNamePattern, loc, loc.field("name"), message);
        }
        if !names.insert(tool.name()) {
            let message = rule::DUPLICATE_TOOL_NAME.to_owned();
            ctx.report_at(Rule::DuplicateToolName, loc, loc.field("name"), message);
        }
        if let Some(marker) = tool.cache_control() {
            if tool.is_deferred() {
                // Audit: docs/api-notes.md#tool-search (documented; observed, sub2api#4990).
                let message = rule::deferred_tool_with_cache_control(tool.name());
                let path = loc.field("cache_control");
                ctx.report_at(Rule::DeferredToolWithCacheControl, loc, path, message);
            }
            breakpoints.marker(ctx, marker.into(), loc);
        }
    }
    check_tool_choice(ctx, view, &names);
}

fn check_tool_choice(ctx: &mut Ctx<'_>, view: &View<'_>, names: &HashSet<&str>) {
    let Some(choice) = view.tool_choice else {
        return;
    };
    // MCP connector servers provide tools of their own, which this validator cannot list.
    if view.has_mcp_servers {
        return;
    }
    if view.tools.is_empty() {
        ctx.report(
            Rule::ToolChoiceWithoutTools,
            Loc::ToolChoice,
            rule::TOOL_CHOICE_WITHOUT_TOOLS.to_owned(),
        );
    } else if let ToolChoice::Tool(chosen) = choice
        && !names.contains(chosen.name.as_str())
    {
        ctx.report_at(
            Rule::ToolChoiceUnknownTool,
            Loc::ToolChoice,
            "tool_choice.name".to_owned(),
            rule::tool_choice_unknown_tool(&chosen.name),
        );
    }
}
