//! A TCP failover proxy for tests (feature `restate`): one loopback address in front of an
//! ordered list of backends. Each incoming connection goes to the first backend that accepts a
//! connection, so once backend A is dead, new connections reach B. When the upstream side
//! closes or fails, the client side is closed at once, so a Restate server sees the worker's
//! death immediately and retries (on a new connection: the next live backend).
//!
//! This is how a Restate deployment fails over: an invocation is pinned to its deployment's
//! address, so two workers must sit behind one address.
//!
//! ```no_run
//! # async fn demo(a: std::net::SocketAddr, b: std::net::SocketAddr) -> std::io::Result<()> {
//! use threadline_testkit::failover::FailoverProxy;
//!
//! let proxy = FailoverProxy::start(vec![a, b]).await?;
//! println!("register {}", proxy.url());
//! // ... later
//! assert!(proxy.connections_per_backend().get(&a).copied().unwrap_or(0) <= 1);
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// How long the proxy tries to connect to one backend before trying the next.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct Shared {
    backends: Mutex<Vec<SocketAddr>>,
    connections: Mutex<BTreeMap<SocketAddr, usize>>,
}

impl Shared {
    fn backends(&self) -> Vec<SocketAddr> {
        self.backends
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn count(&self, backend: SocketAddr) {
        *self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(backend)
            .or_insert(0) += 1;
    }
}

/// The proxy; it stops (and drops every proxied connection) on drop.
#[derive(Debug)]
pub struct FailoverProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FailoverProxy {
    /// Listens on `127.0.0.1:0` and forwards to `backends` (tried in order per connection).
    /// Needs a tokio runtime.
    pub async fn start(backends: Vec<SocketAddr>) -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            backends: Mutex::new(backends),
            connections: Mutex::new(BTreeMap::new()),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(Self { addr, shared, task })
    }

    /// The address the proxy listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:{port}`: the deployment URI to register.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the backend list; connections already proxied are kept.
    pub fn set_backends(&self, backends: Vec<SocketAddr>) {
        *self
            .shared
            .backends
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = backends;
    }

    /// How many connections each backend accepted so far (backends never connected to are
    /// absent).
    pub fn connections_per_backend(&self) -> BTreeMap<SocketAddr, usize> {
        self.shared
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for FailoverProxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection task.
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((client, _)) = accepted {
                    connections.spawn(proxy_connection(client, Arc::clone(&shared)));
                }
            }
            // Reap finished connection tasks so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Connects to the first backend that accepts; `None` if none does.
async fn connect_first(shared: &Shared) -> Option<(SocketAddr, TcpStream)> {
    for backend in shared.backends() {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(backend)).await
        {
            shared.count(backend);
            return Some((backend, stream));
        }
    }
    None
}

