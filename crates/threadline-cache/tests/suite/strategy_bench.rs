//! The benchmark's target, guarded in CI: on long generated sessions (wide turns adding more
//! than 20 blocks, idle gaps longer than five minutes) the default strategy's hit ratio
//! (cache-read tokens ÷ all input tokens) is within 2% of the best the simulator allows for the
//! same sessions (`threadline_cache::oracle`: every prefix written, unlimited lookback, same
//! 5m lifetime and minimum). `cargo xtask bench` reports the same ratios on larger sessions
//! (`examples/strategy_bench.rs`).

use crate::sessions;

use threadline_cache::{Planner, Seed, Ttl, hit_ratio};
use threadline_wire::model::ModelTable;

#[test]
fn the_default_strategy_is_within_two_percent_of_the_best() {
    let model = ModelTable::builtin().resolve(sessions::MODEL).model();
    let (mut default, mut seed, mut best) = (Vec::new(), Vec::new(), Vec::new());
    let mut wide = 0;
    for s in [1u64, 2] {
        let (session, static_index) = sessions::generated_session(400, s, 8);
        // The sessions hold what the benchmark is about: wide turns and idle gaps.
        wide += session
            .windows(2)
            .filter(|w| {
                let blocks = |r: &threadline_wire::MessagesRequest| {
                    threadline_cache::Prefix::of(r, &threadline_cache::Estimate, Default::default())
                        .pieces
                        .len()
                };
                blocks(&w[1].1) > blocks(&w[0].1) + 20
            })
            .count();
        assert!(
            session.windows(2).any(|w| w[1].0 - w[0].0 > 5 * 60_000),
            "an idle gap"
        );
        default.extend(sessions::evaluate(
            &mut Planner::default().with_static_system(static_index),
            &session,
            model,
        ));
        seed.extend(sessions::evaluate(
            &mut Planner::new(Seed).with_static_system(static_index),
            &session,
            model,
        ));
        best.extend(sessions::best(&session, model, Ttl::FiveMinutes));
    }
    assert!(wide >= 2, "only {wide} wide turns");
    let best = hit_ratio(&best);
    let (default, seed) = (hit_ratio(&default) / best, hit_ratio(&seed) / best);
    println!("default / best = {default:.4}, seed / best = {seed:.4}");
    assert!(default >= 0.98, "default / best = {default:.4}");
    assert!(
        default <= 1.0 + 1e-9,
        "the best is an upper bound: {default}"
    );
    assert!(
        seed < default,
        "wide turns cost the one-marker seed layout: {seed} vs {default}"
    );
}
