//! Subagents: the user-facing description is on [`TaskTool`].

use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Value, json};
use threadline_message::Message;
use threadline_message::transcript::{TranscriptWriter, WriterOptions};
#[cfg(test)]
use threadline_wire::Content;
use threadline_wire::{ContentBlock, SystemPrompt};

use crate::config::QueryConfig;
use crate::event::Event;
use crate::query::Query;
use crate::recovery::INTERRUPTED;
use crate::state::State;
use crate::terminal::Terminal;
use threadline_wire::service::MessagesService;

use crate::tool::{self, Tool, ToolContext, ToolOutput, ToolSet, ToolStream};

/// One kind of subagent (from a `.claude/agents/*.md`-style definition).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubagentType {
    /// The name the model gives as `subagent_type`.
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// The tools it may use (`None`: every tool of the parent but `Task`).
    pub tools: Option<Vec<String>>,
    /// Its model (`None`: the parent's).
    pub model: Option<String>,
    /// Its system prompt.
    pub system_prompt: String,
}

impl SubagentType {
    /// A type with every parent tool and the parent's model.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        system_prompt: impl Into<String>,
    ) -> SubagentType {
        SubagentType {
            name: name.into(),
            description: description.into(),
            tools: None,
            model: None,
            system_prompt: system_prompt.into(),
        }
    }

    /// The same type restricted to `tools`.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// The same type on `model`.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}

/// The settings of the `Task` tool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubagentConfig {
    /// The types the model may ask for (besides [`SubagentType::GENERAL_PURPOSE`] and, if
    /// [`fork`](Self::fork), [`SubagentType::FORK`]).
    pub types: Vec<SubagentType>,
    /// Turn limit of each subagent.
    pub max_turns: u32,
    /// Output limit of each of its requests.
    pub max_tokens: u64,
    /// Whether `subagent_type: "fork"` is offered.
    pub fork: bool,
    /// Where transcripts go (`<session>/subagents`); `None`: not written.
    pub transcripts: Option<PathBuf>,
}

impl Default for SubagentConfig {
    fn default() -> Self {
        SubagentConfig {
            types: Vec::new(),
            max_turns: SubagentConfig::DEFAULT_MAX_TURNS,
            max_tokens: SubagentConfig::DEFAULT_MAX_TOKENS,
            fork: false,
            transcripts: None,
        }
    }
}

impl SubagentConfig {
    /// These settings with `types` offered.
    pub fn with_types(mut self, types: Vec<SubagentType>) -> Self {
        self.types = types;
        self
    }

    /// These settings with forks offered or not.
    pub fn with_fork(mut self, fork: bool) -> Self {
        self.fork = fork;
        self
    }

    /// These settings with transcripts written under `dir`.
    pub fn with_transcripts(mut self, dir: impl Into<PathBuf>) -> Self {
        self.transcripts = Some(dir.into());
        self
    }

    /// These settings with each subagent bounded to `max_turns` turns of at most
    /// `max_tokens` output tokens.
    pub fn with_limits(mut self, max_turns: u32, max_tokens: u64) -> Self {
        self.max_turns = max_turns;
        self.max_tokens = max_tokens;
        self
    }
}

/// Builds the nested loop for a configuration, the way the parent's own loop is built (same
/// service, request shaper, cache planner, permission callback): the caller's wiring. The
/// flag is `true` for a forked subagent (whose cache planner continues the parent's).
pub type QueryFactory<S> = Arc<dyn Fn(QueryConfig, bool) -> Query<S> + Send + Sync>;

