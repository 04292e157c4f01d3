//! The message sequence, in one pass over the merged turns: roles, empty content, text blocks,
//! ids, `tool_use` → `tool_result` pairing in the immediately following message, server tool
//! calls left pending, and thinking-block order.

use std::collections::HashMap;

use super::View;
use super::cache::{Breakpoints, Ttl};
use super::hash::{IdHasherBuilder, IdSet};
use super::ids::{is_valid_server_tool_use_id, is_valid_tool_use_id};
use super::report::{Ctx, Loc};
use super::rule::{self, Rule};
use super::seen::Seen;
use super::text::{IN_MESSAGES, check_text_block, only_blank_text};
use super::turns::{Piece, Tail, Turn, TurnBlock, TurnBlocks, Turns};
use threadline_wire::content::{Content, ContentBlock, Role};
use threadline_wire::model::Capability;
use threadline_wire::tools::ToolDefinition;

/// Above this many pending `tool_use` ids, answers are looked up in a hash map.
const LINEAR_LOOKUP_MAX: usize = 16;

/// A client `tool_use` waiting for its result in the next turn.
#[derive(Debug, Clone, Copy)]
struct PendingUse<'a> {
    id: &'a str,
    loc: Loc,
    results: u32,
    answered: bool,
}

/// A `server_tool_use` of an assistant turn.
#[derive(Debug, Clone, Copy)]
struct ServerUse<'a> {
    id: &'a str,
    name: &'a str,
    loc: Loc,
    /// Its result block is in the same turn.
    resolved: bool,
    /// A `tool_use` of the same turn names it as `caller` (programmatic tool calling: the code
    /// is already running and resumes on the tool results).
    programmatic: bool,
}

/// The state carried from block to block and turn to turn.
#[derive(Default)]
struct Walk<'a> {
    /// Every `tool_use`, `server_tool_use` and `mcp_tool_use` id so far.
    ids: IdSet<'a>,
    /// Every `server_tool_use` and `mcp_tool_use` id so far.
    server_ids: IdSet<'a>,
    /// The previous turn's `tool_use` blocks, if it was an assistant turn.
    pending: Vec<PendingUse<'a>>,
    pending_index: HashMap<&'a str, usize, IdHasherBuilder>,
    /// The previous assistant turn's server tool calls that had no result in that turn.
    pending_server: Vec<ServerUse<'a>>,
    /// The current turn's `tool_use` blocks, `server_tool_use` blocks and callers.
    uses: Vec<PendingUse<'a>>,
    server_uses: Vec<ServerUse<'a>>,
    callers: Vec<&'a str>,
    /// The current turn's `tool_result` blocks answering nothing.
    orphans: Vec<&'a str>,
    first_orphan: Option<Loc>,
    /// The pending server calls that the request resumes (checked against `tools` at the end).
    resumed: Vec<ServerUse<'a>>,
    /// How many ids to make room for at the first one.
    reserve_hint: usize,
    /// What the rarer rules look for.
    seen: Seen,
}

/// Checks the messages; returns what the end-of-conversation rules need of the merged turns,
/// and what the rarer rules look for.
pub(super) fn check<'a>(
    ctx: &mut Ctx<'_>,
    view: &View<'a>,
    breakpoints: &mut Breakpoints,
) -> (Tail<'a>, Seen) {
    let messages = view.messages;
    let mut tail = Tail::default();
    if messages.is_empty() {
        let message = rule::EMPTY_MESSAGES.to_owned();
        ctx.report(Rule::EmptyMessages, Loc::Messages, message);
        return (tail, Seen::default());
    }
    let mut walk = Walk {
        reserve_hint: messages.len() / 2 + 1,
        ..Walk::default()
    };
    let mut turns = Turns::new(messages).enumerate().peekable();
    let mut warmed = 0;
    while let Some((t, turn)) = turns.next() {
        if turn.end + WARM_AHEAD > warmed {
            let end = (turn.end + 2 * WARM_AHEAD).min(messages.len());
            warm(messages.range(warmed.min(end)..end));
            warmed = end;
        }
        let is_last = turns.peek().is_none();
        let first_is_tool_result = walk.turn(ctx, view, breakpoints, &turn, t, is_last);
        tail.observe(t, turn, first_is_tool_result);
    }
    walk.check_resumed_server_tools(ctx, view.tools);
    (tail, walk.seen)
}

/// How many messages ahead of the walk their texts and ids are read into the cache.
const WARM_AHEAD: usize = 32;

