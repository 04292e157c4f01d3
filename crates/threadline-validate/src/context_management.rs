//! `context_management.edits`: the server-side edits' rules (docs/api-notes.md#context-editing and
//! docs/api-notes.md#server-side-compaction).
//!
//! The API's text is known for one of them only: a beta-only field sent without its beta is
//! ``context_management: Extra inputs are not permitted`` (observed; docs/api-notes.md#headers-and-betas). The others (the
//! compaction trigger minimum, the trigger and keep types, the order of `clear_thinking`, the
//! models) are documented rules whose 400 texts are not published: the texts are ours,
//! written in the API's validation style.

use serde_json::Value;

use super::View;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use threadline_wire::model::Feature;
use threadline_wire::request::ContextEdit;

const EDITS: Loc = Loc::Param("context_management", 6);

/// The documented minimum of a `compact_20260112` trigger.
pub(crate) const COMPACT_TRIGGER_MIN: u64 = 50_000;

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let Some(management) = view.context_management else {
        return;
    };
    let edits = &management.edits;
    let mut beta_reported = false;
    for (n, edit) in edits.iter().enumerate() {
        let path = format!("context_management.edits.{n}");
        if let Some(beta) = threadline_wire::betas::for_edit(edit)
            && !beta_reported
            && ctx.options.names_beta(beta) == Some(false)
        {
            // The API's text for a beta-only field sent without its beta (docs/api-notes.md#request-body).
            beta_reported = true;
            let message = "context_management: Extra inputs are not permitted".to_owned();
            ctx.report_at(
                Rule::BetaHeaderMissing,
                EDITS,
                "context_management".to_owned(),
                message,
            );
        }
        match edit {
            ContextEdit::Compact(compact) => {
                if !ctx.model.supports(Feature::ServerCompaction) {
                    // Ours: the model list is documented, the text is not.
                    let message =
                        format!("{path}: compact_20260112 is not supported on this model");
                    ctx.report_capability_at(
                        Feature::ServerCompaction.into(),
                        Rule::CompactUnsupported,
                        (EDITS, path.clone(), path.as_str()),
                        message,
                    );
                }
                if let Some(trigger) = &compact.trigger {
                    check_trigger(
                        ctx,
                        &path,
                        trigger,
                        &["input_tokens"],
                        Some(COMPACT_TRIGGER_MIN),
                    );
                }
            }
            ContextEdit::ClearToolUses(clear) => {
                if let Some(trigger) = &clear.trigger {
                    check_trigger(ctx, &path, trigger, &["input_tokens", "tool_uses"], None);
                }
            }
            ContextEdit::ClearThinking(clear) => {
                if n > 0 {
                    // Ours: "must be listed first" is documented, the text is not.
                    let message = format!(
                        "{path}: clear_thinking_20251015 must be the first edit when combined with other edits"
                    );
                    ctx.report_at(Rule::ClearThinkingNotFirst, EDITS, path.clone(), message);
                }
                if let Some(keep) = &clear.keep {
                    check_thinking_keep(ctx, &path, keep);
                }
            }
            _ => {}
        }
    }
}

/// `trigger: {type, value}`: a type among `types`, a value of at least `min`.
fn check_trigger(ctx: &mut Ctx<'_>, edit: &str, trigger: &Value, types: &[&str], min: Option<u64>) {
    let kind = trigger.get("type").and_then(Value::as_str);
    if !kind.is_some_and(|k| types.contains(&k)) {
        let expected: Vec<String> = types.iter().map(|t| format!("'{t}'")).collect();
        let path = format!("{edit}.trigger.type");
        let message = format!("{path}: Input should be {}", expected.join(" or "));
        ctx.report_at(Rule::ContextEditInvalid, EDITS, path, message);
        return;
    }
    if let (Some(min), Some(value)) = (min, trigger.get("value").and_then(Value::as_u64))
        && value < min
    {
        let path = format!("{edit}.trigger.value");
        let message = format!("{path}: Input should be greater than or equal to {min}");
        ctx.report_at(Rule::CompactTriggerTooSmall, EDITS, path, message);
    }
}

/// `keep`: `"all"`, `{type: "all"}` or `{type: "thinking_turns", value: N ≥ 1}`.
fn check_thinking_keep(ctx: &mut Ctx<'_>, edit: &str, keep: &Value) {
    if keep.as_str() == Some("all") {
        return;
    }
    match keep.get("type").and_then(Value::as_str) {
        Some("all") => {}
        Some("thinking_turns") => {
            if keep.get("value").and_then(Value::as_u64) == Some(0) {
                let path = format!("{edit}.keep.value");
                let message = format!("{path}: Input should be greater than or equal to 1");
                ctx.report_at(Rule::ContextEditInvalid, EDITS, path, message);
            }
        }
        _ => {
            let path = format!("{edit}.keep.type");
            let message = format!("{path}: Input should be 'thinking_turns' or 'all'");
            ctx.report_at(Rule::ContextEditInvalid, EDITS, path, message);
        }
    }
}
