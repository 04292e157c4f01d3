//! A request seen as the API's cache sees it: one flat sequence of pieces (each tool, each
//! system block, each message block) in `tools` → `system` → `messages` order, each with the
//! hash of the whole prefix up to and including it, its token count, and its marker.
//!
//! The hash ignores `cache_control` (moving a marker does not change what is cached) and mixes
//! in what the API's invalidation table says invalidates a section: the model for everything,
//! `tool_choice` for system and messages, the thinking and effort settings for messages.
//! Tools sent with `defer_loading` are not in the prefix. For a model that does not keep
//! earlier turns' thinking (the model table's `keeps_prior_thinking`), thinking blocks of
//! assistant messages before the current turn's user prompt are not in the prompt either
//! ([`strips_prior_thinking`]), so a new user turn changes everything from the first of them
//! on — what the API documents as "non-tool-result user content invalidates the messages
//! cache" on those models.

use std::hash::{DefaultHasher, Hash, Hasher};

use threadline_wire::content::Content;
use threadline_wire::{CacheControl, CacheTtl, ContentBlock, MessagesRequest, ToolDefinition};

use crate::memo::{BlockFacts, MemoUse, MessageFacts, MessagePieces, PiecesEnd, PrefixMemo};
use crate::tokens::{Piece, TokenCounter};

/// Where a piece sits in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "section", rename_all = "snake_case")]
pub enum Location {
    /// The part of the prompt the caller does not show (a transcript's tools and system
    /// prompt): `index` 0 is its pre-warmed part, 1 the rest.
    Unseen {
        /// Which part.
        index: usize,
    },
    /// `tools[index]`.
    Tool {
        /// The tool's index.
        index: usize,
    },
    /// `system[index]` (a string system prompt is one block).
    System {
        /// The block's index.
        index: usize,
    },
    /// `messages[message].content[block]` (string content is one block).
    Message {
        /// The message's index.
        message: usize,
        /// The block's index.
        block: usize,
    },
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Unseen { index } => write!(f, "(unseen prefix part {index})"),
            Location::Tool { index } => write!(f, "tools.{index}"),
            Location::System { index } => write!(f, "system.{index}"),
            Location::Message { message, block } => write!(f, "messages.{message}.content.{block}"),
        }
    }
}

/// A marker's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Ttl {
    /// Five minutes (`5m` or absent).
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour.
    #[serde(rename = "1h")]
    OneHour,
}

impl Default for Ttl {
    /// Five minutes: the API's default lifetime.
    fn default() -> Self {
        Ttl::FiveMinutes
    }
}

impl Ttl {
    /// The lifetime in milliseconds.
    pub fn millis(self) -> u64 {
        match self {
            Ttl::FiveMinutes => 5 * 60 * 1000,
            Ttl::OneHour => 60 * 60 * 1000,
        }
    }

    /// The wire marker for this lifetime (`5m` is written as the API's default, no `ttl`).
    pub fn marker(self) -> CacheControl {
        match self {
            Ttl::FiveMinutes => CacheControl::ephemeral(),
            Ttl::OneHour => CacheControl::ephemeral().with_ttl(CacheTtl::OneHour),
        }
    }

    fn of(marker: &CacheControl) -> Ttl {
        match marker.ttl {
            Some(CacheTtl::OneHour) => Ttl::OneHour,
            _ => Ttl::FiveMinutes,
        }
    }
}

/// One piece of the prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixPiece {
    /// Where it is.
    pub location: Location,
    /// The hash of this piece alone (its JSON without `cache_control`, with its role and
    /// whether it starts a message).
    pub own_hash: u64,
    /// The hash of the prefix up to and including this piece.
    pub prefix_hash: u64,
    /// Its tokens.
    pub tokens: u64,
    /// The prefix's tokens up to and including this piece.
    pub cumulative_tokens: u64,
    /// The marker on it, if any.
    pub marker: Option<Ttl>,
    /// Whether a marker may go on it (not thinking, not empty text, not unknown).
    pub eligible: bool,
    /// Whether it is a thinking or redacted-thinking block.
    pub thinking: bool,
}

/// A flattened request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefix {
    /// The pieces, in prefix order.
    pub pieces: Vec<PrefixPiece>,
    /// The top-level automatic-caching marker, if the request has one (it lands on the last
    /// eligible piece).
    pub automatic: Option<Ttl>,
}

