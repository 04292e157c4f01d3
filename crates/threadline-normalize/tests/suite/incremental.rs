//! Incremental normalization equals batch normalization (one of the normalizer's
//! properties, ARCHITECTURE.md `threadline-normalize`):
//! sessions from `threadline_testkit::messages` — valid and hostile — grown step by step (a
//! few messages at a time, one at a time, turn by turn), with media limits small enough that
//! the cap reaches back across the boundary, and edited mid-way (truncated, a message removed
//! or inserted: a full recompute).

use proptest::prelude::*;
use proptest::sample::Index;
use threadline_message::Message;
use threadline_normalize::{
    FullReason, ImpliedRequests, IncrementalUpdate, Normalizer, Options, implied_requests,
    normalize,
};
use threadline_testkit::messages::{
    SessionBuilder, any_session, build_turn, long_session, seeded_turn,
};

fn options() -> impl Strategy<Value = Options> {
    prop_oneof![
        3 => Just(Options::default()),
        1 => (0usize..4).prop_map(|limit| Options::default().with_media_limit(limit)),
        1 => Just(Options::default().with_resume_paused_turn(true)),
    ]
}

/// Updates `normalizer` with `messages` and checks the result against `normalize`.
fn step(normalizer: &mut Normalizer, messages: &[Message]) -> Result<(), TestCaseError> {
    let expected = normalize(messages, normalizer.options()).messages;
    let got = normalizer.update(messages).to_vec();
    prop_assert!(
        got == expected,
        "incremental != batch after {} messages ({:?})\nincremental: {}\nbatch:       {}",
        messages.len(),
        normalizer.last_update(),
        serde_json::to_string(&got).unwrap_or_default(),
        serde_json::to_string(&expected).unwrap_or_default()
    );
    Ok(())
}

