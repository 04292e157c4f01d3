//! `Bash`: a shell command in the workspace root, with a timeout, bounded output, and a
//! permission question unless commands were allowed up front.
//!
//! The command's environment is this process's, less the variables withheld: by default every
//! model credential — each inherited variable
//! [`is_credential_variable`](threadline_workspace::credentials::is_credential_variable) names,
//! so every `ANTHROPIC_*` one and the cloud platforms' keys ([`DEFAULT_WITHHELD_ENV`]) — so a
//! command the model runs cannot read the key. [`Shell::withhold_env`] withholds more;
//! [`Shell::with_withheld_env`] replaces the whole rule with exactly the names given, which
//! is how a credential is passed on: an explicit choice.
//!
//! The command runs in a process group of its own, and the whole group is killed when the
//! command times out, and when the call is cancelled or its stream dropped before the shell
//! was reaped: a pipeline's other processes and the `&` jobs die with the shell, not only `sh`.
//! Not killed: what a command left running after its shell exited and was reaped (`cmd &` as
//! its last word, with its output elsewhere), and what it moved to another group (`setsid`).
//!
//! Each command that ends records a `threadline.tool.shell` event (inside the loop's
//! `execute_tool` span) with its `process.exit.code`, or `error.type` `timeout`; never the
//! command, its output or its environment.

use std::ffi::OsString;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use threadline_query::Permission;
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_wire::telemetry as names;
use threadline_workspace::Workspace;
use tokio::io::{AsyncRead, AsyncReadExt as _};

use crate::text::cut_at;

/// The timeout when the model gives none (2 minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// The longest timeout the model may ask for (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// At most this many bytes of stdout and of stderr are kept (the rest is read and dropped, so
/// a chatty command cannot block on a full pipe).
pub const MAX_OUTPUT_BYTES: usize = 30_000;

/// The variables a command does not inherit unless asked, named one by one: every model
/// credential the client reads, the Claude API's and the cloud platforms'
/// ([`threadline_workspace::credentials::CREDENTIAL_VARIABLES`]). By default every other
/// variable [`is_credential_variable`](threadline_workspace::credentials::is_credential_variable)
/// names (any `ANTHROPIC_*`) is withheld too ([`Shell::withholds_every_credential`]).
pub const DEFAULT_WITHHELD_ENV: &[&str] = threadline_workspace::credentials::CREDENTIAL_VARIABLES;

/// Runs `sh -c COMMAND` in the workspace root.
#[derive(Debug, Clone)]
pub struct Shell {
    workspace: Arc<Workspace>,
    allowed: bool,
    withheld: Vec<String>,
    /// Whether every credential variable is withheld besides `withheld` (until
    /// [`Shell::with_withheld_env`] replaced the rule).
    credentials: bool,
}

impl Shell {
    /// A shell that asks permission for every command and withholds every model credential
    /// from it ([`DEFAULT_WITHHELD_ENV`] and every other variable
    /// [`is_credential_variable`](threadline_workspace::credentials::is_credential_variable)
    /// names).
    pub fn new(workspace: Arc<Workspace>) -> Shell {
        Shell {
            workspace,
            allowed: false,
            withheld: DEFAULT_WITHHELD_ENV.iter().map(|&v| v.to_owned()).collect(),
            credentials: true,
        }
    }

    /// Withholds exactly these variables from every command: the list and the credential rule
    /// are both replaced, so a credential not named here is passed on (an empty list passes
    /// the whole environment on, credentials included). [`Shell::withhold_env`] after it adds
    /// to this list only.
    pub fn with_withheld_env<I, S>(mut self, names: I) -> Shell
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.withheld = names.into_iter().map(Into::into).collect();
        self.credentials = false;
        self
    }

    /// Withholds `name` too (the user's own secrets: `GITHUB_TOKEN`, …).
    pub fn withhold_env(mut self, name: impl Into<String>) -> Shell {
        let name = name.into();
        if !self.withheld.contains(&name) {
            self.withheld.push(name);
        }
        self
    }

    /// The variables withheld from every command by name (besides every credential, while
    /// [`Shell::withholds_every_credential`]).
    pub fn withheld_env(&self) -> &[String] {
        &self.withheld
    }

    /// Whether every inherited variable
    /// [`is_credential_variable`](threadline_workspace::credentials::is_credential_variable)
    /// names is withheld as well as [`Shell::withheld_env`]: true until
    /// [`Shell::with_withheld_env`] replaces the rule.
    pub fn withholds_every_credential(&self) -> bool {
        self.credentials
    }

    /// Whether commands run without asking (the command line's `--allow-shell`).
    pub fn allow_without_asking(mut self, allowed: bool) -> Shell {
        self.allowed = allowed;
        self
    }
}

