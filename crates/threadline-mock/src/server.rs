//! The HTTP server: routing, request checks, scripted answers, recording, within the
//! [`ServerLimits`].

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use serde_json::Value;
use threadline_validate::{ValidateOptions, Violation, validate_count_tokens_with, validate_with};
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::platform::Platform;
use threadline_wire::{ApiErrorType, CountTokensRequest, MessagesRequest};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::body::{BodyRefused, read_body};
use crate::connections::{Connections, RequestGuard, Slot};
use crate::limits::{MAX_HTTP2_STREAMS, ServerLimits};
use crate::platforms::{Admitted, Front, PlatformCredentials};
use crate::recording::Recording;
use crate::request_log::{Chosen, Entry, Outcome, RequestLog};
use crate::respond::{self, Ending};
use crate::scenario::{AnswerBy, ErrorStep, FixtureStep, MessageStep, Scenario, Step};
use crate::simulated_usage::SimulatedUsage;
use crate::usage::UsageModel;

/// How long a connection told to close may take to finish what it has in flight.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// How long a connection closed with no request in flight may take to go (an HTTP/2 GOAWAY
/// to flush); a request head still arriving is not waited for.
const IDLE_CLOSE_GRACE: Duration = Duration::from_millis(100);

/// How many idle connections are closed when `accept` fails (out of file descriptors).
const EVICTED_ON_ACCEPT_FAILURE: usize = 16;

/// A request the mock received. Credentials are recorded as `[redacted]`; a body the mock
/// rejected (a failed check, too large, refused under load) is not kept.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, …
    pub method: String,
    /// `/v1/messages`, …
    pub path: String,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    /// Headers by lower-case name (`x-api-key` and `authorization` redacted).
    pub headers: BTreeMap<String, String>,
    /// The body as JSON, when it was JSON and passed the mock's checks (and fits
    /// [`ServerLimits::max_recorded_bytes`]).
    pub body: Option<Value>,
    /// The body's size in bytes (for a body too large, the bytes read before it was refused).
    pub body_bytes: usize,
    /// What the mock answered (the status, or `None` for a reset).
    pub status: Option<u16>,
    /// The error message of a request the mock refused (a failed check), as it answered it.
    pub refusal: Option<String>,
}

/// How to run a mock server.
pub struct MockConfig {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub addr: SocketAddr,
    /// The answers.
    pub scenario: Scenario,
    /// Where usage comes from.
    pub usage: Arc<dyn UsageModel>,
    /// The bounds on bodies, recordings and connections.
    pub limits: ServerLimits,
    /// The file the request log is appended to, if any (see
    /// [`with_record_log`](Self::with_record_log)).
    pub record_log: Option<std::path::PathBuf>,
    /// The models served (see [`with_models`](Self::with_models)); the built-in table by
    /// default.
    pub models: &'static ModelTable,
    /// The credentials the cloud platforms' fronts accept (see
    /// [`with_platform_credentials`](Self::with_platform_credentials)).
    pub platforms: PlatformCredentials,
}

impl std::fmt::Debug for MockConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockConfig")
            .field("addr", &self.addr)
            .field("scenario", &self.scenario)
            .field("limits", &self.limits)
            .field("record_log", &self.record_log)
            .field("models", &self.models.models().len())
            .finish_non_exhaustive()
    }
}