/// The hash of one piece as [`TokenCounter`]s and [`crate::tokens::ExactCounts`] see it.
pub fn piece_hash(piece: Piece<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    match piece {
        Piece::Tool(tool) => {
            0u8.hash(&mut h);
            let mut tool = tool.clone();
            tool.clear_cache_control();
            hash_json(&tool, &mut h);
        }
        Piece::System(block) => {
            1u8.hash(&mut h);
            let mut block = block.clone();
            block.clear_cache_control();
            hash_json(&block, &mut h);
        }
        Piece::Block(block) => {
            2u8.hash(&mut h);
            let mut block = block.clone();
            block.clear_cache_control();
            hash_json(&block, &mut h);
        }
    }
    h.finish()
}

fn hash_json<T: serde::Serialize>(value: &T, h: &mut DefaultHasher) {
    match serde_json::to_vec(value) {
        Ok(bytes) => bytes.hash(h),
        Err(_) => 0u8.hash(h),
    }
}

/// Whether a marker may be put on `block`: [`ContentBlock::is_cache_eligible`] (never on
/// thinking or redacted thinking, an empty text block, or a block this version does not
/// know), the rule the validator shares.
pub fn is_eligible(block: &ContentBlock) -> bool {
    block.is_cache_eligible()
}

fn block_marker(block: &ContentBlock) -> Option<Ttl> {
    match block {
        ContentBlock::Unknown(value) => {
            value
                .get("cache_control")
                .filter(|v| !v.is_null())
                .map(|v| {
                    if v.get("ttl").and_then(|t| t.as_str()) == Some("1h") {
                        Ttl::OneHour
                    } else {
                        Ttl::FiveMinutes
                    }
                })
        }
        other => other.cache_control().map(Ttl::of),
    }
}

/// For a model that strips thinking from earlier turns (the model table's
/// `keeps_prior_thinking` is false), the index of the message that starts the current turn: the
/// last user message with something other than tool results. Thinking blocks of assistant
/// messages before it are not part of the prompt (and adding such a user message invalidates
/// the cache from the first of them on, as the API documents).
pub fn strips_prior_thinking(request: &MessagesRequest) -> Option<usize> {
    strips_prior_thinking_in(request, threadline_wire::model::ModelTable::builtin())
}

/// [`strips_prior_thinking`] with the request's model looked up in `models` (a table the caller
/// passes, e.g. one extended with models newer than this build).
pub fn strips_prior_thinking_in(
    request: &MessagesRequest,
    models: &threadline_wire::model::ModelTable,
) -> Option<usize> {
    let model = models.resolve(&request.model);
    if model.model().keeps_prior_thinking {
        return None;
    }
    request.messages.iter().rposition(|m| {
        m.role == threadline_wire::Role::User
            && match &m.content {
                Content::Text(_) => true,
                Content::Blocks(blocks) => blocks
                    .iter()
                    .any(|b| !matches!(b, ContentBlock::ToolResult(_))),
            }
    })
}

/// Whether a tool is sent with `defer_loading: true` (not part of the cached prefix).
pub fn is_deferred(tool: &ToolDefinition) -> bool {
    tool.is_deferred()
}

pub(crate) fn mix(state: u64, value: u64) -> u64 {
    let mut h = DefaultHasher::new();
    state.hash(&mut h);
    value.hash(&mut h);
    h.finish()
}

pub(crate) fn hash_of<T: serde::Serialize>(value: &T) -> u64 {
    let mut h = DefaultHasher::new();
    hash_json(value, &mut h);
    h.finish()
}

/// Mixed into the hash after the unseen prefix when a re-render has nothing of its own to
/// change ([`UnseenPrefix::generation`]).
pub(crate) const DYNAMIC_SALT: u64 = 0x0064_796e_616d_6963;

/// An unseen part of the prompt that comes before everything the request shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnseenPrefix {
    /// Its tokens in all.
    pub tokens: u64,
    /// The leading part of it that was already cached before the first request (0: none).
    pub warm_tokens: u64,
    /// Whether it ends with breakpoints of its own (the agent cached its tools and system
    /// prompt); without, it is plain uncached input.
    pub marked: bool,
    /// The lifetime of those breakpoints (five minutes unless the agent asks for an hour).
    pub ttl: Ttl,
    /// How many times the agent re-rendered the part after the warm (cross-session) one — its
    /// tool set or the dynamic part of its system prompt, as a `/mcp` reconnect does: 0 for
    /// never. Each time, that part (or, without one, the point after the unseen prefix) and
    /// everything after it hash anew.
    pub generation: u64,
}

