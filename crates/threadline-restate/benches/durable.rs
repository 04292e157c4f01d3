//! Durable sessions through a real Restate server, as ratios read by `cargo xtask bench`.
//!
//! Setup (once, untimed): the pinned `restate-server` (`cargo xtask restate-server`; the
//! bench fails at once when it is missing), the in-process threadline-mock with
//! `answer_by: turn` (each new conversation gets a `noop` tool call, then an `end_turn`
//! text: a zero-latency model over loopback HTTP), `threadline_client::Client` at its base
//! URL, and two in-process workers (`threadline_restate::serve`) with that client and an
//! instant, idempotent `noop` tool that counts its calls per worker.
//!
//! * `durable_step` — one turn of a new session. `ours`: `POST {ingress}/Session/{key}/turn`
//!   through Restate, waiting for its outcome: the journaled steps `clock`, `model#0`,
//!   `tool:…` and `model#1` (counted from `show` and printed), each a round trip to the
//!   server, plus the state writes. `baseline`: the same turn in-process
//!   (`threadline_query::Query::run` over the same client, mock and tool). The bench prints
//!   the overhead per journaled step, `(ours − baseline) ÷ steps`.
//!
//! * `durable_sessions` — [`SESSIONS`] new sessions started at once (distinct keys), timed
//!   until the last outcome: `one_worker` (deployment = a TCP proxy in front of worker A)
//!   vs `two_workers` (deployment = the same round-robin proxy in front of A and B; an
//!   invocation is pinned to its deployment, new ones go to the latest; the proxy costs both
//!   the same copying). The server's invoker pools h2 connections with up to
//!   `http2-streams-per-connection-limit` streams each; at the default (128) it opened only
//!   3 connections for 16 concurrent sessions, so the proxy's split followed those few. This bench starts the server with the limit at
//!   [`STREAMS_PER_CONNECTION`] (override with `THREADLINE_BENCH_STREAMS_LIMIT`): each
//!   concurrent session gets its own connection and the proxy alternates them. The sessions
//!   each worker ran (its tool's calls) and the proxy's connections per worker are printed.
//!   The second deployment is registered only after the one-worker runs.
//!
//! `serve` gives the workers' listeners `TCP_NODELAY` (Linux copies it to the sockets it
//! accepts); without it a durable turn took about 5x as long (83 ms against 15 ms per turn in
//! a release build).

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput};
use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline_client::{ApiKey, Auth, Client, ClientConfig};
use threadline_message::Message;
use threadline_mock::{AnswerBy, MockServer, Scenario, Step};
use threadline_query::{Event, Query, QueryConfig, State, Terminal};
use threadline_query::{Tool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_restate::{Ingress, Worker};
use threadline_testkit::restate::{Options, RestateServer};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

const MODEL: &str = "claude-sonnet-4-5";
/// Concurrent new sessions per `durable_sessions` iteration.
const SESSIONS: usize = 16;
/// The server's `http2-streams-per-connection-limit` for this bench (see the module docs).
const STREAMS_PER_CONNECTION: u32 = 1;

/// An instant, idempotent tool counting its calls (one per session turn on a worker).
struct Noop {
    calls: Arc<AtomicUsize>,
}

impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"x": {"type": "integer"}}})
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }
    fn is_idempotent(&self, _input: &Value) -> bool {
        true
    }
    fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
        self.calls.fetch_add(1, Ordering::Relaxed);
        tool_result(std::future::ready(ToolOutput::text("ok")))
    }
}

fn client(base_url: &str) -> Client {
    let key = ApiKey::new("bench-key").expect("a valid key");
    Client::new(
        ClientConfig::new(base_url, Auth::ApiKey(key)).with_max_concurrent_requests(4 * SESSIONS),
    )
    .expect("a client")
}

fn config() -> QueryConfig {
    QueryConfig::new(MODEL, 1024)
}

/// A loopback listener for a worker (`serve` sets `TCP_NODELAY` on it).
fn worker_listener() -> TcpListener {
    let socket = TcpSocket::new_v4().expect("a socket");
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("a worker port");
    socket.listen(1024).expect("listening")
}

/// A served worker: its address, its tool's call count, and how to stop it.
struct Served {
    addr: SocketAddr,
    calls: Arc<AtomicUsize>,
    _stop: oneshot::Sender<()>,
}

async fn serve_worker(model: Client) -> Served {
    let calls = Arc::new(AtomicUsize::new(0));
    let worker = Worker::new(model, config()).with_tool(Noop {
        calls: Arc::clone(&calls),
    });
    let listener = worker_listener();
    let addr = listener.local_addr().expect("the worker's address");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        if let Err(e) = threadline_restate::serve(listener, worker, shutdown).await {
            eprintln!("worker {addr}: {e}");
        }
    });
    Served {
        addr,
        calls,
        _stop: stop,
    }
}