impl MockConfig {
    /// On a free loopback port, with usage from the prompt-cache simulator.
    pub fn new(scenario: Scenario) -> Self {
        MockConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            scenario,
            usage: Arc::new(SimulatedUsage::new()),
            limits: ServerLimits::default(),
            record_log: None,
            models: ModelTable::builtin(),
            platforms: PlatformCredentials::default(),
        }
    }

    /// This configuration accepting these credentials on the cloud platforms' fronts (by
    /// default the AWS test pair [`MOCK_AWS_ACCESS_KEY_ID`](crate::MOCK_AWS_ACCESS_KEY_ID) /
    /// [`MOCK_AWS_SECRET_ACCESS_KEY`](crate::MOCK_AWS_SECRET_ACCESS_KEY), and any non-empty
    /// Vertex token or Foundry key).
    pub fn with_platform_credentials(mut self, credentials: PlatformCredentials) -> Self {
        self.platforms = credentials;
        self
    }

    /// This configuration serving the models of `table` (the built-in table extended by a
    /// file, say: [`ModelTable::extended_from_json`]) instead of the built-in ones: a model
    /// the table knows is served, any other is a 404, as the API answers. The default usage
    /// model simulates the cache with the same table; call this before
    /// [`with_usage_model`](Self::with_usage_model), which it would replace. The table is
    /// kept for the rest of the process (leaked: the simulator borrows its rows), so
    /// configure a mock with extra models once, not per request.
    pub fn with_models(mut self, table: ModelTable) -> Self {
        let table: &'static ModelTable = Box::leak(Box::new(table));
        self.usage = Arc::new(SimulatedUsage::with_table(table));
        self.models = table;
        self
    }

    /// This configuration appending one JSON line per request on `/v1/messages` and
    /// `/v1/messages/count_tokens` to `path` (created if missing, appended to if not), as
    /// each request is answered: what was received (the exact body and its SHA-256), which
    /// step answered and the usage answered. [`MockServer::start_with`] fails when the file
    /// cannot be opened. The format: [`request_log`](crate::request_log).
    pub fn with_record_log(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.record_log = Some(path.into());
        self
    }

    /// This configuration on another address.
    pub fn with_addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// This configuration with another usage model (a cache simulator, say).
    pub fn with_usage_model(mut self, usage: Arc<dyn UsageModel>) -> Self {
        self.usage = usage;
        self
    }

    /// This configuration with other limits.
    pub fn with_limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }
}

struct State {
    scenario: Scenario,
    next_step: AtomicU64,
    routes: crate::routes::RouteCursors,
    counter: AtomicU64,
    recording: Mutex<Recording>,
    usage: Arc<dyn UsageModel>,
    limits: ServerLimits,
    /// Permits are body bytes past each body's first 16 KiB (see [`read_body`]).
    body_budget: Arc<Semaphore>,
    /// Cache diagnostics' fingerprints of answered requests.
    fingerprints: crate::diagnostics::Fingerprints,
    /// The request log, when configured.
    log: Option<RequestLog>,
    /// The models served.
    models: &'static ModelTable,
    /// The same models as each cloud platform offers them (`ModelTable::on_platform`): its
    /// model ids, and without what it withholds.
    platform_models: Vec<ModelTable>,
    /// The credentials each platform's front accepts.
    platforms: PlatformCredentials,
    /// The Google access tokens the token endpoint issued (the last `MAX_ISSUED_TOKENS`).
    issued_tokens: Mutex<Vec<String>>,
}

/// The step chosen for a request, and how its ids are made.
struct Choice {
    step: Step,
    route: Option<usize>,
    index: usize,
    by: AnswerBy,
    /// Under [`AnswerBy::Turn`]: the seed of the answer's ids (from the conversation and
    /// the step), so that the same request gets the same ids.
    seed: Option<u64>,
}

/// Where an answer's message and tool ids come from: the server's counter, or a seed.
enum Ids<'a> {
    Counter(&'a State),
    Seeded { seed: u64, n: std::cell::Cell<u32> },
}

impl Ids<'_> {
    fn next(&self, prefix: &str) -> String {
        match self {
            Ids::Counter(state) => state.next_id(prefix),
            Ids::Seeded { seed, n } => {
                let k = n.get();
                n.set(k.saturating_add(1));
                format!("{prefix}_mock{seed:016x}{k:04}")
            }
        }
    }
}

impl State {
    /// The models as `platform` offers them.
    fn models_on(&self, platform: Platform) -> &ModelTable {
        self.platform_models
            .iter()
            .find(|table| table.platform() == platform)
            .unwrap_or(self.models)
    }

    fn next_id(&self, prefix: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{prefix}_mock{n:020}")
    }