/// The pieces being built, with the running prefix hash and token count.
struct Flat {
    pieces: Vec<PrefixPiece>,
    state: u64,
    cumulative: u64,
}

impl Flat {
    fn push(
        &mut self,
        location: Location,
        own_hash: u64,
        tokens: u64,
        marker: Option<Ttl>,
        eligible: bool,
        thinking: bool,
    ) {
        self.state = mix(self.state, own_hash);
        // Saturating: an unseen prefix inferred from a hostile recorded usage may be huge.
        self.cumulative = self.cumulative.saturating_add(tokens);
        self.pieces.push(PrefixPiece {
            location,
            own_hash,
            prefix_hash: self.state,
            tokens,
            cumulative_tokens: self.cumulative,
            marker,
            eligible,
            thinking,
        });
    }

    /// The pieces of message `message` (`param`), from what its blocks gave; its thinking
    /// left out when the model strips it (`stripped`).
    fn push_message(
        &mut self,
        message: usize,
        param: &threadline_wire::MessageParam,
        facts: &[BlockFacts],
        stripped: bool,
    ) {
        for (index, fact) in facts.iter().enumerate() {
            if stripped && fact.thinking {
                // The API drops it: not part of the prompt.
                continue;
            }
            // String content is one text block, which carries no marker.
            let marker = match &param.content {
                Content::Text(_) => None,
                Content::Blocks(blocks) => blocks.get(index).and_then(block_marker),
            };
            self.push(
                Location::Message {
                    message,
                    block: index,
                },
                fact.own_hash,
                fact.tokens,
                marker,
                fact.eligible,
                fact.thinking,
            );
        }
    }
}

/// What each block of `param` gives when flattened: its own hash (with the message's role,
/// and whether it starts the message), its tokens by `counter`, whether a marker may go on
/// it (never on a turn-scoped system message's), whether it is thinking.
fn message_facts(
    param: &threadline_wire::MessageParam,
    counter: &dyn TokenCounter,
) -> Vec<BlockFacts> {
    let role = hash_of(&param.role);
    let markable = takes_markers(param);
    let fact =
        |index: usize, block: &ContentBlock| block_facts(index, block, role, markable, counter);
    match &param.content {
        Content::Text(text) => vec![fact(0, &ContentBlock::text(text.clone()))],
        Content::Blocks(blocks) => blocks
            .iter()
            .enumerate()
            .map(|(index, block)| fact(index, block))
            .collect(),
    }
}

/// Whether any block of `message` may carry a marker: not a turn-scoped system message's
/// ([`MessageParam::is_turn_scoped`](threadline_wire::MessageParam::is_turn_scoped): the API
/// refuses a marker on it, and its automatic caching passes over it).
pub(crate) fn takes_markers(message: &threadline_wire::MessageParam) -> bool {
    !message.is_turn_scoped()
}

/// What the block at `index` of a message whose role hashes to `role` gives when flattened
/// (see [`message_facts`]); the block's markers must already be cleared, and `markable` is
/// [`takes_markers`] of its message. The planner's flattening and the session simulator's
/// both take their pieces from here.
pub(crate) fn block_facts(
    index: usize,
    block: &ContentBlock,
    role: u64,
    markable: bool,
    counter: &dyn TokenCounter,
) -> BlockFacts {
    let mut own = mix(piece_hash(Piece::Block(block)), role);
    if index == 0 {
        own = mix(own, 0x6d73_6773_7461_7274);
    }
    BlockFacts {
        own_hash: own,
        tokens: counter.count(Piece::Block(block), own),
        eligible: markable && is_eligible(block),
        thinking: block.is_thinking(),
    }
}

impl Prefix {
    /// Flattens `request`, counting tokens with `counter`. The unseen prefix, when not empty,
    /// comes first as one or two pieces (the warm part, then the rest), each with a marker,
    /// as a transcript's agent caches its tools and system prompt. The model's row (whether
    /// it strips earlier turns' thinking) comes from the built-in table; see [`Prefix::of_in`].
    pub fn of(
        request: &MessagesRequest,
        counter: &dyn TokenCounter,
        unseen: UnseenPrefix,
    ) -> Prefix {
        Prefix::of_in(
            request,
            counter,
            unseen,
            threadline_wire::model::ModelTable::builtin(),
        )
    }

