//! Whole-pipeline tests on hand-made hostile arrays: each output must pass the validator, be
//! idempotent and deterministic, and keep every typed user text (see `testing::check`).

use proptest::prelude::*;
use serde_json::json;
use threadline_message::{Attachment, Header, Message, MessageId, SystemKind, tool_result_block};
use threadline_wire::content::TextBlock;
use threadline_wire::{CacheControl, CacheTtl, Content, ContentBlock, MessageParam, Role};

use crate::testing::*;
use crate::{EMPTY_PLACEHOLDER, Options, RepairKind, normalize, normalize_strict, to_internal};

fn kinds(out: &crate::Normalized) -> Vec<String> {
    out.report
        .repairs
        .iter()
        .map(|r| r.kind.to_string())
        .collect()
}

#[test]
fn a_well_formed_session_passes_strict_mode_unchanged() {
    let session = [
        user("q"),
        reminder("ctx"),
        frag("msg_1", vec![thinking("plan")]),
        frag("msg_1", vec![text("reading"), tool_use("t1")]),
        Message::progress("t1", json!({"bytes": 10})),
        results(&["t1"]),
        frag("msg_2", vec![text("done")]),
        Message::system(SystemKind::TurnDuration { duration_ms: 5 }),
    ];
    let strict = normalize_strict(&session, &Options::default()).expect("nothing to repair");
    let out = check(&session);
    assert_eq!(strict, out.messages);
    assert_eq!(
        shape(&out.messages),
        "U: text(<system-reminder>\nctx\n</system-reminder>) text(q) | \
         A: thinking text(reading) use(t1) | U: result(t1) | A: text(done)"
    );
}

#[test]
fn lost_tool_results() {
    let out = check(&[
        user("q"),
        asst(vec![tool_use("t1"), tool_use("t2")]),
        user_blocks(vec![result("t2", "b")]),
        asst(vec![tool_use("t3")]),
        user("never mind"),
        asst_text("ok"),
        user("next"),
    ]);
    assert_eq!(
        kinds(&out),
        ["synthetic tool result (t1)", "synthetic tool result (t3)"]
    );
    assert_eq!(out.report.repairs[0].message_index, Some(1));
    let error = normalize_strict(
        &[user("q"), asst(vec![tool_use("t1")])],
        &Options::default(),
    )
    .expect_err("a repair was needed");
    assert_eq!(error.repairs().len(), 1);
    assert!(
        error.to_string().contains("1 synthetic tool result"),
        "{error}"
    );
}

#[test]
fn lost_tool_uses() {
    let out = check(&[
        user("q"),
        asst_text("thinking about it"),
        user_blocks(vec![result("t1", "orphan"), text("typed with it")]),
        asst_text("a"),
        results(&["t2"]),
    ]);
    assert_eq!(
        kinds(&out),
        [
            "orphan tool result removed (t1)",
            "orphan tool result removed (t2)",
            "placeholder inserted"
        ]
    );
    assert_eq!(
        shape(&out.messages),
        format!(
            "U: text(q) | A: text(thinking about it) | U: text(typed with it) | A: text(a) | \
             U: text({EMPTY_PLACEHOLDER})"
        )
    );
}

#[test]
fn a_session_replayed_by_a_resume() {
    let once = [
        with_id(user("q"), "u1"),
        with_id(frag("msg_1", vec![tool_use("t1")]), "a1"),
        with_id(results(&["t1"]), "r1"),
        with_id(frag("msg_2", vec![text("done")]), "a2"),
    ];
    let mut twice = once.to_vec();
    twice.extend(once.iter().cloned());
    twice.push(user("continue"));
    let out = check(&twice);
    assert_eq!(
        shape(&out.messages),
        "U: text(q) | A: use(t1) | U: result(t1) | A: text(done) | U: text(continue)"
    );
    assert_eq!(
        out.report
            .count(|k| *k == RepairKind::DuplicateMessageRemoved),
        4
    );

    // Replayed with fresh message ids (a copy, not the same messages): the user text stays,
    // the replayed tool use and its result go.
    let mut copied = once.to_vec();
    copied.extend(once.iter().cloned().map(|m| m.with_header(Header::new())));
    let out = check(&copied);
    assert_eq!(
        shape(&out.messages),
        "U: text(q) | A: use(t1) | U: result(t1) | A: text(done) | U: text(q) | A: text(done)"
    );
}

