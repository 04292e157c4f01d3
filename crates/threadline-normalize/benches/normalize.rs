//! Normalization cost, as ratios read by `cargo xtask bench`:
//!
//! * `normalize_batch_100k` — `ours`: `normalize` of a realistic 100,000-message session
//!   (`threadline_testkit::messages::long_session`); `baseline`: `Vec::clone` of the same
//!   internal array (normalization clones the input once, so this is its floor).
//! * `normalize_incremental_turn` — the cost of one turn with [`Normalizer`]: a realistic
//!   turn's messages are appended, then `update` runs (only `update` is timed). `ours` at a
//!   history of 100,000 messages, `baseline` at 1,000: per-turn cost must not grow with the
//!   history. Both are put back to their starting history (untimed: truncate the session,
//!   clone the normalizer saved at the start, one untimed turn) every `n / 10` turns — about
//!   `n` messages appended — so the history stays between `n` and `2n` messages in both.
//!   Restoring is rare on purpose: cloning and freeing a 100k-message state leaves the heap
//!   cold and scattered for the turns after it, a cost a live session never pays.
//! * `normalize_batch_scaling` — `normalize` at 100,000 messages (`ours`) vs 10,000
//!   (`baseline`): linear is a ratio of about 10.
//! * `clone_floor_scaling` — the same ratio for `Vec::clone` of the internal array, the floor
//!   of any normalizer that returns an owned request: how much of the batch scaling is the
//!   memory system's (a 10k-message session fits the caches, a 100k one does not), measured
//!   in the same run.
//! * `read_floor_scaling` — the same ratio for reading the type of every content block of
//!   the internal array (nothing copied, nothing allocated): what any batch normalizer does at
//!   least, since every block may need a repair. Its ratio is the memory system's alone.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use threadline_message::Message;
use threadline_normalize::{Normalizer, Options, normalize};
use threadline_testkit::messages::{
    SessionBuilder, TurnPlan, build_turn, long_session, seeded_turn,
};

fn session(n: usize) -> Vec<Message> {
    long_session(n, 42)
}

fn batch_100k(c: &mut Criterion) {
    let session = session(100_000);
    let mut g = c.benchmark_group("normalize_batch_100k");
    g.sample_size(10);
    g.bench_function("ours", |b| {
        b.iter(|| {
            normalize(black_box(&session), &Options::default())
                .messages
                .len()
        })
    });
    g.bench_function("baseline", |b| b.iter(|| black_box(&session).clone().len()));
    g.finish();
}

fn batch_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("normalize_batch_scaling");
    g.sample_size(10);
    for (name, n) in [("ours", 100_000), ("baseline", 10_000)] {
        let session = session(n);
        g.bench_function(name, |b| {
            b.iter(|| {
                normalize(black_box(&session), &Options::default())
                    .messages
                    .len()
            })
        });
    }
    g.finish();
}

fn clone_floor_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("clone_floor_scaling");
    g.sample_size(10);
    for (name, n) in [("ours", 100_000), ("baseline", 10_000)] {
        let session = session(n);
        g.bench_function(name, |b| b.iter(|| black_box(&session).clone().len()));
    }
    g.finish();
}

fn read_floor_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("read_floor_scaling");
    g.sample_size(20);
    for (name, n) in [("ours", 100_000), ("baseline", 10_000)] {
        let session = session(n);
        g.bench_function(name, |b| b.iter(|| block_tag_lengths(black_box(&session))));
    }
    g.finish();
}

/// The sum of the lengths of every content block's type: one read of every block.
fn block_tag_lengths(session: &[Message]) -> usize {
    session
        .iter()
        .map(|message| match message {
            Message::User(user) => user.content.iter().map(|b| b.tag().len()).sum(),
            Message::Assistant(assistant) => assistant.content.iter().map(|b| b.tag().len()).sum(),
            _ => 0,
        })
        .sum()
}

fn incremental_turn(c: &mut Criterion) {
    let turns: Vec<TurnPlan> = (0..64).filter_map(|k| seeded_turn(7_000 + k)).collect();
    let mut g = c.benchmark_group("normalize_incremental_turn");
    g.sample_size(10);
    // The baseline first, in a heap no larger history has left scattered.
    for (name, n) in [("baseline", 1_000), ("ours", 100_000)] {
        let base = session(n);
        let mut base_normalizer = Normalizer::new(Options::default());
        base_normalizer.update(&base);
        let mut builder = SessionBuilder::continuing(base);
        let mut normalizer = base_normalizer.clone();
        // About n messages appended between two restorations: the history stays in [n, 2n].
        let restore_every = n / 10;
        let mut turn = 0usize;
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    if turn % restore_every == restore_every - 1 {
                        builder.messages_mut().truncate(n);
                        normalizer.clone_from(&base_normalizer);
                        // One untimed turn: a clone has no spare capacity, and the first
                        // growth of the cached request would reallocate it whole — a cost a
                        // live session pays once per doubling, not once per restoration.
                        build_turn(&mut builder, &turns[turn % turns.len()]);
                        normalizer.update(builder.messages());
                    }
                    build_turn(&mut builder, &turns[turn % turns.len()]);
                    turn += 1;
                    let start = Instant::now();
                    black_box(normalizer.update(builder.messages()).len());
                    timed += start.elapsed();
                }
                timed
            })
        });
    }
    g.finish();
}

// The incremental group first: the batch groups leave a large, scattered heap behind.
criterion_group!(
    benches,
    incremental_turn,
    batch_100k,
    batch_scaling,
    clone_floor_scaling,
    read_floor_scaling
);
criterion_main!(benches);
