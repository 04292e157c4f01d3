//! Mid-session tool changes: the user-facing description is on [`ToolChanges`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use threadline_wire::model::{Feature, Model};
use threadline_wire::tool_change::{ToolChangeBlock, ToolRef};
use threadline_wire::{
    Content, ContentBlock, MessageParam, Messages, MessagesRequest, Role, ToolDefinition,
};

use crate::tool::{Tool as LoopTool, ToolSet};

/// Changing the offered tools mid-session without breaking the cached prefix.
///
/// A session's tool set changes under it: a tool is enabled or disabled, an MCP server
/// connects with its tools or goes away. The prompt cache is keyed `tools` → `system` →
/// `messages`, so editing `tools` invalidates everything. On a model with
/// [`Feature::ToolChanges`] (beta `mid-conversation-tool-changes-2026-07-01`) the loop never
/// edits it: `tools` keeps every tool ever declared, in its first order and bytes; a tool
/// first offered later is appended with `defer_loading: true` (deferred tools are not in the
/// cached prefix) and announced by a `tool_addition` block; a withdrawn tool stays declared
/// and is withdrawn by a `tool_removal` block. The blocks go in a `role: "system"` message
/// appended after the last user message (a place the API allows: after a user turn, never
/// between a `tool_use` and its result, followed only by the model's answer), and every later
/// request repeats that message at the same place — append, never edit. A tool deferred from
/// the start (tool search) and then withdrawn gets its `tool_removal` too, and is no longer
/// run.
///
/// What is inferred, not verified: that the appended deferred definition keeps the cached
/// prefix. The `tools` array does grow by it; docs/api-notes.md#tool-search says deferred tools are
/// not in the prefix (the server renders them at the prompt's tail), so the cache simulator
/// and the loopback prefix checks leave deferred tools out. The API's cache diagnostics
/// compare request structure, not hits, and may still name such a request `tools_changed`
/// (with high cache reads: a late change behind the breakpoint). Tools known at the start —
/// declared deferred there and surfaced by `tool_addition` later — leave `tools` untouched
/// byte for byte; prefer that where the tool set is known. The `anthropic-beta` set also grows
/// by the feature's beta at the first change (the header is derived from the body); whether a
/// changed beta set costs the cache is not documented.
///
/// A model without the feature gets today's behaviour: `tools` lists what is offered now, so
/// the array changes and the cached prefix breaks at the first changed tool; the
/// [`ToolsChanged`] event says where, in the words of `threadline-cache`'s break report
/// (`tools.N: tools changed (`name`)`).
///
/// On a model that binds thinking to its prefix ([`Model::binds_thinking`]: Haiku 5.5, which
/// does not claim the feature) a changed set of non-deferred tools is an edit before every
/// thinking block already written, and the API refuses a request that sends one back. So the
/// request that changes them, and every later one until the next compaction, leaves the
/// `thinking` and `redacted_thinking` blocks of the assistant messages before the change out
/// (`text` and `tool_use` stay: the API's own advice for a changed prefix); thinking written
/// after the change is bound to the new tools and is sent as usual. The event's
/// [`thinking_left_out`](ToolsChanged::thinking_left_out) counts those messages.
///
/// [`Model::binds_thinking`]: threadline_wire::model::Model::binds_thinking
///
/// What the model is offered is the fold of the additions and removals over the request
/// ([`offered_tools`](crate::offered_tools)); a `tool_use` of a withdrawn tool is answered with an error result (the
/// executor no longer runs it), never dropped.
///
/// [`Feature::ToolChanges`]: threadline_wire::model::Feature::ToolChanges
///
/// A handle on the session's offered tools: clone it, give one clone to the loop
/// ([`Query::with_tool_changes`](crate::Query::with_tool_changes)), and change the tools
/// through any clone, from a tool's call or between runs. Changes take effect at the next
/// request that ends with a user message.
#[derive(Clone, Default)]
pub struct ToolChanges {
    inner: Arc<Mutex<Ledger>>,
}

impl fmt::Debug for ToolChanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ledger = self.lock();
        f.debug_struct("ToolChanges")
            .field("offered", &ledger.offered)
            .field("pending", &ledger.pending.len())
            .finish_non_exhaustive()
    }
}

/// One queued change.
enum Op {
    Enable(Arc<dyn LoopTool>),
    Reoffer(String),
    Disable(String),
    Connect(String, Vec<Arc<dyn LoopTool>>, ServerConnection),
    Disconnect(String),
    Leave(ServerConnection),
}

/// One connection of a server, as [`ToolChanges::connect_server`] registered it: what
/// [`ToolChanges::server_left`] withdraws, and only while it is the server's latest
/// connection (a server restarted under the same name is not withdrawn by the old
/// connection's late report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConnection {
    server: String,
    id: u64,
}

/// A `system` message of tool changes the loop placed: it goes right before the
/// `(after_assistants + 1)`-th assistant message of every later request (at the end when
/// there is none yet).
#[derive(Debug, Clone)]
struct Announcement {
    after_assistants: usize,
    blocks: Vec<ContentBlock>,
}

#[derive(Default)]
struct Ledger {
    pending: Vec<Op>,
    dropped: usize,
    started: bool,
    /// Every tool ever declared, in first order, frozen.
    declared: Vec<ToolDefinition>,
    /// The tools offered from the start (declared and not deferred at the session's start).
    initially_offered: BTreeSet<String>,
    /// What the model is offered now.
    offered: BTreeSet<String>,
    /// Tools deferred from the start (never offered, found by tool search) that were
    /// withdrawn: announced by a `tool_removal`, no longer run, left out of a changed `tools`.
    hidden: BTreeSet<String>,
    /// Tools added after the start, to run.
    added: BTreeMap<String, Arc<dyn LoopTool>>,
    /// The tools of each connected server, and its latest connection's id.
    servers: BTreeMap<String, (u64, Vec<String>)>,
    /// The last connection id handed out.
    connections: u64,
    /// Announcements placed since the last compaction.
    announced: Vec<Announcement>,
    compactions: u32,
    /// The last server-side `compaction` block seen (its hash): the API drops everything
    /// before it, announcements included.
    server_compaction: Option<u64>,
    /// The `tools` of the last request (the fallback path compares against it).
    last_tools: Option<Vec<ToolDefinition>>,
    /// On a model that binds thinking to its prefix: how many assistant messages, from the
    /// request's start, were written before the non-deferred tools last changed; their
    /// thinking is left out of every request until the next compaction.
    unbound_before: usize,
    /// Whether the last request announced changes in place (the model's feature).
    in_place: bool,
}

