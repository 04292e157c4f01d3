//! Each limit of `ServerLimits` over loopback: timeouts close connections, bodies past a
//! limit are refused without being read, recordings stay bounded, connections are capped.

use std::time::{Duration, Instant};

use threadline_mock::{MockConfig, MockServer, Scenario, ServerLimits, Step};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::server::http::{
    PATIENCE, chunk, closed_by_server, head, message_body, post, read_answer,
};

fn hello() -> Scenario {
    Scenario::new([Step::text("Hello!")]).repeating_last()
}

async fn start(scenario: Scenario, limits: ServerLimits) -> MockServer {
    MockServer::start_with(MockConfig::new(scenario).with_limits(limits))
        .await
        .expect("the mock listens")
}

#[tokio::test]
async fn a_client_that_sends_half_a_header_line_is_disconnected_after_the_header_timeout() {
    let limits = ServerLimits::default()
        .with_header_read_timeout(Duration::from_millis(400))
        .with_idle_timeout(Duration::from_secs(600));
    let server = start(hello(), limits).await;
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    let started = Instant::now();
    stream
        .write_all(b"POST /v1/messages HTTP/1.1\r\nx-api-k")
        .await
        .expect("writes");
    assert!(
        closed_by_server(&mut stream).await,
        "a half-sent header held the connection open for {PATIENCE:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "closed before the header timeout: {:?}",
        started.elapsed()
    );
    // The server still answers others.
    let answer = post(server.addr(), &message_body("hi"))
        .await
        .expect("answer");
    assert_eq!(answer.status, 200, "{}", answer.body);
}

#[tokio::test]
async fn a_connection_that_never_sends_a_byte_is_closed_after_the_idle_timeout() {
    let limits = ServerLimits::default()
        .with_header_read_timeout(Duration::from_secs(600))
        .with_idle_timeout(Duration::from_millis(400));
    let server = start(hello(), limits).await;
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    assert!(
        closed_by_server(&mut stream).await,
        "a silent connection stayed open for {PATIENCE:?}"
    );
}

#[tokio::test]
async fn a_kept_alive_connection_is_closed_after_the_idle_timeout_but_a_long_stream_is_not_cut() {
    let limits = ServerLimits::default()
        .with_header_read_timeout(Duration::from_secs(600))
        .with_idle_timeout(Duration::from_millis(300));
    // The stream takes well over the idle timeout: every event 100 ms apart.
    let server = start(
        Scenario::new([
            Step::text("one two three four five six")
                .with_chunk_chars(3)
                .with_delay_ms(100),
            Step::text("kept alive"),
        ]),
        limits,
    )
    .await;
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    let streamed = serde_json::to_vec(&serde_json::json!({
        "model": "claude-sonnet-4-6", "max_tokens": 16, "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
    }))
    .expect("JSON");
    stream
        .write_all(head(Some(streamed.len()), false).as_bytes())
        .await
        .expect("writes");
    stream.write_all(&streamed).await.expect("writes");
    let started = Instant::now();
    // A chunked SSE answer: read until its last chunk.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.ends_with(b"0\r\n\r\n") {
        let n = tokio::time::timeout(
            PATIENCE,
            tokio::io::AsyncReadExt::read(&mut stream, &mut buf),
        )
        .await
        .expect("the stream goes on")
        .expect("reads");
        assert!(n > 0, "the stream was cut after {:?}", started.elapsed());
        seen.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&seen);
    assert!(text.contains("event: message_stop"), "{text}");
    assert!(
        started.elapsed() > Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    // The same connection serves the next request, then idles out.
    let body = message_body("again");
    stream
        .write_all(head(Some(body.len()), false).as_bytes())
        .await
        .expect("writes");
    stream.write_all(&body).await.expect("writes");
    let answer = read_answer(&mut stream).await.expect("answer");
    assert!(answer.body.contains("kept alive"), "{}", answer.body);
    assert!(
        closed_by_server(&mut stream).await,
        "an idle kept-alive connection stayed open for {PATIENCE:?}"
    );
}

