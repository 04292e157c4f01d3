//! The validator, rule by rule: for every [`Rule`] at least one request that breaks it (with
//! the exact path and API message expected) and one that does not; then every recorded
//! request of the fixtures, which must pass unless the API answered it with a 400, in which
//! case the validator must say what the API said.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use threadline_testkit::fixtures;
use threadline_validate::{
    Report, Rule, ValidateOptions, Violation, validate_count_tokens_report,
    validate_count_tokens_with, validate_report, validate_with,
};
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{CountTokensRequest, MessagesRequest};

#[path = "validate_rules/block_binding.rs"]
mod block_binding;
#[path = "validate_rules/changes_and_budgets.rs"]
mod changes_and_budgets;
#[path = "validate_rules/display_and_clear_at.rs"]
mod display_and_clear_at;
#[path = "validate_rules/on_demand_compaction.rs"]
mod on_demand_compaction;

fn model(id: &str) -> &'static Model {
    ModelTable::builtin()
        .get(id)
        .unwrap_or_else(|| panic!("test model {id} is not in the table"))
}

/// Validates `request_json` against `model` with `options` and asserts the exact
/// `(path, message)` list, in order.
fn check_with(
    request_json: &str,
    model_id: &str,
    options: &ValidateOptions,
    expected: &[(&str, &str)],
) -> Vec<Violation> {
    let request: MessagesRequest = serde_json::from_str(request_json)
        .unwrap_or_else(|e| panic!("test request does not parse: {e}\n{request_json}"));
    let violations = validate_with(&request, model(model_id), options);
    let got: Vec<(&str, &str)> = violations
        .iter()
        .map(|v| (v.path.as_str(), v.message.as_str()))
        .collect();
    assert_eq!(got, expected, "request: {request_json}");
    violations
}

/// [`check_with`] with the default options.
fn check(request_json: &str, model_id: &str, expected: &[(&str, &str)]) -> Vec<Violation> {
    check_with(
        request_json,
        model_id,
        &ValidateOptions::default(),
        expected,
    )
}

/// A request body: `model`, `max_tokens: 1024`, the messages, and `extra` fields merged in.
fn body(messages: Value, extra: Value) -> String {
    let mut body = json!({"model": "claude-haiku-4-5", "max_tokens": 1024, "messages": messages});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body.to_string()
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn assistant(content: Value) -> Value {
    json!({"role": "assistant", "content": content})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "20°C"})
}

fn thinking() -> Value {
    json!({"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAhIM"})
}

fn weather_tool() -> Value {
    json!({"name": "get_weather", "input_schema": {"type": "object"}})
}

fn marker(block: Value, ttl: Option<&str>) -> Value {
    let mut block = block;
    let cc = match ttl {
        Some(ttl) => json!({"type": "ephemeral", "ttl": ttl}),
        None => json!({"type": "ephemeral"}),
    };
    block["cache_control"] = cc;
    block
}

const TOOL_USE_WITHOUT_RESULT_B: &str = "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message.";
const FINAL_THINKING_TEXT: &str = "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking";
const TTL_ORDER_TAIL: &str = ": a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Blocks are processed in the following order: `tools`, `system`, `messages`.";

/// One row of the table.
struct Case {
    rule: Rule,
    model: &'static str,
    options: ValidateOptions,
    request: String,
    expected: Vec<(String, String)>,
    /// Other rules the request breaks too (their violations are among `expected`).
    also: Vec<Rule>,
}

fn fails(rule: Rule, model: &'static str, request: String, expected: &[(&str, &str)]) -> Case {
    Case {
        rule,
        model,
        options: ValidateOptions::default(),
        request,
        expected: expected
            .iter()
            .map(|(p, m)| ((*p).to_owned(), (*m).to_owned()))
            .collect(),
        also: Vec::new(),
    }
}

fn passes(rule: Rule, model: &'static str, request: String) -> Case {
    fails(rule, model, request, &[])
}

fn with_options(mut case: Case, options: ValidateOptions) -> Case {
    case.options = options;
    case
}

