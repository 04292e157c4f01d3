//! The [`Agent`]: the query loop with the real crates wired into its hooks.
//!
//! - context policy: `threadline-compact` ([`Compaction`]: tool-result budget, microcompact,
//!   autocompact with a summary written by the model through the agent's own service, the
//!   blocking limit, reactive compaction after `prompt is too long`);
//! - cache planner: `threadline-cache`'s [`Planner`] (the default strategy unless told);
//! - attachments: `threadline-attach` (the workspace's context message in front of every
//!   request, `@` mentions of the input, nested instruction files, any added source);
//! - transcript: every message appended to a JSONL file as it is produced.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use threadline_attach::{
    Collector, FileMentions, Limits, NestedInstructions, Source, SystemContext, UserContext,
    Workspace,
};
use threadline_cache::Planner;
use threadline_compact::Compaction;
use threadline_message::{Message, TranscriptWriter};
use threadline_query::{
    AttachmentSources, CachePlanner, CancellationToken, CollectorHook, CompactionMemory,
    CompactionPolicy, ContextShaper, Event, Finished, NonInteractive, Permission,
    PermissionCallback, PermissionRequest, Query, QueryConfig, SharedDivergence, SharedPlanner,
    State, StopContext, StopDecision, StopHook, Terminal, Tool, ToolSet,
};
use threadline_wire::request::Effort;
use threadline_wire::service::MessagesService;
use threadline_wire::{SystemPrompt, ThinkingConfig};

/// The events of one [`Agent::run`], the loop's own: the last is always
/// [`Event::Finished`].
pub type AgentRun = BoxStream<'static, Event>;

/// The output limit of each request unless told otherwise (the workspace default,
/// `threadline_wire::defaults`).
pub use threadline_wire::defaults::DEFAULT_MAX_TOKENS;

/// An agent could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The workspace directory cannot be used.
    #[error("{}: not a usable workspace: {source}", path.display())]
    Workspace {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The transcript cannot be opened for appending.
    #[error("{}: cannot open the transcript: {source}", path.display())]
    Transcript {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: threadline_message::TranscriptError,
    },
    /// The date is not `YYYY-MM-DD`.
    #[error("{0:?} is not a date of the form YYYY-MM-DD")]
    Date(String),
    /// A subagent definition of the workspace cannot be read.
    #[error("subagent definitions: {0}")]
    Subagents(#[from] threadline_attach::agent_definitions::DefinitionError),
    /// The session could not be read back from its store ([`AgentBuilder::resume`]).
    #[cfg(feature = "store")]
    #[error(transparent)]
    Store(#[from] crate::session_store::SessionStoreError),
    /// [`AgentBuilder::resume`] without a [`store`](AgentBuilder::store).
    #[cfg(feature = "store")]
    #[error("resume needs a session store (AgentBuilder::store)")]
    NoStore,
}

/// A run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Another run of this agent is in progress (its stream not yet finished or dropped): a
    /// session has one history, so runs take turns.
    #[error("another run of this agent is in progress")]
    Busy,
}

/// Builds an [`Agent`]; see [`Agent::builder`].
pub struct AgentBuilder<S> {
    service: S,
    config: QueryConfig,
    /// What the setters set, re-applied over a [`query_config`](Self::query_config).
    overrides: Overrides,
    #[cfg(feature = "store")]
    store: Option<crate::session_store::StoreLink>,
    tools: ToolSet,
    permission: Arc<dyn PermissionCallback>,
    stop_hooks: Vec<SharedHook>,
    workspace: Option<PathBuf>,
    default_sources: bool,
    sources: Vec<Box<dyn Source>>,
    #[cfg(feature = "tools")]
    builtin_tools: Option<threadline_tools::ShellAccess>,
    compaction: Compaction,
    planner: Option<Planner>,
    transcript: Option<PathBuf>,
    cancel: CancellationToken,
    today: Option<String>,
    history: Vec<Message>,
    tool_changes: Option<threadline_query::ToolChanges>,
    subagents: Option<threadline_query::SubagentConfig>,
}

impl<S> std::fmt::Debug for AgentBuilder<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("config", &self.config)
            .field("tools", &self.tools)
            .field("workspace", &self.workspace)
            .field("compaction", &self.compaction)
            .field("transcript", &self.transcript)
            .field("history", &self.history.len())
            .finish_non_exhaustive()
    }
}

