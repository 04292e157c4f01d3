//! Server-side compaction (`compact_20260112`) over loopback HTTP: the mock compacts when its
//! count of a request's input (from the last compaction block on) reaches the trigger.
//!
//! | What                                              | Test                                   |
//! |---------------------------------------------------|----------------------------------------|
//! | the trigger crossed twice, then `end_turn`        | `the_trigger_is_crossed_twice_and_the_session_finishes` |
//! | `Transition::ServerCompactionPause`               | `a_paused_compaction_continues_the_turn` |
//! | a failed summary (`content: null`) sent back as is | `a_failed_compaction_block_goes_back_with_its_null_content` |

use super::*;
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_wire::{IterationKind, Usage};

/// The model: one whose row supports server-side compaction.
const COMPACTING_MODEL: &str = "claude-sonnet-4-6";

/// A tool answering `{"bytes": N}` with N bytes of text (sentences, so an extractive summary
/// has something to take).
struct Dump;

impl Tool for Dump {
    fn name(&self) -> &str {
        "dump"
    }
    fn description(&self) -> &str {
        "Dumps a large file."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> ToolStream {
        let bytes = input["bytes"].as_u64().unwrap_or(0) as usize;
        tool_result(async move {
            let sentence = "The log says all is well. ";
            let mut text = sentence.repeat(bytes / sentence.len() + 1);
            text.truncate(bytes);
            ToolOutput::text(text)
        })
    }
}

fn dump(id: &str, bytes: u64) -> Block {
    tool_use(id, "dump", json!({"bytes": bytes}))
}

/// The `context_management` of every request: compact at 50,000 input tokens.
fn compacting(pause: bool) -> QueryConfig {
    let management = serde_json::from_value(json!({"edits": [{"type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": 50_000}, "pause_after_compaction": pause}]}))
    .expect("an edit");
    QueryConfig::new(COMPACTING_MODEL, 1024)
        .with_system("You are a loopback test.")
        .with_context_management(management)
}

/// The mock's count of a recorded request's input: a token per four bytes of the JSON of
/// its system, tools and messages (the body as the loop sent it).
fn mock_count(body: &Value) -> u64 {
    let len = |v: &Value| serde_json::to_vec(v).map_or(0, |b| b.len());
    let bytes = len(&body["system"]) + len(&body["tools"]) + len(&body["messages"]);
    (bytes as u64).div_ceil(4).max(1)
}

/// Each response's usage, in order: its last fragment's (the final one; earlier fragments
/// carry `message_start`'s).
fn usages(out: &Outcome) -> Vec<Usage> {
    let mut by_response: Vec<(String, Usage)> = Vec::new();
    for message in &out.state.messages {
        let Message::Assistant(a) = message else {
            continue;
        };
        let (Some(id), Some(usage)) = (a.api_message_id.clone(), a.usage.as_deref()) else {
            continue;
        };
        match by_response.iter_mut().find(|(seen, _)| *seen == id) {
            Some(slot) => slot.1 = usage.clone(),
            None => by_response.push((id, usage.clone())),
        }
    }
    by_response.into_iter().map(|(_, usage)| usage).collect()
}

fn without_markers(mut value: Value) -> Value {
    strip_markers(&mut value);
    value
}

