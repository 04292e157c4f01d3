//! Per-model parameter rules: `max_tokens`, `thinking`, sampling parameters, effort.

use super::View;
use super::report::{Ctx, Loc};
use super::rule::{self, Rule};
use threadline_wire::model::ThinkingMode;
use threadline_wire::request::{Effort, ThinkingConfig};

const MAX_TOKENS: Loc = Loc::Param("max_tokens", 0);
const THINKING_TYPE: Loc = Loc::Param("thinking.type", 1);
const THINKING_BUDGET: Loc = Loc::Param("thinking.budget_tokens", 1);
const TEMPERATURE: Loc = Loc::Param("temperature", 2);
const TOP_P: Loc = Loc::Param("top_p", 3);
const TOP_K: Loc = Loc::Param("top_k", 4);
const EFFORT: Loc = Loc::Param("output_config.effort", 5);

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    check_max_tokens(ctx, view);
    let thinking_on = check_thinking(ctx, view);
    check_sampling(ctx, view, thinking_on);
    check_effort(ctx, view);
}

fn check_max_tokens(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let Some(max_tokens) = view.max_tokens else {
        return;
    };
    let model = ctx.model;
    if max_tokens > model.max_output_tokens {
        // The API names the model's canonical (dated) id; a row that does not describe the
        // requested id (the conservative default for an unknown model) names the request's.
        let describes_request =
            model.id == view.model || model.aliases.iter().any(|a| a == view.model);
        let id = if describes_request {
            model.id.as_str()
        } else {
            view.model
        };
        let message = rule::max_tokens_too_large(max_tokens, model.max_output_tokens, id);
        ctx.report_model(Rule::MaxTokensTooLarge, MAX_TOKENS, message);
    }
}

/// Checks `thinking`; returns whether thinking is on (enabled or adaptive, and accepted).
fn check_thinking(ctx: &mut Ctx<'_>, view: &View<'_>) -> bool {
    let model = ctx.model;
    let (mode, text) = match view.thinking {
        Some(ThinkingConfig::Enabled(_)) => (ThinkingMode::Enabled, rule::ENABLED_UNSUPPORTED),
        Some(ThinkingConfig::Adaptive(_)) => (ThinkingMode::Adaptive, rule::ADAPTIVE_UNSUPPORTED),
        Some(ThinkingConfig::Disabled(_)) => (ThinkingMode::Disabled, rule::DISABLED_UNSUPPORTED),
        _ => return false,
    };
    if !model.accepts_thinking(mode) {
        ctx.report_model(
            Rule::ThinkingTypeUnsupported,
            THINKING_TYPE,
            text.to_owned(),
        );
        return false;
    }
    let Some(ThinkingConfig::Enabled(enabled)) = view.thinking else {
        return mode == ThinkingMode::Adaptive;
    };
    if enabled.budget_tokens < 1024 {
        ctx.report(
            Rule::ThinkingBudgetTooSmall,
            THINKING_BUDGET,
            rule::THINKING_BUDGET_TOO_SMALL.to_owned(),
        );
    }
    if let Some(max_tokens) = view.max_tokens
        && enabled.budget_tokens >= max_tokens
        && !ctx.options.interleaved_thinking
    {
        ctx.report(
            Rule::ThinkingBudgetNotBelowMaxTokens,
            THINKING_BUDGET,
            rule::THINKING_BUDGET_NOT_BELOW_MAX_TOKENS.to_owned(),
        );
    }
    if view.tool_choice.is_some_and(|c| c.forces_tool_use()) {
        ctx.report(
            Rule::ThinkingWithForcedToolChoice,
            Loc::ToolChoice,
            rule::THINKING_WITH_FORCED_TOOL_CHOICE.to_owned(),
        );
    }
    true
}

fn check_sampling(ctx: &mut Ctx<'_>, view: &View<'_>, thinking_on: bool) {
    // Defaults (temperature 1, top_p 1) are accepted everywhere; top_k has no default value.
    let temperature = view.temperature.filter(|t| *t != 1.0);
    if !ctx.model.sampling_params {
        if temperature.is_some() {
            let message = rule::sampling_param_unsupported("temperature");
            ctx.report_model(Rule::SamplingParamUnsupported, TEMPERATURE, message);
        }
        if view.top_p.is_some_and(|p| p != 1.0) {
            let message = rule::sampling_param_unsupported("top_p");
            ctx.report_model(Rule::SamplingParamUnsupported, TOP_P, message);
        }
        if view.top_k.is_some() {
            let message = rule::sampling_param_unsupported("top_k");
            ctx.report_model(Rule::SamplingParamUnsupported, TOP_K, message);
        }
    } else if thinking_on && temperature.is_some() {
        let text = if ctx.model.accepts_thinking(ThinkingMode::Adaptive) {
            rule::TEMPERATURE_WITH_THINKING_ADAPTIVE
        } else {
            rule::TEMPERATURE_WITH_THINKING
        };
        ctx.report_model(Rule::TemperatureWithThinking, TEMPERATURE, text.to_owned());
    }
}

fn check_effort(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let Some(effort) = view.effort else {
        return;
    };
    if let Effort::Other(_) = effort {
        // Not a level the API knows: a schema error this validator does not model.
        return;
    }
    let supported = &ctx.model.effort;
    if supported.is_empty() {
        // Audit: no recorded response and no documented rule says the API rejects effort on a
        // model without effort levels (docs/api-notes.md#per-model-parameters lists where it is supported, not what
        // the others do; the text is the strict-schema message observed for a missing beta
        // header, docs/api-notes.md#headers-and-betas). So a warning, for every model.
        ctx.warn(
            Rule::EffortUnsupported,
            EFFORT,
            rule::EFFORT_NOT_PERMITTED.to_owned(),
        );
    } else if !supported.iter().any(|level| level == effort.as_str()) {
        let message = rule::effort_unsupported(effort.as_str(), supported);
        ctx.report_model(Rule::EffortUnsupported, EFFORT, message);
    }
}
