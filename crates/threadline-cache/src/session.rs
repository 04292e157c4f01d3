//! The requests of one growing conversation, planned and simulated without flattening each
//! request again: [`SessionSimulator`].
//!
//! Replaying a session request by request with a [`Planner`](crate::Planner) and a
//! [`Simulator`](crate::Simulator) flattens every request whole ([`Prefix::of`] serializes
//! and hashes each block), keeps the previous request's flattened form and compares them from
//! the first piece: each request costs as much as the conversation so far, and a session of
//! `n` requests costs `n²`. A [`SessionSimulator`] keeps the flattened conversation between
//! requests. The caller says how many leading messages are the previous request's, unchanged
//! (the incremental normalizer knows: [`ImpliedView::unchanged`]); only the rest is
//! flattened again, the break detection starts where the two requests may differ, the marker
//! placement looks at the end only, and expired cache entries are dropped in batches. Each
//! request then costs what changed, and a session costs what it holds.
//!
//! It gives exactly what a [`Planner::default()`](crate::Planner) (the [`LookbackAware`]
//! strategy) followed by [`Simulator::step`](crate::Simulator::step) give for the request
//! `MessagesRequest::new(model_id, _, messages)` — no tools, no system prompt, no
//! `tool_choice` or thinking settings: what a transcript shows; its agent's tools and system
//! prompt are the [`UnseenPrefix`] of the [`SimConfig`]. (Tested against
//! the two over generated sessions.)
//!
//! [`ImpliedView::unchanged`]: https://docs.rs/threadline-normalize
//! [`LookbackAware`]: crate::LookbackAware

use std::borrow::Cow;

use threadline_wire::content::Content;
use threadline_wire::model::Model;
use threadline_wire::{ContentBlock, MessageParam, Messages, MessagesRequest, Role};

use crate::breaks::{BreakCause, CacheBreak};
use crate::cache_table::CacheTable;
use crate::planner::{HISTORY, LOOKBACK};
use crate::prefix::{
    DYNAMIC_SALT, Location, Prefix, PrefixPiece, Ttl, UnseenPrefix, block_facts, hash_of, mix,
    takes_markers,
};
use crate::simulator::{SimConfig, Step};
use crate::tokens::{Piece, TokenCounter};

/// What is kept of each message between requests.
#[derive(Debug, Clone, Copy)]
struct MessageInfo {
    /// Its first piece.
    start: usize,
    /// The last message up to and including it that starts a turn (a user message with
    /// something other than tool results).
    prompt: Option<usize>,
}

/// What is kept of each piece beyond [`PrefixPiece`].
#[derive(Debug, Clone, Copy)]
struct PieceInfo {
    /// The message it belongs to.
    message: usize,
    /// Whether the planner's marker would be set on it (eligible, with a marker slot).
    markable: bool,
    /// The last eligible piece at or before it.
    last_eligible: Option<usize>,
}

/// What the previous request left.
#[derive(Debug, Clone, Copy)]
struct LastRequest {
    /// The furthest position it left cached (its last effective breakpoint), if any.
    cached_to: Option<usize>,
    /// The tokens up to its last breakpoint (effective or not), if it had one.
    last_breakpoint_tokens: Option<u64>,
    at: u64,
}

