//! The client on each cloud platform against the mock's fronts, over real loopback TCP: the
//! same request becomes Bedrock's signed InvokeModel (read back from the AWS event stream),
//! Vertex's streamRawPredict and Foundry's `/anthropic/v1/messages`, and each answer reads as
//! the same message. Throttling answered in a platform's own shape is retried; credentials
//! never reach an error.

use serde_json::{Value, json};
use threadline_client::{
    ApiKey, Auth, AwsCredentials, Client, ClientConfig, Provider, collect_message,
};
use threadline_mock::{
    MOCK_AWS_ACCESS_KEY_ID, MOCK_AWS_SECRET_ACCESS_KEY, MockConfig, MockServer,
    PlatformCredentials, Scenario, Step, StreamFault,
};
use threadline_wire::StreamEvent;

use crate::common::{self, drain, request};

const BEDROCK_MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const VERTEX_MODEL: &str = "claude-sonnet-4-5@20250929";
const SESSION_TOKEN: &str = "FwoGZXIvYXdzEXAMPLE-session-token-0123456789";

/// The suite's client settings ([`common::config`]) for `provider` with `auth`.
fn config(base_url: &str, auth: Auth, provider: Provider) -> ClientConfig {
    common::config(base_url)
        .with_auth(auth)
        .with_provider(provider)
}

/// A Bedrock client signing with the mock's access key id and `secret`.
fn bedrock(base_url: &str, secret: &str) -> Client {
    Client::new(config(
        base_url,
        aws(secret),
        Provider::bedrock("us-east-1"),
    ))
    .expect("a client")
}

fn aws(secret: &str) -> Auth {
    Auth::Aws(
        AwsCredentials::new(MOCK_AWS_ACCESS_KEY_ID, secret, Some(SESSION_TOKEN))
            .expect("credentials"),
    )
}

async fn mock(steps: Vec<Step>, credentials: PlatformCredentials) -> MockServer {
    let config = MockConfig::new(Scenario::new(steps)).with_platform_credentials(credentials);
    MockServer::start_with(config)
        .await
        .expect("the mock starts")
}

fn model(name: &str) -> threadline_wire::MessagesRequest {
    let mut request = request();
    request.model = name.to_owned();
    request
}

#[tokio::test]
async fn bedrock_requests_are_signed_and_streams_read_from_the_event_stream() {
    let server = mock(
        vec![Step::text("Hello from Bedrock, in pieces.").with_chunk_chars(4)],
        PlatformCredentials::default(),
    )
    .await;
    let client = Client::new(config(
        &server.base_url(),
        aws(MOCK_AWS_SECRET_ACCESS_KEY),
        Provider::bedrock("eu-west-1"),
    ))
    .expect("a client");
    let mut beta_request = model(BEDROCK_MODEL);
    beta_request.output_config = None;
    let client = Client::new(
        client
            .config()
            .clone()
            .with_beta("interleaved-thinking-2025-05-14"),
    )
    .expect("a client");
    let (events, error) = drain(client.stream(beta_request).await.expect("a stream")).await;
    assert!(error.is_none(), "{error:?}");
    assert!(matches!(events.first(), Some(StreamEvent::MessageStart(_))));
    assert!(matches!(events.last(), Some(StreamEvent::MessageStop(_))));
    let recorded = &server.requests()[0];
    assert_eq!(
        recorded.path,
        format!("/model/{BEDROCK_MODEL}/invoke-with-response-stream")
    );
    assert_eq!(recorded.status, Some(200));
    let body = recorded.body.as_ref().expect("kept");
    assert_eq!(body["anthropic_version"], json!("bedrock-2023-05-31"));
    assert_eq!(
        body["anthropic_beta"],
        json!(["interleaved-thinking-2025-05-14"])
    );
    assert!(
        body.get("model").is_none() && body.get("stream").is_none(),
        "{body}"
    );
    assert!(!recorded.headers.contains_key("anthropic-beta"));
    assert!(!recorded.headers.contains_key("anthropic-version"));
    assert_eq!(recorded.headers["x-amz-security-token"], "[redacted]");
}