    /// [`Prefix::of`] with the request's model looked up in `models`.
    pub fn of_in(
        request: &MessagesRequest,
        counter: &dyn TokenCounter,
        unseen: UnseenPrefix,
        models: &threadline_wire::model::ModelTable,
    ) -> Prefix {
        Prefix::flatten(request, counter, unseen, models, MemoUse::None)
    }

    /// [`Prefix::of_in`], reusing what `memo` holds of the messages that are equal to the
    /// last request's at the same index, then keeping this request's messages in it: the
    /// same result as [`Prefix::of_in`], for the cost of the messages that changed (plus a
    /// comparison of the others). The memo must be used with one `counter` only.
    pub fn of_in_memoized(
        request: &MessagesRequest,
        counter: &dyn TokenCounter,
        unseen: UnseenPrefix,
        models: &threadline_wire::model::ModelTable,
        memo: &mut PrefixMemo,
    ) -> Prefix {
        Prefix::flatten(request, counter, unseen, models, MemoUse::Update(memo))
    }

    pub(crate) fn flatten(
        request: &MessagesRequest,
        counter: &dyn TokenCounter,
        unseen: UnseenPrefix,
        models: &threadline_wire::model::ModelTable,
        mut memo: MemoUse<'_>,
    ) -> Prefix {
        // A memo lends the buffer of a prefix it was given back (no allocation, memory that
        // was written recently).
        let pieces = match &mut memo {
            MemoUse::Update(memo) => {
                let mut spare = std::mem::take(&mut memo.spare);
                spare.clear();
                spare
            }
            _ => Vec::new(),
        };
        let mut flat = Flat {
            pieces,
            state: mix(0x7468_7265_6164, hash_of(&request.model)),
            cumulative: 0,
        };
        let warm = unseen.warm_tokens.min(unseen.tokens);
        let parts = [warm, unseen.tokens - warm];
        for (index, tokens) in parts.into_iter().enumerate() {
            if tokens > 0 {
                let mut own = mix(0x756e_7365_656e + index as u64, tokens);
                if unseen.generation > 0 && index > 0 {
                    own = mix(own, unseen.generation);
                }
                let marker = unseen.marked.then_some(unseen.ttl);
                flat.push(Location::Unseen { index }, own, tokens, marker, false, true);
            }
        }
        if unseen.generation > 0 && parts[1] == 0 {
            // Nothing unseen after the warm part: the re-rendered part starts right after it.
            flat.state = mix(flat.state, mix(DYNAMIC_SALT, unseen.generation));
        }
        for (index, tool) in request.tools.iter().flatten().enumerate() {
            if is_deferred(tool) {
                // Loaded only when tool search finds it: not in the prefix.
                continue;
            }
            let mut bare = tool.clone();
            bare.clear_cache_control();
            let own = piece_hash(Piece::Tool(&bare));
            let tokens = counter.count(Piece::Tool(&bare), own);
            flat.push(
                Location::Tool { index },
                own,
                tokens,
                tool.cache_control().map(Ttl::of),
                true,
                true,
            );
        }
        flat.state = mix(flat.state, hash_of(&request.tool_choice));
        let system = request
            .system
            .as_ref()
            .map(|s| s.blocks())
            .unwrap_or_default();
        for (index, block) in system.iter().enumerate() {
            let own = piece_hash(Piece::System(block));
            let tokens = counter.count(Piece::System(block), own);
            let marker = block.cache_control.as_deref().map(Ttl::of);
            flat.push(
                Location::System { index },
                own,
                tokens,
                marker,
                !block.text.is_empty(),
                true,
            );
        }
        flat.state = mix(
            flat.state,
            mix(
                hash_of(&request.thinking),
                hash_of(&request.output_config.as_ref().map(|o| &o.effort)),
            ),
        );
        let strip_before = strips_prior_thinking_in(request, models);
        let stripped = |message: usize, param: &threadline_wire::MessageParam| {
            strip_before.is_some_and(|end| message < end)
                && param.role == threadline_wire::Role::Assistant
        };
        match memo {
            MemoUse::Update(memo) => {
                let start = (flat.pieces.len(), flat.state, flat.cumulative);
                let messages = &request.messages;
                let kept_request = std::mem::take(&mut memo.request);
                let mut kept = std::mem::take(&mut memo.messages);
                let mut marked = std::mem::take(&mut memo.marked);
                let previous = memo.pieces.take().filter(|p| p.start == start);
                // The leading messages whose pieces are the last flattening's, as they are:
                // those equal to the kept ones (the shared ones found chunk by chunk, nothing
                // of them read), while their thinking is stripped as it was (an equal message
                // at the same index strips as before unless the strip point moved).
                let reused = previous.as_ref().map_or(0, |p| {
                    let mut equal = messages
                        .equal_prefix(&kept_request)
                        .min(kept.len())
                        .min(p.after.len());
                    if memo.strip_before != strip_before {
                        // Only the messages before both strip points strip as they did.
                        let both = memo
                            .strip_before
                            .unwrap_or(0)
                            .min(strip_before.unwrap_or(0));
                        equal = equal.min(both);
                    }
                    equal
                });
                let mut message_pieces = match previous.filter(|_| reused > 0) {
                    Some(mut previous) => {
                        let last = previous.after[reused - 1];
                        previous.pieces.truncate(last.end);
                        previous.after.truncate(reused);
                        flat.pieces.reserve(previous.pieces.len() + 64);
                        flat.pieces.extend_from_slice(&previous.pieces);
                        flat.state = last.state;
                        flat.cumulative = last.cumulative;
                        previous
                    }
                    None => MessagePieces {
                        start,
                        ..MessagePieces::default()
                    },
                };
                let mut rest = kept.split_off(reused.min(kept.len())).into_iter();
                marked.retain(|&i| i < reused);
                for (offset, param) in messages.shared_from(reused).enumerate() {
                    let message = reused + offset;
                    let blocks = match rest.next() {
                        Some(previous) if kept_request.holds(message, param) => previous.blocks,
                        _ => message_facts(param, counter),
                    };
                    let facts = MessageFacts { blocks };
                    if param.has_cache_control() {
                        marked.push(message);
                    }
                    let strip = stripped(message, param);
                    let before = flat.pieces.len();
                    flat.push_message(message, param, &facts.blocks, strip);
                    message_pieces
                        .pieces
                        .extend_from_slice(&flat.pieces[before..]);
                    message_pieces.after.push(PiecesEnd {
                        end: flat.pieces.len() - start.0,
                        state: flat.state,
                        cumulative: flat.cumulative,
                    });
                    kept.push(facts);
                }
                memo.request = messages.clone();
                memo.messages = kept;
                memo.marked = marked;
                memo.strip_before = strip_before;
                memo.pieces = Some(message_pieces);
            }
            MemoUse::Read(memo) => {
                for (message, shared) in request.messages.shared().enumerate() {
                    let param = &**shared;
                    match memo.get(message, shared) {
                        Some(facts) => {
                            flat.push_message(message, param, facts, stripped(message, param))
                        }
                        None => flat.push_message(
                            message,
                            param,
                            &message_facts(param, counter),
                            stripped(message, param),
                        ),
                    }
                }
            }
            MemoUse::None => {
                for (message, param) in request.messages.iter().enumerate() {
                    flat.push_message(
                        message,
                        param,
                        &message_facts(param, counter),
                        stripped(message, param),
                    );
                }
            }
        }
        Prefix {
            pieces: flat.pieces,
            automatic: request.cache_control.as_deref().map(Ttl::of),
        }
    }

