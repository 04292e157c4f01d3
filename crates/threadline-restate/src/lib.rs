//! Durable agent sessions on [Restate](https://restate.dev): a Virtual Object `Session` keyed
//! by session id drives the query loop step by step; each model call and each tool call is a
//! journaled step, so a session survives a crash and continues on another worker without
//! repeating a model call or a tool's side effect.
//!
//! The turn driver runs on any [`Journal`]: [`RestateJournal`] inside the `Session` object
//! that [`serve`] binds, or [`RecordingJournal`] in memory, which replays a recorded prefix
//! after a simulated crash:
//!
//! ```
//! use futures::executor::block_on;
//! use threadline_query::QueryConfig;
//! use threadline_query::scripted::{Reply, Response, ScriptedService};
//! use threadline_restate::{Crash, RecordingJournal, TurnRequest, Worker, run_turn};
//! use threadline_wire::StopReason;
//!
//! let model = ScriptedService::new([
//!     Reply::stream(Response::new("msg_1").text("Hello.").stop(StopReason::EndTurn)),
//! ]);
//! let worker = Worker::new(model.clone(), QueryConfig::new("claude-sonnet-4-5", 1024));
//! let journal = RecordingJournal::new();
//! journal.crash(Crash::Before(1)); // the worker dies before the model step
//! journal.begin();
//! assert!(block_on(run_turn(&journal, &worker, "s1", TurnRequest::new("Hi"))).is_err());
//! journal.begin(); // the next attempt replays the clock step and runs the model once
//! let outcome = block_on(run_turn(&journal, &worker, "s1", TurnRequest::new("Hi")));
//! let outcome = outcome.map_err(|e| e.to_string())?;
//! journal.complete();
//! assert_eq!((outcome.text.as_str(), outcome.turns), ("Hello.", 1));
//! assert_eq!(journal.executed(), ["clock", "model#0"]);
//! assert_eq!(model.requests().len(), 1);
//! # Ok::<(), String>(())
//! ```
#![forbid(unsafe_code)]

mod admin;
mod http;
mod identity;
mod ingress;
mod journal;
mod journal_recording;
mod journal_restate;
mod session;
mod store;
mod worker;

pub use admin::Admin;
pub use http::{ClientError, DEFAULT_TIMEOUT, MAX_RESPONSE_BYTES};
pub use identity::{IdentityKey, IdentityKeyError};
pub use ingress::{Ingress, InvocationId, Output};
pub use journal::{Journal, JournalError, ReadState};
pub use journal_recording::{Crash, RecordingJournal};
pub use journal_restate::{RestateJournal, SharedReader};
pub use session::{
    DEFAULT_SESSION_CACHE_BYTES, JournaledService, MAX_STEP_BYTES, PermissionMode,
    SessionCacheStats, SessionView, ShowRequest, StepRecord, TurnError, TurnLoop, TurnOutcome,
    TurnRequest, run_turn, show,
};
pub use store::{
    MAX_APPEND_REQUEST_BYTES, RestateStore, SESSION_INDEX, SESSION_LOG, SessionIndex, SessionLog,
    bind_store,
};
pub use worker::{ModelBackend, ServeError, Worker, is_loopback, serve};