/// Reads the first byte of every text and tool id of `messages` in one tight loop, so that
/// the cache misses of a few dozen messages overlap instead of stalling the walk one by one
/// (the walk reads them soon after, from the cache).
fn warm<'a>(messages: impl Iterator<Item = &'a threadline_wire::MessageParam>) {
    let mut sum = 0u8;
    let first = |s: &str| s.as_bytes().first().copied().unwrap_or(0);
    for message in messages {
        match &message.content {
            threadline_wire::Content::Text(text) => sum ^= first(text),
            threadline_wire::Content::Blocks(blocks) => {
                for block in blocks {
                    sum ^= match block {
                        ContentBlock::Text(b) => first(&b.text),
                        ContentBlock::ToolUse(b) => first(&b.id),
                        ContentBlock::ToolResult(b) => first(&b.tool_use_id),
                        _ => 0,
                    };
                }
            }
        }
    }
    std::hint::black_box(sum);
}

impl<'a> Walk<'a> {
    /// Checks turn `t`; returns whether its first piece is a `tool_result`.
    fn turn(
        &mut self,
        ctx: &mut Ctx<'_>,
        view: &View<'a>,
        breakpoints: &mut Breakpoints,
        turn: &Turn<'a>,
        t: usize,
        is_last: bool,
    ) -> bool {
        let messages = view.messages;
        for message in messages.range(turn.start..turn.end) {
            self.seen.message(message);
        }
        let is_user = *turn.role == Role::User;
        let is_assistant = *turn.role == Role::Assistant;
        let loc = turn.loc(t);
        match turn.role {
            Role::User | Role::Assistant => {}
            // Model-specific: only some models take mid-conversation system messages.
            Role::System if ctx.model.system_messages => {}
            Role::System => {
                let (path, api) = (loc.field("role"), format!("messages.{t}.role"));
                let refusal = rule::invalid_role(t);
                let at = (loc, path, api.as_str());
                ctx.report_capability_at(
                    Capability::SystemMessages,
                    Rule::InvalidRole,
                    at,
                    refusal,
                );
            }
            _ => {
                let path = loc.field("role");
                ctx.report_at(Rule::InvalidRole, loc, path, rule::invalid_role(t));
            }
        }
        // An effort-only system turn (empty content and `output_config` on every message)
        // renders nothing and is accepted anywhere (docs/api-notes.md, mid-conversation
        // system messages).
        let empty = turn.is_empty(messages) && !turn.is_effort_only(messages);
        // Whitespace-only text is rejected only in a turn holding nothing else (text.rs).
        let blank = only_blank_text(TurnBlocks::new(messages, turn, t).map(|tb| tb.piece.text()));
        if empty && !(is_last && is_assistant) {
            ctx.report(Rule::EmptyContent, turn.loc(t), rule::empty_content(t));
        }
        let answering = is_user && !self.pending.is_empty();
        if answering && self.pending.len() > LINEAR_LOOKUP_MAX {
            self.pending_index.clear();
            for (n, use_) in self.pending.iter().enumerate() {
                self.pending_index.entry(use_.id).or_insert(n);
            }
        }

        let mut leading = true;
        let mut only_results = true;
        let mut any_result = false;
        let mut first: Option<TurnBlock<'a>> = None;
        let mut has_thinking = false;
        let mut misplaced_result: Option<Loc> = None;
        for tb in TurnBlocks::new(messages, turn, t) {
            first.get_or_insert(tb);
            let loc = tb.loc;
            if !tb.piece.is_tool_result() {
                leading = false;
                only_results = false;
            }
            let block = match tb.piece {
                Piece::Str(text) => {
                    check_text(ctx, text, false, loc, empty, blank);
                    continue;
                }
                Piece::Block(block) => block,
            };
            self.seen.block(block);
            match block {
                ContentBlock::Text(text) => {
                    let marked = text.cache_control.is_some();
                    check_text(ctx, &text.text, marked, loc, empty, blank);
                }
                ContentBlock::ToolUse(tool_use) => {
                    let id = tool_use.id.as_str();
                    if !is_valid_tool_use_id(id) {
                        let message = rule::tool_use_id_pattern(&loc.api());
                        ctx.report_at(Rule::ToolUseIdPattern, loc, loc.field("id"), message);
                    }
                    self.unique_id(ctx, id, loc);
                    if is_assistant {
                        self.uses.push(PendingUse {
                            id,
                            loc,
                            results: 0,
                            answered: false,
                        });
                        if let Some(caller) = tool_use
                            .caller
                            .as_ref()
                            .and_then(|c| c.get("tool_id"))
                            .and_then(|id| id.as_str())
                        {
                            self.callers.push(caller);
                        }
                    }
                }
                ContentBlock::ServerToolUse(server_use) => {
                    let id = server_use.id.as_str();
                    if !is_valid_server_tool_use_id(id) {
                        let message = rule::server_tool_use_id_pattern(&loc.api());
                        let path = loc.field("id");
                        ctx.report_at(Rule::ServerToolUseIdPattern, loc, path, message);
                    }
                    self.unique_id(ctx, id, loc);
                    self.server_ids.insert(id);
                    if is_assistant {
                        self.server_uses.push(ServerUse {
                            id,
                            name: &server_use.name,
                            loc,
                            resolved: false,
                            programmatic: false,
                        });
                    }
                }
                ContentBlock::McpToolUse(mcp_use) => {
                    self.unique_id(ctx, &mcp_use.id, loc);
                    self.server_ids.insert(&mcp_use.id);
                }
                ContentBlock::ToolResult(result) => {
                    if is_user {
                        any_result = true;
                        self.answer(ctx, &result.tool_use_id, loc, leading);
                    } else {
                        misplaced_result.get_or_insert(loc);
                    }
                    if let Some(Content::Blocks(nested)) = &result.content {
                        check_nested(ctx, breakpoints, nested, loc);
                    }
                }
                ContentBlock::SearchResult(search) => {
                    check_nested(ctx, breakpoints, &search.content, loc);
                }
                ContentBlock::Thinking(thinking) => {
                    has_thinking = true;
                    if thinking.signature.is_none() {
                        let message = rule::thinking_signature_missing(&loc.api());
                        let path = loc.field("signature");
                        ctx.report_at(Rule::ThinkingSignatureMissing, loc, path, message);
                    }
                    check_thinking_marker(ctx, &thinking.extra, "thinking", loc);
                }
                ContentBlock::RedactedThinking(redacted) => {
                    has_thinking = true;
                    check_thinking_marker(ctx, &redacted.extra, "redacted_thinking", loc);
                }
                ContentBlock::Unknown(value) => {
                    // The result block of a server tool this version does not know.
                    let tag = block.tag();
                    if tag.ends_with("_tool_result")
                        && let Some(id) = value.get("tool_use_id").and_then(|id| id.as_str())
                    {
                        self.server_result(ctx, tag, id, loc);
                    }
                    if let Some(marker) = value.get("cache_control").filter(|m| m.is_object()) {
                        breakpoints.marker(ctx, Ttl::of_value(marker), loc);
                    }
                }
                other => {
                    if let Some(result) = other.server_tool_result() {
                        self.server_result(ctx, other.tag(), &result.tool_use_id, loc);
                    }
                }
            }
            if let Some(marker) = block.cache_control() {
                breakpoints.marker(ctx, marker.into(), loc);
            }
        }

        if let Some(loc) = self.first_orphan.take() {
            let message = rule::orphan_tool_result(&loc.api(), &self.orphans);
            ctx.report(Rule::OrphanToolResult, loc, message);
        }
        self.orphans.clear();
        if let Some(loc) = misplaced_result {
            let message = rule::tool_result_in_assistant(t);
            ctx.report(Rule::ToolResultInAssistant, loc.message(), message);
        }
        self.report_unanswered(ctx, t);
        // A pending server call needs the next user turn to hold tool results and nothing
        // else; any other content ends the assistant turn with the call unresolved.
        if is_user && !(only_results && any_result) {
            for pending in &self.pending_server {
                let message = rule::server_tool_pending(pending.name, pending.id);
                ctx.report(Rule::ServerToolPending, pending.loc, message);
            }
        }
        if is_assistant
            && has_thinking
            && let Some(first) = first
            && !first.piece.is_thinking()
        {
            let message = rule::thinking_not_first(t, first.piece.tag());
            ctx.report(Rule::ThinkingNotFirst, first.loc, message);
        }

        if is_last && is_user && only_results && any_result {
            self.resumed.extend(self.pending_server.iter().copied());
        }
        self.pending.clear();
        self.pending_server.clear();
        if is_assistant {
            std::mem::swap(&mut self.pending, &mut self.uses);
            for server_use in &mut self.server_uses {
                server_use.programmatic = self.callers.contains(&server_use.id);
            }
            self.pending_server
                .extend(self.server_uses.iter().filter(|u| !u.resolved).copied());
            if is_last {
                self.resumed.extend(self.pending_server.iter().copied());
            }
        }
        self.uses.clear();
        self.server_uses.clear();
        self.callers.clear();
        first.is_some_and(|first| first.piece.is_tool_result())
    }