    fn take_step(&self, request: &MessagesRequest) -> Choice {
        let scenario = &self.scenario;
        let routes = &scenario.routes;
        let wants_opening = !routes.is_empty() || scenario.answer_by == AnswerBy::Turn;
        let opening = if wants_opening {
            crate::routes::opening_text(request)
        } else {
            String::new()
        };
        let route = crate::routes::matching(routes, &opening);
        let (steps, by, repeat_last, exhausted) = match route.and_then(|i| routes.get(i)) {
            Some(r) => (
                &r.steps,
                r.answer_by.unwrap_or(scenario.answer_by),
                false,
                "(the mock's route has no more answers)",
            ),
            None => (
                &scenario.steps,
                scenario.answer_by,
                scenario.repeat_last,
                "(the mock's scenario has no more answers)",
            ),
        };
        let index = match (by, route) {
            (AnswerBy::Turn, _) => crate::routes::turn_of(request),
            (AnswerBy::Order, Some(i)) => self.routes.next(i),
            (AnswerBy::Order, None) => {
                usize::try_from(self.next_step.fetch_add(1, Ordering::Relaxed))
                    .unwrap_or(usize::MAX)
            }
        };
        let step = match (steps.get(index), steps.last()) {
            (Some(step), _) => step.clone(),
            (None, Some(last)) if repeat_last => last.clone(),
            _ => Step::text(exhausted),
        };
        let seed = (by == AnswerBy::Turn).then(|| {
            let key = format!("{route:?}\n{index}\n{opening}");
            crate::request_log::sha256_u64(key.as_bytes())
        });
        Choice {
            step,
            route,
            index,
            by,
            seed,
        }
    }

    fn recording(&self) -> MutexGuard<'_, Recording> {
        // A panic while holding the lock cannot leave the list half-written: pushes are atomic.
        self.recording
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running mock Messages API. Dropping it stops the server and closes its connections.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    connections: Arc<Connections>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Starts a server on a free loopback port answering from `scenario`.
    pub async fn start(scenario: Scenario) -> std::io::Result<MockServer> {
        MockServer::start_with(MockConfig::new(scenario)).await
    }