    /// All the prompt's tokens.
    pub fn total_tokens(&self) -> u64 {
        self.pieces.last().map_or(0, |p| p.cumulative_tokens)
    }

    /// The positions of the breakpoints, in prefix order, with their lifetimes (the top-level
    /// automatic marker on the last eligible piece).
    pub fn breakpoints(&self) -> Vec<(usize, Ttl)> {
        let mut out: Vec<(usize, Ttl)> = self
            .pieces
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.marker.map(|t| (i, t)))
            .collect();
        if let Some(ttl) = self.automatic
            && let Some(last) = self.pieces.iter().rposition(|p| p.eligible)
            && !out.iter().any(|(i, _)| *i == last)
        {
            out.push((last, ttl));
            out.sort_unstable();
        }
        out
    }

    /// The index of the first piece of the messages, if there is one.
    pub fn first_message_piece(&self) -> Option<usize> {
        self.pieces
            .iter()
            .position(|p| matches!(p.location, Location::Message { .. }))
    }
}

/// Clears every marker of `request`: tools, system blocks, message blocks (nested ones too;
/// see [`MessagesRequest::clear_cache_control`]). The top-level automatic marker is left as it
/// is.
pub fn clear_markers(request: &mut MessagesRequest) {
    clear_markers_but(request, None);
}

