//! The Virtual Object `Session`, keyed by session id: the exclusive handler `turn` runs one
//! turn of the existing query loop durably, the shared handler `show` inspects a session,
//! also while a turn runs.
//!
//! - Each model call is the journaled step `model#{n}` whose value is the accumulated message
//!   (or the error, as a value, so a replay takes the same recovery path).
//! - Each tool call is the journaled step `tool:{tool_use_id}` whose value is the result. A
//!   non-idempotent tool ([`Tool::is_idempotent`](threadline_query::Tool::is_idempotent)) is
//!   preceded by the marker step `started:{tool_use_id}`: when the marker is replayed but the
//!   result is not, an earlier attempt died mid-call, and the model is told the call was
//!   interrupted ([`INTERRUPTED`](threadline_query::recovery::INTERRUPTED)) instead of the
//!   tool running again. Idempotent tools just run again.
//! - Tool calls are served one at a time, in the order the loop starts them (the loop's
//!   concurrency-safe calls are serialized in durable mode).
//! - Ids and timestamps of the turn's messages derive from (session id, turn number) and the
//!   journaled turn time, so a replay builds byte-identical requests.
//! - A permission question is an awakeable whose id is in the state (`ask`): resolve it with
//!   `POST {ingress}/restate/awakeables/{id}/resolve` and `{"allow": true}` or
//!   `{"allow": false, "reason": "…"}`.
//! - Cancelling the invocation aborts the loop, which writes its own synthetic results; the
//!   valid history is persisted and the turn answers with an aborted terminal.

mod bridge;
pub(crate) mod cache;
pub(crate) mod driver;
mod memo;
mod records;
pub(crate) mod state;
#[cfg(test)]
mod tests;
mod turn_loop;

use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::{
    HandlerError, HandlerResult, Json, ObjectContext, SharedObjectContext, TerminalError,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use threadline_query::Terminal;

pub use bridge::{JournaledService, PermissionMode};
pub use cache::{DEFAULT_SESSION_CACHE_BYTES, SessionCacheStats};
pub use records::{MAX_STEP_BYTES, StepRecord};
pub(crate) use turn_loop::ConfigLoop;
pub use turn_loop::TurnLoop;

use crate::journal::{Journal, JournalError, ReadState};
use crate::journal_restate::{RestateJournal, SharedReader};
use crate::worker::ModelBackend;

/// The body of `turn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnRequest {
    /// The user's prompt.
    pub prompt: String,
    /// The client's id for this turn: a turn sent again with the id of the last completed
    /// turn answers that turn's outcome instead of running again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

impl TurnRequest {
    /// A turn with `prompt` and no id.
    pub fn new(prompt: impl Into<String>) -> TurnRequest {
        TurnRequest {
            prompt: prompt.into(),
            turn_id: None,
        }
    }

    /// The same turn with the client's id.
    pub fn with_turn_id(mut self, turn_id: impl Into<String>) -> TurnRequest {
        self.turn_id = Some(turn_id.into());
        self
    }
}

/// The answer of `turn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnOutcome {
    /// Why the loop stopped (`{"terminal": "completed"}`, …).
    pub terminal: Terminal,
    /// Completed turns of the session, this one included.
    pub turns: u32,
    /// The text of the last response.
    pub text: String,
    /// Messages in the history.
    pub messages: usize,
    /// The request's turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// The body of `show` (`{}` for everything).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ShowRequest {
    /// The first message index to return (0 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<usize>,
}

impl ShowRequest {
    /// Messages from index `since` on.
    pub fn since(since: usize) -> ShowRequest {
        ShowRequest { since: Some(since) }
    }
}

/// The answer of `show`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionView {
    /// `idle`, `running` or `waiting_for_permission`.
    pub status: String,
    /// Completed turns.
    pub turns: u32,
    /// Messages in the history (written when a turn finishes).
    pub message_count: usize,
    /// The index of the first message returned.
    pub since: usize,
    /// The messages from `since` on (their JSON), at most [`MAX_STEP_BYTES`] of them.
    pub messages: Vec<Value>,
    /// Where to continue when the messages were cut at the size limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<usize>,
    /// The step log of the current (or last) turn.
    pub steps: Vec<StepRecord>,
    /// The pending question: `{awakeable_id, tool, tool_use_id, input, prompt}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<Value>,
}

