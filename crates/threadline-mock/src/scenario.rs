//! Scenarios: what the mock answers, request after request.
//!
//! A scenario is a list of [`Step`]s served in order, one per `POST /v1/messages`; when the
//! list runs out the last step is repeated if [`Scenario::repeat_last`] is set, and otherwise a
//! short text answer is given. A scenario is written in Rust with the constructors, or in a
//! JSON or YAML file:
//!
//! ```yaml
//! steps:
//!   - kind: message
//!     content:
//!       - {type: thinking, thinking: "Let me look.", signature: "c2ln"}
//!       - {type: text, text: "Looking at the directory."}
//!       - {type: tool_use, name: ls, input: {path: "."}}
//!     stop_reason: tool_use
//!   - kind: error
//!     status: 429
//!     message: "rate limited"
//!     retry_after: 1
//!   - kind: message
//!     content: [{type: text, text: "Done."}]
//!     fault: {type: error_event, after_events: 3}
//!   - kind: fixture
//!     path: fixtures/canonical/anthropics__anthropic-sdk-python/tool_use_response.json
//!   - kind: reset
//! ```
//!
//! By default each request takes the next step. With `answer_by: turn` (on the scenario or
//! on a route) a request takes the step at its position in its conversation instead, so a
//! request sent twice gets the same answer (see [`AnswerBy`]). A slow stream is a message
//! step with `delay_ms` between its events and small deltas (`chunk_chars`): 100 characters
//! of text with `chunk_chars: 10` and `delay_ms: 200` stream as 10 deltas, about 3 s in all
//! with the events around them.
//!
//! ```yaml
//! answer_by: turn
//! steps:
//!   - kind: message
//!     content: [{type: tool_use, name: slow_tool, input: {}}]
//!   - kind: message
//!     content: [{type: text, text: "A long answer, streamed slowly, ten characters at a time."}]
//!     chunk_chars: 10
//!     delay_ms: 200
//! routes:
//!   - marker: "[subagent]"
//!     answer_by: turn
//!     steps: [{kind: message, content: [{type: text, text: "Sub-answer."}]}]
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The scripted answers of a mock server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The answers, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Repeat the last step once the list is exhausted (for benchmarks and demos).
    #[serde(default)]
    pub repeat_last: bool,
    /// Conversations answered from their own steps (see [`crate::routes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<crate::routes::Route>,
    /// How a request picks its step: in arrival order (the default) or by its position in
    /// its conversation (see [`AnswerBy`]). A route may say otherwise for its own steps.
    #[serde(default, skip_serializing_if = "AnswerBy::is_order")]
    pub answer_by: AnswerBy,
}

/// How a request picks its step among a list of steps (the scenario's, or a route's).
///
/// - `order` (the default): the next step not yet taken, one per request, in arrival order
///   across all connections. A request sent twice takes two steps.
/// - `turn`: the step is the request's position in its conversation, the number of
///   assistant messages in its `messages` — step 0 for a conversation's first request, 1
///   for the request after the first answer, and so on. Arrival order does not matter and
///   nothing is consumed: a request sent again (a retry, a request re-sent by another
///   worker after a crash) gets the same step, and ids derived from the conversation and
///   the step instead of a counter, so the same answer byte for byte (but for the
///   `request-id` header, and the usage and cache diagnostics, which follow the prompt
///   cache: a re-sent prefix is a cache read).
///
/// What counts, under `turn`: every message whose role is `assistant`, wherever it is. A
/// request ending with an assistant message (a prefill, or a `pause_turn` answer sent back
/// to be continued) counts it too: the continuation of step `n`'s paused answer is step
/// `n + 1`, and a conversation whose very first request carries a prefill starts at step 1.
/// A retry with the same messages and another `max_tokens` (an escalation) gets the same
/// step. An autocompact summary request keeps the conversation's messages and adds its
/// prompt to the last user message, so it has the step of the request it precedes, and
/// the request after a compaction counts from its compacted messages (usually 0 again):
/// a scenario whose conversation is compacted by the client should answer it in `order`,
/// or give the summary request its own route. Server-side compaction (`compact_20260112`)
/// keeps the messages and so the count. `count_tokens` requests take no step. A fault step
/// answers every request at its position (a `reset` at step 2 cuts every retry of it): a
/// fault meant to happen once belongs in `order`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnswerBy {
    /// The next step, in arrival order.
    #[default]
    Order,
    /// The step at the request's position in its conversation (its assistant messages).
    Turn,
}

