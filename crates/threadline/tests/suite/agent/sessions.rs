//! The session an `Agent` owns: never lost (a run dropped early keeps what it appended, the
//! state shows a run's messages as they pass, a second concurrent run is refused), the
//! one-call `prompt` (text, usage, cost), typed tools in the loop, the builder's settings
//! (order-independent over `query_config`, thinking, effort), and the session persisted to
//! each `SessionStore` and resumed from it. Against the scripted service: every request
//! must pass `validate`.

use std::sync::Arc;

use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::json;
use threadline::message::Message;
use threadline::query::scripted::{Reply, Response, ScriptedService};
use threadline::query::{JsonSchema, QueryConfig, typed_tool};
use threadline::store::{JsonlStore, MemoryStore, SessionKey, SessionStore, SqliteStore};
use threadline::wire::model::ModelTable;
use threadline::wire::request::{Effort, ThinkingEnabled};
use threadline::wire::{ContentBlock, StopReason, ThinkingConfig};
use threadline::{Agent, Event, PromptError, RunError, Terminal, load_session};

/// The input of the `add` tool (schemars through the facade's re-export: no dependency of
/// its own).
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "threadline::query::schemars")]
struct AddArgs {
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
}

fn add_tool() -> impl threadline::query::Tool {
    typed_tool(
        "add",
        "Adds two integers.",
        |args: AddArgs, _ctx| async move { format!("{}", args.a + args.b) },
    )
}

/// The model calls `add` with `input`, then answers `answer`.
fn add_then_answer(n: u32, input: serde_json::Value, answer: &str) -> [Reply; 2] {
    [
        Reply::stream(
            Response::new(&format!("msg_{n}a"))
                .tool_use(&format!("toolu_{n}"), "add", input)
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new(&format!("msg_{n}b"))
                .text(answer)
                .output_tokens(7)
                .stop(StopReason::EndTurn),
        ),
    ]
}

fn agent(service: &ScriptedService) -> Agent<ScriptedService> {
    Agent::builder(service.clone())
        .tool(add_tool())
        .today("2026-03-08")
        .build()
        .expect("agent")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn tool_result_text(request: &threadline::wire::MessagesRequest) -> Vec<String> {
    let json = serde_json::to_value(request).expect("serializes");
    let mut found = Vec::new();
    for message in json["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                found.push(block["content"].to_string());
            }
        }
    }
    found
}

#[test]
fn prompt_answers_the_text_the_tokens_and_the_cost() {
    let service = ScriptedService::new(add_then_answer(1, json!({"a": 2, "b": 3}), "It is 5."));
    let agent = agent(&service);
    let answer = rt()
        .block_on(agent.prompt("What is 2 + 3?"))
        .expect("an answer");
    assert_eq!(answer.text, "It is 5.");
    assert_eq!(answer.terminal, Terminal::Completed);
    assert!(answer.is_complete());
    assert_eq!(answer.turns, 1);
    // Two responses, each counted once (the scripted usage: 10 input tokens each).
    assert_eq!(answer.usage.responses, 2);
    assert_eq!(answer.usage.input_tokens, 20);
    assert_eq!(
        answer.usage.output_tokens,
        7 + answer
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Assistant(a) if a.api_message_id.as_deref() == Some("msg_1a") =>
                    a.usage.as_ref().and_then(|u| u.output_tokens),
                _ => None,
            })
            .next_back()
            .unwrap_or(0)
    );
    let table = ModelTable::builtin();
    let priced: f64 = answer
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => a
                .usage
                .as_deref()
                .map(|u| (a.api_message_id.clone(), u.clone())),
            _ => None,
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .values()
        .map(|u| table.cost("claude-sonnet-4-5", u))
        .sum();
    assert!(
        answer.cost > 0.0 && (answer.cost - priced).abs() < 1e-12,
        "{} vs {priced}",
        answer.cost
    );
    // The typed tool ran on its parsed input; the model read its result.
    let requests = service.requests();
    assert_eq!(tool_result_text(&requests[1]), ["\"5\""]);
    // The answer's messages are the session's.
    assert_eq!(agent.state().messages, answer.messages);
    assert!(
        service.violations().is_empty(),
        "{:?}",
        service.violations()
    );
}