impl ToolChanges {
    /// A handle with no changes.
    pub fn new() -> ToolChanges {
        ToolChanges::default()
    }

    fn lock(&self) -> MutexGuard<'_, Ledger> {
        // A panic elsewhere while holding the lock leaves the ledger consistent (every change
        // is applied under one lock), so a poisoned lock is used as it is.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, op: Op) {
        let mut ledger = self.lock();
        ledger.queue(op);
    }

    /// Offers `tool` from the next request on (declaring it if it is new).
    pub fn enable(&self, tool: Arc<dyn LoopTool>) {
        self.push(Op::Enable(tool));
    }

    /// Offers again the tool declared as `name` (withdrawn earlier, or declared deferred).
    pub fn reoffer(&self, name: impl Into<String>) {
        self.push(Op::Reoffer(name.into()));
    }

    /// Withdraws the tool named `name` from the next request on.
    pub fn disable(&self, name: impl Into<String>) {
        self.push(Op::Disable(name.into()));
    }

    /// A server connected: offers its `tools` (named as the model sees them) from the next
    /// request on. A server already connected under that name is replaced (the tools it no
    /// longer lists are withdrawn). The connection returned is what
    /// [`server_left`](ToolChanges::server_left) takes.
    pub fn connect_server(
        &self,
        server: impl Into<String>,
        tools: Vec<Arc<dyn LoopTool>>,
    ) -> ServerConnection {
        let mut ledger = self.lock();
        ledger.connections += 1;
        let connection = ServerConnection {
            server: server.into(),
            id: ledger.connections,
        };
        ledger.queue(Op::Connect(
            connection.server.clone(),
            tools,
            connection.clone(),
        ));
        connection
    }

    /// A server went away: withdraws every tool it brought, whichever connection it is.
    pub fn disconnect_server(&self, server: impl Into<String>) {
        self.push(Op::Disconnect(server.into()));
    }

    /// The connection `connection` ended: withdraws its server's tools, unless the server
    /// has connected again since (its new connection's tools stay).
    pub fn server_left(&self, connection: ServerConnection) {
        self.push(Op::Leave(connection));
    }

    /// The names the model is offered now (sorted; pending changes not included).
    pub fn offered(&self) -> Vec<String> {
        self.lock().offered.iter().cloned().collect()
    }

    /// How many changes wait for the next request that ends with a user message.
    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// How many changes were dropped because [`ToolChanges::MAX_PENDING`] were already queued.
    pub fn dropped(&self) -> usize {
        self.lock().dropped
    }

    /// Applies the ledger to `request` (built with the session's `base` tools): its `tools`
    /// and the tool change messages. Returns the tools the executor may run when they
    /// changed, and the change to report.
    pub(crate) fn apply(
        &self,
        request: &mut MessagesRequest,
        model: &Model,
        compactions: u32,
        base: &ToolSet,
    ) -> Applied {
        let mut ledger = self.lock();
        ledger.start(request, compactions);
        let (server_compaction, after_compaction) = last_compaction(&request.messages);
        if ledger.compactions != compactions || ledger.server_compaction != server_compaction {
            ledger.compactions = compactions;
            ledger.server_compaction = server_compaction;
            ledger.collapse(after_compaction);
        }
        let in_place = model.supports(Feature::ToolChanges) && model.system_messages;
        ledger.in_place = in_place;
        let ready = request
            .messages
            .last()
            .is_some_and(|m| m.role == Role::User);
        let mut applied = Applied::default();
        if ready && !ledger.pending.is_empty() {
            let before = ledger.offered.clone();
            let hidden_before = ledger.hidden.clone();
            let ops = std::mem::take(&mut ledger.pending);
            for op in ops {
                ledger.apply_op(op, in_place);
            }
            let added: Vec<String> = ledger.offered.difference(&before).cloned().collect();
            let removed: BTreeSet<String> = before
                .difference(&ledger.offered)
                .chain(ledger.hidden.difference(&hidden_before))
                .cloned()
                .collect();
            let removed: Vec<String> = removed.into_iter().collect();
            applied.runnable = Some(ledger.runnable(base));
            if !added.is_empty() || !removed.is_empty() {
                if in_place {
                    let blocks = change_blocks(&added, &removed);
                    let after_assistants = assistants(&request.messages);
                    ledger.announced.push(Announcement {
                        after_assistants,
                        blocks,
                    });
                }
                applied.changed = Some(ToolsChanged {
                    added,
                    removed,
                    thinking_left_out: 0,
                    via: if in_place {
                        ToolChangeVia::SystemMessage
                    } else {
                        ToolChangeVia::ToolsArray {
                            first_changed: None,
                        }
                    },
                });
            }
        }
        let tools: Vec<ToolDefinition> = if in_place {
            ledger.declared.clone()
        } else {
            ledger
                .declared
                .iter()
                .filter(|t| {
                    (t.is_deferred() && !ledger.hidden.contains(t.name()))
                        || ledger.offered.contains(t.name())
                })
                .cloned()
                .collect()
        };
        let plain_change = ledger
            .last_tools
            .as_deref()
            .and_then(|previous| first_change(&plain(previous), &plain(&tools)));
        if in_place
            && let Some(changed) = &mut applied.changed
            && let Some(first) = plain_change.clone()
        {
            // A tool declared plainly because nothing else was left undeferred: the cached
            // prefix (the undeferred tools) changed after all.
            changed.via = ToolChangeVia::ToolsArray {
                first_changed: Some(first),
            };
        }
        if plain_change.is_some() && model.binds_thinking() {
            ledger.unbound_before = assistants(&request.messages);
            if let Some(changed) = &mut applied.changed {
                changed.thinking_left_out = ledger.unbound_before;
            }
        }
        if let Some(ToolsChanged {
            via: ToolChangeVia::ToolsArray { first_changed },
            ..
        }) = &mut applied.changed
            && !in_place
        {
            *first_changed = ledger
                .last_tools
                .as_deref()
                .and_then(|previous| first_change(previous, &tools));
        }
        ledger.last_tools = Some(tools.clone());
        request.tools = (!tools.is_empty()).then_some(tools);
        leave_thinking_out(&mut request.messages, ledger.unbound_before);
        if in_place {
            insert_announcements(&mut request.messages, &ledger.announced);
        }
        applied
    }
}