impl AnswerBy {
    /// Whether this is the default, [`AnswerBy::Order`].
    pub fn is_order(&self) -> bool {
        *self == AnswerBy::Order
    }

    /// `"order"` or `"turn"`, as in a scenario file.
    pub fn as_str(&self) -> &'static str {
        match self {
            AnswerBy::Order => "order",
            AnswerBy::Turn => "turn",
        }
    }
}

/// A scenario file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("invalid scenario {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A fixture step names a file or exchange that cannot be used.
    #[error("scenario {path}: {message}")]
    Fixture {
        /// The scenario file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The largest scenario or fixture file [`Scenario::from_file`] reads (256 MiB): a file a
/// scenario names is input like any other, bounded.
pub const MAX_SCENARIO_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// `path` as UTF-8 text, at most [`MAX_SCENARIO_FILE_BYTES`] of it: one byte more is an error,
/// and what lies past it is never read.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let too_large = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the limit of {MAX_SCENARIO_FILE_BYTES} bytes"),
        )
    };
    let file = std::fs::File::open(path)?;
    // A regular file says its size: one over the limit is refused unread.
    if file.metadata()?.len() > MAX_SCENARIO_FILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCENARIO_FILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

impl Scenario {
    /// A scenario of these steps.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Scenario {
            steps: steps.into_iter().collect(),
            repeat_last: false,
            routes: Vec::new(),
            answer_by: AnswerBy::Order,
        }
    }

    /// This scenario answering its main steps as `answer_by` says (see [`AnswerBy`]).
    pub fn answered_by(mut self, answer_by: AnswerBy) -> Self {
        self.answer_by = answer_by;
        self
    }

    /// This scenario with `route` answering the requests that hold its marker.
    pub fn with_route(mut self, route: crate::routes::Route) -> Self {
        self.routes.push(route);
        self
    }

    /// This scenario, repeating its last step forever.
    pub fn repeating_last(mut self) -> Self {
        self.repeat_last = true;
        self
    }

    /// Reads a scenario from a JSON (`.json`) or YAML (anything else) file. Fixture paths are
    /// resolved against the file's folder, then the working directory, and loaded at once.
    ///
    /// The scenario file and every fixture it names are read up to [`MAX_SCENARIO_FILE_BYTES`];
    /// a larger one is refused before more of it is read.
    pub fn from_file(path: &Path) -> Result<Self, ScenarioError> {
        let text = read_bounded(path).map_err(|source| ScenarioError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut scenario: Scenario = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        } else {
            serde_yaml::from_str(&text).map_err(|e| e.to_string())
        }
        .map_err(|message| ScenarioError::Parse {
            path: path.to_owned(),
            message,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for step in &mut scenario.steps {
            if let Step::Fixture(fixture) = step {
                fixture
                    .load(base)
                    .map_err(|message| ScenarioError::Fixture {
                        path: path.to_owned(),
                        message,
                    })?;
            }
        }
        Ok(scenario)
    }
}

/// One answer.
// A scenario is a handful of steps built once per test; boxing the message step would cost
// every caller a `Box::new` for no measurable gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Step {
    /// A message, streamed or not as the request asks.
    Message(MessageStep),
    /// An error response: status, envelope, `retry-after`, `x-should-retry`.
    Error(ErrorStep),
    /// A recorded response replayed byte for byte.
    Fixture(FixtureStep),
    /// The connection is closed before any byte of the response.
    Reset,
}

