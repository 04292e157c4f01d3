//! The worker: what its sessions run with (model backend, loop configuration, tools,
//! permission mode, timeouts) and [`serve`], the Restate endpoint (HTTP/2 cleartext) that
//! binds the `Session` object.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::http_server::HttpServer;
use restate_sdk::prelude::{Endpoint, IntoServiceDefinition as _, ServiceOptions};
use threadline_query::{QueryConfig, Tool, ToolSet};
use threadline_wire::MessagesRequest;
use threadline_wire::service::{EventStreamFuture, MessagesService};

use crate::identity::{IdentityKey, IdentityKeyError, install_crypto};
use crate::session::cache::SessionCache;
use crate::session::{
    ConfigLoop, DEFAULT_SESSION_CACHE_BYTES, MAX_STEP_BYTES, PermissionMode, Session,
    SessionCacheStats, Settings, StepObserver, StepRecord, TurnLoop,
};

/// The model a worker calls (inside each journaled model step): any `MessagesService` that
/// is `Clone` (each call uses a clone), boxed by [`Worker::new`].
pub trait ModelBackend: Send + Sync {
    /// Sends `request`; the stream is consumed inside the step.
    fn call(&self, request: MessagesRequest) -> EventStreamFuture;
}

struct ServiceBackend<S>(S);

impl<S> ModelBackend for ServiceBackend<S>
where
    S: MessagesService + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
{
    fn call(&self, request: MessagesRequest) -> EventStreamFuture {
        let mut service = self.0.clone();
        Box::pin(async move {
            futures::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(request).await
        })
    }
}

/// A worker's configuration. Build it with [`Worker::new`] and the `with_*` methods, then
/// [`serve`] it.
///
/// ```
/// use std::time::Duration;
/// use threadline_query::QueryConfig;
/// use threadline_query::scripted::ScriptedService;
/// use threadline_restate::{PermissionMode, Worker};
///
/// let worker = Worker::new(ScriptedService::new([]), QueryConfig::new("claude-sonnet-4-5", 1024))
///     .with_permission(PermissionMode::Ask)
///     .with_timeouts(Duration::from_secs(300), Duration::from_secs(600));
/// assert_eq!(worker.inactivity_timeout(), Duration::from_secs(300));
/// ```
#[derive(Clone)]
pub struct Worker {
    settings: Arc<Settings>,
    inactivity_timeout: Duration,
    abort_timeout: Duration,
    identity_keys: Vec<IdentityKey>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("model", &self.settings.plain.config.model)
            .field("tools", &self.settings.plain.tools)
            .field("custom_loop", &self.settings.custom.is_some())
            .field("permission", &self.settings.permission)
            .field("step_delay", &self.settings.step_delay)
            .field("inactivity_timeout", &self.inactivity_timeout)
            .field("abort_timeout", &self.abort_timeout)
            .field("session_cache", &self.settings.sessions)
            .field("identity_keys", &self.identity_keys)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// The default inactivity timeout: above the longest model stream or tool call.
    pub const DEFAULT_INACTIVITY_TIMEOUT: Duration = Duration::from_secs(30 * 60);
    /// The default abort timeout.
    pub const DEFAULT_ABORT_TIMEOUT: Duration = Duration::from_secs(60 * 60);

    /// A worker calling `model` with `config` (model, max tokens, system prompt…), no
    /// tools, [`PermissionMode::Deny`], the default timeouts.
    pub fn new<S>(model: S, config: QueryConfig) -> Worker
    where
        S: MessagesService + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
    {
        Worker {
            settings: Arc::new(Settings {
                backend: Arc::new(ServiceBackend(model)),
                plain: ConfigLoop {
                    config,
                    tools: ToolSet::new(),
                    planner: Some(Arc::new(threadline_cache::Planner::default)),
                    compaction: Some(threadline_compact::Compaction::default()),
                },
                custom: None,
                permission: PermissionMode::Deny,
                step_delay: Duration::ZERO,
                max_step_bytes: MAX_STEP_BYTES,
                idempotent: Default::default(),
                observer: None,
                sessions: Arc::new(SessionCache::new(DEFAULT_SESSION_CACHE_BYTES)),
            }),
            inactivity_timeout: Self::DEFAULT_INACTIVITY_TIMEOUT,
            abort_timeout: Self::DEFAULT_ABORT_TIMEOUT,
            identity_keys: Vec::new(),
        }
    }

    fn edit(mut self, change: impl FnOnce(&mut Settings)) -> Worker {
        if let Some(settings) = Arc::get_mut(&mut self.settings) {
            change(settings);
            return self;
        }
        let old = &self.settings;
        let mut settings = Settings {
            backend: Arc::clone(&old.backend),
            plain: old.plain.clone(),
            custom: old.custom.clone(),
            permission: old.permission,
            step_delay: old.step_delay,
            max_step_bytes: old.max_step_bytes,
            idempotent: old.idempotent.clone(),
            observer: old.observer.clone(),
            sessions: Arc::clone(&old.sessions),
        };
        change(&mut settings);
        self.settings = Arc::new(settings);
        self
    }

