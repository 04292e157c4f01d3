//! Running `git` read-only in a workspace that may be hostile.
//!
//! A repository's own configuration can name programs for git to run: `core.fsmonitor` runs
//! on every `git status`, a `filter.<driver>.clean` runs for every file whose cached stat data
//! no longer matches, `status.submoduleSummary` starts more git processes, a
//! `post-index-change` hook runs when the index is rewritten, a pager, an external diff or a
//! signature-verification program can run for output. A workspace (or a model that could
//! write `.git/config` through a file tool) controls all of them. Nothing here may run code
//! the user did not allow, so every invocation:
//!
//! - overrides each setting that names a program through `GIT_CONFIG_COUNT` /
//!   `GIT_CONFIG_KEY_n` (the precedence of `-c`, above every configuration file):
//!   `core.fsmonitor=false`, `core.hooksPath=/dev/null`, no pager, no external diff, no
//!   signature display, no ssh command or credential helper, no submodule summary; and every
//!   `filter.<driver>.{clean,smudge,process}` the configuration defines (found with
//!   `git config --get-regexp`, which runs nothing) set to the empty command, which git treats
//!   as no filter;
//! - never fetches: a partial clone whose objects are missing would fetch them from its
//!   promisor remote, and the fetch runs `remote.<name>.uploadpack` or an `ext::` URL's
//!   command; `GIT_NO_LAZY_FETCH=1` turns lazy fetching off, and an empty
//!   `GIT_ALLOW_PROTOCOL` with `protocol.allow=never` (and `protocol.{ext,file}.allow=never`,
//!   which a repository's own `protocol.ext.allow` would otherwise outrank) allows no
//!   transport at all;
//! - takes no optional locks (`--no-optional-locks`), so the index is never rewritten and no
//!   index hook can fire, and ignores submodules;
//! - clears the environment variables that would point git elsewhere (`GIT_DIR`,
//!   `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_EXTERNAL_DIFF`, …) and sets
//!   `GIT_CEILING_DIRECTORIES` to the workspace's parent, so a repository *above* the workspace
//!   is never discovered;
//! - passes no model credential on, to git or anything it starts: every inherited variable
//!   [`is_credential_variable`](crate::credentials::is_credential_variable) names
//!   (`ANTHROPIC_*`, the cloud platforms' keys) is removed;
//! - has no standard input (`GIT_TERMINAL_PROMPT=0`), reads at most [`OUTPUT_LIMIT`] bytes of
//!   output and is killed after [`TIMEOUT`].
//!
//! `safe.directory` is left to git: a repository owned by another user is refused by git
//! itself, and nothing here widens that.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long one git invocation may take before it is killed.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The most bytes of one invocation's standard output that are read; the rest is dropped
/// (git then stops on a closed pipe).
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// Settings whose value names a program (or makes git start one), and the value that turns
/// each off. Given with `-c` on every invocation.
const NEUTRAL_SETTINGS: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    // No hook is found under a path that is not a directory.
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.sshCommand", ""),
    ("core.askPass", ""),
    ("core.editor", ":"),
    ("core.untrackedCache", "false"),
    // No escape sequences in what the model reads.
    ("color.ui", "false"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("gpg.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.x509.program", ""),
    ("log.showSignature", "false"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("pager.status", "false"),
    ("pager.log", "false"),
    // No transport at all: a lazy fetch (below) would run `remote.<name>.uploadpack` for a
    // `file://` remote or an `ext::` URL's command. Each protocol's own setting is named too,
    // because a repository's `protocol.ext.allow=always` outranks `protocol.allow`.
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("protocol.file.allow", "never"),
];

/// Environment variables that would make git read another repository, index or program than
/// the workspace's own. Removed from every invocation.
const CLEARED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
];

/// Why a git invocation gave no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GitError {
    /// git could not be started (not installed, not on `PATH`).
    #[error("git cannot be run: {0}")]
    Spawn(String),
    /// git ran past [`TIMEOUT`] and was killed.
    #[error("git did not finish within {0:?} and was killed")]
    TimedOut(Duration),
    /// git exited unsuccessfully (not a repository, no commits yet, …), with this exit code
    /// (none when a signal ended it).
    #[error("git exited unsuccessfully (code {0:?})")]
    Failed(Option<i32>),
    /// Waiting for git failed.
    #[error("cannot wait for git: {0}")]
    Wait(String),
}

