//! `threadline replay FIXTURE`: a recorded session (a canonical fixture, `threadline-fixture/1`)
//! driven through the query loop against the mock, which answers every request with the
//! recorded response, byte for byte, in order. Each recorded conversation (an exchange whose
//! request starts a new one) becomes a run of an agent with the recording's model, system
//! prompt and tools; the tools answer with the results the recording sent back. The mock
//! checks every request the loop sends as the API would.
//!
//! Exit 0 when every recorded exchange was used and every request was accepted; 1 when the
//! loop asked for more or fewer answers than were recorded, or a request was refused; 2 when
//! the fixture cannot be read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline::Compaction;
use threadline::client::Client;
use threadline::mock::{MockServer, Scenario, Step};
use threadline::query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline::wire::Content;

use crate::agent_setup::{client, quick_retries};
use crate::error::CliError;
use crate::meter::{Meter, Metered, Totals};
use crate::output::print_line;
use crate::progress::{Progress, Style};
use crate::terminal_text::terminal_safe;

/// The key sent to the mock.
const REPLAY_KEY: &str = "sk-ant-replay-offline";

/// One recorded `/v1/messages` exchange.
struct Exchange {
    request: Value,
    response: Value,
}

pub(crate) fn run(path: &Path, limit: crate::input::InputLimit) -> Result<(), CliError> {
    let exchanges = load(path, limit)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(REPLAY, e))?;
    runtime.block_on(replay(path, &exchanges))
}

/// The subcommand, as error lines name it.
const REPLAY: Option<&str> = Some("replay");

/// The `/v1/messages` exchanges of the fixture at `path`, read within `--max-input-bytes` as
/// every command's input is.
fn load(path: &Path, limit: crate::input::InputLimit) -> Result<Vec<Exchange>, CliError> {
    let bytes =
        crate::input::read_input(&path.display().to_string(), limit).map_err(|e| match e {
            crate::input::InputError::Read { source, .. } => CliError::Read {
                command: REPLAY,
                path: path.to_owned(),
                source,
            },
            other => CliError::from(other),
        })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        CliError::unusable(
            REPLAY,
            format!("{} is not JSON", path.display()),
            Some(e.into()),
        )
    })?;
    let Some(all) = value.get("exchanges").and_then(Value::as_array) else {
        return Err(CliError::unusable(
            REPLAY,
            format!(
                "{} is not a canonical fixture (no `exchanges`)",
                path.display()
            ),
            None,
        ));
    };
    let exchanges: Vec<Exchange> = all
        .iter()
        .filter(|e| {
            e.pointer("/request/endpoint").and_then(Value::as_str) == Some("/v1/messages")
                && e.pointer("/request/body/messages").is_some()
        })
        .map(|e| Exchange {
            request: e.pointer("/request/body").cloned().unwrap_or(Value::Null),
            response: e.get("response").cloned().unwrap_or(Value::Null),
        })
        .collect();
    if exchanges.is_empty() {
        return Err(CliError::unusable(
            REPLAY,
            format!("{} records no /v1/messages exchange", path.display()),
            None,
        ));
    }
    Ok(exchanges)
}

/// The replay: the mock playing the recorded responses, the recorded conversations driven
/// through the loop, then the summary and whether every exchange was used as recorded.
async fn replay(path: &Path, exchanges: &[Exchange]) -> Result<(), CliError> {
    let mock = MockServer::start(scenario(exchanges)?)
        .await
        .map_err(|e| CliError::start(REPLAY, "cannot start the mock server on loopback", e))?;
    let client = client(&mock.base_url(), REPLAY_KEY, Some(quick_retries()), None)
        .map_err(|line| CliError::start_line(REPLAY, line))?;
    let meter = Meter::default();
    print_line(&format!(
        "threadline replay: {} ({} recorded exchanges) through the loop against the mock at {}",
        path.display(),
        exchanges.len(),
        mock.base_url()
    ));
    let driven = drive_runs(exchanges, &mock, &client, &meter).await?;
    let answered = Answered::of(&mock, exchanges);
    print_summary(&driven, &answered, exchanges.len(), &meter.totals());
    answered.check(exchanges.len())
}

