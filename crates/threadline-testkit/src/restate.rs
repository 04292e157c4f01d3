//! A real Restate server for tests (feature `restate`): the pinned `restate-server` binary
//! (installed by `cargo xtask restate-server`, never downloaded here) started on free loopback
//! ports with a fresh temporary base directory, small enough for a 2-core CI machine.
//!
//! ```no_run
//! # async fn demo() -> Result<(), threadline_testkit::restate::HarnessError> {
//! use threadline_testkit::restate::RestateServer;
//!
//! let server = RestateServer::start().await?;
//! let id = server.register_deployment("http://127.0.0.1:9080").await?;
//! let rows = server.sql("SELECT id FROM sys_deployment").await?;
//! assert_eq!(rows[0]["id"], id.as_str());
//! # Ok(()) }
//! ```
//!
//! An out-of-process orchestrator (e.g. an xtask) that wants its own child can reuse the same
//! configuration: [`server_binary`], [`Ports::pick`] and [`server_command`].

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The environment variable naming the `restate-server` binary to run instead of the pinned one.
pub const SERVER_ENV: &str = "THREADLINE_RESTATE_SERVER";

/// The pinned binary, relative to the workspace root (see `scripts/install-restate-server.sh`).
pub const PINNED_BINARY: &str =
    "target/restate-server/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server";

/// The largest response body the harness reads from the server.
const MAX_BODY: usize = 32 * 1024 * 1024;
/// How much of the server's log an error quotes.
const LOG_TAIL_BYTES: u64 = 4096;
/// How many times [`RestateServer::start_with`] retries when the server exits at once (a port
/// picked by [`Ports::pick`] was taken in between).
const START_ATTEMPTS: usize = 3;

/// How the server is configured. Durations are passed to the server as milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `worker.invoker.inactivity-timeout`: how long an invocation may stay silent before the
    /// server suspends or aborts it (server default 1 min).
    pub inactivity_timeout: Duration,
    /// `worker.invoker.abort-timeout`: how long after the inactivity timeout an invocation that
    /// cannot suspend is aborted (server default 10 min).
    pub abort_timeout: Duration,
    /// `default-num-partitions` (server default 24).
    pub partitions: u32,
    /// `default-retry-policy.initial-interval`.
    pub retry_initial_interval: Duration,
    /// `default-retry-policy.max-interval`.
    pub retry_max_interval: Duration,
    /// `rocksdb-total-memory-size`, in MiB (server default 2048).
    pub rocksdb_memory_mib: u32,
    /// How long [`RestateServer::start_with`] waits for both health endpoints.
    pub startup_timeout: Duration,
    /// More environment variables for the server (`RESTATE_...`), set after the harness's own.
    pub extra_env: Vec<(String, String)>,
    /// Sign every request to a deployment with this key (request identity; the PEM is
    /// written into the server's base directory and named by [`SIGNING_KEY_ENV`]).
    pub signing_key: Option<SigningKey>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            inactivity_timeout: Duration::from_secs(60),
            abort_timeout: Duration::from_secs(600),
            partitions: 2,
            retry_initial_interval: Duration::from_millis(100),
            retry_max_interval: Duration::from_millis(500),
            rocksdb_memory_mib: 256,
            startup_timeout: Duration::from_secs(30),
            extra_env: Vec::new(),
            signing_key: None,
        }
    }
}

/// The server option naming the Ed25519 private key (PKCS#8 PEM) it signs its requests to
/// deployments with (`worker.invoker.request-identity-private-key-pem-file`).
pub const SIGNING_KEY_ENV: &str = "RESTATE_WORKER__INVOKER__REQUEST_IDENTITY_PRIVATE_KEY_PEM_FILE";

/// A fresh request-identity key pair: the private key as the server reads it and the public
/// key as a worker takes it (`publickeyv1_` + base58 of the 32-byte Ed25519 key, the `kid` the
/// server logs at startup).
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    pem: String,
    public_key: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Generates an Ed25519 key pair (ring).
    pub fn generate() -> Result<Self, HarnessError> {
        use base64::Engine as _;
        use ring::signature::{Ed25519KeyPair, KeyPair as _};
        let failed = |what: &str| HarnessError::Key {
            what: what.to_owned(),
        };
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|_| failed("generating"))?;
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(|_| failed("reading"))?;
        let base64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
        let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
        for line in base64.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        let public_key = format!(
            "publickeyv1_{}",
            bs58::encode(pair.public_key().as_ref()).into_string()
        );
        Ok(Self { pem, public_key })
    }

    /// The private key, PKCS#8 PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// The public key, `publickeyv1_…`.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }
}

