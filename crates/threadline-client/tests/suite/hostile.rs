//! Hostile servers (a raw TCP listener writing crafted bytes): an endless event, a 1 GB body,
//! invalid JSON in a delta, a stream that never sends `message_stop`. The client keeps its
//! memory bounded, answers with typed errors, and never panics.

use crate::common;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use common::{config, read_request, request, stall_config, stream_request};
use threadline_client::timeout::{TimeoutError, TimeoutPhase};
use threadline_client::{Client, ClientConfig, RetryConfig};
use threadline_wire::service::ServiceErrorKind;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n";
const TEXT_BLOCK: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

struct Hostile {
    base_url: String,
    connections: Arc<AtomicUsize>,
    written: Arc<AtomicU64>,
}

/// A server that answers every connection with `respond`.
async fn hostile<F, Fut>(respond: F) -> Hostile
where
    F: Fn(TcpStream, Arc<AtomicU64>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let addr = listener.local_addr().expect("an address");
    let connections = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(AtomicU64::new(0));
    let (count, total) = (Arc::clone(&connections), Arc::clone(&written));
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let (respond, total) = (Arc::clone(&respond), Arc::clone(&total));
            tokio::spawn(async move {
                if read_request(&mut stream).await.is_ok() {
                    // The client hanging up is how these servers usually end.
                    let _ = respond(stream, total).await;
                }
            });
        }
    });
    Hostile {
        base_url: format!("http://{addr}"),
        connections,
        written,
    }
}

/// Writes `head`, then `chunk` over and over until `total` bytes or the peer hangs up.
async fn write_lazily(
    mut stream: TcpStream,
    written: Arc<AtomicU64>,
    head: String,
    chunk: Vec<u8>,
    total: u64,
) -> std::io::Result<()> {
    stream.write_all(head.as_bytes()).await?;
    let mut sent = 0u64;
    while sent < total {
        stream.write_all(&chunk).await?;
        sent += chunk.len() as u64;
        written.store(sent, Ordering::Relaxed);
    }
    Ok(())
}

fn client(base_url: &str) -> Client {
    limited(config(base_url))
}

/// A client for `config`, never retrying, with small limits (1 MB events, 8 MB bodies).
fn limited(config: ClientConfig) -> Client {
    Client::new(
        config
            .with_retry(RetryConfig::none())
            .with_limits(1024 * 1024, 8 * 1024 * 1024),
    )
    .expect("a client")
}

#[tokio::test]
async fn an_endless_event_is_refused_at_the_event_limit() {
    let server = hostile(|stream, written| {
        let head = format!("{SSE_HEAD}event: content_block_delta\ndata: ");
        write_lazily(stream, written, head, vec![b'x'; 64 * 1024], 1 << 30)
    })
    .await;
    let error = common::call_error(&client(&server.base_url), request()).await;
    assert_eq!(error.kind(), ServiceErrorKind::Decode, "{error}");
    assert!(error.message().contains("exceeds the limit"), "{error}");
    assert!(!error.is_retryable());
    // The client stopped reading soon after the limit: far less than the gigabyte was sent.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(server.written.load(Ordering::Relaxed) < 64 * 1024 * 1024);
}

#[tokio::test]
async fn a_one_gigabyte_body_is_cut_at_the_response_limit() {
    let server = hostile(|stream, written| {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{START}",
            1u64 << 30
        );
        let ping = b"event: ping\ndata: {\"type\": \"ping\"}\n\n".repeat(1024);
        write_lazily(stream, written, head, ping, 1 << 30)
    })
    .await;
    let (events, error) = stream_request(&client(&server.base_url)).await;
    let error = error.expect("over the limit");
    assert_eq!(error.kind(), ServiceErrorKind::Decode, "{error}");
    assert!(
        error
            .message()
            .contains("passed the limit of 8388608 bytes"),
        "{error}"
    );
    assert!(error.events_delivered() && !error.is_retryable());
    assert!(events.len() > 1000);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(server.written.load(Ordering::Relaxed) < 64 * 1024 * 1024);
}

#[tokio::test]
async fn a_one_gigabyte_error_body_is_read_only_in_part() {
    let server = hostile(|stream, written| {
        let head = format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            1u64 << 30
        );
        write_lazily(stream, written, head, vec![b'{'; 64 * 1024], 1 << 30)
    })
    .await;
    let error = common::call_error(&client(&server.base_url), request()).await;
    assert_eq!(error.status(), Some(500));
    assert!(error.is_retryable());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(server.written.load(Ordering::Relaxed) < 64 * 1024 * 1024);
}