impl<S> AgentBuilder<S>
where
    S: MessagesService + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    /// The model id (default: [`DEFAULT_MODEL`](crate::DEFAULT_MODEL)).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.overrides.model = Some(model.into());
        self.apply_overrides()
    }

    /// The platform the service speaks to (default: the Claude API): the model table becomes
    /// the platform's view, so nothing the platform does not offer is used (on Amazon Bedrock,
    /// on-demand compaction falls back to the local autocompact), and a model given by its
    /// API id is sent by the platform's id where the table gives one
    /// ([`QueryConfig::on_platform`]). A client's provider says its platform:
    /// `threadline::client::Provider::platform`.
    pub fn platform(mut self, platform: threadline_wire::platform::Platform) -> Self {
        self.overrides.platform = Some(platform);
        self.apply_overrides()
    }

    /// On Bedrock, the cross-region inference profile (`us`, `eu`, `global`, …) a model given
    /// by its API id goes behind ([`QueryConfig::on_platform_behind`]); without one it goes
    /// by its base id, which Bedrock serves on demand only for older models.
    pub fn bedrock_profile(mut self, profile: impl Into<String>) -> Self {
        self.overrides.bedrock_profile = Some(profile.into());
        self.apply_overrides()
    }

    /// `max_tokens` of each request (default [`DEFAULT_MAX_TOKENS`]).
    pub fn max_tokens(mut self, max_tokens: u64) -> Self {
        self.overrides.max_tokens = Some(max_tokens);
        self.apply_overrides()
    }

    /// The output limit after a `max_tokens` stop escalates it (default: the model's
    /// maximum).
    pub fn escalated_max_tokens(mut self, max_tokens: u64) -> Self {
        self.overrides.escalated_max_tokens = Some(max_tokens);
        self.apply_overrides()
    }

    /// The system prompt (the workspace's session context is appended to it).
    pub fn system_prompt(mut self, system: impl Into<String>) -> Self {
        self.overrides.system = Some(SystemPrompt::Text(system.into()));
        self.apply_overrides()
    }

    /// At most this many tool-using turns per run.
    pub fn max_turns(mut self, max_turns: u32) -> Self {
        self.overrides.max_turns = Some(max_turns);
        self.apply_overrides()
    }

    /// Extended thinking on every request (`ThinkingConfig::Adaptive`, or `Enabled` with a
    /// budget below [`max_tokens`](Self::max_tokens)).
    pub fn thinking(mut self, thinking: ThinkingConfig) -> Self {
        self.overrides.thinking = Some(thinking);
        self.apply_overrides()
    }

    /// `output_config.effort` on every request: how hard the model works (on models that
    /// take it).
    pub fn effort(mut self, effort: Effort) -> Self {
        self.overrides.effort = Some(effort);
        self.apply_overrides()
    }

    /// When tools are deferred behind tool search (default: above 10 % of the context
    /// window, on models with tool search; see [`threadline_query::tool_search`]).
    pub fn tool_search(
        mut self,
        tool_search: threadline_query::tool_search::ToolSearchConfig,
    ) -> Self {
        self.overrides.tool_search = Some(tool_search);
        self.apply_overrides()
    }

    /// The loop settings every other setting starts from (token budget, normalization,
    /// fallbacks, stop-hook blocks, …).
    ///
    /// Order-independent: what the builder's own setters set ([`model`](Self::model),
    /// [`max_tokens`](Self::max_tokens), [`escalated_max_tokens`](Self::escalated_max_tokens),
    /// [`system_prompt`](Self::system_prompt), [`max_turns`](Self::max_turns),
    /// [`thinking`](Self::thinking), [`effort`](Self::effort),
    /// [`tool_search`](Self::tool_search), [`context_management`](Self::context_management),
    /// [`cache_diagnostics`](Self::cache_diagnostics)) wins over `config`'s value whether it
    /// is set before or after; every field no setter set is `config`'s. A second
    /// `query_config` replaces the first.
    pub fn query_config(mut self, config: QueryConfig) -> Self {
        self.config = config;
        self.apply_overrides()
    }

    /// `config` with the setters' values over it.
    fn apply_overrides(mut self) -> Self {
        self.overrides.apply(&mut self.config);
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.insert(Arc::new(tool));
        self
    }

    /// Adds every tool of `tools`.
    pub fn tools(mut self, tools: &ToolSet) -> Self {
        for name in tools.names() {
            if let Some(tool) = tools.get(name) {
                self.tools.insert(Arc::clone(tool));
            }
        }
        self
    }

    /// The built-in tools of `threadline-tools` (read, list, glob, grep, write, edit, shell),
    /// working in the [`workspace`](Self::workspace) (the current directory when none is set).
    #[cfg(feature = "tools")]
    pub fn builtin_tools(mut self, shell: threadline_tools::ShellAccess) -> Self {
        self.builtin_tools = Some(shell);
        self
    }

    /// Adds a stop hook (hooks run in the order added, in every run; they may block the end
    /// of a turn or stop the run).
    pub fn stop_hook(mut self, hook: impl StopHook + 'static) -> Self {
        self.stop_hooks
            .push(Arc::new(futures::lock::Mutex::new(Box::new(hook))));
        self
    }

    /// Decides every tool call (default: the tool's own verdict; calls that would ask are
    /// denied).
    pub fn permission(mut self, permission: impl PermissionCallback + 'static) -> Self {
        self.permission = Arc::new(permission);
        self
    }

    /// The directory the agent works in: its `AGENTS.md`/`CLAUDE.md` and the date go in
    /// front of every request, its path is appended to the system prompt, and `@path`
    /// mentions of the input are attached (confined to it).
    pub fn workspace(mut self, dir: impl AsRef<Path>) -> Self {
        self.workspace = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Leaves out the default attachment sources (`@` mentions, nested instruction files).
    pub fn without_default_sources(mut self) -> Self {
        self.default_sources = false;
        self
    }

    /// Adds an attachment source (run for the input and after every tool-using turn).
    pub fn source(mut self, source: impl Source + 'static) -> Self {
        self.sources.push(Box::new(source));
        self
    }

    /// The compaction policy (default: [`Compaction::default`]).
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = compaction;
        self
    }

    /// Autocompact once the context reaches `tokens` instead of the model's threshold, as
    /// Claude Code's autocompact override does, so that a small session can be seen
    /// compacting: the verbatim tail kept after the summary is bounded to fit (at most a
    /// quarter of `tokens`, asking for at most a tenth). The other compaction settings are
    /// kept; a later [`compaction`](Self::compaction) replaces them all.
    ///
    /// ```
    /// use threadline::Agent;
    /// use threadline::query::scripted::ScriptedService;
    ///
    /// let agent = Agent::builder(ScriptedService::new([]))
    ///     .autocompact_at(8_000)
    ///     .build()
    ///     .expect("agent");
    /// # let _ = agent;
    /// ```
    pub fn autocompact_at(mut self, tokens: u64) -> Self {
        let mut tail = self.compaction.autocompact.tail;
        tail.max_tokens = tail.max_tokens.min(tokens / 4);
        tail.min_tokens = tail.min_tokens.min(tokens / 10);
        self.compaction = self.compaction.autocompact_at(tokens).with_tail(tail);
        self
    }

    /// Server-side context edits sent with every request as given (a recorded request's, say);
    /// a server-side compaction the [`Compaction`] asks for is added after them (replacing a
    /// `compact_20260112` edit among them).
    pub fn context_management(
        mut self,
        management: threadline_wire::request::ContextManagement,
    ) -> Self {
        self.overrides.context_management = Some(management);
        self.apply_overrides()
    }

    /// Server-side compaction with `server`'s settings where the model supports it, the
    /// local autocompact where it does not (see [`Compaction::server`]); the other compaction
    /// settings are kept.
    pub fn server_compaction(mut self, server: crate::ServerCompaction) -> Self {
        self.compaction = self
            .compaction
            .with_server(crate::CompactionMode::Server, server);
        self
    }

    /// How the agent compacts: locally, server-side, both, or on demand where the model
    /// supports it (see [`crate::CompactionMode`]); the other compaction settings are kept.
    pub fn compaction_mode(mut self, mode: crate::CompactionMode) -> Self {
        self.compaction = self.compaction.with_mode(mode);
        self
    }

    /// The prompt-cache planner (default: `Planner::default()`, the lookback-aware strategy).
    /// It looks models up in the agent's model table (`QueryConfig::models`), whatever table
    /// it was given.
    pub fn cache_planner(mut self, planner: Planner) -> Self {
        self.planner = Some(planner);
        self
    }

    /// Asks for the API's cache diagnostics on every request and compares each answer with
    /// threadline's own break detection (`Event::CacheDiagnosis`, a `cache_diagnosis` record
    /// in the transcript).
    pub fn cache_diagnostics(mut self) -> Self {
        self.overrides.cache_diagnostics = true;
        self.apply_overrides()
    }

    /// No prompt-cache markers.
    pub fn no_cache_markers(mut self) -> Self {
        self.planner = None;
        self
    }

    /// Appends every message to this JSONL transcript as it is produced.
    pub fn transcript(mut self, path: impl Into<PathBuf>) -> Self {
        self.transcript = Some(path.into());
        self
    }

    /// The token that aborts a run (leaving a complete history).
    pub fn cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Lets the offered tools change mid-session through `changes` (a tool enabled or
    /// disabled, an MCP server connecting or leaving): on a model with mid-conversation tool
    /// changes the cached prefix survives (see `threadline_query::tool_changes`).
    pub fn tool_changes(mut self, changes: threadline_query::ToolChanges) -> Self {
        self.tool_changes = Some(changes);
        self
    }

    /// Offers the `Task` tool: the model may start subagents (see
    /// `threadline_query::subagent`), of the types in `subagents` and those defined in the
    /// workspace's `.claude/agents/*.md`. Off by default. With a
    /// [`transcript`](Self::transcript) `<session>.jsonl`, each subagent writes
    /// `<session>/subagents/agent-<id>.jsonl` unless `subagents` names another directory.
    pub fn subagents(mut self, subagents: threadline_query::SubagentConfig) -> Self {
        self.subagents = Some(subagents);
        self
    }

    /// Starts the session from `messages` (a resumed session: a transcript read back, a
    /// fork, an import) instead of an empty history. The first run continues after them;
    /// they are not written to the [`transcript`](Self::transcript) again (only what the runs
    /// add is appended).
    pub fn history(mut self, messages: Vec<Message>) -> Self {
        self.history = messages;
        self
    }

    /// Persists the session to `store` under `key`: every message a run appends (the
    /// input, each assistant fragment, tool results, attachments, compaction records) is
    /// appended to the key before the run's stream yields it, as the entry
    /// [`message_entry`](crate::message_entry) makes (idempotent by the message's id; a
    /// copy of a message appended again, as a compaction keeps its tail, by the id and its
    /// occurrence). A
    /// failed append is an [`Event::Warning`] and the run goes on. Any backend:
    /// `MemoryStore`, `JsonlStore`, `SqliteStore`, `threadline_restate::RestateStore`
    /// (a clone of `MemoryStore` or `SqliteStore` shares its data, so keep one to read it).
    ///
    /// [`resume`](Self::resume) builds the agent from what the key already holds; `build`
    /// starts from [`history`](Self::history) (not written to the store).
    #[cfg(feature = "store")]
    pub fn store(
        mut self,
        store: impl threadline_store::SessionStore + 'static,
        key: threadline_store::SessionKey,
    ) -> Self {
        self.store = Some(crate::session_store::StoreLink::new(Arc::new(store), key));
        self
    }

    /// [`store`](Self::store) with a store already shared.
    #[cfg(feature = "store")]
    pub fn shared_store(
        mut self,
        store: Arc<dyn threadline_store::SessionStore>,
        key: threadline_store::SessionKey,
    ) -> Self {
        self.store = Some(crate::session_store::StoreLink::new(store, key));
        self
    }

    /// Builds the agent with the session read back from its [`store`](Self::store): the
    /// messages the key holds become the history (replacing [`history`](Self::history)) and
    /// the first run continues after them. A key never written starts an empty session.
    #[cfg(feature = "store")]
    pub async fn resume(mut self) -> Result<Agent<S>, AgentError> {
        let Some(link) = self.store.clone() else {
            return Err(AgentError::NoStore);
        };
        self.history = crate::session_store::resume_from(&link).await?;
        self.build()
    }

    /// Today's date, `YYYY-MM-DD` (default: the UTC date of the clock).
    pub fn today(mut self, date: impl Into<String>) -> Self {
        self.today = Some(date.into());
        self
    }

    /// The agent.
    pub fn build(self) -> Result<Agent<S>, AgentError> {
        let today = match self.today {
            Some(date) if threadline_attach::is_iso_date(&date) => date,
            Some(date) => return Err(AgentError::Date(date)),
            None => threadline_attach::utc_today(),
        };
        let workspace = match &self.workspace {
            Some(dir) => Some(Arc::new(Workspace::new(dir).map_err(|source| {
                AgentError::Workspace {
                    path: dir.clone(),
                    source,
                }
            })?)),
            None => None,
        };
        let mut config = self.config;
        #[cfg_attr(not(feature = "tools"), allow(unused_mut))]
        let mut tools = self.tools;
        #[cfg(feature = "tools")]
        if let Some(shell) = self.builtin_tools {
            let workspace = match &workspace {
                Some(workspace) => Arc::clone(workspace),
                None => {
                    let dir = std::env::current_dir().map_err(|source| AgentError::Workspace {
                        path: PathBuf::from("."),
                        source,
                    })?;
                    Arc::new(
                        Workspace::new(&dir).map_err(|source| AgentError::Workspace {
                            path: dir.clone(),
                            source,
                        })?,
                    )
                }
            };
            let builtin = threadline_tools::builtin(workspace, shell);
            for name in builtin.names() {
                if let Some(tool) = builtin.get(name) {
                    tools.insert(Arc::clone(tool));
                }
            }
        }
        let mut collector = Collector::new();
        if workspace.is_some() && self.default_sources {
            collector.add(FileMentions::new());
            collector.add(NestedInstructions::new());
        }
        for source in self.sources {
            collector.add(BoxedSource(source));
        }
        let mut shaper = ContextShaper::default();
        if let Some(workspace) = &workspace {
            let mut context = SystemContext::new();
            context.push("workingDirectory", workspace.root().display().to_string());
            config.system = context.append_to(config.system.take());
            shaper = ContextShaper::new(UserContext::for_workspace(
                workspace,
                &today,
                &Limits::default(),
            ));
        }
        if let Some(path) = &self.transcript {
            TranscriptWriter::open(path).map_err(|source| AgentError::Transcript {
                path: path.clone(),
                source,
            })?;
        }
        let subagents = match self.subagents {
            Some(subagents) => {
                let mut subagents =
                    crate::subagents::with_definitions(subagents, workspace.as_deref())?;
                if let (None, Some(path)) = (&subagents.transcripts, &self.transcript) {
                    subagents.transcripts = Some(crate::subagents::transcripts_dir(path));
                }
                Some(subagents)
            }
            None => None,
        };
        let mut state = State::default();
        // The store's copies are numbered on from the history's (a history read back from
        // the key, by `resume` or by the caller: a compaction's copy of one of its messages
        // must not be stored under the id alone, which the store would take for a retry).
        #[cfg(feature = "store")]
        if let Some(link) = &self.store {
            link.note_loaded(&self.history);
        }
        state.messages = self.history;
        // One model table per agent: the planner reads the loop's.
        let planner = self.planner.map_or_else(SharedPlanner::none, |planner| {
            SharedPlanner::new(planner.with_models(config.models.clone()))
        });
        Ok(Agent {
            service: self.service,
            config,
            tools,
            permission: self.permission,
            stop_hooks: self.stop_hooks,
            compaction: self.compaction,
            memory: CompactionMemory::default(),
            planner,
            detector: SharedDivergence::default(),
            sources: match workspace {
                Some(workspace) => AttachmentSources::new(collector).with_workspace(workspace),
                None => AttachmentSources::new(collector),
            }
            .with_today(&today),
            shaper,
            transcript: self.transcript,
            cancel: self.cancel,
            state: Arc::new(Mutex::new(state)),
            running: Arc::new(AtomicBool::new(false)),
            #[cfg(feature = "store")]
            store: self.store,
            tool_changes: self.tool_changes,
            subagents,
        })
    }
}

