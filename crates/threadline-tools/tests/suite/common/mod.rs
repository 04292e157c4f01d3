//! What the tools' test binaries share: calling a tool to its result.

use futures::StreamExt as _;
use serde_json::Value;
use threadline_query::Tool;
use threadline_query::{ToolContext, ToolEvent, ToolOutput};
use threadline_wire::Content;

/// Calls `tool` with `input` and returns its result (the last event).
pub(crate) async fn call(tool: &dyn Tool, input: Value) -> ToolOutput {
    let events: Vec<ToolEvent> = tool
        .call(input, ToolContext::new("toolu_1"))
        .collect()
        .await;
    match events.into_iter().last() {
        Some(ToolEvent::Result(output)) => output,
        other => panic!("no result: {other:?}"),
    }
}

/// The text of a result that is text.
pub(crate) fn text(output: &ToolOutput) -> &str {
    match &output.content {
        Content::Text(t) => t,
        Content::Blocks(_) => panic!("text expected"),
    }
}