    /// Starts a server as configured. Must run inside a Tokio runtime.
    pub async fn start_with(config: MockConfig) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind(config.addr).await?;
        let addr = listener.local_addr()?;
        let limits = config.limits;
        let log = match &config.record_log {
            Some(path) => Some(RequestLog::open(path, limits.max_log_bytes)?),
            None => None,
        };
        let routes = crate::routes::RouteCursors::new(&config.scenario.routes);
        let state = Arc::new(State {
            scenario: config.scenario,
            next_step: AtomicU64::new(0),
            routes,
            counter: AtomicU64::new(0),
            recording: Mutex::new(Recording::new(
                limits.max_recorded_requests,
                limits.max_recorded_bytes,
            )),
            usage: config.usage,
            body_budget: Arc::new(Semaphore::new(
                limits.max_buffered_body_bytes.min(Semaphore::MAX_PERMITS),
            )),
            limits,
            fingerprints: Default::default(),
            log,
            models: config.models,
            platform_models: [Platform::Bedrock, Platform::Vertex, Platform::Foundry]
                .into_iter()
                .map(|platform| config.models.on_platform(platform))
                .collect(),
            platforms: config.platforms,
            issued_tokens: Mutex::new(Vec::new()),
        });
        let connections = Connections::new(state.limits.max_connections);
        let task = tokio::spawn(accept_loop(
            listener,
            Arc::clone(&state),
            Arc::clone(&connections),
        ));
        Ok(MockServer {
            addr,
            state,
            connections,
            task,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, the base URL for a client.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests kept so far, in arrival order: every request received, unless the
    /// [`ServerLimits`] on recordings dropped the oldest ones (see
    /// [`dropped_request_count`](Self::dropped_request_count)).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.recording().kept().iter().cloned().collect()
    }

    /// How many requests were received so far, kept or dropped from the recording.
    pub fn request_count(&self) -> usize {
        self.state.recording().received()
    }

    /// How many recorded requests were dropped (oldest first) to stay within
    /// [`ServerLimits::max_recorded_requests`] and [`ServerLimits::max_recorded_bytes`].
    pub fn dropped_request_count(&self) -> usize {
        self.state.recording().dropped()
    }

    /// How many connections are being served now (at most
    /// [`ServerLimits::max_connections`]).
    pub fn connection_count(&self) -> usize {
        self.connections.count()
    }

    /// Runs until the server task ends (it ends only when aborted).
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, connections: Arc<Connections>) {
    // Connection tasks live in this set: aborting the accept loop drops it, closing them all.
    let mut tasks = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let Ok((stream, _peer)) = accepted else {
            // Out of file descriptors and the like: close a batch of the longest-idle
            // connections to free theirs (a connection waiting in the backlog may be a real
            // request), back off briefly, keep serving.
            let evicted = connections.evict_idle(EVICTED_ON_ACCEPT_FAILURE);
            let pause = if evicted > 0 { 1 } else { 10 };
            tokio::time::sleep(Duration::from_millis(pause)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        // Over the connection limit this closes an idle connection, or waits for one to end.
        let slot = connections.slot().await;
        tasks.spawn(serve_connection(stream, slot, Arc::clone(&state)));
    }
}

/// Serves one connection until it ends, is idle too long, or its slot is asked back.
async fn serve_connection(stream: TcpStream, slot: Slot, state: Arc<State>) {
    let limits = state.limits.clone();
    let activity = Arc::clone(&slot.activity);
    let service = hyper::service::service_fn(move |request| {
        let guard = activity.request_started();
        let state = Arc::clone(&state);
        async move { handle(state, request, guard).await }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_HTTP2_STREAMS);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    // A connection still without a request this long (trickling its first bytes or header
    // lines) gives its slot back: hyper's header timeout only starts once the protocol is
    // known, and is the longer, global one.
    let first_request = limits
        .first_request_timeout
        .min(limits.header_read_timeout)
        .min(limits.idle_timeout);
    // Errors here are the faults the scenario injected, or a client that went away.
    tokio::select! {
        _ = connection.as_mut() => return,
        () = slot.activity.idle_expired(limits.idle_timeout) => {}
        () = slot.activity.close_requested() => {}
        () = slot.activity.first_request_late(first_request) => {}
    }
    // Idle: HTTP/1.1 closes at once, HTTP/2 says GOAWAY; a request that started meanwhile
    // gets a short grace. With no request in flight there is nothing to wait for: a head
    // still trickling in would otherwise hold the slot for the whole grace (hyper's graceful
    // shutdown waits for it), time in which every other trickler is `closing` too and the
    // next eviction can only pick the newest connection, a legitimate one.
    connection.as_mut().graceful_shutdown();
    let grace = if slot.activity.is_idle() {
        IDLE_CLOSE_GRACE
    } else {
        CLOSE_GRACE
    };
    let _ = tokio::time::timeout(grace, connection).await;
    drop(slot);
}

/// The answer body: whole, or streamed from a task.
pub(crate) type MockBody = http_body_util::combinators::BoxBody<Bytes, Abort>;

/// The scenario asked for the connection to be cut.
#[derive(Debug, thiserror::Error)]
#[error("connection cut by the mock scenario")]
#[non_exhaustive]
pub struct Abort;

pub(crate) fn full(bytes: impl Into<Bytes>) -> MockBody {
    Full::new(bytes.into())
        .map_err(|e: Infallible| match e {})
        .boxed()
}

struct ChannelBody {
    rx: mpsc::Receiver<Result<Bytes, Abort>>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Abort;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Abort>>> {
        self.rx
            .poll_recv(cx)
            .map(|item| item.map(|r| r.map(Frame::data)))
    }
}

fn json_response(status: StatusCode, request_id: &str, body: Vec<u8>) -> Response<MockBody> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("request-id", id);
    }
    response
}

pub(crate) fn api_error(kind: ApiErrorType, message: &str, request_id: &str) -> Response<MockBody> {
    let status = StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(
        status,
        request_id,
        respond::error_body(kind, message, request_id),
    )
}

/// [`api_error`] with `error.details.error_code`.
fn coded_api_error(
    kind: ApiErrorType,
    message: &str,
    code: &str,
    request_id: &str,
) -> Response<MockBody> {
    let status = StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = respond::coded_error_body(kind, message, Some(code), request_id);
    json_response(status, request_id, body)
}

fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let name = name.as_str().to_owned();
            let value = if matches!(
                name.as_str(),
                "x-api-key" | "api-key" | "authorization" | "x-amz-security-token"
            ) {
                "[redacted]".to_owned()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name, value)
        })
        .collect()
}