/// A source added as a box.
struct BoxedSource(Box<dyn Source>);

impl Source for BoxedSource {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn phase(&self) -> threadline_attach::Phase {
        self.0.phase()
    }
    fn timeout(&self) -> Option<std::time::Duration> {
        self.0.timeout()
    }
    fn collect<'a>(
        &'a self,
        cx: &'a threadline_attach::SourceContext<'a>,
    ) -> threadline_attach::SourceFuture<'a> {
        self.0.collect(cx)
    }
}

/// A stop hook shared by the runs of an agent (one run at a time holds it).
type SharedHook = Arc<futures::lock::Mutex<Box<dyn StopHook>>>;

/// The loop's view of a [`SharedHook`].
struct SharedStopHook(SharedHook);

impl StopHook for SharedStopHook {
    fn on_stop<'a>(&'a mut self, ctx: StopContext<'a>) -> BoxFuture<'a, StopDecision> {
        Box::pin(async move {
            let mut hook = self.0.lock().await;
            hook.on_stop(ctx).await
        })
    }
}

/// The agent's permission callback, shared by its runs (and its subagents).
pub(crate) struct SharedPermission(pub(crate) Arc<dyn PermissionCallback>);

impl PermissionCallback for SharedPermission {
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        self.0.decide(request)
    }
}

