//! The streaming tool executor: each tool use is queued the moment its block completes in the
//! stream, and started as soon as the concurrency rule allows — concurrency-safe calls
//! together, any other call alone, never overtaking an earlier call that is still waiting.
//! Progress is reported as it comes; results are handed out in tool-use order whatever order
//! the calls finish in.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt as _;
use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt as _};
use serde_json::Value;
use threadline_wire::ToolUseBlock;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::permission::{self, PermissionCallback, PermissionRequest};
use crate::recovery::{TOOL_FAILED, invalid_input, unknown_tool};
use crate::schema;
use crate::telemetry;
use crate::tool::{Tool, ToolContext, ToolEvent, ToolOutput, ToolSet};

/// What the executor reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExecEvent {
    /// The call at `index` started.
    Started { index: usize },
    /// The call at `index` reported progress.
    Progress { index: usize, data: Value },
    /// The call at `index` finished (its result waits for the earlier ones).
    Finished { index: usize },
}

enum Slot {
    Queued { tool: Arc<dyn Tool>, input: Value },
    Running,
    Done(ToolOutput),
    Delivered,
}

struct Entry {
    id: String,
    name: String,
    safe: bool,
    slot: Slot,
}

/// Runs the tool uses of one response.
pub(crate) struct Executor {
    tools: Arc<ToolSet>,
    permission: Arc<dyn PermissionCallback>,
    cancel: CancellationToken,
    entries: Vec<Entry>,
    running: FuturesUnordered<BoxFuture<'static, (usize, ToolOutput)>>,
    started: std::collections::VecDeque<usize>,
    progress_tx: mpsc::UnboundedSender<(usize, Value)>,
    progress_rx: mpsc::UnboundedReceiver<(usize, Value)>,
    delivered: usize,
    history: Option<Arc<[threadline_message::Message]>>,
    /// The parent of every call's `execute_tool` span: the span current when the executor
    /// was made (the run's), not the model call's the tool use streamed in.
    span: tracing::Span,
}

impl Executor {
    pub(crate) fn new(
        tools: Arc<ToolSet>,
        permission: Arc<dyn PermissionCallback>,
        cancel: CancellationToken,
    ) -> Executor {
        let (progress_tx, progress_rx) = mpsc::unbounded();
        Executor {
            tools,
            permission,
            cancel,
            entries: Vec::new(),
            running: FuturesUnordered::new(),
            started: std::collections::VecDeque::new(),
            progress_tx,
            progress_rx,
            delivered: 0,
            history: None,
            span: tracing::Span::current(),
        }
    }

    /// The history the turn's request was built from, for tools that need it.
    pub(crate) fn set_history(&mut self, history: Arc<[threadline_message::Message]>) {
        self.history = Some(history);
    }

    /// Whether a tool of the set needs the history ([`Tool::needs_history`]).
    pub(crate) fn wants_history(&self) -> bool {
        self.tools
            .names()
            .filter_map(|name| self.tools.get(name))
            .any(|tool| tool.needs_history())
    }

