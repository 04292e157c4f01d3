//! Properties of the validator: requests that are valid by construction give no violation, and
//! each single mutation that breaks one rule makes exactly that rule fire.
//!
//! The generator builds conversations that alternate user and assistant turns (sometimes
//! split into consecutive same-role messages, which the API merges), with tool calls answered
//! first thing in the next user message, unique ids, non-empty texts, at most four cache
//! markers with every `1h` before every `5m`, and two to four uniquely named tools, on any model
//! of the built-in table. On a cloud platform's view of the table the validator finds the
//! same, and what the platform withholds besides.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Value, json};
use threadline_validate::{Rule, ValidateOptions, validate, validate_with};
use threadline_wire::MessagesRequest;
use threadline_wire::model::{Model, ModelTable, ThinkingMode};

/// One user → assistant exchange of the generated conversation.
#[derive(Debug, Clone)]
struct ExchangePlan {
    /// The assistant message starts with a thinking block.
    thinking: bool,
    /// The assistant message has a text block (before its tool calls).
    text: bool,
    /// How many client tool calls the assistant makes.
    tool_uses: usize,
    /// Answer the calls in reverse order.
    reverse_results: bool,
    /// Add a text block after the results.
    text_after_results: bool,
    /// Send the text after the results as a separate (merged) user message.
    split_user: bool,
    /// Send the assistant's text and tool calls as two (merged) assistant messages.
    split_assistant: bool,
    /// A plain user question uses the string shorthand.
    string_question: bool,
}

#[derive(Debug, Clone)]
struct Plan {
    model: usize,
    exchanges: Vec<ExchangePlan>,
    /// Custom tools beyond the first two.
    extra_tools: usize,
    web_search: bool,
    /// 0: none, 1: auto, 2: the first tool.
    tool_choice: u8,
    /// Which eligible places get a cache marker (the first four set bits are used).
    markers: u16,
    /// How many of the markers (the first ones) are `1h`.
    one_hour: usize,
    /// Markers without an explicit ttl (default five minutes).
    implicit_ttl: bool,
    adaptive: bool,
}

fn exchange_plan() -> impl Strategy<Value = ExchangePlan> {
    (
        any::<bool>(),
        any::<bool>(),
        0usize..=3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                thinking,
                text,
                tool_uses,
                reverse_results,
                text_after_results,
                split_user,
                split_assistant,
                string_question,
            )| ExchangePlan {
                thinking,
                text,
                tool_uses,
                reverse_results,
                text_after_results,
                split_user,
                split_assistant,
                string_question,
            },
        )
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        0..ModelTable::builtin().models().len(),
        prop::collection::vec(exchange_plan(), 1..6),
        0usize..=2,
        any::<bool>(),
        0u8..=2,
        any::<u16>(),
        0usize..=4,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                model,
                mut exchanges,
                extra_tools,
                web_search,
                tool_choice,
                markers,
                one_hour,
                implicit_ttl,
                adaptive,
            )| {
                // At least one tool call, so that every mutation has something to work on.
                if exchanges[0].tool_uses == 0 {
                    exchanges[0].tool_uses = 1;
                }
                Plan {
                    model,
                    exchanges,
                    extra_tools,
                    web_search,
                    tool_choice,
                    markers,
                    one_hour,
                    implicit_ttl,
                    adaptive,
                }
            },
        )
}

fn model_of(plan: &Plan) -> &'static Model {
    &ModelTable::builtin().models()[plan.model]
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn thinking_block() -> Value {
    json!({"type": "thinking", "thinking": "Reasoning.", "signature": "EqQBCgIYAhIM"})
}

fn message(role: &str, content: Value) -> Value {
    json!({"role": role, "content": content})
}