/// The `Task` tool: subagents. The tool (Claude Code's name and input: `{description, prompt,
/// subagent_type?}`) runs a nested [`Query`] with its own message array over the same
/// service, and answers the subagent's final text as the tool result.
///
/// - A **typed** subagent ([`SubagentType`]) starts from an empty array: its own system
///   prompt, the parent's tools restricted to its list (a call outside it is refused with an
///   error result the subagent's model reads: the tool is not offered and the loop answers
///   `No such tool`), its own model (or the parent's), turns and output tokens bounded.
/// - A **forked** subagent (`subagent_type: "fork"`, [`SubagentType::FORK`]) inherits the parent's whole
///   history as it was sent in the turn's request, the parent's system prompt and tools, and
///   gets its prompt appended as a user message: its first request is the parent's request
///   plus that text, so it reads the parent's cached prefix.
/// - Every subagent is concurrency-safe (several run in parallel), is aborted with the parent
///   (the call's cancellation token), and, when a directory is set, writes its transcript to
///   `<dir>/agent-<id>.jsonl` with every line marked `"isSidechain": true, "agentId": <id>`
///   (and an `agent-<id>.meta.json` sidecar: `agentType`, `description`, `toolUseId`), as
///   Claude Code 2.1 lays out `<session>/subagents/`.
/// - A subagent cannot start subagents: its `Task` tool (kept so the tool bytes of a fork are
///   the parent's) refuses.
pub struct TaskTool<S> {
    factory: QueryFactory<S>,
    parent: QueryConfig,
    tools: ToolSet,
    config: Arc<SubagentConfig>,
    description: String,
    nested: bool,
}

impl<S> std::fmt::Debug for TaskTool<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool")
            .field("tools", &self.tools)
            .field("config", &self.config)
            .field("nested", &self.nested)
            .finish_non_exhaustive()
    }
}

impl<S> Clone for TaskTool<S> {
    fn clone(&self) -> Self {
        TaskTool {
            factory: Arc::clone(&self.factory),
            parent: self.parent.clone(),
            tools: self.tools.clone(),
            config: Arc::clone(&self.config),
            description: self.description.clone(),
            nested: self.nested,
        }
    }
}

impl<S> TaskTool<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    /// The tool for a parent running with `parent` and `tools` (the parent's tool set, `Task`
    /// itself left out or not: it is replaced).
    pub fn new(
        factory: QueryFactory<S>,
        parent: QueryConfig,
        tools: ToolSet,
        config: SubagentConfig,
    ) -> TaskTool<S> {
        let description = describe(&config);
        TaskTool {
            factory,
            parent,
            tools,
            config: Arc::new(config),
            description,
            nested: false,
        }
    }

    /// The same tool as a subagent sees it: same definition, every call refused.
    fn nested(&self) -> TaskTool<S> {
        TaskTool {
            nested: true,
            ..self.clone()
        }
    }
}

/// The tool description: what it does and the types on offer, in a stable order.
fn describe(config: &SubagentConfig) -> String {
    let mut text = String::from(
        "Launch a subagent that works on a task with its own context and answers with a \
         report. Give a short description (3-5 words) and a complete prompt; the subagent \
         does not see this conversation unless forked. Several may run in parallel.\n\
         Available subagent types:\n",
    );
    if !config
        .types
        .iter()
        .any(|t| t.name == SubagentType::GENERAL_PURPOSE)
    {
        text.push_str("- general-purpose: the default; every tool.\n");
    }
    for kind in &config.types {
        text.push_str(&format!("- {}: {}\n", kind.name, kind.description));
    }
    if config.fork {
        text.push_str("- fork: inherits this whole conversation and continues from it.\n");
    }
    text
}