/// A response body that keeps its request counted as in flight on the connection until it
/// has been sent (or dropped), so an idle timeout never cuts a stream.
struct InFlightBody {
    inner: MockBody,
    _guard: RequestGuard,
}

impl Body for InFlightBody {
    type Data = Bytes;
    type Error = Abort;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Abort>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
    guard: RequestGuard,
) -> Result<Response<MockBody>, Abort> {
    let answer = answer_request(&state, request).await;
    answer.map(|response| {
        response.map(|inner| {
            InFlightBody {
                inner,
                _guard: guard,
            }
            .boxed()
        })
    })
}

async fn answer_request(
    state: &State,
    request: Request<Incoming>,
) -> Result<Response<MockBody>, Abort> {
    let (parts, body) = request.into_parts();
    let mut record = RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        version: format!("{:?}", parts.version),
        headers: header_map(&parts.headers),
        body: None,
        body_bytes: 0,
        status: None,
        refusal: None,
    };
    let request_id = state.next_id("req");
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let limits = &state.limits;
    let read = tokio::time::timeout(
        limits.body_read_timeout,
        read_body(body, declared, limits.max_body_bytes, &state.body_budget),
    )
    .await
    .unwrap_or(Err(BodyRefused::Failed));
    let logged = state
        .log
        .as_ref()
        .filter(|_| crate::request_log::logs_path(&record.path));
    let beta = parts
        .headers
        .get("anthropic-beta")
        .and_then(|v| v.to_str().ok());
    let log = |record: &RecordedRequest, body: Option<&[u8]>, outcome: &Outcome| {
        if let Some(log) = logged {
            log.append(&Entry {
                request_id: &request_id,
                method: &record.method,
                path: &record.path,
                beta,
                status: record.status,
                body,
                body_bytes: record.body_bytes,
                max_body: limits.max_recorded_bytes,
                outcome,
            });
        }
    };
    let body = match read {
        Ok(body) => body,
        Err(refused) => {
            let mut outcome = Outcome::default();
            let mut refuse = |kind, message: &str| {
                outcome.refused = Some(message.to_owned());
                Ok(api_error(kind, message, &request_id))
            };
            let answer = match refused {
                BodyRefused::TooLarge(read) => {
                    record.body_bytes = read;
                    refuse(
                        ApiErrorType::RequestTooLarge,
                        "Request exceeds the maximum allowed number of bytes.",
                    )
                }
                BodyRefused::Overloaded => refuse(ApiErrorType::Overloaded, "Overloaded"),
                BodyRefused::Failed => Err(Abort),
            };
            record.status = answer.as_ref().ok().map(|r| r.status().as_u16());
            log(&record, None, &outcome);
            state.recording().push(record);
            return answer;
        }
    };
    let bytes = body.bytes.as_slice();
    record.body_bytes = bytes.len();
    let mut outcome = Outcome::default();
    let (answer, verdict) = answer(state, &parts, bytes, &request_id, &mut outcome).await;
    if verdict == Verdict::Accepted && bytes.len() <= limits.max_recorded_bytes {
        record.body = serde_json::from_slice(bytes).ok();
    }
    record.status = answer.as_ref().ok().map(|r| r.status().as_u16());
    record.refusal = outcome.refused.clone();
    log(&record, Some(bytes), &outcome);
    state.recording().push(record);
    answer
}

/// Whether the request passed the mock's checks (its body is worth keeping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Accepted,
    Rejected,
}

async fn answer(
    state: &State,
    parts: &http::request::Parts,
    bytes: &[u8],
    request_id: &str,
    outcome: &mut Outcome,
) -> (Result<Response<MockBody>, Abort>, Verdict) {
    let Some(front) = Front::of(parts.method.as_str(), parts.uri.path()) else {
        return refuse(outcome, ApiErrorType::NotFound, "Not Found", request_id);
    };
    if front == Front::GoogleToken {
        return (
            Ok(token_answer(state, bytes, request_id, outcome)),
            Verdict::Accepted,
        );
    }
    let models = state.models_on(front.platform());
    let issued = |token: &str| {
        let issued = state
            .issued_tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        issued.iter().any(|t| t == token)
    };
    let credentials = (&state.platforms, &issued as &dyn Fn(&str) -> bool);
    let admitted = match front.admit(credentials, models, parts, bytes, request_id) {
        Ok(admitted) => admitted,
        Err(refusal) => {
            outcome.refused = Some(refusal.message);
            return (Ok(*refusal.response), Verdict::Rejected);
        }
    };
    let (answer, verdict) = answer_admitted(state, models, &admitted, request_id, outcome);
    match answer {
        Ok(response) => (Ok(front.respond(response, request_id).await), verdict),
        Err(abort) => (Err(abort), verdict),
    }
}

