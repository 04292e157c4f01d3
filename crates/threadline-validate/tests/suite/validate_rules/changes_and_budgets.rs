//! The rules added with tool changes (tool changes and mid-conversation system message placement, context
//! management edits, thinking display, task budgets): one failing and one passing case each,
//! with the exact texts (ours where the API publishes none; see each rule's documentation).

use serde_json::{Value, json};
use threadline_validate::{Rule, ValidateOptions};

use super::{
    Case, assistant, body, fails, passes, text, tool_result, tool_use, user, with_options,
};

const OPUS_48: &str = "claude-opus-4-8";
const OPUS_55: &str = "claude-opus-5-5";

fn system(content: Value) -> Value {
    json!({"role": "system", "content": content})
}

fn addition(name: &str) -> Value {
    json!({"type": "tool_addition", "tool": {"type": "tool_reference", "name": name}})
}

fn removal(name: &str) -> Value {
    json!({"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}})
}

fn tools() -> Value {
    json!([
        {"name": "get_weather", "input_schema": {"type": "object"}},
        {"name": "deploy", "input_schema": {"type": "object"}, "defer_loading": true}
    ])
}

/// A body on Opus 4.8 with the two tools.
fn opus(messages: Value) -> String {
    let mut request: Value = serde_json::from_str(&body(messages, json!({"tools": tools()})))
        .expect("a test body is JSON");
    request["model"] = json!(OPUS_48);
    request.to_string()
}

/// [`opus`] on Opus 5.5.
fn opus55(messages: Value) -> String {
    let mut request: Value = serde_json::from_str(&opus(messages)).expect("JSON");
    request["model"] = json!(OPUS_55);
    request.to_string()
}

impl Case {
    /// This case breaks `rule` too.
    fn also(mut self, rule: Rule) -> Case {
        self.also.push(rule);
        self
    }
}

fn beta(case: Case, header: &str) -> Case {
    with_options(case, ValidateOptions::default().with_beta_header(header))
}

/// `[user, effort-only system message]` on `model`.
fn effort_only(model: &str) -> String {
    let mut request: Value = serde_json::from_str(&body(
        json!([user(json!("Hello")), {"role": "system", "content": [], "output_config": {"effort": "low"}}]),
        json!({}),
    ))
    .expect("a test body is JSON");
    request["model"] = json!(model);
    request.to_string()
}

const TOOL_CHANGES_BETA: &str = "mid-conversation-tool-changes-2026-07-01";

fn compact(trigger: u64) -> Value {
    json!({"context_management": {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": trigger}}]}})
}

#[allow(clippy::too_many_lines)]
pub(super) fn cases() -> Vec<Case> {
    let hello = || user(json!("Hello"));
    let changes = || {
        system(json!([
            removal("get_weather"),
            addition("deploy"),
            text("Deploys are allowed.")
        ]))
    };
    vec![
        // --- mid-conversation system messages ---------------------------------------------
        beta(
            passes(
                Rule::SystemMessagePlacement,
                OPUS_48,
                opus(json!([
                    hello(),
                    changes(),
                    assistant(json!("On it.")),
                    user(json!("Go"))
                ])),
            ),
            TOOL_CHANGES_BETA,
        ),
        fails(
            Rule::SystemMessagePlacement,
            OPUS_48,
            opus(json!([system(json!("Be brief.")), hello()])),
            &[
                (
                    "messages.0",
                    "messages.0: use the top-level 'system' parameter for the initial system prompt",
                ),
                (
                    "messages.0",
                    "messages.0: role 'system' must precede an 'assistant' message or end the array; the directive-only form (content: [] with output_config) is accepted at any position",
                ),
            ],
        ),
        fails(
            Rule::SystemMessagePlacement,
            OPUS_48,
            opus(json!([
                hello(),
                assistant(json!("Hi.")),
                system(json!("Be brief."))
            ])),
            &[(
                "messages.2",
                "messages.2: role 'system' must follow a 'user' message or an 'assistant' message ending in a server tool result; the directive-only form (content: [] with output_config) is accepted at any position",
            )],
        ),
        // An effort-only system message (empty content, `output_config`) renders nothing and
        // is accepted anywhere: where Claude Code 2.1.328 puts it after a compaction, and
        // first; grouped with a text-carrying one, the usual rules hold. On Opus 5.5, which
        // takes per-message effort (Opus 4.8 does not).
        passes(
            Rule::EmptyContent,
            OPUS_55,
            opus55(json!([
                hello(),
                {"role": "system", "content": [], "output_config": {"effort": "medium"}},
                assistant(json!("On it.")),
                user(json!("Go"))
            ])),
        ),
        passes(
            Rule::SystemMessagePlacement,
            OPUS_55,
            opus55(json!([
                {"role": "system", "content": [], "output_config": {"effort": "low"}},
                hello(),
                assistant(json!("Hi.")),
                {"role": "system", "content": [], "output_config": {"effort": "high"}},
                user(json!("Go"))
            ])),
        ),
        fails(
            Rule::EmptyContent,
            OPUS_48,
            opus(json!([
                hello(),
                system(json!([])),
                assistant(json!("On it.")),
                user(json!("Go"))
            ])),
            &[(
                "messages.1",
                "messages.1: all messages must have non-empty content except for the optional final assistant message",
            )],
        ),
        fails(
            Rule::SystemMessagePlacement,
            OPUS_55,
            opus55(json!([
                {"role": "system", "content": [], "output_config": {"effort": "low"}},
                system(json!("Be brief.")),
                hello()
            ])),
            &[
                (
                    "messages.0",
                    "messages.0: use the top-level 'system' parameter for the initial system prompt",
                ),
                (
                    "messages.0",
                    "messages.0: role 'system' must precede an 'assistant' message or end the array; the directive-only form (content: [] with output_config) is accepted at any position",
                ),
            ],
        ),
        // After a server tool result the system message may follow the assistant turn.
        passes(
            Rule::SystemMessagePlacement,
            OPUS_48,
            opus(json!([
                hello(),
                assistant(json!([
                    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
                ])),
                system(json!("Be brief."))
            ])),
        ),
        // --- tool changes ------------------------------------------------------------------
        fails(
            Rule::ToolChangeOutsideSystemMessage,
            OPUS_48,
            opus(json!([user(json!([text("Hi"), addition("deploy")]))])),
            &[(
                "messages.0.content.1",
                "messages.0.content.1: `tool_addition` blocks can only be in `system` messages",
            )],
        ),
        passes(
            Rule::ToolChangeOutsideSystemMessage,
            OPUS_48,
            opus(json!([hello(), system(json!([addition("deploy")]))])),
        ),
        fails(
            Rule::ToolChangeUnknownTool,
            OPUS_48,
            opus(json!([
                hello(),
                system(json!([
                    addition("launch"),
                    json!({"type": "tool_removal", "tool": {"type": "mcp_toolset_reference", "server_name": "jira"}})
                ]))
            ])),
            &[
                (
                    "messages.1.content.0.tool.name",
                    "messages.1.content.0.tool.name: Tool 'launch' not found in provided tools",
                ),
                (
                    "messages.1.content.1.tool.server_name",
                    "messages.1.content.1.tool.server_name: MCP server 'jira' not found in provided MCP servers",
                ),
            ],
        ),
        passes(Rule::ToolChangeUnknownTool, OPUS_48, {
            let mut request: Value = serde_json::from_str(&opus(json!([hello(), system(json!([
                    json!({"type": "tool_removal", "tool": {"type": "mcp_toolset_reference", "server_name": "jira"}}),
                    json!({"type": "tool_addition", "tool": {"type": "mcp_tool_reference", "server_name": "jira", "name": "create_issue"}})
                ]))]))).expect("JSON");
            request["mcp_servers"] =
                json!([{"type": "url", "url": "https://jira.example/mcp", "name": "jira"}]);
            request.to_string()
        }),
        fails(
            Rule::ToolChangesUnsupported,
            "claude-sonnet-5",
            {
                let mut request: Value = serde_json::from_str(&body(
                    json!([hello(), system(json!([addition("deploy")]))]),
                    json!({"tools": tools()}),
                ))
                .expect("JSON");
                request["model"] = json!("claude-sonnet-5");
                request.to_string()
            },
            &[
                (
                    "messages.1.role",
                    "messages.1.role: Input should be 'user' or 'assistant'",
                ),
                (
                    "messages.1.content.0",
                    "messages.1.content.0: `tool_addition` blocks are not supported on this model",
                ),
            ],
        )
        .also(Rule::InvalidRole),
        passes(
            Rule::ToolChangesUnsupported,
            "claude-fable-5",
            opus(json!([hello(), system(json!([addition("deploy")]))])),
        ),
        beta(
            fails(
                Rule::BetaHeaderMissing,
                OPUS_48,
                opus(json!([hello(), changes()])),
                &[(
                    "messages.1.content.0",
                    "messages.1.content.0: `tool_removal` blocks require the `mid-conversation-tool-changes-2026-07-01` beta in the `anthropic-beta` header",
                )],
            ),
            "files-api-2025-04-14",
        ),
        beta(
            passes(
                Rule::BetaHeaderMissing,
                OPUS_48,
                opus(json!([hello(), changes()])),
            ),
            "mid-conversation-tool-changes-2026-07-01,files-api-2025-04-14",
        ),
        // The header the docs name since 2026-09-15 carries them too.
        beta(
            passes(
                Rule::BetaHeaderMissing,
                OPUS_48,
                opus(json!([hello(), changes()])),
            ),
            "inline-tools-2026-09-15",
        ),
        // --- per-message effort ------------------------------------------------------------
        beta(
            fails(
                Rule::BetaHeaderMissing,
                "claude-opus-5-5",
                effort_only("claude-opus-5-5"),
                &[(
                    "messages.1.output_config",
                    "messages.1.output_config: Extra inputs are not permitted",
                )],
            ),
            "files-api-2025-04-14",
        ),
        beta(
            passes(
                Rule::BetaHeaderMissing,
                "claude-opus-5-5",
                effort_only("claude-opus-5-5"),
            ),
            "mid-conversation-output-config-2026-07-01",
        ),
        // Claude Code's header carries it too.
        beta(
            passes(
                Rule::BetaHeaderMissing,
                "claude-opus-5-5",
                effort_only("claude-opus-5-5"),
            ),
            "per-turn-control-2026-07-01",
        ),
        fails(
            Rule::PerMessageEffortUnsupported,
            OPUS_48,
            effort_only(OPUS_48),
            &[(
                "messages.1.output_config.effort",
                "messages.1.output_config.effort: output_config.effort requires a model that supports per-turn effort; this model does not",
            )],
        ),
        passes(
            Rule::PerMessageEffortUnsupported,
            "claude-fable-5-1",
            effort_only("claude-fable-5-1"),
        ),
        // --- context management -------------------------------------------------------------
        beta(
            fails(
                Rule::BetaHeaderMissing,
                "claude-sonnet-4-6",
                body(json!([hello()]), compact(150_000)),
                &[(
                    "context_management",
                    "context_management: Extra inputs are not permitted",
                )],
            ),
            "",
        ),
        beta(
            fails(
                Rule::BetaHeaderMissing,
                "claude-sonnet-4-6",
                body(
                    json!([hello()]),
                    json!({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}),
                ),
                &[(
                    "context_management",
                    "context_management: Extra inputs are not permitted",
                )],
            ),
            "compact-2026-01-12",
        ),
        beta(
            passes(
                Rule::BetaHeaderMissing,
                "claude-sonnet-4-6",
                body(
                    json!([hello()]),
                    json!({"context_management": {"edits": [{"type": "clear_thinking_20251015"}, {"type": "clear_tool_uses_20250919"}, {"type": "compact_20260112"}]}}),
                ),
            ),
            "context-management-2025-06-27,compact-2026-01-12",
        ),
        fails(
            Rule::CompactTriggerTooSmall,
            "claude-sonnet-4-6",
            body(json!([hello()]), compact(49_999)),
            &[(
                "context_management.edits.0.trigger.value",
                "context_management.edits.0.trigger.value: Input should be greater than or equal to 50000",
            )],
        ),
        passes(
            Rule::CompactTriggerTooSmall,
            "claude-sonnet-4-6",
            body(json!([hello()]), compact(50_000)),
        ),
        fails(
            Rule::ContextEditInvalid,
            "claude-sonnet-4-6",
            body(
                json!([hello()]),
                json!({"context_management": {"edits": [
                    {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 0}},
                    {"type": "clear_tool_uses_20250919", "trigger": {"type": "turns", "value": 3}},
                    {"type": "compact_20260112", "trigger": {"type": "tool_uses", "value": 60000}}
                ]}}),
            ),
            &[
                (
                    "context_management.edits.0.keep.value",
                    "context_management.edits.0.keep.value: Input should be greater than or equal to 1",
                ),
                (
                    "context_management.edits.1.trigger.type",
                    "context_management.edits.1.trigger.type: Input should be 'input_tokens' or 'tool_uses'",
                ),
                (
                    "context_management.edits.2.trigger.type",
                    "context_management.edits.2.trigger.type: Input should be 'input_tokens'",
                ),
            ],
        ),
        passes(
            Rule::ContextEditInvalid,
            "claude-sonnet-4-6",
            body(
                json!([hello()]),
                json!({"context_management": {"edits": [
                    {"type": "clear_thinking_20251015", "keep": "all"},
                    {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 3}, "keep": {"type": "tool_uses", "value": 2}}
                ]}}),
            ),
        ),
        fails(
            Rule::ClearThinkingNotFirst,
            "claude-sonnet-4-6",
            body(
                json!([hello()]),
                json!({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}, {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}}]}}),
            ),
            &[(
                "context_management.edits.1",
                "context_management.edits.1: clear_thinking_20251015 must be the first edit when combined with other edits",
            )],
        ),
        passes(
            Rule::ClearThinkingNotFirst,
            "claude-sonnet-4-6",
            body(
                json!([hello()]),
                json!({"context_management": {"edits": [{"type": "clear_thinking_20251015"}, {"type": "clear_tool_uses_20250919"}]}}),
            ),
        ),
        fails(
            Rule::CompactUnsupported,
            "claude-haiku-4-5",
            body(json!([hello()]), compact(100_000)),
            &[(
                "context_management.edits.0",
                "context_management.edits.0: compact_20260112 is not supported on this model",
            )],
        ),
        passes(
            Rule::CompactUnsupported,
            "claude-opus-4-6",
            body(json!([hello()]), compact(100_000)),
        ),
        // --- thinking display, task budgets -------------------------------------------------
        fails(
            Rule::ThinkingDisplayWithDisabled,
            "claude-opus-4-7",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "disabled", "display": "omitted"}}),
            ),
            &[(
                "thinking.display",
                "thinking.display: `display` cannot be set when thinking is disabled",
            )],
        ),
        passes(
            Rule::ThinkingDisplayWithDisabled,
            "claude-opus-4-7",
            body(
                json!([
                    hello(),
                    assistant(
                        json!([{"type": "thinking", "thinking": "", "signature": "EqQBCgIYAhIM"}, text("Hi.")])
                    ),
                    user(json!("Again"))
                ]),
                json!({"thinking": {"type": "adaptive", "display": "omitted"}}),
            ),
        ),
        fails(
            Rule::TaskBudgetTooSmall,
            "claude-opus-4-7",
            body(
                json!([hello()]),
                json!({"output_config": {"effort": "xhigh", "task_budget": {"type": "tokens", "total": 19_999}}}),
            ),
            &[(
                "output_config.task_budget.total",
                "output_config.task_budget.total: Input should be greater than or equal to 20000",
            )],
        ),
        beta(
            passes(
                Rule::TaskBudgetTooSmall,
                "claude-opus-4-7",
                body(
                    json!([hello()]),
                    json!({"output_config": {"task_budget": {"type": "tokens", "total": 20_000, "remaining": 5000}}}),
                ),
            ),
            "task-budgets-2026-03-13",
        ),
        fails(
            Rule::TaskBudgetUnsupported,
            "claude-opus-4-6",
            body(
                json!([hello()]),
                json!({"output_config": {"task_budget": {"type": "tokens", "total": 50_000}}}),
            ),
            &[(
                "output_config.task_budget",
                "output_config.task_budget: task budgets are not supported on this model",
            )],
        ),
        passes(
            Rule::TaskBudgetUnsupported,
            "claude-opus-5",
            body(
                json!([hello()]),
                json!({"output_config": {"task_budget": {"type": "tokens", "total": 50_000}}}),
            ),
        ),
        beta(
            fails(
                Rule::BetaHeaderMissing,
                "claude-opus-5",
                body(
                    json!([hello()]),
                    json!({"output_config": {"task_budget": {"type": "tokens", "total": 50_000}}}),
                ),
                &[(
                    "output_config.task_budget",
                    "output_config.task_budget: Extra inputs are not permitted",
                )],
            ),
            "",
        ),
        fails(
            Rule::ThinkingDisabledAtEffort,
            "claude-opus-5",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "disabled"}, "output_config": {"effort": "xhigh"}}),
            ),
            &[(
                "thinking.type",
                "thinking.type: \"thinking.type.disabled\" is not supported at effort 'xhigh' on this model",
            )],
        ),
        passes(
            Rule::ThinkingDisabledAtEffort,
            "claude-opus-5",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}}),
            ),
        ),
        passes(
            Rule::ThinkingDisabledAtEffort,
            "claude-opus-4-8",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "disabled"}, "output_config": {"effort": "max"}}),
            ),
        ),
    ]
}