/// An agent: a session with a model, its tools and its history. Each [`run`](Agent::run)
/// continues the session where the previous one ended.
pub struct Agent<S> {
    service: S,
    config: QueryConfig,
    tools: ToolSet,
    permission: Arc<dyn PermissionCallback>,
    stop_hooks: Vec<SharedHook>,
    compaction: Compaction,
    memory: CompactionMemory,
    planner: SharedPlanner,
    detector: SharedDivergence,
    sources: AttachmentSources,
    shaper: ContextShaper,
    transcript: Option<PathBuf>,
    cancel: CancellationToken,
    state: Arc<Mutex<State>>,
    /// Whether a run holds the session (see [`RunGuard`]).
    running: Arc<AtomicBool>,
    #[cfg(feature = "store")]
    store: Option<crate::session_store::StoreLink>,
    tool_changes: Option<threadline_query::ToolChanges>,
    subagents: Option<threadline_query::SubagentConfig>,
}

impl<S> std::fmt::Debug for Agent<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("config", &self.config)
            .field("tools", &self.tools)
            .field("compaction", &self.compaction)
            .field("transcript", &self.transcript)
            .finish_non_exhaustive()
    }
}

impl<S> Agent<S>
where
    S: MessagesService + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    /// A builder over `service` (the HTTP client, a mock's client, a scripted service).
    pub fn builder(service: S) -> AgentBuilder<S> {
        AgentBuilder {
            service,
            config: QueryConfig::new(crate::DEFAULT_MODEL, DEFAULT_MAX_TOKENS),
            overrides: Overrides::default(),
            #[cfg(feature = "store")]
            store: None,
            tools: ToolSet::new(),
            permission: Arc::new(NonInteractive),
            stop_hooks: Vec::new(),
            workspace: None,
            default_sources: true,
            sources: Vec::new(),
            #[cfg(feature = "tools")]
            builtin_tools: None,
            compaction: Compaction::default(),
            planner: Some(Planner::default()),
            transcript: None,
            cancel: CancellationToken::new(),
            today: None,
            history: Vec::new(),
            tool_changes: None,
            subagents: None,
        }
    }

    /// The loop settings every request shares.
    pub fn config(&self) -> &QueryConfig {
        &self.config
    }

    /// The tools.
    pub fn tool_set(&self) -> &ToolSet {
        &self.tools
    }

    /// The session's state: after a finished run, the state it finished with (the history,
    /// the path taken); during a run, the history so far (every message the run's stream has
    /// yielded is in it); after a run dropped before its end, everything it appended.
    pub fn state(&self) -> State {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The token that aborts the current run.
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Runs the loop for `prompt`: its `@` mentions attached, then model calls and tool
    /// calls until the loop ends. The stream's last event is [`Event::Finished`]; the next
    /// run continues from its state. Every message the stream yields is in
    /// [`state`](Self::state) at once, so dropping the stream early loses nothing it
    /// yielded.
    ///
    /// While another run of this agent is in progress, the stream is a warning and
    /// [`Terminal::Busy`] (the session untouched); [`try_run`](Self::try_run) says so as an
    /// error instead.
    pub fn run(&mut self, prompt: impl Into<String>) -> AgentRun {
        match self.try_run(prompt) {
            Ok(run) => run,
            Err(error) => {
                let finished = Finished::new(Terminal::Busy, self.state());
                futures::stream::iter([
                    Event::Warning(format!("{error}; this run did not start")),
                    Event::Finished(Box::new(finished)),
                ])
                .boxed()
            }
        }
    }

    /// Runs the loop for `prompt` to its end and answers with the text of the last
    /// response, the tokens and cost of the run's model calls, and how it ended. The
    /// session goes on as with [`run`](Self::run) (the next prompt continues it). Refused
    /// with [`RunError::Busy`] while another run is in progress; a failed model call is
    /// [`PromptError::Model`](crate::PromptError::Model), every other end an `Answer` with
    /// its [`terminal`](crate::Answer::terminal).
    ///
    /// The future owns the run (it borrows nothing from the agent): spawn it if you like.
    pub fn prompt(
        &self,
        prompt: impl Into<String>,
    ) -> impl Future<Output = Result<crate::Answer, crate::PromptError>> + Send + 'static {
        crate::answer::collect(self.try_run(prompt), self.config.models.clone())
    }

    /// [`run`](Self::run), refused with [`RunError::Busy`] while another run of this agent
    /// is in progress (a run lasts until its stream yields [`Event::Finished`] or is
    /// dropped).
    pub fn try_run(&self, prompt: impl Into<String>) -> Result<AgentRun, RunError> {
        let mut guard = RunGuard::acquire(&self.running, &self.state)?;
        let prompt = prompt.into();
        let mut query = self.query(self.service.clone(), self.planner.clone());
        if let Some(changes) = &self.tool_changes {
            query = query.with_tool_changes(changes.clone());
        }
        let mut warnings = Vec::new();
        if let Some(path) = &self.transcript {
            match TranscriptWriter::open(path) {
                Ok(writer) => query = query.with_transcript(writer),
                Err(e) => warnings.push(Event::Warning(format!(
                    "transcript {}: {e}; this run is not recorded",
                    path.display()
                ))),
            }
        }
        // The run starts from a copy: the agent's state keeps the history while it runs.
        let state = self.state();
        let sources = self.sources.clone();
        let start = async move {
            let (state, input, _) = start_input(&sources, state, &prompt).await;
            query.run(state, input)
        };
        let events = futures::stream::iter(warnings)
            .chain(futures::stream::once(start).flatten())
            .inspect(move |event| guard.observe(event))
            .boxed();
        #[cfg(feature = "store")]
        let events = match &self.store {
            Some(link) => crate::session_store::persist(events, link.clone()),
            None => events,
        };
        Ok(events)
    }

    /// The first request a [`run`](Self::run) of `prompt` would send now, not sent: the very
    /// loop of `run` (system prompt, tools with their deferrals, the `Task` tool, attachment
    /// sources, shaper, cache markers, compaction) over a service that records the first
    /// request and never answers. Nothing is appended to the session or its transcript and
    /// no tool runs. The markers are placed as a run would place them, but the agent's
    /// planner does not record the request (it is left as it was). Mid-session
    /// [`tool_changes`](AgentBuilder::tool_changes) are left out (applying them would
    /// consume them). When the session is due for autocompact, the first request is the
    /// summary request.
    ///
    /// ```
    /// use threadline::Agent;
    /// use threadline::query::scripted::ScriptedService;
    ///
    /// # futures::executor::block_on(async {
    /// let agent = Agent::builder(ScriptedService::new([]))
    ///     .system_prompt("Be brief.")
    ///     .build()
    ///     .expect("agent");
    /// let first = agent.first_request("hello").await.expect("a request");
    /// assert_eq!(first.request.messages.len(), 1);
    /// assert!(first.notes.is_empty());
    /// // The session is unchanged.
    /// assert!(agent.state().messages.is_empty());
    /// # });
    /// ```
    pub async fn first_request(
        &self,
        prompt: impl Into<String>,
    ) -> Result<FirstRequest, FirstRequestError> {
        let prompt = prompt.into();
        let capture = Capture::default();
        let query = self.query(capture.clone(), Unrecorded(self.planner.clone()));
        let state = self.state();
        let (state, input, notes) = start_input(&self.sources, state, &prompt).await;
        let mut run = query.run(state, input);
        let request = futures::future::poll_fn(|cx| {
            loop {
                if let Some(request) = capture.take() {
                    return std::task::Poll::Ready(Ok(request));
                }
                match run.poll_next_unpin(cx) {
                    std::task::Poll::Pending => {
                        return match capture.take() {
                            Some(request) => std::task::Poll::Ready(Ok(request)),
                            None => std::task::Poll::Pending,
                        };
                    }
                    std::task::Poll::Ready(Some(Event::Finished(finished))) => {
                        return std::task::Poll::Ready(Err(FirstRequestError::NotSent {
                            terminal: finished.terminal,
                        }));
                    }
                    std::task::Poll::Ready(Some(_)) => {}
                    std::task::Poll::Ready(None) => {
                        return std::task::Poll::Ready(Err(FirstRequestError::NotSent {
                            terminal: Terminal::AbortedStreaming,
                        }));
                    }
                }
            }
        })
        .await?;
        Ok(FirstRequest { request, notes })
    }

    /// The loop of a run over `service` (the summaries go through it too) with `planner`:
    /// everything but the transcript and the tool changes.
    fn query<T>(&self, service: T, planner: impl CachePlanner + 'static) -> Query<T>
    where
        T: MessagesService + Clone + Send + 'static,
        T::Future: Send + 'static,
    {
        self.assemble(service, planner, self.memory.clone())
            .with_attachments(CollectorHook::new(self.sources.clone()))
    }

    /// The next-turn attachment collector of a run.
    #[cfg(feature = "restate")]
    pub(crate) fn collector(&self) -> CollectorHook {
        CollectorHook::new(self.sources.clone())
    }

    /// The input of a run of `prompt` after `history`: the user's message and its
    /// attachments (the collector's notes dropped).
    #[cfg(feature = "restate")]
    pub(crate) fn input_after(
        &self,
        history: &[Message],
        prompt: &str,
    ) -> BoxFuture<'static, Vec<Message>> {
        let sources = self.sources.clone();
        let mut state = State::default();
        state.messages = history.to_vec();
        let prompt = prompt.to_owned();
        Box::pin(async move { start_input(&sources, state, &prompt).await.1 })
    }

    /// The agent's planner, fresh (the default strategy with the agent's model table; none
    /// when the agent places no markers).
    #[cfg(feature = "restate")]
    pub(crate) fn fresh_planner(&self) -> SharedPlanner {
        self.planner.fresh()
    }

    /// The loop of a run over `service` with `planner` and the compaction `memory`:
    /// everything but the next-turn attachment collector, the transcript and the tool
    /// changes. The one place an agent's loop is assembled: a run, a dry run and a durable
    /// turn all come from it.
    pub(crate) fn assemble<T>(
        &self,
        service: T,
        planner: impl CachePlanner + 'static,
        memory: CompactionMemory,
    ) -> Query<T>
    where
        T: MessagesService + Clone + Send + 'static,
        T::Future: Send + 'static,
    {
        let config = self.config.clone().with_compaction_edit(&self.compaction);
        let mut tools = self.tools.clone();
        if let Some(subagents) = &self.subagents {
            let parent = crate::subagents::Parent {
                service: self.service.clone(),
                shaper: self.shaper.clone(),
                permission: Arc::clone(&self.permission),
                planner: self.planner.clone(),
            };
            let task = crate::subagents::task_tool(
                parent,
                config.clone(),
                self.tools.clone(),
                subagents.clone(),
            );
            tools.insert(Arc::new(task));
        }
        let mut query = Query::new(service.clone(), config.clone())
            .with_tools(tools)
            .with_permission(SharedPermission(Arc::clone(&self.permission)))
            .with_shaper(self.shaper.clone())
            .with_cache_planner(planner)
            .with_break_detector(self.detector.clone())
            .with_cancellation(self.cancel.clone());
        for hook in &self.stop_hooks {
            query = query.with_stop_hook(SharedStopHook(Arc::clone(hook)));
        }
        if self.compaction.enabled {
            // The summary request is built by the loop's own request builder: the same
            // config, tools (`Task` included), shaper and planner as every request.
            let policy = CompactionPolicy::new(service, self.compaction.clone(), &config)
                .with_memory(memory);
            query = query.with_policy(policy);
        }
        query
    }
}

