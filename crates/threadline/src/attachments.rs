//! The context channels of `threadline-attach` as loop hooks: the synthetic context message
//! put in front of every request ([`ContextShaper`]) and the per-turn attachment collector
//! ([`CollectorHook`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use threadline_attach::{Collector, Turn, UserContext, Workspace};
use threadline_message::Message;
use threadline_query::{AttachmentHook, RequestShaper};
use threadline_wire::MessagesRequest;

/// Puts the session's context message (instruction files, date) in front of the normalized
/// messages of every request; it is built once per session and never stored in the history.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContextShaper {
    pub(crate) user_context: Option<Arc<UserContext>>,
}

impl ContextShaper {
    pub(crate) fn apply(&self, request: &mut MessagesRequest) {
        if let Some(context) = &self.user_context {
            request.messages = context.prepend_to(std::mem::take(&mut request.messages));
        }
    }
}

impl RequestShaper for ContextShaper {
    fn shape(&mut self, request: &mut MessagesRequest) {
        self.apply(request);
    }
}

/// The attachment sources of an agent and what they read.
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    pub(crate) collector: Arc<Collector>,
    pub(crate) workspace: Option<Arc<Workspace>>,
    pub(crate) today: Option<Arc<str>>,
}

impl Sources {
    /// The attachments for a turn over `history`, with the user's `input` when it starts one.
    pub(crate) async fn collect(&self, history: &[Message], input: Option<&str>) -> Vec<Message> {
        let mut turn = Turn::new(history);
        if let Some(input) = input {
            turn = turn.with_input(input);
        }
        if let Some(workspace) = &self.workspace {
            turn = turn.with_workspace(workspace);
        }
        if let Some(today) = &self.today {
            turn = turn.with_today(today);
        }
        self.collector.collect(&turn).await.messages()
    }
}

/// Next-turn attachments from the agent's [`Sources`].
#[derive(Debug, Clone)]
pub(crate) struct CollectorHook(pub(crate) Sources);

impl AttachmentHook for CollectorHook {
    fn collect<'a>(&'a mut self, history: &'a [Message]) -> BoxFuture<'a, Vec<Message>> {
        Box::pin(self.0.collect(history, None))
    }
}