/// A scripted message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageStep {
    /// The content blocks.
    pub content: Vec<Block>,
    /// The stop reason (default: `tool_use` if there is a tool use, else `end_turn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `stop_details` to report (e.g. a refusal's `{type: refusal, category, explanation}`;
    /// default `null`), in the `message_delta` and in a non-streamed body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_details: Option<Value>,
    /// Usage to report instead of the usage model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The model to report (default: the request's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How many characters each text, thinking or JSON delta carries (default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_chars: Option<usize>,
    /// Milliseconds between two events (a slow stream; default 0). Streamed answers only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Something to go wrong in the stream (streamed answers only: a request with
    /// `stream: false` gets the whole message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<StreamFault>,
    /// A tool search over the request's deferred tools, appended after `content` (see
    /// [`crate::tool_search`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_search: Option<crate::tool_search::ToolSearchScript>,
    /// The `diagnostics` to report instead of the computed ones (a forced cache-miss reason,
    /// e.g. `{"cache_miss_reason": {"type": "tools_changed"}}`), when the request asked for
    /// diagnostics (see [`crate::diagnostics`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Value>,
    /// The summary of a server-side compaction, when the request's `compact_20260112` edit
    /// triggers on this step (default: an extractive one; see `server_compaction`), and of an
    /// on-demand compaction (a request with `compaction`) taking this step (default: the
    /// step's text, else one naming how many messages it covers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_summary: Option<String>,
    /// `context_management` to report (`{"applied_edits": [...]}`), in the `message_delta`
    /// and in a non-streamed body (default: what the mock applied of the request's edits,
    /// absent when it has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Value>,
}

/// A content block of a scripted message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call; its input is streamed as `input_json_delta`s.
    ToolUse {
        /// The id (default: generated).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool's name.
        name: String,
        /// The input object.
        input: Value,
    },
    /// Thinking, streamed as `thinking_delta`s then one `signature_delta`.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// The signature.
        signature: String,
    },
    /// Redacted thinking, sent whole.
    RedactedThinking {
        /// The encrypted data.
        data: String,
    },
    /// A server tool call; its input is streamed as `input_json_delta`s, as the API does.
    ServerToolUse {
        /// The id (default: generated, `srvtoolu_…`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The server tool's name.
        name: String,
        /// The input object.
        input: Value,
    },
    /// A server-side `compaction` block, streamed as the API does: a start with `content:
    /// null`, one `compaction_delta` with the whole summary, a stop.
    Compaction {
        /// The summary (`None`: `null`, a failed summary).
        #[serde(default)]
        content: Option<String>,
        /// The opaque state to send back, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// Any other block (a `server_tool_use`, a `web_search_tool_result`, …), sent whole in
    /// its `content_block_start` and kept verbatim in the message.
    Verbatim {
        /// The block as the API sends it (an object with a `type`).
        block: Value,
    },
}

/// A fault injected into a streamed message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamFault {
    /// The connection is cut halfway through the first tool use's input JSON.
    CutInToolInput,
    /// The connection is cut after this many events.
    CutAfterEvents {
        /// Events sent before the cut.
        after_events: usize,
    },
    /// An `error` event replaces the rest of the stream after this many events.
    ErrorEvent {
        /// Events sent before the error.
        after_events: usize,
        /// `error.type` (default `overloaded_error`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// `error.message` (default `Overloaded`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The stream stops sending (the connection stays open) after this many events.
    Stall {
        /// Events sent before the stall.
        after_events: usize,
    },
}

/// A scripted error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorStep {
    /// The HTTP status.
    pub status: u16,
    /// `error.type` (default: the API's type for the status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// `error.message`.
    pub message: String,
    /// `retry-after`, in seconds (fractions allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<f64>,
    /// `x-should-retry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub should_retry: Option<bool>,
    /// `error.details.error_code` (e.g. `compaction_unavailable` on a 529).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

