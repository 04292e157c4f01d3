//! An [`Agent`] as the loop of a durable worker's turns: with the `restate` feature,
//! `Worker::with_turn_loop(agent)` runs each turn with the agent's own loop (the loop a run
//! and a dry run use: configuration, system prompt, tools with their deferrals and the
//! `Task` tool, shaper, compaction, attachment sources), its effects journaled by the worker.
//!
//! What a durable turn does differently, so that a replay on another worker builds the same
//! requests: the cache planner is a fresh copy of the agent's for each turn (the default
//! strategy with the agent's model table), the compaction breaker starts closed each turn, the
//! turn's input (the prompt's attachments) and each next-turn collection are journaled
//! steps, and the permission callback, cancellation, transcript and session store are the
//! worker's, not the agent's. The agent's history is not used: the session's is.

use futures::future::BoxFuture;
use threadline_message::Message;
use threadline_query::{AttachmentHook, CompactionMemory, Query};
use threadline_restate::{JournaledService, TurnLoop};
use threadline_wire::service::MessagesService;

use crate::Agent;

impl<S> TurnLoop for Agent<S>
where
    S: MessagesService + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
{
    fn query(&self, service: JournaledService) -> Query<JournaledService> {
        self.assemble(service, self.fresh_planner(), CompactionMemory::default())
    }

    fn attachments(&self) -> Option<Box<dyn AttachmentHook>> {
        Some(Box::new(self.collector()))
    }

    fn input(&self, history: &[Message], prompt: &str) -> Option<BoxFuture<'static, Vec<Message>>> {
        Some(self.input_after(history, prompt))
    }

    fn has_tool(&self, name: &str) -> bool {
        self.tool_set().get(name).is_some()
    }
}
