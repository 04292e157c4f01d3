//! Real Bedrock traffic, recorded by public projects (`fixtures/recorded-platforms/`, sources
//! and licences in its `SOURCES.md`): each recorded event stream, served byte for byte over
//! loopback and read by the client's Bedrock provider, gives the same message as its SSE
//! equivalent read by the Claude API provider. The SSE equivalent is made here by a frame
//! walker of the test's own (not the client's `aws-smithy-eventstream` path), so two readings
//! of the frames have to agree.

use std::path::PathBuf;

use base64::Engine as _;
use serde_json::{Value, json};
use threadline_client::{ApiKey, Auth, Client, Provider};
use threadline_mock::{MockServer, Scenario, Step};
use threadline_wire::ContentBlock;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpListener;

use crate::common::{config, read_request, request};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/recorded-platforms")
}

/// A YAML scalar's text, through a tag (`!!binary`).
fn text(value: &serde_yaml::Value) -> Option<String> {
    match value {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Tagged(tagged) => text(&tagged.value),
        _ => None,
    }
}

/// Every recorded event-stream response: `(file, interaction, bytes)`.
fn recorded_streams() -> Vec<(String, usize, Vec<u8>)> {
    let mut out = Vec::new();
    for repo in std::fs::read_dir(dir()).expect("the platform fixtures") {
        let repo = repo.expect("an entry").path();
        if !repo.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&repo).expect("a repo folder") {
            let path = file.expect("an entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
                continue;
            }
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let doc: serde_yaml::Value =
                serde_yaml::from_str(&std::fs::read_to_string(&path).expect("readable"))
                    .expect("a YAML cassette");
            let interactions = doc["interactions"]
                .as_sequence()
                .cloned()
                .unwrap_or_default();
            for (i, interaction) in interactions.iter().enumerate() {
                let response = &interaction["response"];
                let content_type = response["headers"]
                    .as_mapping()
                    .into_iter()
                    .flatten()
                    .find(|(k, _)| {
                        k.as_str()
                            .is_some_and(|k| k.eq_ignore_ascii_case("content-type"))
                    })
                    .and_then(|(_, v)| v.as_sequence()?.first().and_then(text));
                if content_type.as_deref() != Some("application/vnd.amazon.eventstream") {
                    continue;
                }
                let encoded = text(&response["body"]["string"]).expect("a binary body");
                let compact: String = encoded.split_whitespace().collect();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .expect("base64");
                out.push((name.clone(), i, bytes));
            }
        }
    }
    out.sort();
    out
}

/// The SSE equivalent of an event stream, by the event-stream layout itself: a big-endian
/// total length and headers length, the prelude's CRC, the headers, the payload, the
/// message's CRC. Only `chunk` events are kept; each payload's `bytes` is one event's JSON.
fn sse_equivalent(bytes: &[u8]) -> String {
    let mut sse = String::new();
    let mut at = 0;
    while at < bytes.len() {
        let u32_at = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let total = u32_at(at) as usize;
        let headers_len = u32_at(at + 4) as usize;
        let headers = &bytes[at + 12..at + 12 + headers_len];
        let payload = &bytes[at + 12 + headers_len..at + total - 4];
        let mut event_type = None;
        let mut h = 0;
        while h < headers.len() {
            let name_len = headers[h] as usize;
            let name = std::str::from_utf8(&headers[h + 1..h + 1 + name_len]).expect("UTF-8");
            let kind = headers[h + 1 + name_len];
            assert_eq!(kind, 7, "Bedrock's headers are strings");
            let value_at = h + 2 + name_len;
            let value_len = u16::from_be_bytes([headers[value_at], headers[value_at + 1]]) as usize;
            let value = std::str::from_utf8(&headers[value_at + 2..value_at + 2 + value_len])
                .expect("UTF-8");
            if name == ":event-type" {
                event_type = Some(value.to_owned());
            }
            h = value_at + 2 + value_len;
        }
        if event_type.as_deref() == Some("chunk") {
            let wrapper: Value = serde_json::from_slice(payload).expect("a JSON payload");
            let event = base64::engine::general_purpose::STANDARD
                .decode(wrapper["bytes"].as_str().expect("bytes"))
                .expect("base64");
            let event: Value = serde_json::from_slice(&event).expect("an event");
            let name = event["type"].as_str().expect("a type").to_owned();
            sse.push_str(&format!("event: {name}\ndata: {event}\n\n"));
        }
        at += total;
    }
    sse
}

