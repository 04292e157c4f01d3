//! The mock answers what the validator finds as the API does: a deferred tool with
//! a cache marker is a 400 in the API's words; an unknown model is the API's 404, never a 400
//! on the table's guessed limits, and the models Claude Code 2.1.328 picks are served (with
//! the system messages it sends Haiku 5.5, on which the docs are silent); the API's own
//! `"\n\n"` blocks sent back are accepted; an unknown `thinking.display`, and `display:
//! "updates"` or `clear_at` without their betas, are the 400s the validator names.

use serde_json::{Value, json};
use threadline_mock::{MockServer, Scenario, Step};

use crate::server::http::post;

async fn start() -> MockServer {
    MockServer::start(Scenario::new([Step::text("Hello!")]).repeating_last())
        .await
        .expect("the mock listens")
}

async fn answer(server: &MockServer, body: Value) -> (u16, Value) {
    let bytes = serde_json::to_vec(&body).expect("JSON serializes");
    let answer = post(server.addr(), &bytes).await.expect("answer");
    let parsed = serde_json::from_str(&answer.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", answer.body));
    (answer.status, parsed)
}

#[tokio::test]
async fn a_deferred_tool_with_a_cache_marker_is_the_apis_400() {
    let server = start().await;
    let (status, body) = answer(
        &server,
        json!({
            "model": "claude-sonnet-4-6", "max_tokens": 16,
            "tools": [
                {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
                {"name": "get_weather", "input_schema": {"type": "object"}},
                {"name": "generate_mcp14", "input_schema": {"type": "object"},
                 "defer_loading": true, "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [{"role": "user", "content": "Hi"}]
        }),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(
        body["error"]["message"],
        "Tool 'generate_mcp14' cannot have both defer_loading=true and cache_control set. Tools with defer_loading cannot use prompt caching."
    );
    // The marker on the last tool that is not deferred is accepted.
    let (status, body) = answer(
        &server,
        json!({
            "model": "claude-sonnet-4-6", "max_tokens": 16,
            "tools": [
                {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
                {"name": "get_weather", "input_schema": {"type": "object"},
                 "cache_control": {"type": "ephemeral"}},
                {"name": "generate_mcp14", "input_schema": {"type": "object"}, "defer_loading": true}
            ],
            "messages": [{"role": "user", "content": "Hi"}]
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn an_unknown_model_is_a_404_never_a_400_on_a_guessed_limit() {
    let server = start().await;
    let (status, body) = answer(
        &server,
        json!({
            "model": "claude-3-7-sonnet-latest", "max_tokens": 16000,
            "messages": [{"role": "user", "content": "Hi"}]
        }),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["type"], "not_found_error");
    assert_eq!(body["error"]["message"], "model: claude-3-7-sonnet-latest");
}

#[tokio::test]
async fn the_models_claude_code_2_1_328_picks_are_served_never_a_404() {
    // Claude Code 2.1.328's default model is claude-opus-5-5; `--model sonnet` / `haiku` are
    // the 5.5 models (issue 28: its first request used to get 404 `model: claude-opus-5-5`).
    let server = start().await;
    for model in [
        "claude-opus-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
        "claude-fable-5-1",
        "claude-mythos-5-1",
    ] {
        let (status, body) = answer(
            &server,
            json!({
                "model": model, "max_tokens": 128000,
                "thinking": {"type": "adaptive"},
                "output_config": {"effort": "medium"},
                "messages": [{"role": "user", "content": "Hi"}]
            }),
        )
        .await;
        assert_eq!(status, 200, "{model}: {body}");
        assert_eq!(body["model"], model);
    }
}

#[tokio::test]
async fn a_system_message_the_docs_are_silent_on_is_served_and_a_documented_no_is_the_400() {
    // Claude Code 2.1.328's first request on `--model haiku`: `[user, system]` (it adds an
    // effort, under a beta header this helper does not send). The docs do not say whether
    // Haiku 5.5 takes system messages (its row lists them as undocumented), so the mock serves
    // it; Sonnet 5's docs say it does not: a 400.
    let server = start().await;
    let body = |model: &str| {
        json!({
            "model": model, "max_tokens": 1024,
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "system", "content": "Today's date is 2026-12-02."}
            ]
        })
    };
    let (status, answered) = answer(&server, body("claude-haiku-5-5")).await;
    assert_eq!(status, 200, "{answered}");
    let (status, refused) = answer(&server, body("claude-sonnet-5")).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "messages.1.role: Input should be 'user' or 'assistant'"
    );
}

#[tokio::test]
async fn a_whitespace_block_beside_a_tool_call_is_accepted_and_alone_is_the_apis_400() {
    let server = start().await;
    let conversation = |blocks: Value| {
        json!({
            "model": "claude-sonnet-4-6", "max_tokens": 16,
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": blocks},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "20°C"}]}
            ]
        })
    };
    let call = json!({"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}});
    let (status, body) = answer(
        &server,
        conversation(json!([{"type": "text", "text": "\n\n"}, call])),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = answer(
        &server,
        json!({
            "model": "claude-sonnet-4-6", "max_tokens": 16,
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}]},
                {"role": "user", "content": "Well?"}
            ]
        }),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["message"],
        "messages: text content blocks must contain non-whitespace text"
    );
}

#[tokio::test]
async fn an_unknown_display_and_the_betas_of_updates_and_clear_at_are_400s_without_a_header() {
    // No `anthropic-beta` header: the mock knows the request names no beta.
    let server = start().await;
    let request = |thinking: Value, system: Value| {
        json!({
            "model": "claude-fable-5-1", "max_tokens": 1024, "thinking": thinking,
            "messages": [{"role": "user", "content": "Hi"}, system]
        })
    };
    let reminder = json!({"role": "system", "content": "Be brief."});
    for (display, message) in [
        (
            "bogus",
            "thinking.adaptive.display: Input should be 'summarized' or 'omitted'",
        ),
        (
            "updates",
            "thinking.adaptive.display: Input should be 'summarized' or 'omitted'",
        ),
    ] {
        let thinking = json!({"type": "adaptive", "display": display});
        let (status, refused) = answer(&server, request(thinking, reminder.clone())).await;
        assert_eq!(status, 400, "{display}: {refused}");
        assert_eq!(refused["error"]["message"], message, "{display}");
    }
    let scoped = json!({"role": "system", "clear_at": "next_user_message", "content": "Be brief."});
    let adaptive = json!({"type": "adaptive", "display": "omitted"});
    let (status, refused) = answer(&server, request(adaptive.clone(), scoped)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "messages.1.clear_at: Extra inputs are not permitted"
    );
    let (status, answered) = answer(&server, request(adaptive, reminder)).await;
    assert_eq!(status, 200, "{answered}");
}