/// Google's token endpoint: an access token for a service account's valid JWT grant, kept
/// for the Vertex front (the last [`MAX_ISSUED_TOKENS`]); Google's OAuth error otherwise.
fn token_answer(
    state: &State,
    form: &[u8],
    request_id: &str,
    outcome: &mut Outcome,
) -> Response<MockBody> {
    use crate::platforms::google_oauth;
    let verdict = match &state.platforms.google_service_account {
        Some(account) => account.check_grant(form),
        None => Err("Invalid grant: account not found"),
    };
    let (status, body) = match verdict {
        Ok(()) => {
            let n = state.counter.fetch_add(1, Ordering::Relaxed) + 1;
            let token = format!("ya29.threadline-mock-{n:08}");
            let mut issued = state
                .issued_tokens
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if issued.len() >= MAX_ISSUED_TOKENS {
                issued.remove(0);
            }
            issued.push(token.clone());
            (StatusCode::OK, google_oauth::granted(&token))
        }
        Err(description) => {
            outcome.refused = Some(description.to_owned());
            (StatusCode::BAD_REQUEST, google_oauth::refused(description))
        }
    };
    json_response(status, request_id, body)
}

/// How many issued Google access tokens the mock remembers.
const MAX_ISSUED_TOKENS: usize = 256;

/// The mock's own refusal of a request: the API's error, noted in the outcome.
fn refuse(
    outcome: &mut Outcome,
    kind: ApiErrorType,
    message: &str,
    request_id: &str,
) -> (Result<Response<MockBody>, Abort>, Verdict) {
    outcome.refused = Some(message.to_owned());
    (Ok(api_error(kind, message, request_id)), Verdict::Rejected)
}