/// The mock's scenario: each recorded response, in order, byte for byte.
fn scenario(exchanges: &[Exchange]) -> Result<Scenario, CliError> {
    let mut steps = Vec::with_capacity(exchanges.len());
    for (i, exchange) in exchanges.iter().enumerate() {
        let step = serde_json::from_value::<Step>(
            json!({"kind": "fixture", "response": exchange.response}),
        )
        .map_err(|error| {
            CliError::unusable(
                REPLAY,
                format!("exchange {i}: the response cannot be replayed"),
                Some(error.into()),
            )
        })?;
        steps.push(step);
    }
    Ok(Scenario::new(steps))
}

/// What the runs through the loop showed.
struct Driven {
    progress: Progress,
    /// Agent runs started (one per recorded conversation).
    runs: usize,
    /// Compaction blocks the history kept.
    compaction_blocks: usize,
    /// Of those, the ones identical to a recorded block.
    identical: usize,
}

/// One agent run per recorded conversation, each from the exchange the mock answers next,
/// until every exchange is used or a run sends nothing.
async fn drive_runs(
    exchanges: &[Exchange],
    mock: &MockServer,
    client: &Client,
    meter: &Meter,
) -> Result<Driven, CliError> {
    let results = Arc::new(recorded_results(exchanges));
    let recorded_blocks = recorded_compaction_blocks(exchanges);
    let mut driven = Driven {
        progress: Progress::new(Style::Timeline),
        runs: 0,
        compaction_blocks: 0,
        identical: 0,
    };
    while let Some(start) = exchanges.get(mock.request_count()) {
        let Some(prompt) = first_prompt(&start.request) else {
            print_line(&format!(
                "exchange {}: its request has no user text to start a run from; stopping",
                mock.request_count()
            ));
            break;
        };
        // No more tool-using turns than answers are left: the loop stops where the
        // recording did.
        let left = exchanges.len() - mock.request_count();
        let mut agent =
            agent_for(&start.request, client.clone(), meter, &results, left).map_err(|source| {
                CliError::Agent {
                    command: "replay",
                    source,
                }
            })?;
        driven.runs += 1;
        let model = start
            .request
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("?");
        // The model and the prompt are the recording's: escaped.
        print_line(&terminal_safe(
            &format!(
                "run {} from exchange {} ({model}): {}",
                driven.runs,
                mock.request_count(),
                crate::progress::first_line(&prompt, 80)
            ),
            false,
        ));
        let before = mock.request_count();
        let mut events = agent.run(prompt);
        while let Some(event) = events.next().await {
            for block in kept_compaction_blocks(&event) {
                driven.compaction_blocks += 1;
                driven.identical += usize::from(recorded_blocks.contains(&block));
            }
            driven.progress.on_event(&event);
        }
        driven.progress.finish_output();
        if mock.request_count() == before {
            break;
        }
    }
    Ok(driven)
}

/// How the mock answered the loop's requests, against the recording.
struct Answered {
    /// Requests the loop sent (each used one recorded exchange).
    used: usize,
    /// `request N answered STATUS` for each answered otherwise than recorded.
    refused: Vec<String>,
}

impl Answered {
    fn of(mock: &MockServer, exchanges: &[Exchange]) -> Answered {
        let recorded = mock.requests();
        let refused = recorded
            .iter()
            .enumerate()
            .filter(|(i, r)| {
                let expected = exchanges
                    .get(*i)
                    .and_then(|e| e.response.get("status"))
                    .and_then(Value::as_u64);
                r.status.map(u64::from) != expected.or(Some(200))
            })
            .map(|(i, r)| format!("request {} answered {:?}", i + 1, r.status))
            .collect();
        Answered {
            used: recorded.len(),
            refused,
        }
    }

