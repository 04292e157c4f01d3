//! The integration tests of `threadline-testkit`, in one test binary: each module under
//! `suite/` was a test binary of its own (its documentation says what it tests), and they share
//! no module.

#[path = "suite/fixtures_load.rs"]
mod fixtures_load;
#[cfg(feature = "restate")]
#[path = "suite/restate_server.rs"]
mod restate_server;