#[tokio::test]
async fn the_same_request_reads_as_the_same_message_on_every_platform() {
    let step = || Step::text("Same everywhere.").with_chunk_chars(3);
    let credentials = PlatformCredentials::default()
        .with_vertex_token("ya29.vertex-token-0123456789")
        .with_foundry_key("foundry-key-0123456789");
    let server = mock(vec![step(), step(), step(), step()], credentials).await;
    let base = server.base_url();
    let bearer = |t: &str| Auth::Bearer(ApiKey::new(t).expect("a token"));
    let key = |t: &str| Auth::ApiKey(ApiKey::new(t).expect("a key"));
    let cases = [
        (
            Provider::Anthropic,
            key("sk-ant-api03-x"),
            "claude-sonnet-4-5",
            base.clone(),
        ),
        (
            Provider::bedrock("us-east-1"),
            aws(MOCK_AWS_SECRET_ACCESS_KEY),
            BEDROCK_MODEL,
            base.clone(),
        ),
        (
            Provider::vertex("proj", "us-east5"),
            bearer("ya29.vertex-token-0123456789"),
            VERTEX_MODEL,
            base.clone(),
        ),
        (
            Provider::Foundry,
            key("foundry-key-0123456789"),
            "claude-sonnet-4-5",
            format!("{base}/anthropic"),
        ),
    ];
    let mut messages = Vec::new();
    for (provider, auth, id, base) in cases {
        let name = provider.name();
        let client = Client::new(config(&base, auth, provider)).expect("a client");
        let message = collect_message(
            client
                .stream(model(id))
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}")),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        messages.push((name, message));
    }
    for (name, message) in &messages {
        assert_eq!(message.text(), "Same everywhere.", "{name}");
        assert_eq!(message.content, messages[0].1.content, "{name}");
    }
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/v1/messages".to_owned(),
            format!("/model/{BEDROCK_MODEL}/invoke-with-response-stream"),
            format!(
                "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/{VERTEX_MODEL}:streamRawPredict"
            ),
            "/anthropic/v1/messages".to_owned(),
        ]
    );
    let requests = server.requests();
    let vertex: &Value = requests[2].body.as_ref().expect("kept");
    assert_eq!(vertex["anthropic_version"], json!("vertex-2023-10-16"));
    assert!(vertex.get("model").is_none(), "{vertex}");
    assert_eq!(requests[3].headers["api-key"], "[redacted]");
}

#[tokio::test]
async fn a_wrong_secret_is_an_authentication_error_naming_bedrock_and_no_secret() {
    let server = mock(vec![Step::text("unused")], PlatformCredentials::default()).await;
    let secret = "wrong-secret-0123456789-abcdefgh";
    let client = bedrock(&server.base_url(), secret);
    let error = client
        .stream(model(BEDROCK_MODEL))
        .await
        .err()
        .expect("refused");
    assert_eq!(error.status(), Some(403));
    let text = error.to_string();
    assert!(
        text.contains("Amazon Bedrock InvalidSignatureException"),
        "{text}"
    );
    assert!(
        !text.contains(secret) && !text.contains(SESSION_TOKEN),
        "{text}"
    );
    assert!(!format!("{error:?} {:?}", client.config()).contains(secret));
    // Not retried: an authentication error is final.
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn throttling_in_a_platforms_shape_is_retried() {
    // Bedrock answers the scripted 429 as a ThrottlingException; Vertex as the API's 429.
    let server = mock(
        vec![Step::rate_limited(0.0), Step::text("after the throttle")],
        PlatformCredentials::default(),
    )
    .await;
    let client = bedrock(&server.base_url(), MOCK_AWS_SECRET_ACCESS_KEY);
    let message = client.message(model(BEDROCK_MODEL)).await.expect("retried");
    assert_eq!(message.text(), "after the throttle");
    let statuses: Vec<Option<u16>> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(429), Some(200)]);
}

#[tokio::test]
async fn an_exception_frame_mid_stream_is_the_apis_error() {
    let fault = StreamFault::ErrorEvent {
        after_events: 3,
        error_type: Some("overloaded_error".to_owned()),
        message: Some("Bedrock is unable to process your request.".to_owned()),
    };
    let server = mock(
        vec![Step::text("cut").with_fault(fault)],
        PlatformCredentials::default(),
    )
    .await;
    let client = bedrock(&server.base_url(), MOCK_AWS_SECRET_ACCESS_KEY);
    let (events, error) = drain(client.stream(model(BEDROCK_MODEL)).await.expect("a stream")).await;
    // message_start and content_block_start: the third event was the API's `ping`, which
    // Bedrock does not send.
    assert_eq!(events.len(), 2, "{events:?}");
    let error = error.expect("the stream's error");
    assert!(error.is_overloaded(), "{error}");
    assert!(
        error.to_string().contains("serviceUnavailableException"),
        "{error}"
    );
}

