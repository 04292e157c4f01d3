//! The integration tests of `threadline-compact`, in one test binary: each module under
//! `suite/` was a test binary of its own (its documentation says what it tests), and `common`
//! holds the helpers they share.

#[path = "suite/common/mod.rs"]
mod common;
#[path = "suite/peers.rs"]
mod peers;
#[path = "suite/properties.rs"]
mod properties;
#[path = "suite/snapshots.rs"]
mod snapshots;