/// Plans the markers of, and simulates the prompt cache for, the requests of one
/// conversation, each a few messages longer than the one before. See the [module
/// documentation](self).
///
/// ```
/// use threadline_cache::{Estimate, Planner, SessionSimulator, SimConfig, Simulator};
/// use threadline_wire::model::ModelTable;
/// use threadline_wire::{ContentBlock, MessageParam, Messages, MessagesRequest};
///
/// let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
/// let mut session = SessionSimulator::new(model, "claude-sonnet-4-6", Estimate, SimConfig::default());
/// let (mut planner, mut sim) = (Planner::default(), Simulator::new(model));
/// let mut messages =
///     Messages::from(vec![MessageParam::user(vec![ContentBlock::text("Read me. ".repeat(2000))])]);
/// for turn in 0..4u64 {
///     // All but the last message are the previous request's.
///     let unchanged = messages.len().saturating_sub(1);
///     let step = session.step(turn * 60_000, &messages, unchanged);
///     let mut request = MessagesRequest::new("claude-sonnet-4-6", 1024, messages.clone());
///     planner.plan(&mut request);
///     assert_eq!(step, sim.step(turn * 60_000, &request));
///     messages.push(MessageParam::assistant(vec![ContentBlock::text("Done.")]));
///     messages.push(MessageParam::user(vec![ContentBlock::text("Again.")]));
/// }
/// ```
pub struct SessionSimulator<'m> {
    model: &'m Model,
    counter: Box<dyn TokenCounter + Send + Sync + 'm>,
    config: SimConfig,
    /// Whether the model drops earlier turns' thinking from the prompt.
    strips_thinking: bool,
    /// The hash state and tokens after the unseen pieces and the section settings.
    base_state: u64,
    base_tokens: u64,
    /// The unseen pieces.
    header: usize,
    /// The flattened request: the unseen pieces, then every block of every message.
    pieces: Vec<PrefixPiece>,
    info: Vec<PieceInfo>,
    messages: Vec<MessageInfo>,
    /// Messages before this one have their thinking stripped (0: none).
    strip: usize,
    /// The pieces the planner marked in the last request.
    marked: Vec<usize>,
    /// A marked piece whose marker changed its count: its message is flattened again.
    recount_from: Option<usize>,
    /// The planner's memory: message blocks marked, with their prefix hash then.
    written: Vec<(usize, u64)>,
    entries: CacheTable,
    /// Entries that expired by this time are gone, whether or not they are still in the map.
    pruned_at: u64,
    /// The map's size after the last sweep.
    swept_len: usize,
    last: Option<LastRequest>,
    /// The model id the requests name (part of every cache key).
    model_id: String,
    /// The first unseen piece rebuilt since the last request (the next one flattens again
    /// from there).
    rebuilt_from: Option<usize>,
    /// The rebuilt unseen pieces, put in place by the next request.
    pending_header: Option<Vec<PrefixPiece>>,
    /// The cause a rebuild gives the next request's break, if it has one.
    announced: Option<BreakCause>,
}

/// The unseen pieces of a session's requests and the hash state and tokens after them.
struct Header {
    pieces: Vec<PrefixPiece>,
    state: u64,
    tokens: u64,
}

impl Header {
    /// What [`Prefix::of`] gives before the first message block of a request naming
    /// `model_id` with no tools, system prompt or settings, the unseen prefix `unseen` in
    /// front (its [`UnseenPrefix::generation`] included).
    fn of(model_id: &str, counter: &dyn TokenCounter, unseen: UnseenPrefix) -> Header {
        let empty = MessagesRequest::new(model_id, 1024, Vec::new());
        let pieces = Prefix::of(&empty, counter, unseen).pieces;
        let mut state = mix(0x7468_7265_6164, hash_of(&empty.model));
        for piece in &pieces {
            state = mix(state, piece.own_hash);
        }
        let dynamic = pieces
            .iter()
            .any(|p| matches!(p.location, Location::Unseen { index } if index > 0));
        if unseen.generation > 0 && !dynamic {
            state = mix(state, mix(DYNAMIC_SALT, unseen.generation));
        }
        state = mix(state, hash_of(&empty.tool_choice));
        state = mix(
            state,
            mix(
                hash_of(&empty.thinking),
                hash_of(&empty.output_config.as_ref().map(|o| &o.effort)),
            ),
        );
        let tokens = pieces.last().map_or(0, |p| p.cumulative_tokens);
        Header {
            pieces,
            state,
            tokens,
        }
    }
}

impl PieceInfo {
    fn unseen() -> PieceInfo {
        PieceInfo {
            message: 0,
            markable: false,
            last_eligible: None,
        }
    }
}

impl std::fmt::Debug for SessionSimulator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSimulator")
            .field("model", &self.model.id)
            .field("config", &self.config)
            .field("pieces", &self.pieces.len())
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

