//! One loop, one request builder: the request a context policy previews through
//! `StepInput::request` is the request the loop then sends for the same history — model,
//! system prompt, thinking, `context_management`, tools with tool search's deferrals, the
//! shaper's changes and the cache markers — byte for byte.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use threadline_query::scripted::{Reply, Response, ScriptedService};
use threadline_query::tool_search::ToolSearchConfig;
use threadline_query::{
    ContextPolicy, PolicyError, Query, QueryConfig, RequestBuilder, SharedPlanner, State,
    StepInput, StepOutcome, Terminal,
};
use threadline_wire::request::{ThinkingConfig, ThinkingEnabled};
use threadline_wire::{MessagesRequest, StopReason};

use super::{MODEL, end};
use crate::common::{Log, prompt, run, sleep_input, tools, with_web_search};

/// Records, before every request, the request the loop's builder previews.
#[derive(Clone, Default)]
struct Previews(Arc<Mutex<Vec<MessagesRequest>>>);

impl ContextPolicy for Previews {
    fn autocompact<'a>(
        &'a mut self,
        input: StepInput<'a>,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        let start = input.boundary.min(input.history.len());
        let preview = input.request.preview(&input.history[start..]);
        self.0.lock().expect("previews").push(preview);
        Box::pin(std::future::ready(Ok(StepOutcome::unchanged())))
    }
}

fn config() -> QueryConfig {
    let mut config = QueryConfig::new(MODEL, 4096)
        .with_system("You are a test. ".repeat(200))
        .with_tool_search(ToolSearchConfig::always());
    config.thinking = Some(ThinkingConfig::Enabled(ThinkingEnabled::new(1024)));
    config.context_management = Some(
        serde_json::from_value(json!({"edits": [{"type": "clear_tool_uses_20250919"}]}))
            .expect("edits"),
    );
    config
}

fn bytes(request: &MessagesRequest) -> String {
    serde_json::to_string(request).expect("json")
}

#[tokio::test(start_paused = true)]
async fn the_policy_previews_the_request_the_loop_sends() {
    let log = Log::default();
    // With thinking on, a tool-using turn starts with a thinking block.
    let read = Reply::stream(
        Response::new("msg_1")
            .block(json!({"type": "thinking", "thinking": "Reading.", "signature": "sig"}))
            .tool_use("toolu_1", "read", sleep_input(1))
            .stop(StopReason::ToolUse),
    );
    let service = ScriptedService::new([read, end("msg_2", "Done.")]);
    let previews = Previews::default();
    let query = Query::new(service.clone(), config())
        .with_tools(tools(&log))
        .with_shaper(with_web_search)
        .with_cache_planner(SharedPlanner::default())
        .with_policy(previews.clone());
    let outcome = run(query, State::default(), prompt()).await;
    assert_eq!(outcome.terminal, Terminal::Completed);

    let sent = service.requests();
    let previewed = previews.0.lock().expect("previews").clone();
    assert_eq!(sent.len(), 2);
    assert_eq!(previewed.len(), 2);
    for (i, (preview, sent)) in previewed.iter().zip(&sent).enumerate() {
        assert_eq!(bytes(preview), bytes(sent), "request {i}");
    }
    // What the settings put there is there.
    let first = &sent[0];
    assert!(first.thinking.is_some() && first.context_management.is_some());
    let tools = first.tools.as_deref().expect("tools");
    assert!(tools.iter().any(|t| t.is_deferred()), "deferred tools");
    assert!(tools.iter().any(|t| t.name() == "web_search"), "shaped");
    assert!(bytes(first).contains("cache_control"), "planned");
}

#[tokio::test(start_paused = true)]
async fn a_builder_of_its_own_previews_the_first_request() {
    let log = Log::default();
    let service = ScriptedService::new([Reply::stream(
        Response::new("msg_1")
            .text("Done.")
            .stop(StopReason::EndTurn),
    )]);
    let query = Query::new(service.clone(), config())
        .with_tools(tools(&log))
        .with_shaper(with_web_search)
        .with_cache_planner(SharedPlanner::default());
    let outcome = run(query, State::default(), prompt()).await;
    assert_eq!(outcome.terminal, Terminal::Completed);
    let mut builder = RequestBuilder::new(config(), &tools(&log))
        .with_shaper(with_web_search)
        .with_cache_planner(SharedPlanner::default());
    assert_eq!(
        bytes(&builder.preview(&prompt())),
        bytes(&service.requests()[0])
    );
}
