//! Where the `cache_control` markers go.
//!
//! A [`Planner`] owns the markers of the requests of one session: it clears whatever markers a
//! request carries, asks its [`Strategy`] where to put them (given the request and what the
//! previous request looked like), and applies the choice under the API's rules:
//!
//! * a marker goes on the **last eligible block** of the chosen message — never on thinking or
//!   redacted thinking, never on an empty text block (the planner walks back);
//! * never on a tool sent with `defer_loading: true`: the API answers 400 `Tool '<name>' cannot
//!   have both defer_loading=true and cache_control set.` Deferred tools are not pieces of the
//!   [`Prefix`], so the tools marker lands on the last tool that is not deferred (none when
//!   every tool is deferred), and [`set_marker`] refuses one; markers a caller left on them
//!   are cleared;
//! * at most **4** markers in all, across tools, system and messages, the top-level automatic
//!   marker counting as one;
//! * `1h` markers never come after `5m` ones (a strategy asking otherwise gets `5m`).
//!
//! Strategies:
//! * [`Seed`] — the seed's layout: a stable marker on the last tool, one on the static system
//!   prefix, and one moving marker on the last message.
//! * [`LookbackAware`] (the default) — the same, plus a second moving marker on the latest
//!   block an earlier request marked whose prefix is still unchanged, when it is 20 blocks or
//!   more before the new last block — out of the API's lookback, so the new marker alone
//!   would not find that write and the whole conversation would be written again. Usually
//!   that is the previous request's last marked block (a turn that added more than 20
//!   blocks); after a rewrite (a model that drops earlier thinking when a new user turn
//!   starts, an edit) it is the latest write before the change. It places exactly what
//!   [`Seed`] places whenever that is not losing anything.
//! * [`Stable1h`] — [`LookbackAware`] with the tools and system markers at `1h`, for sessions
//!   with idle gaps between five minutes and an hour.
//! * [`Automatic`](crate::Automatic) — the top-level automatic marker for the tail (it lands on
//!   the last cacheable block), explicit markers on the tools and the static system block and
//!   the lookback bridge; the planner counts the automatic one in the four.

use threadline_wire::MessagesRequest;
use threadline_wire::model::SharedModelTable;

use crate::memo::{MemoUse, PrefixMemo};
use crate::prefix::{Location, Prefix, Ttl, set_marker};
use crate::tokens::{Estimate, TokenCounter};

/// The API's limit on markers per request.
pub const MAX_MARKERS: usize = 4;
/// How many blocks back from a marker the API looks for an earlier write (the marked block
/// included).
pub const LOOKBACK: usize = 20;

/// One marker a strategy asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// The piece (index into [`Prefix::pieces`]).
    pub position: usize,
    /// Its lifetime.
    pub ttl: Ttl,
}

/// What a strategy sees.
#[derive(Debug)]
pub struct StrategyInput<'a> {
    /// The request flattened (markers cleared; the unseen prefix, if any, first).
    pub prefix: &'a Prefix,
    /// The index of the static system block (the last system block unless the caller said).
    pub static_system: Option<usize>,
    /// The previous request of the session, as planned.
    pub previous: Option<&'a Previous>,
    /// The message blocks earlier requests of the session marked, with the prefix hash they
    /// had then, oldest first (the latest [`HISTORY`]).
    pub written: &'a [(usize, u64)],
    /// How many markers the strategy may place (4, minus one for automatic caching).
    pub budget: usize,
}

/// How many earlier message markers the planner remembers.
pub const HISTORY: usize = 64;

/// What the planner remembers of the previous request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    /// Its flattened form (with the markers it got).
    pub prefix: Prefix,
    /// The markers it got.
    pub marks: Vec<Mark>,
}

impl Previous {
    /// The position of its last marker on a message block.
    pub fn last_message_mark(&self) -> Option<usize> {
        self.marks
            .iter()
            .rev()
            .find(|m| {
                matches!(
                    self.prefix.pieces[m.position].location,
                    Location::Message { .. }
                )
            })
            .map(|m| m.position)
    }
}