/// A read-only git runner for one workspace (see the module documentation).
#[derive(Debug, Clone)]
pub struct Git {
    program: PathBuf,
    root: PathBuf,
    timeout: Duration,
    /// Every setting given on each invocation, the repository's filter drivers included.
    overrides: Vec<(String, String)>,
}

impl Git {
    /// A runner for the work tree at `root`, using `git` from `PATH`.
    ///
    /// It first asks git which filter drivers the configuration defines (`git config` reads
    /// configuration and runs nothing), so that each can be turned off; when that question
    /// fails, no runner is made.
    pub fn new(root: &Path) -> Result<Git, GitError> {
        Git::with_program("git", root, TIMEOUT)
    }

    /// A runner with another git binary and timeout (tests use a stand-in).
    pub fn with_program(
        program: impl Into<PathBuf>,
        root: &Path,
        timeout: Duration,
    ) -> Result<Git, GitError> {
        let mut git = Git {
            program: program.into(),
            root: root.to_path_buf(),
            timeout,
            overrides: NEUTRAL_SETTINGS
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect(),
        };
        let listing = git.run(&[
            "config",
            "--includes",
            "--name-only",
            "-z",
            "--get-regexp",
            r"^filter\..*\.(clean|smudge|process)$",
        ]);
        let listing = match listing {
            Ok(listing) => listing,
            // `git config --get-regexp` exits 1 when nothing matches.
            Err(GitError::Failed(Some(1))) => String::new(),
            Err(error) => return Err(error),
        };
        // An empty command is no filter to git. The keys go through the environment, not
        // `-c`, so a driver name with `=` in it is turned off too.
        git.overrides.extend(
            listing
                .split('\0')
                .filter(|key| !key.is_empty())
                .map(|key| (key.to_owned(), String::new())),
        );
        Ok(git)
    }

