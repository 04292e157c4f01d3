//! The cloud platforms' fronts against clients nobody here wrote: the official Anthropic
//! Python SDK's `AnthropicBedrock` (its requests signed by botocore's SigV4, its streams read
//! by botocore's event-stream parser) and `AnthropicVertex` (`tests/fixtures/platform_client.py`,
//! in the pinned venv `cargo xtask mcp-servers` installs), over real loopback HTTP.

use std::path::PathBuf;

use serde_json::{Value, json};
use threadline_mock::{
    MOCK_AWS_ACCESS_KEY_ID, MOCK_AWS_SECRET_ACCESS_KEY, MockConfig, MockServer,
    PlatformCredentials, Scenario, Step, StreamFault,
};

const INSTALL: &str = "cargo xtask mcp-servers";
const BEDROCK_MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const VERTEX_MODEL: &str = "claude-sonnet-4-5@20250929";

fn python() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-servers/venv/bin/python");
    assert!(
        path.exists(),
        "{} is missing: install it with `{INSTALL}`",
        path.display()
    );
    path
}

/// Runs the SDK's client with `args` and returns its JSON line.
async fn sdk(args: Vec<String>) -> Value {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/platform_client.py");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python())
            .arg(script)
            .args(args)
            .env_remove("AWS_BEARER_TOKEN_BEDROCK")
            .env_remove("ANTHROPIC_BEDROCK_BASE_URL")
            .env_remove("ANTHROPIC_VERTEX_BASE_URL")
            .output()
    })
    .await
    .expect("the blocking task ran")
    .expect("the SDK's client ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

fn bedrock_args(base: &str, secret: &str, stream: bool) -> Vec<String> {
    let mut args = vec![
        "bedrock".to_owned(),
        base.to_owned(),
        MOCK_AWS_ACCESS_KEY_ID.to_owned(),
        secret.to_owned(),
        BEDROCK_MODEL.to_owned(),
    ];
    if stream {
        args.push("--stream".to_owned());
    }
    args
}

fn vertex_args(base: &str, token: &str, stream: bool) -> Vec<String> {
    let mut args = vec![
        "vertex".to_owned(),
        format!("{base}/v1"),
        token.to_owned(),
        "test-project".to_owned(),
        VERTEX_MODEL.to_owned(),
    ];
    if stream {
        args.push("--stream".to_owned());
    }
    args
}

fn text_of(message: &Value) -> &str {
    message["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_bedrock_client_streams_a_message_signed_by_botocore() {
    let server = MockServer::start(Scenario::new([
        Step::text("Hello from Bedrock!"),
        Step::text("Again, whole."),
    ]))
    .await
    .expect("the mock starts");
    let base = server.base_url();
    let out = sdk(bedrock_args(&base, MOCK_AWS_SECRET_ACCESS_KEY, true)).await;
    assert_eq!(out["ok"], json!(true), "{out}");
    assert_eq!(text_of(&out["message"]), "Hello from Bedrock!");
    // Every event came through botocore's event-stream parser, in the API's order.
    let events: Vec<&str> = out["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(events.first(), Some(&"message_start"));
    assert_eq!(events.last(), Some(&"message_stop"));
    assert!(events.contains(&"content_block_delta"), "{events:?}");
    // Not streamed: the message as JSON.
    let whole = sdk(bedrock_args(&base, MOCK_AWS_SECRET_ACCESS_KEY, false)).await;
    assert_eq!(text_of(&whole["message"]), "Again, whole.", "{whole}");
    // What the mock received is Bedrock's shape: the model in the path, the version in the
    // body, no `model` or `stream` there, SigV4 in the headers.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let streamed = &requests[0];
    assert_eq!(
        streamed.path,
        format!("/model/{BEDROCK_MODEL}/invoke-with-response-stream")
    );
    assert_eq!(requests[1].path, format!("/model/{BEDROCK_MODEL}/invoke"));
    assert_eq!(streamed.status, Some(200));
    let body = streamed.body.as_ref().expect("the body was kept");
    assert!(body.get("anthropic_version").is_some(), "{body}");
    assert!(
        body.get("model").is_none() && body.get("stream").is_none(),
        "{body}"
    );
    assert_eq!(streamed.headers["authorization"], "[redacted]");
    assert!(streamed.headers.contains_key("x-amz-date"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_signed_with_a_wrong_secret_gets_bedrocks_403() {
    let server = MockServer::start(Scenario::new([Step::text("never sent")]))
        .await
        .expect("the mock starts");
    let out = sdk(bedrock_args(&server.base_url(), "not-the-secret", true)).await;
    assert_eq!(out["ok"], json!(false), "{out}");
    assert_eq!(out["status"], json!(403));
    assert_eq!(out["error"], json!("PermissionDeniedError"));
    let text = out["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("The request signature we calculated does not match"),
        "{text}"
    );
    let requests = server.requests();
    assert_eq!(requests[0].status, Some(403));
    assert!(requests[0].body.is_none(), "a refused body is not kept");
    // The right secret on the same server is taken: the refusal was the signature's.
    let out = sdk(bedrock_args(
        &server.base_url(),
        MOCK_AWS_SECRET_ACCESS_KEY,
        false,
    ))
    .await;
    assert_eq!(text_of(&out["message"]), "never sent", "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_inside_a_bedrock_stream_is_an_exception_frame_the_sdk_reads() {
    let fault = StreamFault::ErrorEvent {
        after_events: 2,
        error_type: Some("rate_limit_error".to_owned()),
        message: Some("Too many requests, please wait before trying again.".to_owned()),
    };
    let step = Step::text("cut short").with_fault(fault);
    let server = MockServer::start(Scenario::new([step]))
        .await
        .expect("the mock starts");
    let out = sdk(bedrock_args(
        &server.base_url(),
        MOCK_AWS_SECRET_ACCESS_KEY,
        true,
    ))
    .await;
    assert_eq!(out["ok"], json!(false), "{out}");
    // botocore parsed a `throttlingException` frame; the SDK raises it with the stream's 200.
    assert_eq!(out["status"], json!(200), "{out}");
    let text = out["text"].as_str().unwrap_or_default();
    assert!(text.contains("Too many requests"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_vertex_client_streams_a_message_with_its_token() {
    let credentials = PlatformCredentials::default().with_vertex_token("ya29.test-token");
    let config = MockConfig::new(Scenario::new([Step::text("Hello from Vertex!")]))
        .with_platform_credentials(credentials);
    let server = MockServer::start_with(config)
        .await
        .expect("the mock starts");
    let base = server.base_url();
    let out = sdk(vertex_args(&base, "ya29.test-token", true)).await;
    assert_eq!(out["ok"], json!(true), "{out}");
    assert_eq!(text_of(&out["message"]), "Hello from Vertex!");
    let requests = server.requests();
    let request = &requests[0];
    assert_eq!(
        request.path,
        format!(
            "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/\
             {VERTEX_MODEL}:streamRawPredict"
        )
    );
    let body = request.body.as_ref().expect("the body was kept");
    assert!(body.get("anthropic_version").is_some(), "{body}");
    assert_eq!(body["stream"], json!(true));
    assert!(body.get("model").is_none(), "{body}");
    // Another token is Google's 401.
    let out = sdk(vertex_args(&base, "ya29.wrong", false)).await;
    assert_eq!(out["status"], json!(401), "{out}");
    assert_eq!(out["error"], json!("AuthenticationError"));
    assert!(
        out["text"]
            .as_str()
            .is_some_and(|t| t.contains("UNAUTHENTICATED")),
        "{out}"
    );
}