#[allow(clippy::too_many_lines)]
fn cases() -> Vec<Case> {
    let haiku = "claude-haiku-4-5";
    let hello = || user(json!("Hello"));
    let thinking_on = |budget: u64| json!({"thinking": {"type": "enabled", "budget_tokens": budget}, "max_tokens": 4096});
    vec![
        // --- messages ---------------------------------------------------------------------
        fails(
            Rule::EmptyMessages,
            haiku,
            body(json!([]), json!({})),
            &[("messages", "messages: at least one message is required")],
        ),
        passes(
            Rule::EmptyMessages,
            haiku,
            body(json!([hello()]), json!({})),
        ),
        fails(
            Rule::EmptyContent,
            haiku,
            body(
                json!([hello(), assistant(json!([])), user(json!("Again"))]),
                json!({}),
            ),
            &[(
                "messages.1",
                "messages.1: all messages must have non-empty content except for the optional final assistant message",
            )],
        ),
        fails(
            Rule::EmptyContent,
            haiku,
            body(json!([user(json!(""))]), json!({})),
            &[(
                "messages.0",
                "messages.0: all messages must have non-empty content except for the optional final assistant message",
            )],
        ),
        // The optional final assistant message may be empty.
        passes(
            Rule::EmptyContent,
            haiku,
            body(json!([hello(), assistant(json!(""))]), json!({})),
        ),
        fails(
            Rule::EmptyTextBlock,
            haiku,
            body(json!([user(json!([text("Hi"), text("")]))]), json!({})),
            &[(
                "messages.0.content.1",
                "messages: text content blocks must be non-empty",
            )],
        ),
        fails(
            Rule::EmptyTextBlock,
            haiku,
            body(
                json!([hello()]),
                json!({"system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": ""}]}),
            ),
            &[("system.1", "system: text content blocks must be non-empty")],
        ),
        fails(
            Rule::EmptyTextBlock,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a")])),
                    user(
                        json!([{"type": "tool_result", "tool_use_id": "toolu_a", "content": [text("")]}])
                    )
                ]),
                json!({}),
            ),
            &[(
                "messages.2.content.0.content.0",
                "messages: text content blocks must be non-empty",
            )],
        ),
        passes(
            Rule::EmptyTextBlock,
            haiku,
            body(
                json!([user(json!([text("Hi"), text("there")]))]),
                json!({"system": "Be brief."}),
            ),
        ),
        fails(
            Rule::WhitespaceTextBlock,
            haiku,
            body(json!([user(json!([text(" \n\t")]))]), json!({})),
            &[(
                "messages.0.content.0",
                "messages: text content blocks must contain non-whitespace text",
            )],
        ),
        fails(
            Rule::WhitespaceTextBlock,
            haiku,
            body(json!([hello()]), json!({"system": "  \n"})),
            &[(
                "system",
                "system: text content blocks must contain non-whitespace text",
            )],
        ),
        passes(
            Rule::WhitespaceTextBlock,
            haiku,
            body(
                json!([user(json!(" padded "))]),
                json!({"system": "\n  You are terse.\n"}),
            ),
        ),
        // The API accepted an earlier assistant message holding a `"\n\n"` text block
        // beside other content (recorded, 200). Whitespace-only text is rejected only in a
        // content list with nothing else (validate/text.rs).
        passes(
            Rule::WhitespaceTextBlock,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([text("\n\n"), tool_use("toolu_ws")])),
                    user(json!([tool_result("toolu_ws")])),
                    assistant(json!([text("\n\n"), text("It is 20°C in Paris.")])),
                    user(json!([text("Thanks."), text(" ")])),
                ]),
                json!({"system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "\n"}]}),
            ),
        ),
        // The places the API does reject: an earlier assistant turn of whitespace only (a
        // `"\n\n"` response sent back), a final one, a tool result's blocks.
        fails(
            Rule::WhitespaceTextBlock,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([text("\n\n")])),
                    user(json!("Well?"))
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.0",
                "messages: text content blocks must contain non-whitespace text",
            )],
        ),
        fails(
            Rule::WhitespaceTextBlock,
            "claude-opus-4-7",
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_ws")])),
                    user(
                        json!([{"type": "tool_result", "tool_use_id": "toolu_ws", "content": [text(" ")]}])
                    ),
                ]),
                json!({}),
            ),
            &[(
                "messages.2.content.0.content.0",
                "messages: text content blocks must contain non-whitespace text",
            )],
        ),
        fails(
            Rule::InvalidRole,
            haiku,
            body(
                json!([hello(), {"role": "system", "content": "Answer in French."}]),
                json!({}),
            ),
            &[(
                "messages.1.role",
                "messages.1.role: Input should be 'user' or 'assistant'",
            )],
        ),
        fails(
            Rule::InvalidRole,
            haiku,
            body(
                json!([hello(), {"role": "tool", "content": "42"}]),
                json!({}),
            ),
            &[(
                "messages.1.role",
                "messages.1.role: Input should be 'user' or 'assistant'",
            )],
        ),
        // Opus 4.8 accepts mid-conversation system messages (its table row says so).
        passes(
            Rule::InvalidRole,
            "claude-opus-4-8",
            body(
                json!([hello(), {"role": "system", "content": "Answer in French."}]),
                json!({}),
            ),
        ),
        // --- tool_use / tool_result pairing -------------------------------------------------
        fails(
            Rule::ToolUseWithoutResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a"), tool_use("toolu_b")])),
                    user(json!([tool_result("toolu_a")]))
                ]),
                json!({"tools": [weather_tool()]}),
            ),
            &[("messages.1", TOOL_USE_WITHOUT_RESULT_B)],
        ),
        // A result after other content does not count: results come first.
        fails(
            Rule::ToolUseWithoutResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_b")])),
                    user(json!([text("Here:"), tool_result("toolu_b")]))
                ]),
                json!({}),
            ),
            &[("messages.1", TOOL_USE_WITHOUT_RESULT_B)],
        ),
        // Merged assistant messages: the path names the message as sent, the text the merged turn.
        fails(
            Rule::ToolUseWithoutResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!("Checking.")),
                    assistant(json!([tool_use("toolu_b")])),
                    user(json!("Thanks"))
                ]),
                json!({}),
            ),
            &[("messages.2", TOOL_USE_WITHOUT_RESULT_B)],
        ),
        passes(
            Rule::ToolUseWithoutResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([
                        text("Checking."),
                        tool_use("toolu_a"),
                        tool_use("toolu_b")
                    ])),
                    user(json!([
                        tool_result("toolu_b"),
                        tool_result("toolu_a"),
                        text("Go on.")
                    ]))
                ]),
                json!({"tools": [weather_tool()]}),
            ),
        ),
        // The recorded 400 (anthropic-sdk-python f59a9391): two user messages are merged, and the
        // API names the merged position.
        fails(
            Rule::OrphanToolResult,
            haiku,
            body(
                json!([
                    user(json!("What's the weather in SF in Celsius?")),
                    user(json!([tool_result("toolu_01GHndag5wQmbzNihYmV2UBj")]))
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.0",
                "messages.0.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01GHndag5wQmbzNihYmV2UBj. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
            )],
        ),
        fails(
            Rule::OrphanToolResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a"), tool_result("toolu_x")]))
                ]),
                json!({}),
            ),
            &[(
                "messages.2.content.1",
                "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
            )],
        ),
        passes(
            Rule::OrphanToolResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a")]))
                ]),
                json!({}),
            ),
        ),
        fails(
            Rule::DuplicateToolResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a"), tool_result("toolu_a")]))
                ]),
                json!({}),
            ),
            &[(
                "messages.2.content.1",
                "messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with id: toolu_a",
            )],
        ),
        passes(
            Rule::DuplicateToolResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a"), tool_use("toolu_b")])),
                    user(json!([tool_result("toolu_a"), tool_result("toolu_b")]))
                ]),
                json!({}),
            ),
        ),
        fails(
            Rule::DuplicateToolUseId,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a")])),
                    assistant(json!([tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a")]))
                ]),
                json!({}),
            ),
            &[(
                "messages.3.content.0",
                "messages.3.content.0: `tool_use` ids must be unique",
            )],
        ),
        passes(
            Rule::DuplicateToolUseId,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a")])),
                    assistant(json!([tool_use("toolu_b")])),
                    user(json!([tool_result("toolu_b")]))
                ]),
                json!({}),
            ),
        ),
        fails(
            Rule::ToolResultInAssistant,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([text("Done."), tool_result("toolu_a")])),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
            &[(
                "messages.1",
                "messages.1: `tool_result` blocks can only be in `user` messages",
            )],
        ),
        passes(
            Rule::ToolResultInAssistant,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([text("Done.")])),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
        ),
        fails(
            Rule::ToolUseIdPattern,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("call_x|fc_y")])),
                    user(json!([tool_result("call_x|fc_y")]))
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.0.id",
                "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
            )],
        ),
        passes(
            Rule::ToolUseIdPattern,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("call_x-fc_y")])),
                    user(json!([tool_result("call_x-fc_y")]))
                ]),
                json!({}),
            ),
        ),
        fails(
            Rule::ServerToolUseIdPattern,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([
                        {"type": "server_tool_use", "id": "toolu_01", "name": "web_search", "input": {"query": "q"}},
                        {"type": "web_search_tool_result", "tool_use_id": "toolu_01", "content": []},
                        text("Found nothing.")
                    ])),
                    user(json!("ok"))
                ]),
                json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            ),
            &[(
                "messages.1.content.0.id",
                "messages.1.content.0.server_tool_use.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'",
            )],
        ),
        passes(
            Rule::ServerToolUseIdPattern,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([
                        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "q"}},
                        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
                        text("Found nothing.")
                    ])),
                    user(json!("ok"))
                ]),
                json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            ),
        ),
        // A server tool this version does not know: the observed `advisor_tool_result` text.
        fails(
            Rule::OrphanServerToolResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([text("Asking.")])),
                    user(json!("ok")),
                    assistant(
                        json!([{"type": "advisor_tool_result", "tool_use_id": "srvtoolu_01Jt6U9eUHSRC2KQiqiVn6Sr", "content": {}}, text("Advice taken.")])
                    ),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
            &[(
                "messages.3.content.0",
                "messages.3.content.0: unexpected `tool_use_id` found in `advisor_tool_result` blocks: srvtoolu_01Jt6U9eUHSRC2KQiqiVn6Sr. Each `advisor_tool_result` block must have a corresponding `server_tool_use` block before it.",
            )],
        ),
        fails(
            Rule::OrphanServerToolResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(
                        json!([{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []}, text("So.")])
                    ),
                    user(json!("ok"))
                ]),
                json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            ),
            &[(
                "messages.1.content.0",
                "messages.1.content.0: unexpected `tool_use_id` found in `web_search_tool_result` blocks: srvtoolu_01. Each `web_search_tool_result` block must have a corresponding `server_tool_use` block before it.",
            )],
        ),
        // A server tool call deferred by a client tool call gets its result in the next
        // assistant message.
        passes(
            Rule::OrphanServerToolResult,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([
                        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_fetch", "input": {"url": "https://example.com"}},
                        tool_use("toolu_a")
                    ])),
                    user(json!([tool_result("toolu_a")])),
                    assistant(
                        json!([{"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_01", "content": {}}, text("Done.")])
                    ),
                    user(json!("Thanks"))
                ]),
                json!({"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}, weather_tool()]}),
            ),
        ),
        fails(
            Rule::ServerToolPending,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([
                        {"type": "server_tool_use", "id": "srvtoolu_01HxbWnMRmbWyMfUtJKC45rA", "name": "web_fetch", "input": {"url": "https://example.com"}},
                        tool_use("toolu_a")
                    ])),
                    user(json!([tool_result("toolu_a"), text("Also, hurry.")]))
                ]),
                json!({"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}, weather_tool()]}),
            ),
            &[(
                "messages.1.content.0",
                "`web_fetch` tool use with id `srvtoolu_01HxbWnMRmbWyMfUtJKC45rA` was found without a corresponding `web_fetch_tool_result` block",
            )],
        ),
        passes(
            Rule::ServerToolPending,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([
                        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_fetch", "input": {"url": "https://example.com"}},
                        tool_use("toolu_a")
                    ])),
                    user(json!([tool_result("toolu_a")]))
                ]),
                json!({"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}, weather_tool()]}),
            ),
        ),
        // Resuming a paused turn (pause_turn) without the server tool it waits for.
        fails(
            Rule::ServerToolNotProvided,
            "claude-opus-4-7",
            body(
                json!([
                    hello(),
                    assistant(
                        json!([text("Searching."), {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "q"}}])
                    )
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.1",
                "`web_search` tool use with id `srvtoolu_01` was found, but no `web_search` tool was provided",
            )],
        ),
        // The same continuation with the tool is fine, even on a model that rejects prefill.
        passes(
            Rule::ServerToolNotProvided,
            "claude-opus-4-7",
            body(
                json!([
                    hello(),
                    assistant(
                        json!([text("Searching."), {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "q"}}])
                    )
                ]),
                json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            ),
        ),
        // --- tools and tool_choice ------------------------------------------------------------
        fails(
            Rule::ToolNamePattern,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [{"name": "get.weather", "input_schema": {"type": "object"}}]}),
            ),
            &[(
                "tools.0.name",
                "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
            )],
        ),
        fails(
            Rule::ToolNamePattern,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [weather_tool(), {"name": "x".repeat(65), "input_schema": {"type": "object"}}]}),
            ),
            &[(
                "tools.1.name",
                "tools.1.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
            )],
        ),
        with_options(
            passes(
                Rule::ToolNamePattern,
                haiku,
                body(
                    json!([hello()]),
                    json!({"tools": [{"name": "x".repeat(65), "input_schema": {"type": "object"}}]}),
                ),
            ),
            ValidateOptions::default().with_max_tool_name_len(128),
        ),
        fails(
            Rule::DuplicateToolName,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [weather_tool(), weather_tool()]}),
            ),
            &[("tools.1.name", "tools: Tool names must be unique.")],
        ),
        passes(
            Rule::DuplicateToolName,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [weather_tool(), {"type": "web_search_20250305", "name": "web_search"}]}),
            ),
        ),
        fails(
            Rule::ToolChoiceWithoutTools,
            haiku,
            body(json!([hello()]), json!({"tool_choice": {"type": "auto"}})),
            &[(
                "tool_choice",
                "tool_choice may only be specified while providing tools.",
            )],
        ),
        passes(
            Rule::ToolChoiceWithoutTools,
            haiku,
            body(
                json!([hello()]),
                json!({"tool_choice": {"type": "auto"}, "tools": [weather_tool()]}),
            ),
        ),
        fails(
            Rule::ToolChoiceUnknownTool,
            haiku,
            body(
                json!([hello()]),
                json!({"tool_choice": {"type": "tool", "name": "get_time"}, "tools": [weather_tool()]}),
            ),
            &[(
                "tool_choice.name",
                "tool_choice.name: Tool 'get_time' not found in provided tools",
            )],
        ),
        passes(
            Rule::ToolChoiceUnknownTool,
            haiku,
            body(
                json!([hello()]),
                json!({"tool_choice": {"type": "tool", "name": "get_weather"}, "tools": [weather_tool()]}),
            ),
        ),
        // --- cache_control ----------------------------------------------------------------------
        // The 400 Claude Code 2.1.223 users met (docs/api-notes.md#tool-search): MCP tools are
        // deferred and sit last, and the client marked the last tool.
        fails(
            Rule::DeferredToolWithCacheControl,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [
                    {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
                    weather_tool(),
                    marker(json!({"name": "generate_mcp14", "input_schema": {"type": "object"}, "defer_loading": true}), None),
                ]}),
            ),
            &[(
                "tools.2.cache_control",
                "Tool 'generate_mcp14' cannot have both defer_loading=true and cache_control set. Tools with defer_loading cannot use prompt caching.",
            )],
        ),
        fails(
            Rule::DeferredToolWithCacheControl,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [
                    weather_tool(),
                    marker(json!({"type": "web_search_20250305", "name": "web_search", "defer_loading": true}), Some("1h")),
                ]}),
            ),
            &[(
                "tools.1.cache_control",
                "Tool 'web_search' cannot have both defer_loading=true and cache_control set. Tools with defer_loading cannot use prompt caching.",
            )],
        ),
        passes(
            Rule::DeferredToolWithCacheControl,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [
                    {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
                    marker(weather_tool(), None),
                    {"name": "generate_mcp14", "input_schema": {"type": "object"}, "defer_loading": true},
                    marker(json!({"name": "mcp_lookup", "input_schema": {"type": "object"}, "defer_loading": false}), None),
                ]}),
            ),
        ),
        // --- tool search ----------------------------------------------------------------------
        fails(
            Rule::AllToolsDeferred,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [
                    {"name": "a", "input_schema": {"type": "object"}, "defer_loading": true},
                    {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25", "defer_loading": true},
                ]}),
            ),
            &[(
                "tools",
                "At least one tool must have defer_loading=false. All tools cannot be deferred.",
            )],
        ),
        passes(
            Rule::AllToolsDeferred,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [
                    {"name": "a", "input_schema": {"type": "object"}, "defer_loading": true},
                    {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
                ]}),
            ),
        ),
        fails(
            Rule::ToolReferenceNotFound,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([
                        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {"pattern": "x"}},
                        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
                            "type": "tool_search_tool_search_result", "tool_references": [
                                {"type": "tool_reference", "tool_name": "get_weather"},
                                {"type": "tool_reference", "tool_name": "unknown_tool"}]}},
                        tool_use("toolu_1"),
                    ])),
                    user(
                        json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                        {"type": "tool_reference", "tool_name": "get_weather"},
                        {"type": "tool_reference", "tool_name": "missing"}]}])
                    ),
                ]),
                json!({"tools": [
                    {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
                    weather_tool(),
                ]}),
            ),
            &[
                (
                    "messages.1.content.1",
                    "Tool reference 'unknown_tool' not found in available tools",
                ),
                (
                    "messages.2.content.0.content.1",
                    "Tool reference 'missing' not found in available tools",
                ),
            ],
        ),
        passes(
            Rule::ToolReferenceNotFound,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!([tool_use("toolu_1")])),
                    user(
                        json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                        {"type": "tool_reference", "tool_name": "get_weather", "cache_control": {"type": "ephemeral"}}]}])
                    ),
                ]),
                json!({"tools": [weather_tool()]}),
            ),
        ),
        fails(
            Rule::DeferLoadingUnsupported,
            "claude-opus-4-1",
            body(
                json!([hello()]),
                json!({"tools": [
                    weather_tool(),
                    {"name": "deploy", "input_schema": {"type": "object"}, "defer_loading": true},
                ]}),
            ),
            &[(
                "tools.1.defer_loading",
                "Tool 'deploy' has defer_loading=true, but claude-opus-4-1-20250805 does not support tool search (threadline's model table; the API's text is not published).",
            )],
        ),
        passes(
            Rule::DeferLoadingUnsupported,
            "claude-opus-4-1",
            body(
                json!([hello()]),
                json!({"tools": [
                    weather_tool(),
                    {"name": "deploy", "input_schema": {"type": "object"}, "defer_loading": false},
                ]}),
            ),
        ),
        fails(
            Rule::TooManyCacheBreakpoints,
            haiku,
            body(
                json!([user(json!([
                    marker(text("a"), None),
                    marker(text("b"), None)
                ]))]),
                json!({
                    "tools": [marker(weather_tool(), None)],
                    "system": [marker(text("Be brief."), None)],
                    "cache_control": {"type": "ephemeral"}
                }),
            ),
            &[(
                "cache_control",
                "A maximum of 4 blocks with cache_control may be provided. Found 5.",
            )],
        ),
        // Markers nested in tool_result content count too.
        fails(
            Rule::TooManyCacheBreakpoints,
            haiku,
            body(
                json!([
                    user(json!([marker(text("a"), None), marker(text("b"), None)])),
                    assistant(json!([marker(tool_use("toolu_a"), None)])),
                    user(json!([marker(
                        json!({"type": "tool_result", "tool_use_id": "toolu_a", "content": [marker(text("20°C"), None), text("sunny")]}),
                        None
                    )]))
                ]),
                json!({}),
            ),
            &[(
                "messages.2.content.0",
                "A maximum of 4 blocks with cache_control may be provided. Found 5.",
            )],
        ),
        passes(
            Rule::TooManyCacheBreakpoints,
            haiku,
            body(
                json!([user(json!([
                    marker(text("a"), None),
                    marker(text("b"), None)
                ]))]),
                json!({"tools": [marker(weather_tool(), None)], "cache_control": {"type": "ephemeral"}}),
            ),
        ),
        fails(
            Rule::CacheControlOnEmptyText,
            haiku,
            body(
                json!([user(json!([text("Hi"), marker(text(""), None)]))]),
                json!({}),
            ),
            &[(
                "messages.0.content.1.text",
                "messages.0.content.1.text: cache_control cannot be set for empty text blocks",
            )],
        ),
        fails(
            Rule::CacheControlOnEmptyText,
            haiku,
            body(
                json!([hello()]),
                json!({"system": [marker(text(""), None)]}),
            ),
            &[(
                "system.0.text",
                "system.0.text: cache_control cannot be set for empty text blocks",
            )],
        ),
        passes(
            Rule::CacheControlOnEmptyText,
            haiku,
            body(
                json!([user(json!([text("Hi"), marker(text("there"), None)]))]),
                json!({}),
            ),
        ),
        fails(
            Rule::CacheControlOnThinking,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!([marker(thinking(), None), text("Hi.")])),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.0.cache_control",
                "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted",
            )],
        ),
        passes(
            Rule::CacheControlOnThinking,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!([thinking(), marker(text("Hi."), None)])),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
        ),
        fails(
            Rule::CacheTtlOrder,
            haiku,
            body(
                json!([hello()]),
                json!({"tools": [marker(weather_tool(), Some("5m"))], "system": [marker(text("Be brief."), Some("1h"))]}),
            ),
            &[(
                "system.0.cache_control.ttl",
                &format!("system.0.cache_control.ttl{TTL_ORDER_TAIL}"),
            )],
        ),
        fails(
            Rule::CacheTtlOrder,
            haiku,
            body(
                json!([user(json!([
                    marker(text("a"), None),
                    marker(text("b"), Some("1h"))
                ]))]),
                json!({}),
            ),
            &[(
                "messages.0.content.1.cache_control.ttl",
                &format!("messages.0.content.1.cache_control.ttl{TTL_ORDER_TAIL}"),
            )],
        ),
        // The automatic marker lands on the last cacheable block: one already marked with
        // another lifetime is a 400 (our text); the same lifetime is a no-op.
        fails(
            Rule::AutomaticCacheTtlConflict,
            haiku,
            body(
                json!([user(json!([text("a"), marker(text("b"), Some("1h"))]))]),
                json!({"cache_control": {"type": "ephemeral"}}),
            ),
            &[(
                "cache_control.ttl",
                "cache_control.ttl: the automatic cache_control (ttl '5m') lands on messages.0.content.1, which already has a cache_control with ttl '1h'; use the same ttl or remove one of them",
            )],
        ),
        passes(
            Rule::AutomaticCacheTtlConflict,
            haiku,
            body(
                json!([user(json!([text("a"), marker(text("b"), Some("5m"))]))]),
                json!({"cache_control": {"type": "ephemeral"}}),
            ),
        ),
        passes(
            Rule::AutomaticCacheTtlConflict,
            haiku,
            body(
                json!([user(json!([marker(text("a"), Some("1h")), text("b")]))]),
                json!({"cache_control": {"type": "ephemeral", "ttl": "1h"}}),
            ),
        ),
        // Automatic caching marks the last block, after every explicit marker.
        fails(
            Rule::CacheTtlOrder,
            haiku,
            body(
                json!([user(json!([marker(text("a"), Some("5m")), text("b")]))]),
                json!({"cache_control": {"type": "ephemeral", "ttl": "1h"}}),
            ),
            &[(
                "cache_control.ttl",
                &format!("cache_control.ttl{TTL_ORDER_TAIL}"),
            )],
        ),
        passes(
            Rule::CacheTtlOrder,
            haiku,
            body(
                json!([user(json!([
                    marker(text("a"), Some("1h")),
                    marker(text("b"), Some("5m"))
                ]))]),
                json!({"tools": [marker(weather_tool(), Some("1h"))], "cache_control": {"type": "ephemeral"}}),
            ),
        ),
        // --- thinking --------------------------------------------------------------------------
        fails(
            Rule::ThinkingBudgetTooSmall,
            "claude-sonnet-4-5",
            body(json!([hello()]), thinking_on(1000)),
            &[(
                "thinking.budget_tokens",
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
            )],
        ),
        passes(
            Rule::ThinkingBudgetTooSmall,
            "claude-sonnet-4-5",
            body(json!([hello()]), thinking_on(1024)),
        ),
        fails(
            Rule::ThinkingBudgetNotBelowMaxTokens,
            "claude-sonnet-4-5",
            body(json!([hello()]), thinking_on(4096)),
            &[(
                "thinking.budget_tokens",
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
            )],
        ),
        // Interleaved thinking lets the budget exceed max_tokens.
        with_options(
            passes(
                Rule::ThinkingBudgetNotBelowMaxTokens,
                "claude-sonnet-4-5",
                body(json!([hello()]), thinking_on(8000)),
            ),
            ValidateOptions::default().with_beta_header(
                "fine-grained-tool-streaming-2025-05-14, interleaved-thinking-2025-05-14",
            ),
        ),
        fails(
            Rule::ThinkingWithForcedToolChoice,
            "claude-sonnet-4-5",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096, "tools": [weather_tool()], "tool_choice": {"type": "any"}}),
            ),
            &[(
                "tool_choice",
                "Thinking may not be enabled when tool_choice forces tool use.",
            )],
        ),
        // Adaptive thinking supports forced tool use.
        passes(
            Rule::ThinkingWithForcedToolChoice,
            "claude-sonnet-4-6",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "adaptive"}, "tools": [weather_tool()], "tool_choice": {"type": "tool", "name": "get_weather"}}),
            ),
        ),
        fails(
            Rule::FinalAssistantMissingThinking,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!([text("Let me check."), tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a")]))
                ]),
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096, "tools": [weather_tool()]}),
            ),
            &[("messages.1.content.0.type", FINAL_THINKING_TEXT)],
        ),
        // The turn's first assistant message is checked, not the later steps of its tool loop.
        fails(
            Rule::FinalAssistantMissingThinking,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!([text("Let me check."), tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a")])),
                    assistant(json!([thinking(), tool_use("toolu_b")])),
                    user(json!([tool_result("toolu_b")]))
                ]),
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096, "tools": [weather_tool()]}),
            ),
            &[("messages.1.content.0.type", FINAL_THINKING_TEXT)],
        ),
        passes(
            Rule::FinalAssistantMissingThinking,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!([thinking(), tool_use("toolu_a")])),
                    user(json!([tool_result("toolu_a")])),
                    assistant(json!([tool_use("toolu_b")])),
                    user(json!([tool_result("toolu_b")]))
                ]),
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096, "tools": [weather_tool()]}),
            ),
        ),
        // A new user message starts a new turn: earlier turns need no thinking.
        passes(
            Rule::FinalAssistantMissingThinking,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!("Hi!")),
                    user(json!("How are you?"))
                ]),
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096}),
            ),
        ),
        fails(
            Rule::ThinkingNotFirst,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!([text("Hi."), thinking()])),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.0",
                "messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be `thinking` or `redacted_thinking`. Found `text`.",
            )],
        ),
        passes(
            Rule::ThinkingNotFirst,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(
                        json!([{"type": "redacted_thinking", "data": "abc"}, thinking(), text("Hi.")])
                    ),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
        ),
        fails(
            Rule::ThinkingSignatureMissing,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(json!([{"type": "thinking", "thinking": "Hmm."}, text("Hi.")])),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.0.signature",
                "messages.1.content.0.thinking.signature: Field required",
            )],
        ),
        // An omitted-display block (empty thinking, with its signature) is passed back as is.
        passes(
            Rule::ThinkingSignatureMissing,
            "claude-sonnet-4-5",
            body(
                json!([
                    hello(),
                    assistant(
                        json!([{"type": "thinking", "thinking": "", "signature": "EqQB"}, text("Hi.")])
                    ),
                    user(json!("ok"))
                ]),
                json!({}),
            ),
        ),
        // --- prefill -----------------------------------------------------------------------------
        fails(
            Rule::PrefillUnsupported,
            "claude-opus-4-7",
            body(
                json!([hello(), assistant(json!("The answer is"))]),
                json!({}),
            ),
            &[(
                "messages.1",
                "This model does not support assistant message prefill. The conversation must end with a user message.",
            )],
        ),
        passes(
            Rule::PrefillUnsupported,
            haiku,
            body(
                json!([hello(), assistant(json!("The answer is"))]),
                json!({}),
            ),
        ),
        fails(
            Rule::TrailingWhitespace,
            haiku,
            body(
                json!([hello(), assistant(json!([text("The answer is ")]))]),
                json!({}),
            ),
            &[(
                "messages.1.content.0",
                "final assistant content cannot end with trailing whitespace",
            )],
        ),
        passes(
            Rule::TrailingWhitespace,
            haiku,
            body(
                json!([
                    hello(),
                    assistant(json!("The answer is")),
                    user(json!("ok "))
                ]),
                json!({}),
            ),
        ),
        // --- per-model parameters ------------------------------------------------------------
        fails(
            Rule::MaxTokensTooLarge,
            haiku,
            body(json!([hello()]), json!({"max_tokens": 999_999})),
            &[(
                "max_tokens",
                "max_tokens: 999999 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5-20251001",
            )],
        ),
        passes(
            Rule::MaxTokensTooLarge,
            haiku,
            body(json!([hello()]), json!({"max_tokens": 64_000})),
        ),
        fails(
            Rule::ThinkingTypeUnsupported,
            haiku,
            body(json!([hello()]), json!({"thinking": {"type": "adaptive"}})),
            &[(
                "thinking.type",
                "adaptive thinking is not supported on this model",
            )],
        ),
        fails(
            Rule::ThinkingTypeUnsupported,
            "claude-opus-4-7",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096}),
            ),
            &[(
                "thinking.type",
                "\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior.",
            )],
        ),
        fails(
            Rule::ThinkingTypeUnsupported,
            "claude-fable-5",
            body(json!([hello()]), json!({"thinking": {"type": "disabled"}})),
            &[(
                "thinking.type",
                "\"thinking.type.disabled\" is not supported for this model. Thinking defaults to adaptive mode when not specified; use \"thinking.type.enabled\" with \"budget_tokens\" for extended thinking.",
            )],
        ),
        passes(
            Rule::ThinkingTypeUnsupported,
            "claude-opus-4-7",
            body(json!([hello()]), json!({"thinking": {"type": "adaptive"}})),
        ),
        fails(
            Rule::SamplingParamUnsupported,
            "claude-opus-4-7",
            body(json!([hello()]), json!({"temperature": 0.2, "top_p": 0.9})),
            &[
                ("temperature", "`temperature` is deprecated for this model."),
                ("top_p", "`top_p` is deprecated for this model."),
            ],
        ),
        passes(
            Rule::SamplingParamUnsupported,
            "claude-opus-4-7",
            body(json!([hello()]), json!({"temperature": 1.0})),
        ),
        fails(
            Rule::TemperatureWithThinking,
            "claude-sonnet-4-5",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096, "temperature": 0.5}),
            ),
            &[(
                "temperature",
                "`temperature` may only be set to 1 when thinking is enabled",
            )],
        ),
        fails(
            Rule::TemperatureWithThinking,
            "claude-sonnet-4-6",
            body(
                json!([hello()]),
                json!({"thinking": {"type": "adaptive"}, "temperature": 0.5}),
            ),
            &[(
                "temperature",
                "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode",
            )],
        ),
        passes(
            Rule::TemperatureWithThinking,
            "claude-sonnet-4-5",
            body(json!([hello()]), json!({"temperature": 0.5})),
        ),
        fails(
            Rule::EffortUnsupported,
            "claude-opus-4-6",
            body(
                json!([hello()]),
                json!({"output_config": {"effort": "xhigh"}}),
            ),
            &[(
                "output_config.effort",
                "This model does not support effort level 'xhigh'. Supported levels: high, low, max, medium.",
            )],
        ),
        // On a model with no effort levels only a warning (audit: nothing bounds that rule):
        // `effort_on_a_model_without_effort_levels_is_a_warning_for_any_model`.
        passes(
            Rule::EffortUnsupported,
            haiku,
            body(
                json!([hello()]),
                json!({"output_config": {"effort": "low"}}),
            ),
        ),
        passes(
            Rule::EffortUnsupported,
            "claude-opus-4-7",
            body(
                json!([hello()]),
                json!({"output_config": {"effort": "xhigh"}}),
            ),
        ),
    ]
}

