//! The loop's explicit state: everything one iteration hands to the next.

use serde::{Deserialize, Serialize};
use threadline_message::{Message, MessageId, SystemKind};
use threadline_normalize::{Normalizer, Options};

use crate::transition::Transition;

/// What compaction has done in this session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionTracking {
    /// Compactions so far (auto and reactive).
    pub compactions: u32,
    /// The turn of the last compaction.
    pub last_compaction_turn: Option<u32>,
    /// The index in the history of the first message after the last `compact_boundary`
    /// (0 when there is none): the model sees `messages[boundary..]`.
    pub boundary: usize,
    /// Compactions that failed (or did not shrink the context) in a row: the circuit
    /// breaker's count, kept with the session so that it survives runs, processes and a
    /// durable session's failover (at `CircuitBreaker::LIMIT` compaction stops being tried).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures_in_a_row: u32,
    /// Compactions in a row, within one run, each of which came within one turn of the one
    /// before: the context refilled as soon as it was compacted. At [`MAX_REFILLS_IN_A_ROW`] the loop
    /// stops ([`Terminal::CompactionThrashing`](crate::Terminal::CompactionThrashing))
    /// instead of compacting every turn.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refills_in_a_row: u32,
    /// Whether the API refused a thinking block of this context as bound to a different
    /// conversation: until the next compaction boundary, every request asks the API to drop
    /// such blocks (`thinking.block_binding.prefix_mismatch_behavior: "drop_block"`), the
    /// last resort ([`Transition::ThinkingDropBlockRetry`](crate::Transition::ThinkingDropBlockRetry)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_unbound_thinking: bool,
}

/// Compactions in a row, each within one turn of the last, after which the loop stops.
pub const MAX_REFILLS_IN_A_ROW: u32 = 3;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Recovery counters. The per-turn ones are reset when a turn succeeds with tool use
/// ([`RecoveryCounters::end_turn`]); [`stop_hook_blocks`](Self::stop_hook_blocks) and
/// [`budget_continuations`](Self::budget_continuations) count the whole run and are reset
/// only where a run begins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecoveryCounters {
    /// "Resume directly" messages injected since the last successful turn.
    pub max_output_tokens_recovery_count: u32,
    /// Whether the output limit was already escalated.
    pub escalated: bool,
    /// Whether draining was already tried for a too-long prompt.
    pub has_attempted_drain: bool,
    /// Whether reactive compaction was already tried for a too-long prompt.
    pub has_attempted_reactive_compact: bool,
    /// Stop-hook blocks in this run (not reset by a turn with tool use, so a hook that
    /// always blocks ends the run at `QueryConfig::max_stop_hook_blocks`).
    pub stop_hook_blocks: u32,
    /// Token-budget continuations in this run (not reset by a turn with tool use, so
    /// `TokenBudget::max_continuations` caps the run).
    pub budget_continuations: u32,
    /// Paused turns (`pause_turn`) resumed since the last turn that used client tools.
    #[serde(default)]
    pub pause_turn_resumes: u32,
    /// Whether compaction was already tried for an output cut at the context window.
    #[serde(default)]
    pub has_attempted_window_compact: bool,
    /// "Resume directly" messages injected after outputs cut at the context window
    /// (`model_context_window_exceeded`) since the last turn that used client tools.
    #[serde(default)]
    pub context_window_recoveries: u32,
}

impl RecoveryCounters {
    /// Resets what counts since the last successful turn, keeping the per-run counts
    /// (stop-hook blocks, token-budget continuations): called when a turn succeeds with
    /// tool use.
    pub fn end_turn(&mut self) {
        *self = RecoveryCounters {
            stop_hook_blocks: self.stop_hook_blocks,
            budget_continuations: self.budget_continuations,
            ..RecoveryCounters::default()
        };
    }
}

