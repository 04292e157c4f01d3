//! The API key never appears in logs, `Debug`, `Display` or errors: every output of a session
//! with successes, retries, faults and timeouts is captured and searched for it.

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{KEY, drain, request, stall_config};
use threadline_client::{ApiKey, Auth, Client, ClientConfig};
use threadline_mock::{MockServer, Scenario, Step, StreamFault};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// An error's `Display`, `Debug` and every source in its chain.
fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = format!("{error}\n{error:?}\n");
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(&format!("{e}\n{e:?}\n"));
        source = e.source();
    }
    text
}

#[tokio::test]
async fn the_api_key_never_appears_in_any_output() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = MockServer::start(Scenario::new([
        Step::text("fine"),
        Step::rate_limited(0.01),
        Step::overloaded(),
        Step::text("after retries"),
        Step::text("x").with_fault(StreamFault::ErrorEvent {
            after_events: 2,
            error_type: None,
            message: None,
        }),
        Step::text("x").with_fault(StreamFault::Stall { after_events: 3 }),
        Step::prompt_too_long(300_000, 200_000),
        Step::Reset,
        Step::Reset,
        Step::Reset,
    ]))
    .await
    .expect("the mock starts");
    let mut outputs = Vec::new();

    let config = stall_config(&server.base_url());
    let client = Client::new(config.clone()).expect("a client");
    outputs.push(format!(
        "{config:?}\n{client:?}\n{:?}\n{:?}",
        config.auth,
        client.config()
    ));
    let key = ApiKey::new(KEY).expect("a key");
    outputs.push(format!(
        "{key} {key:?} {:?} {:?}",
        Auth::ApiKey(key.clone()),
        Auth::Bearer(key.clone())
    ));
    let bearer = ClientConfig::new(server.base_url(), Auth::Bearer(key));
    outputs.push(format!("{bearer:?}"));

    for _ in 0..6 {
        match client.stream(request()).await {
            Ok(stream) => {
                let (events, error) = drain(stream).await;
                outputs.push(format!("{events:?}"));
                if let Some(error) = error {
                    outputs.push(describe(&error));
                }
            }
            Err(error) => outputs.push(describe(&error)),
        }
    }
    // A connect failure, and a first-byte timeout.
    let nowhere = Client::new(common::config("http://127.0.0.1:9").with_timeouts(
        Duration::from_millis(200),
        Duration::from_millis(200),
        Duration::from_millis(200),
    ))
    .expect("a client");
    if let Err(error) = nowhere.stream(request()).await {
        outputs.push(describe(&error));
    }
    outputs.push(format!("{:?}", server.requests()));
    drop(_guard);

    let logs =
        String::from_utf8(captured.0.lock().expect("not poisoned").clone()).expect("UTF-8 logs");
    assert!(
        logs.contains("anthropic.messages"),
        "the spans were captured:\n{logs}"
    );
    assert!(
        logs.contains("retrying the request"),
        "the retries were logged:\n{logs}"
    );
    assert!(
        logs.contains("http.response.status_code=429"),
        "the status was recorded:\n{logs}"
    );
    assert!(
        logs.contains("output_tokens="),
        "the usage was recorded:\n{logs}"
    );
    outputs.push(logs);
    let everything = outputs.join("\n");
    assert!(everything.contains("[redacted]"));
    // The whole key, and any long piece of it.
    for window in KEY.as_bytes().windows(12) {
        let piece = std::str::from_utf8(window).expect("ASCII");
        assert!(
            !everything.contains(piece),
            "`{piece}` of the key leaked:\n{everything}"
        );
    }
}

/// What an echoing server answers.
#[derive(Clone, Copy, Debug)]
enum Echo {
    /// 401 with the API's envelope, the key in the message, the type and the request id.
    Envelope,
    /// 401 with a body that is not JSON.
    PlainBody,
    /// 401 with a body that is not JSON, the key over-encoded ([`over_encoded`]).
    OverEncoded,
    /// 200, then an `error` event first.
    ErrorEventFirst,
    /// 200, `message_start` (whose id and stop reason hold the key), then an `error` event.
    ErrorEventMidStream,
}

/// `key` with every byte but letters and digits percent-encoded, the hex digits alternately
/// upper and lower case (`-` as `%2D`, then `%2d`): more than any canonical encoding.
fn over_encoded(key: &str) -> String {
    key.bytes()
        .enumerate()
        .map(|(n, b)| match (b.is_ascii_alphanumeric(), n % 2) {
            (true, _) => char::from(b).to_string(),
            (false, 0) => format!("%{b:02X}"),
            (false, _) => format!("%{b:02x}"),
        })
        .collect()
}