/// A recorded response (a canonical fixture exchange, `threadline-fixture/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureStep {
    /// The fixture file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Which exchange of the file (default 0).
    #[serde(default)]
    pub exchange: usize,
    /// The response, once loaded (or given inline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<RecordedResponse>,
}

/// A recorded response: status, headers, and the body as recorded — the `response` of a
/// canonical fixture exchange (`threadline-fixture/1`), read as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// The status (default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The response headers worth replaying.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// `sse` or `json`.
    pub kind: String,
    /// The SSE body, byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<String>,
    /// The JSON body: `body` in the canonical format (`json`, the name this field was read
    /// from before, is still accepted).
    #[serde(
        default,
        rename = "body",
        alias = "json",
        skip_serializing_if = "Option::is_none"
    )]
    pub json: Option<Value>,
}

impl FixtureStep {
    /// A step replaying an SSE body as recorded.
    pub fn sse(body: impl Into<String>) -> Self {
        FixtureStep {
            path: None,
            exchange: 0,
            response: Some(RecordedResponse {
                status: None,
                headers: Default::default(),
                kind: "sse".to_owned(),
                sse: Some(body.into()),
                json: None,
            }),
        }
    }

    /// A step replaying a JSON body with its status.
    pub fn json(status: Option<u16>, body: Value) -> Self {
        FixtureStep {
            path: None,
            exchange: 0,
            response: Some(RecordedResponse {
                status,
                headers: Default::default(),
                kind: "json".to_owned(),
                sse: None,
                json: Some(body),
            }),
        }
    }

    /// Loads the response from `path` (relative to `base`, or to the working directory).
    pub fn load(&mut self, base: &Path) -> Result<(), String> {
        if self.response.is_some() {
            return Ok(());
        }
        let Some(path) = &self.path else {
            return Err("a fixture step needs `path` or `response`".to_owned());
        };
        let candidates = [base.join(path), path.clone()];
        let file = candidates
            .iter()
            .find(|p| p.is_file())
            .ok_or_else(|| format!("fixture {} not found", path.display()))?;
        let text = read_bounded(file)
            .map_err(|e| format!("cannot read fixture {}: {e}", file.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("fixture {} is not JSON: {e}", file.display()))?;
        let response = value
            .get("exchanges")
            .and_then(|e| e.get(self.exchange))
            .and_then(|e| e.get("response"))
            .ok_or_else(|| {
                format!(
                    "fixture {} has no exchange {}",
                    file.display(),
                    self.exchange
                )
            })?;
        let response: RecordedResponse = serde_json::from_value(response.clone())
            .map_err(|e| format!("fixture {} exchange {}: {e}", file.display(), self.exchange))?;
        self.response = Some(response);
        Ok(())
    }
}

impl Step {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Step::message(vec![Block::Text { text: text.into() }])
    }

    /// A message of these blocks with the default stop reason.
    pub fn message(content: Vec<Block>) -> Self {
        Step::Message(MessageStep {
            content,
            stop_reason: None,
            stop_details: None,
            usage: None,
            model: None,
            chunk_chars: None,
            delay_ms: None,
            fault: None,
            tool_search: None,
            diagnostics: None,
            compaction_summary: None,
            context_management: None,
        })
    }

    /// A tool search for `query` (a pattern or a query, as the request's search tool takes)
    /// over the request's deferred tools, nothing called (see [`crate::tool_search`]).
    pub fn tool_search(query: impl Into<String>) -> Self {
        Step::message(Vec::new()).with_tool_search(crate::tool_search::ToolSearchScript::new(query))
    }

    /// A tool search for `query`, then a call of the best match with `input` (stopping with
    /// `tool_use`).
    pub fn tool_search_then_call(query: impl Into<String>, input: Value) -> Self {
        let mut script = crate::tool_search::ToolSearchScript::new(query);
        script.call = Some(input);
        Step::message(Vec::new()).with_tool_search(script)
    }

