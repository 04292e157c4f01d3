//! Shared helpers: a mock, a client for it, a small request, event collection.
//!
//! Timeouts: a normal response must never come near one, even on a loaded 2-core CI machine
//! running tests in parallel, so [`config`]'s are seconds long. A test that proves a stall is
//! detected uses [`stall_config`] (a short idle timeout) or sets the one short timeout that
//! detects its stall itself.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use futures::StreamExt;
use threadline_client::{ApiKey, Auth, Client, ClientConfig, RetryConfig};
use threadline_mock::{MockServer, Scenario, Step};
use threadline_wire::service::{EventStream, ServiceError};
use threadline_wire::{ContentBlock, MessageParam, MessagesRequest, StreamEvent};
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;

pub const KEY: &str = "sk-ant-api03-TEST-KEY-0123456789-never-print-me";

/// The idle timeout of [`stall_config`]: short, so that a stalled stream fails fast.
pub const STALL_IDLE: Duration = Duration::from_millis(500);

/// Generous timeouts (connect 2 s, first event 5 s, 5 s between events) and short backoffs,
/// so that fault tests stay fast and normal responses never time out.
pub fn config(base_url: &str) -> ClientConfig {
    ClientConfig::new(
        base_url,
        Auth::ApiKey(ApiKey::new(KEY).expect("a valid key")),
    )
    .with_timeouts(
        Duration::from_secs(2),
        Duration::from_secs(5),
        Duration::from_secs(5),
    )
    .with_retry(
        RetryConfig::default()
            .with_max_retries(2)
            .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
            .with_max_retry_after(Duration::from_secs(2)),
    )
}

/// [`config`] with the idle timeout cut to [`STALL_IDLE`], for tests whose streams stall on
/// purpose. Their other answers come in one write, so no gap between events comes near it.
pub fn stall_config(base_url: &str) -> ClientConfig {
    config(base_url).with_timeouts(Duration::from_secs(2), Duration::from_secs(5), STALL_IDLE)
}

/// A mock answering with `steps`, in order.
pub async fn mock(steps: impl IntoIterator<Item = Step>) -> MockServer {
    MockServer::start(Scenario::new(steps))
        .await
        .expect("the mock starts")
}

pub fn client(base_url: &str) -> Client {
    Client::new(config(base_url)).expect("a valid configuration")
}

pub fn request() -> MessagesRequest {
    MessagesRequest::new(
        "claude-sonnet-4-6",
        1024,
        vec![MessageParam::user(vec![ContentBlock::text("Hello")])],
    )
}

/// Every item of the stream, until the end or the first error.
pub async fn drain(mut stream: EventStream) -> (Vec<StreamEvent>, Option<ServiceError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

/// Every item of the stream of one call of [`request`] that must answer, until the end or
/// the first error.
pub async fn stream_request(client: &Client) -> (Vec<StreamEvent>, Option<ServiceError>) {
    drain(client.stream(request()).await.expect("a stream")).await
}

/// The error of a call expected to fail before any event.
pub async fn call_error(client: &Client, request: MessagesRequest) -> ServiceError {
    match client.stream(request).await {
        Ok(_) => panic!("expected the call to fail"),
        Err(error) => error,
    }
}

/// Reads one request (headers and a content-length body).
pub async fn read_request(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let n = stream.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Ok(());
        }
    }
}
