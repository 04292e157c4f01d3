//! The planner's rules, for arbitrary normalized requests (valid and hostile internal arrays
//! from `threadline_testkit::messages`, normalized), with or without tools, a split system
//! prompt, top-level automatic caching, stale markers, a previous request — and for every
//! strategy, including one that asks for arbitrary markers:
//!
//! * at most 4 markers in all (tools, system, message blocks, nested ones, the top-level one);
//! * never a marker on thinking, redacted thinking, an empty text block or an unknown block;
//! * no `1h` marker after a `5m` one (tools → system → messages, the top-level marker last);
//! * never a marker on a tool sent with `defer_loading: true` (the API's 400 "Tool '<name>'
//!   cannot have both defer_loading=true and cache_control set"), whichever tools are deferred
//!   and even when the caller left markers on them;
//! * the output passes `threadline_validate::validate` whenever the unplanned request does (and
//!   adds no violation otherwise);
//! * `plan_unrecorded` places the markers `plan` places, and leaves the planner as it was.

use crate::sessions;

use proptest::prelude::*;
use threadline_cache::planner::{Mark, StrategyInput};
use threadline_cache::system::{SystemParts, split_system_prompt};
use threadline_cache::{
    Automatic, LookbackAware, Planner, Seed, Stable1h, Strategy as CacheStrategy, Ttl,
};
use threadline_normalize::{Options, normalize};
use threadline_testkit::messages::{hostile_session, valid_session};
use threadline_validate::validate;
use threadline_wire::content::Content;
use threadline_wire::model::ModelTable;
use threadline_wire::{CacheControl, CacheTtl, ContentBlock, MessagesRequest, ToolDefinition};

/// Asks for whatever marks it was given (positions taken modulo the request's length).
#[derive(Debug, Clone)]
struct Arbitrary(Vec<(usize, bool)>);

impl CacheStrategy for Arbitrary {
    fn name(&self) -> &'static str {
        "arbitrary"
    }

    fn place(&self, input: &StrategyInput<'_>) -> Vec<Mark> {
        let n = input.prefix.pieces.len().max(1);
        self.0
            .iter()
            .map(|&(p, long)| Mark {
                position: p % n,
                ttl: if long { Ttl::OneHour } else { Ttl::FiveMinutes },
            })
            .collect()
    }
}

