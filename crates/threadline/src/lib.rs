//! threadline owns the message array of an LLM agent talking to the Anthropic Messages API.
//! This crate is the front door: every threadline crate behind one name (each a module behind
//! a feature of the same name; `full`, the default, turns on all of them), and an [`Agent`]
//! builder that wires them into a working tool-calling loop.
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | `wire` | `threadline-wire` | API types, SSE, accumulator, model table, betas, service contract |
//! | `validate` | `threadline-validate` | the API's acceptance rules checked offline, in its words |
//! | `message` | `threadline-message` | the internal message array, transcripts |
//! | `normalize` | `threadline-normalize` | internal array → a valid `messages` array |
//! | `workspace` | `threadline-workspace` | workspace confinement, bounded reads, the read-only git runner |
//! | `attach` | `threadline-attach` | context channels, attachment sources |
//! | `cache` | `threadline-cache` | cache-marker planning, the prompt-cache simulator |
//! | `compact` | `threadline-compact` | budget, snip, microcompact, autocompact, reactive compact |
//! | `client` | `threadline-client` | the Messages API over HTTP (retries, timeouts) |
//! | `mock` | `threadline-mock` | a mock Messages API on loopback (not in `full`) |
//! | `query` | `threadline-query` | the loop: state, transitions, terminals, streaming tools |
//! | `tools` | `threadline-tools` | read, list, glob, grep, write, edit, shell |
//! | `store` | `threadline-store` | the `SessionStore` contract, JSONL/SQLite/memory backends |
//! | `inspect` | `threadline-inspect` | a recorded session's tokens, cache and cost, as typed reports |
//! | `mcp` | `threadline-mcp` | MCP servers as loop tools, the approval policy (not in `full`) |
//! | `restate` | `threadline-restate` | durable sessions on Restate (not in `full`) |
//!
//! The [`Agent`] (feature `agent`) is the loop of `threadline-query` with the real hooks: a
//! context policy backed by `threadline-compact` (its autocompact summary is a model call
//! through the agent's own service), the cache planner of `threadline-cache`, and the
//! attachment collector of `threadline-attach`. A dozen lines give a working agent; here
//! against the in-process scripted service (use `threadline::client::Client` for the API, or
//! a `threadline::mock::MockServer`'s base URL):
//!
//! ```
//! use futures::StreamExt as _;
//! use threadline::query::scripted::{Reply, Response, ScriptedService};
//! use threadline::tools::ShellAccess;
//! use threadline::{Agent, Event, StopReason, Terminal, Transition};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("notes.txt"), "buy milk\n")?;
//! let service = ScriptedService::new([
//!     Reply::stream(Response::new("msg_1")
//!         .tool_use("toolu_1", "Read", serde_json::json!({"path": "notes.txt"}))
//!         .stop(StopReason::ToolUse)),
//!     Reply::stream(Response::new("msg_2").text("You need milk.").stop(StopReason::EndTurn)),
//! ]);
//! let mut agent = Agent::builder(service.clone())
//!     .system_prompt("You help with notes.")
//!     .workspace(dir.path())
//!     .builtin_tools(ShellAccess::Ask)
//!     .build()?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let events: Vec<Event> = rt.block_on(agent.run("What do I need?").collect());
//! let Some(Event::Finished(finished)) = events.last() else { panic!("always last") };
//! assert_eq!(finished.terminal, Terminal::Completed);
//! assert_eq!(finished.state.path, [Transition::NextTurn]);
//! assert!(service.violations().is_empty()); // every request passed `validate`
//! # Ok(())
//! # }
//! ```
//!
//! `examples/agent.rs` runs the same agent against the mock server over loopback with the
//! HTTP client.
//!
//! One call for the answer: [`Agent::prompt`] runs the loop to its end and returns an
//! [`Answer`] (the last response's text, the tokens summed over the run's responses, their
//! cost by the model table's prices, the [`Terminal`], the turns). A tool's input can be a
//! Rust type whose JSON schema `schemars` derives ([`query::typed_tool`]); an input that does
//! not fit is an error result the model reads.
//!
//! ```
//! use serde::Deserialize;
//! use threadline::query::scripted::{Reply, Response, ScriptedService};
//! use threadline::query::{JsonSchema, typed_tool};
//! use threadline::{Agent, StopReason, Terminal};
//!
//! /// The weather of a city.
//! #[derive(Deserialize, JsonSchema)]
//! #[schemars(crate = "threadline::query::schemars")] // or a `schemars = "0.8"` dependency
//! struct Weather {
//!     /// The city.
//!     city: String,
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = ScriptedService::new([
//!     Reply::stream(Response::new("msg_1")
//!         .tool_use("toolu_1", "weather", serde_json::json!({"city": "Lyon"}))
//!         .stop(StopReason::ToolUse)),
//!     Reply::stream(Response::new("msg_2").text("Sunny in Lyon.").stop(StopReason::EndTurn)),
//! ]);
//! let agent = Agent::builder(service)
//!     .tool(typed_tool("weather", "The weather in a city.", |args: Weather, _ctx| async move {
//!         format!("{}: sunny, 21 °C", args.city)
//!     }))
//!     .build()?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let answer = rt.block_on(agent.prompt("Weather in Lyon?"))?;
//! assert_eq!(answer.text, "Sunny in Lyon.");
//! assert_eq!((answer.terminal, answer.turns, answer.usage.responses), (Terminal::Completed, 1, 2));
//! assert!(answer.cost > 0.0); // US dollars, by the model table's prices
//! # Ok(())
//! # }
//! ```
//!
//! The same agent runs on Amazon Bedrock, Google Vertex AI or Microsoft Foundry: its service
//! is then a client for that platform (`threadline::client::Provider`), configured here from
//! the variables Claude Code reads (`CLAUDE_CODE_USE_BEDROCK`, `AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, …; `threadline::client::provider::platform_from_env`), and the
//! builder is told the platform, so that the agent uses only what the platform offers and
//! names the model the platform's way:
//!
//! ```no_run
//! # #[cfg(all(feature = "client", feature = "agent"))]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use threadline::Agent;
//! use threadline::client::provider::platform_from_env;
//! use threadline::client::{Client, ClientConfig};
//!
//! let platform = platform_from_env(Some("bedrock"), None)?;
//! let on = platform.provider.platform();
//! let config = ClientConfig::new(platform.base_url, platform.auth).with_provider(platform.provider);
//! let agent = Agent::builder(Client::new(config)?)
//!     .model("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
//!     .platform(on)
//!     .build()?;
//! # drop(agent);
//! # Ok(())
//! # }
//! # #[cfg(not(all(feature = "client", feature = "agent")))]
//! # fn main() {}
//! ```
//!
//! The session is the agent's: every message a run's stream yields is in [`Agent::state`]
//! at once (dropping the stream early loses nothing it yielded), one run at a time
//! ([`Agent::try_run`] and [`Agent::prompt`] refuse a second with [`RunError::Busy`]), and
//! with [`AgentBuilder::store`] every message goes to a `threadline_store::SessionStore`
//! (memory, JSONL, SQLite, Restate) from which [`AgentBuilder::resume`] continues it.
//!
//! The types every user names are at the root: [`Agent`], [`AgentBuilder`], [`Answer`], [`Event`],
//! [`Finished`], [`State`], [`Terminal`], [`Transition`], [`StopReason`], the internal
//! [`Message`], and the compaction settings ([`Compaction`]).
//!
//! The `Agent` is wiring only: each hook it plugs in is public in its own crate
//! (`threadline_query::{CompactionPolicy, SharedPlanner, ContextShaper, CollectorHook}`), so
//! a loop without the facade uses the same ones (the workspace's `examples/solo-loop`).
//!
//! ## Feature flags
//!
//! - `default`: `full`.
//! - `full`: every crate below but `mock`, `mcp`, `restate` and `scripted`, and the agent
//!   builder (not `aws-credential-chain` or `google-adc`).
//! - `wire`: the module `wire` (`threadline-wire`) and [`StopReason`].
//! - `validate`: the module `validate` (`threadline-validate`).
//! - `message`: the module `message` (`threadline-message`) and [`Message`].
//! - `normalize`: the module `normalize` (`threadline-normalize`).
//! - `workspace`: the module `workspace` (`threadline-workspace`).
//! - `attach`: the module `attach` (`threadline-attach`); with `query`, its loop hooks.
//! - `cache`: the module `cache` (`threadline-cache`).
//! - `compact`: the module `compact` (`threadline-compact`), [`Compaction`] and its types; with
//!   `query`, `CompactionPolicy`; with `client`, [`ClientTokenCounter`].
//! - `client`: the module `client` (`threadline-client`).
//! - `aws-credential-chain`: `client` with `Auth::AwsChain`, Bedrock credentials from the
//!   standard AWS chain (`aws-config`: profiles, SSO, roles; not in `full`).
//! - `google-adc`: `client` with `Auth::GoogleAdc`, Vertex AI tokens from Google's
//!   Application Default Credentials (`gcp_auth`; not in `full`).
//! - `mock`: the module `mock` (`threadline-mock`; not in `full`: it is an HTTP server).
//! - `query`: the module `query` (`threadline-query`) and [`Event`], [`Finished`], [`State`],
//!   [`Terminal`], [`Transition`].
//! - `tools`: the module `tools` (`threadline-tools`) and [`AgentBuilder::builtin_tools`].
//! - `store`: the module `store` (`threadline-store`); with `agent`, `AgentBuilder::store`,
//!   `AgentBuilder::resume`, `load_session` and `message_entry`.
//! - `inspect`: the module `inspect` (`threadline-inspect`).
//! - `mcp`: the module `mcp` (`threadline-mcp`): MCP servers as loop tools (not in `full`).
//! - `restate`: the module `restate` (`threadline-restate`): durable sessions on Restate, the
//!   worker and the ingress client (not in `full`: it brings the Restate SDK).
//! - `scripted`: `query::scripted`, the in-process scripted Messages service (a test double;
//!   not in `full`).
//! - `agent`: [`Agent`] and [`AgentBuilder`], the loop with the real hooks (turns on `wire`,
//!   `message`, `normalize`, `attach`, `cache`, `compact` and `query`).
#![forbid(unsafe_code)]

#[cfg(feature = "attach")]
#[doc(inline)]
pub use threadline_attach as attach;
#[cfg(feature = "cache")]
#[doc(inline)]
pub use threadline_cache as cache;
#[cfg(feature = "client")]
#[doc(inline)]
pub use threadline_client as client;
#[cfg(feature = "compact")]
#[doc(inline)]
pub use threadline_compact as compact;
#[cfg(feature = "inspect")]
#[doc(inline)]
pub use threadline_inspect as inspect;
#[cfg(feature = "mcp")]
#[doc(inline)]
pub use threadline_mcp as mcp;
#[cfg(feature = "message")]
#[doc(inline)]
pub use threadline_message as message;
#[cfg(feature = "mock")]
#[doc(inline)]
pub use threadline_mock as mock;
#[cfg(feature = "normalize")]
#[doc(inline)]
pub use threadline_normalize as normalize;
#[cfg(feature = "query")]
#[doc(inline)]
pub use threadline_query as query;
#[cfg(feature = "restate")]
#[doc(inline)]
pub use threadline_restate as restate;
#[cfg(feature = "store")]
#[doc(inline)]
pub use threadline_store as store;
#[cfg(feature = "tools")]
#[doc(inline)]
pub use threadline_tools as tools;
#[cfg(feature = "validate")]
#[doc(inline)]
pub use threadline_validate as validate;
#[cfg(feature = "wire")]
#[doc(inline)]
pub use threadline_wire as wire;
#[cfg(feature = "workspace")]
#[doc(inline)]
pub use threadline_workspace as workspace;

#[cfg(feature = "agent")]
mod agent;
#[cfg(feature = "agent")]
mod answer;
#[cfg(all(feature = "agent", feature = "restate"))]
mod durable;
#[cfg(all(feature = "agent", feature = "store"))]
mod session_store;
#[cfg(feature = "agent")]
mod subagents;

#[cfg(feature = "agent")]
pub use agent::{
    Agent, AgentBuilder, AgentError, AgentRun, DEFAULT_MAX_TOKENS, FirstRequest, FirstRequestError,
    RunError,
};
#[cfg(feature = "agent")]
pub use answer::{Answer, PromptError};
#[cfg(all(feature = "agent", feature = "store"))]
pub use session_store::{SessionStoreError, load_session, message_entry, rewrite_entry};
#[cfg(all(feature = "compact", feature = "client"))]
pub use threadline_client::ClientTokenCounter;
#[cfg(feature = "compact")]
pub use threadline_compact::server::{CompactionMode, ServerCompaction};
#[cfg(feature = "compact")]
pub use threadline_compact::{Compaction, EXACT_COUNT_BAND, SharedTokenCounter};
#[cfg(feature = "message")]
pub use threadline_message::Message;
#[cfg(feature = "query")]
pub use threadline_query::{Event, Finished, State, Terminal, Transition};
#[cfg(feature = "wire")]
pub use threadline_wire::StopReason;

/// The model an [`Agent`] uses unless told otherwise (the workspace default,
/// `threadline_wire::defaults`).
#[cfg(feature = "agent")]
pub use threadline_wire::defaults::DEFAULT_MODEL;
