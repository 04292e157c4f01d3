//! A server tool as a loop [`Tool`]: `tools/call` with a timeout, progress and cancellation.

use std::sync::{Arc, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, ProgressToken, Request,
    RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;
use threadline_query::{Permission, Tool, ToolContext, ToolOutput, ToolStream};
use threadline_query::{ProgressSender, tool_with_progress};

use crate::server::{Shared, ToolInfo};

/// One tool of a connected server.
pub(crate) struct McpTool {
    info: ToolInfo,
    shared: Arc<Shared>,
}

impl McpTool {
    pub(crate) fn new(info: ToolInfo, shared: Arc<Shared>) -> McpTool {
        McpTool { info, shared }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.info.name
    }

    fn description(&self) -> &str {
        &self.info.description
    }

    fn input_schema(&self) -> Value {
        self.info.input_schema.clone()
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        self.info.read_only
    }

    fn check_permission(&self, input: &Value) -> Permission {
        // `destructiveHint` is meaningful only when `readOnlyHint` is false (MCP specification).
        if self.info.read_only {
            return Permission::Allow;
        }
        let mut tool = self.info.server_name.clone();
        crate::content::cut_line(&mut tool, MAX_SHOWN_STRING_BYTES);
        Permission::Ask {
            prompt: format!(
                "Call `{tool}` of MCP server `{}` with {}?",
                self.shared.name,
                shown_input(input)
            ),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream {
        let shared = Arc::clone(&self.shared);
        let tool = self.info.server_name.clone();
        tool_with_progress(move |progress| async move {
            let call = call(&shared, tool, input, progress);
            tokio::select! {
                output = call => output,
                () = ctx.cancel.cancelled() => ToolOutput::error("The MCP call was cancelled."),
            }
        })
    }
}

/// The most bytes of one string of a tool's input (a value or a key) a permission question
/// shows: a longer one shows its first and its last half of this, the bytes between counted.
pub(crate) const MAX_SHOWN_STRING_BYTES: usize = 200;

/// The most bytes of a tool's input a permission question shows, each string already cut.
pub(crate) const MAX_SHOWN_INPUT_BYTES: usize = 4096;

/// `input` as a permission question shows it, so that a long value cannot hide what else the
/// call does (`{"content": "<long>", "path": "../../.ssh/authorized_keys"}`): JSON with every
/// key, each string cut on its own to [`MAX_SHOWN_STRING_BYTES`], its start and its end kept
/// (`"start"…[+N bytes]…"end"`, the marks outside the quotes, where a string cannot write
/// them); the whole cut to [`MAX_SHOWN_INPUT_BYTES`], the rest counted. Strings are JSON
/// strings (control characters escaped); the terminal escaping is the caller's.
pub(crate) fn shown_input(input: &Value) -> String {
    let mut shown = String::new();
    push_shown(input, &mut shown);
    let dropped = crate::content::cut(&mut shown, MAX_SHOWN_INPUT_BYTES);
    if dropped > 0 {
        shown.push_str(&format!("…[+{dropped} bytes of the input not shown]"));
    }
    shown
}

fn push_shown(value: &Value, shown: &mut String) {
    match value {
        Value::String(text) => push_shown_string(text, shown),
        Value::Array(items) => {
            shown.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    shown.push_str(", ");
                }
                push_shown(item, shown);
            }
            shown.push(']');
        }
        Value::Object(map) => {
            shown.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    shown.push_str(", ");
                }
                push_shown_string(key, shown);
                shown.push_str(": ");
                push_shown(item, shown);
            }
            shown.push('}');
        }
        other => shown.push_str(&other.to_string()),
    }
}

fn push_shown_string(text: &str, shown: &mut String) {
    let json = |text: &str| Value::from(text).to_string();
    if text.len() <= MAX_SHOWN_STRING_BYTES {
        shown.push_str(&json(text));
        return;
    }
    let start = crate::content::prefix(text, MAX_SHOWN_STRING_BYTES / 2);
    let end = crate::content::suffix(text, MAX_SHOWN_STRING_BYTES / 2);
    let between = text.len() - start.len() - end.len();
    shown.push_str(&format!("{}…[+{between} bytes]…{}", json(start), json(end)));
}

/// Sends `notifications/cancelled` for a request still running when its call is dropped
/// (the loop aborted) or timed out, and forgets its progress channel.
struct InFlight {
    shared: Arc<Shared>,
    id: Option<RequestId>,
    token: ProgressToken,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.shared.service.peer().clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some("cancelled by the client".to_owned()),
                    ))
                    .await;
            });
        }
    }
}