/// Every marker of a request, in processing order: (what, ttl, where).
fn markers(request: &MessagesRequest) -> Result<Vec<(Ttl, String)>, String> {
    fn ttl(c: &CacheControl) -> Ttl {
        if c.ttl == Some(CacheTtl::OneHour) {
            Ttl::OneHour
        } else {
            Ttl::FiveMinutes
        }
    }
    fn visit(
        block: &ContentBlock,
        path: String,
        out: &mut Vec<(Ttl, String)>,
    ) -> Result<(), String> {
        if let ContentBlock::Text(t) = block
            && t.text.is_empty()
            && t.cache_control.is_some()
        {
            return Err(format!("{path}: marker on an empty text block"));
        }
        if let ContentBlock::Unknown(v) = block
            && v.get("cache_control").is_some()
        {
            return Err(format!("{path}: marker on an unknown block"));
        }
        // Thinking blocks have no marker field: the type system rules them out.
        if let Some(c) = block.cache_control() {
            out.push((ttl(c), path.clone()));
        }
        if let ContentBlock::ToolResult(r) = block
            && let Some(Content::Blocks(inner)) = &r.content
        {
            for (j, b) in inner.iter().enumerate() {
                visit(b, format!("{path}.content.{j}"), out)?;
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for (i, tool) in request.tools.iter().flatten().enumerate() {
        if let Some(c) = tool.cache_control() {
            out.push((ttl(c), format!("tools.{i}")));
        }
    }
    if let Some(threadline_wire::SystemPrompt::Blocks(blocks)) = &request.system {
        for (i, b) in blocks.iter().enumerate() {
            if let Some(c) = &b.cache_control {
                if b.text.is_empty() {
                    return Err(format!("system.{i}: marker on an empty text block"));
                }
                out.push((ttl(c), format!("system.{i}")));
            }
        }
    }
    for (i, m) in request.messages.iter().enumerate() {
        if let Content::Blocks(blocks) = &m.content {
            for (j, b) in blocks.iter().enumerate() {
                visit(b, format!("messages.{i}.content.{j}"), &mut out)?;
            }
        }
    }
    if let Some(c) = &request.cache_control {
        out.push((ttl(c), "cache_control".to_owned()));
    }
    Ok(out)
}

fn check(request: &MessagesRequest, baseline: &MessagesRequest) -> Result<(), String> {
    for (i, tool) in request.tools.iter().flatten().enumerate() {
        if tool.is_deferred() && tool.cache_control().is_some() {
            return Err(format!("tools.{i}: marker on a deferred tool"));
        }
    }
    let found = markers(request)?;
    if found.len() > 4 {
        return Err(format!("{} markers: {found:?}", found.len()));
    }
    let mut seen_five = false;
    for (ttl, path) in &found {
        match ttl {
            Ttl::FiveMinutes => seen_five = true,
            Ttl::OneHour if seen_five => return Err(format!("{path}: 1h after 5m in {found:?}")),
            Ttl::OneHour => {}
        }
    }
    let model = ModelTable::builtin().resolve(sessions::MODEL).model();
    let before: Vec<String> = validate(baseline, model)
        .iter()
        .map(|v| v.to_string())
        .collect();
    let after: Vec<String> = validate(request, model)
        .iter()
        .map(|v| v.to_string())
        .collect();
    if after.iter().any(|v| !before.contains(v)) {
        return Err(format!(
            "the plan added violations: {after:?} (before: {before:?})"
        ));
    }
    Ok(())
}

#[derive(Debug, Clone)]
struct Setup {
    tools: bool,
    system: u8,
    automatic: Option<bool>,
    stale_marker: bool,
    cut: usize,
    strategy: u8,
    arbitrary: Vec<(usize, bool)>,
    /// Which tools are sent with `defer_loading: true` (bit N: tool N).
    deferred: u16,
    /// The caller left markers on the deferred tools.
    marked_deferred: bool,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        any::<bool>(),
        0u8..3,
        proptest::option::of(any::<bool>()),
        any::<bool>(),
        0usize..8,
        0u8..6,
        proptest::collection::vec((0usize..400, any::<bool>()), 0..9),
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                tools,
                system,
                automatic,
                stale_marker,
                cut,
                strategy,
                arbitrary,
                deferred,
                marked_deferred,
            )| Setup {
                tools,
                system,
                automatic,
                stale_marker,
                cut,
                strategy,
                arbitrary,
                deferred,
                marked_deferred,
            },
        )
}

fn request_for(messages: impl Into<threadline_wire::Messages>, setup: &Setup) -> MessagesRequest {
    let mut request = MessagesRequest::new(sessions::MODEL, 1024, messages);
    if setup.tools {
        let mut tools = sessions::agent_tools();
        for (i, tool) in tools.iter_mut().enumerate() {
            if setup.deferred & (1 << (i % 16)) != 0 {
                defer(tool);
                if setup.marked_deferred {
                    *tool.cache_control_mut() = Some(Box::new(CacheControl::ephemeral()));
                }
            }
        }
        request.tools = Some(tools);
    }
    let prompt = sessions::agent_system_prompt();
    match setup.system {
        1 => request.system = Some(threadline_wire::SystemPrompt::Text("Be brief.".to_owned())),
        2 => {
            request.system = split_system_prompt(&SystemParts {
                attribution: Some("v1"),
                prompt: &prompt,
                append: Some("Appended."),
            })
            .to_system()
        }
        _ => {}
    }
    request.cache_control = setup.automatic.map(|long| {
        Box::new(if long {
            CacheControl::ephemeral().with_ttl(CacheTtl::OneHour)
        } else {
            CacheControl::ephemeral()
        })
    });
    if setup.stale_marker {
        // Markers a caller left behind: the planner replaces them.
        for m in &mut request.messages {
            if let Content::Blocks(blocks) = &mut m.content {
                for b in blocks.iter_mut() {
                    if !threadline_cache::prefix::is_eligible(b) {
                        continue;
                    }
                    if let Some(slot) = b.cache_control_mut() {
                        *slot = Some(Box::new(CacheControl::ephemeral()));
                    }
                }
            }
        }
    }
    request
}

/// Sends `tool` with `defer_loading: true`.
fn defer(tool: &mut ToolDefinition) {
    match tool {
        ToolDefinition::Custom(t) => t.defer_loading = Some(true),
        ToolDefinition::Versioned(t) => t.defer_loading = Some(true),
    }
}

fn run(session: Vec<threadline_message::Message>, setup: Setup) -> Result<(), String> {
    let normalized = normalize(&session, &Options::default()).messages;
    let mut planner = match setup.strategy {
        0 => Planner::new(Seed),
        1 => Planner::new(LookbackAware),
        2 => Planner::new(Stable1h),
        4 => Planner::new(Automatic::default()),
        5 => Planner::new(Automatic::one_hour()),
        _ => Planner::new(Arbitrary(setup.arbitrary.clone())),
    }
    .with_static_system((setup.system == 2).then_some(1));
    // A previous request (a shorter history), then the full one.
    let cut = normalized.len().saturating_sub(setup.cut);
    for messages in [normalized[..cut].to_vec(), normalized.clone()] {
        if messages.is_empty() {
            continue;
        }
        let mut baseline = request_for(messages.clone(), &setup);
        threadline_cache::prefix::clear_markers(&mut baseline);
        let mut request = request_for(messages, &setup);
        // Planned without being recorded first (twice: the planner is left as it was), then
        // planned: the same markers.
        let mut unrecorded = request.clone();
        planner.plan_unrecorded(&mut unrecorded);
        planner.plan_unrecorded(&mut unrecorded);
        planner.plan(&mut request);
        if unrecorded != request {
            return Err("plan_unrecorded placed other markers than plan".to_owned());
        }
        check(&request, &baseline)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn plans_of_valid_sessions_keep_the_rules(session in valid_session(), setup in setup()) {
        run(session, setup).map_err(TestCaseError::fail)?;
    }

    /// Hostile shapes for the automatic strategy (and the others, with a caller's top-level
    /// marker): hundreds of blocks, nothing but thinking, empty text, markers everywhere. The
    /// automatic marker counts: never more than 4 in all, and the plan stays valid.
    #[test]
    fn automatic_caching_never_takes_a_fifth_slot(
        blocks in 0usize..300,
        shape in 0u8..4,
        strategy in 0u8..4,
        long in any::<bool>(),
        tools in any::<bool>(),
        system in 0u8..3,
    ) {
        use threadline_wire::MessageParam;
        let thinking = threadline_testkit::messages::thinking("hmm", "sig");
        let block = |i: usize| match shape {
            0 => ContentBlock::text(format!("block {i}")),
            1 => thinking.clone(),
            2 => ContentBlock::text(""),
            _ => if i.is_multiple_of(2) { thinking.clone() } else { ContentBlock::text(format!("b{i}")) },
        };
        let mut marked = |i: usize| {
            let mut b = block(i);
            if let Some(slot) = b.cache_control_mut() {
                *slot = Some(Box::new(CacheControl::ephemeral()));
            }
            b
        };
        let messages = vec![
            MessageParam::user(vec![ContentBlock::text("start")]),
            MessageParam::assistant((0..blocks).map(&mut marked).collect()),
            MessageParam::user(vec![ContentBlock::text("go on")]),
            MessageParam::assistant((0..blocks.min(40)).map(block).collect()),
        ];
        let setup = Setup {
            tools,
            system,
            automatic: (strategy != 0).then_some(long),
            stale_marker: false,
            cut: 0,
            strategy: 0,
            arbitrary: Vec::new(),
            deferred: 0,
            marked_deferred: false,
        };
        let mut request = request_for(messages, &setup);
        let mut planner = match strategy {
            0 => Planner::new(if long { Automatic::one_hour() } else { Automatic::default() }),
            1 => Planner::new(Seed),
            2 => Planner::new(LookbackAware),
            _ => Planner::new(Stable1h),
        };
        planner.plan(&mut request);
        prop_assert!(request.cache_control.is_some(), "the automatic marker is set");
        let found = markers(&request).map_err(TestCaseError::fail)?;
        prop_assert!(found.len() <= 4, "{} markers: {found:?}", found.len());
        let model = ModelTable::builtin().resolve(sessions::MODEL).model();
        let rules: Vec<threadline_validate::Rule> = validate(&request, model).iter().map(|v| v.rule).collect();
        prop_assert!(!rules.contains(&threadline_validate::Rule::TooManyCacheBreakpoints), "{rules:?}");
        prop_assert!(!rules.contains(&threadline_validate::Rule::AutomaticCacheTtlConflict), "{rules:?}");
        prop_assert!(!rules.contains(&threadline_validate::Rule::CacheTtlOrder), "{rules:?}");
    }

    #[test]
    fn plans_of_hostile_sessions_keep_the_rules(session in hostile_session(), setup in setup()) {
        run(session, setup).map_err(TestCaseError::fail)?;
    }
}

/// One step of a hostile request sequence for the memo property.
#[derive(Debug, Clone)]
enum Step {
    /// The next `n` messages of the session are appended.
    Grow(usize),
    /// The message at (index modulo the length) gets one more text block.
    Edit(usize),
    /// The message at (index modulo the length) is removed.
    Remove(usize),
    /// The message at (index modulo the length) swaps role.
    SwapRole(usize),
    /// The messages at two indices swap places.
    Swap(usize, usize),
    /// The model changes (one that keeps earlier thinking, one that strips it).
    Model(bool),
    /// A caller's marker on the last eligible block of the message at (index modulo the
    /// length).
    Marker(usize),
}

/// A step, and whether a durable worker's next turn starts before it: that turn's planner is
/// a fresh one given the last planner's memo ([`Planner::take_memo`], [`Planner::set_memo`]).
type TurnStep = (Step, bool);

fn steps() -> impl Strategy<Value = Vec<TurnStep>> {
    let step = prop_oneof![
        4 => (1usize..6).prop_map(Step::Grow),
        1 => any::<usize>().prop_map(Step::Edit),
        1 => any::<usize>().prop_map(Step::Remove),
        1 => any::<usize>().prop_map(Step::SwapRole),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Swap(a, b)),
        1 => any::<bool>().prop_map(Step::Model),
        1 => any::<usize>().prop_map(Step::Marker),
    ];
    proptest::collection::vec((step, proptest::bool::weighted(0.2)), 1..24)
}

/// Applies `step` to `messages` (taking appended messages from `rest`).
fn apply(
    step: &Step,
    messages: &mut threadline_wire::Messages,
    rest: &mut std::vec::IntoIter<threadline_wire::MessageParam>,
    model: &mut &'static str,
) {
    use threadline_wire::Role;
    let n = messages.len();
    match *step {
        Step::Grow(k) => messages.extend(rest.by_ref().take(k)),
        Step::Edit(i) if n > 0 => {
            let m = &mut messages[i % n];
            let mut blocks = match std::mem::replace(&mut m.content, Content::Blocks(Vec::new())) {
                Content::Text(text) => vec![ContentBlock::text(text)],
                Content::Blocks(blocks) => blocks,
            };
            blocks.push(ContentBlock::text("edited"));
            m.content = Content::Blocks(blocks);
        }
        Step::Remove(i) if n > 0 => {
            messages.remove(i % n);
        }
        Step::SwapRole(i) if n > 0 => {
            let m = &mut messages[i % n];
            m.role = if m.role == Role::User {
                Role::Assistant
            } else {
                Role::User
            };
        }
        Step::Swap(a, b) if n > 0 => messages.swap(a % n, b % n),
        Step::Model(keeps) => {
            *model = if keeps {
                sessions::MODEL
            } else {
                "claude-next"
            }
        }
        Step::Marker(i) if n > 0 => {
            if let Content::Blocks(blocks) = &mut messages[i % n].content
                && let Some(block) = blocks
                    .iter_mut()
                    .rev()
                    .find(|b| threadline_cache::prefix::is_eligible(b))
                && let Some(slot) = block.cache_control_mut()
            {
                *slot = Some(Box::new(CacheControl::ephemeral()));
            }
        }
        _ => {}
    }
}

/// The planner's memo and [`threadline_cache::Prefix::of_in_memoized`] never change a result:
/// over a sequence of requests that grow, edit, remove, reorder and re-role messages, switch
/// between a model that keeps earlier thinking and one that strips it, and carry callers'
/// markers, each planned request's flattened form (what the strategy saw, with the markers
/// placed) is what flattening the sent request from scratch gives, and a memoized flattening
/// of the raw request equals a fresh one. And a planner made fresh at a turn's start but given
/// the last planner's memo (as a durable worker's is) plans every request byte for byte as a
/// planner made fresh without it.
fn memo_run(
    session: Vec<threadline_message::Message>,
    steps: Vec<TurnStep>,
    setup: Setup,
) -> Result<(), String> {
    use threadline_cache::{Estimate, Prefix, PrefixMemo};
    let normalized = normalize(&session, &Options::default()).messages;
    let mut rest = normalized.into_iter();
    // Shared from request to request, as the loop's are: an edit copies the message it
    // changes (the planner and the memo hold the others).
    let mut messages: threadline_wire::Messages = rest.by_ref().take(2).collect();
    let mut model: &'static str = sessions::MODEL;
    let mut planner = Planner::default();
    // Made fresh at the same turns, never given a memo.
    let mut reference = Planner::default();
    let mut memo = PrefixMemo::new();
    let table = ModelTable::builtin();
    for (i, (step, next_turn)) in steps.iter().enumerate() {
        if *next_turn {
            let carried = planner.take_memo();
            planner = Planner::default();
            planner.set_memo(carried);
            reference = Planner::default();
        }
        apply(step, &mut messages, &mut rest, &mut model);
        let mut request = request_for(messages.clone(), &setup);
        request.model = model.to_owned();
        let fresh = Prefix::of_in(&request, &Estimate, Default::default(), table);
        let memoized =
            Prefix::of_in_memoized(&request, &Estimate, Default::default(), table, &mut memo);
        if memoized != fresh {
            return Err(format!(
                "step {i} ({step:?}): the memoized flattening differs"
            ));
        }
        if memo.len() != request.messages.len() {
            return Err(format!(
                "step {i}: the memo holds {} messages, not {}",
                memo.len(),
                request.messages.len()
            ));
        }
        let mut unrecorded = request.clone();
        planner.plan_unrecorded(&mut unrecorded);
        let mut without_memo = request.clone();
        reference.plan(&mut without_memo);
        planner.plan(&mut request);
        if unrecorded != request {
            return Err(format!(
                "step {i} ({step:?}): plan_unrecorded placed other markers than plan"
            ));
        }
        let bytes = |r: &MessagesRequest| serde_json::to_vec(r).map_err(|e| e.to_string());
        if bytes(&request)? != bytes(&without_memo)? {
            return Err(format!(
                "step {i} ({step:?}): a carried memo changed the planned request"
            ));
        }
        if planner.planned_prefix() != reference.planned_prefix() {
            return Err(format!(
                "step {i} ({step:?}): a carried memo changed what the planner recorded"
            ));
        }
        let sent = Prefix::of_in(&request, &Estimate, Default::default(), table);
        if planner.planned_prefix() != Some(&sent) {
            return Err(format!(
                "step {i} ({step:?}): the planner's view is not the sent request's"
            ));
        }
    }
    Ok(())
}

// The default configuration: 256 cases, or `PROPTEST_CASES`.
proptest! {
    #[test]
    fn the_memo_never_changes_a_flattening_or_a_plan(
        session in hostile_session(),
        steps in steps(),
        setup in setup(),
    ) {
        memo_run(session, steps, setup).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn plain_planned_requests_have_no_violation() {
    let model = ModelTable::builtin().resolve(sessions::MODEL).model();
    let messages = sessions::generated_messages(300, 9, 4);
    let mut planner = Planner::default();
    for r in threadline_normalize::implied_requests(&messages) {
        let mut request = MessagesRequest::new(sessions::MODEL, 1024, r.messages);
        request.tools = Some(sessions::agent_tools());
        planner.plan(&mut request);
        let flat =
            threadline_cache::Prefix::of(&request, &threadline_cache::Estimate, Default::default());
        assert_eq!(
            planner.planned_prefix(),
            Some(&flat),
            "the planner's view is the request's"
        );
        let violations = validate(&request, model);
        assert!(violations.is_empty(), "{violations:?}");
        assert!(markers(&request).expect("well placed").len() <= 4);
    }
}

#[test]
fn markers_walk_back_over_thinking_and_empty_text() {
    use threadline_wire::MessageParam;
    let thinking = threadline_testkit::messages::thinking("hmm", "sig");
    let mut request = MessagesRequest::new(
        sessions::MODEL,
        1024,
        vec![
            MessageParam::user(vec![ContentBlock::text("hi")]),
            MessageParam::assistant(vec![ContentBlock::text("answer"), thinking.clone()]),
        ],
    );
    let plan = Planner::new(Seed).plan(&mut request);
    assert_eq!(
        plan.locations,
        [threadline_cache::Location::Message {
            message: 1,
            block: 0
        }]
    );
    let mut empty = MessagesRequest::new(
        sessions::MODEL,
        1024,
        vec![MessageParam::user(vec![
            ContentBlock::text("question"),
            ContentBlock::text(""),
        ])],
    );
    let plan = Planner::new(Seed).plan(&mut empty);
    assert_eq!(
        plan.locations,
        [threadline_cache::Location::Message {
            message: 0,
            block: 0
        }]
    );
}

#[test]
fn the_tools_marker_goes_on_the_last_tool_that_is_not_deferred() {
    use threadline_wire::MessageParam;
    let messages = vec![MessageParam::user(vec![ContentBlock::text("hi")])];
    let mut tools = sessions::agent_tools();
    assert!(tools.len() >= 2, "the agent has tools to defer");
    let last = tools.len() - 1;
    defer(&mut tools[last]);
    // A marker the caller left on the deferred tool (the 400 Claude Code users met).
    *tools[last].cache_control_mut() = Some(Box::new(CacheControl::ephemeral()));
    let mut request = MessagesRequest::new(sessions::MODEL, 1024, messages.clone());
    request.tools = Some(tools.clone());
    let plan = Planner::new(Seed).plan(&mut request);
    assert!(
        plan.locations
            .contains(&threadline_cache::Location::Tool { index: last - 1 }),
        "{plan:?}"
    );
    let tools_now = request.tools.as_deref().unwrap_or_default();
    assert!(tools_now[last].cache_control().is_none());
    let model = ModelTable::builtin().resolve(sessions::MODEL).model();
    assert_eq!(validate(&request, model), []);

    // Every tool deferred: no tool marker at all; set_marker refuses one.
    for tool in &mut tools {
        defer(tool);
    }
    let mut request = MessagesRequest::new(sessions::MODEL, 1024, messages);
    request.tools = Some(tools);
    let plan = Planner::new(Seed).plan(&mut request);
    assert!(
        !plan
            .locations
            .iter()
            .any(|l| matches!(l, threadline_cache::Location::Tool { .. })),
        "{plan:?}"
    );
    assert!(!threadline_cache::prefix::set_marker(
        &mut request,
        threadline_cache::Location::Tool { index: 0 },
        Ttl::FiveMinutes
    ));
    assert!(
        request
            .tools
            .iter()
            .flatten()
            .all(|t| t.cache_control().is_none())
    );
}

/// A turn-scoped system message (`clear_at: "next_user_message"`) takes no marker on any
/// block, whatever the strategy, and the automatic marker passes over it
/// (docs/api-notes.md#mid-conversation-system-messages): every plan of a request ending with
/// one passes the validator.
#[test]
fn a_turn_scoped_system_message_never_takes_a_marker() {
    use threadline_wire::MessageParam;
    let reminder: MessageParam = serde_json::from_value(serde_json::json!({
        "role": "system", "clear_at": "next_user_message",
        "content": [{"type": "text", "text": "Answer in one line."}]
    }))
    .expect("a message");
    let messages = vec![
        MessageParam::user(vec![ContentBlock::text("Read the log")]),
        MessageParam::assistant(vec![ContentBlock::text("It is long.")]),
        MessageParam::user(vec![ContentBlock::text("Summarize it")]),
        reminder,
    ];
    // A model that takes system-role messages.
    const MODEL: &str = "claude-opus-5-5";
    let model = ModelTable::builtin().resolve(MODEL).model();
    for strategy in [0u8, 1, 2, 4, 5] {
        let setup = Setup {
            tools: true,
            system: 2,
            automatic: None,
            stale_marker: false,
            cut: 0,
            strategy,
            arbitrary: Vec::new(),
            deferred: 0,
            marked_deferred: false,
        };
        let mut request = request_for(messages.clone(), &setup);
        request.model = MODEL.to_owned();
        let mut planner = match strategy {
            0 => Planner::new(Seed),
            1 => Planner::new(LookbackAware),
            2 => Planner::new(Stable1h),
            4 => Planner::new(Automatic::default()),
            _ => Planner::new(Automatic::one_hour()),
        }
        .with_static_system(Some(1));
        planner.plan(&mut request);
        let Content::Blocks(blocks) = &request.messages[3].content else {
            panic!("blocks");
        };
        assert!(
            blocks.iter().all(|b| b.cache_control().is_none()),
            "strategy {strategy}"
        );
        let violations: Vec<String> = validate(&request, model)
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert!(violations.is_empty(), "strategy {strategy}: {violations:?}");
    }
}
