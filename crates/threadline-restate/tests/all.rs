//! threadline-restate against a real Restate server (the pinned `restate-server` 1.7.12,
//! installed by `cargo xtask restate-server`; CI runs it before the tests, and a test fails
//! naming that command when it is missing), with endpoints served in-process on loopback.

#[path = "suite/client.rs"]
mod client;
#[path = "suite/common.rs"]
mod common;
#[path = "suite/identity.rs"]
mod identity;
#[path = "suite/session.rs"]
mod session;
#[path = "suite/smoke.rs"]
mod smoke;
#[path = "suite/store.rs"]
mod store;