#[tokio::test]
async fn recorded_requests_are_bounded_by_count_oldest_dropped_first() {
    let server = start(
        hello(),
        ServerLimits::default().with_max_recorded_requests(3),
    )
    .await;
    for n in 0..5 {
        let answer = post(server.addr(), &message_body(&format!("turn {n}")))
            .await
            .expect("answer");
        assert_eq!(answer.status, 200);
    }
    let kept: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            r.body.as_ref().expect("an accepted body is kept")["messages"][0]["content"].to_string()
        })
        .collect();
    assert_eq!(kept, [r#""turn 2""#, r#""turn 3""#, r#""turn 4""#]);
    assert_eq!(server.request_count(), 5);
    assert_eq!(server.dropped_request_count(), 2);
}

#[tokio::test]
async fn recorded_requests_are_bounded_by_body_bytes_oldest_dropped_first() {
    let body = |n: usize| message_body(&format!("{n}{}", "x".repeat(10_000)));
    let size = body(0).len();
    let limits = ServerLimits::default().with_max_recorded_bytes(size * 5 / 2);
    let server = start(hello(), limits).await;
    for n in 0..6 {
        assert_eq!(
            post(server.addr(), &body(n)).await.expect("answer").status,
            200
        );
    }
    let requests = server.requests();
    let held: usize = requests.iter().map(|r| r.body_bytes).sum();
    assert!(
        held <= size * 5 / 2,
        "{held} bytes kept over a bound of {}",
        size * 5 / 2
    );
    assert_eq!(requests.len(), 2);
    let first = requests[0].body.as_ref().expect("kept")["messages"][0]["content"].to_string();
    assert!(
        first.starts_with("\"4x"),
        "the oldest were not dropped first: {first:.10}"
    );
    assert_eq!(server.request_count(), 6);
}

#[tokio::test]
async fn a_rejected_body_is_never_recorded() {
    let server = MockServer::start(hello()).await.expect("listens");
    // Valid JSON the API would reject (unknown model), 1 MB of it.
    let rejected = serde_json::to_vec(&serde_json::json!({
        "model": "no-such-model", "max_tokens": 16,
        "messages": [{"role": "user", "content": "x".repeat(1_000_000)}],
    }))
    .expect("JSON");
    let answer = post(server.addr(), &rejected).await.expect("answer");
    assert_eq!(answer.status, 404, "{}", answer.body);
    let answer = post(server.addr(), &message_body("fine"))
        .await
        .expect("answer");
    assert_eq!(answer.status, 200);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].status, Some(404));
    assert!(requests[0].body.is_none(), "the rejected body was kept");
    assert_eq!(requests[0].body_bytes, rejected.len());
    assert!(requests[1].body.is_some(), "the accepted body was not kept");
}

#[tokio::test]
async fn a_declared_oversized_body_is_refused_with_413_before_it_is_sent() {
    let server = MockServer::start(hello()).await.expect("listens");
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    // 33 MiB declared, past the API's 32 MiB; only the head and a few bytes are sent.
    stream
        .write_all(head(Some(33 * 1024 * 1024), false).as_bytes())
        .await
        .expect("writes");
    stream.write_all(b"{\"model\":").await.expect("writes");
    let answer = tokio::time::timeout(PATIENCE, read_answer(&mut stream))
        .await
        .expect("the server answered without waiting for the body")
        .expect("answer");
    assert_eq!(answer.status, 413, "{}", answer.body);
    let error: serde_json::Value = serde_json::from_str(&answer.body).expect("JSON error");
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "request_too_large");
    assert_eq!(
        error["error"]["message"],
        "Request exceeds the maximum allowed number of bytes."
    );
    let requests = server.requests();
    assert_eq!(requests[0].status, Some(413));
    assert!(requests[0].body.is_none(), "a refused body was kept");
}

#[tokio::test]
async fn an_undeclared_oversized_body_is_refused_once_it_passes_the_limit() {
    let limit = 256 * 1024;
    let server = start(hello(), ServerLimits::default().with_max_body_bytes(limit)).await;
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    stream
        .write_all(head(None, false).as_bytes())
        .await
        .expect("writes");
    let piece = chunk(&[b' '; 16 * 1024]);
    // Up to 64 MiB, far past the limit: the server answers and stops reading long before.
    let mut sent = 0usize;
    let send = async {
        for _ in 0..4096 {
            if stream.write_all(&piece).await.is_err() {
                break;
            }
            sent += piece.len();
        }
    };
    tokio::time::timeout(PATIENCE, send)
        .await
        .expect("the server neither read the body nor closed the connection");
    // What was sent past the limit sits in the sockets' buffers (a few MiB on loopback).
    assert!(
        sent < 16 * 1024 * 1024,
        "the server took {sent} bytes of a body past a limit of {limit}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].status, Some(413));
    assert!(requests[0].body.is_none(), "a refused body was kept");
    assert!(
        requests[0].body_bytes <= limit,
        "{} bytes kept past a limit of {limit}",
        requests[0].body_bytes
    );
}

#[tokio::test]
async fn body_bytes_held_at_once_are_bounded_by_a_shared_budget() {
    let mib = 1024 * 1024;
    let limits = ServerLimits::default()
        .with_max_body_bytes(4 * mib)
        .with_max_buffered_body_bytes(4 * mib);
    let server = start(hello(), limits).await;
    let padding = vec![b' '; 3 * mib];
    let mut body = message_body("big");
    body.splice(1..1, padding.iter().copied());
    // The first 3 MiB body is read and held: its last byte is not sent yet.
    let mut first = TcpStream::connect(server.addr()).await.expect("connects");
    first
        .write_all(head(Some(body.len()), true).as_bytes())
        .await
        .expect("writes");
    first
        .write_all(&body[..body.len() - 1])
        .await
        .expect("writes");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A second one would pass the budget: refused as the API refuses under load, from its
    // `content-length` alone (the body is never sent).
    let mut second = TcpStream::connect(server.addr()).await.expect("connects");
    second
        .write_all(head(Some(body.len()), true).as_bytes())
        .await
        .expect("writes");
    let answer = tokio::time::timeout(PATIENCE, read_answer(&mut second))
        .await
        .expect("answered")
        .expect("answer");
    assert_eq!(answer.status, 529, "{}", answer.body);
    assert!(answer.body.contains("overloaded_error"), "{}", answer.body);
    // A small request does not draw from the budget.
    let small = post(server.addr(), &message_body("small"))
        .await
        .expect("answer");
    assert_eq!(small.status, 200, "{}", small.body);
    // The first completes, and then the budget is free again.
    first
        .write_all(&body[body.len() - 1..])
        .await
        .expect("writes");
    let answer = read_answer(&mut first).await.expect("answer");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let again = post(server.addr(), &body).await.expect("answer");
    assert_eq!(again.status, 200, "{}", again.body);
}

#[tokio::test]
async fn over_the_connection_limit_idle_connections_make_room_for_a_request() {
    let server = start(hello(), ServerLimits::default().with_max_connections(4)).await;
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(TcpStream::connect(server.addr()).await.expect("connects"));
    }
    let started = Instant::now();
    let answer = tokio::time::timeout(PATIENCE, post(server.addr(), &message_body("hi")))
        .await
        .expect("a request got a slot")
        .expect("answer");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        server.connection_count() <= 4,
        "{} connections",
        server.connection_count()
    );
    // The longest idle ones were closed to make room.
    assert!(
        closed_by_server(&mut idle[0]).await,
        "the oldest idle connection is open"
    );
    assert!(started.elapsed() < PATIENCE);
}