impl<S> Tool for TaskTool<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    fn name(&self) -> &str {
        SubagentConfig::TASK_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
                "prompt": {"type": "string", "description": "The task for the subagent to perform"},
                "subagent_type": {"type": "string", "description": "The type of subagent to use"}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn needs_history(&self) -> bool {
        !self.nested && self.config.fork
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream {
        if self.nested {
            return tool::result(async { ToolOutput::error(SubagentConfig::NESTED_REFUSAL) });
        }
        match self.prepare(&input, &ctx) {
            Err(message) => tool::result(async move { ToolOutput::error(message) }),
            Ok(launch) => tool::result(launch.run(ctx)),
        }
    }
}

/// A subagent ready to run.
struct Launch<S> {
    query: Query<S>,
    input: Vec<Message>,
    state: State,
    agent_id: String,
    kind: String,
    transcript: Option<PathBuf>,
}

/// Closes a subagent's transcript when its call is dropped before the nested loop finished
/// (the parent's abort drops running calls at once): every tool use the file holds without a
/// result gets the interrupted result, so the file ends as a finished loop's would.
struct Closer {
    transcript: Option<PathBuf>,
    agent_id: String,
    finished: bool,
}

impl Drop for Closer {
    fn drop(&mut self) {
        let Some(path) = self.transcript.as_ref().filter(|_| !self.finished) else {
            return;
        };
        // Best effort: what the loop's writer wrote is read back (the writer is gone).
        let Ok(read) = threadline_message::transcript::read_transcript(path) else {
            return;
        };
        let mut open: Vec<String> = Vec::new();
        for message in &read.messages {
            match message {
                Message::Assistant(a) => open.extend(a.content.iter().filter_map(|b| match b {
                    ContentBlock::ToolUse(t) => Some(t.id.clone()),
                    _ => None,
                })),
                Message::User(u) => {
                    for block in &u.content {
                        if let ContentBlock::ToolResult(r) = block {
                            open.retain(|id| *id != r.tool_use_id);
                        }
                    }
                }
                _ => {}
            }
        }
        if open.is_empty() {
            return;
        }
        if let Ok(mut writer) = TranscriptWriter::open_with(path, writer_options(&self.agent_id)) {
            for id in open {
                let _ = writer.append(&Message::synthetic_error_result(id, INTERRUPTED));
            }
        }
    }
}

impl<S> TaskTool<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    fn prepare(&self, input: &Value, ctx: &ToolContext) -> Result<Launch<S>, String> {
        let text = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or_default();
        let (description, prompt) = (text("description"), text("prompt"));
        if prompt.trim().is_empty() {
            return Err("Task: the prompt is empty.".into());
        }
        if prompt.len() > SubagentConfig::MAX_PROMPT_BYTES
            || description.len() > SubagentConfig::MAX_PROMPT_BYTES
        {
            return Err(format!(
                "Task: the prompt or description is longer than {} bytes.",
                SubagentConfig::MAX_PROMPT_BYTES
            ));
        }
        let kind = match text("subagent_type") {
            "" => SubagentType::GENERAL_PURPOSE,
            kind => kind,
        };
        let mut config = self.parent.clone();
        config.max_turns = Some(self.config.max_turns);
        config.max_tokens = self.config.max_tokens.min(self.parent.max_tokens.max(1));
        config.escalated_max_tokens = Some(config.max_tokens);
        let mut tools = ToolSet::new();
        let forked = kind == SubagentType::FORK && self.config.fork;
        let (state, messages) = if forked {
            // The parent's tools, system and history as sent: the request prefix is the
            // parent's.
            for name in self.tools.names() {
                if let Some(tool) = self.tools.get(name) {
                    tools.insert(Arc::clone(tool));
                }
            }
            config.max_tokens = self.parent.max_tokens;
            config.escalated_max_tokens = self.parent.escalated_max_tokens;
            let history = ctx.history.as_deref().unwrap_or_default().to_vec();
            let state = State {
                messages: history,
                ..State::default()
            };
            (state, vec![Message::user_text(prompt)])
        } else {
            let definition = self.config.types.iter().find(|t| t.name == kind);
            let (allowed, system, model) = match definition {
                Some(t) => (t.tools.clone(), t.system_prompt.clone(), t.model.clone()),
                None if kind == SubagentType::GENERAL_PURPOSE => {
                    (None, SubagentType::GENERAL_PURPOSE_PROMPT.into(), None)
                }
                None => {
                    return Err(format!(
                        "Task: no subagent type {kind:?}; the types are: {}.",
                        self.type_names().join(", ")
                    ));
                }
            };
            for name in self.tools.names() {
                let offered = name != SubagentConfig::TASK_TOOL
                    && allowed
                        .as_ref()
                        .is_none_or(|list| list.iter().any(|n| n == name));
                if let (true, Some(tool)) = (offered, self.tools.get(name)) {
                    tools.insert(Arc::clone(tool));
                }
            }
            config.system = Some(SystemPrompt::Text(system));
            if let Some(model) = model {
                config.model = model;
            }
            (State::default(), vec![Message::user_text(prompt)])
        };
        if forked {
            // Same definition bytes as the parent's, every call refused.
            tools.insert(Arc::new(self.nested()));
        }
        let agent_id = agent_id(&ctx.tool_use_id);
        let mut query = (self.factory)(config, forked)
            .with_tools(tools)
            .with_cancellation(ctx.cancel.clone());
        let mut transcript = None;
        if let Some(dir) = &self.config.transcripts {
            let failed = |e: String| format!("Task: cannot write the subagent's transcript: {e}");
            let mut writer = open_transcript(dir, &agent_id, kind, description, &ctx.tool_use_id)
                .map_err(failed)?;
            // A fork's file holds the history it inherited: it reads back as its whole array.
            writer
                .append_all(&state.messages)
                .map_err(|e| failed(e.to_string()))?;
            transcript = Some(writer.path().to_path_buf());
            query = query.with_transcript(writer);
        }
        Ok(Launch {
            query,
            input: messages,
            state,
            agent_id,
            kind: kind.to_owned(),
            transcript,
        })
    }