impl ToolChanges {
    /// Repeats on `request` (the loop's preview of its next request, for a summary or
    /// compaction request) what the last request the loop built carried: its `tools`, the
    /// announcements at their places, and the thinking left out after a changed `tools` on a
    /// binding model. Pending changes are not applied. The ledger outlives a run (the
    /// facade starts a loop per prompt with the same handle), so this holds for the first
    /// preview of a run too. (Before the session's first request there is nothing to
    /// repeat.)
    pub(crate) fn replay(&self, request: &mut MessagesRequest) {
        let ledger = self.lock();
        if !ledger.started {
            return;
        }
        if let Some(tools) = &ledger.last_tools {
            request.tools = (!tools.is_empty()).then(|| tools.clone());
        }
        leave_thinking_out(&mut request.messages, ledger.unbound_before);
        if ledger.in_place {
            insert_announcements(&mut request.messages, &ledger.announced);
        }
    }
}

/// What [`ToolChanges::apply`] did to one request.
#[derive(Default)]
pub(crate) struct Applied {
    /// The tools the executor may run, when they changed.
    pub(crate) runnable: Option<ToolSet>,
    /// The change made, to report.
    pub(crate) changed: Option<ToolsChanged>,
}

/// A change of the offered tools, as the loop sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolsChanged {
    /// Tools offered from this request on (sorted).
    pub added: Vec<String>,
    /// Tools withdrawn from this request on (sorted).
    pub removed: Vec<String>,
    /// How the change reached the model.
    pub via: ToolChangeVia,
    /// On a model that binds thinking to its prefix, when the non-deferred tools changed:
    /// the assistant messages before the change, whose thinking this request and every
    /// later one until the next compaction leave out (0 otherwise).
    pub thinking_left_out: usize,
}

/// How a tool change reached the model.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChangeVia {
    /// `tool_addition` / `tool_removal` blocks in an appended `system` message: `tools` and
    /// the cached prefix unchanged.
    SystemMessage,
    /// A changed `tools` array (a model without mid-conversation tool changes): the cached
    /// prefix breaks at `tools.N`, the first tool that differs.
    ToolsArray {
        /// The index of the first changed tool (`None` on the session's first request).
        first_changed: Option<(usize, Option<String>)>,
    },
}

impl ToolsChanged {
    /// The cache break the change causes, as `threadline-cache` reports one (`tools.N: tools
    /// changed (`name`)`); `None` when the prefix survives.
    pub fn cache_break(&self) -> Option<String> {
        match &self.via {
            ToolChangeVia::SystemMessage => None,
            ToolChangeVia::ToolsArray {
                first_changed: Some((index, Some(name))),
            } => Some(format!("tools.{index}: tools changed (`{name}`)")),
            ToolChangeVia::ToolsArray {
                first_changed: Some((index, None)),
            } => Some(format!("tools.{index}: tools changed")),
            ToolChangeVia::ToolsArray {
                first_changed: None,
            } => None,
        }
    }
}

impl Ledger {
    fn queue(&mut self, op: Op) {
        if self.pending.len() < ToolChanges::MAX_PENDING {
            self.pending.push(op);
        } else {
            self.dropped += 1;
        }
    }

    fn start(&mut self, request: &MessagesRequest, compactions: u32) {
        if self.started {
            return;
        }
        self.started = true;
        self.compactions = compactions;
        self.server_compaction = last_compaction(&request.messages).0;
        self.declared = request.tools.clone().unwrap_or_default();
        self.initially_offered = self
            .declared
            .iter()
            .filter(|t| !t.is_deferred())
            .map(|t| t.name().to_owned())
            .collect();
        self.offered = self.initially_offered.clone();
    }

    /// After a compaction the earlier messages are gone (a local compaction replaced them; a
    /// server-side one makes the API drop everything before its block): the net change since
    /// the start is announced once, after the first user message that follows (the
    /// `after_assistants`-th assistant message).
    fn collapse(&mut self, after_assistants: usize) {
        self.announced.clear();
        // A compaction's kept turns carry no thinking on a binding model, and what follows
        // it was written under the current tools.
        self.unbound_before = 0;
        let added: Vec<String> = self
            .offered
            .difference(&self.initially_offered)
            .cloned()
            .collect();
        let removed: BTreeSet<String> = self
            .initially_offered
            .difference(&self.offered)
            .chain(self.hidden.iter())
            .cloned()
            .collect();
        let removed: Vec<String> = removed.into_iter().collect();
        if !added.is_empty() || !removed.is_empty() {
            self.announced.push(Announcement {
                after_assistants,
                blocks: change_blocks(&added, &removed),
            });
        }
    }

    fn is_declared(&self, name: &str) -> bool {
        self.declared.iter().any(|t| t.name() == name)
    }

    /// Withdraws `name`: from what is offered, or — a tool deferred from the start and
    /// never offered — from what tool search may surface.
    fn withdraw(&mut self, name: String) {
        let deferred = self
            .declared
            .iter()
            .any(|t| t.name() == name && t.is_deferred());
        if !self.offered.remove(&name) && deferred {
            self.hidden.insert(name);
        }
    }

