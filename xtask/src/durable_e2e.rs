//! `cargo xtask durable-e2e`: durable sessions survive a worker's SIGKILL, end to end.
//!
//! Installs the pinned Restate server if it is missing (`cargo xtask restate-server`, the
//! repo's own script) and the MCP test servers (`cargo xtask mcp-servers`: the worker's MCP
//! tools in the first-request test), then runs the `durable_e2e` tests of
//! threadline-cli's test binary one at a time with their report lines shown: a real Restate
//! server on loopback with a temporary base dir, `threadline mock`, and two `threadline
//! worker` processes behind one deployment address; the worker executing the session is
//! killed (1) during a slow tool, (2) during a slow model stream, (3) between steps, and
//! once more during a tool that is not idempotent (see
//! `crates/threadline-cli/tests/suite/durable_e2e/mod.rs`); and a durable turn's first request
//! is the one `run --dry-run` prints (`durable_e2e/first_request.rs`). `cargo xtask ci` runs it as a
//! step of its own; the other test steps leave these tests out ([`NEXTEST_FILTER`]).

use std::path::Path;

use crate::restate_server;
use crate::util::{self, XResult};

/// The test module (a path prefix of the test names in threadline-cli's `all` binary).
pub(crate) const MODULE: &str = "durable_e2e::";

/// The nextest filter that leaves the durable end-to-end tests to this step.
pub(crate) const NEXTEST_FILTER: &str = "not (package(threadline-cli) & test(/^durable_e2e::/))";

/// The cargo arguments that run them: the workspace's `all` test targets (only
/// threadline-cli's has these tests), so the build is the one of the test step (the same
/// features, nothing rebuilt), filtered to the module.
pub(crate) fn cargo_args() -> Vec<&'static str> {
    vec![
        "test",
        "--workspace",
        "--test",
        "all",
        MODULE,
        "--",
        "--nocapture",
        "--test-threads",
        "1",
    ]
}

/// Entry point.
pub(crate) fn run(root: &Path) -> XResult<()> {
    restate_server::run(root)?;
    crate::mcp_servers::run(root)?;
    util::run_cargo("durable-e2e", root, &cargo_args(), &[])
}