#[test]
fn prompt_prices_by_the_agents_model_table_not_the_builtin_one() {
    // A table extended from JSON (a user pricing a model without a release): the answering
    // model `claude-sonnet-4-5` replaced by a row with ten times its prices.
    let base = ModelTable::builtin();
    let row = base.resolve("claude-sonnet-4-5").model();
    let p = &row.prices;
    let replaced = json!({"models": [{
        "id": row.id, "aliases": row.aliases, "context_window": row.context_window,
        "max_output_tokens": row.max_output_tokens, "min_cacheable_tokens": row.min_cacheable_tokens,
        "thinking": ["enabled"], "prefill": true, "sampling_params": true, "effort": [],
        "keeps_prior_thinking": false, "rejects_input_plus_max_tokens_over_window": false,
        "prices": {"input": p.input * 10.0, "output": p.output * 10.0,
                   "cache_write_5m": p.cache_write_5m * 10.0, "cache_write_1h": p.cache_write_1h * 10.0,
                   "cache_read": p.cache_read * 10.0}}]});
    let table = base
        .extended_from_json(&replaced.to_string())
        .expect("an extended table");
    let cost_with = |config: QueryConfig| {
        let service = ScriptedService::new(add_then_answer(1, json!({"a": 2, "b": 3}), "It is 5."));
        let agent = Agent::builder(service)
            .query_config(config)
            .tool(add_tool())
            .today("2026-03-08")
            .build()
            .expect("agent");
        let answer = rt().block_on(agent.prompt("What is 2 + 3?"));
        answer.expect("an answer").cost
    };
    let builtin_priced = cost_with(QueryConfig::new("claude-sonnet-4-5", 1024));
    let cost = cost_with(QueryConfig::new("claude-sonnet-4-5", 1024).with_models(table));
    assert!(builtin_priced > 0.0);
    assert!(
        (cost - builtin_priced * 10.0).abs() < 1e-9,
        "{cost} is not ten times {builtin_priced}"
    );
}

#[test]
fn a_typed_tool_s_bad_input_is_an_error_the_model_reads() {
    // `a` is a string: the loop's schema check (derived by schemars) refuses it before the
    // call, and the model reads why.
    let service = ScriptedService::new(add_then_answer(1, json!({"a": "two", "b": 3}), "Oops."));
    let agent = agent(&service);
    let answer = rt().block_on(agent.prompt("Add.")).expect("an answer");
    assert_eq!(answer.text, "Oops.");
    let json = serde_json::to_value(&service.requests()[1]).expect("serializes");
    let result = json["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"][0].clone())
        .expect("a tool result");
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result["content"].to_string().contains("/a"), "{result}");
}

#[test]
fn a_model_error_is_a_typed_prompt_error_and_the_input_is_kept() {
    let service = ScriptedService::new([Reply::api_error(
        500,
        threadline::wire::api_error::ApiErrorType::Api,
        "boom",
    )]);
    let agent = agent(&service);
    match rt().block_on(agent.prompt("hello")) {
        Err(PromptError::Model { status, .. }) => assert_eq!(status, Some(500)),
        other => panic!("not a model error: {other:?}"),
    }
    let state = agent.state();
    assert!(
        matches!(&state.messages[0], Message::User(_)),
        "{:?}",
        state.messages
    );
}

#[test]
fn dropping_a_run_early_keeps_everything_it_appended() {
    let rt = rt();
    let mut replies = Vec::from(add_then_answer(1, json!({"a": 1, "b": 1}), "Two."));
    replies.extend(add_then_answer(2, json!({"a": 2, "b": 2}), "Four."));
    let service = ScriptedService::new(replies);
    let mut agent = agent(&service);
    let kept = rt.block_on(async {
        let mut run = agent.run("1 + 1?");
        let mut seen = Vec::new();
        // Stop as soon as the tool call is written (before its result).
        while let Some(event) = run.next().await {
            if let Event::Message(message) = event {
                let is_call = matches!(&message, Message::Assistant(a)
                    if a.content.iter().any(|b| matches!(b, ContentBlock::ToolUse(_))));
                seen.push(message);
                if is_call {
                    break;
                }
            }
        }
        seen
        // `run` is dropped here, mid-run.
    });
    assert!(kept.len() >= 2, "{kept:?}");
    assert_eq!(
        agent.state().messages,
        kept,
        "the state holds what the run yielded"
    );
    // The session goes on: the next run is not refused and sends the kept history (the
    // dangling call answered by normalization).
    let answer = rt
        .block_on(agent.prompt("2 + 2?"))
        .expect("the next run starts");
    assert_eq!(answer.text, "Four.");
    let state = agent.state();
    assert_eq!(&state.messages[..kept.len()], &kept[..]);
    let last_request = serde_json::to_value(service.requests().last().expect("requests"))
        .expect("serializes")
        .to_string();
    assert!(
        last_request.contains("1 + 1?") && last_request.contains("toolu_1"),
        "{last_request}"
    );
    assert!(
        service.violations().is_empty(),
        "{:?}",
        service.violations()
    );
}