/// The compaction blocks of the history, as JSON.
fn compaction_blocks(out: &Outcome) -> Vec<Value> {
    out.state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(&a.content),
            _ => None,
        })
        .flatten()
        .filter(|b| matches!(b, ContentBlock::Compaction(_)))
        .map(|b| serde_json::to_value(b).expect("serializes"))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn the_trigger_is_crossed_twice_and_the_session_finishes() {
    // Each result is ~32,500 tokens: two of them cross the 50,000 trigger.
    let big = 130_000;
    let mock = mock([
        Step::message(vec![dump("toolu_1", big)]),
        Step::message(vec![dump("toolu_2", big)]),
        Step::message(vec![dump("toolu_3", big)]).with_compaction_summary("First summary."),
        Step::message(vec![dump("toolu_4", big)]),
        Step::message(vec![dump("toolu_5", big)]),
        Step::text("Done."),
    ])
    .await;
    let tools = ToolSet::new().with(Dump);
    let out = run(query(client(&mock, 0), compacting(false), &tools)).await;
    assert_eq!(out.path(), [Transition::NextTurn; 5]);
    assert_eq!(out.terminal, Terminal::Completed);
    // Every request passed `validate` and carried `compact-2026-01-12` (the client derived it
    // from the body); the prefix changed exactly after each compaction.
    check(&mock, &out, &tools, &[Some(200); 6], &[3, 5]);
    let sent: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body.expect("a body"))
        .collect();
    assert!(
        sent.iter()
            .all(|b| b["context_management"]["edits"][0]["type"] == "compact_20260112")
    );
    assert!(
        mock.requests()
            .iter()
            .all(|r| r.headers.get("anthropic-beta").map(String::as_str)
                == Some("compact-2026-01-12"))
    );

    // Two compaction blocks were kept: the scripted summary, then an extractive one (its
    // first sentence is the first summary: it summarises from the first block on).
    let blocks = compaction_blocks(&out);
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        blocks[0],
        json!({"type": "compaction", "content": "First summary."})
    );
    let second = blocks[1]["content"].as_str().expect("a summary");
    assert!(second.starts_with("<summary>First summary."), "{second}");

    // The request after the first compaction starts at its block, byte for byte; and so does
    // the request of the second compaction (request 4, whose input crossed the trigger again).
    for i in [3, 4] {
        let first = &sent[i]["messages"][0];
        assert_eq!(first["role"], "assistant", "request {i}");
        assert_eq!(
            without_markers(first["content"][0].clone()),
            blocks[0],
            "request {i}"
        );
    }
    let last = &sent[5]["messages"];
    assert_eq!(without_markers(last[0]["content"][0].clone()), blocks[1]);
    assert_eq!(
        last.as_array().map(Vec::len),
        Some(2),
        "the second block onward only"
    );

    // Usage: the compacting responses report [compaction, message] iterations; the
    // compaction pass's input is the mock's count of the request from its last compaction
    // block on, over the trigger; the top level is the message pass.
    let usages = usages(&out);
    assert_eq!(usages.len(), 6);
    for (response, request) in [(2, 2), (4, 4)] {
        let usage = &usages[response];
        let its = usage.iterations().expect("iterations");
        assert_eq!(its.len(), 2);
        assert_eq!(its[0].kind, Some(IterationKind::Compaction));
        assert_eq!(its[1].kind, Some(IterationKind::Message));
        assert_eq!(its[0].input_tokens, Some(mock_count(&sent[request])));
        assert!(its[0].input_tokens >= Some(50_000));
        assert_eq!(usage.input_tokens, its[1].input_tokens);
        assert_eq!(usage.output_tokens, its[1].output_tokens);
        assert_eq!(usage.compaction_iterations().count(), 1);
        assert!(
            usage.context_tokens() < 1_000,
            "the summary onward: {usage:?}"
        );
    }
    assert!(
        usages
            .iter()
            .enumerate()
            .all(|(i, u)| (i == 2 || i == 4) == u.iterations().is_some())
    );
    // Billed totals: every iteration the mock sent, summed from the raw JSON.
    let field = |v: &Value, name: &str| v[name].as_u64().unwrap_or(0);
    let (mut input, mut output) = (0u64, 0u64);
    for usage in &usages {
        let raw = serde_json::to_value(usage).expect("serializes");
        match raw["iterations"].as_array() {
            Some(its) => {
                for it in its {
                    input += field(it, "input_tokens");
                    output += field(it, "output_tokens");
                }
            }
            None => {
                input += field(&raw, "input_tokens");
                output += field(&raw, "output_tokens");
            }
        }
    }
    let billed_input: u64 = usages.iter().filter_map(|u| u.billed().input_tokens).sum();
    let billed_output: u64 = usages.iter().filter_map(|u| u.billed().output_tokens).sum();
    assert_eq!((billed_input, billed_output), (input, output));
    let top_level: u64 = usages.iter().filter_map(|u| u.input_tokens).sum();
    assert!(
        billed_input >= top_level + 100_000,
        "compaction passes are billed"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_paused_compaction_continues_the_turn() {
    let mock = mock([
        Step::message(vec![dump("toolu_1", 220_000)]),
        // Over the trigger: the mock answers the compaction block alone, `stop_reason:
        // compaction`; this step's text is not sent.
        Step::text("Never sent.").with_compaction_summary("Paused summary."),
        Step::text("Done."),
    ])
    .await;
    let tools = ToolSet::new().with(Dump);
    let resets = Arc::new(AtomicUsize::new(0));
    let markers = Markers {
        planner: threadline_cache::Planner::default(),
        resets: Arc::clone(&resets),
    };
    let query = Query::new(client(&mock, 0), compacting(true))
        .with_tools(tools.clone())
        .with_cache_planner(markers);
    let out = run(query).await;
    assert_eq!(
        out.path(),
        [Transition::NextTurn, Transition::ServerCompactionPause]
    );
    assert_eq!(out.terminal, Terminal::Completed);
    check(&mock, &out, &tools, &[Some(200); 3], &[2]);
    // The cache planner was reset when the block arrived.
    assert!(resets.load(Ordering::SeqCst) >= 1);
    // The paused turn went back as it came, alone: the request is the block, last.
    let sent: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body.expect("a body"))
        .collect();
    let continued = sent[2]["messages"].as_array().expect("messages");
    assert_eq!(continued.len(), 1);
    assert_eq!(continued[0]["role"], "assistant");
    assert_eq!(
        without_markers(continued[0]["content"].clone()),
        json!([{"type": "compaction", "content": "Paused summary."}])
    );
    let history_text: Vec<String> = out
        .state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a.content.iter().filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(history_text, ["Done."]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_compaction_block_goes_back_with_its_null_content() {
    // A summary that failed (`content: null`) with its encrypted state: kept and sent back as
    // is, `null` included, and the next request starts at it.
    let failed = Block::Compaction {
        content: None,
        encrypted_content: Some("RW5jcnlwdGVk".to_owned()),
    };
    let mock = mock([
        Step::message(vec![failed, dump("toolu_1", 10)]),
        Step::text("Done."),
    ])
    .await;
    let tools = ToolSet::new().with(Dump);
    let out = run(query(client(&mock, 0), compacting(false), &tools)).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    check(&mock, &out, &tools, &[Some(200); 2], &[1]);
    let sent: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body.expect("a body"))
        .collect();
    let first = &sent[1]["messages"][0];
    assert_eq!(first["role"], "assistant");
    let block = without_markers(first["content"][0].clone());
    assert_eq!(
        block,
        json!({"type": "compaction", "content": null, "encrypted_content": "RW5jcnlwdGVk"})
    );
    assert!(block.as_object().is_some_and(|b| b.contains_key("content")));
    assert_eq!(compaction_blocks(&out), [block]);
}