/// Opens `count` connections that trickle a request head, one header line (or, `bytewise`,
/// one byte of the first line) every `every`, reconnecting when the server closes one, until
/// the returned set is dropped.
fn trickle(
    addr: std::net::SocketAddr,
    count: usize,
    every: Duration,
    bytewise: bool,
) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..count {
        tasks.spawn(async move {
            loop {
                let Ok(mut stream) = TcpStream::connect(addr).await else {
                    tokio::time::sleep(every).await;
                    continue;
                };
                let first = b"POST /v1/messages HTTP/1.1\r\n";
                let sent = if bytewise {
                    let mut sent = true;
                    for byte in first {
                        tokio::time::sleep(every).await;
                        if stream.write_all(&[*byte]).await.is_err() {
                            sent = false;
                            break;
                        }
                    }
                    sent
                } else {
                    stream.write_all(first).await.is_ok()
                };
                if !sent {
                    continue;
                }
                let mut line = 0u64;
                loop {
                    tokio::time::sleep(every).await;
                    let header = format!("x-trickle-{n}-{line}: a\r\n");
                    line += 1;
                    if stream.write_all(header.as_bytes()).await.is_err() {
                        break;
                    }
                }
            }
        });
    }
    tasks
}

/// Slowloris: connections trickling their request heads (a header line, or a
/// byte of the first line, every 100 ms) held their slots until the 30 s header timeout,
/// and an evicted one for the 2 s close grace, long enough for every trickler to be
/// `closing` and the next eviction to pick the newest connection: a legitimate request was
/// reset or waited. Now an evicted connection without a request in flight goes at once.
#[tokio::test]
async fn a_request_is_served_while_more_trickling_connections_than_slots_are_open() {
    let limits = ServerLimits::default().with_max_connections(8);
    let server = start(hello(), limits).await;
    let lines = trickle(server.addr(), 8, Duration::from_millis(100), false);
    let bytes = trickle(server.addr(), 8, Duration::from_millis(100), true);
    tokio::time::sleep(Duration::from_millis(500)).await;
    for n in 0..3 {
        let started = Instant::now();
        let answer = tokio::time::timeout(PATIENCE, post(server.addr(), &message_body("hi")))
            .await
            .expect("answered before the patience ran out")
            .expect("answered, not reset");
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "request {n} waited {:?} behind trickling connections",
            started.elapsed()
        );
    }
    assert!(server.connection_count() <= 8);
    drop((lines, bytes));
}

/// A connection trickling header lines is closed at the first-request deadline, well before
/// the global header timeout (30 s).
#[tokio::test]
async fn a_connection_trickling_its_first_head_is_closed_at_the_first_request_deadline() {
    let limits = ServerLimits::default().with_first_request_timeout(Duration::from_millis(800));
    let server = start(hello(), limits).await;
    for first_line in [&b"POST /v1/messages HTTP/1.1\r\n"[..], b"POS"] {
        let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
        let started = Instant::now();
        stream.write_all(first_line).await.expect("writes");
        let closed = async {
            let mut line = 0;
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                line += 1;
                let header = format!("x-slow-{line}: a\r\n");
                if stream.write_all(header.as_bytes()).await.is_err() {
                    return;
                }
            }
        };
        assert!(
            tokio::time::timeout(PATIENCE, closed).await.is_ok(),
            "a trickling connection stayed open for {PATIENCE:?}"
        );
        assert!(
            started.elapsed() >= Duration::from_millis(700),
            "closed before the deadline: {:?}",
            started.elapsed()
        );
    }
    // A connection that started a request is not cut by it.
    let answer = post(server.addr(), &message_body("hi"))
        .await
        .expect("answer");
    assert_eq!(answer.status, 200, "{}", answer.body);
}
