//! Prompt-cache planning for the Anthropic Messages API.
//!
//! * [`planner`] — where the `cache_control` markers go: strategies behind one [`Strategy`]
//!   trait, applied by a [`Planner`] that enforces the API's rules (last eligible block of the
//!   chosen message, never thinking or empty text, at most 4 markers, `1h` before `5m`).
//! * [`system`] — the system prompt as up to four blocks split at a dynamic boundary.
//! * [`tools`] — the tool schema snapshot, serialized once per session; per-request overlays.
//! * [`simulator`] — predicts `input_tokens`, `cache_creation_input_tokens` (5m / 1h) and
//!   `cache_read_input_tokens` of each request of a session, and its cost, by the documented
//!   rules; tokens from a pluggable [`TokenCounter`].
//! * [`session`] — the same planning and simulation for the requests of one growing
//!   conversation, redoing only what changed since the previous request (a session replayed
//!   in time proportional to its size).
//! * [`memo`] — what flattening each message gave, kept so that the next request of a
//!   conversation flattens only the messages that changed (the planner keeps one).
//! * [`breaks`] — the first block that changed between two requests, and why; the simulator
//!   adds expiry, lookback and minimum-length misses.
//! * [`oracle`] — the best hit ratio any placement could reach for a session (the benchmark's
//!   yardstick).
//!
//! Pure and synchronous: no I/O, no async runtime.
//!
//! ```
//! use threadline_cache::{Planner, Simulator, hit_ratio};
//! use threadline_wire::model::ModelTable;
//! use threadline_validate::validate;
//! use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
//!
//! let model = ModelTable::builtin().resolve("claude-haiku-4-5").model();
//! let mut planner = Planner::default();
//! let mut sim = Simulator::new(model);
//! let mut messages = vec![MessageParam::user(vec![ContentBlock::text("Read me. ".repeat(3000))])];
//! let mut usages = Vec::new();
//! for turn in 0..3u64 {
//!     let mut request = MessagesRequest::new(&model.id, 1024, messages.clone());
//!     planner.plan(&mut request);
//!     assert!(validate(&request, model).is_empty());
//!     usages.push(sim.step(turn * 30_000, &request).usage);
//!     messages.push(MessageParam::assistant(vec![ContentBlock::text("Done.")]));
//!     messages.push(MessageParam::user(vec![ContentBlock::text("Again.")]));
//! }
//! assert!(hit_ratio(&usages) > 0.6);
//! ```
#![forbid(unsafe_code)]

pub mod automatic;
pub mod breaks;
mod cache_table;
pub mod memo;
pub mod oracle;
pub mod planner;
pub mod prefix;
pub mod session;
pub mod simulator;
pub mod system;
pub mod tokens;
pub mod tools;

pub use automatic::Automatic;
pub use breaks::{Agreement, BreakCause, CacheBreak, Prediction, diff};
pub use memo::PrefixMemo;
pub use planner::{LookbackAware, Mark, Plan, Planner, Seed, Stable1h, Strategy};
pub use prefix::{Location, Prefix, Ttl, UnseenPrefix};
pub use session::SessionSimulator;
pub use simulator::{Calibration, Predicted, SimConfig, Simulator, Step, hit_ratio};
pub use tokens::{Estimate, ExactCounts, Scaled, TokenCounter};