    /// Every recorded exchange used, each answered as recorded (exit 0); else exit 1.
    fn check(&self, recorded: usize) -> Result<(), CliError> {
        if self.used != recorded {
            return Err(CliError::Unmet {
                command: "replay",
                message: format!(
                    "the loop used {} of {recorded} recorded exchanges",
                    self.used
                ),
            });
        }
        if !self.refused.is_empty() {
            return Err(CliError::Unmet {
                command: "replay",
                message: format!(
                    "the mock did not answer as recorded: {}",
                    self.refused.join(", ")
                ),
            });
        }
        Ok(())
    }
}

/// The summary after the runs: exchanges used, terminal, transitions, tokens, cost.
fn print_summary(driven: &Driven, answered: &Answered, recorded: usize, totals: &Totals) {
    let progress = &driven.progress;
    print_line("");
    print_line("summary");
    // Values quote the recording (the terminal reason carries a refusal's explanation).
    let line = |key: &str, value: String| {
        print_line(&format!("  {key:<17} {}", terminal_safe(&value, false)));
    };
    line("runs:", driven.runs.to_string());
    line(
        "exchanges used:",
        format!("{} of {recorded} recorded", answered.used),
    );
    line(
        "terminal:",
        progress
            .terminal
            .as_ref()
            .map_or_else(|| "none".to_owned(), ToString::to_string),
    );
    line("transitions:", progress.transition_names());
    line(
        "tool calls:",
        format!(
            "{} (answered with the recorded results)",
            progress.tool_calls
        ),
    );
    line(
        "tokens:",
        format!(
            "input {}, cache write {}, cache read {}, output {} (billed, as recorded)",
            totals.input_tokens,
            totals.cache_write_tokens,
            totals.cache_read_tokens,
            totals.output_tokens
        ),
    );
    if let Some(compaction) = crate::meter::compaction_line(totals) {
        line("compaction:", compaction);
    }
    if driven.compaction_blocks > 0 {
        line(
            "compaction blocks:",
            format!(
                "{} kept in the history, {} identical to the recording",
                driven.compaction_blocks, driven.identical
            ),
        );
    }
    line("cost:", format!("${:.4}", totals.cost));
}

/// The server-side `compaction` blocks `event` appends to the history, as JSON.
fn kept_compaction_blocks(event: &threadline::query::Event) -> Vec<Value> {
    match event {
        threadline::query::Event::Message(threadline::message::Message::Assistant(a)) => a
            .content
            .iter()
            .filter(|b| matches!(b, threadline::wire::ContentBlock::Compaction(_)))
            .filter_map(|b| serde_json::to_value(b).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// The `compaction` blocks of the recorded responses: a JSON body's as recorded; a stream's
/// assembled from its raw events (each `data:` line parsed as plain JSON: the block's start
/// and its one `compaction_delta`), not through the stream reader the client used, so the
/// comparison checks that reader too.
fn recorded_compaction_blocks(exchanges: &[Exchange]) -> Vec<Value> {
    let mut blocks = Vec::new();
    for exchange in exchanges {
        let content = match exchange.response.get("sse").and_then(Value::as_str) {
            Some(sse) => Some(streamed_compaction_blocks(sse)),
            None => exchange.response.pointer("/body/content").cloned(),
        };
        blocks.extend(
            content
                .as_ref()
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("compaction"))
                .cloned(),
        );
    }
    blocks
}

/// The `compaction` blocks of a recorded stream, from its raw `data:` lines: each block's
/// `content_block_start`, with the fields of the `compaction_delta`s at its index laid over.
fn streamed_compaction_blocks(sse: &str) -> Value {
    let mut open: std::collections::BTreeMap<u64, serde_json::Map<String, Value>> =
        std::collections::BTreeMap::new();
    let mut done = Vec::new();
    for line in sse.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(data.trim_start()) else {
            continue;
        };
        let index = event.get("index").and_then(Value::as_u64);
        match (event.get("type").and_then(Value::as_str), index) {
            (Some("content_block_start"), Some(i)) => {
                if let Some(block) = event.get("content_block").and_then(Value::as_object)
                    && block.get("type").and_then(Value::as_str) == Some("compaction")
                {
                    open.insert(i, block.clone());
                }
            }
            (Some("content_block_delta"), Some(i)) => {
                if let (Some(block), Some(delta)) = (
                    open.get_mut(&i),
                    event.get("delta").and_then(Value::as_object),
                ) {
                    for (key, value) in delta.iter().filter(|(k, _)| *k != "type") {
                        block.insert(key.clone(), value.clone());
                    }
                }
            }
            (Some("content_block_stop"), Some(i)) => {
                if let Some(block) = open.remove(&i) {
                    done.push(Value::Object(block));
                }
            }
            _ => {}
        }
    }
    Value::Array(done)
}

/// The text of the first user message of a recorded request.
fn first_prompt(request: &Value) -> Option<String> {
    let first = request.get("messages")?.as_array()?.first()?;
    if first.get("role")?.as_str()? != "user" {
        return None;
    }
    match first.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The recorded system prompt as text.
fn system_text(request: &Value) -> Option<String> {
    match request.get("system")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n\n"))
        }
        _ => None,
    }
}

