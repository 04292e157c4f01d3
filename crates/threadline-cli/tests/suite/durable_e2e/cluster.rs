//! One durable cluster on loopback, every part a real process but the proxy: a Restate server
//! (pinned, from `cargo xtask restate-server`) in a fresh base dir, `threadline mock`
//! answering by conversation position with its request log, and two `threadline worker`
//! processes behind one deployment address (a failover TCP proxy that connects to the first
//! worker still accepting). Each worker runs in a process group of its own, so a SIGKILL of the
//! group kills it with the shell commands it started, as when its machine dies.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use threadline_testkit::failover::FailoverProxy;
use threadline_testkit::restate::{Options, RestateServer};

use crate::common;

/// The session every scenario runs.
pub(crate) const SESSION: &str = "e2e";

/// A worker process.
pub(crate) struct WorkerProcess {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl WorkerProcess {
    /// The worker's machine dies: SIGKILL of the worker and of every process under it (the
    /// shell tool runs each command in a process group of its own, which would otherwise
    /// outlive the worker as an orphan); waits for the worker.
    pub(crate) fn kill(&mut self) {
        let root = i32::try_from(self.child.id()).expect("a pid fits i32");
        let _ = nix::sys::signal::kill(Pid::from_raw(root), Signal::SIGSTOP);
        let tree = descendants(root);
        let _ = killpg(Pid::from_raw(root), Signal::SIGKILL);
        for pid in tree {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// Every process whose chain of parents reaches `root` (from `/proc/*/stat`).
fn descendants(root: i32) -> Vec<i32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<i32>().ok())
        {
            parents.push((pid, ppid));
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree.remove(0);
    tree
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Today's date for the workers' system context (`THREADLINE_DATE`).
pub(crate) const DATE: &str = "2026-11-30";

/// How the workers run.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkerFlags {
    /// `--idempotent-tool Bash`.
    pub(crate) bash_idempotent: bool,
    /// `--step-delay-ms`.
    pub(crate) step_delay_ms: u64,
    /// The workspace's directory, emptied first (default: in the cluster's temporary
    /// directory).
    pub(crate) workspace: Option<PathBuf>,
    /// `--mcp-config FILE`.
    pub(crate) mcp_config: Option<PathBuf>,
    /// `--provider bedrock --model claude-sonnet-4-5`, signing with the mock's AWS test pair
    /// from the AWS variables.
    pub(crate) bedrock: bool,
}

pub(crate) struct Cluster {
    pub(crate) server: RestateServer,
    pub(crate) proxy: FailoverProxy,
    pub(crate) workers: Vec<WorkerProcess>,
    mock: Child,
    pub(crate) mock_log: PathBuf,
    /// Holds the mock's log, the workers' stderr and (by default) the workspace.
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    /// Runs the proxy; dropped last.
    _runtime: tokio::runtime::Runtime,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.mock.kill();
        let _ = self.mock.wait();
    }
}

/// Reads the `listening on http://ADDR` line a child prints first.
fn listening(child: &mut Child, what: &str) -> SocketAddr {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("{what}: no first line: {e}"));
    line.trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{what}: unexpected first line {line:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{what}: bad address in {line:?}: {e}"))
}

impl Cluster {
    pub(crate) fn start(flags: &WorkerFlags) -> Cluster {
        let scenario =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/durable_e2e/scenario.yaml");
        Cluster::start_with(flags, &scenario)
    }

    /// A cluster whose mock answers from `scenario`.
    pub(crate) fn start_with(flags: &WorkerFlags, scenario: &Path) -> Cluster {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let server = runtime
            .block_on(RestateServer::start_with(Options::default()))
            .unwrap_or_else(|e| panic!("the Restate server: {e}"));
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = match &flags.workspace {
            Some(path) => {
                let _ = std::fs::remove_dir_all(path);
                std::fs::create_dir_all(path).expect("workspace");
                path.clone()
            }
            None => {
                let path = dir.path().join("workspace");
                std::fs::create_dir(&path).expect("workspace");
                path
            }
        };
        std::fs::write(workspace.join("notes.txt"), "ship it\n").expect("notes");
        std::fs::write(workspace.join("AGENTS.md"), "Keep the notes short.\n").expect("agents");
        let mock_log = dir.path().join("mock-requests.jsonl");
        let mut mock = common::command()
            .args(["mock", "--addr", "127.0.0.1:0", "--scenario"])
            .arg(scenario)
            .arg("--record-log")
            .arg(&mock_log)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the mock starts");
        let mock_addr = listening(&mut mock, "mock");
        let workers: Vec<WorkerProcess> = ["a", "b"]
            .iter()
            .map(|name| start_worker(name, &workspace, dir.path(), mock_addr, flags))
            .collect();
        let proxy = runtime
            .block_on(FailoverProxy::start(
                workers.iter().map(|w| w.addr).collect(),
            ))
            .expect("proxy");
        runtime
            .block_on(server.register_deployment(&proxy.url()))
            .unwrap_or_else(|e| panic!("registering {}: {e}\n{}", proxy.url(), server.log_tail()));
        Cluster {
            _runtime: runtime,
            server,
            proxy,
            workers,
            mock,
            mock_log,
            _dir: dir,
            workspace,
        }
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.workspace.clone()
    }