#[tokio::test]
async fn sigv4_credentials_are_refused_anywhere_but_bedrock() {
    let config = ClientConfig::new("http://127.0.0.1:9", aws(MOCK_AWS_SECRET_ACCESS_KEY))
        .with_provider(Provider::vertex("p", "global"));
    let error = Client::new(config).expect_err("refused");
    assert_eq!(
        error.to_string(),
        "Vertex AI does not take AWS SigV4 credentials"
    );
}

#[tokio::test]
async fn tokens_are_counted_on_vertex_and_refused_on_bedrock_in_words_naming_it() {
    let server = mock(vec![], PlatformCredentials::default()).await;
    let bearer = Auth::Bearer(ApiKey::new("ya29.token-0123456789").expect("a token"));
    let vertex = Client::new(config(
        &server.base_url(),
        bearer,
        Provider::vertex("proj", "global"),
    ))
    .expect("a client");
    let mut vertex_request = request();
    vertex_request.model = VERTEX_MODEL.to_owned();
    let count: threadline_wire::CountTokensRequest = (&vertex_request).into();
    let tokens = vertex.count_tokens(&count).await.expect("counted");
    assert!(tokens > 0);
    let recorded = &server.requests()[0];
    assert_eq!(
        recorded.path,
        "/v1/projects/proj/locations/global/publishers/anthropic/models/count-tokens:rawPredict"
    );
    let body = recorded.body.as_ref().expect("kept");
    // A count keeps its model in the body, beside Vertex's version.
    assert_eq!(body["model"], json!(VERTEX_MODEL));
    assert_eq!(body["anthropic_version"], json!("vertex-2023-10-16"));
    let bedrock = bedrock(&server.base_url(), MOCK_AWS_SECRET_ACCESS_KEY);
    let error = bedrock.count_tokens(&count).await.expect_err("not offered");
    assert_eq!(
        error.to_string(),
        "Api: Amazon Bedrock does not count tokens through the Messages API"
    );
    assert!(!error.is_retryable() && error.status().is_none());
    assert_eq!(server.request_count(), 1, "nothing was sent to Bedrock");
}

#[tokio::test]
async fn on_demand_compaction_is_refused_on_bedrock_in_its_words_and_served_on_vertex() {
    // Sonnet 4.6 has on-demand compaction on the API; Bedrock does not offer it on any model.
    let server = mock(
        vec![Step::text("unused"), Step::text("unused")],
        PlatformCredentials::default(),
    )
    .await;
    let compacting = |name: &str| {
        let mut request = model(name);
        request.compaction = Some(threadline_wire::request::CompactionParam::summarize(None));
        request
    };
    let client = bedrock(&server.base_url(), MOCK_AWS_SECRET_ACCESS_KEY);
    let error = client
        .stream(compacting("us.anthropic.claude-sonnet-4-6"))
        .await
        .err()
        .expect("refused");
    assert_eq!(error.status(), Some(400));
    let text = error.to_string();
    assert!(
        text.contains("ValidationException")
            && text.contains("extraneous key [compaction] is not permitted")
            && text.contains("Amazon Bedrock does not offer on-demand compaction"),
        "{text}"
    );
    // One request, refused by the platform (not retried), on Bedrock's path.
    let recorded = server.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].status, Some(400));
    assert!(recorded[0].path.ends_with("/invoke-with-response-stream"));
    // Vertex AI offers it: the same request is served.
    let vertex = Client::new(config(
        &server.base_url(),
        Auth::Bearer(ApiKey::new("ya29.vertex-token").expect("a token")),
        Provider::vertex("p-1", "us-east5"),
    ))
    .expect("a client");
    let message = collect_message(
        vertex
            .stream(compacting("claude-sonnet-4-6"))
            .await
            .expect("served"),
    )
    .await
    .expect("a message");
    assert_eq!(
        message.stop_reason,
        Some(threadline_wire::StopReason::Compaction)
    );
}