#[test]
fn every_rule_has_a_failing_and_a_passing_case_with_exact_texts() {
    let mut failing: BTreeSet<Rule> = BTreeSet::new();
    let mut passing: BTreeSet<Rule> = BTreeSet::new();
    for case in cases()
        .into_iter()
        .chain(changes_and_budgets::cases())
        .chain(changes_and_budgets::fallback_cases())
        .chain(display_and_clear_at::cases())
        .chain(on_demand_compaction::cases())
        .chain(block_binding::cases())
    {
        let expected: Vec<(&str, &str)> = case
            .expected
            .iter()
            .map(|(p, m)| (p.as_str(), m.as_str()))
            .collect();
        let violations = check_with(&case.request, case.model, &case.options, &expected);
        for violation in &violations {
            if !case.also.contains(&violation.rule) {
                assert_eq!(violation.rule, case.rule, "{violation}");
            }
        }
        if expected.is_empty() {
            passing.insert(case.rule);
        } else {
            failing.insert(case.rule);
        }
    }
    let all: BTreeSet<Rule> = Rule::ALL.iter().copied().collect();
    assert_eq!(failing, all, "rules without a failing case");
    assert_eq!(passing, all, "rules without a passing case");
}

#[test]
fn display_prints_the_api_text_alone_when_it_starts_with_the_path() {
    let violations = check(
        &body(
            json!([
                hello_user(),
                assistant(json!([tool_use("toolu_b")])),
                user(json!("?"))
            ]),
            json!({}),
        ),
        "claude-haiku-4-5",
        &[("messages.1", TOOL_USE_WITHOUT_RESULT_B)],
    );
    assert_eq!(violations[0].to_string(), TOOL_USE_WITHOUT_RESULT_B);

    let violations = check(
        &body(json!([user(json!([text("")]))]), json!({})),
        "claude-haiku-4-5",
        &[(
            "messages.0.content.0",
            "messages: text content blocks must be non-empty",
        )],
    );
    assert_eq!(
        violations[0].to_string(),
        "messages.0.content.0: messages: text content blocks must be non-empty"
    );
    // `messages.1` is not a prefix of the path `messages.12`.
    let v = Violation::new(Rule::EmptyContent, "messages.1", "messages.12: x");
    assert_eq!(v.to_string(), "messages.1: messages.12: x");
}