/// The state and input of a run of `prompt`: the user's message and its attachments, the
/// sources seeing the history with the input, as the turn will have it; and one line per
/// entry of the collector's report.
async fn start_input(
    sources: &AttachmentSources,
    mut state: State,
    prompt: &str,
) -> (State, Vec<Message>, Vec<String>) {
    state.messages.push(Message::user_text(prompt));
    let collected = sources
        .collect_reported(&state.messages, Some(prompt))
        .await;
    let mut input: Vec<Message> = state.messages.pop().into_iter().collect();
    input.extend(collected.messages());
    let notes = collected.report.iter().map(ToString::to_string).collect();
    (state, input, notes)
}

/// The first request of a run, from [`Agent::first_request`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FirstRequest {
    /// The request, as the service would be given it.
    pub request: threadline_wire::MessagesRequest,
    /// One line per note of the attachment collector (an `@` mention refused, a source
    /// that failed or timed out), as `attachment source `NAME`: …`.
    pub notes: Vec<String>,
}

/// [`Agent::first_request`] found no request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FirstRequestError {
    /// The loop ended before calling the model (a blocking limit, a cancelled token).
    #[error("the run ended before sending a request: {terminal}")]
    NotSent {
        /// How it ended.
        terminal: Terminal,
    },
}

/// The agent's planner placing markers without recording the request (a dry run's).
struct Unrecorded(SharedPlanner);