/// The standard AWS chain's profile provider (`aws-config`, reading a real credentials file)
/// signs Bedrock requests; a chain is asked before every request, so temporary credentials
/// that rotate are used as they come, and none of its secrets reaches an error.
#[cfg(feature = "aws-credential-chain")]
#[tokio::test]
async fn credentials_from_the_aws_chain_sign_each_request_and_stay_out_of_errors() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aws_config::profile::ProfileFileCredentialsProvider;
    use aws_credential_types::Credentials;
    use aws_credential_types::provider::{ProvideCredentials, future};
    use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
    use threadline_client::provider::AwsCredentialChain;

    let profile = |secret: &str| {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("credentials");
        std::fs::write(
            &path,
            format!(
                "[default]\naws_access_key_id = AKIDNOTTHISONE\naws_secret_access_key = nope-0123456789\n\n\
                 [threadline-mock]\naws_access_key_id = {MOCK_AWS_ACCESS_KEY_ID}\naws_secret_access_key = {secret}\n"
            ),
        )
        .expect("the credentials file");
        let files = EnvConfigFiles::builder()
            .with_file(EnvConfigFileKind::Credentials, &path)
            .build();
        let provider = ProfileFileCredentialsProvider::builder()
            .configure(&AwsCredentialChain::provider_config())
            .profile_files(files)
            .profile_name("threadline-mock")
            .build();
        (dir, AwsCredentialChain::from_provider(provider))
    };
    let chain_client = |base_url: &str, chain: AwsCredentialChain| {
        Client::new(config(
            base_url,
            Auth::AwsChain(chain),
            Provider::bedrock("us-east-1"),
        ))
        .expect("a client")
    };
    let server = mock(
        vec![Step::text("From the profile."), Step::text("unused")],
        PlatformCredentials::default(),
    )
    .await;
    let (_dir, chain) = profile(MOCK_AWS_SECRET_ACCESS_KEY);
    let client = chain_client(&server.base_url(), chain);
    let message = collect_message(client.stream(model(BEDROCK_MODEL)).await.expect("signed"))
        .await
        .expect("a message");
    assert_eq!(message.content.len(), 1);
    // The wrong secret in the profile: the platform's 403, no secret in the error.
    let wrong = "profile-secret-that-is-wrong-0123456789";
    let (_dir, chain) = profile(wrong);
    let client = chain_client(&server.base_url(), chain);
    let error = client
        .stream(model(BEDROCK_MODEL))
        .await
        .err()
        .expect("refused");
    assert_eq!(error.status(), Some(403));
    assert!(!format!("{error} {error:?} {client:?}").contains(wrong));

    // Asked before every request: each request carries the token the chain gave then.
    #[derive(Debug)]
    struct Rotating(Arc<AtomicUsize>);
    impl ProvideCredentials for Rotating {
        fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            future::ProvideCredentials::ready(Ok(Credentials::new(
                MOCK_AWS_ACCESS_KEY_ID,
                MOCK_AWS_SECRET_ACCESS_KEY,
                Some(format!("rotating-session-token-{n:04}-abcdefgh")),
                None,
                "test",
            )))
        }
    }
    let asked = Arc::new(AtomicUsize::new(0));
    let server = mock(
        vec![Step::text("one"), Step::text("two")],
        PlatformCredentials::default(),
    )
    .await;
    let client = chain_client(
        &server.base_url(),
        AwsCredentialChain::from_provider(Rotating(Arc::clone(&asked))),
    );
    for _ in 0..2 {
        drain(client.stream(model(BEDROCK_MODEL)).await.expect("signed")).await;
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let tokens: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.headers.get("x-amz-security-token").cloned())
        .collect();
    assert_eq!(tokens.len(), 2);
    assert!(
        tokens.iter().all(|t| t.as_deref() == Some("[redacted]")),
        "{tokens:?}"
    );
}