    /// Whether any tool use was queued.
    pub(crate) fn has_tool_uses(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The id and tool name of the call at `index`.
    pub(crate) fn describe(&self, index: usize) -> Option<(&str, &str)> {
        self.entries
            .get(index)
            .map(|e| (e.id.as_str(), e.name.as_str()))
    }

    /// Queues a completed tool use: an unknown tool or an input that does not fit the schema
    /// is answered at once with an error result the model can read.
    pub(crate) fn enqueue(&mut self, tool_use: &ToolUseBlock) {
        let unrun = |error_type| {
            telemetry::unrun_tool(&self.span, &tool_use.name, &tool_use.id, error_type);
        };
        let slot_and_safety = match self.tools.get(&tool_use.name) {
            None => {
                unrun("unknown_tool");
                (
                    Slot::Done(ToolOutput::error(unknown_tool(&tool_use.name))),
                    false,
                )
            }
            Some(tool) => match schema::check(&tool.input_schema(), &tool_use.input) {
                Err(problems) => {
                    unrun("invalid_input");
                    (
                        Slot::Done(ToolOutput::error(invalid_input(
                            &tool_use.name,
                            &problems.to_string(),
                        ))),
                        false,
                    )
                }
                Ok(()) => (
                    Slot::Queued {
                        tool: Arc::clone(tool),
                        input: tool_use.input.clone(),
                    },
                    tool.is_concurrency_safe(&tool_use.input),
                ),
            },
        };
        let (slot, safe) = slot_and_safety;
        self.entries.push(Entry {
            id: tool_use.id.clone(),
            name: tool_use.name.clone(),
            safe,
            slot,
        });
        self.start_what_may_run();
    }

    /// Answers `tool_use` with an error at once, without running its tool (the call could
    /// not be recorded, so its side effect must not happen).
    pub(crate) fn refuse(&mut self, tool_use: &ToolUseBlock, text: &str) {
        telemetry::unrun_tool(&self.span, &tool_use.name, &tool_use.id, "not_recorded");
        self.entries.push(Entry {
            id: tool_use.id.clone(),
            name: tool_use.name.clone(),
            safe: false,
            slot: Slot::Done(ToolOutput::error(text)),
        });
        self.start_what_may_run();
    }

    /// Starts queued calls in order while the concurrency rule allows.
    fn start_what_may_run(&mut self) {
        for index in self.delivered..self.entries.len() {
            match self.entries[index].slot {
                Slot::Running | Slot::Done(_) | Slot::Delivered => continue,
                Slot::Queued { .. } => {}
            }
            let running: Vec<bool> = self
                .entries
                .iter()
                .filter(|e| matches!(e.slot, Slot::Running))
                .map(|e| e.safe)
                .collect();
            let may_run = running.is_empty()
                || (self.entries[index].safe && running.iter().all(|safe| *safe));
            if !may_run {
                // Order is kept: nothing overtakes a call that waits.
                break;
            }
            self.start(index);
        }
    }

    fn start(&mut self, index: usize) {
        let entry = &mut self.entries[index];
        let Slot::Queued { tool, input } = std::mem::replace(&mut entry.slot, Slot::Running) else {
            return;
        };
        let id = entry.id.clone();
        let span = telemetry::tool_span(&self.span, &entry.name, &id);
        let permission = Arc::clone(&self.permission);
        let progress = self.progress_tx.clone();
        let ctx = ToolContext {
            tool_use_id: id.clone(),
            cancel: self.cancel.child_token(),
            history: tool.needs_history().then(|| self.history.clone()).flatten(),
        };
        let call = async move {
            let verdict = tool.check_permission(&input);
            let request = PermissionRequest {
                tool: tool.name(),
                tool_use_id: &id,
                input: &input,
                verdict: &verdict,
            };
            if let Err(message) = permission::resolve(&*permission, request).await {
                return ToolOutput::error(message);
            }
            let mut events = tool.call(input, ctx);
            while let Some(event) = events.next().await {
                match event {
                    ToolEvent::Progress(data) => {
                        let _ = progress.unbounded_send((index, data));
                    }
                    ToolEvent::Result(output) => return output,
                }
            }
            ToolOutput::error(TOOL_FAILED)
        };
        // A panicking tool is a failed tool, not a crashed loop.
        let recorded = span.clone();
        let guarded = AssertUnwindSafe(call)
            .catch_unwind()
            .map(move |outcome| {
                let output = outcome.unwrap_or_else(|_| ToolOutput::error(TOOL_FAILED));
                telemetry::record_tool_output(&recorded, &output);
                (index, output)
            })
            .instrument(span);
        self.running.push(guarded.boxed());
        self.started.push_back(index);
    }

    /// The next thing to report; `Pending` when nothing is running or ready.
    pub(crate) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<ExecEvent> {
        if let Some(index) = self.started.pop_front() {
            return Poll::Ready(ExecEvent::Started { index });
        }
        if let Poll::Ready(Some((index, data))) = self.progress_rx.poll_next_unpin(cx) {
            return Poll::Ready(ExecEvent::Progress { index, data });
        }
        match self.running.poll_next_unpin(cx) {
            Poll::Ready(Some((index, output))) => {
                if let Some(entry) = self.entries.get_mut(index) {
                    entry.slot = Slot::Done(output);
                }
                self.start_what_may_run();
                Poll::Ready(ExecEvent::Finished { index })
            }
            // Empty: new calls only come from the caller's own task, which polls again.
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }

    /// The next result in tool-use order, if it is done.
    pub(crate) fn take_ready(&mut self) -> Option<(String, ToolOutput)> {
        let entry = self.entries.get_mut(self.delivered)?;
        if !matches!(entry.slot, Slot::Done(_)) {
            return None;
        }
        let Slot::Done(output) = std::mem::replace(&mut entry.slot, Slot::Delivered) else {
            return None;
        };
        self.delivered += 1;
        Some((entry.id.clone(), output))
    }

    /// Whether every result was handed out.
    pub(crate) fn is_finished(&self) -> bool {
        self.delivered == self.entries.len()
    }

    /// Stops everything: running calls are cancelled and dropped; every call without a
    /// result (running or never started) gets an error result with `text`. Finished calls
    /// keep their real results.
    pub(crate) fn abort(&mut self, text: &str) {
        self.cancel.cancel();
        self.running.clear();
        self.started.clear();
        for entry in &mut self.entries[self.delivered..] {
            if matches!(entry.slot, Slot::Queued { .. } | Slot::Running) {
                entry.slot = Slot::Done(ToolOutput::error(text));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::NonInteractive;
    use crate::tool;
    use serde_json::json;

    struct Echo {
        safe: bool,
    }

    impl Tool for Echo {
        fn name(&self) -> &str {
            if self.safe { "read" } else { "write" }
        }
        fn description(&self) -> &str {
            "echo"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
        }
        fn is_concurrency_safe(&self, _input: &Value) -> bool {
            self.safe
        }
        fn call(&self, _input: Value, _ctx: ToolContext) -> crate::tool::ToolStream {
            // Never finishes: these tests look at scheduling only.
            tool::result(std::future::pending::<ToolOutput>())
        }
    }

    fn executor() -> Executor {
        let tools = ToolSet::new()
            .with(Echo { safe: true })
            .with(Echo { safe: false });
        Executor::new(
            Arc::new(tools),
            Arc::new(NonInteractive),
            CancellationToken::new(),
        )
    }

    fn tool_use(id: &str, name: &str, input: Value) -> ToolUseBlock {
        serde_json::from_value(json!({"id": id, "name": name, "input": input})).expect("a tool use")
    }

    fn running(e: &Executor) -> Vec<usize> {
        e.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.slot, Slot::Running))
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn safe_calls_run_together_and_an_unsafe_one_waits_alone() {
        let mut e = executor();
        e.enqueue(&tool_use("t1", "read", json!({"x": 1})));
        e.enqueue(&tool_use("t2", "read", json!({"x": 2})));
        e.enqueue(&tool_use("t3", "write", json!({"x": 3})));
        e.enqueue(&tool_use("t4", "read", json!({"x": 4})));
        // t3 waits for t1 and t2; t4 may not overtake t3.
        assert_eq!(running(&e), vec![0, 1]);
    }

    #[test]
    fn unknown_tools_and_invalid_input_are_answered_at_once_in_order() {
        let mut e = executor();
        e.enqueue(&tool_use("t1", "nope", json!({})));
        e.enqueue(&tool_use("t2", "read", json!({"x": "one"})));
        let (id, out) = e.take_ready().expect("first");
        assert_eq!(id, "t1");
        assert!(out.is_error);
        assert_eq!(
            out.content,
            threadline_wire::Content::Text(unknown_tool("nope"))
        );
        let (id, out) = e.take_ready().expect("second");
        assert_eq!(id, "t2");
        assert_eq!(
            out.content,
            threadline_wire::Content::Text(invalid_input(
                "read",
                "/x: expected integer, got string"
            ))
        );
        assert!(e.is_finished());
    }

    #[test]
    fn a_refused_call_is_answered_in_order_and_never_started() {
        let mut e = executor();
        e.enqueue(&tool_use("t1", "write", json!({"x": 1})));
        e.refuse(&tool_use("t2", "write", json!({"x": 2})), "not recorded");
        e.abort("stopped");
        let results: Vec<(String, bool)> = std::iter::from_fn(|| e.take_ready())
            .map(|(id, out)| (id, out.is_error))
            .collect();
        assert_eq!(results, [("t1".into(), true), ("t2".into(), true)]);
    }

    #[test]
    fn abort_answers_every_call_without_a_result() {
        let mut e = executor();
        e.enqueue(&tool_use("t1", "write", json!({"x": 1})));
        e.enqueue(&tool_use("t2", "write", json!({"x": 2})));
        e.abort("stopped");
        let ids: Vec<String> = std::iter::from_fn(|| e.take_ready())
            .map(|(id, out)| {
                assert!(out.is_error);
                id
            })
            .collect();
        assert_eq!(ids, ["t1", "t2"]);
        assert!(e.is_finished());
    }
}
