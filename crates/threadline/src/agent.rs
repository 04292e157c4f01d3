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
    AttachmentSources, CancellationToken, CollectorHook, CompactionMemory, CompactionPolicy,
    ContextShaper, Event, NonInteractive, Permission, PermissionCallback, PermissionRequest, Query,
    QueryConfig, SharedDivergence, SharedPlanner, State, StopContext, StopDecision, StopHook, Tool,
    ToolSet,
};
use threadline_wire::SystemPrompt;
use threadline_wire::service::MessagesService;

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
}

/// Builds an [`Agent`]; see [`Agent::builder`].
pub struct AgentBuilder<S> {
    service: S,
    config: QueryConfig,
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
        self.config.model = model.into();
        self
    }

    /// `max_tokens` of each request (default [`DEFAULT_MAX_TOKENS`]).
    pub fn max_tokens(mut self, max_tokens: u64) -> Self {
        self.config.max_tokens = max_tokens;
        self
    }

    /// The output limit after a `max_tokens` stop escalates it (default: the model's
    /// maximum).
    pub fn escalated_max_tokens(mut self, max_tokens: u64) -> Self {
        self.config.escalated_max_tokens = Some(max_tokens);
        self
    }

    /// The system prompt (the workspace's session context is appended to it).
    pub fn system_prompt(mut self, system: impl Into<String>) -> Self {
        self.config.system = Some(SystemPrompt::Text(system.into()));
        self
    }

    /// At most this many tool-using turns per run.
    pub fn max_turns(mut self, max_turns: u32) -> Self {
        self.config.max_turns = Some(max_turns);
        self
    }

    /// When tools are deferred behind tool search (default: above 10 % of the context
    /// window, on models with tool search; see [`threadline_query::tool_search`]).
    pub fn tool_search(
        mut self,
        tool_search: threadline_query::tool_search::ToolSearchConfig,
    ) -> Self {
        self.config.tool_search = tool_search;
        self
    }

    /// Replaces the loop settings (thinking, token budget, escalation, normalization). The
    /// model, output limit and system prompt set before are replaced too.
    pub fn query_config(mut self, config: QueryConfig) -> Self {
        self.config = config;
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

    /// Server-side context edits sent with every request as given (a recorded request's, say);
    /// a server-side compaction the [`Compaction`] asks for is added after them (replacing a
    /// `compact_20260112` edit among them).
    pub fn context_management(
        mut self,
        management: threadline_wire::request::ContextManagement,
    ) -> Self {
        self.config.context_management = Some(management);
        self
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

    /// The prompt-cache planner (default: `Planner::default()`, the lookback-aware strategy).
    pub fn cache_planner(mut self, planner: Planner) -> Self {
        self.planner = Some(planner);
        self
    }

    /// Asks for the API's cache diagnostics on every request and compares each answer with
    /// threadline's own break detection (`Event::CacheDiagnosis`, a `cache_diagnosis` record
    /// in the transcript).
    pub fn cache_diagnostics(mut self) -> Self {
        self.config.cache_diagnostics = true;
        self
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

    /// Today's date, `YYYY-MM-DD` (default: the UTC date of the clock).
    pub fn today(mut self, date: impl Into<String>) -> Self {
        self.today = Some(date.into());
        self
    }

    /// The agent.
    pub fn build(self) -> Result<Agent<S>, AgentError> {
        let today = match self.today {
            Some(date) if is_date(&date) => date,
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
        state.messages = self.history;
        Ok(Agent {
            service: self.service,
            config,
            tools,
            permission: self.permission,
            stop_hooks: self.stop_hooks,
            compaction: self.compaction,
            memory: CompactionMemory::default(),
            planner: self
                .planner
                .map_or_else(SharedPlanner::none, SharedPlanner::new),
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

    /// The session's state after the last finished run (the history, the path taken).
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
    /// run continues from its state.
    pub fn run(&mut self, prompt: impl Into<String>) -> AgentRun {
        let prompt = prompt.into();
        let mut config = self.config.clone();
        let row = config.models.resolve(&config.model).model();
        // The caller's own edits stay; the compaction edit (if any) comes after them.
        config.context_management = self
            .compaction
            .context_management_with(row, config.context_management.take());
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
        let mut query = Query::new(self.service.clone(), config)
            .with_tools(tools)
            .with_permission(SharedPermission(Arc::clone(&self.permission)))
            .with_shaper(self.shaper.clone())
            .with_cache_planner(self.planner.clone())
            .with_break_detector(self.detector.clone())
            .with_attachments(CollectorHook::new(self.sources.clone()))
            .with_cancellation(self.cancel.clone());
        if let Some(changes) = &self.tool_changes {
            query = query.with_tool_changes(changes.clone());
        }
        for hook in &self.stop_hooks {
            query = query.with_stop_hook(SharedStopHook(Arc::clone(hook)));
        }
        if self.compaction.enabled {
            let policy = CompactionPolicy::new(
                self.service.clone(),
                self.compaction.clone(),
                &self.config,
                &self.tools,
            )
            .with_shaper(self.shaper.clone())
            .with_cache_markers(!self.planner.is_none())
            .with_memory(self.memory.clone());
            query = query.with_policy(policy);
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
        let mut state =
            std::mem::take(&mut *self.state.lock().unwrap_or_else(PoisonError::into_inner));
        let sources = self.sources.clone();
        let slot = Arc::clone(&self.state);
        let start = async move {
            // The sources see the history with the input, as the turn will have it.
            state.messages.push(Message::user_text(prompt.as_str()));
            let attachments = sources.collect(&state.messages, Some(&prompt)).await;
            let mut input: Vec<Message> = state.messages.pop().into_iter().collect();
            input.extend(attachments);
            query.run(state, input)
        };
        futures::stream::iter(warnings)
            .chain(futures::stream::once(start).flatten())
            .inspect(move |event| {
                if let Event::Finished(finished) = event {
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = finished.state.clone();
                }
            })
            .boxed()
    }
}

/// Whether `date` is `YYYY-MM-DD`.
fn is_date(date: &str) -> bool {
    let bytes = date.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(n, b)| match n {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use threadline_message::TranscriptError;
    use threadline_query::scripted::ScriptedService;

    use super::*;

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