    /// Reports a repeated `tool_use` / `server_tool_use` id.
    fn unique_id(&mut self, ctx: &mut Ctx<'_>, id: &'a str, loc: Loc) {
        if self.ids.capacity() == 0 {
            // One call per remaining message is a good first guess for a tool loop; it saves
            // the rehashing of repeated growth.
            self.ids.reserve(self.reserve_hint);
        }
        if !self.ids.insert(id) {
            let message = rule::duplicate_tool_use_id(&loc.api());
            ctx.report(Rule::DuplicateToolUseId, loc, message);
        }
    }

    /// A `tool_result` for `id` in a user turn; `leading` when only results precede it.
    fn answer(&mut self, ctx: &mut Ctx<'_>, id: &'a str, loc: Loc, leading: bool) {
        let slot = if self.pending.len() > LINEAR_LOOKUP_MAX {
            self.pending_index.get(id).copied()
        } else {
            self.pending.iter().position(|p| p.id == id)
        };
        let Some(slot) = slot else {
            self.orphans.push(id);
            self.first_orphan.get_or_insert(loc);
            return;
        };
        let pending = &mut self.pending[slot];
        pending.results += 1;
        if pending.results > 1 {
            let message = rule::duplicate_tool_result(&loc.api(), id);
            ctx.report(Rule::DuplicateToolResult, loc, message);
        } else if leading {
            pending.answered = true;
        }
    }