/// A placement strategy.
pub trait Strategy: std::fmt::Debug + Send + Sync {
    /// A short stable name (used in benchmark output).
    fn name(&self) -> &'static str;
    /// The markers to place, in any order; the planner enforces the rules.
    fn place(&self, input: &StrategyInput<'_>) -> Vec<Mark>;
    /// The top-level automatic marker the strategy puts on every request (it takes one of the
    /// four slots); `None` (the default) leaves the request's own top-level marker as it is.
    fn automatic(&self) -> Option<Ttl> {
        None
    }
}

/// The last eligible piece at or before `end`, within the same message when `end` is a
/// message block (walking back over thinking and empty text), else any eligible piece.
pub fn last_eligible_at_or_before(prefix: &Prefix, end: usize) -> Option<usize> {
    (0..=end).rev().find(|&i| prefix.pieces[i].eligible)
}

/// The stable markers of the seed's layout: the last tool that is not deferred (deferred tools
/// are not in the prefix) and the static system block.
pub(crate) fn stable_marks(input: &StrategyInput<'_>, ttl: Ttl) -> Vec<Mark> {
    // Tools and system blocks come before the messages: only those pieces are looked at.
    let head = input
        .prefix
        .first_message_piece()
        .unwrap_or(input.prefix.pieces.len());
    let pieces = &input.prefix.pieces[..head];
    let mut marks = Vec::new();
    if let Some(last_tool) = pieces
        .iter()
        .rposition(|p| matches!(p.location, Location::Tool { .. }))
    {
        marks.push(Mark {
            position: last_tool,
            ttl,
        });
    }
    let system = match input.static_system {
        Some(index) => pieces
            .iter()
            .position(|p| p.location == Location::System { index }),
        None => pieces
            .iter()
            .rposition(|p| matches!(p.location, Location::System { .. })),
    };
    if let Some(position) = system.filter(|&p| pieces[p].eligible) {
        marks.push(Mark { position, ttl });
    }
    marks
}

/// The moving marker: the last eligible block of the last message.
fn moving_mark(prefix: &Prefix) -> Option<Mark> {
    let first = prefix.first_message_piece()?;
    let last = prefix.pieces.len().checked_sub(1)?;
    last_eligible_at_or_before(prefix, last)
        .filter(|&p| p >= first)
        .map(|position| Mark {
            position,
            ttl: Ttl::FiveMinutes,
        })
}

/// The seed's layout: stable markers on the tools and the static system prefix, one moving
/// marker on the last message.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seed;

impl Strategy for Seed {
    fn name(&self) -> &'static str {
        "seed"
    }

    fn place(&self, input: &StrategyInput<'_>) -> Vec<Mark> {
        let mut marks = stable_marks(input, Ttl::FiveMinutes);
        marks.extend(moving_mark(input.prefix));
        marks
    }
}

/// The extra marker that keeps an earlier write within the lookback: on the latest message
/// block an earlier request marked whose prefix is unchanged, when the new moving marker is
/// [`LOOKBACK`] or more pieces after it (nearer, the moving marker's own lookback finds it).
pub(crate) fn bridge_mark(input: &StrategyInput<'_>, moving: Option<Mark>) -> Option<Mark> {
    let moving = moving?;
    let latest = input
        .written
        .iter()
        .filter(|&&(p, hash)| {
            p < moving.position
                && input
                    .prefix
                    .pieces
                    .get(p)
                    .is_some_and(|now| now.prefix_hash == hash && now.eligible)
        })
        .map(|&(p, _)| p)
        .max()?;
    (moving.position >= latest + LOOKBACK).then_some(Mark {
        position: latest,
        ttl: Ttl::FiveMinutes,
    })
}

/// The seed's layout plus a second moving marker when a request grew by more than the
/// lookback (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct LookbackAware;