/// [`clear_markers`], not looking into the messages `memo` holds, at the same index, the very
/// message it saw without a marker.
pub(crate) fn clear_markers_but(request: &mut MessagesRequest, memo: Option<&PrefixMemo>) {
    let automatic = request.cache_control.take();
    match memo {
        Some(memo) => {
            let maybe_marked = memo.maybe_marked(&request.messages);
            request.clear_cache_control_of(maybe_marked);
        }
        None => request.clear_cache_control(),
    }
    request.cache_control = automatic;
}

/// Puts a marker on the piece at `location` of `request`; false when the piece cannot carry
/// one (thinking, empty text, unknown, a `defer_loading` tool, or no such piece).
pub fn set_marker(request: &mut MessagesRequest, location: Location, ttl: Ttl) -> bool {
    match location {
        Location::Unseen { .. } => false,
        Location::Tool { index } => match request.tools.as_mut().and_then(|t| t.get_mut(index)) {
            // The API rejects a marker on a deferred tool ("Tool '<name>' cannot have both
            // defer_loading=true and cache_control set."); it is not in the prefix anyway.
            Some(tool) if tool.is_deferred() => false,
            Some(tool) => {
                tool.set_cache_control(ttl.marker());
                true
            }
            None => false,
        },
        Location::System { index } => {
            let Some(system) = &mut request.system else {
                return false;
            };
            if let threadline_wire::SystemPrompt::Text(text) = system {
                if text.is_empty() {
                    return false;
                }
                *system =
                    threadline_wire::SystemPrompt::Blocks(vec![threadline_wire::TextBlock::new(
                        text.clone(),
                    )]);
            }
            let threadline_wire::SystemPrompt::Blocks(blocks) = system else {
                return false;
            };
            match blocks.get_mut(index) {
                Some(block) if !block.text.is_empty() => {
                    block.set_cache_control(ttl.marker());
                    true
                }
                _ => false,
            }
        }
        Location::Message { message, block } => {
            let Some(param) = request.messages.get_mut(message) else {
                return false;
            };
            if let Content::Text(text) = &param.content {
                if text.is_empty() || block != 0 {
                    return false;
                }
                param.content = Content::Blocks(vec![ContentBlock::text(text.clone())]);
            }
            let Content::Blocks(blocks) = &mut param.content else {
                return false;
            };
            match blocks.get_mut(block) {
                Some(b) if is_eligible(b) => b.set_cache_control(ttl.marker()),
                _ => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::MessageParam;
    use threadline_wire::model::ModelTable;

    #[test]
    fn a_passed_table_decides_whether_prior_thinking_is_stripped() {
        let request = MessagesRequest::new(
            "claude-next",
            1024,
            vec![MessageParam::user(vec![ContentBlock::text("hi")])],
        );
        // Unknown to the builtin: the conservative row strips prior thinking.
        assert_eq!(strips_prior_thinking(&request), Some(0));
        let row = serde_json::json!({"id": "claude-next", "aliases": [],
            "context_window": 1_000_000, "max_output_tokens": 128_000,
            "min_cacheable_tokens": 1024, "thinking": ["adaptive"], "prefill": false,
            "sampling_params": false, "effort": [], "keeps_prior_thinking": true,
            "rejects_input_plus_max_tokens_over_window": false,
            "prices": {"input": 1.0, "output": 2.0, "cache_write_5m": 1.25,
                "cache_write_1h": 2.0, "cache_read": 0.1}});
        let table = ModelTable::builtin()
            .extended_from_json(&serde_json::json!({"models": [row]}).to_string())
            .expect("a valid extension");
        assert_eq!(strips_prior_thinking_in(&request, &table), None);
        assert_eq!(
            strips_prior_thinking_in(&request, ModelTable::builtin()),
            strips_prior_thinking(&request)
        );
    }
}
