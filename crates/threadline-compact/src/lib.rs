//! Keeps an agent's context under the model's window, with layers from cheap to expensive,
//! each leaving an array that normalizes to a valid request.
//!
//! 1. [`estimate`] — token estimation by sizes, anchored on the last usage the API reported;
//!    an exact count through the service contract's [`CountTokens`](threadline_wire::service::CountTokens) (`count_tokens`) when one is given.
//! 2. [`budget`] — a tool result over its tool's limit goes to a side file and is replaced by
//!    a preview with the path; decided once, before the result is first sent.
//! 3. [`snip`](mod@snip) — removes chosen messages, widened to whole units (a tool use with its result,
//!    the fragments of one response).
//! 4. [`microcompact`] — clears old tool results to a placeholder, locally when the prompt
//!    cache has expired anyway, or server-side through a `clear_tool_uses_20250919` edit.
//! 5. [`autocompact`](mod@autocompact) — at `window − min(max_output, 20k) − 13k` tokens ([`thresholds`]),
//!    a [`Summarizer`] writes a summary; the array becomes boundary → summary → verbatim tail
//!    → re-attached files. A [`CircuitBreaker`] stops repeated failures.
//! 6. [`server`] — server-side compaction: the `compact_20260112` edit where the model
//!    supports it, and the choice local | server | both ([`server::CompactionMode`]).
//! 7. [`reactive`] — after a `prompt is too long` error: one compaction for the turn, then a
//!    retry; a second refusal is reported.
//!
//! [`triggers`](triggers::triggers) says when each layer would run, for a history;
//! [`Compaction`] holds the settings of every layer for a loop's context policy (the
//! `compact` feature of `threadline-query` wires it into the loop), and [`Thresholds`] decides
//! when autocompact runs and when a request is blocked.
//!
//! ```
//! use std::time::SystemTime;
//! use threadline_compact::{
//!     AutocompactOptions, CircuitBreaker, CompactContext, HistoryOnly, ScriptedSummarizer,
//!     Thresholds, autocompact,
//! };
//! use threadline_message::{CompactTrigger, Message};
//! use threadline_wire::MessagesRequest;
//! use threadline_wire::model::ModelTable;
//!
//! // A long session: twenty requests of ~2,500 tokens each.
//! let mut history = Vec::new();
//! for i in 0..20 {
//!     history.push(Message::user_text(format!("request {i}: {}", "words ".repeat(1_700))));
//!     history.push(Message::assistant(vec![threadline_wire::ContentBlock::text("Done.")]));
//! }
//! let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
//! let base = MessagesRequest::new("claude-sonnet-4-5", 8192, Vec::new());
//! let context = CompactContext {
//!     model,
//!     base: &base,
//!     limit: Thresholds::with_autocompact(30_000).autocompact,
//!     now: SystemTime::UNIX_EPOCH,
//!     trigger: CompactTrigger::Auto,
//!     files: &HistoryOnly,
//! };
//! let summarizer = ScriptedSummarizer::new([Ok("<summary>Twenty requests.</summary>".into())]);
//! let mut breaker = CircuitBreaker::new();
//! let compacted = futures::executor::block_on(autocompact(
//!     &history, &summarizer, &context, &AutocompactOptions::default(), &mut breaker,
//! ))?;
//! assert!(compacted.post_tokens < 30_000 && compacted.post_tokens < compacted.pre_tokens);
//! // boundary, summary, then the verbatim tail ending with the latest request and answer.
//! assert!(matches!(&compacted.messages[1], Message::User(u) if u.is_compact_summary));
//! assert_eq!(compacted.messages.last(), history.last());
//! # Ok::<(), threadline_compact::AutocompactError>(())
//! ```
#![forbid(unsafe_code)]

pub mod autocompact;
pub mod binding;
pub mod breaker;
pub mod budget;
pub mod estimate;
pub mod microcompact;
pub mod on_demand;
pub mod policy;
pub mod reactive;
pub mod reattach;
mod retractions;
#[cfg(test)]
mod send_check;
pub mod server;
pub mod snip;
mod stamp;
pub mod summarizer;
pub mod tail;
pub mod thresholds;
pub mod triggers;
pub mod ttl;
pub mod units;

pub use autocompact::{
    AutocompactError, AutocompactOptions, CompactContext, Compacted, autocompact, overhead_of,
    should_autocompact, summary_request,
};
pub use breaker::CircuitBreaker;
pub use budget::{
    BudgetOptions, BudgetReport, DirStore, MemoryStore, SideStore, apply_budget, would_store,
};
pub use estimate::{
    count_or_estimate, estimate_context, estimate_context_from, estimate_messages,
    estimate_request, inferred_overhead, reported_input, trusted_usage_start,
};
pub use microcompact::{
    CLEARED_PLACEHOLDER, MicrocompactOptions, Microcompacted, ServerSideOptions,
    clear_old_tool_results, microcompact_time_based, with_server_side_clearing,
};
pub use policy::{Compaction, SharedTokenCounter};
pub use reactive::{ReactiveError, ReactiveGuard, reactive_compact};
pub use reattach::{CurrentFiles, HistoryOnly, ReattachOptions};
pub use snip::{Snipped, snip, snip_oldest};
pub use summarizer::{ExtractiveSummarizer, ScriptedSummarizer, SummarizeError, Summarizer};
pub use tail::TailOptions;
pub use thresholds::{EXACT_COUNT_BAND, Level, Thresholds};
pub use triggers::{TriggerReport, triggers};
