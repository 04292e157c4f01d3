//! `thinking.display` and `output_config.task_budget` (docs/api-notes.md#output-config and
//! #thinking). Whether a model takes `adaptive` at all, and which effort levels it takes, are
//! `params.rs`'s rules (`ThinkingTypeUnsupported`, `EffortUnsupported`); this file adds what the
//! documentation states beyond them. None of these 400 texts is published except the
//! strict-schema pattern for a beta-only field: the others are ours.

use super::View;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use threadline_wire::betas::{TASK_BUDGETS, THINKING_DISPLAY_UPDATES};
use threadline_wire::model::Feature;
use threadline_wire::request::{ThinkingConfig, ThinkingDisplay};

const THINKING_DISPLAY: Loc = Loc::Param("thinking.display", 1);
const THINKING_TYPE: Loc = Loc::Param("thinking.type", 1);
const TASK_BUDGET: Loc = Loc::Param("output_config.task_budget", 5);

/// The documented minimum of `task_budget.total`.
pub(crate) const TASK_BUDGET_MIN: u64 = 20_000;

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    check_display(ctx, view.thinking);
    if let Some(ThinkingConfig::Disabled(options)) = view.thinking
        && options.display.is_some()
    {
        // Ours: "`display` with `disabled` is invalid" is documented, the text is not.
        let message =
            "thinking.display: `display` cannot be set when thinking is disabled".to_owned();
        ctx.report(Rule::ThinkingDisplayWithDisabled, THINKING_DISPLAY, message);
    }
    if let (Some(ThinkingConfig::Disabled(_)), Some(effort), Some(allowed)) = (
        view.thinking,
        view.effort,
        ctx.model.disabled_thinking_efforts.as_ref(),
    ) && !allowed.iter().any(|level| level == effort.as_str())
    {
        // Ours: documented for Opus 5 at `xhigh` / `max` (DOC:effort), the text is not.
        let message = format!(
            "thinking.type: \"thinking.type.disabled\" is not supported at effort '{effort}' on this model"
        );
        ctx.report_model(Rule::ThinkingDisabledAtEffort, THINKING_TYPE, message);
    }
    let Some(budget) = view.output_config.and_then(|c| c.task_budget.as_ref()) else {
        return;
    };
    if ctx.options.names_beta(TASK_BUDGETS) == Some(false) {
        // The strict-schema text of a beta-only field sent without its beta (inferred from
        // docs/api-notes.md#request-body).
        let message = "output_config.task_budget: Extra inputs are not permitted".to_owned();
        ctx.report(Rule::BetaHeaderMissing, TASK_BUDGET, message);
    }
    if !ctx.model.supports(Feature::TaskBudget) {
        let message =
            "output_config.task_budget: task budgets are not supported on this model".to_owned();
        let api = "output_config.task_budget";
        ctx.report_capability_at(
            Feature::TaskBudget.into(),
            Rule::TaskBudgetUnsupported,
            (TASK_BUDGET, TASK_BUDGET.path(), api),
            message,
        );
    }
    if budget.total < TASK_BUDGET_MIN {
        let path = "output_config.task_budget.total".to_owned();
        let message = format!("{path}: Input should be greater than or equal to {TASK_BUDGET_MIN}");
        ctx.report_at(Rule::TaskBudgetTooSmall, TASK_BUDGET, path, message);
    }
}

/// `thinking.display`: `summarized`, `omitted`, or `updates` with its beta
/// (docs/api-notes.md#thinking). The texts are ours, in the pattern of the API's schema
/// errors (the API's path names the thinking type: `thinking.enabled.budget_tokens`).
fn check_display(ctx: &mut Ctx<'_>, thinking: Option<&ThinkingConfig>) {
    let Some(thinking) = thinking else {
        return;
    };
    let Some(display) = thinking.display() else {
        return;
    };
    let (kind, enabled) = match thinking {
        ThinkingConfig::Enabled(_) => ("enabled", true),
        ThinkingConfig::Adaptive(_) => ("adaptive", false),
        ThinkingConfig::Disabled(_) => ("disabled", false),
        _ => return,
    };
    let beta = ctx.options.names_beta(THINKING_DISPLAY_UPDATES);
    let unknown = |with_updates: bool| {
        let values = if with_updates {
            "'summarized', 'omitted' or 'updates'"
        } else {
            "'summarized' or 'omitted'"
        };
        format!("thinking.{kind}.display: Input should be {values}")
    };
    match display {
        ThinkingDisplay::Summarized | ThinkingDisplay::Omitted => {}
        ThinkingDisplay::Updates if beta == Some(false) => {
            // Without its beta, `updates` is rejected like an unknown value.
            ctx.report(Rule::BetaHeaderMissing, THINKING_DISPLAY, unknown(false));
        }
        ThinkingDisplay::Updates if enabled => {
            // Documented with adaptive thinking; with manual thinking, whether the API accepts
            // it is not (Claude Code 2.1.328 sends it to Sonnet and Haiku 4.5).
            let message = "thinking.display: whether `display: \"updates\"` is accepted with `thinking.type: \"enabled\"` is not documented".to_owned();
            ctx.warn(Rule::ThinkingDisplayInvalid, THINKING_DISPLAY, message);
        }
        ThinkingDisplay::Updates => {}
        _ => {
            let message = unknown(beta == Some(true));
            ctx.report(Rule::ThinkingDisplayInvalid, THINKING_DISPLAY, message);
        }
    }
}