    fn type_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.config.types.iter().map(|t| t.name.clone()).collect();
        if !names.iter().any(|n| n == SubagentType::GENERAL_PURPOSE) {
            names.insert(0, SubagentType::GENERAL_PURPOSE.into());
        }
        if self.config.fork {
            names.push(SubagentType::FORK.into());
        }
        names
    }
}

impl<S> Launch<S>
where
    S: MessagesService + Send + 'static,
    S::Future: Send + 'static,
{
    async fn run(self, ctx: ToolContext) -> ToolOutput {
        // Declared before the run, so dropped after it (after the loop's own writer).
        let mut closer = Closer {
            transcript: self.transcript,
            agent_id: self.agent_id.clone(),
            finished: false,
        };
        let mut events = self.query.run(self.state, self.input);
        let mut finished = None;
        while let Some(event) = events.next().await {
            if let Event::Finished(done) = event {
                finished = Some(done);
            }
        }
        closer.finished = true;
        let raw = json!({"agentId": self.agent_id, "subagentType": self.kind});
        let Some(done) = finished else {
            return ToolOutput::error("The subagent ended without an answer.").with_raw(raw);
        };
        let text = final_text(&done.state.messages);
        match done.terminal {
            Terminal::Completed => ToolOutput::text(text).with_raw(raw),
            Terminal::AbortedStreaming | Terminal::AbortedTools if ctx.cancel.is_cancelled() => {
                ToolOutput::error("The subagent was interrupted.").with_raw(raw)
            }
            terminal => ToolOutput::error(format!(
                "The subagent stopped ({terminal:?}) before finishing. Its last text: {text}"
            ))
            .with_raw(raw),
        }
    }
}

