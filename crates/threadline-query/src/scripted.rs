//! An in-process [`MessagesService`](threadline_wire::service::MessagesService) that answers
//! from a script: streamed responses built event by event, with delays, gates and failures.
//! Like the mock server, it validates every request with `threadline_validate::validate` and
//! answers the API's 400 on a violation; it records every request it received.
//!
//! ```
//! use threadline_query::scripted::{Reply, Response, ScriptedService};
//! use threadline_wire::StopReason;
//!
//! let service = ScriptedService::new([
//!     Reply::stream(Response::new("msg_1").text("Hello!").stop(StopReason::EndTurn)),
//! ]);
//! assert_eq!(service.remaining(), 1);
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::StreamExt as _;
use serde_json::{Value, json};
use threadline_validate::Violation;
use threadline_wire::model::ModelTable;
use threadline_wire::service::{EventStream, ServiceError, ServiceErrorKind};
use threadline_wire::{ApiErrorResponse, ApiErrorType, MessagesRequest, StopReason, StreamEvent};
use tokio::sync::Notify;

/// One step of a scripted stream.
#[derive(Debug)]
#[non_exhaustive]
pub enum Step {
    /// Deliver this event.
    Event(StreamEvent),
    /// Wait (on tokio's clock: a paused test clock makes this free).
    Sleep(Duration),
    /// Wait until the gate is opened (`Notify::notify_one`; a permit given earlier counts).
    Wait(Arc<Notify>),
    /// Open a gate (lets a test or a tool know the stream got here).
    Open(Arc<Notify>),
    /// Fail the stream here (after the events before it were delivered).
    Fail(ServiceError),
}

/// What the service answers to one request.
#[derive(Debug)]
#[non_exhaustive]
pub enum Reply {
    /// A stream of steps.
    Stream(Vec<Step>),
    /// The call fails before any event (an HTTP error status).
    Error(ServiceError),
}

impl Reply {
    /// A streamed reply.
    pub fn stream(steps: Vec<Step>) -> Reply {
        Reply::Stream(steps)
    }

    /// `400 prompt is too long: {actual} tokens > {maximum} maximum`.
    pub fn prompt_too_long(actual: u64, maximum: u64) -> Reply {
        Reply::Error(ServiceError::from_api_response(
            400,
            ApiErrorResponse::new(
                ApiErrorType::InvalidRequest,
                format!("prompt is too long: {actual} tokens > {maximum} maximum"),
            ),
            None,
        ))
    }

    /// An API error with this status, type and message.
    pub fn api_error(status: u16, kind: ApiErrorType, message: &str) -> Reply {
        Reply::Error(ServiceError::from_api_response(
            status,
            ApiErrorResponse::new(kind, message),
            None,
        ))
    }
}

/// Builds the events of one streamed response, block by block.
#[derive(Debug)]
pub struct Response {
    id: String,
    steps: Vec<Step>,
    next_index: usize,
    output_tokens: u64,
}

/// The model id scripted responses report.
pub const SCRIPTED_MODEL: &str = "claude-sonnet-4-5";

fn event(value: Value) -> Step {
    match serde_json::from_value::<StreamEvent>(value) {
        Ok(event) => Step::Event(event),
        Err(error) => Step::Fail(ServiceError::new(
            ServiceErrorKind::Decode,
            error.to_string(),
        )),
    }
}

/// Splits `text` in two at a character boundary near the middle.
fn halves(text: &str) -> (&str, &str) {
    let mut cut = text.len() / 2;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.split_at(cut)
}

impl Response {
    /// A response with message id `id` (its `message_start`).
    pub fn new(id: &str) -> Response {
        let start = event(json!({
            "type": "message_start",
            "message": {
                "id": id, "type": "message", "role": "assistant", "content": [],
                "model": SCRIPTED_MODEL, "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}
            }
        }));
        Response {
            id: id.to_owned(),
            steps: vec![start],
            next_index: 0,
            output_tokens: 1,
        }
    }

