//! The client against the mock over loopback TCP, vs a plain hyper request on the same mock in
//! the same run.
//!
//! Groups (read by `cargo xtask bench`):
//! - `client_loopback_small_stream`: one small streamed answer (a dozen events) per iteration;
//!   `ours` is `Client::message` (the whole stack: concurrency slot, retry policy, timeouts,
//!   incremental SSE decoding, typed events, accumulation), `baseline` is a bare hyper-util
//!   request with the same headers and body whose response bytes are collected unparsed. The
//!   time ratio is the client's added latency; criterion's throughput line is requests/s.
//! - `client_sse_per_mb`: a ~1 MiB recorded-style stream of small text deltas; `ours` reads it
//!   through `Client::stream` (every event decoded and typed), `baseline` collects the same
//!   body with hyper alone. The time ratio is the client's cost per MB over reading the bytes.
//! - `request_body_4mb`: the body of a 4 MB request (500 turns of an 8 KB tool result) as the
//!   client assembles it from the fragments of the same conversation's previous request, which
//!   had every message but the last two (`ours`: `BodyFragments::body`, finding the messages
//!   it shares with the kept ones chunk by chunk, splicing the kept bytes, serializing the new
//!   messages and the other fields), vs copying 4 MB (`baseline`). Not over loopback: no
//!   request is sent.
//! - `bedrock_event_stream_decode`: the events of a ~1 MiB stream decoded to typed events from
//!   Bedrock's framing (`ours`: `provider::EventStreamToSse` — each frame's CRCs and headers
//!   checked, the base64 chunk decoded — then the SSE decoder and `StreamEvent::from_json`)
//!   vs from the API's SSE (`baseline`: the SSE decoder and `StreamEvent::from_json`). The
//!   time ratio is what Bedrock's framing costs the client over SSE for the same events. Not
//!   over loopback.

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use threadline_client::{ApiKey, Auth, Client, ClientConfig};
use threadline_mock::{MockServer, Scenario, Step};
use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};

fn request() -> MessagesRequest {
    let mut request = MessagesRequest::new(
        "claude-sonnet-4-6",
        256,
        vec![MessageParam::user(vec![ContentBlock::text("Say hello.")])],
    );
    request.stream = Some(true);
    request
}

fn large_sse(target_bytes: usize) -> String {
    let mut sse = String::from(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-6\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    ));
    let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"the quick brown fox \"}}\n\n";
    while sse.len() < target_bytes {
        sse.push_str(delta);
    }
    sse.push_str(concat!(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9000}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ));
    sse
}

struct Plain {
    client: HyperClient<HttpConnector, Full<Bytes>>,
    url: String,
    body: Bytes,
}

impl Plain {
    fn new(base_url: &str) -> Self {
        Plain {
            client: HyperClient::builder(TokioExecutor::new()).build(HttpConnector::new()),
            url: format!("{base_url}/v1/messages"),
            body: Bytes::from(serde_json::to_vec(&request()).expect("serializes")),
        }
    }

    async fn post(&self) -> usize {
        let request = http::Request::post(&self.url)
            .header("content-type", "application/json")
            .header("anthropic-version", "2023-06-01")
            .header("x-api-key", "bench-key")
            .body(Full::new(self.body.clone()))
            .expect("a valid request");
        let response = self.client.request(request).await.expect("a response");
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        body.len()
    }
}

fn client(base_url: &str) -> Client {
    let key = ApiKey::new("bench-key").expect("a valid key");
    Client::new(ClientConfig::new(base_url, Auth::ApiKey(key))).expect("a client")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn small_stream(c: &mut Criterion) {
    let rt = runtime();
    let server = rt
        .block_on(MockServer::start(
            Scenario::new([Step::text("Hello! How can I help you today?")]).repeating_last(),
        ))
        .expect("the mock starts");
    let ours = client(&server.base_url());
    let plain = Plain::new(&server.base_url());
    let mut group = c.benchmark_group("client_loopback_small_stream");
    group.throughput(Throughput::Elements(1));
    group.bench_function("ours", |b| {
        b.to_async(&rt).iter(|| async {
            let message = ours.message(request()).await.expect("a message");
            black_box(message.content.len())
        });
    });
    group.bench_function("baseline", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(plain.post().await) });
    });
    group.finish();
}

