//! SSE decode + accumulate of recorded streams, against `eventsource-stream` +
//! `serde_json::Value` per event on the same bytes in the same chunking.
//!
//! Groups (read by `cargo xtask bench`): `sse_decode_accumulate_small` (a stream of many
//! small deltas) and `sse_decode_accumulate_largest` (the largest recorded stream); in each,
//! `ours` decodes, parses typed events and accumulates the final message, `baseline` decodes
//! with `eventsource-stream` and parses each event's data into a `serde_json::Value`.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use threadline_testkit::fixtures;
use threadline_wire::message_stream::MessageStreamReader;

/// A typical TCP segment's payload: how the bytes arrive from the network.
const CHUNK: usize = 1400;

fn chunks(sse: &str) -> Vec<Bytes> {
    sse.as_bytes()
        .chunks(CHUNK)
        .map(Bytes::copy_from_slice)
        .collect()
}

fn ours(chunks: &[Bytes]) -> usize {
    let mut reader = MessageStreamReader::new();
    for chunk in chunks {
        reader
            .push(chunk, |_, _| {})
            .expect("recorded streams are valid");
    }
    let message = reader.finish().expect("recorded streams are complete");
    message.content.len()
}

fn baseline(chunks: &[Bytes]) -> usize {
    let stream = futures::stream::iter(chunks.iter().cloned().map(Ok::<_, std::io::Error>));
    futures::executor::block_on(async {
        let mut events = stream.eventsource();
        let mut parsed = 0;
        while let Some(event) = events.next().await {
            let event = event.expect("recorded streams are valid");
            let value: serde_json::Value =
                serde_json::from_str(&event.data).expect("recorded events are JSON");
            black_box(&value);
            parsed += 1;
        }
        parsed
    })
}

fn bench_stream(c: &mut Criterion, group: &str, sse: &str) {
    let chunks = chunks(sse);
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Bytes(sse.len() as u64));
    g.bench_function("ours", |b| b.iter(|| ours(black_box(&chunks))));
    g.bench_function("baseline", |b| b.iter(|| baseline(black_box(&chunks))));
    g.finish();
}

fn sse_benches(c: &mut Criterion) {
    let streams = fixtures::sse_streams();
    // Small events: the streamed-thinking recording, hundreds of short deltas.
    let small = &streams
        .iter()
        .find(|(name, _)| {
            name == "pydantic__pydantic-ai/test_anthropic_model_thinking_part_stream#0"
        })
        .expect("the thinking stream is recorded")
        .1;
    let largest = &streams
        .iter()
        .max_by_key(|(_, sse)| sse.len())
        .expect("streams are recorded")
        .1;
    bench_stream(c, "sse_decode_accumulate_small", small);
    bench_stream(c, "sse_decode_accumulate_largest", largest);
}

criterion_group!(benches, sse_benches);
criterion_main!(benches);
