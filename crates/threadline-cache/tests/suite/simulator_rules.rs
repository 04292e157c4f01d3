//! The simulator's rules one by one, and the cache-break causes it and `diff` name: TTL
//! expiry and refresh, the 20-block lookback, the minimum cacheable length, the 1h/5m billing
//! split, and changed tools, system, `tool_choice`, thinking, rewritten messages; the tool
//! schema snapshot.

use threadline_cache::breaks::{BreakCause, diff};
use threadline_cache::tools::{ToolOverlay, ToolSnapshot};
use threadline_cache::{LookbackAware, Planner, Seed, Simulator, Stable1h, Ttl};
use threadline_wire::model::ModelTable;
use threadline_wire::tools::{CustomTool, ToolChoice, ToolChoiceOptions};
use threadline_wire::{ContentBlock, MessageParam, MessagesRequest, SystemPrompt, ToolDefinition};

const MODEL: &str = "claude-sonnet-4-6"; // minimum cacheable length 1,024

fn model() -> &'static threadline_wire::model::Model {
    ModelTable::builtin().resolve(MODEL).model()
}

fn tool(name: &str, words: usize) -> ToolDefinition {
    ToolDefinition::Custom(
        CustomTool::new(
            name,
            serde_json::json!({"type": "object", "properties": {}}),
        )
        .with_description("word ".repeat(words)),
    )
}

/// A request with tools, a system prompt and `turns` user/assistant exchanges, each `width`
/// blocks wide on both sides.
fn request(turns: usize, width: usize) -> MessagesRequest {
    let mut messages = Vec::new();
    for t in 0..turns {
        messages.push(MessageParam::user(
            (0..width)
                .map(|k| ContentBlock::text(format!("question {t}.{k} {}", "x".repeat(200))))
                .collect(),
        ));
        if t + 1 < turns {
            messages.push(MessageParam::assistant(
                (0..width)
                    .map(|k| ContentBlock::text(format!("answer {t}.{k}")))
                    .collect(),
            ));
        }
    }
    let mut r = MessagesRequest::new(MODEL, 1024, messages);
    r.tools = Some(vec![tool("Read", 2000), tool("Bash", 2000)]);
    r.system = Some(SystemPrompt::Text("You are careful. ".repeat(500)));
    r
}

fn planned(planner: &mut Planner, mut r: MessagesRequest) -> MessagesRequest {
    planner.plan(&mut r);
    r
}

#[test]
fn the_next_turn_reads_what_the_previous_wrote() {
    let mut sim = Simulator::new(model());
    let mut planner = Planner::default();
    let first = sim.step(0, &planned(&mut planner, request(1, 1)));
    assert_eq!(first.usage.cache_read_input_tokens, 0);
    assert_eq!(first.usage.input_tokens, 0);
    let second = sim.step(30_000, &planned(&mut planner, request(2, 1)));
    assert_eq!(
        second.usage.cache_read_input_tokens,
        first.usage.cache_creation_input_tokens
    );
    assert!(second.cache_break.is_none());
    assert!(second.cost < first.cost);
}

#[test]
fn entries_expire_after_five_minutes_unless_refreshed() {
    let mut planner = Planner::default();
    let mut sim = Simulator::new(model());
    sim.step(0, &planned(&mut planner, request(1, 1)));
    // Refreshed by a read at 4 minutes, so still alive at 8.
    sim.step(240_000, &planned(&mut planner, request(2, 1)));
    let alive = sim.step(480_000, &planned(&mut planner, request(3, 1)));
    assert!(alive.usage.cache_read_input_tokens > 0);
    // 6 idle minutes: everything expired.
    let expired = sim.step(480_000 + 360_000, &planned(&mut planner, request(4, 1)));
    assert_eq!(expired.usage.cache_read_input_tokens, 0);
    let cause = expired.cache_break.expect("a break").cause;
    assert_eq!(cause, BreakCause::TtlExpired { idle_ms: 360_000 });
}

#[test]
fn one_hour_markers_survive_idle_gaps_and_are_billed_apart() {
    let mut planner = Planner::new(Stable1h);
    let mut sim = Simulator::new(model());
    let first = sim.step(0, &planned(&mut planner, request(1, 1)));
    // Tools and system at 1h, the conversation at 5m: both kinds of write.
    assert!(first.usage.ephemeral_1h_input_tokens > 0 && first.usage.ephemeral_5m_input_tokens > 0);
    assert_eq!(
        first.usage.cache_creation_input_tokens,
        first.usage.ephemeral_1h_input_tokens + first.usage.ephemeral_5m_input_tokens
    );
    let m = model();
    let expected = (first.usage.ephemeral_1h_input_tokens as f64 * m.prices.cache_write_1h
        + first.usage.ephemeral_5m_input_tokens as f64 * m.prices.cache_write_5m)
        / 1e6;
    assert!((first.cost - expected).abs() < 1e-9);
    // 30 idle minutes: the 1h prefix (tools + system) is still there.
    let later = sim.step(30 * 60_000, &planned(&mut planner, request(2, 1)));
    assert_eq!(
        later.usage.cache_read_input_tokens,
        first.usage.ephemeral_1h_input_tokens
    );
}