    /// Declares `tool` if it is new (deferred when announced in place, unless nothing else
    /// would be left undeferred: the API rejects a `tools` array of deferred tools only).
    fn declare(&mut self, tool: Arc<dyn LoopTool>, in_place: bool) {
        let name = tool.name().to_owned();
        if !self.is_declared(&name) {
            let mut set = ToolSet::new();
            set.insert(Arc::clone(&tool));
            let some_plain = self.declared.iter().any(|t| !t.is_deferred());
            for mut definition in set.definitions() {
                if in_place
                    && some_plain
                    && let ToolDefinition::Custom(custom) = &mut definition
                {
                    custom.defer_loading = Some(true);
                }
                self.declared.push(definition);
            }
        }
        self.added.insert(name, tool);
    }

    fn apply_op(&mut self, op: Op, in_place: bool) {
        match op {
            Op::Enable(tool) => {
                let name = tool.name().to_owned();
                self.declare(tool, in_place);
                self.hidden.remove(&name);
                self.offered.insert(name);
            }
            Op::Reoffer(name) => {
                if self.is_declared(&name) {
                    self.hidden.remove(&name);
                    self.offered.insert(name);
                }
            }
            Op::Disable(name) => self.withdraw(name),
            Op::Connect(server, tools, connection) => {
                let mut names = Vec::with_capacity(tools.len());
                for tool in tools {
                    let name = tool.name().to_owned();
                    self.declare(tool, in_place);
                    self.hidden.remove(&name);
                    self.offered.insert(name.clone());
                    names.push(name);
                }
                // A server that reconnects: the tools it no longer lists are withdrawn.
                let gone: Vec<String> = self
                    .servers
                    .get(&server)
                    .into_iter()
                    .flat_map(|(_, tools)| tools)
                    .filter(|n| !names.contains(n))
                    .cloned()
                    .collect();
                for name in gone {
                    self.withdraw(name);
                }
                self.servers.insert(server, (connection.id, names));
            }
            Op::Disconnect(server) => {
                for name in self.servers.remove(&server).unwrap_or_default().1 {
                    self.withdraw(name);
                }
            }
            Op::Leave(connection) => {
                if self
                    .servers
                    .get(&connection.server)
                    .is_some_and(|(id, _)| *id == connection.id)
                {
                    for name in self
                        .servers
                        .remove(&connection.server)
                        .unwrap_or_default()
                        .1
                    {
                        self.withdraw(name);
                    }
                }
            }
        }
    }

    /// The tools the executor runs: the session's own and those added, less the withdrawn
    /// ones (a deferred tool never withdrawn stays runnable: tool search may surface it).
    fn runnable(&self, base: &ToolSet) -> ToolSet {
        let mut set = ToolSet::new();
        let deferred: BTreeSet<&str> = self
            .declared
            .iter()
            .filter(|t| t.is_deferred())
            .map(ToolDefinition::name)
            .collect();
        let withdrawn = |name: &str| {
            let ever_offered =
                self.initially_offered.contains(name) || self.added.contains_key(name);
            self.hidden.contains(name)
                || (!self.offered.contains(name) && (ever_offered || !deferred.contains(name)))
        };
        for name in base.names() {
            if let Some(tool) = base.get(name)
                && !withdrawn(name)
            {
                set.insert(Arc::clone(tool));
            }
        }
        for (name, tool) in &self.added {
            if !withdrawn(name) {
                set.insert(Arc::clone(tool));
            }
        }
        set
    }
}

/// Removals first, then additions, each sorted: the same change always gives the same bytes.
fn change_blocks(added: &[String], removed: &[String]) -> Vec<ContentBlock> {
    removed
        .iter()
        .map(|name| ContentBlock::ToolRemoval(ToolChangeBlock::tool(name.as_str())))
        .chain(
            added
                .iter()
                .map(|name| ContentBlock::ToolAddition(ToolChangeBlock::tool(name.as_str()))),
        )
        .collect()
}

/// The hash of the last server-side `compaction` block, and how many assistant messages come
/// up to and including the one holding it (0 and `None` without one).
fn last_compaction(messages: &Messages) -> (Option<u64>, usize) {
    use std::hash::{Hash as _, Hasher as _};
    let mut seen = 0;
    let mut found = (None, 0);
    for message in messages.iter().filter(|m| m.role == Role::Assistant) {
        seen += 1;
        let Content::Blocks(blocks) = &message.content else {
            continue;
        };
        if let Some(block) = blocks
            .iter()
            .rev()
            .find(|b| matches!(b, ContentBlock::Compaction(_)))
        {
            let mut h = std::hash::DefaultHasher::new();
            serde_json::to_string(block)
                .unwrap_or_default()
                .hash(&mut h);
            found = (Some(h.finish()), seen);
        }
    }
    found
}

/// The tools in the cached prefix (the non-deferred ones), in order.
fn plain(tools: &[ToolDefinition]) -> Vec<ToolDefinition> {
    tools.iter().filter(|t| !t.is_deferred()).cloned().collect()
}

/// Leaves the `thinking` and `redacted_thinking` blocks of the first `count` assistant
/// messages out. (Normalization has dropped assistant messages that held only thinking, so
/// none is emptied; one that would be keeps its blocks rather than become an empty message.)
fn leave_thinking_out(messages: &mut Messages, count: usize) {
    if count == 0 {
        return;
    }
    let changed: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .take(count)
        .filter(|(_, m)| {
            matches!(&m.content, Content::Blocks(blocks)
                if blocks.iter().any(ContentBlock::is_thinking)
                    && blocks.iter().any(|b| !b.is_thinking()))
        })
        .map(|(i, _)| i)
        .collect();
    // Only the messages that change are touched (a shared message is copied when changed).
    for index in changed {
        if let Content::Blocks(blocks) = &mut messages[index].content {
            blocks.retain(|b| !b.is_thinking());
        }
    }
}

