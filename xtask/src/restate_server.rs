//! `cargo xtask restate-server`: installs the Restate server the threadline-restate tests
//! (`threadline_testkit::restate`) start, pinned, into `target/restate-server/`
//! (`scripts/install-restate-server.sh`: `npm ci` of `xtask/restate-server/package-lock.json`,
//! which holds only `@restatedev/restate-server-linux-x64` 1.7.12 with its integrity).
//! Idempotent (a stamp of the lock's hash); `cargo xtask ci` runs it before the tests.

use std::path::Path;
use std::process::Command;

use crate::util::{Failure, XResult};

/// The install script, relative to the repository root.
pub(crate) const SCRIPT: &str = "scripts/install-restate-server.sh";

/// Runs the install script.
pub(crate) fn run(root: &Path) -> XResult<()> {
    println!("restate-server: $ {SCRIPT}");
    let status = Command::new("bash")
        .arg(root.join(SCRIPT))
        .current_dir(root)
        .status()
        .map_err(|e| Failure::new(format!("restate-server: cannot run {SCRIPT}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "restate-server: {SCRIPT} failed ({status}); it needs a linux-x64 machine and npm with access to the npm registry (or its cache)"
        )))
    }
}
