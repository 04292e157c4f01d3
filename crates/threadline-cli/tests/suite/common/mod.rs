//! Helpers shared by the `threadline` binary's integration tests: running the binary, reading
//! its output, a mock API child process, temp files and the `summary` block of `demo`/`replay`.
#![allow(dead_code, reason = "each test binary uses part of the shared helpers")]

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The workspace root, where `fixtures/` is.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A command for the binary under test, to be configured by the caller.
pub(crate) fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_threadline"))
}

/// Runs the binary with `args` in the workspace root (fixture paths are relative to it).
pub(crate) fn threadline(args: &[&str]) -> Output {
    threadline_in(args, &repo())
}

/// Runs the binary with `args` in `cwd`, without `$THREADLINE_DATE` (only `run` reads it, and
/// its tests pass `--date` or set it themselves).
pub(crate) fn threadline_in(args: &[&str], cwd: &Path) -> Output {
    command()
        .args(args)
        .current_dir(cwd)
        .env_remove("THREADLINE_DATE")
        .output()
        .expect("the binary runs")
}

/// Runs `git` in `dir` for a test's set-up (an author, no signing, branch `main`).
pub(crate) fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

pub(crate) fn code(output: &Output) -> i32 {
    output.status.code().expect("exited, not killed")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A file under the system temp dir, unique to this test process.
pub(crate) fn temp_file(name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = std::env::temp_dir().join(format!("threadline-cli-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("temp file written");
    path
}

/// The `key: value` lines after the `summary` line of `demo` and `replay`.
pub(crate) fn summary(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .skip_while(|line| *line != "summary")
        .skip(1)
        .filter_map(|line| {
            let (key, value) = line.trim().split_once(':')?;
            Some((key.trim().to_owned(), value.trim().to_owned()))
        })
        .collect()
}

/// A `threadline mock` child process; killed (by its own handle) when dropped.
pub(crate) struct Mock {
    child: Child,
    /// `http://127.0.0.1:PORT`, as the mock printed it.
    pub(crate) base_url: String,
}

impl Mock {
    /// Starts the mock on a free loopback port with `scenario`, run from the workspace root
    /// (scenario `fixture` paths are relative to it).
    pub(crate) fn start(scenario: &Path) -> Self {
        Self::start_with(scenario, &[])
    }

    /// [`Mock::start`] writing its request log (`--record-log`) to `log`.
    pub(crate) fn start_logged(scenario: &Path, log: &Path) -> Self {
        Self::start_with(scenario, &["--record-log".as_ref(), log.as_os_str()])
    }

    pub(crate) fn start_with(scenario: &Path, more: &[&std::ffi::OsStr]) -> Self {
        let mut child = command()
            .args(["mock", "--addr", "127.0.0.1:0", "--scenario"])
            .arg(scenario)
            .args(more)
            .current_dir(repo())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the mock starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut first)
            .expect("the mock prints its address");
        let base_url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {first:?}"))
            .to_owned();
        Self { child, base_url }
    }

    /// `127.0.0.1:PORT`, for a plain TCP connection.
    pub(crate) fn addr(&self) -> &str {
        self.base_url
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("not an http URL: {}", self.base_url))
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
