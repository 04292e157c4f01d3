//! Wiring of the `Task` tool (`threadline_query::subagent`): the nested loop is built like the
//! agent's own (same service, request shaper, permission callback, a cache planner of its
//! own), the workspace's `.claude/agents/*.md` definitions become its types, and transcripts
//! go to `<session>/subagents/`. The behaviour is the query crate's; this is wiring only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use threadline_attach::Workspace;
use threadline_attach::agent_definitions::{AgentDefinition, DefinitionError, load_definitions};
use threadline_query::{
    ContextShaper, PermissionCallback, Query, QueryConfig, SharedPlanner, ToolSet,
};
use threadline_query::{QueryFactory, SubagentConfig, SubagentType, TaskTool};
use threadline_wire::service::MessagesService;

/// The workspace's definitions added to `config`'s types (a type given in code keeps its
/// name: the file of the same name is left out).
pub(crate) fn with_definitions(
    mut config: SubagentConfig,
    workspace: Option<&Workspace>,
) -> Result<SubagentConfig, DefinitionError> {
    let Some(workspace) = workspace else {
        return Ok(config);
    };
    for definition in load_definitions(workspace)? {
        if !config.types.iter().any(|t| t.name == definition.name) {
            config.types.push(subagent_type(definition));
        }
    }
    Ok(config)
}

fn subagent_type(definition: AgentDefinition) -> SubagentType {
    let mut kind = SubagentType::new(
        definition.name,
        definition.description,
        definition.system_prompt,
    );
    if let Some(tools) = definition.tools {
        kind = kind.with_tools(tools);
    }
    if let Some(model) = definition.model {
        kind = kind.with_model(model);
    }
    kind
}

/// `<session>/subagents` for the transcript `<session>.jsonl`.
pub(crate) fn transcripts_dir(transcript: &Path) -> PathBuf {
    transcript.with_extension("").join("subagents")
}

/// What the nested loops share with the agent's.
pub(crate) struct Parent<S> {
    pub(crate) service: S,
    pub(crate) shaper: ContextShaper,
    pub(crate) permission: Arc<dyn PermissionCallback>,
    pub(crate) planner: SharedPlanner,
}

/// The `Task` tool for a run with `config` and `tools`.
pub(crate) fn task_tool<S>(
    parent: Parent<S>,
    config: QueryConfig,
    tools: ToolSet,
    subagents: SubagentConfig,
) -> TaskTool<S>
where
    S: MessagesService + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let Parent {
        service,
        shaper,
        permission,
        planner,
    } = parent;
    let service = Mutex::new(service);
    let factory: QueryFactory<S> = Arc::new(move |config: QueryConfig, fork: bool| {
        // A fork continues the agent's planner (its markers where the parent's last request
        // had them); any other subagent starts a session of its own.
        let planner = if fork {
            planner.forked()
        } else {
            planner.fresh()
        };
        let service = service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Query::new(service, config)
            .with_permission(crate::agent::SharedPermission(Arc::clone(&permission)))
            .with_shaper(shaper.clone())
            .with_cache_planner(planner)
    });
    TaskTool::new(factory, config, tools, subagents)
}