fn assistants(messages: &Messages) -> usize {
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// Puts each announcement's `system` message right before the assistant message that follows
/// the `after_assistants` it was placed after (at the end when there is none).
fn insert_announcements(messages: &mut Messages, announced: &[Announcement]) {
    if announced.is_empty() {
        return;
    }
    let assistant_at: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    // Past the last assistant message an announcement goes at the end, after the user message
    // it followed; a request that ends before that message (a preview of an older part)
    // leaves it out.
    let ends_with_user = messages.last().is_some_and(|m| m.role == Role::User);
    let mut placed: Vec<(usize, MessageParam)> = announced
        .iter()
        .filter_map(|a| {
            let at = match assistant_at.get(a.after_assistants) {
                Some(&at) => at,
                None if ends_with_user => messages.len(),
                None => return None,
            };
            let message = MessageParam::new(Role::System, Content::Blocks(a.blocks.clone()));
            Some((at, message))
        })
        .collect();
    // From the back, so earlier positions stay right; announcements at one place keep their
    // order (the later one is inserted first).
    placed.sort_by_key(|(at, _)| *at);
    for (at, message) in placed.into_iter().rev() {
        messages.insert(at, message);
    }
}

/// The first index at which `next` differs from `previous` (by JSON), with the tool's name.
fn first_change(
    previous: &[ToolDefinition],
    next: &[ToolDefinition],
) -> Option<(usize, Option<String>)> {
    let bytes = |t: &ToolDefinition| serde_json::to_string(t).unwrap_or_default();
    let n = previous.len().max(next.len());
    (0..n)
        .find(|&i| previous.get(i).map(bytes) != next.get(i).map(bytes))
        .map(|i| {
            let name = next.get(i).or(previous.get(i)).map(|t| t.name().to_owned());
            (i, name)
        })
}

/// The tools the model is offered after `messages`, by the fold of their tool changes over
/// `tools`: every declared tool not deferred from the start, then each `tool_addition` /
/// `tool_removal` of a `system` message in order (references by `tool_reference` name; MCP
/// references name no tool of `tools` and are left out).
pub fn offered<'a>(
    tools: &[ToolDefinition],
    messages: impl IntoIterator<Item = &'a MessageParam>,
) -> BTreeSet<String> {
    let mut now: BTreeSet<String> = tools
        .iter()
        .filter(|t| !t.is_deferred())
        .map(|t| t.name().to_owned())
        .collect();
    for message in messages.into_iter().filter(|m| m.role == Role::System) {
        let Content::Blocks(blocks) = &message.content else {
            continue;
        };
        for block in blocks {
            match block {
                ContentBlock::ToolAddition(change) => {
                    if let ToolRef::Tool(r) = &*change.tool {
                        now.insert(r.name.clone());
                    }
                }
                ContentBlock::ToolRemoval(change) => {
                    if let ToolRef::Tool(r) = &*change.tool {
                        now.remove(&r.name);
                    }
                }
                _ => {}
            }
        }
    }
    now
}

impl ToolChanges {
    /// The most changes queued between two requests (a bound against a runaway caller; changes
    /// beyond it are dropped, and [`ToolChanges::dropped`] counts them).
    pub const MAX_PENDING: usize = 4096;
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use threadline_wire::model::ModelTable;

    use super::*;
    use crate::tool::{self, ToolContext, ToolOutput, ToolStream};