/// The valid request a plan describes (without cache markers).
fn build_unmarked(plan: &Plan) -> Value {
    let model = model_of(plan);
    let tool_count = 2 + plan.extra_tools;
    let mut tools: Vec<Value> = (0..tool_count)
        .map(|n| json!({"name": format!("tool_{n}"), "description": "A tool.", "input_schema": {"type": "object"}}))
        .collect();
    if plan.web_search {
        tools.push(json!({"type": "web_search_20250305", "name": "web_search"}));
    }
    let mut messages: Vec<Value> = Vec::new();
    let mut previous_calls: Vec<String> = Vec::new();
    for (i, exchange) in plan.exchanges.iter().enumerate() {
        push_user(&mut messages, exchange, &previous_calls, i);
        previous_calls = (0..exchange.tool_uses)
            .map(|j| format!("toolu_{i}_{j}"))
            .collect();
        let mut head: Vec<Value> = Vec::new();
        if exchange.thinking {
            head.push(thinking_block());
        }
        if exchange.text || exchange.tool_uses == 0 {
            head.push(text(&format!("Answer {i}.")));
        }
        let calls: Vec<Value> = previous_calls
            .iter()
            .enumerate()
            .map(|(j, id)| {
                json!({"type": "tool_use", "id": id, "name": format!("tool_{}", j % tool_count), "input": {"n": j}})
            })
            .collect();
        if exchange.split_assistant && !head.is_empty() && !calls.is_empty() {
            messages.push(message("assistant", Value::Array(head)));
            messages.push(message("assistant", Value::Array(calls)));
        } else {
            head.extend(calls);
            messages.push(message("assistant", Value::Array(head)));
        }
    }
    // The final user message answers the last calls (or asks again).
    let last = plan
        .exchanges
        .last()
        .expect("a plan has at least one exchange");
    push_user(&mut messages, last, &previous_calls, plan.exchanges.len());

    let mut request = json!({
        "model": model.id,
        "max_tokens": 1024,
        "system": [text("You are terse."), text("Answer in English.")],
        "tools": tools,
        "messages": messages,
    });
    match plan.tool_choice {
        1 => request["tool_choice"] = json!({"type": "auto"}),
        2 => request["tool_choice"] = json!({"type": "tool", "name": "tool_0"}),
        _ => {}
    }
    if plan.adaptive && model.accepts_thinking(ThinkingMode::Adaptive) {
        request["thinking"] = json!({"type": "adaptive"});
    }
    request
}

/// The user message(s) opening exchange `i`: the results of `calls`, or a question.
fn push_user(messages: &mut Vec<Value>, exchange: &ExchangePlan, calls: &[String], i: usize) {
    if calls.is_empty() {
        let content = if exchange.string_question && i > 0 {
            json!(format!("Question {i}?"))
        } else {
            json!([text(&format!("Question {i}?"))])
        };
        messages.push(message("user", content));
        return;
    }
    let mut results: Vec<Value> = calls
        .iter()
        .map(|id| json!({"type": "tool_result", "tool_use_id": id, "content": format!("result of {id}")}))
        .collect();
    if exchange.reverse_results {
        results.reverse();
    }
    if exchange.text_after_results {
        if exchange.split_user {
            messages.push(message("user", Value::Array(results)));
            messages.push(message("user", json!([text("Go on.")])));
            return;
        }
        results.push(text("Go on."));
    }
    messages.push(message("user", Value::Array(results)));
}

/// JSON pointers of the places that may carry a cache marker, in processing order.
fn eligible(request: &Value) -> Vec<String> {
    let mut places = Vec::new();
    for (n, _) in request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        places.push(format!("/tools/{n}"));
    }
    for (n, _) in request["system"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        places.push(format!("/system/{n}"));
    }
    for (m, msg) in request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (b, block) in msg["content"].as_array().into_iter().flatten().enumerate() {
            if matches!(
                block["type"].as_str(),
                Some("text" | "tool_use" | "tool_result")
            ) {
                places.push(format!("/messages/{m}/content/{b}"));
            }
        }
    }
    places
}

fn marker(ttl: Option<&str>) -> Value {
    match ttl {
        Some(ttl) => json!({"type": "ephemeral", "ttl": ttl}),
        None => json!({"type": "ephemeral"}),
    }
}

fn set_marker(request: &mut Value, place: &str, ttl: Option<&str>) {
    let block = request.pointer_mut(place).expect("eligible place exists");
    block["cache_control"] = marker(ttl);
}

fn clear_markers(request: &mut Value) {
    for place in eligible(request) {
        if let Some(Value::Object(block)) = request.pointer_mut(&place) {
            block.remove("cache_control");
        }
    }
}

/// The valid request a plan describes, with its cache markers.
fn build(plan: &Plan) -> Value {
    let mut request = build_unmarked(plan);
    let places = eligible(&request);
    let chosen: Vec<&String> = places
        .iter()
        .take(16)
        .enumerate()
        .filter(|(n, _)| plan.markers & (1 << n) != 0)
        .map(|(_, p)| p)
        .take(4)
        .collect();
    for (k, place) in chosen.into_iter().enumerate() {
        let ttl = if k < plan.one_hour {
            Some("1h")
        } else if plan.implicit_ttl {
            None
        } else {
            Some("5m")
        };
        set_marker(&mut request, place, ttl);
    }
    request
}

