//! A mock Anthropic Messages API on loopback: a real HTTP server (hyper, HTTP/1.1 and HTTP/2)
//! for tests, benchmarks and offline demos.
//!
//! It serves `POST /v1/messages` (streamed or not) and `POST /v1/messages/count_tokens`. Every
//! request is checked as the API checks it — a credential (`x-api-key` or a bearer token,
//! else 401), `anthropic-version` (else 400), a known model (else 404 `model: <id>`), and
//! [`threadline_wire::validate()`] (else the API's exact 400 envelope) — and recorded for tests
//! to inspect. Valid requests are answered from a [`Scenario`]: scripted messages (text,
//! tool use, thinking, stop reasons, usage), recorded responses replayed byte for byte, and
//! faults (429 with `retry-after`, 529, 500, `prompt is too long`, a stream cut inside a tool
//! use's JSON, a mid-stream `error` event, slow and stalled streams, a connection reset before
//! the first byte). Usage comes from a pluggable [`UsageModel`]: by default the prompt-cache
//! simulator of `threadline-cache` ([`SimulatedUsage`]), so cache hits in tests are realistic.
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
#![forbid(unsafe_code)]

mod respond;
pub mod scenario;
mod server;
mod simulated_usage;
pub mod usage;

pub use scenario::{
    Block, ErrorStep, FixtureStep, MessageStep, Scenario, ScenarioError, Step, StreamFault,
};
pub use server::{Abort, MockConfig, MockServer, RecordedRequest};
pub use simulated_usage::SimulatedUsage;
pub use usage::{EstimateUsage, UsageModel};