    /// Replaces the tools.
    pub fn with_tools(self, tools: ToolSet) -> Worker {
        self.edit(|s| s.plain.tools = tools)
    }

    /// Adds a tool.
    pub fn with_tool(self, tool: impl Tool + 'static) -> Worker {
        self.edit(|s| s.plain.tools.insert(Arc::new(tool)))
    }

    /// Declares the tool `name` idempotent whatever it says itself
    /// ([`Tool::is_idempotent`]): a call of it cut by a crash runs again on the next attempt
    /// instead of being answered as interrupted (an operator who knows their shell commands
    /// are safe to repeat, for instance).
    pub fn with_idempotent_tool(self, name: impl Into<String>) -> Worker {
        let name = name.into();
        self.edit(|s| {
            s.idempotent.insert(name);
        })
    }

    /// Whether the worker's turns have a tool named `name`.
    pub fn has_tool(&self, name: &str) -> bool {
        self.settings.turn_loop().has_tool(name)
    }

    /// Runs every turn with `turn_loop`'s loop (`threadline::Agent` is one, so a worker runs
    /// the very loop, requests and attachments of an embedded agent) instead of the plain
    /// loop that [`new`](Self::new)'s `QueryConfig`, [`with_tools`](Self::with_tools),
    /// [`with_cache_planner`](Self::with_cache_planner) and
    /// [`with_compaction`](Self::with_compaction) describe: those then no longer apply. The
    /// model backend, permission mode, limits and timeouts stay the worker's.
    pub fn with_turn_loop(self, turn_loop: impl TurnLoop) -> Worker {
        let turn_loop: Arc<dyn TurnLoop> = Arc::new(turn_loop);
        self.edit(|s| s.custom = Some(turn_loop))
    }

    /// Who decides tool calls the tools would ask about.
    pub fn with_permission(self, permission: PermissionMode) -> Worker {
        self.edit(|s| s.permission = permission)
    }

    /// A pause after each journaled step, outside any step (a test kills a worker "between
    /// steps" with it). Default: none.
    pub fn with_step_delay(self, delay: Duration) -> Worker {
        self.edit(|s| s.step_delay = delay)
    }

    /// Calls `observer` after each journaled step (replayed ones included), before the step
    /// delay: a test or a process supervisor learns where a turn is without polling `show`
    /// (whose view lags: the SDK sends state writes with the next step).
    pub fn with_step_observer(
        self,
        observer: impl Fn(&StepRecord) + Send + Sync + 'static,
    ) -> Worker {
        let observer: StepObserver = Arc::new(observer);
        self.edit(|s| s.observer = Some(observer))
    }

    /// The prompt-cache planner of each turn, made fresh for every turn and every attempt
    /// (default: `Planner::default()`, the lookback-aware strategy). A planner remembers the
    /// requests it planned; starting each turn afresh means a replay on another worker plans
    /// the turn's requests again in the same order, so they carry the same markers.
    pub fn with_cache_planner(
        self,
        planner: impl Fn() -> threadline_cache::Planner + Send + Sync + 'static,
    ) -> Worker {
        self.edit(|s| s.plain.planner = Some(Arc::new(planner)))
    }

    /// The context policy of every turn (default: `Compaction::default()`: the tool-result
    /// budget, microcompact, autocompact at the model's threshold, reactive compaction after
    /// "prompt is too long"). An autocompact summary is a model call like any other: a
    /// journaled step, never sent again once journaled.
    pub fn with_compaction(self, compaction: threadline_compact::Compaction) -> Worker {
        self.edit(|s| s.plain.compaction = Some(compaction))
    }

    /// No compaction: a session that outgrows the context window ends with the loop's
    /// prompt-too-long terminal.
    pub fn without_compaction(self) -> Worker {
        self.edit(|s| s.plain.compaction = None)
    }

    /// Places no cache markers (every request is a cache miss; for tests of the bytes alone).
    pub fn without_cache_planning(self) -> Worker {
        self.edit(|s| s.plain.planner = None)
    }

    /// Keeps the sessions this worker ran last, up to `bytes` of their stored state in all
    /// (default [`DEFAULT_SESSION_CACHE_BYTES`]; 0 keeps none), so that a session's next turn
    /// on this worker continues from the state its previous turn left — normalizer and
    /// estimates warm — instead of deserializing and normalizing the whole history again.
    /// The kept state is used only when the stored state is byte for byte what this worker
    /// wrote (another worker's turn, or any edit, loads cold), so turns send the same requests
    /// either way. Replaces the kept sessions (those of the worker's clones too) with an
    /// empty cache for this worker.
    pub fn with_session_cache(self, bytes: usize) -> Worker {
        self.edit(|s| s.sessions = Arc::new(SessionCache::new(bytes)))
    }

    /// How the kept sessions ([`with_session_cache`](Self::with_session_cache)) served this
    /// worker's turns so far: sessions and bytes kept, warm and cold turns.
    pub fn session_cache(&self) -> SessionCacheStats {
        self.settings.sessions.stats()
    }

