//! The integration tests of `threadline-tools`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and `common` holds the
//! helpers they share.

#[path = "suite/common/mod.rs"]
mod common;
#[path = "suite/hardening.rs"]
mod hardening;
#[path = "suite/in_the_loop.rs"]
mod in_the_loop;
#[path = "suite/tools.rs"]
mod tools;