/// The answer to a request a platform's front admitted: the canonical request checked as the
/// API checks it, against the models as the platform offers them, and answered from the
/// scenario.
fn answer_admitted(
    state: &State,
    models: &ModelTable,
    admitted: &Admitted,
    request_id: &str,
    outcome: &mut Outcome,
) -> (Result<Response<MockBody>, Abort>, Verdict) {
    let mut rejected = |kind, message: &str| refuse(outcome, kind, message, request_id);
    let bytes = admitted.body.as_slice();
    let beta = admitted.beta.as_str();
    let options = ValidateOptions::default().with_beta_header(beta);
    if admitted.count_tokens {
        let request = match accepted::<CountTokensRequest>(
            models,
            bytes,
            |r| r.model.as_str(),
            |r, model| validate_count_tokens_with(r, model, &options),
        ) {
            Ok(request) => request,
            Err((kind, message)) => return rejected(kind, &message),
        };
        let tokens = state.usage.count_tokens(&request, bytes.len());
        outcome.usage = Some(serde_json::json!({ "input_tokens": tokens }));
        let answer = crate::server_compaction::count_tokens_answer(&request, tokens);
        let body = serde_json::to_vec(&answer).expect("JSON serializes");
        return (
            Ok(json_response(StatusCode::OK, request_id, body)),
            Verdict::Accepted,
        );
    }
    // The error code of the violation refused, when the API's 400 has one.
    let coded = std::cell::Cell::new(None);
    let request = match accepted::<MessagesRequest>(
        models,
        bytes,
        |r| r.model.as_str(),
        |r, model| {
            let found = validate_with(r, model, &options);
            let code = found.first().map(|v| v.rule);
            coded.set(code.and_then(crate::on_demand_compaction::error_code));
            found
        },
    ) {
        Ok(request) => request,
        Err((kind, message)) => match coded.get() {
            Some(code) => {
                outcome.refused = Some(message.clone());
                let answer = coded_api_error(kind, &message, code, request_id);
                return (Ok(answer), Verdict::Rejected);
            }
            None => return rejected(kind, &message),
        },
    };
    if let Some(refusal) = crate::on_demand_compaction::check_signatures(&request) {
        outcome.refused = Some(refusal.message.clone());
        let answer = coded_api_error(refusal.kind, &refusal.message, refusal.code, request_id);
        return (Ok(answer), Verdict::Rejected);
    }
    let (request, bound) = match crate::thinking_binding::check(request, models, beta) {
        Ok(checked) => checked,
        Err(message) => return rejected(ApiErrorType::InvalidRequest, &message),
    };
    let choice = state.take_step(&request);
    let kind = match &choice.step {
        Step::Message(_) => "message",
        Step::Error(_) => "error",
        Step::Fixture(_) => "fixture",
        Step::Reset => "reset",
    };
    outcome.chosen = Some(Chosen {
        route: choice.route,
        step: choice.index,
        by: choice.by,
        kind,
    });
    let ids = match choice.seed {
        Some(seed) => Ids::Seeded {
            seed,
            n: std::cell::Cell::new(0),
        },
        None => Ids::Counter(state),
    };
    let response = match choice.step {
        Step::Reset => Err(Abort),
        Step::Error(step) => Ok(error_step(&step, request_id)),
        Step::Fixture(step) => Ok(fixture_step(&step, request_id)),
        Step::Message(step) if request.compaction.is_some() => {
            let model = models.resolve(&request.model).model();
            let usage = state.usage.as_ref();
            let id = ids.next("msg");
            let served =
                crate::on_demand_compaction::serve(&step, &request, model, bytes.len(), usage, &id);
            outcome.usage = Some(served.usage.clone());
            let (body, content_type) = served.body(request.stream == Some(true));
            let mut response = json_response(StatusCode::OK, request_id, body);
            let headers = response.headers_mut();
            headers.insert("content-type", HeaderValue::from_static(content_type));
            Ok(response)
        }
        Step::Message(step) => {
            let step = crate::tool_search::expand(&step, &request, || ids.next("srvtoolu"));
            let (response, usage) = message_step(
                state,
                &step,
                &request,
                (bytes.len(), beta),
                (request_id, &ids),
                &bound,
            );
            outcome.usage = usage;
            Ok(response)
        }
    };
    (response, Verdict::Accepted)
}

/// The request in `bytes`, or the API's error type and message for the first thing wrong
/// with it, checked as the API does: the body parses, its model (`model_of`) is known, and
/// `violations` finds nothing against that model.
fn accepted<T: serde::de::DeserializeOwned>(
    models: &ModelTable,
    bytes: &[u8],
    model_of: fn(&T) -> &str,
    violations: impl FnOnce(&T, &Model) -> Vec<Violation>,
) -> Result<T, (ApiErrorType, String)> {
    let request: T =
        parse_body(bytes).map_err(|message| (ApiErrorType::InvalidRequest, message))?;
    let resolved = models.resolve(model_of(&request));
    if !resolved.is_known() {
        let message = format!("model: {}", model_of(&request));
        return Err((ApiErrorType::NotFound, message));
    }
    if let Some(v) = violations(&request, resolved.model()).first() {
        return Err((ApiErrorType::InvalidRequest, v.message.clone()));
    }
    Ok(request)
}

fn parse_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| "There was an error parsing the body of your request".to_owned())?;
    serde_json::from_value(value).map_err(|e| {
        let text = e.to_string();
        match text
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            Some(field) => format!("{field}: Field required"),
            None => text,
        }
    })
}