    /// The lines of a file the shell commands append to (empty when absent).
    pub(crate) fn lines_of(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.workspace().join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The mock's request log, one JSON object per request.
    pub(crate) fn mock_requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.mock_log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Connections the proxy made to worker `index`.
    pub(crate) fn connections_to(&self, index: usize) -> usize {
        self.proxy
            .connections_per_backend()
            .get(&self.workers[index].addr)
            .copied()
            .unwrap_or(0)
    }

    /// `threadline run --restate … --session e2e PROMPT`, started.
    pub(crate) fn submit(&self, prompt: &str) -> Child {
        common::command()
            .args([
                "run",
                "--restate",
                &self.server.ingress_url(),
                "--session",
                SESSION,
                prompt,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("run --restate starts")
    }

    /// `threadline session show --restate … e2e` with `args`.
    pub(crate) fn show(&self, args: &[&str]) -> String {
        let output = common::command()
            .args([
                "session",
                "show",
                "--restate",
                &self.server.ingress_url(),
                SESSION,
            ])
            .args(args)
            .output()
            .expect("session show runs");
        assert_eq!(
            common::code(&output),
            0,
            "session show: {}",
            common::stderr(&output)
        );
        common::stdout(&output)
    }

    /// The `show` view as JSON.
    pub(crate) fn view(&self) -> serde_json::Value {
        serde_json::from_str(&self.show(&["--json"])).expect("the view is JSON")
    }
}

fn start_worker(
    name: &str,
    workspace: &Path,
    dir: &Path,
    mock: SocketAddr,
    flags: &WorkerFlags,
) -> WorkerProcess {
    use std::os::unix::process::CommandExt as _;
    let stderr = std::fs::File::create(dir.join(format!("worker-{name}.stderr"))).expect("log");
    let mut command = common::command();
    command
        .args(["worker", "--listen", "127.0.0.1:0", "--base-url"])
        .arg(format!("http://{mock}"))
        .arg("--workspace")
        .arg(workspace)
        .args(["--allow-shell", "--step-delay-ms"])
        .arg(flags.step_delay_ms.to_string())
        .env_remove("ANTHROPIC_API_KEY")
        .env("THREADLINE_DATE", DATE)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .process_group(0);
    if flags.bash_idempotent {
        command.args(["--idempotent-tool", "Bash"]);
    }
    // Worker `a` keeps the sessions it ran (the default), worker `b` keeps none and loads
    // every turn from the stored state: a session that moves between them must not tell.
    if name == "b" {
        command.args(["--session-cache-mib", "0"]);
    }
    if let Some(file) = &flags.mcp_config {
        command.arg("--mcp-config").arg(file);
    }
    if flags.bedrock {
        command
            .args(["--provider", "bedrock", "--model", "claude-sonnet-4-5"])
            .env("AWS_REGION", "eu-west-1")
            .env("AWS_ACCESS_KEY_ID", threadline_mock::MOCK_AWS_ACCESS_KEY_ID)
            .env(
                "AWS_SECRET_ACCESS_KEY",
                threadline_mock::MOCK_AWS_SECRET_ACCESS_KEY,
            )
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_BEARER_TOKEN_BEDROCK");
    }
    let mut child = command.spawn().expect("the worker starts");
    let addr = listening(&mut child, &format!("worker {name}"));
    WorkerProcess { child, addr }
}

/// Polls `done` every 20 ms until it holds, at most `limit`.
pub(crate) fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a `run --restate` child and returns its stdout; it must exit 0.
pub(crate) fn finish(mut child: Child, what: &str) -> String {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let output = child.wait_with_output().expect("output");
            assert!(
                status.success(),
                "{what}: {status}\nstdout: {}\nstderr: {}",
                common::stdout(&output),
                common::stderr(&output)
            );
            return common::stdout(&output);
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "{what}: still running after 90 s\nstderr: {}",
                common::stderr(&output)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