impl Tool for Shell {
    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        "Runs a shell command (`sh -c`) in the workspace root and answers its exit code, stdout and stderr (each cut at 30,000 bytes). `timeout_ms` defaults to 120000 (at most 600000)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn check_permission(&self, input: &Value) -> Permission {
        if self.allowed {
            Permission::Allow
        } else {
            Permission::Ask {
                prompt: format!(
                    "Run `{}` in {}?",
                    input["command"].as_str().unwrap_or_default(),
                    self.workspace.root().display()
                ),
            }
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream {
        let workspace = Arc::clone(&self.workspace);
        let mut withheld: Vec<OsString> = self.withheld.iter().map(OsString::from).collect();
        if self.credentials {
            // Every credential this process holds now (threadline_workspace::credentials), by
            // its own name (a name that is not UTF-8 is removed as it is).
            withheld.extend(std::env::vars_os().map(|(name, _)| name).filter(|name| {
                threadline_workspace::credentials::is_credential_variable(&name.to_string_lossy())
            }));
        }
        tool_result(async move {
            let command = input["command"].as_str().unwrap_or_default().to_owned();
            let timeout = Duration::from_millis(
                input["timeout_ms"]
                    .as_u64()
                    .unwrap_or(DEFAULT_TIMEOUT_MS)
                    .clamp(1, MAX_TIMEOUT_MS),
            );
            let work = Box::pin(run(&workspace, &command, timeout, &withheld));
            let cancelled = Box::pin(ctx.cancel.cancelled());
            match futures::future::select(work, cancelled).await {
                futures::future::Either::Left((output, _)) => output,
                futures::future::Either::Right(_) => {
                    ToolOutput::error("the command was interrupted")
                }
            }
        })
    }
}

async fn run(
    workspace: &Workspace,
    command: &str,
    timeout: Duration,
    withheld: &[OsString],
) -> ToolOutput {
    let mut cmd = tokio::process::Command::new("sh");
    for name in withheld {
        cmd.env_remove(name);
    }
    cmd.arg("-c")
        .arg(command)
        .current_dir(workspace.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return ToolOutput::error(format!("cannot start the shell: {e}")),
    };
    let pid = child.id();
    // Declared after `child`, so dropped before it: the group is killed while the shell is
    // at worst a zombie, its pid (the group's id) still its own.
    let group = GroupGuard::new(pid);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let wait = async {
        let status = child.wait().await;
        if status.is_ok() {
            group.disarm();
        }
        status
    };
    let work = futures::future::join3(bounded(stdout), bounded(stderr), wait);
    match tokio::time::timeout(timeout, work).await {
        Ok((out, err, status)) => {
            let code = status.ok().and_then(|s| s.code());
            tracing::info!(
                name: names::EVENT_SHELL_EXIT,
                { { names::PROCESS_EXIT_CODE } = i64::from(code.unwrap_or(-1)) },
                "the command exited"
            );
            let mut text = match code {
                Some(code) => format!("exit code: {code}\n"),
                None => "exit code: none (killed by a signal)\n".to_owned(),
            };
            text.push_str(&out);
            if !err.is_empty() {
                text.push_str("\n[stderr]\n");
                text.push_str(&err);
            }
            ToolOutput::text(text).with_is_error(code != Some(0))
        }
        Err(_) => {
            kill_group(pid);
            group.disarm();
            tracing::info!(
                name: names::EVENT_SHELL_EXIT,
                { { names::ERROR_TYPE } = "timeout" },
                "the command timed out and was killed"
            );
            ToolOutput::error(format!(
                "the command timed out after {} ms and was killed",
                timeout.as_millis()
            ))
        }
    }
}

/// Kills the command's process group when dropped — the `run` future dropped by a cancel or
/// by a dropped stream; `kill_on_drop` reaches `sh` alone — unless the group was dealt with:
/// the shell was reaped (after which its pid, the group's id, may be another process's) or
/// the timeout killed the group.
struct GroupGuard {
    pid: Option<u32>,
    done: AtomicBool,
}

impl GroupGuard {
    fn new(pid: Option<u32>) -> GroupGuard {
        GroupGuard {
            pid,
            done: AtomicBool::new(false),
        }
    }

    /// The shell was reaped (or the group already killed): nothing to kill on drop.
    fn disarm(&self) {
        self.done.store(true, Ordering::Release);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.done.load(Ordering::Acquire) {
            kill_group(self.pid);
        }
    }
}

/// Kills the command's whole process group (the shell and what it started).
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        use rustix::process::{Signal, getpgid, getpgrp, kill_process_group};
        // Only a group of the command's own (`process_group(0)`: its id is the pid), never
        // the group this process runs in.
        if getpgid(Some(pid)).ok() == Some(pid) && getpgrp() != pid {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Reads a pipe to its end, keeping the first [`MAX_OUTPUT_BYTES`].
async fn bounded<R: AsyncRead + Unpin>(pipe: Option<R>) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut dropped = 0usize;
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = (MAX_OUTPUT_BYTES + 4).saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if cut_at(&mut text, MAX_OUTPUT_BYTES) || dropped > 0 {
        text.push_str(&format!("\n[output cut at {MAX_OUTPUT_BYTES} bytes]"));
    }
    text
}