#[test]
fn the_state_shows_a_run_s_messages_as_they_pass() {
    let rt = rt();
    let service = ScriptedService::new(add_then_answer(1, json!({"a": 1, "b": 2}), "Three."));
    let mut agent = agent(&service);
    let before = agent.state().messages.len();
    rt.block_on(async {
        let mut run = agent.run("1 + 2?");
        let mut yielded = 0;
        while let Some(event) = run.next().await {
            match event {
                Event::Message(_) => {
                    yielded += 1;
                    assert_eq!(agent.state().messages.len(), before + yielded);
                }
                Event::Finished(finished) => {
                    assert_eq!(agent.state().messages, finished.state.messages);
                }
                _ => {}
            }
        }
        assert!(yielded >= 4);
    });
}

#[test]
fn a_second_run_at_the_same_time_is_refused() {
    let rt = rt();
    let service = ScriptedService::new(add_then_answer(1, json!({"a": 1, "b": 2}), "Three."));
    let mut agent = agent(&service);
    let first = agent.try_run("first").expect("the first run starts");
    // While `first` lives, every other way in is refused, and the session is untouched.
    assert_eq!(agent.try_run("second").err(), Some(RunError::Busy));
    match rt.block_on(agent.prompt("third")) {
        Err(PromptError::Run(RunError::Busy)) => {}
        other => panic!("not refused: {other:?}"),
    }
    let refused: Vec<Event> = rt.block_on(agent.run("fourth").collect());
    assert!(
        matches!(&refused[0], Event::Warning(w) if w.contains("in progress")),
        "{refused:?}"
    );
    match refused.last() {
        Some(Event::Finished(finished)) => assert_eq!(finished.terminal, Terminal::Busy),
        other => panic!("not finished busy: {other:?}"),
    }
    assert!(agent.state().messages.is_empty());
    // The first run completes alone; afterwards a run may start again.
    let events: Vec<Event> = rt.block_on(first.collect());
    match events.last() {
        Some(Event::Finished(finished)) => assert_eq!(finished.terminal, Terminal::Completed),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        service.requests().len(),
        2,
        "only the first run called the model"
    );
    assert!(agent.try_run("again").is_ok());
    // A run dropped before it was ever polled lets go too.
    drop(agent.try_run("never polled"));
    assert!(agent.try_run("and again").is_ok());
}

#[test]
fn two_runs_on_two_tasks_one_is_refused() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let gate = Arc::new(tokio::sync::Notify::new());
    let service = ScriptedService::new([Reply::stream(
        Response::new("msg_1")
            .wait(&gate)
            .text("Done.")
            .stop(StopReason::EndTurn),
    )]);
    let agent = Arc::new(agent(&service));
    rt.block_on(async {
        let first = tokio::spawn(agent.prompt("slow"));
        // Give the first run time to start and block on the gate.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let second = tokio::spawn(agent.prompt("fast")).await.expect("joins");
        assert!(
            matches!(second, Err(PromptError::Run(RunError::Busy))),
            "{second:?}"
        );
        gate.notify_one();
        let first = first.await.expect("joins").expect("answers");
        assert_eq!(first.text, "Done.");
    });
}

#[test]
fn query_config_never_resets_the_setters_whatever_the_order() {
    let thinking = ThinkingConfig::Enabled(ThinkingEnabled::new(2048));
    let base = QueryConfig::new("claude-haiku-4-5", 5).with_max_turns(3);
    let before = Agent::builder(ScriptedService::new([]))
        .model("claude-opus-4-5")
        .max_tokens(8000)
        .system_prompt("Be brief.")
        .thinking(thinking.clone())
        .effort(Effort::High)
        .query_config(base.clone())
        .build()
        .expect("agent");
    let after = Agent::builder(ScriptedService::new([]))
        .query_config(base)
        .effort(Effort::High)
        .thinking(thinking.clone())
        .system_prompt("Be brief.")
        .max_tokens(8000)
        .model("claude-opus-4-5")
        .build()
        .expect("agent");
    assert_eq!(before.config(), after.config());
    let config = before.config();
    assert_eq!(config.model, "claude-opus-4-5");
    assert_eq!(config.max_tokens, 8000);
    assert_eq!(
        config.max_turns,
        Some(3),
        "what no setter set is query_config's"
    );
    assert_eq!(config.thinking, Some(thinking));
    assert_eq!(
        config.output_config.as_ref().and_then(|o| o.effort.clone()),
        Some(Effort::High)
    );
}