#[test]
fn a_turn_wider_than_the_lookback_misses_with_one_moving_marker() {
    // 11 blocks each side: 22 blocks between the previous marker and the new last block.
    let first = request(1, 11);
    let second = request(2, 11);
    let mut seed = Planner::new(Seed);
    let mut sim = Simulator::new(model());
    let wrote = sim
        .step(0, &planned(&mut seed, first.clone()))
        .usage
        .cache_creation_input_tokens;
    let step = sim.step(10_000, &planned(&mut seed, second.clone()));
    assert!(
        step.usage.cache_read_input_tokens < wrote,
        "falls back to the system marker"
    );
    assert!(matches!(
        step.cache_break.expect("a break").cause,
        BreakCause::LookbackExceeded { blocks } if blocks >= 20
    ));
    // The lookback-aware strategy bridges it.
    let mut aware = Planner::new(LookbackAware);
    let mut sim = Simulator::new(model());
    sim.step(0, &planned(&mut aware, first));
    let step = sim.step(10_000, &planned(&mut aware, second));
    assert_eq!(step.usage.cache_read_input_tokens, wrote);
    assert!(step.cache_break.is_none());
}

#[test]
fn prompts_below_the_minimum_are_not_cached() {
    let mut r = MessagesRequest::new(
        MODEL,
        1024,
        vec![MessageParam::user(vec![ContentBlock::text("short")])],
    );
    let mut planner = Planner::default();
    let mut sim = Simulator::new(model());
    let first = sim.step(0, &planned(&mut planner, r.clone()));
    assert_eq!(
        (
            first.usage.cache_creation_input_tokens,
            first.usage.cache_read_input_tokens
        ),
        (0, 0)
    );
    r.messages
        .push(MessageParam::assistant(vec![ContentBlock::text("ok")]));
    r.messages
        .push(MessageParam::user(vec![ContentBlock::text("again")]));
    let second = sim.step(1_000, &planned(&mut planner, r));
    assert!(matches!(
        second.cache_break.expect("a break").cause,
        BreakCause::BelowMinimum { minimum: 1024, .. }
    ));
}

