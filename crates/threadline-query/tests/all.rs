//! The integration tests of `threadline-query`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and `common` holds the
//! helpers they share.

#[path = "suite/abort.rs"]
mod abort;
#[path = "suite/common/mod.rs"]
mod common;
#[path = "suite/hostile_streams.rs"]
mod hostile_streams;
#[path = "suite/loopback.rs"]
mod loopback;
#[path = "suite/scenarios.rs"]
mod scenarios;
#[path = "suite/streaming_executor.rs"]
mod streaming_executor;