#[test]
fn thinking_and_effort_reach_every_request() {
    let service = ScriptedService::new([Reply::stream(
        Response::new("msg_1").text("Hi.").stop(StopReason::EndTurn),
    )]);
    let agent = Agent::builder(service.clone())
        .model("claude-opus-4-5")
        .max_tokens(4096)
        .thinking(ThinkingConfig::Enabled(ThinkingEnabled::new(1024)))
        .effort(Effort::Low)
        .today("2026-03-08")
        .build()
        .expect("agent");
    rt().block_on(agent.prompt("hi")).expect("an answer");
    let request = serde_json::to_value(&service.requests()[0]).expect("serializes");
    assert_eq!(
        request["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(request["output_config"], json!({"effort": "low"}));
    assert!(
        service.violations().is_empty(),
        "{:?}",
        service.violations()
    );
}

/// A session on `store`: a prompt, then a fresh agent resumed from the store continues it.
async fn persists_and_resumes(name: &str, store: Arc<dyn SessionStore>) {
    let key = SessionKey::new("-home-me-project", format!("session-{name}")).expect("key");
    let first = ScriptedService::new(add_then_answer(1, json!({"a": 20, "b": 22}), "42."));
    let agent = Agent::builder(first.clone())
        .tool(add_tool())
        .today("2026-03-08")
        .shared_store(Arc::clone(&store), key.clone())
        .build()
        .expect("agent");
    agent.prompt("20 + 22?").await.expect("an answer");
    let stored = load_session(store.as_ref(), &key).await.expect("loads");
    assert_eq!(
        stored,
        agent.state().messages,
        "{name}: every message stored, in order"
    );

    let second = ScriptedService::new(add_then_answer(2, json!({"a": 1, "b": 1}), "2."));
    let resumed = Agent::builder(second.clone())
        .tool(add_tool())
        .today("2026-03-08")
        .shared_store(Arc::clone(&store), key.clone())
        .resume()
        .await
        .expect("resumes");
    assert_eq!(
        resumed.state().messages,
        stored,
        "{name}: resumed from the store"
    );
    let answer = resumed.prompt("1 + 1?").await.expect("an answer");
    assert_eq!(answer.text, "2.");
    let request = serde_json::to_value(&second.requests()[0])
        .expect("serializes")
        .to_string();
    assert!(
        request.contains("20 + 22?") && request.contains("42."),
        "{name}: {request}"
    );
    let all = load_session(store.as_ref(), &key).await.expect("loads");
    assert_eq!(
        all,
        resumed.state().messages,
        "{name}: both runs, nothing twice"
    );
    assert_eq!(all.len(), stored.len() + answer.messages.len());
    assert!(first.violations().is_empty() && second.violations().is_empty());
}

#[test]
fn an_agent_persists_to_a_memory_store() {
    rt().block_on(persists_and_resumes("memory", Arc::new(MemoryStore::new())));
}

#[test]
fn an_agent_persists_to_a_jsonl_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    rt().block_on(persists_and_resumes(
        "jsonl",
        Arc::new(JsonlStore::new(dir.path())),
    ));
}

#[test]
fn an_agent_persists_to_a_sqlite_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join("sessions.db")).expect("sqlite");
    rt().block_on(persists_and_resumes("sqlite", Arc::new(store)));
}

/// `RestateStore` against the real pinned server (`cargo xtask restate-server`): the store
/// objects served in process, registered, and the agent's session in Restate keyed state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_persists_to_a_restate_store() {
    use restate_sdk::prelude::{Endpoint, HttpServer};
    use threadline_restate::{Ingress, RestateStore, bind_store};
    use threadline_testkit::restate::RestateServer;

    let server = match RestateServer::start().await {
        Ok(server) => server,
        Err(e) => panic!("the pinned Restate server (cargo xtask restate-server): {e}"),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let endpoint = bind_store(Endpoint::builder()).build();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        HttpServer::new(endpoint)
            .serve_with_cancel(listener, async move {
                let _ = stopped.await;
            })
            .await;
    });
    server.register_deployment(&url).await.expect("register");
    let store = RestateStore::new(Ingress::new(&server.ingress_url()).expect("ingress"));
    persists_and_resumes("restate", Arc::new(store)).await;
    let _ = stop.send(());
    let _ = serving.await;
}

