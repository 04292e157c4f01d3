//! The `Tool` trait: what a client tool is to the loop.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::channel::mpsc;
use futures::stream::{BoxStream, StreamExt as _};
use serde_json::Value;
use threadline_wire::Content;
use threadline_wire::tools::CustomTool;
use tokio_util::sync::CancellationToken;

use crate::permission::Permission;

/// What a running tool reports: progress (any number of times, streamed to the caller at
/// once), then one result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolEvent {
    /// Progress, for UIs; never sent to the model.
    Progress(Value),
    /// The result; the tool's stream ends here (anything after it is ignored).
    Result(ToolOutput),
}

/// A tool's result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// What the model reads.
    pub content: Content,
    /// Whether the tool failed (the model reads the content as an error).
    pub is_error: bool,
    /// Structured data for UIs (stored as the user message's raw tool result, never sent).
    pub raw: Option<Value>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: Content::Text(text.into()),
            is_error: false,
            raw: None,
        }
    }

    /// A successful result with any content (text, images, documents).
    pub fn content(content: Content) -> ToolOutput {
        ToolOutput {
            content,
            is_error: false,
            raw: None,
        }
    }

    /// An error result the model can read.
    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: Content::Text(text.into()),
            is_error: true,
            raw: None,
        }
    }

    /// The same result, marked as an error or not.
    pub fn with_is_error(mut self, is_error: bool) -> ToolOutput {
        self.is_error = is_error;
        self
    }

    /// The same result with structured data for UIs.
    pub fn with_raw(mut self, raw: Value) -> ToolOutput {
        self.raw = Some(raw);
        self
    }
}

/// The stream a tool call answers.
pub type ToolStream = BoxStream<'static, ToolEvent>;

/// What a tool call receives besides its input.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The id of the tool use being answered.
    pub tool_use_id: String,
    /// Fires when the run is aborted; the call's stream is dropped right after.
    pub cancel: CancellationToken,
    /// The history the turn's request was built from (its visible part), given only to a
    /// tool that asks for it ([`Tool::needs_history`]): a forked subagent starts from it.
    pub history: Option<Arc<[threadline_message::Message]>>,
}

impl ToolContext {
    /// A context for `tool_use_id` with a fresh token (for calling a tool outside the loop).
    pub fn new(tool_use_id: impl Into<String>) -> ToolContext {
        ToolContext {
            tool_use_id: tool_use_id.into(),
            cancel: CancellationToken::new(),
            history: None,
        }
    }

    /// The same context with `history` (see [`ToolContext::history`]).
    pub fn with_history(mut self, history: Arc<[threadline_message::Message]>) -> ToolContext {
        self.history = Some(history);
        self
    }
}

/// A client tool the model may call.
///
/// `call` answers a stream of [`ToolEvent`]s; most tools build it with [`result`] (one
/// future, no progress) or [`with_progress`] (a future that reports progress through a
/// [`ProgressSender`]). The input has been validated against [`input_schema`] and permission
/// granted before `call` runs.
///
/// [`input_schema`]: Tool::input_schema
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// The JSON schema of its input (an object schema).
    fn input_schema(&self) -> Value;
    /// Whether this call may run alongside other concurrency-safe calls (reads are; writes
    /// and shell commands are not). Default: no.
    fn is_concurrency_safe(&self, input: &Value) -> bool {
        let _ = input;
        false
    }
    /// What the tool itself says about running this input (before the permission callback
    /// decides). Default: allow.
    fn check_permission(&self, input: &Value) -> Permission {
        let _ = input;
        Permission::Allow
    }
    /// Whether the tool is always loaded, never deferred behind tool search (see
    /// [`crate::tool_search`]). Default: no.
    fn always_load(&self) -> bool {
        false
    }
    /// Whether the call needs the turn's history in [`ToolContext::history`] (a forked
    /// subagent does). Default: no (the history is then not copied).
    fn needs_history(&self) -> bool {
        false
    }
    /// Whether running this input twice has the same effect as running it once (reads,
    /// searches, listings are; writes, edits and shell commands are not). A durable driver
    /// (`threadline-restate`) re-runs an idempotent call whose result was not journaled before
    /// a crash, and answers a non-idempotent one with the interrupted result
    /// ([`crate::recovery::INTERRUPTED`]) instead of running it blindly again. Default: no.
    fn is_idempotent(&self, input: &Value) -> bool {
        let _ = input;
        false
    }
    /// Runs the tool.
    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream;
}

/// A tool stream with no progress: the future's output is the result.
pub fn result<F>(future: F) -> ToolStream
where
    F: Future<Output = ToolOutput> + Send + 'static,
{
    futures::stream::once(async move { ToolEvent::Result(future.await) }).boxed()
}

/// Sends progress from inside a tool's future (see [`with_progress`]).
#[derive(Debug, Clone)]
pub struct ProgressSender(mpsc::UnboundedSender<ToolEvent>);

impl ProgressSender {
    /// Reports progress; ignored when the call is gone.
    pub fn send(&self, progress: Value) {
        let _ = self.0.unbounded_send(ToolEvent::Progress(progress));
    }
}

/// A tool stream whose future reports progress through the [`ProgressSender`] it is given;
/// progress is delivered as it is sent, the future's output is the result.
pub fn with_progress<F, Fut>(body: F) -> ToolStream
where
    F: FnOnce(ProgressSender) -> Fut,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded();
    let future = body(ProgressSender(tx.clone()));
    // The result goes through the same channel, after every progress report: FIFO order.
    let driver = async move {
        let output = future.await;
        let _ = tx.unbounded_send(ToolEvent::Result(output));
    };
    let driver = futures::stream::once(driver).filter_map(|()| futures::future::ready(None));
    futures::stream::select(rx, driver)
        .scan(false, |done, event| {
            if *done {
                return futures::future::ready(None);
            }
            *done = matches!(event, ToolEvent::Result(_));
            futures::future::ready(Some(event))
        })
        .boxed()
}

/// The tools of a session, by name, in a stable (sorted) order.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolSet {
    /// No tools.
    pub fn new() -> ToolSet {
        ToolSet::default()
    }

    /// Adds a tool (replacing one of the same name).
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_owned(), tool);
    }

    /// The same set with `tool` added.
    pub fn with(mut self, tool: impl Tool + 'static) -> ToolSet {
        self.insert(Arc::new(tool));
        self
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Whether the tool named `name` opted out of deferral ([`Tool::always_load`]).
    pub fn is_always_loaded(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|t| t.always_load())
    }

    /// The request's `tools` (custom tools, sorted by name so the bytes never change between
    /// requests).
    pub fn definitions(&self) -> Vec<threadline_wire::ToolDefinition> {
        self.tools
            .values()
            .map(|tool| {
                threadline_wire::ToolDefinition::Custom(
                    CustomTool::new(tool.name(), tool.input_schema())
                        .with_description(tool.description()),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn progress_comes_before_the_result_and_the_stream_ends() {
        let stream = with_progress(|progress| async move {
            progress.send(serde_json::json!(1));
            progress.send(serde_json::json!(2));
            ToolOutput::text("done")
        });
        let events: Vec<ToolEvent> = stream.collect().await;
        assert_eq!(
            events,
            vec![
                ToolEvent::Progress(serde_json::json!(1)),
                ToolEvent::Progress(serde_json::json!(2)),
                ToolEvent::Result(ToolOutput::text("done")),
            ]
        );
    }
}
