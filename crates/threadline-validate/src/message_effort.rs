//! Per-message effort: `output_config` on a (non-turn-scoped) `role: "system"` message
//! (beta `mid-conversation-output-config-2026-07-01`, or Claude Code's
//! `per-turn-control-2026-07-01`; docs/api-notes.md#mid-conversation-system-messages).
//!
//! Without either header the field is unknown to the API: `messages.N.output_config: Extra
//! inputs are not permitted` (a gateway relayed this text). On a model without per-message
//! effort: `output_config.effort requires a model that supports per-turn effort; this model
//! does not` (the docs' text), a warning where the model's row says the docs are silent.
//! Turn-scoped messages have a rule of their own (`clear_at.rs`).

use super::View;
use super::clear_at::is_turn_scoped;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use super::turns::Turns;
use threadline_wire::betas::{MID_CONVERSATION_OUTPUT_CONFIG, PER_TURN_CONTROL};
use threadline_wire::model::{Capability, Feature};

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    // On a model that takes no system message the role rule already refuses the message.
    if !ctx.model.may_have(Capability::SystemMessages) {
        return;
    }
    let messages = view.messages;
    let beta_missing = ctx.options.names_beta(MID_CONVERSATION_OUTPUT_CONFIG) == Some(false)
        && ctx.options.names_beta(PER_TURN_CONTROL) == Some(false);
    let mut beta_reported = false;
    let mut model_reported = false;
    for (t, turn) in Turns::new(messages).enumerate() {
        for (m, message) in messages.iter().enumerate().take(turn.end).skip(turn.start) {
            if is_turn_scoped(message) {
                continue;
            }
            let Some(config) = message.extra.get("output_config").filter(|v| !v.is_null()) else {
                continue;
            };
            let loc = Loc::Message { msg: m, turn: t };
            let path = format!("messages.{m}.output_config");
            if beta_missing {
                if !beta_reported {
                    beta_reported = true;
                    let text = format!("{path}: Extra inputs are not permitted");
                    ctx.report_at(Rule::BetaHeaderMissing, loc, path, text);
                }
                continue;
            }
            let has_effort = config.get("effort").is_some_and(|e| !e.is_null());
            if has_effort && !model_reported && !ctx.model.supports(Feature::PerMessageEffort) {
                model_reported = true;
                let api = format!("{path}.effort");
                let text = format!(
                    "{api}: output_config.effort requires a model that supports per-turn effort; this model does not"
                );
                ctx.report_capability_at(
                    Feature::PerMessageEffort.into(),
                    Rule::PerMessageEffortUnsupported,
                    (loc, api.clone(), api.as_str()),
                    text,
                );
            }
        }
    }
}