#[test]
fn interleaved_fragments_and_tool_results() {
    let out = check(&[
        user("q"),
        frag("msg_1", vec![thinking("plan")]),
        frag("msg_1", vec![tool_use("t1")]),
        results(&["t1"]),
        frag("msg_1", vec![tool_use("t2")]),
        Message::progress("t2", json!({})),
        results(&["t2"]),
        frag("msg_2", vec![text("both done")]),
    ]);
    assert_eq!(
        shape(&out.messages),
        "U: text(q) | A: thinking use(t1) use(t2) | U: result(t1) result(t2) | A: text(both done)"
    );
    assert!(out.report.is_empty(), "{}", out.report);
}

#[test]
fn a_cut_off_stream() {
    let out = check(&[
        user("q"),
        frag("msg_1", vec![thinking("plan")]),
        frag("msg_1", vec![text("Let me check. ")]),
        frag("msg_1", vec![tool_use("t1")]),
    ]);
    assert_eq!(
        shape(&out.messages),
        "U: text(q) | A: thinking text(Let me check. ) use(t1) | U: result!(t1)"
    );
    // A stream cut inside the thinking: nothing to continue from.
    let out = check(&[user("q"), frag("msg_1", vec![thinking("pl")])]);
    assert_eq!(shape(&out.messages), "U: text(q)");
}

#[test]
fn empty_and_whitespace_only_text() {
    let out = check(&[
        user(""),
        asst_text(" "),
        user("  \n"),
        asst(vec![text("x"), text("\t")]),
        user_blocks(vec![]),
        asst(vec![]),
    ]);
    assert_eq!(
        shape(&out.messages),
        format!("U: text({EMPTY_PLACEHOLDER}) | A: text(x) | U: text({EMPTY_PLACEHOLDER})")
    );
}

#[test]
fn a_prefill_with_trailing_whitespace() {
    let out = check(&[user("Write JSON"), asst_text("{\"a\": \n")]);
    assert_eq!(
        shape(&out.messages),
        "U: text(Write JSON) | A: text({\"a\":)"
    );
    assert_eq!(kinds(&out), ["trailing whitespace trimmed"]);
    assert_eq!(out.report.repairs[0].message_index, Some(1));
}

#[test]
fn orphaned_and_misplaced_thinking() {
    let out = check(&[
        user("q"),
        asst(vec![thinking("a")]),
        user("q2"),
        asst(vec![redacted(), unsigned_thinking("b")]),
        asst(vec![text("answer"), thinking("late")]),
        user_blocks(vec![text("q3"), thinking("in user")]),
        asst(vec![thinking("latest")]),
        user("q4"),
    ]);
    assert_eq!(
        shape(&out.messages),
        // The two adjacent assistants merge; the unsigned block goes, the merged message
        // starts with thinking so its other thinking stays.
        // The latest assistant holds only thinking: dropped like the first, so the users
        // around it join.
        "U: text(q) text(q2) | A: redacted text(answer) thinking | U: text(q3) text(q4)"
    );
}

#[test]
fn attachments_anywhere() {
    let file = Attachment::File {
        path: "a.rs".into(),
        content: "fn a() {}".into(),
        truncated: false,
    };
    let out = check(&[
        reminder("first of all"),
        att(Attachment::UiOnly { label: "ui".into() }),
        user("q"),
        asst(vec![tool_use("t1")]),
        att(file),
        results(&["t1"]),
        att(Attachment::Directory {
            path: "src".into(),
            entries: vec![],
            truncated: true,
        }),
        asst_text("a"),
        user("q2"),
        att(Attachment::QueuedCommand {
            prompt: "also this".into(),
        }),
    ]);
    let shape = shape(&out.messages);
    assert!(
        shape.starts_with("U: text(<system-reminder>\nfirst of all"),
        "{shape}"
    );
    assert!(
        shape.contains("| A: use(t1) | U: result(t1) text(<system-reminder>\nCalled the Read"),
        "{shape}"
    );
    assert!(shape.ends_with("also this\n\nPlease address this message and continue with your tasks.\n</system-reminder>) text(q2)"), "{shape}");
    assert!(out.report.is_empty());
    // Only attachments that render to nothing, and UI-only messages: nothing to send.
    let out = check(&[
        att(Attachment::UiOnly { label: "ui".into() }),
        Message::progress("t", json!(null)),
    ]);
    assert_eq!(
        shape_of(&out.messages),
        format!("U: text({EMPTY_PLACEHOLDER})")
    );
}