impl CachePlanner for Unrecorded {
    fn plan(&mut self, request: &mut threadline_wire::MessagesRequest) {
        self.0.plan_unrecorded(request);
    }
}

/// A service that records the first request it is given and never answers.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Option<threadline_wire::MessagesRequest>>>);

impl Capture {
    fn take(&self) -> Option<threadline_wire::MessagesRequest> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl tower_service::Service<threadline_wire::MessagesRequest> for Capture {
    type Response = threadline_wire::service::EventStream;
    type Error = threadline_wire::service::ServiceError;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: threadline_wire::MessagesRequest) -> Self::Future {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(request);
        }
        Box::pin(futures::future::pending())
    }
}

/// The setters' values, kept apart so that [`AgentBuilder::query_config`] never resets them
/// (whatever the order).
#[derive(Debug, Clone, Default)]
struct Overrides {
    model: Option<String>,
    max_tokens: Option<u64>,
    escalated_max_tokens: Option<u64>,
    system: Option<SystemPrompt>,
    max_turns: Option<u32>,
    thinking: Option<ThinkingConfig>,
    effort: Option<Effort>,
    tool_search: Option<threadline_query::tool_search::ToolSearchConfig>,
    context_management: Option<threadline_wire::request::ContextManagement>,
    cache_diagnostics: bool,
    platform: Option<threadline_wire::platform::Platform>,
    bedrock_profile: Option<String>,
}