/// Whether `message` starts a turn: a user message with something other than tool results
/// (as [`crate::prefix::strips_prior_thinking`] reads it).
fn is_prompt(message: &MessageParam) -> bool {
    message.role == Role::User
        && match &message.content {
            Content::Text(_) => true,
            Content::Blocks(blocks) => blocks
                .iter()
                .any(|b| !matches!(b, ContentBlock::ToolResult(_))),
        }
}

impl<'m> SessionSimulator<'m> {
    /// A session for `model`, whose requests name `model_id` (the id as sent: it is part of
    /// every cache key), counting tokens with `counter`, with `config`'s unseen prefix and
    /// tail.
    pub fn new(
        model: &'m Model,
        model_id: &str,
        counter: impl TokenCounter + Send + Sync + 'm,
        config: SimConfig,
    ) -> Self {
        let header = Header::of(model_id, &counter, config.unseen);
        SessionSimulator {
            model,
            counter: Box::new(counter),
            config,
            strips_thinking: !model.keeps_prior_thinking,
            base_state: header.state,
            base_tokens: header.tokens,
            header: header.pieces.len(),
            info: header.pieces.iter().map(|_| PieceInfo::unseen()).collect(),
            pieces: header.pieces,
            messages: Vec::new(),
            strip: 0,
            marked: Vec::new(),
            recount_from: None,
            written: Vec::new(),
            entries: CacheTable::default(),
            pruned_at: 0,
            swept_len: 0,
            last: None,
            model_id: model_id.to_owned(),
            rebuilt_from: None,
            pending_header: None,
            announced: None,
        }
    }

    /// The model simulated.
    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// Forgets where earlier requests put markers (after a compaction), as
    /// [`Planner::reset`](crate::Planner::reset) does. The cache is kept.
    pub fn reset_planner(&mut self) {
        self.written.clear();
    }

    /// The agent re-rendered what follows the cross-session part of the unseen prefix —
    /// its tool set or the dynamic part of its system prompt (a local command such as `/mcp`
    /// reconnecting a server, `by`): from the next request on, that part and every message
    /// after it are new to the cache, and a break there is reported as
    /// [`BreakCause::PrefixReloaded`].
    pub fn reload_dynamic_prefix(&mut self, by: impl Into<String>) {
        self.config.unseen.generation += 1;
        self.rebuild(BreakCause::PrefixReloaded { by: by.into() });
    }

    /// The next requests go to `model` (named `model_id`): caches are per model, so nothing
    /// this session cached is read again, and the break is [`BreakCause::ModelChanged`].
    pub fn switch_model(&mut self, model: &'m Model, model_id: &str) {
        if model_id == self.model_id {
            return;
        }
        self.model = model;
        self.model_id = model_id.to_owned();
        self.strips_thinking = !model.keeps_prior_thinking;
        self.rebuild(BreakCause::ModelChanged);
    }

    /// Rebuilds the unseen pieces for the current model and generation; the next request is
    /// flattened again from the first one that changed.
    fn rebuild(&mut self, cause: BreakCause) {
        let header = Header::of(&self.model_id, &*self.counter, self.config.unseen);
        let from = header
            .pieces
            .iter()
            .zip(&self.pieces)
            .position(|(new, old)| new.prefix_hash != old.prefix_hash)
            .unwrap_or(self.header);
        self.base_state = header.state;
        self.base_tokens = header.tokens;
        self.pending_header = Some(header.pieces);
        self.rebuilt_from = Some(self.rebuilt_from.map_or(from, |f| f.min(from)));
        self.announced = Some(cause);
    }

    /// Plans the markers of the request made of `messages` sent at `at_ms` (never
    /// decreasing), predicts its usage and updates the cache. `unchanged`: how many leading
    /// `messages` are the previous call's, unchanged (0 when unknown; more than the truth
    /// gives wrong answers).
    pub fn step(&mut self, at_ms: u64, messages: &Messages, unchanged: usize) -> Step {
        let (cut, old_tail) = self.flatten(messages, unchanged);
        let applied = self.plan(messages);
        self.simulate(at_ms, cut, &old_tail, &applied)
    }

