//! `cargo xtask mcp-servers`: installs the MCP servers threadline-mcp's tests start, pinned,
//! into `target/test-servers/` (`scripts/install-test-servers.sh`: `npm ci` of
//! `xtask/test-servers/package-lock.json` and a venv with `xtask/test-servers/requirements.txt`).
//! Idempotent; `cargo xtask ci` runs it before the tests.

use std::path::Path;
use std::process::Command;

use crate::util::{Failure, XResult};

/// The install script, relative to the repository root.
pub(crate) const SCRIPT: &str = "scripts/install-test-servers.sh";

/// Runs the install script.
pub(crate) fn run(root: &Path) -> XResult<()> {
    println!("mcp-servers: $ {SCRIPT}");
    let status = Command::new("bash")
        .arg(root.join(SCRIPT))
        .current_dir(root)
        .status()
        .map_err(|e| Failure::new(format!("mcp-servers: cannot run {SCRIPT}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "mcp-servers: {SCRIPT} failed ({status}); it needs npm and python3 with network access to npm and PyPI"
        )))
    }
}