    struct Named(&'static str);
    impl LoopTool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "A test tool."
        }
        fn input_schema(&self) -> serde_json::Value {
            json!({"type": "object"})
        }
        fn is_concurrency_safe(&self, _input: &serde_json::Value) -> bool {
            true
        }
        fn call(&self, _input: serde_json::Value, _ctx: ToolContext) -> ToolStream {
            tool::result(async { ToolOutput::text("ok") })
        }
    }

    fn base() -> ToolSet {
        ToolSet::new().with(Named("read")).with(Named("weather"))
    }

    fn request(messages: Vec<MessageParam>) -> MessagesRequest {
        let mut request = MessagesRequest::new("claude-opus-4-8", 1024, messages);
        request.tools = Some(base().definitions());
        request
    }

    fn user(text: &str) -> MessageParam {
        MessageParam::user(vec![ContentBlock::text(text)])
    }

    fn assistant(text: &str) -> MessageParam {
        MessageParam::assistant(vec![ContentBlock::text(text)])
    }

    fn roles(request: &MessagesRequest) -> Vec<&str> {
        request.messages.iter().map(|m| m.role.as_str()).collect()
    }

    #[test]
    fn in_place_changes_keep_tools_and_repeat_the_system_message_where_it_was() {
        let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
        let changes = ToolChanges::new();
        let mut first = request(vec![user("a")]);
        changes.apply(&mut first, model, 0, &base());
        let tools_before = serde_json::to_string(&first.tools).expect("json");
        changes.enable(Arc::new(Named("deploy")));
        changes.disable("weather");
        let mut second = request(vec![user("a"), assistant("b"), user("c")]);
        let applied = changes.apply(&mut second, model, 0, &base());
        let changed = applied.changed.expect("a change");
        assert_eq!(
            (changed.added.as_slice(), changed.removed.as_slice()),
            (&["deploy".to_owned()][..], &["weather".to_owned()][..])
        );
        assert_eq!(changed.cache_break(), None);
        let tools = second.tools.as_ref().expect("tools");
        let json = serde_json::to_string(tools).expect("json");
        assert!(
            json.starts_with(&tools_before[..tools_before.len() - 1]),
            "{json}"
        );
        assert!(tools[2].is_deferred());
        assert_eq!(roles(&second), ["user", "assistant", "user", "system"]);
        assert_eq!(
            offered(tools, &second.messages),
            BTreeSet::from(["deploy".to_owned(), "read".to_owned()])
        );
        let runnable = applied.runnable.expect("runnable changed");
        assert_eq!(runnable.names().collect::<Vec<_>>(), ["deploy", "read"]);
        // The next request repeats the message at its place, before the model's answer.
        let mut third = request(vec![
            user("a"),
            assistant("b"),
            user("c"),
            assistant("d"),
            user("e"),
        ]);
        let applied = changes.apply(&mut third, model, 0, &base());
        assert!(applied.changed.is_none() && applied.runnable.is_none());
        assert_eq!(
            roles(&third),
            ["user", "assistant", "user", "system", "assistant", "user"]
        );
        assert_eq!(third.messages[3], second.messages[3]);
        assert_eq!(third.tools, second.tools);
        // After a compaction the net change is announced once after the first user message.
        let mut compacted = request(vec![user("summary"), assistant("f"), user("g")]);
        changes.apply(&mut compacted, model, 1, &base());
        assert_eq!(roles(&compacted), ["user", "system", "assistant", "user"]);
        assert_eq!(compacted.messages[1], second.messages[3]);
    }

    #[test]
    fn a_late_leave_of_an_old_connection_keeps_the_servers_new_tools() {
        // A server killed and restarted under the same name: the old connection's leaving
        // may be noticed (by a poll) after the new one registered; it withdrew the new
        // connection's tools.
        let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
        let changes = ToolChanges::new();
        let mut first = request(vec![user("a")]);
        changes.apply(&mut first, model, 0, &base());
        let old = changes.connect_server("calc", vec![Arc::new(Named("add"))]);
        let new = changes.connect_server("calc", vec![Arc::new(Named("add"))]);
        assert_ne!(old, new);
        changes.server_left(old);
        let mut second = request(vec![user("a"), assistant("b"), user("c")]);
        changes.apply(&mut second, model, 0, &base());
        assert!(changes.offered().contains(&"add".to_owned()));
        // The latest connection's leaving withdraws them.
        changes.server_left(new);
        let mut third = request(vec![
            user("a"),
            assistant("b"),
            user("c"),
            assistant("d"),
            user("e"),
        ]);
        let changed = changes
            .apply(&mut third, model, 0, &base())
            .changed
            .expect("a change");
        assert_eq!(changed.removed, ["add".to_owned()]);
        assert!(!changes.offered().contains(&"add".to_owned()));
    }

    fn thinking_answer(thinking: &str, text: &str) -> MessageParam {
        let thinking: ContentBlock = serde_json::from_value(
            json!({"type": "thinking", "thinking": thinking, "signature": "sig"}),
        )
        .expect("thinking");
        MessageParam::assistant(vec![thinking, ContentBlock::text(text)])
    }

    fn thinks(message: &MessageParam) -> bool {
        matches!(&message.content, Content::Blocks(b) if b.iter().any(ContentBlock::is_thinking))
    }

    #[test]
    fn a_changed_tools_on_a_binding_model_leaves_the_thinking_before_it_out_until_a_compaction() {
        // Haiku 5.5 binds thinking to its prefix and does not claim tool changes in place: a
        // server that connects changes `tools`, and the thinking written before that would
        // be refused.
        let model = ModelTable::builtin().resolve("claude-haiku-5-5").model();
        assert!(model.binds_thinking() && !model.supports(Feature::ToolChanges));
        let changes = ToolChanges::new();
        let mut first = request(vec![user("a")]);
        changes.apply(&mut first, model, 0, &base());
        changes.connect_server("docs", vec![Arc::new(Named("search"))]);
        let history = vec![
            user("a"),
            thinking_answer("t1", "b"),
            user("c"),
            thinking_answer("t2", "d"),
            user("e"),
        ];
        let mut second = request(history.clone());
        let changed = changes
            .apply(&mut second, model, 0, &base())
            .changed
            .expect("a change");
        assert!(matches!(changed.via, ToolChangeVia::ToolsArray { .. }));
        assert_eq!(changed.thinking_left_out, 2);
        assert!(second.messages.iter().all(|m| !thinks(m)));
        assert_eq!(second.messages.len(), history.len(), "no message goes");
        // The next request leaves the same thinking out, and keeps what came after.
        let mut third_history = history.clone();
        third_history.extend([thinking_answer("t3", "f"), user("g")]);
        let mut third = request(third_history);
        let applied = changes.apply(&mut third, model, 0, &base());
        assert!(applied.changed.is_none());
        let thinking: Vec<bool> = third.messages.iter().map(thinks).collect();
        assert_eq!(thinking, [false, false, false, false, false, true, false]);
        // The preview of the next request repeats it.
        let mut preview = request(history.clone());
        changes.replay(&mut preview);
        assert_eq!(preview.messages, second.messages);
        assert_eq!(preview.tools, second.tools);
        // After a compaction everything sent was written under the current tools.
        let mut compacted = request(vec![user("summary"), thinking_answer("t4", "h"), user("i")]);
        changes.apply(&mut compacted, model, 1, &base());
        assert!(thinks(&compacted.messages[1]));
        // A model that does not bind keeps its thinking through the same change.
        let sonnet_4_5 = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
        let free = ToolChanges::new();
        let mut first = request(vec![user("a")]);
        free.apply(&mut first, sonnet_4_5, 0, &base());
        free.connect_server("docs", vec![Arc::new(Named("search"))]);
        let mut second = request(history);
        let changed = free
            .apply(&mut second, sonnet_4_5, 0, &base())
            .changed
            .expect("a change");
        assert_eq!(changed.thinking_left_out, 0);
        assert!(thinks(&second.messages[1]));
    }

    #[test]
    fn the_preview_repeats_the_announcements_and_tools_of_the_last_request() {
        // Found by the facade's hostile binding property: the summary request lacked the
        // announcement `system` message that came before bound thinking (refused), and, in
        // the next run's first preview, had the announcement without the tool it names.
        let model = ModelTable::builtin().resolve("claude-opus-5-5").model();
        let changes = ToolChanges::new();
        let mut first = request(vec![user("a")]);
        changes.apply(&mut first, model, 0, &base());
        changes.connect_server("docs", vec![Arc::new(Named("search"))]);
        let mut second = request(vec![user("a"), thinking_answer("t1", "b"), user("c")]);
        changes.apply(&mut second, model, 0, &base());
        let history = vec![
            user("a"),
            thinking_answer("t1", "b"),
            user("c"),
            thinking_answer("t2", "d"),
            user("e"),
        ];
        let mut sent = request(history.clone());
        changes.apply(&mut sent, model, 0, &base());
        let mut preview = request(history);
        changes.replay(&mut preview);
        assert_eq!(preview.messages, sent.messages);
        assert_eq!(preview.tools, sent.tools);
        assert_eq!(
            roles(&preview),
            ["user", "assistant", "user", "system", "assistant", "user"]
        );
        // Nothing before the session's first request.
        let mut untouched = request(vec![user("a")]);
        ToolChanges::new().replay(&mut untouched);
        assert_eq!(untouched, request(vec![user("a")]));
    }

    #[test]
    fn disabling_a_tool_deferred_from_the_start_withdraws_it() {
        // Review finding: a tool deferred at the start (tool search) was never "offered", so
        // disabling it sent nothing and the executor still ran it.
        let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
        let changes = ToolChanges::new();
        let with_deferred = |messages| {
            let mut r = request(messages);
            let tools = r.tools.as_mut().expect("tools");
            tools[1].set_deferred(true);
            r
        };
        let mut first = with_deferred(vec![user("a")]);
        changes.apply(&mut first, model, 0, &base());
        changes.disable("weather");
        let mut second = with_deferred(vec![user("a"), assistant("b"), user("c")]);
        let applied = changes.apply(&mut second, model, 0, &base());
        let changed = applied.changed.expect("a change");
        assert!(changed.added.is_empty());
        assert_eq!(changed.removed, ["weather".to_owned()]);
        assert_eq!(second.tools, first.tools, "tools keep their bytes");
        assert_eq!(roles(&second), ["user", "assistant", "user", "system"]);
        let runnable = applied.runnable.expect("runnable changed");
        assert_eq!(runnable.names().collect::<Vec<_>>(), ["read"]);
        // Re-offered: surfaced by an addition, and run again.
        changes.reoffer("weather");
        let mut third = with_deferred(vec![
            user("a"),
            assistant("b"),
            user("c"),
            assistant("d"),
            user("e"),
        ]);
        let applied = changes.apply(&mut third, model, 0, &base());
        assert_eq!(
            applied.changed.expect("a change").added,
            ["weather".to_owned()]
        );
        let runnable = applied.runnable.expect("runnable changed");
        assert_eq!(runnable.names().collect::<Vec<_>>(), ["read", "weather"]);
    }

    #[test]
    fn a_server_that_reconnects_with_fewer_tools_withdraws_the_rest() {
        let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
        let changes = ToolChanges::new();
        let mut first = request(vec![user("a")]);
        changes.apply(&mut first, model, 0, &base());
        changes.connect_server("srv", vec![Arc::new(Named("one")), Arc::new(Named("two"))]);
        let mut second = request(vec![user("a"), assistant("b"), user("c")]);
        changes.apply(&mut second, model, 0, &base());
        changes.connect_server("srv", vec![Arc::new(Named("one"))]);
        let mut third = request(vec![
            user("a"),
            assistant("b"),
            user("c"),
            assistant("d"),
            user("e"),
        ]);
        let applied = changes.apply(&mut third, model, 0, &base());
        assert_eq!(
            applied.changed.expect("a change").removed,
            ["two".to_owned()]
        );
        changes.disconnect_server("srv");
        let mut fourth = request(vec![
            user("a"),
            assistant("b"),
            user("c"),
            assistant("d"),
            user("e"),
            assistant("f"),
            user("g"),
        ]);
        let applied = changes.apply(&mut fourth, model, 0, &base());
        assert_eq!(
            applied.changed.expect("a change").removed,
            ["one".to_owned()]
        );
        assert_eq!(changes.offered(), ["read".to_owned(), "weather".to_owned()]);
    }

    #[test]
    fn a_change_waits_for_a_request_that_ends_with_a_user_message() {
        let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
        let changes = ToolChanges::new();
        changes.disable("read");
        let mut paused = request(vec![user("a"), assistant("searching")]);
        assert!(
            changes
                .apply(&mut paused, model, 0, &base())
                .changed
                .is_none()
        );
        assert_eq!(roles(&paused), ["user", "assistant"]);
        let mut next = request(vec![user("a"), assistant("searching"), user("b")]);
        assert!(
            changes
                .apply(&mut next, model, 0, &base())
                .changed
                .is_some()
        );
        assert_eq!(roles(&next), ["user", "assistant", "user", "system"]);
    }

    #[test]
    fn without_the_feature_the_tools_array_changes_and_the_break_is_named() {
        let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
        let changes = ToolChanges::new();
        let mut first = request(vec![user("a")]);
        changes.apply(&mut first, model, 0, &base());
        changes.connect_server("deployer", vec![Arc::new(Named("deploy"))]);
        changes.disable("read");
        let mut second = request(vec![user("a"), assistant("b"), user("c")]);
        let changed = changes
            .apply(&mut second, model, 0, &base())
            .changed
            .expect("a change");
        let names: Vec<&str> = second
            .tools
            .iter()
            .flatten()
            .map(ToolDefinition::name)
            .collect();
        assert_eq!(names, ["weather", "deploy"]);
        assert_eq!(roles(&second), ["user", "assistant", "user"]);
        assert_eq!(
            changed.cache_break().as_deref(),
            Some("tools.0: tools changed (`weather`)")
        );
        changes.disconnect_server("deployer");
        let mut third = request(vec![
            user("a"),
            assistant("b"),
            user("c"),
            assistant("d"),
            user("e"),
        ]);
        let changed = changes
            .apply(&mut third, model, 0, &base())
            .changed
            .expect("a change");
        assert_eq!(changed.removed, ["deploy"]);
        assert_eq!(
            changed.cache_break().as_deref(),
            Some("tools.1: tools changed (`deploy`)")
        );
    }

    #[test]
    fn after_a_server_compaction_the_net_change_is_announced_after_its_block() {
        let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
        let changes = ToolChanges::new();
        let mut first = request(vec![user("a"), assistant("b"), user("c")]);
        changes.disable("weather");
        changes.apply(&mut first, model, 0, &base());
        assert_eq!(roles(&first), ["user", "assistant", "user", "system"]);
        let compaction: ContentBlock = serde_json::from_value(
            json!({"type": "compaction", "content": "summary", "encrypted_content": null}),
        )
        .expect("a compaction block");
        let compacted = MessageParam::assistant(vec![compaction, ContentBlock::text("d")]);
        let mut next = request(vec![
            user("a"),
            assistant("b"),
            user("c"),
            compacted,
            user("e"),
        ]);
        changes.apply(&mut next, model, 0, &base());
        // The old announcement (dropped by the API with everything before the block) gives way
        // to one after the compaction's turn.
        assert_eq!(
            roles(&next),
            ["user", "assistant", "user", "assistant", "user", "system"]
        );
        assert_eq!(next.messages[5], first.messages[3]);
    }

    #[test]
    fn a_first_tool_declared_plainly_is_reported_as_a_break() {
        let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
        let changes = ToolChanges::new();
        let mut first = MessagesRequest::new("claude-opus-4-8", 1024, vec![user("a")]);
        changes.apply(&mut first, model, 0, &ToolSet::new());
        changes.enable(Arc::new(Named("deploy")));
        let mut second = MessagesRequest::new(
            "claude-opus-4-8",
            1024,
            vec![user("a"), assistant("b"), user("c")],
        );
        let changed = changes
            .apply(&mut second, model, 0, &ToolSet::new())
            .changed
            .expect("a change");
        let tools = second.tools.as_deref().expect("tools");
        assert!(
            !tools[0].is_deferred(),
            "the API rejects an all-deferred tools array"
        );
        assert_eq!(
            changed.cache_break().as_deref(),
            Some("tools.0: tools changed (`deploy`)")
        );
    }

    #[test]
    fn the_queue_is_bounded() {
        let changes = ToolChanges::new();
        for _ in 0..ToolChanges::MAX_PENDING + 3 {
            changes.disable("x");
        }
        assert_eq!(changes.dropped(), 3);
    }

    mod props {
        use proptest::prelude::*;
        use threadline_validate::{ValidateOptions, validate_with};

        use super::*;

        const NAMES: [&str; 6] = ["read", "weather", "deploy", "search", "lint", "ship"];

        fn leak(name: &str) -> &'static str {
            NAMES
                .iter()
                .find(|n| **n == name)
                .copied()
                .unwrap_or("read")
        }

        #[derive(Debug, Clone)]
        enum Change {
            Enable(usize),
            Disable(usize),
            Reoffer(usize),
            Connect(usize, usize),
            Disconnect,
        }

        fn change() -> impl Strategy<Value = Change> {
            prop_oneof![
                (0..NAMES.len()).prop_map(Change::Enable),
                (0..NAMES.len()).prop_map(Change::Disable),
                (0..NAMES.len()).prop_map(Change::Reoffer),
                (0..NAMES.len(), 0..NAMES.len()).prop_map(|(a, b)| Change::Connect(a, b)),
                Just(Change::Disconnect),
            ]
        }

        proptest! {
            /// Whatever the changes, on a model with the feature: `tools` only grows at its
            /// end, earlier messages are repeated unchanged, the fold over the request is what
            /// the handle says is offered, and every request is valid with the header the
            /// client derives from it.
            #[test]
            fn tools_only_grow_messages_are_appended_and_the_fold_agrees(
                turns in proptest::collection::vec(proptest::collection::vec(change(), 0..4), 1..8),
            ) {
                let model = ModelTable::builtin().resolve("claude-opus-4-8").model();
                let changes = ToolChanges::new();
                let mut history = vec![user("start")];
                let mut previous: Option<MessagesRequest> = None;
                for (t, turn) in turns.iter().enumerate() {
                    for c in turn {
                        match *c {
                            Change::Enable(i) => changes.enable(Arc::new(Named(leak(NAMES[i])))),
                            Change::Disable(i) => changes.disable(NAMES[i]),
                            Change::Reoffer(i) => changes.reoffer(NAMES[i]),
                            Change::Connect(a, b) => {
                                changes.connect_server(
                                    "srv",
                                    vec![Arc::new(Named(leak(NAMES[a]))), Arc::new(Named(leak(NAMES[b])))],
                                );
                            }
                            Change::Disconnect => changes.disconnect_server("srv"),
                        }
                    }
                    let mut request = request(history.clone());
                    changes.apply(&mut request, model, 0, &base());
                    let tools = request.tools.clone().unwrap_or_default();
                    prop_assert_eq!(
                        offered(&tools, &request.messages),
                        changes.offered().into_iter().collect::<BTreeSet<_>>()
                    );
                    let header = threadline_wire::betas::header_value(&[], &request);
                    let options = ValidateOptions::default()
                        .with_beta_header(header.as_deref().unwrap_or(""));
                    let violations = validate_with(&request, model, &options);
                    prop_assert!(violations.is_empty(), "{:?}", violations);
                    if let Some(previous) = &previous {
                        let old = previous.tools.clone().unwrap_or_default();
                        prop_assert!(tools.len() >= old.len());
                        prop_assert_eq!(&tools[..old.len()], &old[..]);
                        prop_assert_eq!(
                            &request.messages.to_vec()[..previous.messages.len()],
                            &previous.messages.to_vec()[..]
                        );
                    }
                    previous = Some(request);
                    history.push(assistant(&format!("answer {t}")));
                    history.push(user(&format!("question {t}")));
                }
            }
        }
    }
}