async fn call(
    shared: &Arc<Shared>,
    tool: String,
    input: Value,
    progress: ProgressSender,
) -> ToolOutput {
    let server = &shared.name;
    let mut params = CallToolRequestParams::new(tool.clone());
    if let Value::Object(arguments) = input {
        params = params.with_arguments(arguments);
    }
    let request = ClientRequest::CallToolRequest(Request::new(params));
    let peer = shared.service.peer();
    let handle = match peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => return failed(server, &tool, &error, shared),
    };
    shared
        .progress
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(handle.progress_token.clone(), progress);
    let mut in_flight = InFlight {
        shared: Arc::clone(shared),
        id: Some(handle.id.clone()),
        token: handle.progress_token.clone(),
    };
    let timeout = shared.options.call_timeout;
    let answer = match tokio::time::timeout(timeout, handle.await_response()).await {
        Ok(answer) => answer,
        Err(_) => {
            return error_result(format!(
                "MCP server `{server}`: `{tool}` did not answer within {}s.",
                timeout.as_secs_f64()
            ));
        }
    };
    in_flight.id = None;
    match answer {
        Ok(ServerResult::CallToolResult(result)) => match serde_json::to_value(&result) {
            Ok(json) => crate::content::to_output(&json),
            Err(error) => error_result(format!("MCP server `{server}`: {error}")),
        },
        Ok(_) => error_result(format!(
            "MCP server `{server}`: `{tool}` answered something other than a tool result."
        )),
        Err(error) => failed(server, &tool, &error, shared),
    }
}

fn failed(server: &str, tool: &str, error: &ServiceError, shared: &Shared) -> ToolOutput {
    let detail = match error {
        ServiceError::TransportClosed => {
            shared.withdraw();
            let mut line = format!("the server closed the connection during `{tool}`");
            if let Some(stderr) = shared.stderr.last_line() {
                line.push_str(&format!(" (stderr: {stderr})"));
            }
            line
        }
        ServiceError::McpError(error) => format!("`{tool}` failed: {}", error.message),
        other => format!("`{tool}` failed: {other}"),
    };
    error_result(format!("MCP server `{server}`: {detail}."))
}

/// An error result of a call: `text` quotes the server (its JSON-RPC error's message may be
/// as long as a line rmcp reads), so it is cut as a result's text is
/// ([`MAX_OUTPUT_BYTES`](crate::content::MAX_OUTPUT_BYTES)).
fn error_result(mut text: String) -> ToolOutput {
    crate::content::cut_output(&mut text, crate::content::MAX_OUTPUT_BYTES);
    ToolOutput::error(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_value_hides_no_other_key() {
        let input = json!({"content": "x".repeat(190), "path": "../../.ssh/authorized_keys"});
        let shown = shown_input(&input);
        assert!(
            shown.ends_with(r#", "path": "../../.ssh/authorized_keys"}"#),
            "{shown}"
        );
        // Short inputs read as JSON.
        assert_eq!(
            shown_input(&json!({"a": 1, "b": [true, null], "c": {"d": "e\u{1b}"}})),
            r#"{"a": 1, "b": [true, null], "c": {"d": "e\u001b"}}"#
        );
    }

    #[test]
    fn each_string_is_cut_on_its_own_keeping_its_end() {
        let padded = format!("{}../../.ssh/authorized_keys", "./".repeat(5000));
        let input = json!({"content": "é".repeat(50_000), "path": padded, "mode": "0600"});
        let shown = shown_input(&input);
        assert!(shown.len() < 3 * MAX_SHOWN_STRING_BYTES, "{shown}");
        assert!(shown.contains(r#""mode": "0600""#), "{shown}");
        assert!(
            shown.ends_with(r#"../../.ssh/authorized_keys"}"#),
            "{shown}"
        );
        let half = MAX_SHOWN_STRING_BYTES / 2;
        let content = format!(
            r#""content": "{}"…[+{} bytes]…"{}""#,
            "é".repeat(half / 2),
            100_000 - 2 * half,
            "é".repeat(half / 2)
        );
        assert!(shown.contains(&content), "{shown}");
        // Nested values too; a long key is cut the same way.
        let nested = shown_input(&json!({"options": [{"x": "y".repeat(1000), "z": 1}]}));
        assert!(nested.ends_with(r#", "z": 1}]}"#), "{nested}");
        let key = shown_input(&json!({"k".repeat(1000): 1}));
        let k = "k".repeat(MAX_SHOWN_STRING_BYTES / 2);
        assert_eq!(key, format!(r#"{{"{k}"…[+800 bytes]…"{k}": 1}}"#));
    }

    #[test]
    fn the_whole_input_is_bounded_and_says_what_it_left_out() {
        let many: serde_json::Map<String, Value> = (0..10_000)
            .map(|i| (format!("k{i:05}"), Value::from("v".repeat(300))))
            .collect();
        let shown = shown_input(&Value::Object(many));
        assert!(shown.len() < MAX_SHOWN_INPUT_BYTES + 100, "{}", shown.len());
        assert!(shown.ends_with(" bytes of the input not shown]"), "{shown}");
    }
}