/// The input of the `log` tool.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "threadline::query::schemars")]
struct LogArgs {
    /// Which log.
    name: String,
}

/// A tool whose result (60,000 characters) is over the default budget (50,000).
fn log_tool() -> impl threadline::query::Tool {
    typed_tool("log", "Reads a log.", |args: LogArgs, _ctx| async move {
        format!("{}\n{}", args.name, "0123456789".repeat(6_000))
    })
}

/// The model reads log `name`, then answers.
fn log_then_answer(n: u32, name: &str) -> [Reply; 2] {
    [
        Reply::stream(
            Response::new(&format!("msg_{n}a"))
                .tool_use(&format!("toolu_{n}"), "log", json!({ "name": name }))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new(&format!("msg_{n}b"))
                .text("Read.")
                .stop(StopReason::EndTurn),
        ),
    ]
}

/// The tool-result budget replaces the large result by a preview in place, after the
/// result was stored: the preview is stored too, and a session resumed from the store sends
/// the preview the live session sent, not the full result (which would be another prefix,
/// a cache miss and 60,000 characters the budget had saved).
#[test]
fn a_result_the_budget_replaced_is_resumed_as_it_was_sent() {
    rt().block_on(async {
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        let key = SessionKey::new("-home-me-project", "session-budget").expect("key");
        let build = |service: &ScriptedService| {
            Agent::builder(service.clone())
                .tool(log_tool())
                .today("2026-03-08")
                .shared_store(Arc::clone(&store), key.clone())
        };
        let live = ScriptedService::new(log_then_answer(1, "build"));
        let agent = build(&live).build().expect("agent");
        let answer = agent.prompt("Read the build log").await.expect("an answer");
        let sent = tool_result_text(&live.requests()[1]);
        assert_eq!(sent.len(), 1);
        assert!(
            sent[0].contains("<persisted-output>") && sent[0].len() < 10_000,
            "the live request carries the preview: {}",
            sent[0].len()
        );
        // The answer's messages are the run's as the loop holds them.
        assert_eq!(answer.messages, agent.state().messages);

        let stored = load_session(store.as_ref(), &key).await.expect("loads");
        assert_eq!(
            stored,
            agent.state().messages,
            "the preview is what is stored"
        );

        let next = ScriptedService::new([Reply::stream(
            Response::new("msg_2")
                .text("Done.")
                .stop(StopReason::EndTurn),
        )]);
        let resumed = build(&next).resume().await.expect("resumes");
        assert_eq!(resumed.state().messages, stored);
        resumed.prompt("Thanks").await.expect("an answer");
        assert_eq!(
            tool_result_text(&next.requests()[0]),
            sent,
            "the resumed session sends what the live one sent"
        );
        assert!(live.violations().is_empty() && next.violations().is_empty());
    });
}