impl Strategy for LookbackAware {
    fn name(&self) -> &'static str {
        "lookback_aware"
    }

    fn place(&self, input: &StrategyInput<'_>) -> Vec<Mark> {
        let mut marks = stable_marks(input, Ttl::FiveMinutes);
        let moving = moving_mark(input.prefix);
        if let Some(bridge) = bridge_mark(input, moving) {
            marks.push(bridge);
        }
        marks.extend(moving);
        marks
    }
}

/// [`LookbackAware`] with `1h` markers on the tools and the static system block.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stable1h;

impl Strategy for Stable1h {
    fn name(&self) -> &'static str {
        "stable_1h"
    }

    fn place(&self, input: &StrategyInput<'_>) -> Vec<Mark> {
        let mut marks = stable_marks(input, Ttl::OneHour);
        let moving = moving_mark(input.prefix);
        if let Some(bridge) = bridge_mark(input, moving) {
            marks.push(bridge);
        }
        marks.extend(moving);
        marks
    }
}

/// What one call of [`Planner::plan`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The markers placed, in prefix order.
    pub marks: Vec<Mark>,
    /// Where each is.
    pub locations: Vec<Location>,
}

/// Places markers on the requests of one session.
#[derive(Debug)]
pub struct Planner {
    strategy: Box<dyn Strategy>,
    static_system: Option<usize>,
    previous: Option<Previous>,
    written: Vec<(usize, u64)>,
    /// The next request keeps the previous request's last message marker where its prefix
    /// is unchanged (a fork's first request: see [`Planner::forked`]).
    keep_previous_mark: bool,
    /// Where the requests' models are looked up (the built-in table by default).
    models: SharedModelTable,
    /// What flattening the last planned request's messages gave, reused for the messages the
    /// next request repeats unchanged.
    memo: PrefixMemo,
}

impl Default for Planner {
    fn default() -> Self {
        Planner::new(LookbackAware)
    }
}

impl Planner {
    /// A planner using `strategy`.
    pub fn new(strategy: impl Strategy + 'static) -> Self {
        Planner {
            strategy: Box::new(strategy),
            static_system: None,
            previous: None,
            written: Vec::new(),
            keep_previous_mark: false,
            models: SharedModelTable::builtin(),
            memo: PrefixMemo::new(),
        }
    }

    /// Looks the requests' models up in `models` instead of the built-in table (whether a
    /// model strips earlier turns' thinking decides which blocks can be cached).
    pub fn with_models(mut self, models: impl Into<SharedModelTable>) -> Self {
        self.models = models.into();
        self
    }

    /// The model table the requests' models are looked up in.
    pub fn models(&self) -> &SharedModelTable {
        &self.models
    }

    /// Says which system block is the static (globally cacheable) prefix, as
    /// [`crate::system::SystemBlocks::static_index`] reports it.
    pub fn with_static_system(mut self, index: Option<usize>) -> Self {
        self.static_system = index;
        self
    }

