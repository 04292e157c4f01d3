//! What the loop's stream yields.

use threadline_message::Message;
use threadline_wire::StreamEvent;

use crate::state::State;
use crate::terminal::Terminal;
use crate::transition::Transition;

/// How an [`Event::Warning`] saying that a message could not be written to the session's
/// transcript begins (the writer's error follows): a session that cannot be recorded is one
/// a caller may want to fail.
pub const TRANSCRIPT_WARNING: &str = "transcript: ";

/// How an [`Event::Warning`] saying that the API refused a thinking block as bound to a
/// different conversation, and that the request is retried asking it to drop such blocks,
/// begins (the API's error follows).
pub const DROP_BLOCK_WARNING: &str =
    "thinking binding: retrying with prefix_mismatch_behavior drop_block after: ";

/// One event of a run, in the order things happened.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Event {
    /// A message was appended to the history (and written to the transcript): the input,
    /// assistant fragments (one per content block), tool results, attachments, compaction
    /// boundaries, recovery messages, tombstones.
    Message(Message),
    /// A message already in the history was changed in place by a context step (the
    /// tool-result budget's preview, microcompact's clearing), keeping its id: `message` is
    /// what now stands at `index` of the history. The loop records it again in the transcript;
    /// whoever keeps the history from the events (a session store) records it too, so that
    /// what was recorded reads back as the history the loop holds
    /// ([`fold_rewrites`](threadline_message::fold_rewrites)).
    Rewritten {
        /// Its index in the history.
        index: usize,
        /// The message as it now is.
        message: Message,
    },
    /// A raw event of the model's stream, as it arrived (text deltas, for UIs).
    Stream(Box<StreamEvent>),
    /// A request is about to be sent.
    Request(RequestInfo),
    /// A tool call started: its input fits the schema; the permission check is the first
    /// thing it does (a denial becomes its error result).
    ToolStarted {
        /// The tool use id.
        tool_use_id: String,
        /// The tool's name.
        name: String,
    },
    /// Tool progress (a `Progress` message: for UIs, not kept in the history).
    Progress(Message),
    /// The loop goes round again, and why.
    Transition(Transition),
    /// A response's cache diagnostics beside the loop's own break detection (after its
    /// `cache_diagnosis` record is appended).
    CacheDiagnosis(crate::cache_diagnosis::CacheDiagnosisReport),
    /// A context step or the transcript failed; the loop went on without it. A transcript
    /// failure's text starts with [`TRANSCRIPT_WARNING`].
    Warning(String),
    /// The offered tools changed for the request about to be sent, and how the change
    /// reached the model (an appended `system` message, or a changed `tools` array and the
    /// cache break it causes).
    ToolsChanged(crate::tool_changes::ToolsChanged),
    /// The run ended: why, and the state to continue the session from. Always the last
    /// event.
    Finished(Box<Finished>),
}

/// The end of a run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Finished {
    /// Why it ended.
    pub terminal: Terminal,
    /// The state, to start the next run from.
    pub state: State,
}

impl Finished {
    /// The end of a run that ended for `terminal` with `state` (the loop builds its own; a
    /// driver that refuses to start a run reports it with one).
    pub fn new(terminal: Terminal, state: State) -> Finished {
        Finished { terminal, state }
    }
}

/// What is known about a request when it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestInfo {
    /// Turns completed in the session before this request.
    pub turn: u32,
    /// The messages in the request.
    pub messages: usize,
    /// Its `max_tokens`.
    pub max_tokens: u64,
}