    /// Runs `git <args>` in the work tree and returns its standard output (lossy UTF-8, at most
    /// [`OUTPUT_LIMIT`] bytes, trailing white space trimmed).
    pub fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let mut command = Command::new(&self.program);
        command
            .arg("-C")
            .arg(&self.root)
            .arg("--no-optional-locks")
            .arg("--no-pager");
        // The same settings as `-c` too, for a git older than `GIT_CONFIG_COUNT` (2.31); a key
        // with `=` in it cannot be written that way and goes through the environment alone.
        for (key, value) in self.overrides.iter().filter(|(key, _)| !key.contains('=')) {
            command.arg("-c").arg(format!("{key}={value}"));
        }
        command.args(args);
        for name in CLEARED_ENV {
            command.env_remove(name);
        }
        // No model credential reaches git or what it starts (crate::credentials).
        for (name, _) in std::env::vars_os() {
            if crate::credentials::is_credential_variable(&name.to_string_lossy()) {
                command.env_remove(&name);
            }
        }
        // Configuration from the environment has the precedence of `-c`: above every file.
        command.env("GIT_CONFIG_COUNT", self.overrides.len().to_string());
        for (i, (key, value)) in self.overrides.iter().enumerate() {
            command
                .env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        if let Some(parent) = self.root.parent() {
            command.env("GIT_CEILING_DIRECTORIES", parent);
        }
        command
            // A partial clone (`extensions.partialClone`) fetches a missing object from its
            // promisor remote on any read; that fetch runs programs the repository names.
            .env("GIT_NO_LAZY_FETCH", "1")
            // The protocol allow-list from the environment: empty, so no transport is allowed
            // whatever the configuration says (the backstop for a git that ignores the above).
            .env("GIT_ALLOW_PROTOCOL", "")
            .env("GIT_PROTOCOL_FROM_USER", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("PAGER", "cat")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let child = command
            .spawn()
            .map_err(|e| GitError::Spawn(e.to_string()))?;
        wait_bounded(child, self.timeout)
    }
}

/// Waits for `child` at most `timeout`, reading at most [`OUTPUT_LIMIT`] bytes of its output on
/// a thread of its own (a stalled child cannot block the caller past the timeout).
fn wait_bounded(mut child: Child, timeout: Duration) -> Result<String, GitError> {
    let (sender, receiver) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut output = Vec::new();
            // The limit is the whole point: what is past it is never read.
            let _ = stdout.take(OUTPUT_LIMIT as u64).read_to_end(&mut output);
            let _ = sender.send(output);
        });
    }
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitError::TimedOut(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(GitError::Wait(e.to_string())),
        }
    };
    if !status.success() {
        return Err(GitError::Failed(status.code()));
    }
    // The child exited; its pipe closes unless a grandchild holds it, so wait only what is
    // left of the timeout.
    let left = deadline.saturating_duration_since(Instant::now());
    let output = receiver
        .recv_timeout(left.max(Duration::from_millis(100)))
        .unwrap_or_default();
    Ok(String::from_utf8_lossy(&output).trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_git_that_stalls_is_killed_at_the_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = dir.path().join("fake-git");
        std::fs::write(&fake, "#!/bin/sh\nexec sleep 1000\n").expect("script");
        let mut permissions = std::fs::metadata(&fake).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&fake, permissions).expect("chmod");
        let started = Instant::now();
        // The first invocation (the filter listing) is cut at the timeout, and no runner is
        // made from a git that cannot answer.
        assert_eq!(
            Git::with_program(&fake, dir.path(), Duration::from_millis(300)).map(|_| ()),
            Err(GitError::TimedOut(Duration::from_millis(300)))
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    /// Makes `script` an executable stand-in for git in `dir`.
    #[cfg(unix)]
    fn fake_git(dir: &Path, script: &str) -> PathBuf {
        let fake = dir.join("fake-git");
        std::fs::write(&fake, script).expect("script");
        let mut permissions = std::fs::metadata(&fake).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&fake, permissions).expect("chmod");
        fake
    }

    /// In a child of this test binary with credentials in its environment (set there, not in
    /// this process, which other tests share), a stand-in git writes the environment it got.
    #[cfg(unix)]
    #[test]
    fn no_model_credential_reaches_git() {
        const CHILD: &str = "THREADLINE_WORKSPACE_GIT_ENV_OUT";
        const NAME: &str = "no_model_credential_reaches_git";
        if let Some(out) = std::env::var_os(CHILD) {
            let dir = tempfile::tempdir().expect("tempdir");
            // Exit 1: `git config --get-regexp` found no filter, so a runner is made.
            let fake = fake_git(
                dir.path(),
                &format!("#!/bin/sh\nenv > \"${CHILD}\"\nexit 1\n"),
            );
            let git = Git::with_program(&fake, dir.path(), TIMEOUT).expect("runner");
            assert_eq!(git.run(&["status"]), Err(GitError::Failed(Some(1))));
            assert!(Path::new(&out).exists());
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("env.txt");
        let test = match module_path!().split_once("::") {
            Some((_, module)) => format!("{module}::{NAME}"),
            None => NAME.to_owned(),
        };
        let status = Command::new(std::env::current_exe().expect("current exe"))
            .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, &out)
            .env("ANTHROPIC_API_KEY", "sk-ant-api03-test-key")
            .env("ANTHROPIC_CUSTOM_HEADERS", "x-secret: 1")
            .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
            .env("AWS_SESSION_TOKEN", "aws-token")
            .env("AWS_REGION", "us-east-1")
            .status()
            .expect("child runs");
        assert!(status.success(), "{status}");
        let env = std::fs::read_to_string(&out).expect("the stand-in git ran");
        let names: Vec<&str> = env
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(n, _)| n)
            .collect();
        // The runner's own settings are there, so this is the environment git got.
        assert!(env.lines().any(|l| l == "GIT_NO_LAZY_FETCH=1"), "{env}");
        assert!(env.lines().any(|l| l == "AWS_REGION=us-east-1"), "{env}");
        for name in names {
            assert!(
                !crate::credentials::is_credential_variable(name),
                "{name} reached git"
            );
        }
        assert!(
            !env.contains("sk-ant-api03-test-key") && !env.contains("aws-secret"),
            "{env}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn output_past_the_limit_is_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = dir.path().join("fake-git");
        std::fs::write(&fake, "#!/bin/sh\nexec yes threadline\n").expect("script");
        let mut permissions = std::fs::metadata(&fake).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&fake, permissions).expect("chmod");
        // `yes` dies of the closed pipe (a signal, not a success) well before the timeout.
        let started = Instant::now();
        let result = Git::with_program(&fake, dir.path(), Duration::from_secs(15)).map(|_| ());
        assert_eq!(result, Err(GitError::Failed(None)));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }
}
