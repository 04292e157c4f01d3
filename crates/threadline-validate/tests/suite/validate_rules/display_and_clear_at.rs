//! `thinking.display: "updates"` and turn-scoped system messages (`clear_at`): one failing and
//! one passing case each, with the exact texts (the API's where its documentation lists them,
//! ours otherwise; see each rule's documentation), and the findings that are warnings.

use serde_json::{Value, json};
use threadline_validate::{Rule, ValidateOptions, validate_report};
use threadline_wire::MessagesRequest;

use super::{
    Case, assistant, body, fails, findings, marker, model, passes, text, tool_result, tool_use,
    user, with_options,
};

const FABLE_51: &str = "claude-fable-5-1";
const DISPLAY_BETA: &str = "thinking-display-updates-2026-08-18";
const CLEAR_AT_BETA: &str = "mid-conversation-system-clear-at-2026-08-21";

fn beta(case: Case, header: &str) -> Case {
    with_options(case, ValidateOptions::default().with_beta_header(header))
}

/// A body on `model_id` with `messages` and `extra` fields.
fn on(model_id: &str, messages: Value, extra: Value) -> String {
    let mut request: Value = serde_json::from_str(&body(messages, extra)).expect("JSON");
    request["model"] = json!(model_id);
    request.to_string()
}

fn adaptive(display: &str) -> Value {
    json!({"thinking": {"type": "adaptive", "display": display}})
}

fn system(content: Value) -> Value {
    json!({"role": "system", "content": content})
}

/// A system message with `clear_at`.
fn scoped(clear_at: &str, content: Value) -> Value {
    json!({"role": "system", "clear_at": clear_at, "content": content})
}

fn reminder() -> Value {
    scoped(
        "next_user_message",
        json!("Request independent reads in one turn."),
    )
}

fn hello() -> Value {
    user(json!("Hello"))
}