/// The loop's state between iterations. Serializable (a durable engine can journal it); the
/// normalizer's cache is not serialized and is rebuilt by the first iteration after loading.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct State {
    /// The whole history, the session's source of truth.
    pub messages: Vec<Message>,
    /// Completed turns (one per model response that used tools, or that the API paused), over
    /// the session.
    pub turn_count: u32,
    /// Turns completed in the current run (what `max_turns` counts).
    pub run_turns: u32,
    /// Compaction tracking.
    pub compaction: CompactionTracking,
    /// Recovery counters.
    pub recovery: RecoveryCounters,
    /// The output limit in force instead of the configured one (after an escalation).
    pub max_output_tokens_override: Option<u64>,
    /// Whether the last continuation came from a stop hook.
    pub stop_hook_active: bool,
    /// Output tokens the model produced in the current run (what the token budget counts).
    pub output_tokens: u64,
    /// Output tokens at the last token-budget continuation.
    pub output_tokens_at_last_continuation: u64,
    /// Why the last iteration continued.
    pub transition: Option<Transition>,
    /// Every transition taken in this run, in order.
    pub path: Vec<Transition>,
    /// The id of the last complete response of the session, for cache diagnostics'
    /// `previous_message_id` (`None`: the next request opts in with `null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_message_id: Option<String>,
    #[serde(skip, default = "fresh_normalizer")]
    pub(crate) normalizer: Normalizer,
    /// What the last run's start derived the visible window from (not serialized: a loaded
    /// state scans its history once).
    #[serde(skip)]
    pub(crate) boundary_seen: BoundarySeen,
    /// See [`State::unchanged_prefix`] (not serialized: a loaded state claims nothing).
    #[serde(skip)]
    pub(crate) unchanged: usize,
    /// The visible history's estimate for the compaction events (not serialized: a loaded
    /// state counts its history once, when someone listens).
    #[serde(skip)]
    pub(crate) visible_tokens: crate::telemetry::VisibleTokens,
}

/// The history a run's start last found the compaction boundary in: its length, the ids of its
/// first and last messages and of the boundary (`None` without one). When the history still has those
/// ids there, only the messages appended since are scanned, so a run's start costs what was
/// appended, not the history. (As for the normalizer, a caller that edits a message in place
/// keeping its id builds a new [`State`].)
#[derive(Debug, Clone, Default)]
pub(crate) struct BoundarySeen {
    len: usize,
    first: Option<MessageId>,
    last: Option<MessageId>,
    boundary: usize,
    boundary_id: Option<MessageId>,
}

impl BoundarySeen {
    /// The index after the last compaction boundary of `messages` (0 without one).
    fn boundary(&mut self, messages: &[Message]) -> usize {
        let id = |i: usize| messages.get(i).map(Message::id);
        let same = self.len > 0
            && messages.len() >= self.len
            && id(0) == self.first.as_ref()
            && id(self.len - 1) == self.last.as_ref()
            && match (&self.boundary_id, self.boundary) {
                (None, 0) => true,
                (Some(boundary), n) if n > 0 => {
                    id(n - 1) == Some(boundary) && is_compact_boundary(&messages[n - 1])
                }
                _ => false,
            };
        let boundary = if same {
            messages[self.len..]
                .iter()
                .rposition(is_compact_boundary)
                .map_or(self.boundary, |i| self.len + i + 1)
        } else {
            boundary_after(messages)
        };
        *self = BoundarySeen {
            len: messages.len(),
            first: messages.first().map(|m| m.id().clone()),
            last: messages.last().map(|m| m.id().clone()),
            boundary,
            boundary_id: boundary.checked_sub(1).and_then(id).cloned(),
        };
        boundary
    }
}

fn fresh_normalizer() -> Normalizer {
    Normalizer::new(loop_normalize_options(&Options::default()))
}

/// The normalization options the loop runs with: the caller's, with paused turns always
/// resumed ([`Transition::PauseTurnResume`](crate::Transition::PauseTurnResume) sends a paused
/// turn back as it came, its running server tool call included), and only what follows the
/// last server-side `compaction` block sent (the API ignores what precedes it).
pub(crate) fn loop_normalize_options(options: &Options) -> Options {
    options
        .clone()
        .with_resume_paused_turn(true)
        .with_from_last_compaction(true)
}

impl State {
    /// The state of a session whose history is `messages` (empty for a new session).
    pub fn new(messages: Vec<Message>) -> State {
        let boundary = boundary_after(&messages);
        State {
            messages,
            turn_count: 0,
            run_turns: 0,
            compaction: CompactionTracking {
                boundary,
                ..CompactionTracking::default()
            },
            recovery: RecoveryCounters::default(),
            max_output_tokens_override: None,
            stop_hook_active: false,
            output_tokens: 0,
            output_tokens_at_last_continuation: 0,
            transition: None,
            path: Vec::new(),
            previous_message_id: None,
            normalizer: fresh_normalizer(),
            boundary_seen: BoundarySeen::default(),
            unchanged: 0,
            visible_tokens: crate::telemetry::VisibleTokens::default(),
        }
    }