fn rules(request: &Value, model: &Model) -> BTreeSet<Rule> {
    let parsed: MessagesRequest =
        serde_json::from_value(request.clone()).expect("generated requests parse");
    validate(&parsed, model)
        .into_iter()
        .map(|v| v.rule)
        .collect()
}

fn messages_mut(request: &mut Value) -> &mut Vec<Value> {
    request["messages"]
        .as_array_mut()
        .expect("messages is an array")
}

/// Indices of messages whose content holds a block satisfying `pred`.
fn messages_with(request: &Value, pred: impl Fn(&Value) -> bool) -> Vec<usize> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, m)| m["content"].as_array().into_iter().flatten().any(&pred))
        .map(|(i, _)| i)
        .collect()
}

fn is_type(block: &Value, ty: &str) -> bool {
    block["type"].as_str() == Some(ty)
}

/// Top-level text blocks of the messages: `(message, block)`.
fn text_blocks(request: &Value) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (m, msg) in request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (b, block) in msg["content"].as_array().into_iter().flatten().enumerate() {
            if is_type(block, "text") {
                found.push((m, b));
            }
        }
    }
    found
}

fn pick<T: Copy>(items: &[T], seed: usize) -> T {
    assert!(!items.is_empty(), "the generator guarantees a candidate");
    items[seed % items.len()]
}

/// Renames a tool_use id and every tool_result answering it.
fn rename_id(request: &mut Value, from: &str, to: &str) {
    for msg in messages_mut(request) {
        for block in msg["content"].as_array_mut().into_iter().flatten() {
            if block["id"].as_str() == Some(from) {
                block["id"] = json!(to);
            }
            if block["tool_use_id"].as_str() == Some(from) {
                block["tool_use_id"] = json!(to);
            }
        }
    }
}

fn first_tool_use_id(request: &Value) -> String {
    for msg in request["messages"].as_array().into_iter().flatten() {
        for block in msg["content"].as_array().into_iter().flatten() {
            if is_type(block, "tool_use") {
                return block["id"].as_str().unwrap_or_default().to_owned();
            }
        }
    }
    panic!("the generator guarantees a tool call")
}

/// One rule-breaking edit of a valid request.
#[derive(Debug, Clone, Copy)]
enum Mutation {
    DropToolResult,
    DuplicateToolUseId,
    FifthMarker,
    EmptyText,
    WhitespaceText,
    ToolResultIntoAssistant,
    BadIdChars,
    DuplicateToolName,
    ToolChoiceWithoutTools,
    OneHourAfterFiveMinutes,
    OrphanResult,
    DuplicateResult,
    TextBeforeResults,
    NoMessages,
    EmptyAssistant,
    MarkerOnEmptyText,
    ThinkingNotFirst,
    MaxTokensTooLarge,
    FinalAssistant,
}

