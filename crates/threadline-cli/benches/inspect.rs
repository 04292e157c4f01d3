//! `threadline inspect`'s analysis (read the transcript, every implied request planned and
//! simulated, the report rendered) at 100k records vs at 10k records of the same shape: a
//! linear analysis takes about ten times as long (`inspect_100k_vs_10k`, target ≤ 12; the
//! quadratic one did not finish 100k records in 90 s).
//!
//! The records are the tiny ones of a chat: a user line, then the assistant's answer with its
//! request id, model and recorded usage, a second apart.
#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use threadline_cli::{inspect, session};

/// A threadline transcript of `records` records (half prompts, half answers).
fn transcript(records: usize) -> String {
    let mut out = String::new();
    let start = 1_767_225_600u64; // 2026-01-01T00:00:00Z
    for i in 0..records / 2 {
        let at = |s: u64| {
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + Duration::from_secs(start + s),
            )
        };
        let _ = writeln!(
            out,
            r#"{{"type":"user","id":"u{i}","timestamp":"{}","content":[{{"type":"text","text":"Question {i}: what next?"}}]}}"#,
            at(2 * i as u64)
        );
        let _ = writeln!(
            out,
            r#"{{"type":"assistant","id":"a{i}","timestamp":"{}","api_message_id":"msg_{i:08}","request_id":"req_{i:08}","model":"claude-sonnet-4-6","content":[{{"type":"text","text":"Answer {i}: carry on."}}],"usage":{{"input_tokens":3,"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"output_tokens":12}}}}"#,
            at(2 * i as u64 + 1),
            20 + i % 7,
            4_000 + 20 * i
        );
    }
    out
}

/// The whole analysis of one transcript, as `threadline inspect` runs it.
fn analyse(text: &str) -> usize {
    let session = session::read_session(text);
    let report = inspect::report(&session, None);
    inspect::render_text(&report).len()
}

fn inspect_scaling(c: &mut Criterion) {
    let small = transcript(10_000);
    let large = transcript(100_000);
    let mut group = c.benchmark_group("inspect_scaling");
    group.sample_size(10);
    group.bench_function("records_100k", |b| b.iter(|| analyse(black_box(&large))));
    group.bench_function("records_10k", |b| b.iter(|| analyse(black_box(&small))));
    group.finish();
}

criterion_group!(benches, inspect_scaling);
criterion_main!(benches);
