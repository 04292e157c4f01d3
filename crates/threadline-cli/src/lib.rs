//! The library half of the `threadline` command line: what its commands share that is worth
//! calling without the binary — the bounded input reader, reading a session transcript of
//! either format, the `inspect` report (the analysis is `threadline-inspect`'s; here it is
//! run on a session and rendered as text, JSON and HTML, benchmarked by `benches/inspect.rs`),
//! and the context estimate's accuracy
//! against recorded usage (`accuracy`, `examples/estimate_bench.rs`), and the escaping of
//! every text shown on a terminal (`terminal_text`).
//!
//! ```
//! use threadline_cli::{inspect, session};
//!
//! let transcript = concat!(
//!     r#"{"type":"user","id":"u1","timestamp":"2026-01-01T00:00:00Z","content":[{"type":"text","text":"Hi"}]}"#, "\n",
//!     r#"{"type":"assistant","id":"a1","timestamp":"2026-01-01T00:00:01Z","api_message_id":"msg_1","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hello"}]}"#, "\n",
//! );
//! let session = session::read_session(transcript);
//! let report = inspect::report(&session, None);
//! assert_eq!(report.totals.requests, 1);
//! assert!(inspect::render_text(&report).starts_with("model claude-sonnet-4-6"));
//! ```
#![forbid(unsafe_code)]

pub mod accuracy;
pub mod input;
pub mod inspect;
pub mod inspect_diagnostics;
pub mod inspect_html;
pub mod inspect_plan;
pub mod project;
pub mod session;
pub mod terminal_text;