    /// Flattens `messages` from the first one that may differ; returns where the pieces
    /// began to be redone and the previous request's pieces from there.
    fn flatten(&mut self, messages: &Messages, unchanged: usize) -> (usize, Vec<PrefixPiece>) {
        let mut dirty = unchanged.min(self.messages.len()).min(messages.len());
        if let Some(message) = self.recount_from.take() {
            dirty = dirty.min(message);
        }
        // Which turn is the current one decides whose thinking is stripped.
        let prompt_at = |infos: &[MessageInfo], from: usize| {
            let mut prompt = from
                .checked_sub(1)
                .and_then(|m| infos.get(m))
                .and_then(|i| i.prompt);
            for (m, message) in messages.iter().enumerate().skip(from) {
                if is_prompt(message) {
                    prompt = Some(m);
                }
            }
            prompt
        };
        let strip = if self.strips_thinking {
            prompt_at(&self.messages, dirty).unwrap_or(0)
        } else {
            0
        };
        if strip != self.strip {
            dirty = dirty.min(strip.min(self.strip));
        }
        self.strip = strip;
        let rebuilt = self.rebuilt_from.take().zip(self.pending_header.take());
        if rebuilt.is_some() {
            dirty = 0;
        }
        let cut = match &rebuilt {
            Some((from, _)) => *from,
            None => self
                .messages
                .get(dirty)
                .map_or(self.pieces.len(), |m| m.start),
        };
        self.messages.truncate(dirty);
        let old_tail = self.pieces.split_off(cut);
        self.info.truncate(cut);
        if let Some((from, header)) = rebuilt {
            for piece in header.into_iter().skip(from) {
                self.pieces.push(piece);
                self.info.push(PieceInfo::unseen());
            }
        }
        for position in std::mem::take(&mut self.marked) {
            if let Some(piece) = self.pieces.get_mut(position) {
                piece.marker = None;
            }
        }
        let (mut state, mut cumulative) = self
            .pieces
            .get(self.header..)
            .and_then(<[PrefixPiece]>::last)
            .map_or((self.base_state, self.base_tokens), |p| {
                (p.prefix_hash, p.cumulative_tokens)
            });
        let mut last_eligible = self.info.last().and_then(|i| i.last_eligible);
        for (message, param) in messages.iter().enumerate().skip(dirty) {
            let previous = message
                .checked_sub(1)
                .and_then(|m| self.messages.get(m))
                .and_then(|i| i.prompt);
            self.messages.push(MessageInfo {
                start: self.pieces.len(),
                prompt: if is_prompt(param) {
                    Some(message)
                } else {
                    previous
                },
            });
            let text;
            let blocks: &[ContentBlock] = match &param.content {
                Content::Text(t) => {
                    text = [ContentBlock::text(t.clone())];
                    &text
                }
                Content::Blocks(blocks) => blocks,
            };
            let role = hash_of(&param.role);
            let markable = takes_markers(param);
            let stripped = message < strip && param.role == Role::Assistant;
            for (index, block) in blocks.iter().enumerate() {
                if stripped && block.is_thinking() {
                    continue;
                }
                // The planner clears every marker before it flattens the request (a copy
                // only for a block that has one: most have none).
                let bare = if block.has_cache_control() {
                    let mut bare = block.clone();
                    bare.clear_cache_control();
                    Cow::Owned(bare)
                } else {
                    Cow::Borrowed(block)
                };
                let facts = block_facts(index, &bare, role, markable, &*self.counter);
                state = mix(state, facts.own_hash);
                // Saturating: an unseen prefix inferred from a hostile usage may be huge.
                cumulative = cumulative.saturating_add(facts.tokens);
                let position = self.pieces.len();
                if facts.eligible {
                    last_eligible = Some(position);
                }
                self.info.push(PieceInfo {
                    message,
                    // An eligible block's kind has a marker slot (a wire property).
                    markable: facts.eligible,
                    last_eligible,
                });
                self.pieces.push(PrefixPiece {
                    location: Location::Message {
                        message,
                        block: index,
                    },
                    own_hash: facts.own_hash,
                    prefix_hash: state,
                    tokens: facts.tokens,
                    cumulative_tokens: cumulative,
                    marker: None,
                    eligible: facts.eligible,
                    thinking: facts.thinking,
                });
            }
        }
        (cut, old_tail)
    }

