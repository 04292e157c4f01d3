//! The API key never appears in logs, `Debug`, `Display` or errors: every output of a session
//! with successes, retries, faults and timeouts is captured and searched for it.

mod common;

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
        logs.contains("status=429"),
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