/// The three loopback ports a server listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    /// The ingress (`RESTATE_INGRESS__BIND_ADDRESS`): invocations, awakeables.
    pub ingress: u16,
    /// The admin API (`RESTATE_ADMIN__BIND_ADDRESS`): deployments, SQL, invocation control.
    pub admin: u16,
    /// The node-to-node message fabric (`RESTATE_BIND_ADDRESS`).
    pub node: u16,
}

impl Ports {
    /// Three distinct free ports on 127.0.0.1 (bound together, then released: another process
    /// may still take one before the server binds it, which [`RestateServer::start_with`]
    /// handles by retrying).
    pub fn pick() -> io::Result<Self> {
        let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let b = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let c = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        Ok(Self {
            ingress: a.local_addr()?.port(),
            admin: b.local_addr()?.port(),
            node: c.local_addr()?.port(),
        })
    }
}

/// Why the harness failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The binary is not installed.
    #[error(
        "restate-server not found at {}: run `cargo xtask restate-server` (or set {SERVER_ENV} to a restate-server 1.7 binary)",
        path.display()
    )]
    MissingBinary {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A local I/O operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The server exited or did not become healthy in time.
    #[error("restate-server {what}; last log lines:\n{log_tail}")]
    NotReady {
        /// What happened.
        what: String,
        /// The end of the server's log.
        log_tail: String,
    },
    /// An HTTP exchange with the server failed (connection, timeout, body too large, not JSON).
    #[error("{what}: {detail}")]
    Http {
        /// The request.
        what: String,
        /// What went wrong.
        detail: String,
    },
    /// A signing key could not be generated.
    #[error("cannot make a request-identity key ({what})")]
    Key {
        /// The step that failed.
        what: String,
    },
    /// The server answered with an unexpected status.
    #[error("{what}: HTTP {status}: {body}")]
    Status {
        /// The request.
        what: String,
        /// The status code.
        status: u16,
        /// The response body (lossy UTF-8).
        body: String,
    },
}

impl HarnessError {
    /// Whether the binary is missing (the test environment is not set up).
    pub fn is_missing_binary(&self) -> bool {
        matches!(self, Self::MissingBinary { .. })
    }

    fn io(what: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }
}

/// The workspace root (this crate lives in `crates/threadline-testkit`).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// The binary to run: `$THREADLINE_RESTATE_SERVER` if set, else the pinned install
/// ([`PINNED_BINARY`] under the workspace root). Fails if it does not exist; never downloads.
pub fn server_binary() -> Result<PathBuf, HarnessError> {
    let path = match std::env::var_os(SERVER_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => workspace_root().join(PINNED_BINARY),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(HarnessError::MissingBinary { path })
    }
}

