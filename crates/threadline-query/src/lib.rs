//! The tool-calling query loop of an LLM agent: it owns the message array from the user's
//! input to the model's final answer, runs the model's tool calls while the answer is still
//! streaming, recovers from the errors that can be recovered from, and never leaves an
//! invalid history behind.
//!
//! - An explicit [`State`] (history, turn count, compaction tracking, recovery counters,
//!   output-limit override, stop-hook flag, the path of [`Transition`]s taken).
//! - Every way to go round again is a [`Transition`]; every way to stop is a [`Terminal`].
//! - Generic over the service contract ([`MessagesService`]): the HTTP client, a mock
//!   server's client, or the in-process `scripted::ScriptedService` (feature `scripted`).
//! - [`Tool`]s with a JSON schema (inputs are checked before the call), a concurrency flag
//!   per input and a permission verdict; the [`PermissionCallback`] decides. A typed tool
//!   ([`typed_tool`] from an async closure, or a [`TypedTool`] wrapped in [`Typed`]) takes a
//!   `Deserialize + JsonSchema` input whose schema `schemars` derives; bad input is an error
//!   result the model reads.
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
//! use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
//! use threadline_wire::StopReason;
//!
//! struct Clock;
//! impl Tool for Clock {
//!     fn name(&self) -> &str { "clock" }
//!     fn description(&self) -> &str { "The time." }
//!     fn input_schema(&self) -> serde_json::Value { serde_json::json!({"type": "object"}) }
//!     fn is_concurrency_safe(&self, _input: &serde_json::Value) -> bool { true }
//!     fn call(&self, _input: serde_json::Value, _ctx: ToolContext) -> ToolStream {
//!         tool_result(async { ToolOutput::text("12:00") })
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
//!
//! # Paths
//!
//! Every type, trait and function a user names is at the crate root, under one path. Four
//! modules are public because they are namespaces, not places: their items read best with
//! the module's name in front and would be ambiguous at the root.
//!
//! - [`recovery`]: the recovery ladder's limits, decisions and the fixed texts the loop writes
//!   into the history (`recovery::INTERRUPTED`, `recovery::MAX_PAUSE_TURN_RESUMES`).
//! - [`schema`]: the JSON Schema subset tool inputs are checked against (`schema::check`).
//! - [`tool_search`]: the defer policy of tool definitions (`tool_search::apply`,
//!   `tool_search::definitions`, `tool_search::ToolSearchConfig`).
//! - `scripted` (feature `scripted`): the in-process test double of the Messages service.
//!
//! Two foreign types appear in signatures and are re-exported at the root:
//! [`CancellationToken`] (`tokio-util`) and [`BoxFuture`] (`futures`). `serde_json::Value`
//! (tool inputs and schemas) and `futures::Stream` (a [`Run`] is one) are the ecosystem's
//! vocabulary and are not.
//!
//! Constants that belong to a type are associated with it (`QueryConfig::DEFAULT_MAX_STOP_HOOK_BLOCKS`,
//! `Permission::NOT_GRANTED`, `SubagentType::FORK`, `ToolChanges::MAX_PENDING`).
#![forbid(unsafe_code)]

#[cfg(feature = "attach")]
mod attachment_hook;
mod break_detection;
mod cache_diagnosis;
mod cache_planning;
#[cfg(feature = "compact")]
mod compaction_policy;
mod config;
mod context_policy;
mod event;
mod executor;
mod hooks;
mod permission;
mod query;
pub mod recovery;
mod request_builder;
mod request_hooks;
mod run;
pub mod schema;
#[cfg(feature = "scripted")]
pub mod scripted;
mod server_compaction;
mod state;
mod subagent;
mod telemetry;
mod terminal;
mod token_budget;
mod tool;
mod tool_changes;
pub mod tool_search;
mod transition;
mod typed;

#[cfg(feature = "attach")]
pub use attachment_hook::{AttachmentSources, CollectorHook, ContextShaper};
pub use break_detection::SharedDivergence;
pub use cache_diagnosis::{Agreement, BreakDetector, CacheDiagnosisReport, NoDetector, Prediction};
pub use cache_planning::SharedPlanner;
#[cfg(feature = "compact")]
pub use compaction_policy::{CompactionMemory, CompactionPolicy};
pub use config::QueryConfig;
pub use context_policy::{ContextPolicy, NoPolicy, PolicyError, StepInput, StepOutcome};
pub use event::{DROP_BLOCK_WARNING, Event, Finished, RequestInfo, TRANSCRIPT_WARNING};
/// The boxed future the hook traits return ([`ContextPolicy`], [`AttachmentHook`],
/// [`StopHook`], [`PermissionCallback`]): `futures`' alias for
/// `Pin<Box<dyn Future<Output = T> + Send + 'a>>`, re-exported so implementing a hook needs
/// no dependency of its own (`Box::pin(async move { … })` builds one).
pub use futures::future::BoxFuture;
pub use hooks::{AttachmentHook, NoAttachments, StopContext, StopDecision, StopHook};
pub use permission::{
    AllowAll, NonInteractive, Permission, PermissionCallback, PermissionRequest,
    from_async as permission_from_async,
};
pub use query::Query;
pub use request_builder::RequestBuilder;
pub use request_hooks::{CachePlanner, RequestShaper, Unchanged};
pub use run::Run;
/// The JSON Schema derive of typed tools' inputs (schemars 0.8), re-exported so the
/// version always matches [`typed_tool`]'s bound.
pub use schemars::{self, JsonSchema};
pub use state::{
    CompactionTracking, MAX_REFILLS_IN_A_ROW, RecoveryCounters, State, is_compact_boundary,
};
pub use subagent::{QueryFactory, SubagentConfig, SubagentType, TaskTool, agent_id};
pub use terminal::Terminal;
pub use threadline_wire::service::MessagesService;
pub use token_budget::TokenBudget;
/// The token that aborts a run ([`Query::with_cancellation`]) and each tool call
/// ([`ToolContext::cancel`], a child of the run's): `tokio-util`'s `CancellationToken` (0.7),
/// re-exported so a caller needs no dependency of its own. It needs no runtime; cancelling it
/// wakes every `cancelled()` future.
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    ProgressSender, Tool, ToolContext, ToolEvent, ToolOutput, ToolSet, ToolStream,
    result as tool_result, with_progress as tool_with_progress,
};
pub use tool_changes::{
    ServerConnection, ToolChangeVia, ToolChanges, ToolsChanged, offered as offered_tools,
};
pub use transition::Transition;
pub use typed::{
    FnTool, IntoToolOutput, Typed, TypedTool, call_typed, parse_args as parse_tool_args,
    schema_for as tool_schema_for, typed_tool,
};
