//! The cost of each compaction mode on one long session, measured by the prompt-cache
//! simulator: prints one JSON object whose `ratios` hold, for each model and mode, the
//! session's dollar cost ÷ the cheapest mode's on that model (`compact_cost_<model>_<mode>_vs_best`,
//! lower is better, 1 for the best) and the share of its input tokens read from the cache
//! (`compact_cache_read_<model>_<mode>`, higher is better); `runs` gives every figure.
//!
//! The session: the facade's agent (the one `threadline run` builds its loop from) against
//! the mock on loopback, whose usage is the cache simulator's; every answer thinks, says a
//! line and reads an 8 KB file, for a fixed number of tool turns; the context is compacted
//! at a fixed threshold. Every request of every kind is priced from the usage the mock
//! answered (its request log), compaction passes included (`Model::cost` bills
//! `usage.iterations`). Models: `claude-opus-5-5` (binds thinking to its prefix: local or on
//! demand) and `claude-opus-4-8` (local, server-side `compact_20260112`, or on demand).
//! Deterministic: no timing.
//!
//! `cargo run --release -p threadline-cli --example compaction_bench`
// A harness prints its findings: the CLI's escaping rule (`clippy.toml`) is for the binary.
#![allow(clippy::disallowed_macros)]

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline::attach::Workspace;
use threadline::client::{ApiKey, Auth, Client, ClientConfig};
use threadline::message::{Message, SystemKind};
use threadline::mock::{Block, MockConfig, MockServer, Scenario, Step};
use threadline::tools::ReadFile;
use threadline::wire::model::ModelTable;
use threadline::wire::{ContentBlock, Usage};
use threadline::{Agent, Compaction, CompactionMode, Event, ServerCompaction, Terminal};

/// Tool turns per session.
const TURNS: u32 = 120;
/// The autocompact threshold (estimated tokens), and the server-side trigger.
const AUTOCOMPACT_AT: u64 = 60_000;
const SERVER_TRIGGER: u64 = 50_000;

/// The figures of one session.
struct Run {
    model: &'static str,
    mode: &'static str,
    requests: usize,
    cost: f64,
    cache_read_share: f64,
    compactions: usize,
}

fn step() -> Step {
    Step::message(vec![
        Block::Thinking {
            thinking: "The next reading is due; data.txt again.".to_owned(),
            signature: "scenario".to_owned(),
        },
        Block::Text {
            text: "Reading data.txt.".to_owned(),
        },
        Block::ToolUse {
            id: None,
            name: "Read".to_owned(),
            input: json!({"path": "data.txt"}),
        },
    ])
    .with_compaction_summary("The session read data.txt again and again; nothing else happened.")
}

async fn session(model: &'static str, mode: &'static str) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let data: String = (0..160)
        .map(|i| format!("{i:04} reading, steady, within range, no alarms raised\n"))
        .collect();
    std::fs::write(dir.path().join("data.txt"), data).expect("data");
    let log = dir.path().join("requests.jsonl");
    let config = MockConfig::new(Scenario::new([step()]).repeating_last()).with_record_log(&log);
    let mock = MockServer::start_with(config).await.expect("mock");
    let auth = Auth::ApiKey(ApiKey::new("sk-ant-bench").expect("key"));
    let client = Client::new(ClientConfig::new(mock.base_url(), auth)).expect("client");
    let compaction = Compaction::default().autocompact_at(AUTOCOMPACT_AT);
    let compaction = match mode {
        "local" => compaction,
        "server" => compaction.with_server(
            CompactionMode::Server,
            ServerCompaction::default().with_trigger(SERVER_TRIGGER),
        ),
        "on_demand" => compaction.with_mode(CompactionMode::OnDemand),
        other => panic!("unknown mode {other}"),
    };
    let workspace = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let mut agent = Agent::builder(client)
        .model(model)
        .system_prompt("You watch a data file.")
        .workspace(dir.path())
        .tool(ReadFile::new(workspace))
        .compaction(compaction)
        .max_turns(TURNS)
        .today("2026-12-01")
        .build()
        .expect("agent");
    let events: Vec<Event> = agent.run("Keep reading data.txt.").collect().await;
    // A compaction is a boundary (local, on demand) or a server-side block in an answer.
    let compactions = events
        .iter()
        .filter(|e| match e {
            Event::Message(Message::System(s)) => {
                matches!(s.kind, SystemKind::CompactBoundary { .. })
            }
            Event::Message(Message::Assistant(a)) => {
                mode == "server"
                    && a.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Compaction(_)))
            }
            _ => false,
        })
        .count();
    match events.last() {
        Some(Event::Finished(f)) => assert!(
            matches!(f.terminal, Terminal::MaxTurns { .. }),
            "{model} {mode}: {:?}",
            f.terminal
        ),
        other => panic!("{model} {mode}: no end: {other:?}"),
    }
    let row = ModelTable::builtin().resolve(model).model().clone();
    let (mut cost, mut read, mut input, mut requests) = (0.0, 0u64, 0u64, 0usize);
    let text = std::fs::read_to_string(&log).expect("the request log");
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line).expect("a log line");
        assert_eq!(entry["status"], 200, "{model} {mode}: {line}");
        let Some(usage) = entry.get("usage").filter(|u| !u.is_null()) else {
            continue;
        };
        let usage: Usage = serde_json::from_value(usage.clone()).expect("usage");
        requests += 1;
        cost += row.cost(&usage);
        let billed = usage.billed();
        let r = billed.cache_read_input_tokens.unwrap_or(0);
        read += r;
        input +=
            billed.input_tokens.unwrap_or(0) + billed.cache_creation_input_tokens.unwrap_or(0) + r;
    }
    Run {
        model,
        mode,
        requests,
        cost,
        cache_read_share: if input == 0 {
            0.0
        } else {
            read as f64 / input as f64
        },
        compactions,
    }
}

fn short(model: &str) -> String {
    model.trim_start_matches("claude-").replace('-', "")
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let plan: [(&str, &[&str]); 2] = [
        ("claude-opus-5-5", &["local", "on_demand"]),
        ("claude-opus-4-8", &["local", "server", "on_demand"]),
    ];
    let mut runs = Vec::new();
    for (model, modes) in plan {
        for mode in modes {
            runs.push(runtime.block_on(session(model, mode)));
        }
    }
    let mut ratios = Vec::new();
    for (model, _) in plan {
        let of_model: Vec<&Run> = runs.iter().filter(|r| r.model == model).collect();
        let best = of_model
            .iter()
            .map(|r| r.cost)
            .fold(f64::INFINITY, f64::min);
        for run in of_model {
            ratios.push(json!({
                "name": format!("compact_cost_{}_{}_vs_best", short(model), run.mode),
                "value": run.cost / best,
                "what": format!("{model}, {TURNS} tool turns of an 8 KB read, compaction {}: the session's cost ÷ the cheapest mode's (simulated cache)", run.mode),
                "better": "lower",
            }));
            ratios.push(json!({
                "name": format!("compact_cache_read_{}_{}", short(model), run.mode),
                "value": run.cache_read_share,
                "what": format!("{model}, compaction {}: share of input tokens read from the cache (simulated)", run.mode),
                "better": "higher",
            }));
        }
    }
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({"model": r.model, "mode": r.mode, "requests": r.requests, "cost_usd": r.cost,
                "cache_read_share": r.cache_read_share, "compactions": r.compactions})
        })
        .collect();
    println!(
        "{}",
        json!({"format": "threadline-compaction-bench/1", "ratios": ratios, "runs": runs})
    );
}