/// The credential the request carried: `x-api-key`, or the token of `authorization: Bearer`.
fn credential(head: &str) -> String {
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            match name.trim().to_ascii_lowercase().as_str() {
                "x-api-key" => Some(value.trim().to_owned()),
                "authorization" => Some(value.trim().trim_start_matches("Bearer ").to_owned()),
                _ => None,
            }
        })
        .unwrap_or_default()
}

/// A loopback server that reads each request and answers with the credential it carried
/// echoed back the `echo` way (a real server doing what a confused proxy or API might).
async fn echo_server(echo: Echo) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head = loop {
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break String::from_utf8_lossy(&buf[..end]).into_owned();
                    }
                };
                let key = credential(&head);
                let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let error_event = format!(
                    "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key: {key}\"}},\"request_id\":\"req_{key}\"}}\n\n"
                );
                let response = match echo {
                    Echo::Envelope => {
                        let body = format!(
                            "{{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error_{key}\",\"message\":\"invalid x-api-key: {key}\"}},\"request_id\":\"req_{key}\"}}"
                        );
                        format!(
                            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nrequest-id: req_{key}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                    Echo::PlainBody => {
                        let body = format!("<html>bad key {key}</html>");
                        format!(
                            "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                    Echo::OverEncoded => {
                        let body = format!("Bad key: {}", over_encoded(&key));
                        format!(
                            "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                    Echo::ErrorEventFirst => format!("{sse}{error_event}"),
                    Echo::ErrorEventMidStream => format!(
                        "{sse}event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_{key}\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}}}\n\nevent: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"stop_{key}\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":2}}}}\n\n{error_event}"
                    ),
                };
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

/// Every output of calls against servers that echo the key — errors (`Display`, `Debug`,
/// every source) of `stream`, `message` and `count_tokens`, and every log line at TRACE (the
/// span's request id, message id and stop reason included) — for an `sk-ant-` key sent as `x-api-key` and for a key of no known
/// shape sent as a bearer token.
#[tokio::test]
async fn a_key_the_server_echoes_back_appears_in_no_error_or_log() {
    const PLAIN_KEY: &str = "proxy/token+THEKEY-0123456789";
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut outputs = Vec::new();
    for (key, bearer) in [(KEY, false), (PLAIN_KEY, true)] {
        for echo in [
            Echo::Envelope,
            Echo::PlainBody,
            Echo::OverEncoded,
            Echo::ErrorEventFirst,
            Echo::ErrorEventMidStream,
        ] {
            let base_url = echo_server(echo).await;
            let api_key = ApiKey::new(key).expect("a key");
            let auth = if bearer {
                Auth::Bearer(api_key)
            } else {
                Auth::ApiKey(api_key)
            };
            let mut config = common::config(&base_url);
            config.auth = auth;
            let client = Client::new(config).expect("a client");
            let mut seen = format!("{echo:?} bearer={bearer}\n");
            match client.stream(request()).await {
                Ok(stream) => {
                    // The events are the server's data, not the client's output: what they
                    // carry is the transcript writer's to redact.
                    let (_events, error) = drain(stream).await;
                    let error = error.expect("the stream fails");
                    seen.push_str(&describe(&error));
                }
                Err(error) => seen.push_str(&describe(&error)),
            }
            if let Err(error) = client.message(request()).await {
                seen.push_str(&describe(&error));
            }
            let count = threadline_wire::CountTokensRequest::from(&request());
            if let Err(error) = client.count_tokens(&count).await {
                seen.push_str(&describe(&error));
            }
            assert!(seen.contains("[redacted]"), "{seen}");
            outputs.push(seen);
        }
    }
    drop(_guard);
    let logs =
        String::from_utf8(captured.0.lock().expect("not poisoned").clone()).expect("UTF-8 logs");
    assert!(logs.contains("anthropic.messages"), "{logs}");
    outputs.push(logs);
    let everything = outputs.join("\n");
    for key in [KEY, PLAIN_KEY] {
        let encoded = over_encoded(key);
        for window in key
            .as_bytes()
            .windows(12)
            .chain(encoded.as_bytes().windows(12))
        {
            let piece = std::str::from_utf8(window).expect("ASCII");
            assert!(
                !everything.contains(piece),
                "`{piece}` of the key leaked:\n{everything}"
            );
        }
    }
}