/// The cut points: sorted, distinct, ending at `len`.
fn cuts(indices: &[Index], len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = indices.iter().map(|i| i.index(len + 1)).collect();
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// An edit that does not only append.
#[derive(Debug, Clone)]
enum Edit {
    Truncate(Index),
    Remove(Index),
    Insert(Index, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<Index>().prop_map(Edit::Truncate),
        any::<Index>().prop_map(Edit::Remove),
        (any::<Index>(), "[a-z ]{1,12}").prop_map(|(i, t)| Edit::Insert(i, t)),
    ]
}

impl Edit {
    /// Applies the edit to `messages`; returns whether the array changed other than by
    /// appending.
    fn apply(&self, messages: &mut Vec<Message>) -> bool {
        match self {
            Edit::Truncate(i) => {
                let len = i.index(messages.len() + 1);
                let shrank = len < messages.len();
                messages.truncate(len);
                shrank
            }
            Edit::Remove(i) => {
                if messages.is_empty() {
                    return false;
                }
                messages.remove(i.index(messages.len()));
                true
            }
            Edit::Insert(i, text) => {
                let at = i.index(messages.len() + 1);
                let mut builder = SessionBuilder::continuing(messages.clone());
                let header = builder.header();
                messages.insert(at, Message::user_text(text.clone()).with_header(header));
                at < messages.len() - 1
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    /// Grown a few messages at a time.
    #[test]
    fn growing_by_steps_equals_batch(
        session in any_session(),
        points in prop::collection::vec(any::<Index>(), 0..12),
        options in options(),
    ) {
        let mut normalizer = Normalizer::new(options);
        for cut in cuts(&points, session.len()) {
            step(&mut normalizer, &session[..cut])?;
        }
    }

    /// The walk over the requests a transcript implies: a clone of a new walk gives the same
    /// requests as the walk itself (`inspect` calibrates on a clone, then walks the original),
    /// and there are never more than `max_requests` (the room `inspect` reserves).
    #[test]
    fn implied_walk_clones_agree_and_stay_within_max_requests(session in any_session()) {
        let requests = implied_requests(&session);
        let mut walk = ImpliedRequests::new(&session);
        prop_assert!(requests.len() <= walk.max_requests(), "{} > {}", requests.len(), walk.max_requests());
        let mut clone = walk.clone();
        for expected in &requests {
            let from_clone = clone.next_request().map(|v| (v.key, v.messages.to_vec(), v.unchanged, v.recorded));
            let from_walk = walk.next_request().map(|v| (v.key, v.messages.to_vec(), v.unchanged, v.recorded));
            prop_assert_eq!(&from_clone, &from_walk);
            let (key, messages, _, recorded) = from_walk.expect("as many requests");
            prop_assert_eq!(&key, &expected.key);
            prop_assert_eq!(&messages, &expected.messages.to_vec());
            prop_assert_eq!(&recorded, &expected.recorded);
        }
        prop_assert!(walk.next_request().is_none() && clone.next_request().is_none());
    }

    /// Grown one message at a time (a streaming UI normalizing after every fragment).
    #[test]
    fn growing_one_message_at_a_time_equals_batch(session in any_session(), options in options()) {
        let mut normalizer = Normalizer::new(options);
        for cut in 0..=session.len() {
            step(&mut normalizer, &session[..cut])?;
        }
    }

    /// Grown, edited other than by appending (a full recompute), grown again.
    #[test]
    fn edits_recompute_and_equal_batch(
        session in any_session(),
        before in prop::collection::vec(any::<Index>(), 0..6),
        edit in edit(),
        after in prop::collection::vec(any::<Index>(), 0..6),
        options in options(),
    ) {
        let mut normalizer = Normalizer::new(options);
        let cuts_before = cuts(&before, session.len());
        let Some(&edited_at) = cuts_before.get(cuts_before.len() / 2) else {
            return Ok(());
        };
        for &cut in cuts_before.iter().filter(|&&c| c <= edited_at) {
            step(&mut normalizer, &session[..cut])?;
        }
        let mut edited = session[..edited_at].to_vec();
        let changed = edit.apply(&mut edited);
        step(&mut normalizer, &edited)?;
        if changed {
            prop_assert_eq!(
                normalizer.last_update(),
                &IncrementalUpdate::Full { reason: FullReason::NotAppended }
            );
        }
        let rest = &session[edited_at..];
        for cut in cuts(&after, rest.len()) {
            let mut grown = edited.clone();
            grown.extend_from_slice(&rest[..cut]);
            step(&mut normalizer, &grown)?;
        }
    }
}

/// Grown turn by turn from realistic turns, the normalizer takes the tail path and normalizes
/// a bounded tail, whatever the history length — the per-turn cost does not grow with it.
#[test]
fn turn_by_turn_the_tail_stays_short() {
    let mut builder = SessionBuilder::continuing(long_session(3_000, 11));
    let mut normalizer = Normalizer::new(Options::default());
    normalizer.update(builder.messages());
    let mut longest = 0;
    let mut full = Vec::new();
    for turn in 0..300 {
        let Some(plan) = seeded_turn(1_000 + turn) else {
            continue;
        };
        build_turn(&mut builder, &plan);
        let messages = builder.messages();
        let got = normalizer.update(messages).to_vec();
        if turn % 25 == 0 {
            assert_eq!(
                got,
                normalize(messages, &Options::default()).messages,
                "turn {turn}"
            );
        }
        match normalizer.last_update() {
            IncrementalUpdate::Tail { messages, .. } => longest = longest.max(*messages),
            other => full.push((turn, other.clone())),
        }
    }
    assert!(full.is_empty(), "full normalizations: {full:?}");
    assert!(longest <= 120, "a tail of {longest} messages");
    assert_eq!(
        normalizer.messages(),
        normalize(builder.messages(), &Options::default())
            .messages
            .as_slice()
    );
}

/// An edit in place that keeps every id is not detected; `reset` makes the next update whole.
#[test]
fn reset_after_an_edit_in_place() {
    let mut session = long_session(200, 3);
    let mut normalizer = Normalizer::new(Options::default());
    normalizer.update(&session);
    let position = session
        .iter()
        .position(|m| matches!(m, Message::User(u) if !u.content.is_empty()))
        .expect("a user message");
    let Message::User(user) = &mut session[position] else {
        unreachable!("found above")
    };
    user.content = vec![threadline_wire::ContentBlock::text("edited in place")];
    normalizer.reset();
    assert_eq!(
        normalizer.update(&session),
        normalize(&session, &Options::default()).messages.as_slice()
    );
    assert_eq!(
        normalizer.last_update(),
        &IncrementalUpdate::Full {
            reason: FullReason::First
        }
    );
}

/// A session with server-side `compaction` blocks (each its own assistant fragment, `content`
/// a summary or `null`, with or without `encrypted_content`) inserted at random places; the
/// last inserted block's JSON.
fn with_compactions() -> impl Strategy<Value = (Vec<Message>, Option<String>)> {
    (
        any_session(),
        prop::collection::vec(
            (
                any::<Index>(),
                prop::option::of("[a-z ]{0,12}"),
                any::<bool>(),
            ),
            0..4,
        ),
    )
        .prop_map(|(mut session, inserts)| {
            let mut placed: Vec<(usize, String)> = Vec::new();
            for (n, (at, summary, encrypted)) in inserts.into_iter().enumerate() {
                let mut value = serde_json::json!({"type": "compaction", "content": summary});
                if encrypted {
                    value["encrypted_content"] = format!("E{n}==").into();
                }
                let block: threadline_wire::ContentBlock =
                    serde_json::from_value(value).expect("a compaction block");
                let json = serde_json::to_string(&block).expect("serializes");
                let at = at.index(session.len() + 1);
                for p in &mut placed {
                    if p.0 >= at {
                        p.0 += 1;
                    }
                }
                placed.push((at, json));
                session.insert(
                    at,
                    Message::assistant_fragment(format!("msg_compact_{n}"), "m", vec![block]),
                );
            }
            let last = placed.into_iter().max_by_key(|p| p.0).map(|p| p.1);
            (session, last)
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    /// With `from_last_compaction`, nothing precedes the last `compaction` block: it is the
    /// first block of the first message, byte-identical to the block received; and the
    /// incremental normalizer, grown one message at a time, equals the batch one.
    #[test]
    fn nothing_goes_before_the_last_compaction_block(
        (session, last) in with_compactions(),
    ) {
        let options = Options::default().with_from_last_compaction(true);
        let messages = normalize(&session, &options).messages;
        let positions: Vec<(usize, usize)> = messages
            .iter()
            .enumerate()
            .flat_map(|(i, m)| {
                m.content
                    .to_blocks()
                    .into_iter()
                    .enumerate()
                    .filter(|(_, b)| matches!(b, threadline_wire::ContentBlock::Compaction(_)))
                    .map(move |(j, _)| (i, j))
                    .collect::<Vec<_>>()
            })
            .collect();
        match &last {
            Some(json) => {
                prop_assert_eq!(positions, vec![(0, 0)]);
                let first = messages[0].content.to_blocks().remove(0);
                prop_assert_eq!(&serde_json::to_string(&first).expect("serializes"), json);
                prop_assert!(messages[0].role == threadline_wire::Role::Assistant);
            }
            None => prop_assert!(positions.is_empty()),
        }
        let mut normalizer = Normalizer::new(options);
        for cut in 0..=session.len() {
            step(&mut normalizer, &session[..cut])?;
        }
    }
}