    /// The default planner's markers ([`crate::LookbackAware`] on a request without tools or
    /// system prompt): the last eligible block, and the latest earlier write when that is a
    /// lookback or more before it. Returns the positions marked, in order.
    fn plan(&mut self, messages: &Messages) -> Vec<usize> {
        let header = self.header;
        // Positions as the planner sees them: without the unseen pieces.
        let moving = self
            .pieces
            .len()
            .checked_sub(1)
            .filter(|&last| last >= header)
            .and_then(|last| self.info[last].last_eligible)
            .filter(|&p| p >= header)
            .map(|p| p - header);
        let bridge = moving.and_then(|moving| {
            let latest = self
                .written
                .iter()
                .filter(|&&(p, hash)| {
                    p < moving
                        && self
                            .pieces
                            .get(p + header)
                            .is_some_and(|now| now.prefix_hash == hash && now.eligible)
                })
                .map(|&(p, _)| p)
                .max()?;
            (moving >= latest + LOOKBACK).then_some(latest)
        });
        let applied: Vec<usize> = bridge
            .into_iter()
            .chain(moving)
            .map(|p| p + header)
            .filter(|&p| self.info[p].markable)
            .collect();
        for &position in &applied {
            let entry = (position - header, self.pieces[position].prefix_hash);
            if !self.written.contains(&entry) {
                self.written.push(entry);
            }
        }
        if self.written.len() > HISTORY {
            self.written.drain(..self.written.len() - HISTORY);
        }
        for &position in &applied {
            self.pieces[position].marker = Some(Ttl::FiveMinutes);
            self.recount_marked(messages, position);
        }
        self.marked.clone_from(&applied);
        applied
    }

    /// The simulator counts the request as planned: a marker may change a block's count (a
    /// block the estimate measures by its JSON). Then the counts after it move, and its
    /// message is flattened again next time.
    fn recount_marked(&mut self, messages: &Messages, position: usize) {
        let Location::Message { message, block } = self.pieces[position].location else {
            return;
        };
        let Some(param) = messages.get(message) else {
            return;
        };
        let mut marked = match &param.content {
            Content::Text(t) => ContentBlock::text(t.clone()),
            Content::Blocks(blocks) => match blocks.get(block) {
                Some(b) => b.clone(),
                None => return,
            },
        };
        marked.clear_cache_control();
        marked.set_cache_control(Ttl::FiveMinutes.marker());
        let piece = &self.pieces[position];
        let tokens = self.counter.count(Piece::Block(&marked), piece.own_hash);
        if tokens == piece.tokens {
            return;
        }
        let delta = tokens as i128 - piece.tokens as i128;
        self.pieces[position].tokens = tokens;
        for later in &mut self.pieces[position..] {
            later.cumulative_tokens =
                (later.cumulative_tokens as i128 + delta).clamp(0, u64::MAX as i128) as u64;
        }
        let message = self.info[position].message;
        self.recount_from = Some(self.recount_from.map_or(message, |m| m.min(message)));
    }