    /// The strategy's name.
    pub fn strategy_name(&self) -> &'static str {
        self.strategy.name()
    }

    /// The last planned request flattened with its markers, as [`Prefix::of_in`] gives it with
    /// the [`Estimate`], no unseen prefix and the planner's model table: a simulator with the same settings can take it
    /// ([`crate::Simulator::step_prefix`]) instead of flattening the request again.
    pub fn planned_prefix(&self) -> Option<&Prefix> {
        self.previous.as_ref().map(|p| &p.prefix)
    }

    /// A planner with `strategy` for a conversation forked from this one's session (a
    /// forked subagent, whose first request extends this session's last one): it knows the
    /// previous request and the markers written, and its first request keeps the previous
    /// request's last message marker where the prefix up to it is unchanged, so the fork's
    /// request is the parent's byte for byte, markers included, up to the fork point.
    pub fn forked(&self, strategy: impl Strategy + 'static) -> Planner {
        Planner {
            strategy: Box::new(strategy),
            static_system: self.static_system,
            previous: self.previous.clone(),
            written: self.written.clone(),
            keep_previous_mark: true,
            models: self.models.clone(),
            // A fork's first request flattens its messages once (no copy of this memo).
            memo: PrefixMemo::new(),
        }
    }

    /// Hands over what flattening the requests planned so far gave (the [`PrefixMemo`]),
    /// leaving this planner none: for a planner that plans the same conversation's next
    /// requests ([`set_memo`](Self::set_memo)), such as a durable worker's planner of the next
    /// turn. The memo's recycled buffer (an allocation, no fact) stays behind: a memo kept
    /// between turns holds only what saves work.
    pub fn take_memo(&mut self) -> PrefixMemo {
        let mut memo = std::mem::take(&mut self.memo);
        memo.spare = Vec::new();
        memo
    }

    /// Starts from `memo` (what [`take_memo`](Self::take_memo) handed over). The memo only
    /// saves work: a message is taken from it only when it is the very message the memo
    /// holds, or equal to it, so the markers placed and everything recorded are exactly
    /// those of a planner without it — a fresh planner given another's memo plans as a fresh
    /// planner does, without flattening again the messages the memo holds unchanged.
    pub fn set_memo(&mut self, memo: PrefixMemo) {
        self.memo = memo;
    }

    /// Forgets the previous request (after a compaction, or for a new session).
    pub fn reset(&mut self) {
        self.previous = None;
        self.written.clear();
        self.memo.clear();
    }

    /// The markers [`plan`](Self::plan) would place on `request`, placed, without recording
    /// the request: the planner is left as it was. For a request derived from the
    /// conversation that is not its next request (the autocompact summary request, a dry
    /// run), whose markers land as the next request's would.
    pub fn plan_unrecorded(&self, request: &mut MessagesRequest) -> Plan {
        let (_, marks, locations) =
            self.mark(request, self.keep_previous_mark, MemoUse::Read(&self.memo));
        Plan { marks, locations }
    }

    /// Places the strategy's markers on `request` (keeping the previous request's last
    /// message marker when `keep`): the flattened request, the marks applied and where.
    fn mark(
        &self,
        request: &mut MessagesRequest,
        keep: bool,
        memo: MemoUse<'_>,
    ) -> (Prefix, Vec<Mark>, Vec<Location>) {
        let known = match &memo {
            MemoUse::Update(memo) => Some(&**memo),
            MemoUse::Read(memo) => Some(*memo),
            MemoUse::None => None,
        };
        crate::prefix::clear_markers_but(request, known);
        if let Some(ttl) = self.strategy.automatic() {
            request.set_cache_control(ttl.marker());
        }
        let prefix = Prefix::flatten(
            request,
            &Estimate as &dyn TokenCounter,
            Default::default(),
            &self.models,
            memo,
        );
        let budget = MAX_MARKERS - usize::from(request.cache_control.is_some());
        let input = StrategyInput {
            prefix: &prefix,
            static_system: self.static_system,
            previous: self.previous.as_ref(),
            written: &self.written,
            budget,
        };
        let mut wanted = self.strategy.place(&input);
        if keep {
            wanted.extend(self.previous.as_ref().and_then(|previous| {
                let position = previous.last_message_mark()?;
                let before = &previous.prefix.pieces[position];
                let now = prefix.pieces.get(position)?;
                (now.prefix_hash == before.prefix_hash).then(|| Mark {
                    position,
                    ttl: before.marker.unwrap_or(Ttl::FiveMinutes),
                })
            }));
        }
        let marks = enforce(&prefix, wanted, budget);
        let mut applied = Vec::with_capacity(marks.len());
        let mut locations = Vec::with_capacity(marks.len());
        for mark in marks {
            let location = prefix.pieces[mark.position].location;
            if set_marker(request, location, mark.ttl) {
                applied.push(mark);
                locations.push(location);
            }
        }
        (prefix, applied, locations)
    }

    /// Replaces the markers of `request` with the strategy's, under the API's rules.
    pub fn plan(&mut self, request: &mut MessagesRequest) -> Plan {
        let keep = std::mem::take(&mut self.keep_previous_mark);
        let mut memo = std::mem::take(&mut self.memo);
        let (prefix, applied, locations) = self.mark(request, keep, MemoUse::Update(&mut memo));
        self.memo = memo;
        // The automatic marker writes where it lands, as an explicit one would.
        let automatic = prefix
            .automatic
            .and_then(|_| prefix.pieces.iter().rposition(|p| p.eligible));
        let written_at = applied.iter().map(|m| m.position).chain(automatic);
        for position in written_at {
            let piece = &prefix.pieces[position];
            if matches!(piece.location, Location::Message { .. })
                && !self.written.contains(&(position, piece.prefix_hash))
            {
                self.written.push((position, piece.prefix_hash));
            }
        }
        if self.written.len() > HISTORY {
            self.written.drain(..self.written.len() - HISTORY);
        }
        let mut prefix = prefix;
        for mark in &applied {
            prefix.pieces[mark.position].marker = Some(mark.ttl);
        }
        let replaced = self.previous.replace(Previous {
            prefix,
            marks: applied.clone(),
        });
        if let Some(replaced) = replaced {
            self.memo.recycle(replaced.prefix);
        }
        Plan {
            marks: applied,
            locations,
        }
    }
}