/// A server answering every request with `status`, the headers `headers` (each a CRLF-ended
/// line) and `body`.
async fn serve(status: &'static str, headers: String, body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (headers, body) = (headers.clone(), body.clone());
            tokio::spawn(async move {
                if read_request(&mut stream).await.is_ok() {
                    let head = format!(
                        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\n\
                         connection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                }
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn recorded_bedrock_streams_read_as_their_sse_equivalents() {
    let streams = recorded_streams();
    let files: std::collections::BTreeSet<&str> =
        streams.iter().map(|(f, _, _)| f.as_str()).collect();
    assert_eq!(
        files.len(),
        3,
        "the three recorded stream cassettes: {files:?}"
    );
    assert_eq!(streams.len(), 4, "one of them holds two streamed turns");
    let mut tool_inputs = Vec::new();
    let mut texts = Vec::new();
    for (file, turn, bytes) in &streams {
        let what = format!("{file} #{turn}");
        let sse = sse_equivalent(bytes);
        // The Claude API's path: the SSE replayed by the mock.
        let mock = MockServer::start(Scenario::new([Step::replay_sse(sse)]))
            .await
            .expect("the mock starts");
        let api = Client::new(config(&mock.base_url())).expect("a client");
        let expected = api
            .message(request())
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        // Bedrock's: the recorded bytes, read by the Bedrock provider.
        let headers = "content-type: application/vnd.amazon.eventstream\r\n\
                       x-amzn-requestid: recorded\r\n"
            .to_owned();
        let base = serve("200 OK", headers, bytes.clone()).await;
        let bedrock = Client::new(
            config(&base)
                .with_auth(Auth::Bearer(ApiKey::new("bedrock-api-key").expect("a key")))
                .with_provider(Provider::bedrock("us-east-1")),
        )
        .expect("a client");
        let read = bedrock
            .message(request())
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(read, expected, "{what}");
        for block in &read.content {
            match block {
                ContentBlock::ToolUse(tool) => tool_inputs.push(tool.input.clone()),
                ContentBlock::Text(t) => texts.push(t.text.clone()),
                _ => {}
            }
        }
    }
    // What the recordings say, read back: the tool loop's two parallel calls, and the text
    // of the plain streams.
    assert_eq!(
        tool_inputs,
        [
            json!({"location": "Seattle"}),
            json!({"location": "San Francisco"})
        ]
    );
    assert!(
        texts
            .iter()
            .any(|t| t == "Okay, I will repeat: This is a test"),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("distributed tracing span cross the road")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn the_recorded_bedrock_error_reads_as_the_apis_invalid_request() {
    let path = dir().join(
        "open-telemetry__opentelemetry-python-contrib/test_invoke_model_with_invalid_model.yaml",
    );
    let doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).expect("readable")).expect("YAML");
    let response = &doc["interactions"][0]["response"];
    assert_eq!(response["status"]["code"].as_u64(), Some(400));
    let error_type = response["headers"]["x-amzn-ErrorType"][0]
        .as_str()
        .expect("the error type")
        .to_owned();
    let body = text(&response["body"]["string"]).expect("a body");
    let headers = format!("content-type: application/json\r\nx-amzn-errortype: {error_type}\r\n");
    let base = serve("400 Bad Request", headers, body.into_bytes()).await;
    let client = Client::new(
        config(&base)
            .with_auth(Auth::Bearer(ApiKey::new("bedrock-api-key").expect("a key")))
            .with_provider(Provider::bedrock("us-east-1")),
    )
    .expect("a client");
    let error = client.message(request()).await.expect_err("refused");
    assert_eq!(error.status(), Some(400));
    assert_eq!(
        error.api_error_type(),
        Some(&threadline_wire::ApiErrorType::InvalidRequest)
    );
    assert!(
        error.to_string().contains(
            "Amazon Bedrock ValidationException: The provided model identifier is invalid."
        ),
        "{error}"
    );
}
