//! The integration tests of `threadline-cli`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and `common` holds the
//! helpers they share.
// A harness prints its findings: the CLI's escaping rule (`clippy.toml`) is for the binary.
#![allow(clippy::disallowed_macros)]

#[path = "suite/cli.rs"]
mod cli;
#[path = "suite/common/mod.rs"]
mod common;
#[path = "suite/compact.rs"]
mod compact;
#[path = "suite/demo.rs"]
mod demo;
#[path = "suite/dry_run.rs"]
mod dry_run;
#[path = "suite/durable_e2e/mod.rs"]
mod durable_e2e;
#[path = "suite/inspect.rs"]
mod inspect;
#[path = "suite/inspect_memory.rs"]
mod inspect_memory;
#[path = "suite/io_limits.rs"]
mod io_limits;
#[path = "suite/mock.rs"]
mod mock;
#[path = "suite/replay.rs"]
mod replay;
#[path = "suite/run.rs"]
mod run;
#[path = "suite/run_mock.rs"]
mod run_mock;
#[path = "suite/terminal_escapes.rs"]
mod terminal_escapes;
#[path = "suite/worker.rs"]
mod worker;