    /// The visible history's estimate when compaction events are recorded (see
    /// [`VisibleTokens`](crate::telemetry::VisibleTokens)).
    pub(crate) fn traced_tokens(&mut self) -> Option<u64> {
        self.visible_tokens
            .traced(&self.messages, self.compaction.boundary)
    }

    /// The visible history's estimate (see
    /// [`VisibleTokens`](crate::telemetry::VisibleTokens)).
    pub(crate) fn visible_tokens(&mut self) -> u64 {
        self.visible_tokens
            .of(&self.messages, self.compaction.boundary)
    }

    /// How many leading messages of the history are exactly the ones the current (or last)
    /// run started with: the run appended after them and no context step changed them in
    /// place (a step that does reports where, [`StepOutcome::first_rewritten`]). A caller
    /// that stores the history message by message — the durable worker — writes only the
    /// messages from here on. 0 for a state no run has used.
    ///
    /// [`StepOutcome::first_rewritten`]: crate::StepOutcome::first_rewritten
    pub fn unchanged_prefix(&self) -> usize {
        self.unchanged.min(self.messages.len())
    }

    /// Applies an [`Event::Rewritten`](crate::Event::Rewritten) to a state kept from a run's
    /// events: `message` takes the place of the message at `index` when that is the same
    /// message (the same id), noted as an edit in place. Whether it was applied.
    pub fn rewrite(&mut self, index: usize, message: Message) -> bool {
        match self.messages.get_mut(index) {
            Some(slot) if slot.id() == message.id() => {
                *slot = message;
                self.note_rewritten(index);
                true
            }
            _ => false,
        }
    }

    /// Notes a context step's edit in place from message `first` on: the normalizer starts
    /// over, the kept estimate is forgotten, and the unchanged prefix ends there at most.
    pub(crate) fn note_rewritten(&mut self, first: usize) {
        self.normalizer.reset();
        self.visible_tokens.forget();
        self.unchanged = self.unchanged.min(first);
    }

    /// Keeps the unchanged prefix within the history: a step holds the whole array, and a
    /// history it shortened is not the run's start, even once it has grown again.
    pub(crate) fn note_length(&mut self) {
        self.unchanged = self.unchanged.min(self.messages.len());
    }

    /// What the model sees: the messages after the last compaction boundary.
    pub fn visible(&self) -> &[Message] {
        let start = self.compaction.boundary.min(self.messages.len());
        &self.messages[start..]
    }

    /// Resets what is per-run (turn count for `max_turns`, the path, budgets, hook counts),
    /// keeping the history: called at the start of every run.
    pub(crate) fn begin_run(&mut self) {
        self.unchanged = self.messages.len();
        self.run_turns = 0;
        self.output_tokens = 0;
        self.output_tokens_at_last_continuation = 0;
        self.path.clear();
        self.transition = None;
        self.stop_hook_active = false;
        self.recovery = RecoveryCounters::default();
        self.max_output_tokens_override = None;
        // A deserialized state, or one whose messages the caller replaced: re-derive.
        self.compaction.boundary = self.boundary_seen.boundary(&self.messages);
        // Thrashing is counted within a run: a new prompt is the user's word to go on, and
        // a run stopped for thrashing must not make every later run stop at its first
        // compaction.
        self.compaction.refills_in_a_row = 0;
    }

    /// Records a continuation.
    pub(crate) fn record(&mut self, transition: Transition) {
        self.transition = Some(transition);
        self.path.push(transition);
    }

    /// Notes a message appended at `index`: a compaction boundary moves the visible window.
    pub(crate) fn note_appended(&mut self, index: usize) {
        if self.messages.get(index).is_some_and(is_compact_boundary) {
            let tracking = &mut self.compaction;
            tracking.boundary = index + 1;
            tracking.compactions += 1;
            let refilled = tracking
                .last_compaction_turn
                .is_some_and(|last| self.turn_count <= last.saturating_add(1));
            tracking.refills_in_a_row = if refilled {
                tracking.refills_in_a_row.saturating_add(1)
            } else {
                1
            };
            tracking.last_compaction_turn = Some(self.turn_count);
            // The thinking bound to the replaced prefix is no longer sent.
            tracking.drop_unbound_thinking = false;
        }
    }
}

impl Default for State {
    fn default() -> Self {
        State::new(Vec::new())
    }
}