fn millis(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// The command that starts `binary` on `ports` with `base_dir` and `options`, exactly as
/// [`RestateServer::start_with`] runs it (stdio not set; the caller redirects the log).
///
/// Telemetry is off (`DO_NOT_TRACK=1`, `RESTATE_DISABLE_TELEMETRY=true`), the listeners are
/// TCP on 127.0.0.1 only, logs are JSON without the logo, and `ANTHROPIC_API_KEY` is removed
/// from the child's environment.
pub fn server_command(binary: &Path, base_dir: &Path, ports: Ports, options: &Options) -> Command {
    let mut cmd = Command::new(binary);
    cmd.arg("--base-dir")
        .arg(base_dir)
        .args(["--listen-mode", "tcp", "--no-logo", "--log-format", "json"])
        .env_remove("ANTHROPIC_API_KEY")
        .env("DO_NOT_TRACK", "1")
        .env("RESTATE_DISABLE_TELEMETRY", "true")
        .env(
            "RESTATE_INGRESS__BIND_ADDRESS",
            format!("127.0.0.1:{}", ports.ingress),
        )
        .env(
            "RESTATE_ADMIN__BIND_ADDRESS",
            format!("127.0.0.1:{}", ports.admin),
        )
        .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{}", ports.node))
        .env(
            "RESTATE_DEFAULT_NUM_PARTITIONS",
            options.partitions.to_string(),
        )
        .env(
            "RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE",
            format!("{}MiB", options.rocksdb_memory_mib),
        )
        .env("RESTATE_ADMIN__QUERY_ENGINE__MEMORY_SIZE", "64MiB")
        .env(
            "RESTATE_WORKER__INVOKER__INACTIVITY_TIMEOUT",
            millis(options.inactivity_timeout),
        )
        .env(
            "RESTATE_WORKER__INVOKER__ABORT_TIMEOUT",
            millis(options.abort_timeout),
        )
        .env(
            "RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL",
            millis(options.retry_initial_interval),
        )
        .env(
            "RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL",
            millis(options.retry_max_interval),
        );
    for (k, v) in &options.extra_env {
        cmd.env(k, v);
    }
    cmd
}

/// The last [`LOG_TAIL_BYTES`] of a log file (lossy UTF-8), or a note why it cannot be read.
fn log_tail(path: &Path) -> String {
    let read = || -> io::Result<String> {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    };
    read().unwrap_or_else(|e| format!("(cannot read {}: {e})", path.display()))
}

/// A small HTTP/1.1 JSON client for the harness's own requests.
#[derive(Clone)]
struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Http {
    fn new() -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// One request; returns the status and the (bounded) body.
    async fn request(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), HarnessError> {
        let what = format!("{method} {url}");
        let http = |detail: String| HarnessError::Http {
            what: what.clone(),
            detail,
        };
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(url)
            .header("accept", "application/json");
        // A handler without input wants neither a body nor a content type.
        if body.as_ref().is_some_and(|b| !b.is_empty()) {
            builder = builder.header("content-type", "application/json");
        }
        let req = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| http(e.to_string()))?;
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| http(e.to_string()))?;
            let status = resp.status().as_u16();
            let bytes = Limited::new(resp.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| http(format!("reading the body: {e}")))?
                .to_bytes();
            Ok((status, bytes))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| http(format!("no answer within {timeout:?}")))?
    }

    /// A request that must answer 2xx with a JSON body.
    async fn json(
        &self,
        method: Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<serde_json::Value, HarnessError> {
        let what = format!("{method} {url}");
        let bytes = body.map(|b| b.to_string().into_bytes());
        let (status, resp) = self
            .request(method, url, bytes, Duration::from_secs(30))
            .await?;
        if !(200..300).contains(&status) {
            return Err(HarnessError::Status {
                what,
                status,
                body: String::from_utf8_lossy(&resp).into_owned(),
            });
        }
        serde_json::from_slice(&resp).map_err(|e| HarnessError::Http {
            what,
            detail: format!("not JSON: {e}"),
        })
    }
}

/// A running `restate-server`, killed (SIGKILL) and its base directory removed on drop.
pub struct RestateServer {
    child: Option<Child>,
    ports: Ports,
    log_path: PathBuf,
    http: Http,
    // Last: removed after the child is killed.
    base: tempfile::TempDir,
}

impl std::fmt::Debug for RestateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestateServer")
            .field("pid", &self.pid())
            .field("ports", &self.ports)
            .field("base_dir", &self.base.path())
            .finish_non_exhaustive()
    }
}

impl RestateServer {
    /// Starts a server with [`Options::default`] and waits until it is healthy.
    pub async fn start() -> Result<Self, HarnessError> {
        Self::start_with(Options::default()).await
    }