async fn proxy_connection(client: TcpStream, shared: Arc<Shared>) {
    // No backend: dropping the client closes it.
    let Some((_, upstream)) = connect_first(&shared).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let to_upstream = async {
        let copied = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
        copied
    };
    let to_client = async {
        let copied = tokio::io::copy(&mut upstream_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
        copied
    };
    tokio::pin!(to_upstream, to_client);
    tokio::select! {
        // The upstream closed or failed: close the client side now (every half is dropped
        // when this function returns), even if the client still had more to send.
        _ = &mut to_client => {}
        sent = &mut to_upstream => {
            // The client finished sending (a half-close): let the answer through. On an
            // error, drop both sides.
            if sent.is_ok() {
                let _ = to_client.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// An echo server that prefixes each echoed chunk with `tag`; returns its address and task.
    async fn echo(tag: u8) -> (SocketAddr, JoinHandle<()>) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let mut conns = JoinSet::new();
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                conns.spawn(async move {
                    let mut buf = [0u8; 1024];
                    loop {
                        let n = match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        let mut out = vec![tag];
                        out.extend_from_slice(&buf[..n]);
                        if s.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, task)
    }

    async fn roundtrip(proxy: &FailoverProxy, msg: &[u8]) -> Vec<u8> {
        let mut s = TcpStream::connect(proxy.local_addr())
            .await
            .expect("connect");
        s.write_all(msg).await.expect("write");
        let mut buf = vec![0u8; msg.len() + 1];
        s.read_exact(&mut buf).await.expect("read");
        buf
    }

    /// A free port with nothing listening on it.
    async fn dead_addr() -> SocketAddr {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        l.local_addr().expect("addr")
    }

    #[tokio::test]
    async fn first_live_backend_gets_each_connection_and_death_fails_over() {
        let (a, a_task) = echo(b'A').await;
        let (b, _b_task) = echo(b'B').await;
        let proxy = FailoverProxy::start(vec![a, b]).await.expect("proxy");
        assert_eq!(proxy.url(), format!("http://{}", proxy.local_addr()));

        // A long-lived client connection on A.
        let mut held = TcpStream::connect(proxy.local_addr())
            .await
            .expect("connect");
        held.write_all(b"x").await.expect("write");
        let mut two = [0u8; 2];
        held.read_exact(&mut two).await.expect("read");
        assert_eq!(&two, b"Ax");
        assert_eq!(roundtrip(&proxy, b"hi").await, b"Ahi");

        // Kill A: its listener and connections close.
        a_task.abort();
        let _ = a_task.await;
        // The held connection is closed by the proxy: EOF (or a reset), never a hang.
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), held.read_to_end(&mut rest))
            .await
            .expect("the proxy closes the client side when the upstream dies");
        assert!(closed.map_or(true, |n| n == 0), "no data after the death");

        // New connections go to B.
        assert_eq!(roundtrip(&proxy, b"yo").await, b"Byo");
        assert_eq!(roundtrip(&proxy, b"z").await, b"Bz");
        let counts = proxy.connections_per_backend();
        assert_eq!(counts.get(&a), Some(&2));
        assert_eq!(counts.get(&b), Some(&2));
        assert_eq!(counts.len(), 2);
    }

    #[tokio::test]
    async fn set_backends_reorders_and_dead_backends_are_skipped() {
        let dead = dead_addr().await;
        let (a, _a) = echo(b'A').await;
        let (b, _b) = echo(b'B').await;
        let proxy = FailoverProxy::start(vec![dead, a, b]).await.expect("proxy");
        assert_eq!(roundtrip(&proxy, b"1").await, b"A1");
        proxy.set_backends(vec![b, a]);
        assert_eq!(roundtrip(&proxy, b"2").await, b"B2");
        let counts = proxy.connections_per_backend();
        assert_eq!(counts.get(&dead), None);
        assert_eq!(counts.get(&a), Some(&1));
        assert_eq!(counts.get(&b), Some(&1));
    }

    #[tokio::test]
    async fn no_live_backend_closes_the_client() {
        let dead = dead_addr().await;
        let proxy = FailoverProxy::start(vec![dead]).await.expect("proxy");
        let mut s = TcpStream::connect(proxy.local_addr())
            .await
            .expect("connect");
        let mut buf = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
            .await
            .expect("closed, not hung");
        assert!(n.map_or(true, |n| n == 0));
        assert!(proxy.connections_per_backend().is_empty());

        let empty = FailoverProxy::start(Vec::new()).await.expect("proxy");
        let mut s = TcpStream::connect(empty.local_addr())
            .await
            .expect("connect");
        let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
            .await
            .expect("closed, not hung");
        assert!(n.map_or(true, |n| n == 0));
    }

    #[tokio::test]
    async fn a_client_half_close_still_gets_the_answer() {
        let (a, _a) = echo(b'A').await;
        let proxy = FailoverProxy::start(vec![a]).await.expect("proxy");
        let mut s = TcpStream::connect(proxy.local_addr())
            .await
            .expect("connect");
        s.write_all(b"bye").await.expect("write");
        s.shutdown().await.expect("half-close");
        let mut buf = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
            .await
            .expect("done")
            .expect("read");
        assert_eq!(buf, b"Abye");
    }
}
