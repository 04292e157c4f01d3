//! The bridge between the loop and the handler: the loop's service, tools and permission
//! callback hold no context (the loop needs `'static` parts); they send each model request,
//! tool call and permission question over one channel to the handler's own future, which
//! serves them as journaled steps in arrival order, one at a time, and answers through a
//! oneshot.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt as _;
use futures::channel::{mpsc, oneshot};
use futures::future::BoxFuture;
use serde_json::Value;
use threadline_message::Message;
use threadline_query::recovery::INTERRUPTED;
use threadline_query::{
    AttachmentHook, Permission, PermissionCallback, PermissionRequest, Tool, ToolContext,
    ToolOutput, ToolStream, tool_result,
};
use threadline_wire::MessagesRequest;
use threadline_wire::service::{EventStream, EventStreamFuture, ServiceError, ServiceErrorKind};

/// What the loop asks the handler for.
pub(crate) enum Request {
    Model {
        request: Box<MessagesRequest>,
        reply: oneshot::Sender<Result<EventStream, ServiceError>>,
    },
    Tool {
        tool: Arc<dyn Tool>,
        input: Value,
        ctx: ToolContext,
        reply: oneshot::Sender<ToolOutput>,
    },
    /// A collection of the next-turn attachment collector: `work` runs it.
    Attach {
        work: BoxFuture<'static, Vec<Message>>,
        reply: oneshot::Sender<Vec<Message>>,
    },
    Ask {
        tool: String,
        tool_use_id: String,
        input: Value,
        prompt: String,
        reply: oneshot::Sender<Permission>,
    },
}

/// The sending side, cloned into every bridge part.
#[derive(Clone)]
pub(crate) struct Bridge(mpsc::UnboundedSender<Request>);

impl Bridge {
    pub(crate) fn new() -> (Bridge, mpsc::UnboundedReceiver<Request>) {
        let (tx, rx) = mpsc::unbounded();
        (Bridge(tx), rx)
    }

    fn send(&self, request: Request) -> bool {
        self.0.unbounded_send(request).is_ok()
    }
}

/// The loop's `MessagesService` in a durable turn: every call is a journaled model step of
/// the session's handler (see [`TurnLoop`](crate::TurnLoop)).
#[derive(Clone)]
pub struct JournaledService {
    bridge: Bridge,
}

impl JournaledService {
    pub(crate) fn new(bridge: Bridge) -> JournaledService {
        JournaledService { bridge }
    }
}

fn gone() -> ServiceError {
    ServiceError::new(
        ServiceErrorKind::Connection,
        "the durable session's handler is gone",
    )
}

impl tower_service::Service<MessagesRequest> for JournaledService {
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: MessagesRequest) -> EventStreamFuture {
        let (reply, answer) = oneshot::channel();
        let sent = self.bridge.send(Request::Model {
            request: Box::new(request),
            reply,
        });
        Box::pin(async move {
            if !sent {
                return Err(gone());
            }
            answer.await.unwrap_or_else(|_| Err(gone()))
        })
    }
}

/// A tool whose calls are journaled tool steps of the handler.
pub(crate) struct JournaledTool {
    inner: Arc<dyn Tool>,
    bridge: Bridge,
}

impl JournaledTool {
    pub(crate) fn new(inner: Arc<dyn Tool>, bridge: Bridge) -> JournaledTool {
        JournaledTool { inner, bridge }
    }
}

impl Tool for JournaledTool {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }
    fn is_concurrency_safe(&self, input: &Value) -> bool {
        self.inner.is_concurrency_safe(input)
    }
    fn check_permission(&self, input: &Value) -> Permission {
        self.inner.check_permission(input)
    }
    fn always_load(&self) -> bool {
        self.inner.always_load()
    }
    fn needs_history(&self) -> bool {
        self.inner.needs_history()
    }
    fn is_idempotent(&self, input: &Value) -> bool {
        self.inner.is_idempotent(input)
    }
    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream {
        // Sent now, not on the stream's first poll: the order of requests is the order the
        // loop starts calls in.
        let (reply, answer) = oneshot::channel();
        let sent = self.bridge.send(Request::Tool {
            tool: Arc::clone(&self.inner),
            input,
            ctx,
            reply,
        });
        tool_result(async move {
            if !sent {
                return ToolOutput::error(INTERRUPTED);
            }
            answer
                .await
                .unwrap_or_else(|_| ToolOutput::error(INTERRUPTED))
        })
    }
}

/// Who decides a tool call in a durable session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PermissionMode {
    /// The tool's own verdict stands; a call it would ask about is denied (like the CLI
    /// without a terminal: no shell command unless the tool allows it). The default.
    #[default]
    Deny,
    /// The tool's own verdict stands; a call it would ask about is a question to the client
    /// (an awakeable, see the `show` handler's `ask`).
    Ask,
    /// Every call is allowed (trusted sandboxes, tests).
    AllowAll,
}

/// The loop's permission callback in a durable session.
pub(crate) struct BridgePermission {
    mode: PermissionMode,
    bridge: Bridge,
}

impl BridgePermission {
    pub(crate) fn new(mode: PermissionMode, bridge: Bridge) -> BridgePermission {
        BridgePermission { mode, bridge }
    }
}

impl PermissionCallback for BridgePermission {
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        let denied = || Permission::Deny {
            message: Permission::NOT_GRANTED.to_owned(),
        };
        match (self.mode, request.verdict) {
            (PermissionMode::AllowAll, _) => std::future::ready(Permission::Allow).boxed(),
            (PermissionMode::Deny, Permission::Ask { .. }) => std::future::ready(denied()).boxed(),
            (PermissionMode::Ask, Permission::Ask { prompt }) => {
                let (reply, answer) = oneshot::channel();
                let sent = self.bridge.send(Request::Ask {
                    tool: request.tool.to_owned(),
                    tool_use_id: request.tool_use_id.to_owned(),
                    input: request.input.clone(),
                    prompt: prompt.clone(),
                    reply,
                });
                async move {
                    if !sent {
                        return denied();
                    }
                    answer.await.unwrap_or_else(|_| denied())
                }
                .boxed()
            }
            (_, verdict) => std::future::ready(verdict.clone()).boxed(),
        }
    }
}

impl std::fmt::Debug for JournaledService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournaledService").finish_non_exhaustive()
    }
}

/// The next-turn attachment collector of a durable turn: each collection is a journaled step
/// of the handler (a replay takes the journaled messages and does not collect again).
pub(crate) struct JournaledAttachments {
    inner: Arc<futures::lock::Mutex<Box<dyn AttachmentHook>>>,
    bridge: Bridge,
}

impl JournaledAttachments {
    pub(crate) fn new(inner: Box<dyn AttachmentHook>, bridge: Bridge) -> JournaledAttachments {
        JournaledAttachments {
            inner: Arc::new(futures::lock::Mutex::new(inner)),
            bridge,
        }
    }
}

impl AttachmentHook for JournaledAttachments {
    fn collect<'a>(&'a mut self, history: &'a [Message]) -> BoxFuture<'a, Vec<Message>> {
        let inner = Arc::clone(&self.inner);
        let history = history.to_vec();
        let work = async move { inner.lock().await.collect(&history).await }.boxed();
        let (reply, answer) = oneshot::channel();
        let sent = self.bridge.send(Request::Attach { work, reply });
        async move {
            if !sent {
                return Vec::new();
            }
            answer.await.unwrap_or_default()
        }
        .boxed()
    }
}
