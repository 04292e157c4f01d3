//! The integration tests of `threadline-client`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and `common` holds the
//! helpers they share.

#[path = "suite/body_fragments.rs"]
mod body_fragments;
#[path = "suite/common/mod.rs"]
mod common;
#[path = "suite/e2e.rs"]
mod e2e;
#[path = "suite/faults.rs"]
mod faults;
#[path = "suite/fixtures_replay.rs"]
mod fixtures_replay;
#[path = "suite/hostile.rs"]
mod hostile;
#[path = "suite/platform_fixtures.rs"]
mod platform_fixtures;
#[path = "suite/platforms.rs"]
mod platforms;
#[path = "suite/secrecy.rs"]
mod secrecy;