fn shape_of(messages: &[MessageParam]) -> String {
    shape(messages)
}

#[test]
fn tombstones_retract_partial_responses() {
    let out = check(&[
        user("q"),
        with_id(frag("msg_1", vec![text("partial ans")]), "p1"),
        with_id(frag("msg_1", vec![tool_use("t1")]), "p2"),
        Message::tombstone(MessageId::from("p1")),
        Message::tombstone(MessageId::from("p2")),
        frag("msg_1", vec![text("full answer")]),
    ]);
    assert_eq!(shape(&out.messages), "U: text(q) | A: text(full answer)");
    assert!(out.report.is_empty());
}

#[test]
fn local_commands_reach_the_model_as_user_text() {
    let out = check(&[
        user("q"),
        asst_text("a"),
        Message::system(SystemKind::LocalCommand {
            content: "ran /cost".into(),
        }),
        user("next"),
    ]);
    assert_eq!(
        shape(&out.messages),
        "U: text(q) | A: text(a) | U: text(<local-command-stdout>ran /cost</local-command-stdout>) \
         text(next)"
    );
}

#[test]
fn an_assistant_first_array_and_empty_input() {
    // The API accepts an assistant-first array, but the request sent before that answer was
    // the placeholder alone: it stays first (see `start_with_user`).
    let out = check(&[asst_text("hello"), results(&["t0"]), user("hi")]);
    assert_eq!(
        shape(&out.messages),
        format!("U: text({EMPTY_PLACEHOLDER}) | A: text(hello) | U: text(hi)")
    );
    assert_eq!(
        out.report.count(|k| *k == RepairKind::PlaceholderInserted),
        1
    );
    // An on-demand compaction block must stay first (soak seed 2500797300685644920 found the
    // edit: a compact boundary, then a virtual user message, then the answer).
    let block =
        serde_json::from_value(json!({"content": "S", "signature": "sig"})).expect("a block");
    let compacted = [asst(vec![ContentBlock::Compaction(block)]), user("q")];
    assert!(shape(&check(&compacted).messages).starts_with("A: "));
    let out = check(&[]);
    assert_eq!(
        shape(&out.messages),
        format!("U: text({EMPTY_PLACEHOLDER})")
    );
    assert_eq!(kinds(&out), ["placeholder inserted"]);
}

#[test]
fn stale_cache_markers_and_hostile_blocks() {
    let marked = |t: &str, ttl: CacheTtl| {
        let mut block = TextBlock::new(t);
        block.cache_control = Some(Box::new(CacheControl::ephemeral().with_ttl(ttl)));
        ContentBlock::Text(block)
    };
    let unknown =
        ContentBlock::Unknown(json!({"type": "future_x", "cache_control": {"type": "ephemeral"}}));
    let out = check(&[
        user_blocks(vec![
            marked("a", CacheTtl::FiveMinutes),
            marked("b", CacheTtl::OneHour),
            marked("", CacheTtl::OneHour),
            unknown,
        ]),
        asst(vec![
            marked("c", CacheTtl::FiveMinutes),
            marked("d", CacheTtl::FiveMinutes),
        ]),
        user_blocks(vec![marked("e", CacheTtl::OneHour)]),
    ]);
    let json = serde_json::to_string(&out.messages).expect("serializes");
    assert!(!json.contains("cache_control"), "{json}");
}