/// The rules: eligible pieces only (walking back to the last eligible block of the same
/// message), no duplicates, none where the automatic marker lands, at most `budget` (over
/// it, the tools marker goes first, then the earliest message markers but the last), `1h`
/// before `5m` (a `1h` marker after a `5m` one becomes `5m`; with a `1h` automatic marker,
/// every marker is `1h`).
pub fn enforce(prefix: &Prefix, wanted: Vec<Mark>, budget: usize) -> Vec<Mark> {
    let mut marks: Vec<Mark> = wanted
        .into_iter()
        .filter_map(|m| {
            let piece = prefix.pieces.get(m.position)?;
            if piece.eligible {
                return Some(m);
            }
            // Walk back within the same message.
            let Location::Message { message, .. } = piece.location else { return None };
            (0..m.position)
                .rev()
                .take_while(|&i| matches!(prefix.pieces[i].location, Location::Message { message: mm, .. } if mm == message))
                .find(|&i| prefix.pieces[i].eligible)
                .map(|position| Mark { position, ttl: m.ttl })
        })
        .collect();
    marks.sort_by_key(|m| (m.position, std::cmp::Reverse(m.ttl)));
    marks.dedup_by_key(|m| m.position);
    if prefix.automatic.is_some() {
        // The automatic marker lands on the last eligible piece: no explicit marker there.
        let last = prefix.pieces.iter().rposition(|p| p.eligible);
        marks.retain(|m| Some(m.position) != last);
    }
    while marks.len() > budget {
        // Drop the tools marker first (it only helps when the system prompt changes and the
        // tools do not), then the earliest message marker that is not the last one, else the
        // earliest marker.
        let is_message =
            |m: &Mark| matches!(prefix.pieces[m.position].location, Location::Message { .. });
        let tools = marks
            .iter()
            .position(|m| matches!(prefix.pieces[m.position].location, Location::Tool { .. }));
        let messages: Vec<usize> = (0..marks.len())
            .filter(|&i| is_message(&marks[i]))
            .collect();
        let drop = match (tools, messages.as_slice()) {
            (Some(t), _) => t,
            (None, [first, _, ..]) => *first,
            _ => 0,
        };
        marks.remove(drop);
    }
    if prefix.automatic == Some(Ttl::OneHour) {
        // The automatic marker is processed last: nothing before a `1h` one may be `5m`.
        marks.iter_mut().for_each(|m| m.ttl = Ttl::OneHour);
    }
    let mut seen_five = false;
    for mark in &mut marks {
        match mark.ttl {
            Ttl::FiveMinutes => seen_five = true,
            Ttl::OneHour if seen_five => mark.ttl = Ttl::FiveMinutes,
            Ttl::OneHour => {}
        }
    }
    marks
}