    /// [`crate::Simulator::step_prefix`] on the pieces, `applied` being the planner's markers
    /// and `old_tail` the previous request's pieces from `cut` on.
    fn simulate(
        &mut self,
        at_ms: u64,
        cut: usize,
        old_tail: &[PrefixPiece],
        applied: &[usize],
    ) -> Step {
        let pieces = &self.pieces;
        let minimum = self.model.min_cacheable_tokens;
        let unseen_marks = if self.config.unseen.marked {
            self.header
        } else {
            0
        };
        let unseen_ttl = self.config.unseen.ttl;
        let all: Vec<(usize, Ttl)> = (0..unseen_marks)
            .map(|p| (p, unseen_ttl))
            .chain(applied.iter().map(|&p| (p, Ttl::FiveMinutes)))
            .collect();
        let breakpoints: Vec<(usize, Ttl)> = all
            .iter()
            .copied()
            .filter(|&(p, _)| pieces[p].cumulative_tokens >= minimum)
            .collect();
        if self.last.is_none() && self.config.unseen.warm_tokens > 0 {
            let warm = self.config.unseen.warm_tokens;
            self.entries.warm_start(pieces, &breakpoints, warm, at_ms);
        }
        let (hit, hits) = self.entries.reads(pieces, &breakpoints, at_ms);
        let announced = self.announced.take();
        let cache_break = self
            .explain(at_ms, cut, old_tail, hit, &breakpoints)
            .map(|found| found.attributed(announced));
        let pieces = &self.pieces;
        let written = self.entries.write(
            pieces,
            &breakpoints,
            &hits,
            hit,
            at_ms,
            self.pruned_at,
            self.config.tail_tokens,
        );
        let usage = written.usage;
        let last_bp = written.last_breakpoint;
        self.last = Some(LastRequest {
            cached_to: last_bp.or(hit),
            last_breakpoint_tokens: all.last().map(|&(p, _)| pieces[p].cumulative_tokens),
            at: at_ms,
        });
        // Sweeping the map on every request would cost its size each time: sweep when it has
        // doubled, and treat what expired by now as gone until then.
        self.pruned_at = at_ms;
        if self.entries.len() > 2 * self.swept_len + 64 {
            self.entries.sweep(at_ms);
            self.swept_len = self.entries.len();
        }
        Step {
            cost: usage.cost(self.model, 0),
            usage,
            cache_break,
        }
    }

    /// Why this request read less than the previous one left cached (the simulator's
    /// `explain`, with [`crate::breaks::first_difference`] started at `cut`: the pieces before
    /// it are the previous request's).
    fn explain(
        &self,
        at_ms: u64,
        cut: usize,
        old_tail: &[PrefixPiece],
        hit: Option<usize>,
        breakpoints: &[(usize, Ttl)],
    ) -> Option<CacheBreak> {
        let last = self.last.as_ref()?;
        let minimum = self.model.min_cacheable_tokens;
        let Some(cached_to) = last.cached_to else {
            return last.last_breakpoint_tokens.map(|tokens| CacheBreak {
                location: None,
                cause: BreakCause::BelowMinimum { tokens, minimum },
            });
        };
        let old_len = cut + old_tail.len();
        let old = |i: usize| {
            if i < cut {
                &self.pieces[i]
            } else {
                &old_tail[i - cut]
            }
        };
        if old_len > 0 {
            for i in cut..=cached_to.min(old_len - 1) {
                let old = old(i);
                let Some(new) = self.pieces.get(i) else {
                    return Some(CacheBreak {
                        location: Some(old.location),
                        cause: BreakCause::MessagesRemoved,
                    });
                };
                if old.prefix_hash == new.prefix_hash {
                    continue;
                }
                let same_piece = old.own_hash == new.own_hash && old.location == new.location;
                let first_message = self.pieces.len() > self.header && i == self.header;
                let cause = if old.thinking && !new.thinking && old.own_hash != new.own_hash {
                    BreakCause::PriorThinkingStripped
                } else if same_piece && i == 0 {
                    BreakCause::ModelChanged
                } else if same_piece && first_message {
                    BreakCause::ThinkingChanged
                } else if matches!(old.location, Location::Unseen { .. }) {
                    BreakCause::SystemChanged
                } else {
                    BreakCause::MessageRewritten
                };
                return Some(CacheBreak {
                    location: Some(new.location),
                    cause,
                });
            }
        }
        self.entries.unchanged_prefix_break(
            old(cached_to).prefix_hash,
            cached_to,
            hit,
            breakpoints,
            last.at,
            at_ms,
        )
    }
}
