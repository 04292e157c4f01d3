//! Shared by the suites: an in-process Restate endpoint on its own tokio runtime, so a test can
//! "crash" it (every task and socket dropped at once, like a killed worker).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use restate_sdk::prelude::{Endpoint, HttpServer};
use threadline_testkit::restate::{Options, RestateServer};

/// An endpoint served on `127.0.0.1:0` by a dedicated runtime; killed on drop.
pub(crate) struct LocalEndpoint {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl LocalEndpoint {
    /// Serves `endpoint` (HTTP/2 cleartext, `HttpServer::serve_with_cancel`).
    pub(crate) fn serve(endpoint: Endpoint) -> Self {
        let listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an endpoint port");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("endpoint address");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("endpoint runtime");
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            HttpServer::new(endpoint)
                .serve_with_cancel(listener, std::future::pending::<()>())
                .await;
        });
        Self {
            addr,
            runtime: Some(runtime),
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Drops every task of the endpoint (its listener, connections and handlers mid-step).
    pub(crate) fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for LocalEndpoint {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A server with the test timeouts (5 s inactivity, 5 s abort).
pub(crate) async fn server() -> RestateServer {
    match RestateServer::start_with(Options {
        inactivity_timeout: Duration::from_secs(5),
        abort_timeout: Duration::from_secs(5),
        ..Options::default()
    })
    .await
    {
        Ok(server) => server,
        Err(e) => panic!("{e}"),
    }
}

/// Polls `f` every 20 ms until it returns `Some`, at most `timeout`.
pub(crate) async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
