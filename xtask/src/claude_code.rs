//! `cargo xtask claude-code-install`: installs the real Claude Code 2.1.328, pinned, into
//! `target/claude-code/` (`scripts/install-claude-code.sh`: `npm ci --ignore-scripts` of
//! `xtask/claude-code/package-lock.json`, which holds only `@anthropic-ai/claude-code-linux-x64`
//! 2.1.328 with its integrity: a self-contained native binary of 373 MB, 172 MB to download).
//! Idempotent (a stamp of the lock's hash).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{Failure, XResult};

/// The install script, relative to the repository root.
pub(crate) const SCRIPT: &str = "scripts/install-claude-code.sh";

/// The pinned version; `claude --version` must start with it.
pub(crate) const VERSION: &str = "2.1.328";

/// Where the install script puts the binary, relative to the repository root.
pub(crate) const BINARY: &str =
    "target/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude";

/// Runs the install script and returns the binary's path.
pub(crate) fn install(root: &Path) -> XResult<PathBuf> {
    println!("claude-code: $ {SCRIPT}");
    let status = Command::new("bash")
        .arg(root.join(SCRIPT))
        .current_dir(root)
        .status()
        .map_err(|e| Failure::new(format!("claude-code: cannot run {SCRIPT}: {e}")))?;
    if !status.success() {
        return Err(Failure::new(format!(
            "claude-code: {SCRIPT} failed ({status}); it needs a linux-x64 machine and npm with access to the npm registry (or its cache)"
        )));
    }
    Ok(root.join(BINARY))
}

/// `cargo xtask claude-code-install`.
pub(crate) fn run_install(root: &Path) -> XResult<()> {
    install(root).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_pins_only_the_linux_x64_binary_with_its_integrity() {
        let root = crate::util::repo_root();
        let lock: serde_json::Value = serde_json::from_str(
            &crate::util::read_text(&root.join("xtask/claude-code/package-lock.json"))
                .expect("lock"),
        )
        .expect("lock is JSON");
        let packages = lock["packages"].as_object().expect("packages");
        let names: Vec<&str> = packages.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["", "node_modules/@anthropic-ai/claude-code-linux-x64"]
        );
        let pkg = &packages["node_modules/@anthropic-ai/claude-code-linux-x64"];
        assert_eq!(pkg["version"], VERSION);
        assert!(
            pkg["integrity"]
                .as_str()
                .is_some_and(|i| i.starts_with("sha512-"))
        );
        assert!(pkg.get("hasInstallScript").is_none());
        assert!(BINARY.starts_with("target/claude-code/node_modules/"));
    }
}
