//! The cost of the key-shape redactor on transcript lines, against serializing the same
//! message (what the writer does to every line anyway).
//!
//! Group `redact_transcript_line`: `clean` scans a 64 KiB JSON line with no key, `one_key`
//! one with a key in the middle (the rebuild path), `serialize` is `serde_json::to_vec` of the
//! value the line came from. The scan must stay a small fraction of the serialization.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use threadline_wire::secret::redact_key_shapes_in_bytes;

fn bench(c: &mut Criterion) {
    let text: String =
        "let x = sk-ant; // a line of code, with a near miss: sk-ant-abc\n".repeat(1024);
    let value = json!({"type": "user", "id": "u1", "content": [{"type": "text", "text": text}]});
    let clean = serde_json::to_vec(&value).expect("serializes");
    let mut keyed = clean.clone();
    let middle = keyed.len() / 2;
    keyed.splice(
        middle..middle,
        b"sk-ant-api03-0123456789abcdef".iter().copied(),
    );

    let mut group = c.benchmark_group("redact_transcript_line");
    group.throughput(Throughput::Bytes(clean.len() as u64));
    group.bench_function("clean", |b| {
        b.iter(|| redact_key_shapes_in_bytes(black_box(&clean)).len())
    });
    group.bench_function("one_key", |b| {
        b.iter(|| redact_key_shapes_in_bytes(black_box(&keyed)).len())
    });
    group.bench_function("serialize", |b| {
        b.iter(|| serde_json::to_vec(black_box(&value)).map(|v| v.len()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