#[allow(clippy::too_many_lines)]
pub(super) fn cases() -> Vec<Case> {
    vec![
        // --- thinking.display ---------------------------------------------------------------
        fails(
            Rule::ThinkingDisplayInvalid,
            FABLE_51,
            on(FABLE_51, json!([hello()]), adaptive("bogus")),
            &[(
                "thinking.display",
                "thinking.adaptive.display: Input should be 'summarized' or 'omitted'",
            )],
        ),
        beta(
            fails(
                Rule::ThinkingDisplayInvalid,
                FABLE_51,
                on(FABLE_51, json!([hello()]), adaptive("bogus")),
                &[(
                    "thinking.display",
                    "thinking.adaptive.display: Input should be 'summarized', 'omitted' or 'updates'",
                )],
            ),
            DISPLAY_BETA,
        ),
        beta(
            passes(
                Rule::ThinkingDisplayInvalid,
                FABLE_51,
                on(FABLE_51, json!([hello()]), adaptive("updates")),
            ),
            DISPLAY_BETA,
        ),
        // Without its beta, `updates` is refused like an unknown value.
        beta(
            fails(
                Rule::BetaHeaderMissing,
                FABLE_51,
                on(FABLE_51, json!([hello()]), adaptive("updates")),
                &[(
                    "thinking.display",
                    "thinking.adaptive.display: Input should be 'summarized' or 'omitted'",
                )],
            ),
            "effort-2025-11-24",
        ),
        // --- clear_at: the beta, the role, the value ----------------------------------------
        beta(
            fails(
                Rule::BetaHeaderMissing,
                FABLE_51,
                on(FABLE_51, json!([hello(), reminder()]), json!({})),
                &[(
                    "messages.1.clear_at",
                    "messages.1.clear_at: Extra inputs are not permitted",
                )],
            ),
            "effort-2025-11-24",
        ),
        beta(
            passes(
                Rule::BetaHeaderMissing,
                FABLE_51,
                on(FABLE_51, json!([hello(), reminder()]), json!({})),
            ),
            CLEAR_AT_BETA,
        ),
        // The index is the message as sent (messages 1 and 2 merge into one system turn).
        fails(
            Rule::ClearAtInvalid,
            FABLE_51,
            on(
                FABLE_51,
                json!([
                    {"role": "user", "clear_at": "next_user_message", "content": "Hello"},
                    system(json!("Be brief.")),
                    scoped("always", json!("And polite."))
                ]),
                json!({}),
            ),
            &[
                (
                    "messages.0.clear_at",
                    "messages.0.clear_at: clear_at is only permitted on role 'system' messages",
                ),
                (
                    "messages.2.clear_at",
                    "messages.2.clear_at: Input should be 'next_user_message' or 'never'",
                ),
            ],
        ),
        beta(
            passes(
                Rule::ClearAtInvalid,
                FABLE_51,
                on(
                    FABLE_51,
                    json!([hello(), scoped("never", json!("Be brief.")), reminder()]),
                    json!({}),
                ),
            ),
            CLEAR_AT_BETA,
        ),
        // --- turn-scoped: text only, no output_config, no cache_control ---------------------
        fails(
            Rule::TurnScopedSystemMessageInvalid,
            FABLE_51,
            on(
                FABLE_51,
                json!([
                    hello(),
                    {"role": "system", "clear_at": "next_user_message",
                     "output_config": {"effort": "low"},
                     "content": [
                         {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "get_weather"}},
                         marker(text("Request independent reads in one turn."), None)
                     ]}
                ]),
                json!({"tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]}),
            ),
            &[
                (
                    "messages.1",
                    "messages.1: a turn-scoped system message supports text blocks only (clear_at: 'next_user_message')",
                ),
                (
                    "messages.1.output_config",
                    "messages.1: output_config is not permitted on a turn-scoped system message (clear_at: 'next_user_message')",
                ),
                (
                    "messages.1.content.1",
                    "messages.1.content.1: cache_control is not permitted on a turn-scoped system message (clear_at: 'next_user_message')",
                ),
            ],
        ),
        // The documentation's agent-loop step: an earlier reminder cleared, the breakpoint on
        // the last block of the user turn before the new ones.
        beta(
            passes(
                Rule::TurnScopedSystemMessageInvalid,
                FABLE_51,
                on(
                    FABLE_51,
                    json!([
                        user(json!("Fix the failing test.")),
                        assistant(json!([tool_use("toolu_01")])),
                        user(json!([tool_result("toolu_01")])),
                        reminder(),
                        assistant(json!([tool_use("toolu_02"), tool_use("toolu_03")])),
                        user(json!([
                            tool_result("toolu_02"),
                            marker(tool_result("toolu_03"), None)
                        ])),
                        reminder(),
                        scoped(
                            "next_user_message",
                            json!([text("The shell exited with status 137.")])
                        )
                    ]),
                    json!({"tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]}),
                ),
            ),
            CLEAR_AT_BETA,
        ),
        // --- placement: a turn-scoped message followed by a user message; tool changes after
        // a paused turn ----------------------------------------------------------------------
        fails(
            Rule::SystemMessagePlacement,
            FABLE_51,
            on(
                FABLE_51,
                json!([hello(), reminder(), user(json!("And now?"))]),
                json!({}),
            ),
            &[(
                "messages.1",
                "messages.1: role 'system' must precede an 'assistant' message or end the array; the directive-only form (content: [] with output_config) is accepted at any position",
            )],
        ),
        fails(
            Rule::SystemMessagePlacement,
            FABLE_51,
            on(
                FABLE_51,
                json!([
                    user(json!("Search the web.")),
                    assistant(json!([
                        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
                    ])),
                    system(json!([
                        {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "get_weather"}}
                    ]))
                ]),
                json!({"tools": [
                    {"type": "web_search_20250305", "name": "web_search"},
                    {"name": "get_weather", "input_schema": {"type": "object"}}
                ]}),
            ),
            &[(
                "messages.2",
                "messages.2: `tool_addition` and `tool_removal` blocks are not accepted directly after a paused `assistant` turn (one ending in a server tool result); resume the turn first",
            )],
        ),
    ]
}

/// `updates` with manual thinking: accepted or not is undocumented, so a warning; without
/// its beta it is refused like any unknown value.
#[test]
fn display_updates_with_manual_thinking_is_a_warning_and_without_its_beta_a_violation() {
    let request = on(
        "claude-sonnet-4-5",
        json!([hello()]),
        json!({"max_tokens": 32000, "thinking": {"type": "enabled", "budget_tokens": 31999, "display": "updates"}}),
    );
    let request: MessagesRequest = serde_json::from_str(&request).expect("parses");
    let with = ValidateOptions::default().with_beta_header(DISPLAY_BETA);
    let report = validate_report(&request, model("claude-sonnet-4-5"), &with);
    assert_eq!(findings(&report.violations), []);
    assert_eq!(
        findings(&report.warnings),
        [(
            Rule::ThinkingDisplayInvalid,
            "thinking.display",
            "thinking.display: whether `display: \"updates\"` is accepted with `thinking.type: \"enabled\"` is not documented"
        )]
    );
    let without = ValidateOptions::default().with_beta_header("");
    let report = validate_report(&request, model("claude-sonnet-4-5"), &without);
    assert_eq!(
        findings(&report.violations),
        [(
            Rule::BetaHeaderMissing,
            "thinking.display",
            "thinking.enabled.display: Input should be 'summarized' or 'omitted'"
        )]
    );
    assert_eq!(report.warnings, []);
    // With the header unknown (`threadline check` without `--beta`), nothing is said.
    let report = validate_report(
        &serde_json::from_str(&on(FABLE_51, json!([hello()]), adaptive("updates")))
            .expect("parses"),
        model(FABLE_51),
        &ValidateOptions::default(),
    );
    assert_eq!((report.violations, report.warnings), (vec![], vec![]));
}

/// Automatic caching skips a turn-scoped message: the marker lands on the user turn before it.
#[test]
fn automatic_caching_skips_a_turn_scoped_message() {
    let request = on(
        FABLE_51,
        json!([user(json!([marker(text("Hello"), Some("1h"))])), reminder()]),
        json!({"cache_control": {"type": "ephemeral"}}),
    );
    super::check(
        &request,
        FABLE_51,
        &[(
            "cache_control.ttl",
            "cache_control.ttl: the automatic cache_control (ttl '5m') lands on messages.0.content.0, which already has a cache_control with ttl '1h'; use the same ttl or remove one of them",
        )],
    );
}