/// A tool change between a `tool_use` and its result: the pairing rule says so (once); the
/// placement rule adds only what pairing does not cover (a user turn after the system turn).
#[test]
fn a_tool_change_between_a_tool_use_and_its_result_is_the_pairing_rules() {
    let hello = user(json!("Hello"));
    let request = opus(json!([
        hello,
        assistant(json!([tool_use("toolu_a")])),
        system(json!([addition("deploy")])),
        user(json!([tool_result("toolu_a")]))
    ]));
    super::check(
        &request,
        OPUS_48,
        &[
            (
                "messages.1",
                "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            ),
            (
                "messages.2",
                "messages.2: role 'system' must precede an 'assistant' message or end the array; the directive-only form (content: [] with output_config) is accepted at any position",
            ),
            (
                "messages.3.content.0",
                "messages.3.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
            ),
        ],
    );
}

const FALLBACK_BETA: &str = "server-side-fallback-2026-07-01";

/// The `fallbacks` rules: the missing beta with the API's pattern, the
/// rest with our texts.
pub(super) fn fallback_cases() -> Vec<Case> {
    let hello = || user(json!("Hello"));
    let with = |fallbacks: Value| body(json!([hello()]), json!({"fallbacks": fallbacks}));
    vec![
        beta(
            fails(
                Rule::BetaHeaderMissing,
                "claude-haiku-4-5",
                with(json!("default")),
                &[("fallbacks", "fallbacks: Extra inputs are not permitted")],
            ),
            "",
        ),
        beta(
            passes(
                Rule::BetaHeaderMissing,
                "claude-haiku-4-5",
                with(json!("default")),
            ),
            FALLBACK_BETA,
        ),
        beta(
            fails(
                Rule::FallbacksInvalid,
                "claude-haiku-4-5",
                with(json!([
                    {"model": "claude-opus-4-8"},
                    {"model": "claude-haiku-4-5"},
                    {"model": "claude-opus-4-8"},
                    {"model": "claude-sonnet-4-6"}
                ])),
                &[
                    (
                        "fallbacks",
                        "fallbacks: List should have between 1 and 3 items, not 4",
                    ),
                    (
                        "fallbacks.1.model",
                        "fallbacks.1.model: each fallback model must differ from `model` and from the other fallbacks (claude-haiku-4-5)",
                    ),
                    (
                        "fallbacks.2.model",
                        "fallbacks.2.model: each fallback model must differ from `model` and from the other fallbacks (claude-opus-4-8)",
                    ),
                ],
            ),
            FALLBACK_BETA,
        ),
        beta(
            passes(
                Rule::FallbacksInvalid,
                "claude-haiku-4-5",
                with(
                    json!([{"model": "claude-opus-4-8"}, {"model": "claude-sonnet-4-6", "max_tokens": 512}]),
                ),
            ),
            FALLBACK_BETA,
        ),
        beta(
            fails(
                Rule::FallbacksInvalid,
                "claude-haiku-4-5",
                with(json!("default")),
                &[(
                    "fallbacks",
                    "fallbacks: \"default\" requires server-side-fallback-2026-07-01; server-side-fallback-2026-06-01 takes a list of models only",
                )],
            ),
            "server-side-fallback-2026-06-01",
        ),
        beta(
            passes(
                Rule::FallbacksInvalid,
                "claude-haiku-4-5",
                with(json!([{"model": "claude-opus-4-8"}])),
            ),
            "server-side-fallback-2026-06-01",
        ),
        beta(
            fails(
                Rule::FallbacksInvalid,
                "claude-haiku-4-5",
                with(json!({"models": ["claude-opus-4-8"]})),
                &[(
                    "fallbacks",
                    "fallbacks: Input should be 'default' or a list of fallback models",
                )],
            ),
            FALLBACK_BETA,
        ),
        beta(
            fails(
                Rule::FallbacksInvalid,
                "claude-haiku-4-5",
                body(
                    json!([hello()]),
                    json!({"fallbacks": "default", "fallback_credit_token": "fct_1"}),
                ),
                &[(
                    "fallback_credit_token",
                    "fallback_credit_token: cannot be combined with fallbacks; send one or the other",
                )],
            ),
            FALLBACK_BETA,
        ),
    ]
}

#[test]
fn per_message_effort_on_haiku_5_5_whose_docs_are_silent_is_a_warning() {
    use threadline_validate::validate_report;
    use threadline_wire::MessagesRequest;
    use threadline_wire::model::ModelTable;
    let table = ModelTable::builtin();
    let model = table.resolve("claude-haiku-5-5").model();
    let request: MessagesRequest =
        serde_json::from_str(&effort_only("claude-haiku-5-5")).expect("parses");
    let report = validate_report(&request, model, &ValidateOptions::default());
    assert!(report.is_accepted(), "{report:#?}");
    let effort: Vec<&str> = report
        .warnings
        .iter()
        .filter(|w| w.rule == Rule::PerMessageEffortUnsupported)
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(effort.len(), 1, "{report:#?}");
    assert!(
        effort[0].contains("the documentation does not say whether claude-haiku-5-5"),
        "{}",
        effort[0]
    );
}