impl Overrides {
    fn apply(&self, config: &mut QueryConfig) {
        if let Some(model) = &self.model {
            config.model.clone_from(model);
        }
        if let Some(max_tokens) = self.max_tokens {
            config.max_tokens = max_tokens;
        }
        if let Some(max_tokens) = self.escalated_max_tokens {
            config.escalated_max_tokens = Some(max_tokens);
        }
        if let Some(system) = &self.system {
            config.system = Some(system.clone());
        }
        if let Some(max_turns) = self.max_turns {
            config.max_turns = Some(max_turns);
        }
        if let Some(thinking) = &self.thinking {
            config.thinking = Some(thinking.clone());
        }
        if let Some(effort) = &self.effort {
            let output = config.output_config.take().unwrap_or_default();
            config.output_config = Some(output.with_effort(effort.clone()));
        }
        if let Some(tool_search) = &self.tool_search {
            config.tool_search = tool_search.clone();
        }
        if let Some(management) = &self.context_management {
            config.context_management = Some(management.clone());
        }
        if self.cache_diagnostics {
            config.cache_diagnostics = true;
        }
        if let Some(platform) = self.platform {
            let profile = self.bedrock_profile.as_deref();
            *config = config.clone().on_platform_behind(platform, profile);
        }
    }
}

/// A run's hold on the session: taken when the run is made (one at a time), it puts every
/// message the stream yields into the agent's state as it passes, the finished state at
/// the end, and lets go at [`Event::Finished`] or when the stream is dropped.
struct RunGuard {
    running: Arc<AtomicBool>,
    slot: Arc<Mutex<State>>,
    held: bool,
}

