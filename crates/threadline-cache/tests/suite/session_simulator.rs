//! `SessionSimulator` gives exactly what the default `Planner` followed by `Simulator::step`
//! give, request by request, for the requests a session implies (each normalized, with what
//! the incremental normalizer says is unchanged): valid and hostile sessions, long generated
//! ones with wide turns and idle gaps, models that keep or strip earlier thinking, with and
//! without an unseen prefix (marked or not, partly warm), scaled counts, planner resets.

use crate::sessions;

use proptest::prelude::*;
use threadline_cache::{Calibration, Planner, SimConfig, UnseenPrefix};
use threadline_message::Message;
use threadline_normalize::ImpliedRequests;
use threadline_testkit::messages::{any_session, long_session};
use threadline_wire::MessagesRequest;
use threadline_wire::model::ModelTable;

/// Models with different minimums, and one (unknown) that strips earlier thinking.
const MODELS: &[&str] = &["claude-sonnet-4-6", "claude-haiku-4-5", "claude-unknown-9"];

fn calibrations() -> Vec<Calibration> {
    let unseen = |tokens, warm_tokens, marked| UnseenPrefix {
        tokens,
        warm_tokens,
        marked,
        ..UnseenPrefix::default()
    };
    [
        (UnseenPrefix::default(), 0, 1.0),
        (unseen(6_000, 4_000, true), 3, 1.0),
        (unseen(6_000, 0, true), 0, 0.7),
        (unseen(2_500, 1_000, false), 9, 1.3),
    ]
    .into_iter()
    .map(|(unseen, tail_tokens, scale)| Calibration {
        config: SimConfig {
            unseen,
            tail_tokens,
        },
        scale,
    })
    .collect()
}

/// Replays `messages` both ways and compares every step; `gaps[i]` is the time before
/// request `i` (cycled), `resets` the requests before which the planner forgets.
fn assert_same(
    messages: &[Message],
    model_id: &str,
    calibration: &Calibration,
    gaps: &[u64],
    resets: &[usize],
) {
    let model = ModelTable::builtin().resolve(model_id).model();
    let mut planner = Planner::default();
    let mut reference = calibration.simulator(model);
    let mut session = calibration.session_simulator(model, model_id);
    let mut walk = ImpliedRequests::new(messages);
    let mut at = 0u64;
    let mut index = 0usize;
    while let Some(view) = walk.next_request() {
        at += gaps[index % gaps.len()];
        if resets.contains(&index) || view.after_compaction {
            planner.reset();
            session.reset_planner();
        }
        let mut request = MessagesRequest::new(model_id, 1024, view.messages.to_vec());
        planner.plan(&mut request);
        let expected = reference.step(at, &request);
        let got = session.step(at, view.messages, view.unchanged);
        assert_eq!(
            got, expected,
            "request {index} of {model_id} with {calibration:?}"
        );
        index += 1;
    }
}

#[test]
fn long_generated_sessions_are_simulated_alike() {
    let gaps = [
        2_000, 40_000, 5_000, 400_000, 1_000, 3_000_000, 7_000, 90_000,
    ];
    for seed in 0..2u64 {
        let messages = sessions::generated_messages(150, seed, 3);
        for model in MODELS {
            for calibration in calibrations() {
                assert_same(&messages, model, &calibration, &gaps, &[17, 60]);
            }
        }
    }
    let messages = long_session(200, 7);
    for model in MODELS {
        assert_same(&messages, model, &calibrations()[1], &gaps, &[]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn any_session_is_simulated_alike(
        parts in prop::collection::vec(any_session(), 1..5),
        model in 0..MODELS.len(),
        calibration in 0..4usize,
        gaps in prop::collection::vec(prop_oneof![0..5_000u64, 200_000..4_000_000u64], 1..6),
        resets in prop::collection::vec(0..30usize, 0..3),
    ) {
        // Several sessions one after the other: replays, rewinds and restarts inside one walk.
        let messages: Vec<Message> = parts.into_iter().flatten().collect();
        assert_same(&messages, MODELS[model], &calibrations()[calibration], &gaps, &resets);
    }
}

/// A local command that re-renders the tools or the dynamic system prompt (`/mcp`
/// reconnecting a server) leaves only the warm cross-session part of the unseen prefix
/// readable, and the break names it; a switch of model reads nothing.
#[test]
fn a_reloaded_prefix_reads_only_the_shared_part_and_a_new_model_nothing() {
    use threadline_cache::BreakCause;
    use threadline_cache::prefix::Location;
    use threadline_wire::{ContentBlock, MessageParam};

    let model_id = "claude-sonnet-4-6";
    let model = ModelTable::builtin().resolve(model_id).model();
    let calibration = Calibration {
        config: SimConfig {
            unseen: UnseenPrefix {
                tokens: 20_000,
                warm_tokens: 15_000,
                marked: true,
                ..UnseenPrefix::default()
            },
            tail_tokens: 0,
        },
        scale: 1.0,
    };
    let mut session = calibration.session_simulator(model, model_id);
    let mut messages =
        threadline_wire::Messages::from(vec![MessageParam::user(vec![ContentBlock::text(
            "Read me. ".repeat(2_000),
        )])]);
    let step = |session: &mut threadline_cache::SessionSimulator<'_>,
                messages: &mut threadline_wire::Messages,
                at: u64| {
        let unchanged = messages.len().saturating_sub(1);
        let step = session.step(at, messages, unchanged);
        messages.push(MessageParam::assistant(vec![ContentBlock::text("Done.")]));
        messages.push(MessageParam::user(vec![ContentBlock::text("Again.")]));
        step
    };
    step(&mut session, &mut messages, 0);
    let warm = step(&mut session, &mut messages, 10_000);
    assert!(warm.usage.cache_read_input_tokens > 20_000, "{warm:?}");
    assert_eq!(warm.cache_break, None);

    session.reload_dynamic_prefix("/mcp: Reconnected to tidewave.");
    let reloaded = step(&mut session, &mut messages, 20_000);
    assert_eq!(
        reloaded.usage.cache_read_input_tokens, 15_000,
        "{reloaded:?}"
    );
    let found = reloaded.cache_break.expect("a break");
    assert_eq!(
        found.cause,
        BreakCause::PrefixReloaded {
            by: "/mcp: Reconnected to tidewave.".into()
        }
    );
    assert_eq!(found.location, Some(Location::Unseen { index: 1 }));
    // What the reloaded request wrote is read by the next one.
    let after = step(&mut session, &mut messages, 30_000);
    assert!(after.usage.cache_read_input_tokens > 20_000, "{after:?}");
    assert_eq!(after.cache_break, None);

    let other = ModelTable::builtin().resolve("claude-opus-4-6").model();
    session.switch_model(other, "claude-opus-4-6");
    let switched = step(&mut session, &mut messages, 40_000);
    assert_eq!(switched.usage.cache_read_input_tokens, 0, "{switched:?}");
    assert_eq!(
        switched.cache_break.map(|b| b.cause),
        Some(BreakCause::ModelChanged)
    );
}