#[test]
fn changes_are_named_with_their_first_block() {
    let mut planner = Planner::default();
    let base = planned(&mut planner, request(2, 1));

    let mut tools = base.clone();
    tools.tools = Some(vec![tool("Read", 2000), tool("Grep", 2000)]);
    let found = diff(&base, &tools).expect("a break");
    assert_eq!(
        found.cause,
        BreakCause::ToolsChanged {
            name: Some("Grep".into())
        }
    );
    assert_eq!(found.to_string(), "tools.1: tools changed (`Grep`)");

    let mut system = base.clone();
    system.system = Some(SystemPrompt::Text("You are reckless.".into()));
    assert_eq!(
        diff(&base, &system).expect("a break").cause,
        BreakCause::SystemChanged
    );

    let mut choice = base.clone();
    choice.tool_choice = Some(ToolChoice::Any(ToolChoiceOptions::new()));
    let found = diff(&base, &choice).expect("a break");
    assert_eq!(found.cause, BreakCause::ToolChoiceChanged);
    assert_eq!(
        found.location,
        Some(threadline_cache::Location::System { index: 0 })
    );

    let mut thinking = base.clone();
    thinking.thinking = serde_json::from_str(r#"{"type":"adaptive"}"#).ok();
    assert_eq!(
        diff(&base, &thinking).expect("a break").cause,
        BreakCause::ThinkingChanged
    );

    let mut rewritten = base.clone();
    rewritten.messages[1] = MessageParam::assistant(vec![ContentBlock::text("a different answer")]);
    let found = diff(&base, &rewritten).expect("a break");
    assert_eq!(found.cause, BreakCause::MessageRewritten);
    assert_eq!(
        found.to_string(),
        "messages.1.content.0: a message above the last marker was rewritten"
    );

    let mut removed = base.clone();
    removed.messages.truncate(1);
    assert_eq!(
        diff(&base, &removed).expect("a break").cause,
        BreakCause::MessagesRemoved
    );

    let mut model_changed = base.clone();
    model_changed.model = "claude-opus-4-7".into();
    assert_eq!(
        diff(&base, &model_changed).expect("a break").cause,
        BreakCause::ModelChanged
    );

    // Appending is not a break; neither is moving a marker.
    let next = planned(&mut planner, request(3, 1));
    assert!(diff(&base, &next).is_none());

    // The simulator reports the same cause, and reads only what precedes the change.
    let mut sim = Simulator::new(model());
    sim.step(0, &base);
    let mut changed = rewritten.clone();
    Planner::default().plan(&mut changed);
    let step = sim.step(1_000, &changed);
    assert_eq!(
        step.cache_break.expect("a break").cause,
        BreakCause::MessageRewritten
    );
    assert!(
        step.usage.cache_read_input_tokens > 0,
        "the system prefix is still read"
    );
}

/// The automatic strategy on a growing session (tools, a long system prompt, one exchange a
/// minute): what each request reads, writes and leaves uncached, and the session's share.
fn growing_session(planner: &mut Planner, turns: usize) -> Vec<(u64, u64, u64)> {
    let mut sim = Simulator::new(model());
    (1..=turns)
        .map(|t| {
            let mut r = request(t, 1);
            planner.plan(&mut r);
            assert!(
                threadline_validate::validate(&r, model()).is_empty(),
                "turn {t}: {:?}",
                threadline_validate::validate(&r, model())
            );
            let u = sim.step(t as u64 * 60_000, &r).usage;
            (
                u.cache_read_input_tokens,
                u.cache_creation_input_tokens,
                u.input_tokens,
            )
        })
        .collect()
}

#[test]
fn automatic_caching_reads_back_each_turn_and_keeps_the_stable_prefix() {
    use threadline_cache::Automatic;
    let mut planner = Planner::new(Automatic::default());
    let steps = growing_session(&mut planner, 6);
    // Turn 1 writes the whole prompt; every later turn reads all of it back and writes only
    // the new exchange (63 tokens): nothing is left uncached.
    assert_eq!(
        steps,
        [
            (0, 7233, 0),
            (7233, 63, 0),
            (7296, 63, 0),
            (7359, 63, 0),
            (7422, 63, 0),
            (7485, 63, 0)
        ]
    );
    let (read, total) = steps.iter().fold((0u64, 0u64), |(r, t), &(read, w, i)| {
        (r + read, t + read + w + i)
    });
    assert_eq!((read, total), (36_795, 44_343));
    assert_eq!(format!("{:.4}", read as f64 / total as f64), "0.8298");
    // The same as the default strategy's moving marker, with one slot fewer used.
    let mut lookback = Planner::new(LookbackAware);
    assert_eq!(growing_session(&mut lookback, 6), steps);
    // The marker on the request: explicit on the last tool and the system prompt, automatic
    // for the tail (three slots of four).
    let mut r = request(3, 1);
    let plan = Planner::new(Automatic::default()).plan(&mut r);
    assert_eq!(
        plan.locations,
        [
            threadline_cache::Location::Tool { index: 1 },
            threadline_cache::Location::System { index: 0 }
        ]
    );
    assert_eq!(
        r.cache_control,
        Some(Box::new(threadline_wire::CacheControl::ephemeral()))
    );
}

#[test]
fn the_automatic_marker_lands_on_the_last_cacheable_block() {
    use threadline_cache::{Estimate, Prefix};
    let thinking = threadline_testkit::messages::thinking("hmm", "sig");
    let mut r = MessagesRequest::new(
        MODEL,
        1024,
        vec![
            MessageParam::user(vec![ContentBlock::text("a ".repeat(3000))]),
            MessageParam::assistant(vec![
                ContentBlock::text("answer"),
                thinking.clone(),
                ContentBlock::text(""),
            ]),
        ],
    );
    r.cache_control = Some(Box::new(threadline_wire::CacheControl::ephemeral()));
    let prefix = Prefix::of(&r, &Estimate, Default::default());
    // Past the empty text and the thinking, onto `answer` (piece 1).
    assert_eq!(prefix.breakpoints(), [(1, Ttl::FiveMinutes)]);
    // Nothing eligible: nothing is cached.
    let mut none = r.clone();
    none.messages = vec![MessageParam::assistant(vec![
        thinking,
        ContentBlock::text(""),
    ])]
    .into();
    let prefix = Prefix::of(&none, &Estimate, Default::default());
    assert_eq!(prefix.breakpoints(), []);
    let step = Simulator::new(model()).step(0, &none);
    assert_eq!(step.usage.cache_creation_input_tokens, 0);
    assert_eq!(step.usage.cache_read_input_tokens, 0);
}

#[test]
fn divergence_names_the_part_the_api_diagnoses_and_ignores_appends() {
    use threadline_cache::breaks::{RequestDivergence, divergence};
    use threadline_wire::diagnostics::PromptPart;
    let base = request(2, 1);
    let part = |next: &MessagesRequest| divergence(&base, next).and_then(|b| b.cause.prompt_part());
    let mut system = base.clone();
    system.system = Some(SystemPrompt::Text("Today is 2026-12-02.".into()));
    assert_eq!(part(&system), Some(PromptPart::System));
    let mut tools = base.clone();
    tools.tools = Some(vec![tool("Read", 2000)]);
    assert_eq!(part(&tools), Some(PromptPart::Tools));
    let mut model = base.clone();
    model.model = "claude-opus-4-7".into();
    assert_eq!(part(&model), Some(PromptPart::Model));
    let mut rewritten = base.clone();
    rewritten.messages[0] = MessageParam::user(vec![ContentBlock::text("other")]);
    assert_eq!(part(&rewritten), Some(PromptPart::Messages));
    let mut choice = base.clone();
    choice.tool_choice = Some(ToolChoice::Any(ToolChoiceOptions::new()));
    assert_eq!(part(&choice), Some(PromptPart::Other));
    // Without any marker `diff` sees nothing; `divergence` compares the whole request. An
    // appended turn and moved markers are no divergence.
    assert!(diff(&base, &rewritten).is_none());
    let next = planned(&mut Planner::default(), request(3, 1));
    assert_eq!(divergence(&base, &next), None);
    assert_eq!(divergence(&request(0, 0), &base), None);
    let empty = MessagesRequest::new(MODEL, 1, Vec::new());
    assert_eq!(divergence(&empty, &base), None);

    let mut along = RequestDivergence::new();
    assert_eq!(
        along.observe(&base),
        None,
        "the first request has nothing before it"
    );
    assert_eq!(along.observe(&next), Some(None));
    let found = along
        .observe(&system)
        .expect("seen before")
        .expect("diverges");
    assert_eq!(found.cause, BreakCause::SystemChanged);
}

#[test]
fn the_tool_snapshot_is_reused_byte_for_byte() {
    let mut live = vec![tool("Read", 50), tool("Bash", 50), tool("Search", 10)];
    let snapshot = ToolSnapshot::new(&live);
    let frozen: Vec<String> = snapshot.bytes().to_vec();
    let overlay = ToolOverlay {
        marker: Some(Ttl::FiveMinutes),
        deferred: &["Search"],
    };
    let sent = snapshot.for_request(&overlay);
    // The overlay marked the last loaded tool and deferred one; the snapshot is untouched.
    assert!(sent[1].cache_control().is_some());
    assert!(matches!(&sent[2], ToolDefinition::Custom(t) if t.defer_loading == Some(true)));
    assert_eq!(snapshot.bytes(), &frozen[..]);
    for _ in 0..3 {
        let plain = snapshot.for_request(&ToolOverlay::default());
        let bytes: Vec<String> = plain
            .iter()
            .map(|t| serde_json::to_string(t).expect("json"))
            .collect();
        assert_eq!(bytes, frozen);
    }
    // A flag flips mid-session and a description changes: the snapshot keeps the old bytes,
    // and the change is named.
    live[1] = tool("Bash", 51);
    assert_eq!(snapshot.bytes(), &frozen[..]);
    let change = snapshot.change(&live).expect("changed");
    assert_eq!(change.to_string(), "tools.1: tools changed (`Bash`)");
    assert!(
        snapshot.change(&snapshot.for_request(&overlay)).is_none(),
        "overlays are not changes"
    );
}

#[test]
fn a_new_turn_on_a_model_that_drops_earlier_thinking_reads_up_to_the_turn_start() {
    // Sonnet 4.5 strips thinking of earlier turns: when the next user prompt arrives, every
    // block after the first thinking block of the last turn changed. The lookback-aware
    // strategy bridges to the latest write still valid (the turn's first prompt), 20+ blocks
    // back; the seed layout falls back to the system prompt.
    let model_id = "claude-sonnet-4-5";
    let thinking = |n: usize| {
        threadline_testkit::messages::thinking(format!("thought {n}"), format!("sig{n}"))
    };
    let mut messages = vec![MessageParam::user(vec![ContentBlock::text(
        "Fix the build. ".repeat(600),
    )])];
    let mut session = Vec::new();
    let snapshot = |messages: &Vec<MessageParam>| {
        let mut r = MessagesRequest::new(model_id, 1024, messages.clone());
        r.system = Some(SystemPrompt::Text("You are careful. ".repeat(400)));
        r
    };
    session.push(snapshot(&messages));
    for step in 0..12 {
        let id = format!("toolu_{step:02}");
        messages.push(MessageParam::assistant(vec![
            thinking(step),
            threadline_testkit::messages::tool_use(
                &id,
                "Bash",
                serde_json::json!({"command": "cargo build"}),
            ),
        ]));
        messages.push(MessageParam::user(vec![
            threadline_message::tool_result_block(
                &id,
                threadline_wire::Content::Text("error: ".repeat(20)),
                false,
            ),
        ]));
        session.push(snapshot(&messages));
    }
    messages.push(MessageParam::assistant(vec![
        thinking(99),
        ContentBlock::text("Fixed."),
    ]));
    messages.push(MessageParam::user(vec![ContentBlock::text(
        "Thanks. Now the tests.",
    )]));
    session.push(snapshot(&messages));

    let model = ModelTable::builtin().resolve(model_id).model();
    let run = |mut planner: Planner| {
        let mut sim = Simulator::new(model);
        let mut last = None;
        for (i, request) in session.iter().enumerate() {
            let mut request = request.clone();
            planner.plan(&mut request);
            last = Some(sim.step(i as u64 * 5_000, &request));
        }
        last.expect("steps")
    };
    let first_prompt =
        threadline_cache::Prefix::of(&session[0], &threadline_cache::Estimate, Default::default())
            .total_tokens();
    let aware = run(Planner::new(LookbackAware));
    assert_eq!(aware.usage.cache_read_input_tokens, first_prompt);
    assert_eq!(
        aware.cache_break.expect("a break").cause,
        BreakCause::PriorThinkingStripped
    );
    let seed = run(Planner::new(Seed));
    assert!(
        seed.usage.cache_read_input_tokens < first_prompt,
        "{:?}",
        seed.usage
    );
}

/// Mid-conversation tool changes, both ways the loop can send them: `tools` kept (the new
/// tool appended deferred, the change a `system` message of `tool_addition` /
/// `tool_removal` blocks) reads the whole previous prefix; a changed `tools` array breaks
/// from the first changed tool on and reads nothing.
#[test]
fn a_tool_change_as_a_system_message_keeps_the_prefix_and_a_changed_array_breaks_it() {
    use threadline_wire::tool_change::ToolChangeBlock;
    let with_change = |r: &mut MessagesRequest| {
        r.messages.push(MessageParam::new(
            threadline_wire::Role::System,
            threadline_wire::Content::Blocks(vec![
                ContentBlock::ToolRemoval(ToolChangeBlock::tool("Bash")),
                ContentBlock::ToolAddition(ToolChangeBlock::tool("Deploy")),
            ]),
        ));
    };
    let deferred = |mut t: ToolDefinition| {
        if let ToolDefinition::Custom(c) = &mut t {
            c.defer_loading = Some(true);
        }
        t
    };
    // In place.
    let mut sim = Simulator::new(model());
    let mut planner = Planner::default();
    let first = sim.step(0, &planned(&mut planner, request(1, 1)));
    let mut next = request(2, 1);
    next.tools = Some(vec![
        tool("Read", 2000),
        tool("Bash", 2000),
        deferred(tool("Deploy", 2000)),
    ]);
    with_change(&mut next);
    let kept = sim.step(30_000, &planned(&mut planner, next));
    assert_eq!(kept.cache_break, None);
    assert_eq!(
        kept.usage.cache_read_input_tokens,
        first.usage.cache_creation_input_tokens
    );
    assert!(kept.usage.read_share() > 0.9, "{:?}", kept.usage);
    // A changed array: `Bash` replaced by `Deploy` at tools.1.
    let mut sim = Simulator::new(model());
    let mut planner = Planner::default();
    sim.step(0, &planned(&mut planner, request(1, 1)));
    let mut next = request(2, 1);
    next.tools = Some(vec![tool("Read", 2000), tool("Deploy", 2000)]);
    let broken = sim.step(30_000, &planned(&mut planner, next));
    let found = broken.cache_break.expect("a break");
    assert_eq!(
        found.cause,
        BreakCause::ToolsChanged {
            name: Some("Deploy".to_owned())
        }
    );
    assert_eq!(found.to_string(), "tools.1: tools changed (`Deploy`)");
    // `Read` alone is below Sonnet 4.6's minimum, so nothing before the change was cached.
    assert_eq!(broken.usage.cache_read_input_tokens, 0);
}
