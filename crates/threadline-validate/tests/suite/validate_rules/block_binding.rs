//! `thinking.block_binding`: without its beta, with a thinking type other than `adaptive`, and
//! with an unknown `prefix_mismatch_behavior`; one failing and one passing case each, with the
//! exact texts (see [`Rule::BlockBindingInvalid`] for their sources).

use serde_json::{Value, json};
use threadline_validate::{Rule, ValidateOptions};

use super::{Case, body, fails, passes, user, with_options};

const OPUS_55: &str = "claude-opus-5-5";
const SONNET_55: &str = "claude-sonnet-5-5";
const BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";

fn beta(case: Case, header: &str) -> Case {
    with_options(case, ValidateOptions::default().with_beta_header(header))
}

/// A body on `model_id` with `thinking`.
fn on(model_id: &str, thinking: Value) -> String {
    let mut request: Value =
        serde_json::from_str(&body(json!([user(json!("Hello"))]), json!({}))).expect("JSON");
    request["model"] = json!(model_id);
    request["thinking"] = thinking;
    request.to_string()
}

fn binding(kind: &str, behavior: &str) -> Value {
    json!({"type": kind, "block_binding": {"prefix_mismatch_behavior": behavior}})
}

pub(super) fn cases() -> Vec<Case> {
    vec![
        // --- the beta -----------------------------------------------------------------------
        beta(
            fails(
                Rule::BetaHeaderMissing,
                OPUS_55,
                on(OPUS_55, binding("adaptive", "drop_block")),
                &[(
                    "thinking.block_binding",
                    "thinking.adaptive.block_binding: Extra inputs are not permitted",
                )],
            ),
            "",
        ),
        beta(
            passes(
                Rule::BetaHeaderMissing,
                OPUS_55,
                on(OPUS_55, binding("adaptive", "error")),
            ),
            BINDING_BETA,
        ),
        // The header is not known: nothing to say about it.
        passes(
            Rule::BetaHeaderMissing,
            OPUS_55,
            on(OPUS_55, binding("adaptive", "drop_block")),
        ),
        // --- adaptive only ------------------------------------------------------------------
        beta(
            fails(
                Rule::BlockBindingInvalid,
                SONNET_55,
                on(SONNET_55, binding("between_tools", "drop_block")),
                &[(
                    "thinking.block_binding",
                    "thinking.between_tools.block_binding: block_binding is only supported with adaptive thinking (\"thinking.type.adaptive\")",
                )],
            ),
            BINDING_BETA,
        ),
        beta(
            passes(
                Rule::BlockBindingInvalid,
                SONNET_55,
                on(SONNET_55, binding("adaptive", "drop_block")),
            ),
            BINDING_BETA,
        ),
        // --- the setting's values -----------------------------------------------------------
        beta(
            fails(
                Rule::BlockBindingInvalid,
                OPUS_55,
                on(OPUS_55, binding("adaptive", "ignore")),
                &[(
                    "thinking.block_binding.prefix_mismatch_behavior",
                    "thinking.adaptive.block_binding.prefix_mismatch_behavior: Input should be 'error' or 'drop_block'",
                )],
            ),
            BINDING_BETA,
        ),
        beta(
            passes(
                Rule::BlockBindingInvalid,
                OPUS_55,
                on(OPUS_55, json!({"type": "adaptive", "block_binding": {}})),
            ),
            BINDING_BETA,
        ),
    ]
}
