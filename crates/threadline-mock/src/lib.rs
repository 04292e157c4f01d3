//! A mock Anthropic Messages API on loopback: a real HTTP server (hyper, HTTP/1.1 and HTTP/2)
//! for tests, benchmarks and offline demos.
//!
//! It serves `POST /v1/messages` (streamed or not) and `POST /v1/messages/count_tokens`, and
//! the same API as the cloud platforms serve it, all at once: Amazon Bedrock's InvokeModel
//! (`/model/{id}/invoke`, `/model/{id}/invoke-with-response-stream`: SigV4 checked against
//! test credentials, [`MOCK_AWS_ACCESS_KEY_ID`] by default, or a bearer; the body's
//! `anthropic_version` and `anthropic_beta`; AWS errors; the AWS event stream), Google Vertex
//! AI (`/v1/projects/{p}/locations/{r}/publishers/anthropic/models/{m}:rawPredict` and
//! `:streamRawPredict`: a bearer; `anthropic_version` in the body; Google's error envelope for
//! authentication and unknown models) and Microsoft Foundry (`/anthropic/v1/messages`: an
//! `api-key`). Each front turns its platform's request into the API's, which is then checked
//! and answered as below; what a platform does not offer is refused in its words (on-demand
//! compaction on Bedrock, say). Every request is checked as the API checks it — a credential (`x-api-key` or a bearer token,
//! else 401), `anthropic-version` (else 400), a known model (else 404 `model: <id>`), and
//! [`threadline_validate::validate()`] (else the API's exact 400 envelope) — and recorded for tests
//! to inspect. Valid requests are answered from a [`Scenario`]: scripted messages (text,
//! tool use, thinking, stop reasons, usage), recorded responses replayed byte for byte, and
//! faults (429 with `retry-after`, 529, 500, `prompt is too long`, a stream cut inside a tool
//! use's JSON, a mid-stream `error` event, slow and stalled streams, a connection reset before
//! the first byte). Usage comes from a pluggable [`UsageModel`]: by default the prompt-cache
//! simulator of `threadline-cache` ([`SimulatedUsage`]), so cache hits in tests are realistic.
//!
//! On-demand compaction (beta `compact-2026-09-04`): a request with the top-level `compaction`
//! field takes its step like any other and is answered with one signed `compaction` block
//! (`stop_reason: "compaction"`, the usage in `usage.iterations`; streamed as one
//! `content_block_start`, no deltas), or with empty content when the step stops with
//! `max_tokens`, `model_context_window_exceeded`, `tool_use`, `refusal` or `end_turn`, or the
//! request exceeds the model's window. The block sent back first is accepted; an edited one is
//! the API's 400 `compaction_signature_invalid` / `compaction_content_mismatch`, with the
//! code in `error.details.error_code` (as are `compaction_block_misplaced`,
//! `compaction_nothing_to_summarize` and a scripted 529's `compaction_unavailable`:
//! [`Step::with_error_code`]).
//!
//! Everything a client controls is bounded by [`ServerLimits`] (defaults in its table): a
//! body past 32 MiB (the API's limit) is answered 413 `request_too_large` — at once from its
//! `content-length`, else as soon as the bytes read pass the limit, never buffered whole; the
//! body bytes all requests hold at once share a budget (past it: 529 `overloaded_error`); a
//! rejected body (a failed check, too large, refused) is never recorded; the recording keeps
//! at most 10 000 requests and 64 MiB of bodies, dropping the oldest first
//! ([`MockServer::request_count()`] still counts every request); headers must arrive within
//! 30 s, a connection with no request in flight closes after 30 s, and at most 128
//! connections are served, a new one closing the longest-idle one.
//!
//! Thinking bound to its prefix, as the API enforces it on the models whose row has
//! `Feature::PrefixBoundThinking` (Fable 5.1, Opus 5.5, Sonnet 5.5, Haiku 5.5;
//! docs/api-notes.md#thinking-bound-to-its-prefix): every `thinking` / `redacted_thinking`
//! block the mock serves on such a model carries a signature the mock made (streamed or not,
//! the scenario's replaced), `tlmock1.<model>.<system>.<tools>.<messages>.<predecessor>.<mac>`:
//! digests of the `system` prompt, the non-deferred tools and the messages before the block
//! (thinking blocks and `cache_control` left out; from the newest `compaction` block on), of
//! the thinking block before it, and a keyed mac over all of it and the block's text. The
//! blocks sent back are checked before a step is taken: a signature the mock did not make or
//! whose block was edited is a 400 ``messages.N.content.M: Invalid `signature` in `thinking`
//! block``; another model's block is dropped silently; a block whose prefix changed, or whose
//! predecessor was removed from the middle, is the API's 400 (``… The block is bound to a
//! different conversation. …``, then a sentence of ours naming what changed) or, under
//! `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`, dropped with every later
//! block. With the `thinking-binding-controls-2026-08-01` beta every answer carries
//! `input_transformations` (on `message_start` when streamed). Simplifications: a block is
//! readable by the model that wrote it only; a signature not the mock's (a scenario's fixed
//! string, a recorded fixture's) is refused on a binding model, never taken for an older
//! model's; thinking kept after an on-demand compaction is checked from the compaction block
//! on, so it does not survive the swap as the API's does; fixture steps are replayed
//! unsigned; `count_tokens` checks nothing.
//!
//! For durable sessions, where a crashed worker's request is sent again by another: steps
//! taken by conversation turn instead of arrival order ([`AnswerBy::Turn`]: the same request
//! gets the same answer, ids included), and a request log another process can read
//! ([`MockConfig::with_record_log`], format in [`request_log`]). The prompt-cache simulator
//! is the server's, shared by every connection: a prefix one client wrote is a cache read
//! for the next.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use threadline_mock::{MockServer, Scenario, Step};
//!
//! let server = MockServer::start(Scenario::new([Step::text("Hello!"), Step::overloaded()])).await?;
//! let base_url = server.base_url(); // http://127.0.0.1:PORT, for a client
//! assert!(base_url.starts_with("http://127.0.0.1:"));
//! assert_eq!(server.request_count(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! Tighter limits, for a test of a client's handling of them:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use std::time::Duration;
//! use threadline_mock::{MockConfig, MockServer, Scenario, ServerLimits, Step};
//!
//! let limits = ServerLimits::default()
//!     .with_max_body_bytes(1024 * 1024)
//!     .with_max_recorded_requests(100)
//!     .with_idle_timeout(Duration::from_secs(5));
//! let config = MockConfig::new(Scenario::new([Step::text("Hi")])).with_limits(limits);
//! let server = MockServer::start_with(config).await?;
//! assert_eq!(server.connection_count(), 0);
//! assert_eq!(server.dropped_request_count(), 0);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod body;
mod connections;
mod context_edits;
pub mod diagnostics;
mod limits;
mod on_demand_compaction;
mod platforms;
mod recording;
pub mod request_log;
mod respond;
pub mod routes;
pub mod scenario;
mod server;
pub mod server_compaction;
mod signing;
mod simulated_usage;
mod thinking_binding;
pub mod tool_search;
pub mod usage;

pub use limits::ServerLimits;
pub use platforms::bedrock::{
    BEDROCK_ANTHROPIC_VERSION, SIGNING_SERVICE as BEDROCK_SIGNING_SERVICE,
};
pub use platforms::event_stream::bedrock_event_stream;
pub use platforms::google_oauth::GoogleServiceAccount;
pub use platforms::vertex::VERTEX_ANTHROPIC_VERSION;
pub use platforms::{MOCK_AWS_ACCESS_KEY_ID, MOCK_AWS_SECRET_ACCESS_KEY, PlatformCredentials};
pub use routes::Route;
pub use scenario::{
    AnswerBy, Block, ErrorStep, FixtureStep, MessageStep, Scenario, ScenarioError, Step,
    StreamFault,
};
pub use server::{Abort, MockConfig, MockServer, RecordedRequest};
pub use simulated_usage::SimulatedUsage;
pub use tool_search::ToolSearchScript;
pub use usage::{EstimateUsage, UsageModel};