#[tokio::test]
async fn invalid_json_in_a_delta_is_a_decode_error() {
    let server = hostile(|mut stream, _| async move {
        let body = format!(
            "{SSE_HEAD}{START}{TEXT_BLOCK}event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"abc\n\n"
        );
        stream.write_all(body.as_bytes()).await
    })
    .await;
    let (events, error) = stream_request(&client(&server.base_url)).await;
    let error = error.expect("invalid JSON");
    assert_eq!(error.kind(), ServiceErrorKind::Decode, "{error}");
    assert!(error.message().contains("content_block_delta"), "{error}");
    assert!(error.events_delivered() && !error.is_retryable());
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn a_stream_without_message_stop_is_truncated_or_times_out() {
    // The server closes the connection after the content.
    let server = hostile(|mut stream, _| async move {
        let body = format!(
            "{SSE_HEAD}{START}{TEXT_BLOCK}event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n"
        );
        stream.write_all(body.as_bytes()).await
    })
    .await;
    let (events, error) = stream_request(&client(&server.base_url)).await;
    let error = error.expect("truncated");
    assert_eq!(error.kind(), ServiceErrorKind::Truncated, "{error}");
    assert!(error.message().contains("before `message_stop`"), "{error}");
    assert_eq!(events.len(), 3);

    // The server keeps the connection open and says nothing more.
    let server = hostile(|mut stream, _| async move {
        stream
            .write_all(format!("{SSE_HEAD}{START}{TEXT_BLOCK}").as_bytes())
            .await?;
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(())
    })
    .await;
    let (events, error) = stream_request(&limited(stall_config(&server.base_url))).await;
    let error = error.expect("idle");
    assert_eq!(error.kind(), ServiceErrorKind::Timeout, "{error}");
    assert!(error.events_delivered() && !error.is_retryable());
    assert_eq!(events.len(), 2);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn garbage_instead_of_http_is_a_connection_error() {
    let server = hostile(|mut stream, _| async move {
        stream
            .write_all(b"\x00\x01garbage that is not HTTP\r\n\r\n")
            .await
    })
    .await;
    let error = common::call_error(&client(&server.base_url), request()).await;
    assert_eq!(error.kind(), ServiceErrorKind::Connection, "{error}");
}

#[tokio::test]
async fn an_error_status_with_an_html_body_keeps_the_status() {
    let server = hostile(|mut stream, _| async move {
        let body = "<html>Bad gateway</html>";
        let response = format!(
            "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: {}\r\nretry-after: 0\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(response.as_bytes()).await
    })
    .await;
    let error = common::call_error(&client(&server.base_url), request()).await;
    assert_eq!(error.status(), Some(502));
    assert!(error.is_retryable());
    assert!(error.message().contains("Bad gateway"), "{error}");
    assert_eq!(error.retry_after(), Some(Duration::ZERO));
}

#[tokio::test]
async fn a_last_event_without_its_blank_line_still_counts() {
    let server = hostile(|mut stream, _| async move {
        let body = format!(
            "{SSE_HEAD}{START}{TEXT_BLOCK}event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}"
        );
        stream.write_all(body.as_bytes()).await
    })
    .await;
    let (events, error) = stream_request(&client(&server.base_url)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(events.len(), 4);

    let server = hostile(|mut stream, _| async move {
        let body = format!(
            "{SSE_HEAD}{START}{TEXT_BLOCK}event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}"
        );
        stream.write_all(body.as_bytes()).await
    })
    .await;
    let (events, error) = stream_request(&client(&server.base_url)).await;
    assert_eq!(events.len(), 3, "the unterminated stop was delivered");
    let error = error.expect("no message_stop");
    assert_eq!(error.kind(), ServiceErrorKind::Truncated, "{error}");
}

/// The phase of a timeout error (its source).
fn timeout_phase(error: &threadline_wire::service::ServiceError) -> Option<TimeoutPhase> {
    std::error::Error::source(error)?
        .downcast_ref::<TimeoutError>()
        .map(|timeout| timeout.phase)
}

/// The idle deadline resets at every event, so a server sending a `ping` every few
/// minutes held `threadline run` forever. The total deadline does not move: the stream fails
/// with a timeout, reported as such and not retryable once events were delivered.
#[tokio::test]
async fn pings_forever_end_at_the_total_deadline() {
    const TOTAL: Duration = Duration::from_millis(400);
    let server = hostile(|mut stream, _| async move {
        stream
            .write_all(format!("{SSE_HEAD}{START}").as_bytes())
            .await?;
        loop {
            stream
                .write_all(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")
                .await?;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let client = limited(config(&server.base_url).with_total_timeout(TOTAL));
    let started = std::time::Instant::now();
    let (events, error) = stream_request(&client).await;
    let error = error.expect("the deadline ends the stream");
    assert_eq!(error.kind(), ServiceErrorKind::Timeout, "{error}");
    assert_eq!(timeout_phase(&error), Some(TimeoutPhase::Total), "{error}");
    assert!(error.message().contains("whole request"), "{error}");
    assert!(error.events_delivered() && !error.is_retryable(), "{error}");
    assert!(events.len() > 2, "pings were delivered: {}", events.len());
    let elapsed = started.elapsed();
    assert!(
        elapsed >= TOTAL && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);

    // A server that never answers: the deadline ends the wait (and the retries) too, before
    // the first-event timeout of 5 s.
    let silent = hostile(|stream, _| async move {
        let _open = stream;
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(())
    })
    .await;
    let client = Client::new(config(&silent.base_url).with_total_timeout(TOTAL)).expect("a client");
    let started = std::time::Instant::now();
    let error = common::call_error(&client, request()).await;
    assert_eq!(error.kind(), ServiceErrorKind::Timeout, "{error}");
    assert_eq!(timeout_phase(&error), Some(TimeoutPhase::Total), "{error}");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[test]
fn the_total_deadline_defaults_to_ten_minutes() {
    let config = ClientConfig::new("http://127.0.0.1:1", threadline_client::Auth::None);
    assert_eq!(config.timeouts.total, Duration::from_secs(600));
    // Setting the other timeouts keeps it.
    let config = config
        .with_total_timeout(Duration::from_secs(7))
        .with_timeouts(
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_secs(3),
        );
    assert_eq!(config.timeouts.total, Duration::from_secs(7));
}
