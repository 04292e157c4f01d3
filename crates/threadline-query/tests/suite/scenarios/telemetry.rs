//! The loop's spans carry the GenAI attributes with exact values, and none of the run's
//! content: user text, system prompt, tool input and tool output stay out.

use std::io::Write;
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use serde_json::json;
use threadline_message::Message;
use threadline_query::scripted::{Reply, Response, ScriptedService};
use threadline_query::{Event, Query, QueryConfig, State, Terminal};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_wire::StopReason;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

struct Secretive;

impl Tool for Secretive {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Looks a word up."
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"word": {"type": "string"}}})
    }
    fn is_concurrency_safe(&self, _input: &serde_json::Value) -> bool {
        true
    }
    fn call(&self, _input: serde_json::Value, _ctx: ToolContext) -> ToolStream {
        tool_result(async { ToolOutput::error("TOOL-OUTPUT-MARKER") })
    }
}

#[test]
fn spans_carry_the_genai_attributes_and_no_content() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .text("ASSISTANT-TEXT-MARKER")
                .tool_use("toolu_1", "lookup", json!({"word": "TOOL-INPUT-MARKER"}))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new("msg_2")
                .text("done")
                .stop(StopReason::EndTurn),
        ),
    ]);
    let config = QueryConfig::new("claude-sonnet-5", 512)
        .with_system("SYSTEM-PROMPT-MARKER")
        .with_conversation_id("session-7");
    let query = Query::new(service, config).with_tool(Secretive);
    let events: Vec<Event> = tracing::subscriber::with_default(subscriber, || {
        futures::executor::block_on(
            query
                .run(
                    State::default(),
                    vec![Message::user_text("USER-TEXT-MARKER")],
                )
                .collect(),
        )
    });
    let Some(Event::Finished(finished)) = events.last() else {
        panic!("the last event is Finished");
    };
    assert_eq!(finished.terminal, Terminal::Completed);

    let logs =
        String::from_utf8(captured.0.lock().expect("not poisoned").clone()).expect("UTF-8 logs");
    for expected in [
        "invoke_agent{",
        "gen_ai.operation.name=\"invoke_agent\"",
        "chat{",
        "gen_ai.operation.name=\"chat\"",
        "gen_ai.provider.name=\"anthropic\"",
        "gen_ai.request.model=\"claude-sonnet-5\"",
        "gen_ai.request.max_tokens=512",
        "gen_ai.conversation.id=\"session-7\"",
        "gen_ai.response.id=\"msg_1\"",
        "gen_ai.response.model=\"claude-sonnet-4-5\"",
        "gen_ai.response.finish_reasons=\"tool_use\"",
        "gen_ai.response.finish_reasons=\"end_turn\"",
        // The scripted service reports 10 input tokens and no cache figures.
        "gen_ai.usage.input_tokens=10",
        "execute_tool{",
        "gen_ai.operation.name=\"execute_tool\"",
        "gen_ai.tool.name=\"lookup\"",
        "gen_ai.tool.call.id=\"toolu_1\"",
        "gen_ai.tool.type=\"function\"",
        "error.type=\"tool_error\"",
    ] {
        assert!(logs.contains(expected), "`{expected}` missing:\n{logs}");
    }
    assert_eq!(logs.matches(" close").count(), 4, "{logs}");
    for marker in [
        "USER-TEXT-MARKER",
        "SYSTEM-PROMPT-MARKER",
        "ASSISTANT-TEXT-MARKER",
        "TOOL-INPUT-MARKER",
        "TOOL-OUTPUT-MARKER",
    ] {
        assert!(!logs.contains(marker), "`{marker}` was logged:\n{logs}");
    }
}
