//! Compaction cost, as ratios read by `cargo xtask bench`:
//!
//! * `compact_estimate_throughput` — `ours`: [`estimate_request`] of the request a realistic
//!   20,000-message session normalizes to; `baseline`: `serde_json::to_vec` of the same
//!   request (the cheapest exact way to measure its size). Throughput is reported in bytes
//!   of serialized request per second, so criterion prints MB/s for both.
//! * `compact_autocompact_plan_100k` — `ours`: everything autocompact does before it calls
//!   the summarizer, on a 100,000-message session (its compaction boundaries removed, so
//!   every message is visible): the anchored context estimate, the
//!   verbatim tail plan (safe cut points over the whole array) and the scan for files to
//!   re-attach; `baseline`: `normalize` of the same session (what every request costs anyway).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use threadline_compact::estimate::{estimate_context, estimate_request};
use threadline_compact::reattach::recently_read;
use threadline_compact::tail::{TailOptions, plan_tail};
use threadline_compact::units::{is_compact_boundary, since_last_boundary};
use threadline_normalize::{Options, normalize};
use threadline_testkit::messages::long_session;
use threadline_wire::MessagesRequest;

fn estimate_throughput(c: &mut Criterion) {
    let session = long_session(20_000, 42);
    let request = MessagesRequest::new(
        "claude-sonnet-4-5",
        8192,
        normalize(&session, &Options::default()).messages,
    );
    let bytes = serde_json::to_vec(&request).map_or(0, |v| v.len());
    let mut g = c.benchmark_group("compact_estimate_throughput");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(20);
    g.bench_function("ours", |b| b.iter(|| estimate_request(black_box(&request))));
    g.bench_function("baseline", |b| {
        b.iter(|| serde_json::to_vec(black_box(&request)).map_or(0, |v| v.len()))
    });
    g.finish();
}

fn plan_100k(c: &mut Criterion) {
    // Without compaction boundaries: all 100,000 messages are visible and planned over.
    let mut session = long_session(100_000, 42);
    session.retain(|m| !is_compact_boundary(m));
    let options = TailOptions::default();
    let mut g = c.benchmark_group("compact_autocompact_plan_100k");
    g.sample_size(10);
    g.bench_function("ours", |b| {
        b.iter(|| {
            let history = black_box(&session);
            let tokens = estimate_context(history, 0);
            let visible = since_last_boundary(history);
            let plan = plan_tail(visible, &options);
            let files = recently_read(&visible[..plan.start]);
            (tokens, plan.start, files.len())
        })
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            normalize(black_box(&session), &Options::default())
                .messages
                .len()
        })
    });
    g.finish();
}

criterion_group!(benches, estimate_throughput, plan_100k);
criterion_main!(benches);