#[test]
fn media_over_the_limit_nested_or_not() {
    let screenshot =
        |id: &str| tool_result_block(id, Content::Blocks(vec![image(), text("shot")]), false);
    let mut session = vec![user_blocks(vec![text("look"), image(), image()])];
    for n in 0..60 {
        let id = format!("t{n}");
        session.push(asst(vec![tool_use(&id)]));
        session.push(user_blocks(vec![screenshot(&id), image()]));
    }
    let out = check(&session);
    let json = serde_json::to_string(&out.messages).expect("serializes");
    assert_eq!(json.matches("\"type\":\"image\"").count(), 100);
    assert_eq!(out.report.count(|k| *k == RepairKind::MediaDropped), 22);
    assert_eq!(
        out.report.repairs[0].message_index,
        Some(0),
        "the oldest go first"
    );
}

#[test]
fn normalizing_is_linear_enough_for_big_sessions() {
    // 20k messages with every kind of repair sprinkled in; must finish quickly and stay
    // valid (a quadratic step would take minutes here).
    let mut session = Vec::new();
    for n in 0..4_000 {
        let id = format!("toolu_{n}");
        session.push(user(&format!("q{n}")));
        session.push(frag(&format!("msg_{n}"), vec![thinking("t")]));
        session.push(frag(&format!("msg_{n}"), vec![tool_use(&id)]));
        if n % 3 != 0 {
            session.push(results(&[&id]));
        }
        session.push(reminder("r"));
    }
    let out = normalize(&session, &Options::default());
    assert_valid(&out.messages);
    let again = normalize(&to_internal(&out.messages), &Options::default());
    assert!(again.report.is_empty());
}

// ---------------------------------------------------------------------------------------------
// A local hostile-array property: arbitrary blocks (from the testkit's wire strategies) in
// arbitrary internal messages. The crate's own proptest suite lives in its tests; this one
// guards the passes while they are written.

fn block() -> impl Strategy<Value = ContentBlock> {
    threadline_testkit::strategies::content_block().prop_filter_map("a content block", |value| {
        serde_json::from_value::<ContentBlock>(value).ok()
    })
}

fn message() -> impl Strategy<Value = Message> {
    let blocks = || prop::collection::vec(block(), 0..4);
    let ids = prop_oneof![Just("msg_1"), Just("msg_2"), Just("msg_3")];
    prop_oneof![
        4 => blocks().prop_map(Message::user_blocks),
        1 => "[a-z ]{0,6}".prop_map(Message::meta_user_text),
        3 => blocks().prop_map(Message::assistant),
        3 => (ids, blocks()).prop_map(|(id, b)| Message::assistant_fragment(id, MODEL, b)),
        1 => "[a-z]{0,5}".prop_map(|t| Message::attachment(Attachment::Reminder { text: t })),
        1 => Just(Message::attachment(Attachment::UiOnly { label: "x".into() })),
        1 => Just(Message::progress("t", json!({}))),
        1 => "[a-z ]{0,4}".prop_map(|c| Message::system(SystemKind::LocalCommand { content: c })),
    ]
}

fn session() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(message(), 0..12).prop_flat_map(|messages| {
        let n = messages.len();
        // Duplicate a random slice, as a resume would.
        (Just(messages), 0..=n, 0..=n, any::<bool>()).prop_map(|(mut messages, a, b, same_ids)| {
            let (start, end) = (a.min(b), a.max(b));
            let replay: Vec<Message> = messages[start..end]
                .iter()
                .cloned()
                .map(|m| {
                    if same_ids {
                        m
                    } else {
                        m.with_header(Header::new())
                    }
                })
                .collect();
            messages.extend(replay);
            messages
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn hostile_arrays_pass_every_check(session in session()) {
        let out = check(&session);
        // Every message non-empty, roles alternate.
        for pair in out.messages.windows(2) {
            prop_assert_ne!(&pair[0].role, &pair[1].role);
        }
        for message in &out.messages {
            prop_assert!(!message.content.is_empty());
            prop_assert!(message.role == Role::User || message.role == Role::Assistant);
        }
    }
}