/// Applies `mutation` (choosing among candidates with `seed`); returns the rule expected to
/// fire, alone.
fn mutate(request: &mut Value, mutation: Mutation, seed: usize, model: &Model) -> Rule {
    match mutation {
        Mutation::DropToolResult => {
            let users = messages_with(request, |b| is_type(b, "tool_result"));
            let m = pick(&users, seed);
            let content = messages_mut(request)[m]["content"]
                .as_array_mut()
                .expect("array content");
            let results: Vec<usize> = (0..content.len())
                .filter(|&b| is_type(&content[b], "tool_result"))
                .collect();
            content.remove(pick(&results, seed / 7));
            if content.is_empty() {
                content.push(text("Never mind."));
            }
            Rule::ToolUseWithoutResult
        }
        Mutation::DuplicateToolUseId => {
            let id = first_tool_use_id(request);
            let messages = messages_mut(request);
            messages.push(message(
                "assistant",
                json!([{"type": "tool_use", "id": id, "name": "tool_0", "input": {}}]),
            ));
            messages.push(message(
                "user",
                json!([{"type": "tool_result", "tool_use_id": id, "content": "again"}]),
            ));
            Rule::DuplicateToolUseId
        }
        Mutation::FifthMarker => {
            clear_markers(request);
            for place in eligible(request).iter().take(5) {
                set_marker(request, place, Some("5m"));
            }
            Rule::TooManyCacheBreakpoints
        }
        Mutation::WhitespaceText => {
            // Whitespace-only text is rejected in a turn holding nothing else (a turn beside
            // other content is accepted: `whitespace_beside_other_content_is_accepted`).
            let messages = messages_mut(request);
            messages.push(message("assistant", json!("Noted.")));
            messages.push(message("user", json!([text(" \n\t ")])));
            Rule::WhitespaceTextBlock
        }
        Mutation::EmptyText | Mutation::MarkerOnEmptyText => {
            if matches!(mutation, Mutation::MarkerOnEmptyText) {
                clear_markers(request);
            }
            let (m, b) = pick(&text_blocks(request), seed);
            let block = &mut messages_mut(request)[m]["content"][b];
            match mutation {
                Mutation::EmptyText => {
                    block["text"] = json!("");
                    if let Value::Object(block) = block {
                        block.remove("cache_control");
                    }
                    Rule::EmptyTextBlock
                }
                _ => {
                    block["text"] = json!("");
                    block["cache_control"] = marker(None);
                    Rule::CacheControlOnEmptyText
                }
            }
        }
        Mutation::ToolResultIntoAssistant => {
            let assistants: Vec<usize> = request["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .filter(|(_, m)| m["role"] == "assistant")
                .map(|(i, _)| i)
                .collect();
            let m = pick(&assistants, seed);
            messages_mut(request)[m]["content"]
                .as_array_mut()
                .expect("array content")
                .push(json!({"type": "tool_result", "tool_use_id": "toolu_stray", "content": "x"}));
            Rule::ToolResultInAssistant
        }
        Mutation::BadIdChars => {
            let id = first_tool_use_id(request);
            rename_id(request, &id, &format!("{id}.v2"));
            Rule::ToolUseIdPattern
        }
        Mutation::DuplicateToolName => {
            request["tools"][1]["name"] = json!("tool_0");
            Rule::DuplicateToolName
        }
        Mutation::ToolChoiceWithoutTools => {
            if let Value::Object(body) = request {
                body.remove("tools");
            }
            request["tool_choice"] = json!({"type": "auto"});
            Rule::ToolChoiceWithoutTools
        }
        Mutation::OneHourAfterFiveMinutes => {
            clear_markers(request);
            let places = eligible(request);
            let first = seed % (places.len() - 1);
            set_marker(request, &places[first], Some("5m"));
            set_marker(request, &places[first + 1], Some("1h"));
            Rule::CacheTtlOrder
        }
        Mutation::OrphanResult => {
            let first = &mut messages_mut(request)[0]["content"];
            let mut blocks = match first.take() {
                Value::Array(blocks) => blocks,
                other => vec![text(other.as_str().unwrap_or("Question?"))],
            };
            blocks.insert(
                0,
                json!({"type": "tool_result", "tool_use_id": "toolu_orphan", "content": "x"}),
            );
            *first = Value::Array(blocks);
            Rule::OrphanToolResult
        }
        Mutation::DuplicateResult => {
            let users = messages_with(request, |b| is_type(b, "tool_result"));
            let m = pick(&users, seed);
            let content = messages_mut(request)[m]["content"]
                .as_array_mut()
                .expect("array content");
            let results: Vec<usize> = (0..content.len())
                .filter(|&b| is_type(&content[b], "tool_result"))
                .collect();
            let b = pick(&results, seed / 7);
            let mut copy = content[b].clone();
            if let Value::Object(copy) = &mut copy {
                copy.remove("cache_control");
            }
            content.insert(b + 1, copy);
            Rule::DuplicateToolResult
        }
        Mutation::TextBeforeResults => {
            let users = messages_with(request, |b| is_type(b, "tool_result"));
            let m = pick(&users, seed);
            messages_mut(request)[m]["content"]
                .as_array_mut()
                .expect("array content")
                .insert(0, text("Here you go."));
            Rule::ToolUseWithoutResult
        }
        Mutation::NoMessages => {
            request["messages"] = json!([]);
            Rule::EmptyMessages
        }
        Mutation::EmptyAssistant => {
            let messages = messages_mut(request);
            messages.push(message("assistant", json!([])));
            messages.push(message("user", json!("Still there?")));
            Rule::EmptyContent
        }
        Mutation::ThinkingNotFirst => {
            let m = request["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .position(|m| m["role"] == "assistant")
                .expect("an assistant message");
            let content = messages_mut(request)[m]["content"]
                .as_array_mut()
                .expect("array content");
            content.insert(0, text("First, a remark."));
            content.push(thinking_block());
            Rule::ThinkingNotFirst
        }
        Mutation::MaxTokensTooLarge => {
            request["max_tokens"] = json!(model.max_output_tokens + 1);
            Rule::MaxTokensTooLarge
        }
        Mutation::FinalAssistant => {
            messages_mut(request).push(message("assistant", json!("The answer is ")));
            if model.prefill {
                Rule::TrailingWhitespace
            } else {
                Rule::PrefillUnsupported
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn valid_requests_have_no_violations(plan in plan()) {
        let request = build(&plan);
        let found = rules(&request, model_of(&plan));
        prop_assert!(found.is_empty(), "{found:?} in {request:#}");
    }

    /// A `"\n\n"` text block in an assistant message beside other content (as the
    /// API itself returns them) is accepted, wherever it goes after the first block.
    #[test]
    fn whitespace_beside_other_content_is_accepted(plan in plan(), seed in any::<usize>()) {
        let mut request = build(&plan);
        let messages = messages_mut(&mut request);
        let last = messages.len().saturating_sub(1);
        for (m, msg) in messages.iter_mut().enumerate() {
            // A final assistant message (prefill) must not end with whitespace: not this rule.
            if msg["role"] != "assistant" || m == last {
                continue;
            }
            if let Some(content) = msg["content"].as_array_mut().filter(|c| !c.is_empty()) {
                let at = 1 + seed % content.len();
                content.insert(at, text("\n\n"));
            }
        }
        let found = rules(&request, model_of(&plan));
        prop_assert!(found.is_empty(), "{found:?} in {request:#}");
    }

    #[test]
    fn each_single_mutation_fires_exactly_its_rule(plan in plan(), seed in any::<usize>()) {
        let model = model_of(&plan);
        for mutation in [
            Mutation::DropToolResult,
            Mutation::DuplicateToolUseId,
            Mutation::FifthMarker,
            Mutation::EmptyText,
            Mutation::WhitespaceText,
            Mutation::ToolResultIntoAssistant,
            Mutation::BadIdChars,
            Mutation::DuplicateToolName,
            Mutation::ToolChoiceWithoutTools,
            Mutation::OneHourAfterFiveMinutes,
            Mutation::OrphanResult,
            Mutation::DuplicateResult,
            Mutation::TextBeforeResults,
            Mutation::NoMessages,
            Mutation::EmptyAssistant,
            Mutation::MarkerOnEmptyText,
            Mutation::ThinkingNotFirst,
            Mutation::MaxTokensTooLarge,
            Mutation::FinalAssistant,
        ] {
            let mut request = build(&plan);
            let expected = mutate(&mut request, mutation, seed, model);
            let found = rules(&request, model);
            prop_assert_eq!(
                &found,
                &BTreeSet::from([expected]),
                "{:?} on {} gave {:?}: {:#}",
                mutation,
                model.id,
                found,
                request
            );
        }
    }

    /// On each cloud platform's view of the model table, the validator finds exactly what it
    /// finds on the Claude API, except that on Bedrock a request asking for on-demand
    /// compaction is refused in Bedrock's words whatever the model (and only then).
    #[test]
    fn a_platform_finds_what_the_api_finds_and_what_it_withholds(
        plan in plan(),
        compacting in any::<bool>(),
    ) {
        use threadline_wire::platform::Platform;

        let api_row = model_of(&plan);
        let mut request = build(&plan);
        if compacting {
            request["compaction"] = json!({"type": "summarize"});
        }
        let parsed: MessagesRequest =
            serde_json::from_value(request.clone()).expect("generated requests parse");
        let options = ValidateOptions::default().with_beta_header("compact-2026-09-04");
        let unsupported = Rule::OnDemandCompactionUnsupported;
        let others = |found: &[threadline_validate::Violation]| {
            found
                .iter()
                .filter(|v| v.rule != unsupported)
                .map(|v| (v.rule, v.path.clone(), v.message.clone()))
                .collect::<Vec<_>>()
        };
        let on_api = validate_with(&parsed, api_row, &options);
        for platform in [Platform::Bedrock, Platform::Vertex, Platform::Foundry] {
            let view = ModelTable::builtin().on_platform(platform);
            let row = view.get(&api_row.id).expect("the same row on the platform");
            let found = validate_with(&parsed, row, &options);
            prop_assert_eq!(others(&found), others(&on_api), "{} on {}", api_row.id, platform);
            let refusals: Vec<_> = found.iter().filter(|v| v.rule == unsupported).collect();
            if platform == Platform::Bedrock && compacting {
                prop_assert_eq!(refusals.len(), 1);
                prop_assert!(
                    refusals[0].message.contains("Amazon Bedrock does not offer on-demand"),
                    "{}", refusals[0].message
                );
            } else {
                let api_refusals = on_api.iter().filter(|v| v.rule == unsupported).count();
                prop_assert_eq!(refusals.len(), api_refusals);
            }
        }
    }
}
