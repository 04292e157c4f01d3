//! The integration tests of `threadline-normalize`, in one test binary: each module under
//! `suite/` was a test binary of its own (its documentation says what it tests), and `common`
//! holds the helpers they share.

#[path = "suite/common/mod.rs"]
mod common;
#[path = "suite/incremental.rs"]
mod incremental;
#[path = "suite/properties.rs"]
mod properties;
#[path = "suite/transcripts.rs"]
mod transcripts;
