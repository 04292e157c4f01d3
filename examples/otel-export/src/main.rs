//! Exports threadline's `tracing` spans through `tracing-opentelemetry` to the OpenTelemetry
//! stdout exporter: no collector, no network. The loop runs against a scripted model (a tool
//! call, then an answer), and every span it closes — `invoke_agent`, `chat claude-sonnet-5`,
//! `execute_tool clock` — is printed by the exporter at shutdown with its GenAI attributes
//! (`gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.tool.name`, …), the names of
//! `threadline_wire::telemetry`, exported unchanged.
//!
//! ```text
//! cargo run -p otel-export
//! ```
//!
//! To send the same spans to a collector, swap the stdout exporter for
//! `opentelemetry-otlp`'s; nothing on the threadline side changes.

use std::process::ExitCode;

use futures::StreamExt as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use threadline_message::Message;
use threadline_query::scripted::{Reply, Response, ScriptedService};
use threadline_query::{Event, Query, QueryConfig, State, Terminal};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_wire::StopReason;
use tracing_subscriber::layer::SubscriberExt as _;

/// The model the requests name (the exported `gen_ai.request.model`).
const MODEL: &str = "claude-sonnet-5";

/// A tool answering with a fixed time.
struct Clock;

impl Tool for Clock {
    fn name(&self) -> &str {
        "clock"
    }
    fn description(&self) -> &str {
        "The current time."
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    fn is_concurrency_safe(&self, _input: &serde_json::Value) -> bool {
        true
    }
    fn call(&self, _input: serde_json::Value, _ctx: ToolContext) -> ToolStream {
        tool_result(async { ToolOutput::text("12:00") })
    }
}

/// One run of the loop: the model calls the clock, then answers.
fn run_agent() -> Option<Terminal> {
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .tool_use("toolu_1", "clock", serde_json::json!({}))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new("msg_2")
                .text("It is noon.")
                .stop(StopReason::EndTurn),
        ),
    ]);
    let config = QueryConfig::new(MODEL, 1024).with_conversation_id("otel-example");
    let query = Query::new(service, config).with_tool(Clock);
    let run = query.run(
        State::default(),
        vec![Message::user_text("What time is it?")],
    );
    let events: Vec<Event> = futures::executor::block_on(run.collect());
    match events.into_iter().last() {
        Some(Event::Finished(finished)) => Some(finished.terminal),
        _ => None,
    }
}

fn main() -> ExitCode {
    // The batch processor exports from its own thread (the simple one blocks on a
    // `futures` executor inside the span's close, which cannot nest in the run's
    // `block_on`); `shutdown` flushes what is left.
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("threadline")));
    let terminal = tracing::subscriber::with_default(subscriber, run_agent);
    if let Err(error) = provider.shutdown() {
        eprintln!("otel-export: the exporter did not shut down cleanly: {error}");
        return ExitCode::FAILURE;
    }
    match terminal {
        Some(Terminal::Completed) => ExitCode::SUCCESS,
        other => {
            eprintln!("otel-export: the run ended with {other:?}");
            ExitCode::FAILURE
        }
    }
}
