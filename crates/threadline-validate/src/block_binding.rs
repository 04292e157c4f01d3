//! `thinking.block_binding` (beta `thinking-binding-controls-2026-08-01`;
//! docs/api-notes.md#thinking-bound-to-its-prefix): what the API does with a thinking block
//! whose prefix changed.
//!
//! Without its beta the field is unknown: a 400 ending `block_binding: Extra inputs are not
//! permitted` (documented). The full path follows the API's schema paths, which name the
//! thinking type (`thinking.enabled.budget_tokens`, observed); a gateway's test records
//! `thinking.adaptive.block_binding: Extra inputs are not permitted`. With the beta, the field
//! works with adaptive thinking only (documented for Sonnet 5.5's `between_tools`; its text is
//! not published, ours), and `prefix_mismatch_behavior` is `error` or `drop_block` (text ours,
//! in the pattern of the API's schema errors).

use super::View;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use threadline_wire::betas::THINKING_BINDING_CONTROLS;
use threadline_wire::request::{PrefixMismatchBehavior, ThinkingConfig};

const BLOCK_BINDING: Loc = Loc::Param("thinking.block_binding", 1);

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let Some(thinking) = view.thinking else {
        return;
    };
    let (present, behavior) = match thinking {
        ThinkingConfig::Adaptive(o) | ThinkingConfig::Disabled(o) => (
            o.block_binding.is_some(),
            o.block_binding
                .as_ref()
                .and_then(|b| b.prefix_mismatch_behavior.as_ref()),
        ),
        ThinkingConfig::Enabled(e) => (e.extra.contains_key("block_binding"), None),
        ThinkingConfig::Unknown(value) => (value.get("block_binding").is_some(), None),
        _ => (false, None),
    };
    if !present {
        return;
    }
    let api = format!("thinking.{}.block_binding", thinking.tag());
    let path = BLOCK_BINDING.path();
    if ctx.options.names_beta(THINKING_BINDING_CONTROLS) == Some(false) {
        let message = format!("{api}: Extra inputs are not permitted");
        ctx.report_at(Rule::BetaHeaderMissing, BLOCK_BINDING, path, message);
        return;
    }
    if !matches!(thinking, ThinkingConfig::Adaptive(_)) {
        let message = format!(
            "{api}: block_binding is only supported with adaptive thinking (\"thinking.type.adaptive\")"
        );
        ctx.report_at(Rule::BlockBindingInvalid, BLOCK_BINDING, path, message);
        return;
    }
    if let Some(PrefixMismatchBehavior::Other(_)) = behavior {
        let message =
            format!("{api}.prefix_mismatch_behavior: Input should be 'error' or 'drop_block'");
        let path = format!("{path}.prefix_mismatch_behavior");
        ctx.report_at(Rule::BlockBindingInvalid, BLOCK_BINDING, path, message);
    }
}