    /// The message id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn open_block(&mut self, block: Value) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.steps.push(event(
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        index
    }

    fn delta(&mut self, index: usize, delta: Value) {
        self.steps.push(event(
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }

    fn close_block(&mut self, index: usize) {
        self.steps
            .push(event(json!({"type": "content_block_stop", "index": index})));
    }

    /// A text block, streamed in two deltas.
    pub fn text(mut self, text: &str) -> Response {
        let index = self.open_text(text);
        self.close_block(index);
        self
    }

    fn open_text(&mut self, text: &str) -> usize {
        let index = self.open_block(json!({"type": "text", "text": ""}));
        let (a, b) = halves(text);
        for part in [a, b] {
            if !part.is_empty() {
                self.delta(index, json!({"type": "text_delta", "text": part}));
            }
        }
        self.output_tokens += threadline_wire::tokens::text_tokens(text.len());
        index
    }

    /// A text block streamed in two deltas with a pause between them (a stream that can be
    /// cut or aborted inside the block).
    pub fn slow_text(mut self, text: &str, pause: Duration) -> Response {
        let index = self.open_block(json!({"type": "text", "text": ""}));
        let (a, b) = halves(text);
        self.delta(index, json!({"type": "text_delta", "text": a}));
        self.steps.push(Step::Sleep(pause));
        self.delta(index, json!({"type": "text_delta", "text": b}));
        self.close_block(index);
        self.output_tokens += threadline_wire::tokens::text_tokens(text.len());
        self
    }

    /// A text block that never closes (the stream is cut inside it): finish with
    /// [`cut`](Self::cut) or [`fail`](Self::fail).
    pub fn unfinished_text(mut self, text: &str) -> Response {
        self.open_text(text);
        self
    }

    /// A tool use, its input streamed in two `input_json_delta`s.
    pub fn tool_use(mut self, id: &str, name: &str, input: Value) -> Response {
        let index =
            self.open_block(json!({"type": "tool_use", "id": id, "name": name, "input": {}}));
        let text = input.to_string();
        let (a, b) = halves(&text);
        self.delta(
            index,
            json!({"type": "input_json_delta", "partial_json": a}),
        );
        self.delta(
            index,
            json!({"type": "input_json_delta", "partial_json": b}),
        );
        self.close_block(index);
        self.output_tokens += threadline_wire::tokens::text_tokens(text.len()) + 10;
        self
    }

    /// Any other block (a `server_tool_use`, a `web_search_tool_result`, …), sent whole in
    /// its `content_block_start`.
    pub fn block(mut self, block: Value) -> Response {
        let index = self.open_block(block);
        self.close_block(index);
        self
    }

    /// Waits before the next step.
    pub fn sleep(mut self, duration: Duration) -> Response {
        self.steps.push(Step::Sleep(duration));
        self
    }

    /// Waits for a gate before the next step.
    pub fn wait(mut self, gate: &Arc<Notify>) -> Response {
        self.steps.push(Step::Wait(Arc::clone(gate)));
        self
    }

    /// Opens a gate at this point of the stream.
    pub fn open(mut self, gate: &Arc<Notify>) -> Response {
        self.steps.push(Step::Open(Arc::clone(gate)));
        self
    }

    /// Reports this many output tokens in the final usage (default: an estimate).
    pub fn output_tokens(mut self, tokens: u64) -> Response {
        self.output_tokens = tokens;
        self
    }

    /// Ends the message with `stop_reason`: `message_delta` and `message_stop`.
    pub fn stop(mut self, stop_reason: StopReason) -> Vec<Step> {
        let reason = serde_json::to_value(&stop_reason).unwrap_or(Value::Null);
        self.steps.push(event(json!({
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": {"output_tokens": self.output_tokens}
        })));
        self.steps.push(event(json!({"type": "message_stop"})));
        self.steps
    }

    /// Ends the stream here, without `message_stop` (a cut connection).
    pub fn cut(self) -> Vec<Step> {
        self.steps
    }

    /// Fails the stream here with `error`.
    pub fn fail(mut self, error: ServiceError) -> Vec<Step> {
        self.steps.push(Step::Fail(error.after_events()));
        self.steps
    }
}

#[derive(Debug, Default)]
struct Shared {
    replies: VecDeque<Reply>,
    requests: Vec<MessagesRequest>,
    violations: Vec<(usize, Vec<Violation>)>,
}

/// The scripted service. Clones share the script and the record.
#[derive(Debug, Clone, Default)]
pub struct ScriptedService {
    shared: Arc<Mutex<Shared>>,
}

impl ScriptedService {
    /// A service that answers `replies` in order (and a 500 once they run out).
    pub fn new(replies: impl IntoIterator<Item = Reply>) -> ScriptedService {
        ScriptedService {
            shared: Arc::new(Mutex::new(Shared {
                replies: replies.into_iter().collect(),
                ..Shared::default()
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds a reply at the end of the script.
    pub fn push(&self, reply: Reply) {
        self.lock().replies.push_back(reply);
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        self.lock().replies.len()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<MessagesRequest> {
        self.lock().requests.clone()
    }

    /// The requests that failed validation: `(request index, violations)`. Empty when every
    /// request would have been accepted.
    pub fn violations(&self) -> Vec<(usize, Vec<Violation>)> {
        self.lock().violations.clone()
    }
}

impl tower_service::Service<MessagesRequest> for ScriptedService {
    type Response = EventStream;
    type Error = ServiceError;
    type Future = futures::future::Ready<Result<EventStream, ServiceError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: MessagesRequest) -> Self::Future {
        let model = ModelTable::builtin().resolve(&request.model).model();
        let violations = threadline_validate::validate(&request, model);
        let mut shared = self.lock();
        let index = shared.requests.len();
        shared.requests.push(request);
        if let Some(first) = violations.first() {
            let error = ServiceError::from_api_response(
                400,
                ApiErrorResponse::new(ApiErrorType::InvalidRequest, first.message.clone()),
                None,
            );
            shared.violations.push((index, violations));
            return futures::future::ready(Err(error));
        }
        let reply = shared.replies.pop_front();
        drop(shared);
        futures::future::ready(match reply {
            None => Err(ServiceError::from_api_response(
                500,
                ApiErrorResponse::new(ApiErrorType::Api, "the script has no reply left"),
                None,
            )),
            Some(Reply::Error(error)) => Err(error),
            Some(Reply::Stream(steps)) => Ok(play(steps)),
        })
    }
}

/// The stream that plays `steps`.
fn play(steps: Vec<Step>) -> EventStream {
    futures::stream::unfold(steps.into_iter(), |mut steps| async move {
        loop {
            match steps.next()? {
                Step::Event(event) => return Some((Ok(event), steps)),
                Step::Sleep(duration) => tokio::time::sleep(duration).await,
                Step::Wait(gate) => gate.notified().await,
                Step::Open(gate) => gate.notify_one(),
                Step::Fail(error) => return Some((Err(error), Vec::new().into_iter())),
            }
        }
    })
    .boxed()
}