/// A TCP proxy sending each new connection to the next backend in turn; counts connections
/// per backend.
async fn round_robin_proxy(backends: Vec<SocketAddr>) -> (SocketAddr, Arc<Vec<AtomicUsize>>) {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("a proxy port");
    let addr = listener.local_addr().expect("the proxy's address");
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
    let per_backend = Arc::clone(&counts);
    tokio::spawn(async move {
        let mut next = 0usize;
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            let index = next % backends.len();
            next = next.wrapping_add(1);
            per_backend[index].fetch_add(1, Ordering::Relaxed);
            let backend = backends[index];
            tokio::spawn(async move {
                let _ = inbound.set_nodelay(true);
                if let Ok(mut outbound) = TcpStream::connect(backend).await {
                    let _ = outbound.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, counts)
}

/// Everything the groups share.
struct Bench {
    rt: Runtime,
    server: RestateServer,
    ingress: Ingress,
    mock: MockServer,
    model: Client,
    a: Served,
    b: Served,
    tool_calls: Arc<AtomicUsize>,
    keys: AtomicUsize,
}

impl Bench {
    fn setup() -> Bench {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let streams = std::env::var("THREADLINE_BENCH_STREAMS_LIMIT")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(STREAMS_PER_CONNECTION);
        let options = Options {
            extra_env: vec![(
                "RESTATE_WORKER__INVOKER__HTTP2_STREAMS_PER_CONNECTION_LIMIT".to_owned(),
                streams.to_string(),
            )],
            ..Options::default()
        };
        let server = match rt.block_on(RestateServer::start_with(options)) {
            Ok(server) => server,
            Err(e) => {
                eprintln!("durable bench: cannot start the Restate server: {e}");
                if e.is_missing_binary() {
                    eprintln!("durable bench: install it with `cargo xtask restate-server`");
                }
                std::process::exit(1);
            }
        };
        eprintln!("durable bench: http2-streams-per-connection-limit = {streams}");
        let scenario =
            Scenario::new([Step::tool_use("noop", json!({"x": 1})), Step::text("Done.")])
                .answered_by(AnswerBy::Turn);
        let (mock, model, a, b) = rt.block_on(async {
            let mock = MockServer::start(scenario).await.expect("the mock");
            let model = client(&mock.base_url());
            let a = serve_worker(model.clone()).await;
            let b = serve_worker(model.clone()).await;
            (mock, model, a, b)
        });
        let ingress = Ingress::new(&server.ingress_url()).expect("an ingress client");
        rt.block_on(server.register_deployment(&format!("http://{}", a.addr)))
            .expect("registering worker A");
        Bench {
            rt,
            server,
            ingress,
            mock,
            model,
            a,
            b,
            tool_calls: Arc::new(AtomicUsize::new(0)),
            keys: AtomicUsize::new(0),
        }
    }

    fn key(&self) -> String {
        format!("bench-{}", self.keys.fetch_add(1, Ordering::Relaxed))
    }

    /// One durable turn of a new session; returns its key.
    async fn durable_turn(&self) -> String {
        let key = self.key();
        let out = self
            .ingress
            .call("Session", &key, "turn", br#"{"prompt": "Check it."}"#)
            .await
            .unwrap_or_else(|e| panic!("turn of {key}: {e}\n{}", self.server.log_tail()));
        let outcome: Value = serde_json::from_slice(&out).expect("a turn outcome");
        assert_eq!(outcome["text"], "Done.", "{outcome}");
        black_box(outcome);
        key
    }

    /// The same turn in-process.
    async fn in_process_turn(&self) {
        let query = Query::new(self.model.clone(), config()).with_tool(Noop {
            calls: Arc::clone(&self.tool_calls),
        });
        let run = query.run(
            State::new(Vec::new()),
            vec![Message::user_text("Check it.")],
        );
        let last = run.fold(None, |_, event| async move { Some(event) }).await;
        match last {
            Some(Event::Finished(finished)) => {
                assert_eq!(finished.terminal, Terminal::Completed);
                black_box(finished.state.messages.len());
            }
            _ => panic!("the in-process run ends with Finished"),
        }
    }

    /// The journaled steps of `key`'s last turn (from `show`).
    async fn steps(&self, key: &str) -> Vec<String> {
        let out = self
            .ingress
            .call("Session", key, "show", b"{}")
            .await
            .expect("show");
        let view: Value = serde_json::from_slice(&out).expect("a session view");
        view["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|s| s["name"].as_str().unwrap_or("?").to_owned())
            .collect()
    }

    /// `SESSIONS` new sessions at once, until the last outcome.
    async fn sessions(&self) {
        let turns = (0..SESSIONS).map(|_| self.durable_turn());
        black_box(futures::future::join_all(turns).await);
    }

    fn worker_calls(&self) -> (usize, usize) {
        (
            self.a.calls.load(Ordering::Relaxed),
            self.b.calls.load(Ordering::Relaxed),
        )
    }
}

/// Total time and iterations of one bench function, for the printed summary.
#[derive(Default)]
struct Tally {
    time: Duration,
    iters: u64,
}

impl Tally {
    fn mean_ms(&self) -> f64 {
        self.time.as_secs_f64() * 1e3 / self.iters.max(1) as f64
    }
}

fn durable_step(c: &mut Criterion, bench: &Bench) {
    // Warm the connections and count the journaled steps of one turn.
    let steps = bench.rt.block_on(async {
        let key = bench.durable_turn().await;
        bench.in_process_turn().await;
        bench.steps(&key).await
    });
    eprintln!(
        "durable_step: {} journaled steps per turn: {}",
        steps.len(),
        steps.join(", ")
    );
    let mut g = c.benchmark_group("durable_step");
    g.sample_size(10);
    let mut ours = Tally::default();
    let mut baseline = Tally::default();
    g.bench_function("ours", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            bench.rt.block_on(async {
                for _ in 0..iters {
                    bench.durable_turn().await;
                }
            });
            let took = start.elapsed();
            ours.time += took;
            ours.iters += iters;
            took
        })
    });
    g.bench_function("baseline", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            bench.rt.block_on(async {
                for _ in 0..iters {
                    bench.in_process_turn().await;
                }
            });
            let took = start.elapsed();
            baseline.time += took;
            baseline.iters += iters;
            took
        })
    });
    g.finish();
    if ours.iters == 0 || baseline.iters == 0 {
        return; // filtered out
    }
    let (durable, local) = (ours.mean_ms(), baseline.mean_ms());
    eprintln!(
        "durable_step: {durable:.3} ms per turn through Restate vs {local:.3} ms in-process \
         (means over every timed iteration, warm-up included): ratio {:.2}, \
         overhead {:.3} ms per journaled step ({} steps)",
        durable / local,
        (durable - local) / steps.len().max(1) as f64,
        steps.len()
    );
}