/// Why a turn failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The journal failed (the attempt is over; the engine retries it).
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A state key does not hold what the session wrote.
    #[error("the session state `{key}` is corrupt: {message}")]
    CorruptState {
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The prompt is over the journal's size limit.
    #[error("the prompt ({bytes} bytes) is over the limit of {limit} bytes")]
    PromptTooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The loop broke its contract.
    #[error("the loop failed: {0}")]
    Loop(String),
}

impl TurnError {
    /// Whether retrying the invocation cannot help.
    pub fn is_terminal(&self) -> bool {
        !matches!(self, TurnError::Journal(JournalError::Abandoned(_)))
    }
}

fn handler_error(error: TurnError) -> HandlerError {
    match error {
        TurnError::Journal(JournalError::Abandoned(message)) => {
            HandlerError::from(std::io::Error::other(message))
        }
        TurnError::PromptTooLarge { .. } => {
            TerminalError::new_with_code(400, error.to_string()).into()
        }
        other => TerminalError::new(other.to_string()).into(),
    }
}

/// What a worker's sessions run with.
pub(crate) struct Settings {
    pub(crate) backend: Arc<dyn ModelBackend>,
    /// The loop of [`Worker::new`](crate::Worker::new), which the `with_*` setters edit.
    pub(crate) plain: ConfigLoop,
    /// The loop that replaces it ([`Worker::with_turn_loop`](crate::Worker::with_turn_loop)).
    pub(crate) custom: Option<Arc<dyn TurnLoop>>,
    pub(crate) permission: PermissionMode,
    pub(crate) step_delay: Duration,
    pub(crate) max_step_bytes: usize,
    pub(crate) observer: Option<StepObserver>,
    /// Tools the operator declared idempotent, beside those that say so themselves.
    pub(crate) idempotent: std::collections::BTreeSet<String>,
    /// The sessions this worker ran last, kept warm (shared by the worker's clones).
    pub(crate) sessions: Arc<cache::SessionCache>,
}

impl Settings {
    /// The loop the turns run.
    pub(crate) fn turn_loop(&self) -> &dyn TurnLoop {
        match &self.custom {
            Some(custom) => custom.as_ref(),
            None => &self.plain,
        }
    }
}

/// Called after each journaled step (replayed ones included), before the step delay.
pub(crate) type StepObserver = Arc<dyn Fn(&StepRecord) + Send + Sync>;

/// Runs one turn of session `session` on any [`Journal`] (the object's handler uses
/// [`RestateJournal`]; tests use [`RecordingJournal`](crate::RecordingJournal)).
pub async fn run_turn<J: Journal>(
    journal: &J,
    worker: &crate::Worker,
    session: &str,
    request: TurnRequest,
) -> Result<TurnOutcome, TurnError> {
    driver::run_turn(journal, worker.settings(), session, request).await
}

/// The inspection view of a session on any [`ReadState`].
pub async fn show(
    reader: &impl ReadState,
    request: &ShowRequest,
) -> Result<SessionView, TurnError> {
    state::show(reader, request, MAX_STEP_BYTES).await
}

/// The Virtual Object (bound by [`serve`](crate::serve)).
pub(crate) struct Session {
    pub(crate) settings: Arc<Settings>,
}

#[restate_sdk::object(name = "Session")]
impl Session {
    /// Runs one turn (exclusive: turns of one session never overlap).
    #[handler]
    async fn turn(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<TurnRequest>,
    ) -> HandlerResult<Json<TurnOutcome>> {
        let session = ctx.key().to_owned();
        let journal = RestateJournal::new(ctx);
        driver::run_turn(&journal, &self.settings, &session, request.into_inner())
            .await
            .map(Json)
            .map_err(handler_error)
    }

    /// The session's status, history and current step log (shared: runs while a turn runs).
    #[handler]
    async fn show(
        &self,
        ctx: SharedObjectContext<'_>,
        request: Json<ShowRequest>,
    ) -> HandlerResult<Json<SessionView>> {
        let reader = SharedReader::new(ctx);
        state::show(&reader, &request.into_inner(), MAX_STEP_BYTES)
            .await
            .map(Json)
            .map_err(handler_error)
    }
}