/// Vertex AI with Application Default Credentials (`gcp_auth`): a service account's key file
/// whose `token_uri` is the mock's token endpoint, which checks the RS256-signed grant as
/// Google does and issues the access token the Vertex front then takes. A token the mock did
/// not issue is Google's 401; a grant it refuses is an error naming the reason, retryable.
#[cfg(feature = "google-adc")]
#[tokio::test]
async fn vertex_tokens_from_application_default_credentials_come_from_the_token_endpoint() {
    use std::sync::Arc;

    use threadline_client::provider::GoogleCredentials;
    use threadline_mock::GoogleServiceAccount;
    use threadline_testkit::google::service_account_key;

    let probe = service_account_key("http://127.0.0.1:9/token");
    let account = GoogleServiceAccount::from_json(&probe).expect("the test account");
    let server = mock(
        vec![Step::text("From Vertex."), Step::text("unused")],
        PlatformCredentials::default().with_google_service_account(account),
    )
    .await;
    let key = service_account_key(&format!("{}/token", server.base_url()));
    let adc = |key: &str| {
        let account = gcp_auth::CustomServiceAccount::from_json(key).expect("a key file");
        GoogleCredentials::from_provider(Arc::new(account))
    };
    let client = |auth: Auth| {
        Client::new(config(
            &server.base_url(),
            auth,
            Provider::vertex("threadline-mock", "us-east5"),
        ))
        .expect("a client")
    };
    let vertex = client(Auth::GoogleAdc(adc(&key)));
    let message = collect_message(vertex.stream(model(VERTEX_MODEL)).await.expect("served"))
        .await
        .expect("a message");
    assert_eq!(message.content.len(), 1);
    let recorded = server.requests();
    assert_eq!(recorded.len(), 2, "the token, then the message");
    assert_eq!(recorded[0].path, "/token");
    assert_eq!(recorded[0].status, Some(200));
    assert!(recorded[1].path.ends_with(":streamRawPredict"));
    assert_eq!(recorded[1].headers["authorization"], "[redacted]");
    // A token the mock did not issue: Google's 401.
    let stranger = client(Auth::Bearer(
        ApiKey::new("ya29.not-issued-here").expect("a token"),
    ));
    let error = stranger
        .stream(model(VERTEX_MODEL))
        .await
        .err()
        .expect("refused");
    assert_eq!(error.status(), Some(401));
    // A grant for another account: refused at the token endpoint, nothing sent to Vertex.
    let other = key.replace("threadline-test@", "someone-else@");
    let before = server.requests().len();
    let error = client(Auth::GoogleAdc(adc(&other)))
        .stream(model(VERTEX_MODEL))
        .await
        .err()
        .expect("no token");
    let text = error.to_string();
    assert!(text.contains("Vertex AI: no Google access token"), "{text}");
    assert!(error.is_retryable(), "{error:?}");
    let after = server.requests();
    assert!(
        after[before..].iter().all(|r| r.path == "/token"),
        "{after:?}"
    );
}

/// An event-stream frame of `event_type` carrying `payload`.
fn event_frame(event_type: &str, payload: &[u8]) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let headers = vec![
        Header::new(
            ":event-type",
            HeaderValue::String(event_type.to_owned().into()),
        ),
        Header::new(":message-type", HeaderValue::String("event".into())),
    ];
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(
        &Message::new_from_parts(headers, bytes::Bytes::copy_from_slice(payload)),
        &mut out,
    )
    .expect("writes");
    out
}

#[tokio::test]
async fn frames_that_carry_no_event_still_count_against_the_response_limit() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // 4 MiB of frames of a kind the client skips, against a 1 MiB limit.
    let frame = event_frame("metadata", &vec![b'x'; 64 * 1024]);
    let body: Vec<u8> = frame.repeat(64);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let address = listener.local_addr().expect("an address");
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("a connection");
        let mut request = vec![0u8; 64 * 1024];
        let _ = socket.read(&mut request).await;
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/vnd.amazon.eventstream\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        );
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(&body).await;
    });
    let config = config(
        &format!("http://{address}"),
        aws(MOCK_AWS_SECRET_ACCESS_KEY),
        Provider::bedrock("us-east-1"),
    )
    .with_limits(1 << 20, 1 << 20)
    .with_retry(threadline_client::RetryConfig::none());
    let client = Client::new(config).expect("a client");
    let error = client
        .message(model(BEDROCK_MODEL))
        .await
        .expect_err("the body passes the limit");
    assert!(
        error.to_string().contains("limit of 1048576 bytes"),
        "{error}"
    );
    server.abort();
}