    /// This message step with a tool search after its blocks.
    pub fn with_tool_search(self, script: crate::tool_search::ToolSearchScript) -> Self {
        self.map_message(|m| m.tool_search = Some(script))
    }

    /// A tool call, stopping with `tool_use` (the id is generated).
    pub fn tool_use(name: impl Into<String>, input: Value) -> Self {
        Step::message(vec![Block::ToolUse {
            id: None,
            name: name.into(),
            input,
        }])
    }

    /// An error response.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Step::Error(ErrorStep {
            status,
            error_type: None,
            message: message.into(),
            retry_after: None,
            should_retry: None,
            error_code: None,
        })
    }

    /// 429 with `retry-after` (seconds).
    pub fn rate_limited(retry_after: f64) -> Self {
        Step::Error(ErrorStep {
            status: 429,
            error_type: None,
            message: "This request would exceed the rate limit for your organization of 40,000 input tokens per minute.".to_owned(),
            retry_after: Some(retry_after),
            should_retry: None,
            error_code: None,
        })
    }

    /// 529 `Overloaded`.
    pub fn overloaded() -> Self {
        Step::error(529, "Overloaded")
    }

    /// 500 `Internal server error`.
    pub fn internal_error() -> Self {
        Step::error(500, "Internal server error")
    }

    /// 400 `prompt is too long: N tokens > M maximum`.
    pub fn prompt_too_long(tokens: u64, maximum: u64) -> Self {
        Step::error(
            400,
            format!("prompt is too long: {tokens} tokens > {maximum} maximum"),
        )
    }

    /// A recorded SSE body, replayed byte for byte.
    pub fn replay_sse(body: impl Into<String>) -> Self {
        Step::Fixture(FixtureStep::sse(body))
    }

    /// This message step with a stop reason.
    pub fn with_stop_reason(self, reason: &str) -> Self {
        self.map_message(|m| m.stop_reason = Some(reason.to_owned()))
    }

    /// This message step with `stop_details` (a refusal's category and explanation).
    pub fn with_stop_details(self, details: Value) -> Self {
        self.map_message(|m| m.stop_details = Some(details))
    }

    /// A refusal: no content, `stop_reason: refusal` and its `stop_details`.
    pub fn refusal(category: Option<&str>, explanation: Option<&str>) -> Self {
        Step::message(Vec::new())
            .with_stop_reason("refusal")
            .with_stop_details(serde_json::json!({
                "type": "refusal",
                "category": category,
                "explanation": explanation,
            }))
    }

    /// This message step reporting `diagnostics` (when asked for) instead of the computed
    /// ones.
    pub fn with_diagnostics(self, diagnostics: Value) -> Self {
        self.map_message(|m| m.diagnostics = Some(diagnostics))
    }

    /// This message step with the summary a server-side compaction on it writes.
    pub fn with_compaction_summary(self, summary: impl Into<String>) -> Self {
        let summary = summary.into();
        self.map_message(|m| m.compaction_summary = Some(summary))
    }

    /// This message step with a fault.
    pub fn with_fault(self, fault: StreamFault) -> Self {
        self.map_message(|m| m.fault = Some(fault))
    }

    /// This message step with a delay between events.
    pub fn with_delay_ms(self, delay_ms: u64) -> Self {
        self.map_message(|m| m.delay_ms = Some(delay_ms))
    }

    /// This message step with deltas of `chars` characters.
    pub fn with_chunk_chars(self, chars: usize) -> Self {
        self.map_message(|m| m.chunk_chars = Some(chars))
    }

    /// This error step with `x-should-retry`.
    pub fn with_should_retry(mut self, should_retry: bool) -> Self {
        if let Step::Error(e) = &mut self {
            e.should_retry = Some(should_retry);
        }
        self
    }

    /// This error step with `error.details.error_code` (a 529 with `compaction_unavailable`,
    /// the transient failure of an on-demand compaction).
    pub fn with_error_code(mut self, code: impl Into<String>) -> Self {
        if let Step::Error(e) = &mut self {
            e.error_code = Some(code.into());
        }
        self
    }

    fn map_message(mut self, f: impl FnOnce(&mut MessageStep)) -> Self {
        if let Step::Message(m) = &mut self {
            f(m);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fixture_over_the_limit_is_refused_without_being_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A sparse file one byte over the limit, refused from its size (reading it would take
        // 256 MiB).
        let big = dir.path().join("big.json");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(super::MAX_SCENARIO_FILE_BYTES + 1))
            .expect("sparse file");
        let scenario = dir.path().join("scenario.yaml");
        std::fs::write(&scenario, "steps:\n  - kind: fixture\n    path: big.json\n")
            .expect("scenario");
        let error = super::Scenario::from_file(&scenario)
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("larger than the limit of 268435456 bytes"),
            "{error}"
        );
        let error = super::Scenario::from_file(&big)
            .expect_err("refused")
            .to_string();
        assert!(error.contains("larger than the limit"), "{error}");
    }

    use super::*;

    #[test]
    fn yaml_and_json_read_the_same_scenario() {
        let yaml = r#"
steps:
  - kind: message
    content:
      - {type: thinking, thinking: "hm", signature: "sig"}
      - {type: tool_use, name: ls, input: {path: "."}}
    fault: {type: cut_in_tool_input}
  - {kind: error, status: 429, message: slow, retry_after: 1.5}
  - kind: reset
"#;
        let from_yaml: Scenario = serde_yaml::from_str(yaml).expect("valid YAML");
        let json = serde_json::to_string(&from_yaml).expect("serializes");
        let from_json: Scenario = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(from_yaml, from_json);
        assert_eq!(from_yaml.steps.len(), 3);
        assert!(matches!(from_yaml.steps[2], Step::Reset));
    }

    /// The workspace's `fixtures/canonical` folder.
    fn canonical() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/canonical")
    }

    #[test]
    fn a_canonical_json_response_is_loaded_with_its_body() {
        let path = "anthropics__anthropic-sdk-typescript/ToolRunner.json";
        let text = std::fs::read_to_string(canonical().join(path)).expect("the fixture exists");
        let fixture: Value = serde_json::from_str(&text).expect("the fixture is JSON");
        assert_eq!(fixture["format"], "threadline-fixture/1");
        let recorded = &fixture["exchanges"][0]["response"];
        assert_eq!(recorded["kind"], "json");
        assert!(
            recorded["body"].is_object(),
            "the canonical body is under `body`"
        );

        let mut step = FixtureStep {
            path: Some(path.into()),
            exchange: 0,
            response: None,
        };
        step.load(&canonical()).expect("the fixture loads");
        let response = step.response.expect("loaded");
        assert_eq!(response.kind, "json");
        assert_eq!(response.status, Some(200));
        assert_eq!(response.sse, None);
        assert_eq!(response.json.as_ref(), Some(&recorded["body"]));
        assert_eq!(
            response.json.as_ref().map(|b| &b["type"]),
            Some(&"message".into())
        );
    }

    #[test]
    fn a_json_body_under_json_is_still_read_and_written_as_body() {
        let inline = r#"
steps:
  - kind: fixture
    response: {kind: json, status: 400, json: {type: error}}
"#;
        let scenario: Scenario = serde_yaml::from_str(inline).expect("valid YAML");
        let Step::Fixture(step) = &scenario.steps[0] else {
            panic!("a fixture step");
        };
        let body = serde_json::json!({"type": "error"});
        assert_eq!(
            step.response.as_ref().and_then(|r| r.json.as_ref()),
            Some(&body)
        );
        let written = serde_json::to_value(&scenario).expect("serializes");
        assert_eq!(written["steps"][0]["response"]["body"], body);
        let again: Scenario = serde_json::from_value(written).expect("reads back");
        assert_eq!(again, scenario);
    }
}