fn error_step(step: &ErrorStep, request_id: &str) -> Response<MockBody> {
    let kind = match &step.error_type {
        Some(name) => ApiErrorType::from(name.as_str()),
        None => ApiErrorType::for_status(step.status),
    };
    let status = StatusCode::from_u16(step.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(
        status,
        request_id,
        respond::coded_error_body(kind, &step.message, step.error_code.as_deref(), request_id),
    );
    let headers = response.headers_mut();
    if let Some(after) = step.retry_after
        && let Ok(value) = HeaderValue::from_str(&after.to_string())
    {
        headers.insert("retry-after", value);
    }
    if let Some(should) = step.should_retry {
        headers.insert(
            "x-should-retry",
            HeaderValue::from_static(if should { "true" } else { "false" }),
        );
    }
    response
}

fn fixture_step(step: &FixtureStep, request_id: &str) -> Response<MockBody> {
    let Some(recorded) = &step.response else {
        return api_error(
            ApiErrorType::Api,
            "the scenario's fixture step was never loaded",
            request_id,
        );
    };
    let status = StatusCode::from_u16(recorded.status.unwrap_or(200)).unwrap_or(StatusCode::OK);
    let (body, content_type) = match (&recorded.sse, &recorded.json) {
        (Some(sse), _) => (sse.clone().into_bytes(), "text/event-stream"),
        (None, Some(json)) => (
            serde_json::to_vec(json).expect("JSON serializes"),
            "application/json",
        ),
        (None, None) => (Vec::new(), "application/json"),
    };
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static(content_type));
    for (name, value) in &recorded.headers {
        let replayable = name == "request-id"
            || name == "retry-after"
            || name == "x-should-retry"
            || name.starts_with("anthropic-");
        if let (true, Ok(name), Ok(value)) = (
            replayable,
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    if !headers.contains_key("request-id")
        && let Ok(id) = HeaderValue::from_str(request_id)
    {
        headers.insert("request-id", id);
    }
    response
}

fn message_step(
    state: &State,
    step: &MessageStep,
    request: &MessagesRequest,
    (request_bytes, beta_header): (usize, &str),
    (request_id, ids): (&str, &Ids<'_>),
    bound: &crate::thinking_binding::Bound,
) -> (Response<MockBody>, Option<Value>) {
    let message_id = ids.next("msg");
    // Server-side compaction and the context edits the request asks for.
    let compacting = crate::server_compaction::plan(step, request);
    let mut scripted = compacting
        .as_ref()
        .map_or_else(|| step.clone(), |c| c.step.clone());
    if scripted.context_management.is_none() {
        let input = crate::usage::estimate_tokens(request_bytes);
        scripted.context_management = crate::context_edits::applied(request, input);
    }
    let mut script = respond::script(
        &scripted,
        &message_id,
        &request.model,
        || ids.next("toolu"),
        |output_tokens| match &compacting {
            Some(c) => c.usage(state.usage.as_ref(), output_tokens),
            None => state.usage.usage(request, request_bytes, output_tokens),
        },
    );
    bound.serve(&mut script, request, state.models);
    let forced = step.diagnostics.as_ref();
    if let Some(d) = (state.fingerprints).answer(request, beta_header, &message_id, forced) {
        crate::diagnostics::attach(&mut script, d);
    }
    let usage = script.message.get("usage").cloned();
    if request.stream != Some(true) {
        let body = serde_json::to_vec(&script.message).expect("JSON serializes");
        return (json_response(StatusCode::OK, request_id, body), usage);
    }
    let delay = Duration::from_millis(step.delay_ms.unwrap_or(0));
    let (tx, rx) = mpsc::channel::<Result<Bytes, Abort>>(16);
    tokio::spawn(async move {
        let send_events = |n: usize| {
            let events = &script.events[..n.min(script.events.len())];
            let tx = &tx;
            async move {
                if delay.is_zero() {
                    let all: Vec<u8> = events.concat();
                    return tx.send(Ok(Bytes::from(all))).await.is_ok();
                }
                for (i, event) in events.iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(delay).await;
                    }
                    if tx.send(Ok(Bytes::from(event.clone()))).await.is_err() {
                        return false;
                    }
                }
                true
            }
        };
        match &script.ending {
            Ending::Complete => {
                send_events(script.events.len()).await;
            }
            Ending::Cut(n) => {
                if send_events(*n).await {
                    // Give the client the events before the connection drops.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let _ = tx.send(Err(Abort)).await;
                }
            }
            Ending::Error(n, event) => {
                if send_events(*n).await {
                    let _ = tx.send(Ok(Bytes::from(event.clone()))).await;
                }
            }
            Ending::Stall(n) => {
                if send_events(*n).await {
                    tx.closed().await;
                }
            }
        }
    });
    let mut response = Response::new(ChannelBody { rx }.boxed());
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("request-id", id);
    }
    (response, usage)
}
