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
        let mut shown = input.to_string();
        crate::content::cut_line(&mut shown, 200);
        Permission::Ask {
            prompt: format!(
                "Call `{}` of MCP server `{}` with {shown}?",
                self.info.server_name, self.shared.name
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