fn sse_per_mb(c: &mut Criterion) {
    let rt = runtime();
    let sse = large_sse(1 << 20);
    let bytes = sse.len() as u64;
    let server = rt
        .block_on(MockServer::start(
            Scenario::new([Step::replay_sse(sse)]).repeating_last(),
        ))
        .expect("the mock starts");
    let ours = client(&server.base_url());
    let plain = Plain::new(&server.base_url());
    let mut group = c.benchmark_group("client_sse_per_mb");
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("ours", |b| {
        b.to_async(&rt).iter(|| async {
            let mut stream = ours.stream(request()).await.expect("a stream");
            let mut events = 0usize;
            while let Some(event) = stream.next().await {
                black_box(event.expect("a valid stream"));
                events += 1;
            }
            events
        });
    });
    group.bench_function("baseline", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(plain.post().await) });
    });
    group.finish();
}

/// 500 turns of a user prompt, an assistant tool use and an 8 KB tool result: about 4 MB.
fn four_mb_request() -> MessagesRequest {
    use threadline_wire::content::{Content, ToolResultBlock, ToolUseBlock};
    let line = "    let path = \"src/lib.rs\"; // a \\ line of code\n";
    let file: String = (0..)
        .map(|i| format!("{i:>5} {line}"))
        .take_while({
            let mut len = 0;
            move |l: &String| {
                len += l.len();
                len <= 8 * 1024
            }
        })
        .collect();
    let mut messages = Vec::new();
    for turn in 0..500 {
        let id = format!("toolu_{turn:06}");
        messages.push(MessageParam::user(vec![ContentBlock::text(
            "Read it again.",
        )]));
        messages.push(MessageParam::assistant(vec![ContentBlock::ToolUse(
            ToolUseBlock::new(
                id.clone(),
                "Read",
                serde_json::json!({"file_path": "src/lib.rs"}),
            ),
        )]));
        messages.push(MessageParam::user(vec![ContentBlock::ToolResult(
            ToolResultBlock::new(id).with_content(Content::Text(file.clone())),
        )]));
    }
    MessagesRequest::new("claude-sonnet-4-5", 1024, messages).with_stream(true)
}

fn request_body(c: &mut Criterion) {
    let mut request = four_mb_request();
    let size = serde_json::to_vec(&request).expect("serializes").len();
    let mut group = c.benchmark_group("request_body_4mb");
    group.throughput(Throughput::Bytes(size as u64));
    // The previous request: every message but the last two.
    let mut previous = request.clone();
    previous.messages.truncate(previous.messages.len() - 2);
    let mut warm = threadline_client::BodyFragments::new();
    warm.body(&mut previous).expect("serializes");
    group.bench_function("ours", |b| {
        b.iter_batched(
            || warm.clone(),
            |mut warm| black_box(warm.body(&mut request).expect("serializes")),
            criterion::BatchSize::PerIteration,
        )
    });
    let bytes = serde_json::to_vec(&request).expect("serializes");
    group.bench_function("baseline", |b| {
        b.iter(|| black_box(black_box(&bytes).clone()))
    });
    group.finish();
}

/// The typed events of SSE bytes.
fn typed_events(sse: &[u8]) -> usize {
    let mut decoder = threadline_wire::sse::SseDecoder::new();
    decoder.push(sse);
    let mut n = 0;
    while let Ok(Some(event)) = decoder.next_event() {
        black_box(threadline_wire::StreamEvent::from_json(&event.data).expect("an event"));
        n += 1;
    }
    n
}

fn bedrock_decode(c: &mut Criterion) {
    let sse = large_sse(1 << 20);
    let frames = Bytes::from(threadline_mock::bedrock_event_stream(sse.as_bytes()));
    let mut group = c.benchmark_group("bedrock_event_stream_decode");
    group.throughput(Throughput::Bytes(sse.len() as u64));
    let expected = typed_events(sse.as_bytes());
    group.bench_function("ours", |b| {
        b.iter(|| {
            let body = threadline_client::provider::EventStreamToSse::new(
                Full::new(frames.clone()),
                threadline_wire::sse::DEFAULT_MAX_EVENT_SIZE,
            );
            let read = futures::executor::block_on(body.collect())
                .expect("valid frames")
                .to_bytes();
            let n = typed_events(&read);
            assert_eq!(n, expected);
            black_box(n)
        })
    });
    group.bench_function("baseline", |b| {
        b.iter(|| black_box(typed_events(black_box(sse.as_bytes()))))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = small_stream, sse_per_mb, request_body, bedrock_decode
}
criterion_main!(benches);