/// An agent like the recording's: model, output limit, system prompt, custom tools.
fn agent_for(
    request: &Value,
    client: Client,
    meter: &Meter,
    results: &Arc<BTreeMap<String, ToolOutput>>,
    max_turns: usize,
) -> Result<threadline::Agent<Metered<Client>>, threadline::AgentError> {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(threadline::DEFAULT_MODEL);
    let max_tokens = request
        .get("max_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(threadline::DEFAULT_MAX_TOKENS);
    let mut builder = threadline::Agent::builder(Metered::new(client, meter.clone()))
        .model(model)
        .max_tokens(max_tokens)
        .escalated_max_tokens(max_tokens)
        .compaction(Compaction::off())
        .max_turns(u32::try_from(max_turns).unwrap_or(u32::MAX))
        .today("2026-01-01");
    if let Some(system) = system_text(request) {
        builder = builder.system_prompt(system);
    }
    // The recorded edits (server-side compaction, context editing) go with every request.
    if let Some(management) = request
        .get("context_management")
        .and_then(|m| serde_json::from_value(m.clone()).ok())
    {
        builder = builder.context_management(management);
    }
    for definition in request
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(schema)) = (
            definition.get("name").and_then(Value::as_str),
            definition.get("input_schema"),
        ) else {
            // Server tools (web search, code execution) run at the API, not here.
            continue;
        };
        builder = builder.tool(RecordedTool {
            name: name.to_owned(),
            description: definition
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            schema: schema.clone(),
            results: Arc::clone(results),
        });
    }
    builder.build()
}

/// Every tool result the recording sent, by tool use id.
fn recorded_results(exchanges: &[Exchange]) -> BTreeMap<String, ToolOutput> {
    let mut results = BTreeMap::new();
    for exchange in exchanges {
        let messages = exchange
            .request
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for block in messages
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
        {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
                continue;
            };
            let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
            let mut output = if is_error {
                ToolOutput::error("")
            } else {
                ToolOutput::text("")
            };
            output.content = block
                .get("content")
                .and_then(|c| serde_json::from_value::<Content>(c.clone()).ok())
                .unwrap_or_else(|| Content::Text(String::new()));
            results.insert(id.to_owned(), output);
        }
    }
    results
}

/// A tool of the recording: answers with the result the recording sent for the same id.
struct RecordedTool {
    name: String,
    description: String,
    schema: Value,
    results: Arc<BTreeMap<String, ToolOutput>>,
}

/// The result given to a tool use the recording never answered.
const NOT_RECORDED: &str = "[replay: the recording has no result for this tool use]";

impl Tool for RecordedTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        self.schema.clone()
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        // Recorded answers have no side effects.
        true
    }
    fn call(&self, _input: Value, ctx: ToolContext) -> ToolStream {
        let output = self
            .results
            .get(&ctx.tool_use_id)
            .cloned()
            .unwrap_or_else(|| ToolOutput::error(NOT_RECORDED));
        tool_result(async move { output })
    }
}