/// The text of the last assistant message.
fn final_text(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant(a) => Some(
                a.content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

/// A subagent's id: 16 hex digits of the FNV-1a hash of its tool use id (stable, file-name
/// safe, one per call).
pub fn agent_id(tool_use_id: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in tool_use_id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Creates `<dir>/agent-<id>.jsonl` (every line marked) and its `.meta.json` sidecar.
fn open_transcript(
    dir: &std::path::Path,
    agent_id: &str,
    kind: &str,
    description: &str,
    tool_use_id: &str,
) -> Result<TranscriptWriter, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let meta = json!({"agentType": kind, "description": description, "toolUseId": tool_use_id});
    let meta_path = dir.join(format!("agent-{agent_id}.meta.json"));
    std::fs::write(&meta_path, meta.to_string())
        .map_err(|e| format!("{}: {e}", meta_path.display()))?;
    TranscriptWriter::open_with(
        dir.join(format!("agent-{agent_id}.jsonl")),
        writer_options(agent_id),
    )
    .map_err(|e| e.to_string())
}

/// Every line of a subagent's transcript is marked as Claude Code marks its subagents'.
fn writer_options(agent_id: &str) -> WriterOptions {
    WriterOptions::default()
        .with_mark("isSidechain", Value::Bool(true))
        .with_mark("agentId", Value::String(agent_id.to_owned()))
}

impl SubagentType {
    /// The `subagent_type` of a forked subagent.
    pub const FORK: &str = "fork";

    /// The `subagent_type` used when the model gives none (every parent tool but `Task`, the
    /// parent's model, [`SubagentType::GENERAL_PURPOSE_PROMPT`]), unless a definition takes the name.
    pub const GENERAL_PURPOSE: &str = "general-purpose";

    /// The system prompt of the general-purpose subagent.
    pub const GENERAL_PURPOSE_PROMPT: &str = "You are a subagent. Carry out the task you are given \
        with the tools you have, then answer with a concise report of what you found or did: the \
        report is all the caller sees.";
}

impl SubagentConfig {
    /// The tool's name, as Claude Code names it.
    pub const TASK_TOOL: &str = "Task";

    /// The default turn limit of a subagent.
    pub const DEFAULT_MAX_TURNS: u32 = 20;

    /// The default output limit of each of a subagent's requests.
    pub const DEFAULT_MAX_TOKENS: u64 = threadline_wire::defaults::DEFAULT_MAX_TOKENS;

    /// The longest prompt or description accepted (bytes).
    pub const MAX_PROMPT_BYTES: usize = 256 * 1024;

    /// What a subagent answers when it cannot start one itself.
    pub const NESTED_REFUSAL: &str = "A subagent cannot start subagents.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids_are_stable_hex() {
        assert_eq!(agent_id(""), "cbf29ce484222325");
        assert_eq!(agent_id("toolu_1").len(), 16);
        assert_ne!(agent_id("toolu_1"), agent_id("toolu_2"));
    }

    use crate::scripted::{Reply, Response, ScriptedService};
    use threadline_wire::StopReason;

    fn task_tool(service: &ScriptedService, config: SubagentConfig) -> TaskTool<ScriptedService> {
        let service = service.clone();
        let factory: QueryFactory<ScriptedService> =
            Arc::new(move |config, _fork| Query::new(service.clone(), config));
        let parent = QueryConfig::new("claude-sonnet-4-5", 1024);
        let tools = ToolSet::new().with(Echo);
        TaskTool::new(factory, parent, tools, config)
    }

    struct Echo;
    impl Tool for Echo {
        fn name(&self) -> &str {
            "Echo"
        }
        fn description(&self) -> &str {
            "Echoes."
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn call(&self, _input: Value, _ctx: ToolContext) -> ToolStream {
            tool::result(async { ToolOutput::text("echo") })
        }
    }

    async fn call(tool: &TaskTool<ScriptedService>, input: Value) -> ToolOutput {
        let mut stream = tool.call(input, ToolContext::new("toolu_1"));
        while let Some(event) = stream.next().await {
            if let crate::tool::ToolEvent::Result(output) = event {
                return output;
            }
        }
        ToolOutput::error("no result")
    }

    #[tokio::test]
    async fn an_unknown_type_an_empty_prompt_and_a_nested_call_are_refused() {
        let service = ScriptedService::new([]);
        let tool = task_tool(&service, SubagentConfig::default().with_fork(true));
        let unknown = call(
            &tool,
            json!({"description": "d", "prompt": "p", "subagent_type": "x"}),
        )
        .await;
        assert_eq!(
            unknown,
            ToolOutput::error(
                "Task: no subagent type \"x\"; the types are: general-purpose, fork."
            )
        );
        let empty = call(&tool, json!({"description": "d", "prompt": " "})).await;
        assert_eq!(empty, ToolOutput::error("Task: the prompt is empty."));
        let nested = call(&tool.nested(), json!({"description": "d", "prompt": "p"})).await;
        assert_eq!(nested, ToolOutput::error(SubagentConfig::NESTED_REFUSAL));
        assert_eq!(service.requests().len(), 0);
    }

    #[tokio::test]
    async fn a_subagent_is_bounded_in_turns() {
        let looping = || {
            Reply::stream(
                Response::new("msg")
                    .tool_use("toolu_e", "Echo", json!({}))
                    .stop(StopReason::ToolUse),
            )
        };
        let service = ScriptedService::new([looping(), looping(), looping()]);
        let tool = task_tool(&service, SubagentConfig::default().with_limits(2, 512));
        let output = call(&tool, json!({"description": "d", "prompt": "loop"})).await;
        assert!(output.is_error);
        let Content::Text(text) = &output.content else {
            panic!("text")
        };
        assert!(text.starts_with("The subagent stopped (MaxTurns"), "{text}");
        let requests = service.requests();
        assert_eq!(requests.len(), 2);
        assert!(requests.iter().all(|r| r.max_tokens == 512));
        assert!(service.violations().is_empty());
    }

    #[test]
    fn the_description_lists_the_types() {
        let config = SubagentConfig::default()
            .with_types(vec![SubagentType::new("reader", "Reads files.", "Read.")])
            .with_fork(true);
        assert_eq!(
            describe(&config).lines().skip(2).collect::<Vec<_>>(),
            [
                "- general-purpose: the default; every tool.",
                "- reader: Reads files.",
                "- fork: inherits this whole conversation and continues from it."
            ]
        );
    }
}