    /// Starts a server with `options` and waits until `GET {admin}/health` and
    /// `GET {ingress}/restate/health` both answer 200 (at most `options.startup_timeout`).
    pub async fn start_with(options: Options) -> Result<Self, HarnessError> {
        let binary = server_binary()?;
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match Self::start_once(&binary, &options).await {
                Ok(server) => return Ok(server),
                // The child exited at once: most likely a picked port was taken; retry.
                Err((true, e)) => last = Some(e),
                Err((false, e)) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| HarnessError::NotReady {
            what: "did not start".to_owned(),
            log_tail: String::new(),
        }))
    }

    /// One attempt; the flag says whether the child exited on its own (worth a retry).
    async fn start_once(binary: &Path, options: &Options) -> Result<Self, (bool, HarnessError)> {
        let fatal = |e| (false, e);
        let base = tempfile::Builder::new()
            .prefix("threadline-restate-")
            .tempdir()
            .map_err(|e| fatal(HarnessError::io("creating the base directory", e)))?;
        let ports = Ports::pick().map_err(|e| fatal(HarnessError::io("picking free ports", e)))?;
        let log_path = base.path().join("restate-server.log");
        let log = File::create(&log_path)
            .map_err(|e| fatal(HarnessError::io("creating the server log", e)))?;
        let log_err = log
            .try_clone()
            .map_err(|e| fatal(HarnessError::io("creating the server log", e)))?;
        let data_dir = base.path().join("data");
        let mut command = server_command(binary, &data_dir, ports, options);
        if let Some(key) = &options.signing_key {
            let path = base.path().join("request-identity.pem");
            std::fs::write(&path, key.pem())
                .map_err(|e| fatal(HarnessError::io("writing the signing key", e)))?;
            command.env(SIGNING_KEY_ENV, &path);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .spawn()
            .map_err(|e| {
                fatal(HarnessError::io(
                    format!("starting {}", binary.display()),
                    e,
                ))
            })?;
        let mut server = Self {
            child: Some(child),
            ports,
            log_path,
            http: Http::new(),
            base,
        };
        server.wait_healthy(options.startup_timeout).await?;
        Ok(server)
    }

    async fn wait_healthy(&mut self, timeout: Duration) -> Result<(), (bool, HarnessError)> {
        let deadline = Instant::now() + timeout;
        let admin = format!("{}/health", self.admin_url());
        let ingress = format!("{}/restate/health", self.ingress_url());
        let probe = Duration::from_secs(1);
        let mut admin_up = false;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err((
                    true,
                    HarnessError::NotReady {
                        what: format!("exited during startup ({status})"),
                        log_tail: log_tail(&self.log_path),
                    },
                ));
            }
            if !admin_up {
                admin_up = matches!(
                    self.http.request(Method::GET, &admin, None, probe).await,
                    Ok((200, _))
                );
            }
            if admin_up
                && matches!(
                    self.http.request(Method::GET, &ingress, None, probe).await,
                    Ok((200, _))
                )
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err((
                    false,
                    HarnessError::NotReady {
                        what: format!(
                            "not healthy within {timeout:?} (admin /health {})",
                            if admin_up { "up" } else { "down" }
                        ),
                        log_tail: log_tail(&self.log_path),
                    },
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The ports it listens on.
    pub fn ports(&self) -> Ports {
        self.ports
    }

    /// `http://127.0.0.1:{ingress}` (no trailing slash).
    pub fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.ingress)
    }

    /// `http://127.0.0.1:{admin}` (no trailing slash).
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.admin)
    }

    /// The temporary directory holding the server's data (`data/`) and log; removed on drop.
    pub fn base_dir(&self) -> &Path {
        self.base.path()
    }

    /// The server's log file (JSON lines, stdout and stderr).
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The end of the server's log (the last 4 KiB).
    pub fn log_tail(&self) -> String {
        log_tail(&self.log_path)
    }

    /// The child's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Registers the deployment at `uri` (`POST {admin}/deployments` with `force: true`) and
    /// returns its id (`dp_...`).
    pub async fn register_deployment(&self, uri: &str) -> Result<String, HarnessError> {
        let url = format!("{}/deployments", self.admin_url());
        let body = serde_json::json!({ "uri": uri, "force": true });
        let resp = self.http.json(Method::POST, &url, Some(&body)).await?;
        match resp.get("id").and_then(serde_json::Value::as_str) {
            Some(id) => Ok(id.to_owned()),
            None => Err(HarnessError::Http {
                what: format!("POST {url}"),
                detail: format!("no deployment id in {resp}"),
            }),
        }
    }

    /// Runs `query` on the admin SQL endpoint (`POST {admin}/query`) and returns its rows.
    pub async fn sql(&self, query: &str) -> Result<Vec<serde_json::Value>, HarnessError> {
        let url = format!("{}/query", self.admin_url());
        let body = serde_json::json!({ "query": query });
        let resp = self.http.json(Method::POST, &url, Some(&body)).await?;
        match resp.get("rows") {
            Some(serde_json::Value::Array(rows)) => Ok(rows.clone()),
            _ => Err(HarnessError::Http {
                what: format!("POST {url}"),
                detail: format!("no rows in {resp}"),
            }),
        }
    }

    /// `POST {ingress}{path}` with a JSON `body` (empty: no body and no content type, as a
    /// handler without input wants); returns the status and the body (at most
    /// 32 MiB). For tests that talk to the ingress without a client of their own.
    pub async fn ingress_post(
        &self,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Bytes), HarnessError> {
        let url = format!("{}{path}", self.ingress_url());
        self.http
            .request(
                Method::POST,
                &url,
                Some(body.to_vec()),
                Duration::from_secs(30),
            )
            .await
    }

    /// `GET {ingress}{path}`; returns the status and the body (at most 32 MiB).
    pub async fn ingress_get(&self, path: &str) -> Result<(u16, Bytes), HarnessError> {
        let url = format!("{}{path}", self.ingress_url());
        self.http
            .request(Method::GET, &url, None, Duration::from_secs(30))
            .await
    }

    /// Kills the server (SIGKILL) and waits for it. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // An error means it already exited; wait reaps it either way.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picked_ports_are_distinct() {
        let p = Ports::pick().expect("ports");
        assert_ne!(p.ingress, p.admin);
        assert_ne!(p.admin, p.node);
        assert_ne!(p.ingress, p.node);
        assert_ne!(p.ingress, 0);
    }

    #[test]
    fn command_configures_loopback_and_small_server() {
        let ports = Ports {
            ingress: 1001,
            admin: 1002,
            node: 1003,
        };
        let options = Options {
            inactivity_timeout: Duration::from_secs(5),
            ..Options::default()
        };
        let cmd = server_command(Path::new("/bin/rs"), Path::new("/tmp/b"), ports, &options);
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
        assert_eq!(
            args,
            [
                "--base-dir",
                "/tmp/b",
                "--listen-mode",
                "tcp",
                "--no-logo",
                "--log-format",
                "json"
            ]
        );
        let env = |k: &str| {
            cmd.get_envs()
                .find(|(n, _)| *n == k)
                .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
        };
        assert_eq!(
            env("RESTATE_INGRESS__BIND_ADDRESS").as_deref(),
            Some("127.0.0.1:1001")
        );
        assert_eq!(
            env("RESTATE_ADMIN__BIND_ADDRESS").as_deref(),
            Some("127.0.0.1:1002")
        );
        assert_eq!(
            env("RESTATE_BIND_ADDRESS").as_deref(),
            Some("127.0.0.1:1003")
        );
        assert_eq!(
            env("RESTATE_WORKER__INVOKER__INACTIVITY_TIMEOUT").as_deref(),
            Some("5000ms")
        );
        assert_eq!(
            env("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL").as_deref(),
            Some("100ms")
        );
        assert_eq!(env("RESTATE_DEFAULT_NUM_PARTITIONS").as_deref(), Some("2"));
        assert_eq!(env("DO_NOT_TRACK").as_deref(), Some("1"));
        assert_eq!(env("ANTHROPIC_API_KEY"), None);
        assert!(
            cmd.get_envs()
                .any(|(n, v)| n == "ANTHROPIC_API_KEY" && v.is_none())
        );
    }

    #[test]
    fn missing_binary_names_the_install_command() {
        let e = HarnessError::MissingBinary {
            path: PathBuf::from("/nope/restate-server"),
        };
        assert!(e.is_missing_binary());
        assert_eq!(
            e.to_string(),
            "restate-server not found at /nope/restate-server: run `cargo xtask restate-server` (or set THREADLINE_RESTATE_SERVER to a restate-server 1.7 binary)"
        );
    }
}
