//! The integration tests of `threadline-mock`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and they share no
//! module.

#[path = "suite/on_demand_compaction.rs"]
mod on_demand_compaction;
#[path = "suite/platforms.rs"]
mod platforms;
#[path = "suite/server.rs"]
mod server;
#[path = "suite/thinking_binding.rs"]
mod thinking_binding;