impl RunGuard {
    fn acquire(running: &Arc<AtomicBool>, slot: &Arc<Mutex<State>>) -> Result<RunGuard, RunError> {
        running
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| RunError::Busy)?;
        Ok(RunGuard {
            running: Arc::clone(running),
            slot: Arc::clone(slot),
            held: true,
        })
    }

    fn observe(&mut self, event: &Event) {
        if !self.held {
            return;
        }
        let mut state = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Message(message) => {
                state.messages.push(message.clone());
                // As the loop's own state notes it (what a dropped run leaves must be a
                // state the next run can start from).
                if threadline_query::is_compact_boundary(message) {
                    state.compaction.boundary = state.messages.len();
                    state.compaction.compactions += 1;
                    state.compaction.last_compaction_turn = Some(state.turn_count);
                }
            }
            Event::Rewritten { index, message } => {
                // As the loop changed it in place (what a dropped run leaves is what the
                // loop held).
                state.rewrite(*index, message.clone());
            }
            Event::Finished(finished) => {
                *state = finished.state.clone();
                drop(state);
                self.release();
            }
            _ => {}
        }
    }

    fn release(&mut self) {
        if self.held {
            self.held = false;
            self.running.store(false, Ordering::Release);
        }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        // Dropped before `Finished`: the state already holds every message yielded.
        self.release();
    }
}

/// Whether `date` is `YYYY-MM-DD`.
#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use threadline_message::TranscriptError;
    use threadline_query::scripted::ScriptedService;

    use super::*;

    /// An empty in-memory store and the key the tests append to.
    #[cfg(feature = "store")]
    fn memory_store() -> (
        Arc<dyn threadline_store::SessionStore>,
        threadline_store::SessionKey,
    ) {
        let store = Arc::new(threadline_store::MemoryStore::new());
        let key = threadline_store::SessionKey::new("p", "s").expect("key");
        (store, key)
    }

    /// An agent built from a history the store holds (by `resume`, or the caller's own
    /// `history` read back from the key) stores a compaction's copy of one of its messages
    /// beside it, not under the id alone (which the store would take for a retry).
    #[cfg(feature = "store")]
    #[test]
    fn copies_of_the_starting_history_are_numbered_on_from_it() {
        let x = Message::user_text("kept by a compaction");
        let y = Message::user_text("y");
        let (store, key) = memory_store();
        let agent = Agent::builder(ScriptedService::new([]))
            .shared_store(Arc::clone(&store), key.clone())
            .history(vec![x.clone(), y.clone(), x.clone()])
            .build()
            .expect("agent");
        let link = agent.store.as_ref().expect("a store");
        let copy = link.appended_entry(&x).expect("storable");
        assert_eq!(copy.id(), Some(format!("{}#3", x.id().as_str()).as_str()));
        let copy = link.appended_entry(&y).expect("storable");
        assert_eq!(copy.id(), Some(format!("{}#2", y.id().as_str()).as_str()));
        let fresh = Message::user_text("new");
        let first = link.appended_entry(&fresh).expect("storable");
        assert_eq!(first.id(), Some(fresh.id().as_str()));
    }

    /// A resumed agent knows the uuids the key holds, not only the history they read back
    /// as: here the first agent's starting history was never written, so the key holds its
    /// copy of `x` (`x#2`) but not `x`, and the resumed agent's next copy of `x` is still
    /// stored.
    #[cfg(feature = "store")]
    #[test]
    fn a_resumed_agent_numbers_copies_past_the_uuids_the_key_holds() {
        let x = Message::user_text("kept by a compaction");
        let y = Message::user_text("y");
        let (store, key) = memory_store();
        futures::executor::block_on(async {
            let first = Agent::builder(ScriptedService::new([]))
                .shared_store(Arc::clone(&store), key.clone())
                .history(vec![x.clone(), y.clone()])
                .build()
                .expect("agent");
            let link = first.store.as_ref().expect("a store");
            let copy = link.appended_entry(&x).expect("storable");
            store.append(&key, &[copy]).await.expect("append");

            let resumed = Agent::builder(ScriptedService::new([]))
                .shared_store(Arc::clone(&store), key.clone())
                .resume()
                .await
                .expect("resumed");
            assert_eq!(resumed.state().messages, std::slice::from_ref(&x));
            let link = resumed.store.as_ref().expect("a store");
            let copy = link.appended_entry(&x).expect("storable");
            let appended = store.append(&key, &[copy]).await.expect("append");
            assert_eq!(appended.written, 1, "the copy is not taken for a retry");
            let loaded = crate::load_session(store.as_ref(), &key)
                .await
                .expect("loads");
            assert_eq!(loaded, [x.clone(), x]);
        });
    }

    #[test]
    fn a_transcript_that_cannot_be_opened_keeps_its_error_as_the_source() {
        let path = PathBuf::from("/definitely/not/here/session.jsonl");
        let error = match Agent::builder(ScriptedService::new([]))
            .transcript(path.clone())
            .build()
        {
            Ok(_) => panic!("the transcript directory does not exist"),
            Err(error) => error,
        };
        assert!(
            error
                .to_string()
                .starts_with("/definitely/not/here/session.jsonl: cannot open the transcript: "),
            "{error}"
        );
        let source = error.source().expect("the transcript error is kept");
        match source.downcast_ref::<TranscriptError>() {
            Some(TranscriptError::Open { source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("not the transcript's open error: {other:?}"),
        }
    }
}