fn hello_user() -> Value {
    user(json!("Hello"))
}

#[test]
fn violations_come_in_request_order() {
    let request = body(
        json!([
            user(json!([text(" ")])),
            assistant(json!([tool_use("bad id")])),
            user(json!("no result"))
        ]),
        json!({
            "max_tokens": 100_000,
            "tools": [weather_tool(), weather_tool()],
            "system": "   "
        }),
    );
    let violations = check(
        &request,
        "claude-haiku-4-5",
        &[
            (
                "max_tokens",
                "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5-20251001",
            ),
            ("tools.1.name", "tools: Tool names must be unique."),
            (
                "system",
                "system: text content blocks must contain non-whitespace text",
            ),
            (
                "messages.0.content.0",
                "messages: text content blocks must contain non-whitespace text",
            ),
            (
                "messages.1",
                "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: bad id. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            ),
            (
                "messages.1.content.0.id",
                "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
            ),
        ],
    );
    let rules: Vec<Rule> = violations.iter().map(|v| v.rule).collect();
    assert_eq!(
        rules,
        [
            Rule::MaxTokensTooLarge,
            Rule::DuplicateToolName,
            Rule::WhitespaceTextBlock,
            Rule::WhitespaceTextBlock,
            Rule::ToolUseWithoutResult,
            Rule::ToolUseIdPattern
        ]
    );
}

#[test]
fn count_tokens_requests_get_the_same_rules_without_max_tokens() {
    let request: CountTokensRequest = serde_json::from_value(json!({
        "model": "claude-opus-4-7",
        "messages": [user(json!("Hi")), assistant(json!([tool_use("toolu_a")])), user(json!("?"))],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }))
    .expect("parses");
    let violations = validate_count_tokens_with(
        &request,
        model("claude-opus-4-7"),
        &ValidateOptions::default(),
    );
    let got: Vec<(Rule, &str)> = violations
        .iter()
        .map(|v| (v.rule, v.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (Rule::ThinkingTypeUnsupported, "thinking.type"),
            (Rule::ToolUseWithoutResult, "messages.1")
        ]
    );
}

/// Validates `request` against the row the table gives its model, with the report.
fn report_for(request: &Value) -> Report {
    let request: MessagesRequest = serde_json::from_value(request.clone()).expect("parses");
    let model = ModelTable::builtin().resolve(&request.model).model();
    validate_report(&request, model, &ValidateOptions::default())
}

/// `(rule, path, message)` of each finding.
fn findings(found: &[Violation]) -> Vec<(Rule, &str, &str)> {
    found
        .iter()
        .map(|v| (v.rule, v.path.as_str(), v.message.as_str()))
        .collect()
}

#[test]
fn an_unknown_models_model_specific_findings_are_warnings_named_as_requested() {
    // This test used to assert a violation: the conservative default's 8,192 output tokens
    // were enforced on every id the table does not know. They are a guess, so what they find
    // is a warning now.
    let table = ModelTable::builtin();
    let resolved = table.resolve("claude-3-opus-latest");
    assert!(!resolved.is_known() && resolved.model().is_guess());
    let request: MessagesRequest = serde_json::from_str(&body(
        json!([user(json!("Hi"))]),
        json!({"model": "claude-3-opus-latest", "max_tokens": 10_000}),
    ))
    .expect("parses");
    let report = validate_report(&request, resolved.model(), &ValidateOptions::default());
    assert!(report.is_accepted(), "{report:#?}");
    assert_eq!(
        validate_with(&request, resolved.model(), &ValidateOptions::default()),
        []
    );
    let messages: Vec<&str> = report.warnings.iter().map(|v| v.message.as_str()).collect();
    assert_eq!(
        messages,
        [format!(
            "max_tokens: 10000 > {}, which is the maximum allowed number of output tokens for claude-3-opus-latest",
            resolved.model().max_output_tokens
        )]
    );
}

#[test]
fn claude_3_7_sonnet_latest_with_16000_max_tokens_is_accepted_as_the_api_accepted_it() {
    // A recorded request the API answered with 200.
    let report = report_for(&json!({
        "model": "claude-3-7-sonnet-latest", "max_tokens": 16000,
        "messages": [user(json!("Write a haiku about the sea."))]
    }));
    assert_eq!(findings(&report.violations), []);
    assert_eq!(
        findings(&report.warnings),
        [(
            Rule::MaxTokensTooLarge,
            "max_tokens",
            "max_tokens: 16000 > 8192, which is the maximum allowed number of output tokens for claude-3-7-sonnet-latest"
        )]
    );
}

#[test]
fn every_model_specific_rule_is_a_warning_on_an_unknown_model_and_shape_rules_stay_violations() {
    let report = report_for(&json!({
        "model": "claude-unknown-9", "max_tokens": 100_000,
        "thinking": {"type": "adaptive"},
        "temperature": 0.5,
        "output_config": {"effort": "xhigh"},
        "messages": [
            user(json!("Hi")),
            assistant(json!([tool_use("toolu_1")])),
            user(json!([tool_result("toolu_2")])),
            {"role": "system", "content": "Be brief."},
            assistant(json!("Sure, "))
        ]
    }));
    let rules = |found: &[Violation]| found.iter().map(|v| v.rule).collect::<Vec<_>>();
    assert_eq!(
        rules(&report.warnings),
        [
            Rule::MaxTokensTooLarge,
            Rule::ThinkingTypeUnsupported,
            Rule::EffortUnsupported,
            Rule::InvalidRole,
            Rule::PrefillUnsupported,
        ]
    );
    // The pairing rules hold for every model.
    assert_eq!(
        rules(&report.violations),
        [Rule::ToolUseWithoutResult, Rule::OrphanToolResult]
    );
    // The same request against a model the table knows: the model-specific ones are
    // violations again.
    let known = report_for(&json!({
        "model": "claude-haiku-4-5", "max_tokens": 100_000,
        "thinking": {"type": "adaptive"},
        "messages": [user(json!("Hi")), assistant(json!("Sure, "))]
    }));
    assert_eq!(known.warnings, []);
    assert_eq!(
        rules(&known.violations),
        [
            Rule::MaxTokensTooLarge,
            Rule::ThinkingTypeUnsupported,
            Rule::TrailingWhitespace
        ]
    );
}

#[test]
fn a_final_assistant_message_of_whitespace_only_is_rejected_in_the_apis_words() {
    let report = report_for(&json!({
        "model": "claude-haiku-4-5", "max_tokens": 1024,
        "messages": [user(json!("Hi")), assistant(json!([text("\n\n")]))]
    }));
    assert_eq!(
        findings(&report.violations),
        [
            (
                Rule::WhitespaceTextBlock,
                "messages.1.content.0",
                "messages: text content blocks must contain non-whitespace text"
            ),
            (
                Rule::TrailingWhitespace,
                "messages.1.content.0",
                "final assistant content cannot end with trailing whitespace"
            ),
        ]
    );
    // Beside a tool call, the API's own `"\n\n"` block is sent back as it came.
    let report = report_for(&json!({
        "model": "claude-haiku-4-5", "max_tokens": 1024,
        "messages": [
            user(json!("Hi")),
            assistant(json!([text("\n\n"), tool_use("toolu_1")])),
            user(json!([tool_result("toolu_1")]))
        ]
    }));
    assert_eq!(findings(&report.violations), []);
}

#[test]
fn effort_on_a_model_without_effort_levels_is_a_warning_for_any_model() {
    // No recorded response and no documented rule says the API rejects it (audit).
    let report = report_for(&json!({
        "model": "claude-haiku-4-5", "max_tokens": 1024,
        "output_config": {"effort": "low"},
        "messages": [user(json!("Hi"))]
    }));
    assert_eq!(findings(&report.violations), []);
    assert_eq!(
        findings(&report.warnings),
        [(
            Rule::EffortUnsupported,
            "output_config.effort",
            "output_config.effort: Extra inputs are not permitted"
        )]
    );
}

// --- the recorded fixtures -------------------------------------------------------------------

/// A recorded request, validated against the model it names.
struct Recorded {
    name: String,
    status: Option<u16>,
    /// The recorded `error.message`, if the API answered with an error.
    error: Option<String>,
    violations: Vec<Violation>,
    /// Whether the table knows the model the request names.
    known_model: bool,
}

/// Every recorded request of the fixtures.
fn recorded() -> Vec<Recorded> {
    let table = ModelTable::builtin();
    let mut out = Vec::new();
    for fixture in fixtures::all_fixtures() {
        for (i, exchange) in fixture.exchanges.iter().enumerate() {
            let Some(request) = &exchange.request else {
                continue;
            };
            let name = fixture.exchange_name(i);
            let model_id = request.body["model"].as_str().unwrap_or_default();
            let resolved = table.resolve(model_id);
            let model = resolved.model();
            // A recording without an `anthropic-beta` header may have had its headers filtered
            // (pydantic-ai's cassettes keep `content-type` only): the betas are then unknown.
            let options = match request.headers.get("anthropic-beta") {
                Some(header) => ValidateOptions::default().with_beta_header(header),
                None => ValidateOptions::default(),
            };
            let violations = if request.endpoint.ends_with("/count_tokens") {
                let body: CountTokensRequest = serde_json::from_value(request.body.clone())
                    .unwrap_or_else(|e| panic!("{name}: count_tokens body does not parse: {e}"));
                validate_count_tokens_report(&body, model, &options)
            } else {
                let body: MessagesRequest = serde_json::from_value(request.body.clone())
                    .unwrap_or_else(|e| panic!("{name}: messages body does not parse: {e}"));
                validate_report(&body, model, &options)
            }
            .violations;
            let error = exchange
                .response
                .body
                .as_json()
                .and_then(|b| b.pointer("/error/message"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            out.push(Recorded {
                name,
                status: exchange.response.status,
                error,
                violations,
                known_model: resolved.is_known(),
            });
        }
    }
    out
}

#[test]
fn recorded_requests_pass_unless_the_api_rejected_them_and_then_with_its_words() {
    let recorded = recorded();
    assert!(
        recorded.len() >= 40,
        "only {} recorded requests",
        recorded.len()
    );
    let mut reproduced = Vec::new();
    for Recorded {
        name,
        status,
        error,
        violations,
        known_model,
    } in &recorded
    {
        let error_text = error.as_deref().unwrap_or_default();
        if *status == Some(400) && !error_text.starts_with("prompt is too long") {
            let error = error
                .as_deref()
                .unwrap_or_else(|| panic!("{name}: a 400 without error.message"));
            let messages: Vec<&str> = violations.iter().map(|v| v.message.as_str()).collect();
            assert_eq!(
                messages,
                [error],
                "{name}: the recorded 400 is not reproduced"
            );
            reproduced.push(name.as_str());
        } else {
            // Accepted (2xx), or refused for reasons that are not the request's shape (429 rate
            // limit, 404 unknown model), or "prompt is too long": that one depends on the API's
            // token count, not on the shape, and the recorded body's text was replaced by a
            // short placeholder before recording (SOURCES.md, crmne/ruby_llm), so offline the
            // request is small and valid.
            // For a model the table does not know, the model-specific findings are warnings
            // and not in `violations`.
            assert!(
                violations.is_empty(),
                "{name} (status {status:?}, model known: {known_model}) was accepted by the API \
                 but: {violations:#?}"
            );
        }
    }
    assert_eq!(
        reproduced,
        [
            "anthropics__anthropic-sdk-python/f59a9391-643b-422c-96dc-1f28bc7ea4d7#1",
            "pydantic__pydantic-ai/test_anthropic_explicit_effort_xhigh_unsupported_model_errors#0",
        ]
    );
}

#[test]
fn the_recorded_orphan_tool_result_400_is_reproduced_with_the_merged_position() {
    let fixture =
        fixtures::fixture("anthropics__anthropic-sdk-python/f59a9391-643b-422c-96dc-1f28bc7ea4d7");
    let exchange = &fixture.exchanges[1];
    let recorded = exchange
        .response
        .body
        .as_json()
        .and_then(|b| b.pointer("/error/message"))
        .and_then(Value::as_str)
        .expect("the recorded 400 has a message");
    let request: MessagesRequest = serde_json::from_value(
        exchange
            .request
            .as_ref()
            .expect("recorded request")
            .body
            .clone(),
    )
    .expect("parses");
    let violations = validate_with(&request, model(&request.model), &ValidateOptions::default());
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(violations[0].rule, Rule::OrphanToolResult);
    assert_eq!(violations[0].message, recorded);
    assert_eq!(violations[0].path, "messages.1.content.0");
}

#[test]
fn a_request_may_start_at_a_compaction_block() {
    // What the loop sends after a server-side compaction: the assistant message that
    // begins with the last compaction block, then the conversation after it.
    let compaction = json!({"type": "compaction", "content": "<summary>s</summary>"});
    let request = body(
        json!([
            assistant(json!([compaction, text("Reading."), tool_use("toolu_1")])),
            user(json!([tool_result("toolu_1")])),
        ]),
        json!({"model": "claude-sonnet-4-6"}),
    );
    check(&request, "claude-sonnet-4-6", &[]);
    let failed = json!({"type": "compaction", "content": null, "encrypted_content": "E=="});
    let request = body(
        json!([assistant(json!([failed])), user(json!([text("go on")]))]),
        json!({"model": "claude-sonnet-4-6"}),
    );
    check(&request, "claude-sonnet-4-6", &[]);
    // The turn a compaction paused (`stop_reason: compaction`) goes back last: a
    // continuation, not a prefill, even where prefill is refused.
    let paused = json!({"type": "compaction", "content": "<summary>s</summary>"});
    let request = body(
        json!([user(json!([text("q")])), assistant(json!([paused]))]),
        json!({"model": "claude-sonnet-4-6"}),
    );
    check(&request, "claude-sonnet-4-6", &[]);
    let prefill = body(
        json!([user(json!([text("q")])), assistant(json!([text("A")]))]),
        json!({"model": "claude-sonnet-4-6"}),
    );
    check(
        &prefill,
        "claude-sonnet-4-6",
        &[(
            "messages.1",
            "This model does not support assistant message prefill. The conversation must end with a user message.",
        )],
    );
}

#[test]
fn a_whitespace_only_block_beside_other_content_is_a_warning_not_a_violation() {
    let model = ModelTable::builtin()
        .resolve("claude-haiku-4-5")
        .model()
        .clone();
    let check = |content: Value| {
        let body = body(json!([user(content)]), json!({}));
        let request: MessagesRequest = serde_json::from_str(&body).expect("a request");
        threadline_validate::validate_report(&request, &model, &ValidateOptions::default())
    };
    let beside = check(json!([text(" "), text("real")]));
    assert!(beside.violations.is_empty(), "{:?}", beside.violations);
    let warnings: Vec<(&str, &str)> = beside
        .warnings
        .iter()
        .map(|w| (w.path.as_str(), w.message.as_str()))
        .collect();
    assert_eq!(
        warnings,
        [(
            "messages.0.content.0",
            "messages.0.content.0: a whitespace-only text block beside other content; the API may answer \"messages: text content blocks must contain non-whitespace text\" (`threadline normalize` drops it)"
        )]
    );
    // Alone, it is the API's violation, not a warning.
    let alone = check(json!([text("\n")]));
    assert_eq!(alone.violations.len(), 1, "{:?}", alone.violations);
    assert!(alone.warnings.is_empty(), "{:?}", alone.warnings);
}

#[test]
fn a_capability_the_docs_are_silent_on_is_a_warning_that_says_so_and_a_documented_no_stays_a_violation()
 {
    // Haiku 5.5's row lists `system_messages` and `tool_changes` as undocumented (reference
    // api-2026-autumn.md §3.1 "Haiku 5.5 UNC", §9): Claude Code 2.1.328 sends it what it sends
    // Opus 5.5, `[user, system(+ output_config)]`.
    let request = |model: &str, system: Value| {
        json!({
            "model": model, "max_tokens": 1024,
            "tools": [weather_tool()],
            "messages": [user(json!("Hi")), system]
        })
    };
    let system = json!({"role": "system", "content": "Answer in French.", "output_config": {"effort": "medium"}});
    let report = report_for(&request("claude-haiku-5-5", system.clone()));
    assert_eq!(findings(&report.violations), []);
    assert_eq!(
        findings(&report.warnings),
        [
            (
                Rule::InvalidRole,
                "messages.1.role",
                "messages.1.role: the documentation does not say whether claude-haiku-5-5 accepts mid-conversation `role: \"system\"` messages, so the API may accept this; if claude-haiku-5-5 does not, the answer is `messages.1.role: Input should be 'user' or 'assistant'`"
            ),
            (
                Rule::PerMessageEffortUnsupported,
                "messages.1.output_config.effort",
                "messages.1.output_config.effort: the documentation does not say whether claude-haiku-5-5 accepts per-message effort (`output_config` on a system message), so the API may accept this; if claude-haiku-5-5 does not, the answer is `messages.1.output_config.effort: output_config.effort requires a model that supports per-turn effort; this model does not`"
            )
        ]
    );
    // Tool changes on it: a warning of the same kind, not a violation.
    let changes = json!({"role": "system", "content": [
        {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "get_weather"}}
    ]});
    let report = report_for(&request("claude-haiku-5-5", changes.clone()));
    assert_eq!(findings(&report.violations), []);
    let rules: Vec<Rule> = report.warnings.iter().map(|v| v.rule).collect();
    assert_eq!(rules, [Rule::InvalidRole, Rule::ToolChangesUnsupported]);
    assert!(
        report.warnings[1].message.starts_with(
            "messages.1.content.0: the documentation does not say whether claude-haiku-5-5 accepts `tool_addition` / `tool_removal` blocks"
        ),
        "{}",
        report.warnings[1].message
    );
    // The placement rules still hold: a system message carrying content cannot come first,
    // whether or not the model takes system messages.
    let first = report_for(&json!({
        "model": "claude-haiku-5-5", "max_tokens": 1024,
        "messages": [{"role": "system", "content": "Be brief."}, user(json!("Hi"))]
    }));
    assert_eq!(
        first
            .violations
            .first()
            .map(|v| (v.rule, v.message.as_str())),
        Some((
            Rule::SystemMessagePlacement,
            "messages.0: use the top-level 'system' parameter for the initial system prompt"
        )),
        "{:?}",
        first.violations
    );
    assert!(
        first
            .violations
            .iter()
            .all(|v| v.rule == Rule::SystemMessagePlacement)
    );
    // Models whose docs say no (Sonnet 5, Haiku 4.5) still refuse them: violations.
    for model in ["claude-sonnet-5", "claude-haiku-4-5"] {
        let report = report_for(&request(model, system.clone()));
        assert_eq!(
            findings(&report.violations),
            [(
                Rule::InvalidRole,
                "messages.1.role",
                "messages.1.role: Input should be 'user' or 'assistant'"
            )],
            "{model}"
        );
        assert_eq!(report.warnings, [], "{model}");
        let report = report_for(&request(model, changes.clone()));
        assert_eq!(
            report.violations.iter().map(|v| v.rule).collect::<Vec<_>>(),
            [Rule::InvalidRole, Rule::ToolChangesUnsupported],
            "{model}"
        );
    }
    // And the models whose docs say yes accept them without a word.
    let report = report_for(&request("claude-opus-5-5", system));
    assert_eq!((report.violations, report.warnings), (vec![], vec![]));
}
