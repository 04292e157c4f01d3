//! The integration tests of `threadline-attach`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and they share no
//! module.

#[path = "suite/collector.rs"]
mod collector;
#[path = "suite/delta_props.rs"]
mod delta_props;
#[path = "suite/security.rs"]
mod security;
#[path = "suite/sources.rs"]
mod sources;
#[path = "suite/stability.rs"]
mod stability;