/// Microcompact clears old results in place when the cache has expired (an idle gap): the
/// loop records exactly the messages it cleared again, the store holds them cleared, and a
/// session resumed from the store is the one the live agent holds.
#[test]
fn results_microcompact_cleared_are_stored_cleared() {
    use std::time::{Duration, SystemTime};
    use threadline::compact::{Compaction, MicrocompactOptions};
    use threadline::message::determinism::Source;

    rt().block_on(async {
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        let key = SessionKey::new("-home-me-project", "session-idle").expect("key");
        let mut replies = Vec::new();
        for n in 1..=3 {
            replies.extend(log_then_answer(n, &format!("day-{n}")));
        }
        replies.push(Reply::stream(
            Response::new("msg_late")
                .text("Welcome back.")
                .stop(StopReason::EndTurn),
        ));
        let service = ScriptedService::new(replies);
        let microcompact = MicrocompactOptions {
            keep_recent: 1,
            tools: ["log".to_owned()].into(),
            ..MicrocompactOptions::default()
        };
        let mut compaction = Compaction::default();
        compaction.microcompact = Some(microcompact);
        let mut agent = Agent::builder(service.clone())
            .tool(log_tool())
            .today("2026-03-08")
            .compaction(compaction)
            .shared_store(Arc::clone(&store), key.clone())
            .build()
            .expect("agent");
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        for n in 1..=3 {
            let at = start + Duration::from_secs(n);
            let prompt = format!("Read log {n}");
            Source::new(format!("turn-{n}"), at)
                .scope(agent.prompt(&prompt))
                .await
                .expect("an answer");
        }
        let before = agent.state().messages.clone();
        // Two hours later: the cache has expired, the older results are cleared.
        let later = start + Duration::from_secs(2 * 3600);
        let events: Vec<Event> = Source::new("turn-late", later)
            .scope(agent.run("Still there?").collect::<Vec<_>>())
            .await;
        let rewritten: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                Event::Rewritten { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        let after = agent.state().messages.clone();
        let changed: Vec<usize> = (0..before.len())
            .filter(|&i| before[i] != after[i])
            .collect();
        assert_eq!(changed.len(), 2, "two of the three results cleared");
        assert_eq!(
            rewritten, changed,
            "exactly the cleared messages recorded again"
        );
        let stored = load_session(store.as_ref(), &key).await.expect("loads");
        assert_eq!(stored, after);
        assert!(
            service.violations().is_empty(),
            "{:?}",
            service.violations()
        );
    });
}

#[test]
fn resume_without_a_store_is_a_typed_error() {
    let result = rt().block_on(Agent::builder(ScriptedService::new([])).resume());
    assert!(
        matches!(result, Err(threadline::AgentError::NoStore)),
        "{result:?}"
    );
}

/// Runs `prompt` on a fresh `agent`, drops the run after `stop_after` events, and returns
/// what it yielded: its messages, each `Rewritten` applied where it says.
async fn dropped_after(
    agent: &mut Agent<ScriptedService>,
    prompt: &str,
    stop_after: usize,
) -> Vec<Message> {
    let mut run = agent.run(prompt);
    let mut yielded: Vec<Message> = Vec::new();
    for _ in 0..stop_after {
        match run.next().await {
            Some(Event::Message(message)) => yielded.push(message),
            Some(Event::Rewritten { index, message }) => yielded[index] = message,
            Some(_) => {}
            None => break,
        }
    }
    yielded
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Wherever a run is dropped (after any number of its events), the agent's state holds
    /// exactly the history before it plus every message it yielded, in order; the next run
    /// starts (not busy), continues from that history, and every request stays valid.
    #[test]
    fn a_run_dropped_anywhere_keeps_exactly_what_it_yielded(stop_after in 0usize..40) {
        let rt = rt();
        let mut replies = Vec::from(add_then_answer(1, json!({"a": 1, "b": 1}), "Two."));
        replies.extend(add_then_answer(2, json!({"a": 2, "b": 2}), "Four."));
        let service = ScriptedService::new(replies);
        let mut agent = agent(&service);
        let yielded = rt.block_on(dropped_after(&mut agent, "1 + 1?", stop_after));
        proptest::prop_assert_eq!(&agent.state().messages, &yielded);
        let next = rt.block_on(agent.prompt("2 + 2?"));
        proptest::prop_assert!(next.is_ok(), "{next:?}");
        let state = agent.state();
        proptest::prop_assert_eq!(&state.messages[..yielded.len()], &yielded[..]);
        proptest::prop_assert!(service.violations().is_empty(), "{:?}", service.violations());
    }

    /// The same with a result the budget replaces in place: the agent's state is what was
    /// yielded with each `Rewritten` applied, and no request — of the dropped run or of the
    /// next — ever carries the full result.
    #[test]
    fn a_run_dropped_anywhere_keeps_what_it_yielded_as_rewritten(stop_after in 0usize..40) {
        let rt = rt();
        let mut replies = Vec::from(log_then_answer(1, "build"));
        replies.extend(log_then_answer(2, "test"));
        let service = ScriptedService::new(replies);
        let mut agent = Agent::builder(service.clone())
            .tool(log_tool())
            .today("2026-03-08")
            .build()
            .expect("agent");
        let yielded = rt.block_on(dropped_after(&mut agent, "Read the build log", stop_after));
        proptest::prop_assert_eq!(&agent.state().messages, &yielded);
        let next = rt.block_on(agent.prompt("Now the test log"));
        proptest::prop_assert!(next.is_ok(), "{next:?}");
        for request in service.requests() {
            for result in tool_result_text(&request) {
                proptest::prop_assert!(result.len() < 10_000, "a full result was sent");
            }
        }
        proptest::prop_assert!(service.violations().is_empty(), "{:?}", service.violations());
    }
}
