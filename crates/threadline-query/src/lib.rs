//! The tool-calling query loop of an LLM agent: it owns the message array from the user's
//! input to the model's final answer, runs the model's tool calls while the answer is still
//! streaming, recovers from the errors that can be recovered from, and never leaves an
//! invalid history behind.
//!
//! - An explicit [`State`] (history, turn count, compaction tracking, recovery counters,
//!   output-limit override, stop-hook flag, the path of [`Transition`]s taken).
//! - Every way to go round again is a [`Transition`]; every way to stop is a [`Terminal`].
//! - Generic over the service contract ([`MessagesService`]): the HTTP client, a mock
//!   server's client, or the in-process [`scripted::ScriptedService`].
//! - [`Tool`]s with a JSON schema (inputs are checked before the call), a concurrency flag
//!   per input and a permission verdict; the [`PermissionCallback`] decides.
//! - Hooks with no-op defaults for what other crates provide: the [`ContextPolicy`]
//!   (compaction), the [`RequestShaper`] and [`CachePlanner`], the [`AttachmentHook`], and
//!   [`StopHook`]s.
//! - The real hooks, ready to plug in: [`SharedPlanner`] (cache markers, `threadline-cache`)
//!   and [`SharedDivergence`] (cache-break detection) always; `CompactionPolicy` (feature
//!   `compact`, `threadline-compact`) and `ContextShaper`/`CollectorHook` (feature `attach`,
//!   `threadline-attach`).
//!
//! ## Feature flags
//!
//! - `compact`: `CompactionPolicy` and `CompactionMemory`, the [`ContextPolicy`] of
//!   `threadline-compact` (budget, microcompact, autocompact with a model-written summary,
//!   blocking limit, reactive compact).
//! - `attach`: `ContextShaper`, `AttachmentSources` and `CollectorHook`, the context message
//!   and per-turn attachments of `threadline-attach`.
//!
//! ```
//! use futures::StreamExt as _;
//! use threadline_message::Message;
//! use threadline_query::scripted::{Reply, Response, ScriptedService};
//! use threadline_query::{Event, Query, QueryConfig, State, Terminal, Transition};
//! use threadline_query::tool::{self, Tool, ToolContext, ToolOutput, ToolStream};
//! use threadline_wire::StopReason;
//!
//! struct Clock;
//! impl Tool for Clock {
//!     fn name(&self) -> &str { "clock" }
//!     fn description(&self) -> &str { "The time." }
//!     fn input_schema(&self) -> serde_json::Value { serde_json::json!({"type": "object"}) }
//!     fn is_concurrency_safe(&self, _input: &serde_json::Value) -> bool { true }
//!     fn call(&self, _input: serde_json::Value, _ctx: ToolContext) -> ToolStream {
//!         tool::result(async { ToolOutput::text("12:00") })
//!     }
//! }
//!
//! let service = ScriptedService::new([
//!     Reply::stream(Response::new("msg_1").tool_use("toolu_1", "clock", serde_json::json!({})).stop(StopReason::ToolUse)),
//!     Reply::stream(Response::new("msg_2").text("It is noon.").stop(StopReason::EndTurn)),
//! ]);
//! let query = Query::new(service.clone(), QueryConfig::new("claude-sonnet-4-5", 1024)).with_tool(Clock);
//! let events: Vec<Event> = futures::executor::block_on(
//!     query.run(State::default(), vec![Message::user_text("What time is it?")]).collect(),
//! );
//! let Some(Event::Finished(finished)) = events.last() else { panic!("the last event is Finished") };
//! assert_eq!(finished.terminal, Terminal::Completed);
//! assert_eq!(finished.state.path, [Transition::NextTurn]);
//! assert!(service.violations().is_empty()); // every request would have been accepted
//! ```
#![forbid(unsafe_code)]

#[cfg(feature = "attach")]
mod attachment_hook;
mod break_detection;
pub mod cache_diagnosis;
mod cache_planning;
#[cfg(feature = "compact")]
mod compaction_policy;
pub mod config;
pub mod context_policy;
pub mod event;
mod executor;
pub mod hooks;
pub mod permission;
mod query;
pub mod recovery;
pub mod request_hooks;
pub mod run;
pub mod schema;
pub mod scripted;
mod server_compaction;
pub mod state;
pub mod subagent;
mod telemetry;
pub mod terminal;
pub mod token_budget;
pub mod tool;
pub mod tool_changes;
pub mod tool_search;
pub mod transition;

#[cfg(feature = "attach")]
pub use attachment_hook::{AttachmentSources, CollectorHook, ContextShaper};
pub use break_detection::SharedDivergence;
pub use cache_diagnosis::{Agreement, BreakDetector, CacheDiagnosisReport, Prediction};
pub use cache_planning::SharedPlanner;
#[cfg(feature = "compact")]
pub use compaction_policy::{CompactionMemory, CompactionPolicy};
pub use config::QueryConfig;
pub use context_policy::{ContextPolicy, NoPolicy, PolicyError, StepInput, StepOutcome};
pub use event::{Event, Finished, RequestInfo};
pub use hooks::{AttachmentHook, NoAttachments, StopContext, StopDecision, StopHook};
pub use permission::{AllowAll, NonInteractive, Permission, PermissionCallback, PermissionRequest};
pub use query::Query;
pub use request_hooks::{CachePlanner, RequestShaper};
pub use run::Run;
pub use state::State;
pub use subagent::{SubagentConfig, SubagentType, TaskTool};
pub use terminal::Terminal;
pub use threadline_wire::service::MessagesService;
pub use token_budget::TokenBudget;
pub use tokio_util::sync::CancellationToken;
pub use tool::{Tool, ToolContext, ToolEvent, ToolOutput, ToolSet, ToolStream};
pub use tool_changes::{ToolChangeVia, ToolChanges, ToolsChanged};
pub use transition::Transition;