fn durable_sessions(c: &mut Criterion, bench: &Bench) {
    let mut g = c.benchmark_group("durable_sessions");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SESSIONS as u64));
    fn run(g: &mut BenchmarkGroup<'_, WallTime>, bench: &Bench, name: &str) {
        let before = bench.worker_calls();
        let mut tally = Tally::default();
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                bench.rt.block_on(async {
                    for _ in 0..iters {
                        bench.sessions().await;
                    }
                });
                let took = start.elapsed();
                tally.time += took;
                tally.iters += iters;
                took
            })
        });
        let after = bench.worker_calls();
        if tally.iters == 0 {
            return; // filtered out
        }
        eprintln!(
            "durable_sessions/{name}: {:.1} sessions/s ({SESSIONS} at once, {:.3} ms per batch); \
             sessions run by worker A: {}, by worker B: {}",
            SESSIONS as f64 * 1e3 / tally.mean_ms(),
            tally.mean_ms(),
            after.0 - before.0,
            after.1 - before.1
        );
    }
    // Both through the same proxy code, so its copying costs both the same. New invocations
    // go to the latest deployment.
    let deploy = |backends: Vec<SocketAddr>| {
        let (proxy, connections) = bench.rt.block_on(round_robin_proxy(backends));
        bench
            .rt
            .block_on(bench.server.register_deployment(&format!("http://{proxy}")))
            .expect("registering the proxy");
        connections
    };
    let one = deploy(vec![bench.a.addr]);
    run(&mut g, bench, "one_worker");
    let two = deploy(vec![bench.a.addr, bench.b.addr]);
    run(&mut g, bench, "two_workers");
    g.finish();
    eprintln!(
        "durable_sessions: connections the server opened through the proxy: \
         one_worker {} to A; two_workers {} to A, {} to B",
        one[0].load(Ordering::Relaxed),
        two[0].load(Ordering::Relaxed),
        two[1].load(Ordering::Relaxed)
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let bench = Bench::setup();
    durable_step(&mut c, &bench);
    durable_sessions(&mut c, &bench);
    eprintln!(
        "durable bench: the mock answered {} requests",
        bench.mock.request_count()
    );
    c.final_summary();
}