    /// A server tool result block answering `id`.
    fn server_result(&mut self, ctx: &mut Ctx<'_>, tag: &str, id: &'a str, loc: Loc) {
        if !self.server_ids.contains(id) {
            let message = rule::orphan_server_tool_result(&loc.api(), tag, id);
            ctx.report(Rule::OrphanServerToolResult, loc, message);
            return;
        }
        // Results usually follow their call closely: search from the end.
        if let Some(server_use) = self.server_uses.iter_mut().rev().find(|u| u.id == id) {
            server_use.resolved = true;
        }
    }

    /// Reports the previous assistant turn's `tool_use` ids that the current turn (`t`) did
    /// not answer first thing.
    fn report_unanswered(&mut self, ctx: &mut Ctx<'_>, t: usize) {
        let mut unanswered = self.pending.iter().filter(|p| !p.answered);
        let Some(first) = unanswered.next() else {
            return;
        };
        let mut ids = vec![first.id];
        ids.extend(unanswered.map(|p| p.id));
        let message = rule::tool_use_without_result(t - 1, &ids);
        ctx.report(Rule::ToolUseWithoutResult, first.loc.message(), message);
    }

    /// A request resuming a turn whose server tool call is still pending must still define
    /// that server tool (except a programmatic-tool-calling code execution, which is already
    /// running).
    fn check_resumed_server_tools(&self, ctx: &mut Ctx<'_>, tools: &[ToolDefinition]) {
        for pending in self.resumed.iter().filter(|u| !u.programmatic) {
            let provided = tools.iter().any(|tool| {
                let name = tool.name();
                name == pending.name
                    || (name == "code_execution"
                        && matches!(
                            pending.name,
                            "bash_code_execution" | "text_editor_code_execution"
                        ))
            });
            if !provided {
                let message = rule::server_tool_not_provided(pending.name, pending.id);
                ctx.report(Rule::ServerToolNotProvided, pending.loc, message);
            }
        }
    }
}

/// Text checks; an empty block in a message that is empty as a whole is reported once, for
/// the message. `blank_list`: the block's content list holds only blank text.
fn check_text(
    ctx: &mut Ctx<'_>,
    text: &str,
    has_marker: bool,
    loc: Loc,
    message_empty: bool,
    blank_list: bool,
) {
    if text.is_empty() && message_empty {
        return;
    }
    check_text_block(ctx, text, has_marker, loc, IN_MESSAGES, blank_list);
}

/// The blocks of a `tool_result` or `search_result`: text checks and cache markers.
fn check_nested(
    ctx: &mut Ctx<'_>,
    breakpoints: &mut Breakpoints,
    blocks: &[ContentBlock],
    parent: Loc,
) {
    let blank = only_blank_text(blocks.iter().map(|b| match b {
        ContentBlock::Text(text) => Some(text.text.as_str()),
        _ => None,
    }));
    for (k, block) in blocks.iter().enumerate() {
        let loc = parent.nested(k);
        if let ContentBlock::Text(text) = block {
            let marked = text.cache_control.is_some();
            check_text(ctx, &text.text, marked, loc, false, blank);
        }
        if let Some(marker) = block.cache_control() {
            breakpoints.marker(ctx, marker.into(), loc);
        } else if let ContentBlock::Unknown(value) = block
            && let Some(marker) = value.get("cache_control").filter(|m| m.is_object())
        {
            breakpoints.marker(ctx, Ttl::of_value(marker), loc);
        }
    }
}

/// Thinking blocks have no `cache_control` field; one sent anyway lands in `extra`.
fn check_thinking_marker(ctx: &mut Ctx<'_>, extra: &threadline_wire::Extra, tag: &str, loc: Loc) {
    if extra.get("cache_control").is_some_and(|m| !m.is_null()) {
        let message = rule::cache_control_on_thinking(&loc.api(), tag);
        let path = loc.field("cache_control");
        ctx.report_at(Rule::CacheControlOnThinking, loc, path, message);
    }
}
