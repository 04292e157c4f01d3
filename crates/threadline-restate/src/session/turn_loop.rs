//! How each durable turn's loop is assembled: a [`TurnLoop`] gives the query over the
//! turn's journaled service, the next-turn attachment collector and the turn's input; the
//! driver wraps the tools, the collector and the permission callback so that every effect is
//! a journaled step. [`ConfigLoop`] is the plain loop of a [`Worker`](crate::Worker) built from
//! a `QueryConfig`; `threadline::Agent` is a `TurnLoop` too (with the facade's `restate`
//! feature), so a worker can run the very loop an embedded agent runs.

use std::sync::Arc;

use futures::future::BoxFuture;
use threadline_message::Message;
use threadline_query::{
    AttachmentHook, CompactionPolicy, Query, QueryConfig, SharedPlanner, ToolSet,
};

use super::bridge::JournaledService;

/// Assembles the loop of each durable turn.
///
/// The driver calls [`query`](TurnLoop::query) once per attempt of a turn (a replay on
/// another worker assembles it again), then replaces its permission callback and
/// cancellation token with the session's, wraps every tool so that each call is a journaled
/// step, and installs the collector of [`attachments`](TurnLoop::attachments) wrapped so
/// that what it collects is a journaled step. Everything that shapes the requests must
/// therefore be a function of the `TurnLoop` and the journaled values: the loop's cache
/// planner is made fresh for each call, and nothing read from the outside (the workspace,
/// the clock) may reach the messages except through [`input`](TurnLoop::input) and the
/// collector, whose results are journaled.
pub trait TurnLoop: Send + Sync + 'static {
    /// The loop of one attempt of a turn over `service` (each model call a journaled step;
    /// the summaries of compaction go through it too): its configuration, tools, shaper,
    /// fresh cache planner, context policy and stop hooks, and no next-turn attachment
    /// collector (see [`attachments`](TurnLoop::attachments)).
    fn query(&self, service: JournaledService) -> Query<JournaledService>;

    /// The next-turn attachment collector of one attempt, if any (each collection is the
    /// journaled step `attach#{n}`).
    fn attachments(&self) -> Option<Box<dyn AttachmentHook>> {
        None
    }

    /// The messages a turn of `prompt` starts with, given the history before it: the
    /// user's message and its attachments (`None`: the user's message alone). Run once, as
    /// the journaled step `input`, inside the turn's determinism scope (its ids and clock).
    fn input(&self, history: &[Message], prompt: &str) -> Option<BoxFuture<'static, Vec<Message>>> {
        let _ = (history, prompt);
        None
    }

    /// Whether the loop has a tool called `name`.
    fn has_tool(&self, name: &str) -> bool;
}

/// Makes the cache planner of one turn. A turn's planner starts fresh on every attempt, so
/// the replay on another worker plans every request of the turn again in the same order and
/// places the same markers: the bytes, and the prompt cache, survive a failover. (On the
/// worker that keeps the session it is given the last turn's memo, which saves flattening the
/// history again and changes no marker: see [`super::memo`].)
pub(crate) type PlannerFactory = Arc<dyn Fn() -> threadline_cache::Planner + Send + Sync>;

/// The plain loop of a [`Worker`](crate::Worker) built with
/// [`Worker::new`](crate::Worker::new): a `QueryConfig`, tools, a fresh cache planner per
/// turn and compaction, the user's prompt as the turn's input.
#[derive(Clone)]
pub(crate) struct ConfigLoop {
    pub(crate) config: QueryConfig,
    pub(crate) tools: ToolSet,
    /// A fresh cache planner for each turn (`None`: no markers).
    pub(crate) planner: Option<PlannerFactory>,
    /// The context policy (`None`: no compaction); its summaries are journaled model steps.
    pub(crate) compaction: Option<threadline_compact::Compaction>,
}

impl TurnLoop for ConfigLoop {
    fn query(&self, service: JournaledService) -> Query<JournaledService> {
        let config = match &self.compaction {
            Some(compaction) => self.config.clone().with_compaction_edit(compaction),
            None => self.config.clone(),
        };
        let mut query = Query::new(service.clone(), config.clone());
        if let Some(compaction) = &self.compaction {
            query = query.with_policy(CompactionPolicy::new(service, compaction.clone(), &config));
        }
        query
            .with_tools(self.tools.clone())
            .with_cache_planner(match &self.planner {
                Some(make) => SharedPlanner::new(make()),
                None => SharedPlanner::none(),
            })
    }

    fn has_tool(&self, name: &str) -> bool {
        self.tools.get(name).is_some()
    }
}
