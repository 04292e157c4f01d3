//! Durable agent sessions on [Restate](https://restate.dev): a Virtual Object `Session` keyed
//! by session id drives the query loop step by step; each model call and each tool call is a
//! journaled step, so a session survives a crash and continues on another worker without
//! repeating a model call or a tool's side effect.
#![forbid(unsafe_code)]

mod journal;
mod journal_recording;
mod journal_restate;
mod session;
mod worker;

pub use journal::{Journal, JournalError, ReadState};
pub use journal_recording::{Crash, RecordingJournal};
pub use journal_restate::{RestateJournal, SharedReader};
pub use session::{
    MAX_STEP_BYTES, PermissionMode, SessionView, ShowRequest, StepRecord, TurnError, TurnOutcome,
    TurnRequest, run_turn, show,
};
pub use worker::{ModelBackend, ServeError, Worker, serve};
mod admin;
mod http;
mod ingress;

pub use admin::Admin;
pub use http::{ClientError, DEFAULT_TIMEOUT, MAX_RESPONSE_BYTES};
pub use ingress::{Ingress, InvocationId, Output};