/// Whether `message` is a `compact_boundary` system message.
pub fn is_compact_boundary(message: &Message) -> bool {
    matches!(message, Message::System(s) if matches!(s.kind, SystemKind::CompactBoundary { .. }))
}

fn boundary_after(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(is_compact_boundary)
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_message::CompactTrigger;

    #[test]
    fn a_rewrite_takes_the_place_of_the_same_message_only() {
        let mut state = State {
            messages: vec![Message::user_text("a"), Message::user_text("b")],
            ..State::default()
        };
        state.unchanged = 2;
        let mut preview = state.messages[1].clone();
        if let Message::User(user) = &mut preview {
            user.content = vec![threadline_wire::ContentBlock::text("b, shorter")];
        }
        // Another message's id at that index: nothing changes.
        assert!(!state.rewrite(0, preview.clone()));
        assert!(!state.rewrite(5, preview.clone()));
        assert_eq!(state.unchanged_prefix(), 2);
        assert!(state.rewrite(1, preview.clone()));
        assert_eq!(state.messages[1], preview);
        assert_eq!(state.unchanged_prefix(), 1);
    }

    #[test]
    fn the_visible_window_starts_after_the_last_boundary() {
        let boundary = Message::system(SystemKind::CompactBoundary {
            trigger: CompactTrigger::Auto,
            pre_tokens: 10,
            last_message_id: None,
        });
        let state = State::new(vec![
            Message::user_text("old"),
            boundary,
            Message::compact_summary("summary"),
        ]);
        assert_eq!(state.compaction.boundary, 2);
        assert_eq!(state.visible().len(), 1);
    }

    #[test]
    fn a_run_start_finds_the_boundary_in_what_was_appended_or_rescans_a_replaced_history() {
        let boundary = || {
            Message::system(SystemKind::CompactBoundary {
                trigger: CompactTrigger::Auto,
                pre_tokens: 10,
                last_message_id: None,
            })
        };
        let mut state = State::new(vec![Message::user_text("a"), Message::user_text("b")]);
        state.begin_run();
        assert_eq!(state.compaction.boundary, 0);
        state.messages.push(boundary());
        state.messages.push(Message::compact_summary("summary"));
        state.begin_run();
        assert_eq!(state.compaction.boundary, 3);
        state.messages.push(Message::user_text("c"));
        state.begin_run();
        assert_eq!(state.compaction.boundary, 3);
        // Replaced: the boundary is gone, the last id differs.
        state.messages = vec![Message::user_text("x"), Message::user_text("y")];
        state.begin_run();
        assert_eq!(state.compaction.boundary, 0);
        // Replaced by a longer history that keeps the last seen message but not the boundary
        // seen: scanned again.
        let kept = state.messages[1].clone();
        state.messages = vec![boundary(), kept.clone(), Message::user_text("z")];
        state.begin_run();
        assert_eq!(state.compaction.boundary, 1);
        let mut other = vec![Message::user_text("w"), kept];
        other.push(Message::user_text("v"));
        state.messages = other;
        state.begin_run();
        assert_eq!(
            state.compaction.boundary, 0,
            "the boundary seen is no longer there"
        );
    }

    #[test]
    fn a_state_journaled_before_the_pause_counter_still_loads() {
        let state = State::new(vec![Message::user_text("hi")]);
        let mut json = serde_json::to_value(&state).expect("serializes");
        let removed = json["recovery"]
            .as_object_mut()
            .and_then(|recovery| recovery.remove("pause_turn_resumes"));
        assert_eq!(removed, Some(serde_json::json!(0)));
        let back: State = serde_json::from_value(json).expect("an older journal parses");
        assert_eq!(back.recovery.pause_turn_resumes, 0);
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut state = State::new(vec![Message::user_text("hi")]);
        state.record(Transition::NextTurn);
        state.turn_count = 3;
        let json = serde_json::to_string(&state).expect("serializes");
        let back: State = serde_json::from_str(&json).expect("parses");
        assert_eq!(back.messages, state.messages);
        assert_eq!(back.path, vec![Transition::NextTurn]);
        assert_eq!(back.turn_count, 3);
        assert_eq!(back.previous_message_id, None);
        let mut diagnosed = state;
        diagnosed.previous_message_id = Some("msg_7".into());
        let json = serde_json::to_string(&diagnosed).expect("serializes");
        let back: State = serde_json::from_str(&json).expect("parses");
        assert_eq!(back.previous_message_id.as_deref(), Some("msg_7"));
    }
}