    /// The largest value a step journals (default and maximum [`MAX_STEP_BYTES`]).
    pub fn with_max_step_bytes(self, bytes: usize) -> Worker {
        self.edit(|s| s.max_step_bytes = bytes.min(MAX_STEP_BYTES))
    }

    /// The handlers' inactivity and abort timeouts, told to the Restate server at discovery
    /// (set them above the longest model stream or tool call, or the step is aborted and run
    /// again forever).
    pub fn with_timeouts(mut self, inactivity: Duration, abort: Duration) -> Worker {
        self.inactivity_timeout = inactivity;
        self.abort_timeout = abort;
        self
    }

    /// The inactivity timeout.
    pub fn inactivity_timeout(&self) -> Duration {
        self.inactivity_timeout
    }

    /// The abort timeout.
    pub fn abort_timeout(&self) -> Duration {
        self.abort_timeout
    }

    /// Obeys only requests signed by the Restate server holding the private key of `key`
    /// (request identity; repeat for several servers or a key rotation). A worker with at
    /// least one key answers 401 to an unsigned request or one signed by another key, at
    /// discovery and at each invocation; a worker without keys obeys anyone who reaches it,
    /// so [`serve`] refuses to listen on a non-loopback address without one.
    pub fn with_identity_key(mut self, key: IdentityKey) -> Worker {
        if !self.identity_keys.contains(&key) {
            self.identity_keys.push(key);
        }
        self
    }

    /// The keys of the servers this worker obeys (empty: any caller).
    pub fn identity_keys(&self) -> &[IdentityKey] {
        &self.identity_keys
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// An endpoint builder with the `Session` object bound with this worker's options and
    /// its identity keys: bind more objects on it (the `SessionLog` store) before `build()`.
    /// Fails only if the SDK refuses a key [`IdentityKey::new`] accepted.
    pub fn endpoint_builder(&self) -> Result<restate_sdk::endpoint::Builder, IdentityKeyError> {
        let mut builder = Endpoint::builder();
        if !self.identity_keys.is_empty() {
            install_crypto();
        }
        for key in &self.identity_keys {
            builder =
                builder
                    .identity_key(key.as_str())
                    .map_err(|e| IdentityKeyError::Malformed {
                        reason: e.to_string(),
                    })?;
        }
        let session = Session {
            settings: Arc::clone(&self.settings),
        }
        .into_service_definition()
        .options(
            ServiceOptions::new()
                .inactivity_timeout(self.inactivity_timeout)
                .abort_timeout(self.abort_timeout),
        );
        Ok(builder.bind(session))
    }

    /// The Restate endpoint [`serve`] serves: the `Session` object with this worker's
    /// options, verifying requests against its identity keys.
    pub fn endpoint(&self) -> Result<Endpoint, IdentityKeyError> {
        Ok(crate::store::bind_store(self.endpoint_builder()?).build())
    }
}

/// Why [`serve`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listener's address could not be read.
    #[error("the listener is unusable: {0}")]
    Listener(#[source] std::io::Error),
    /// The listener is reachable from other hosts and the worker has no identity key: anyone
    /// who reaches it could run turns (tools, the API key) and answer pending questions.
    #[error(
        "refusing to serve on {address} without an identity key: a worker reachable from other hosts must verify the Restate server's signed requests (give it the server's publickeyv1_ key) or listen on a loopback address"
    )]
    Unverified {
        /// The listening address.
        address: SocketAddr,
    },
    /// The SDK refused an identity key.
    #[error("{0}")]
    IdentityKey(#[from] IdentityKeyError),
}

/// Whether `address` is reachable from this host only (127.0.0.0/8, `::1`, or an
/// IPv4-mapped loopback address).
pub fn is_loopback(address: SocketAddr) -> bool {
    address.ip().to_canonical().is_loopback()
}

/// Serves `worker`'s endpoint on `listener` (HTTP/2 cleartext, prior knowledge, what the
/// Restate server speaks) until `shutdown` completes.
///
/// A worker without identity keys ([`Worker::with_identity_key`]) is served on a loopback
/// address only ([`ServeError::Unverified`] otherwise).
pub async fn serve(
    listener: tokio::net::TcpListener,
    worker: Worker,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let address = listener.local_addr().map_err(ServeError::Listener)?;
    if worker.identity_keys.is_empty() && !is_loopback(address) {
        return Err(ServeError::Unverified { address });
    }
    let endpoint = worker.endpoint()?;
    // Every journal entry is a small HTTP/2 frame the server waits for: without TCP_NODELAY
    // Nagle's algorithm holds each one back (a durable turn took 5x as long in the bench).
    // The SDK's server accepts the connections itself; Linux copies the option from the
    // listener to each socket it accepts.
    socket2::SockRef::from(&listener)
        .set_tcp_nodelay(true)
        .map_err(ServeError::Listener)?;
    tracing::info!(
        %address,
        identity_keys = worker.identity_keys.len(),
        "threadline worker serving the Session object"
    );
    HttpServer::new(endpoint)
        .serve_with_cancel(listener, shutdown)
        .await;
    Ok(())
}
