//! The hooks between turns: next-turn attachments and stop hooks.

use futures::future::BoxFuture;
use threadline_message::Message;

/// Collects the attachments for the next turn, after the tool results (`threadline-attach`'s
/// collector). Attachments for the user's own input go in the run's input instead.
pub trait AttachmentHook: Send {
    /// The attachment messages to append, given the history so far.
    fn collect<'a>(&'a mut self, history: &'a [Message]) -> BoxFuture<'a, Vec<Message>>;
}

/// No attachments.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAttachments;

impl AttachmentHook for NoAttachments {
    fn collect<'a>(&'a mut self, _history: &'a [Message]) -> BoxFuture<'a, Vec<Message>> {
        Box::pin(std::future::ready(Vec::new()))
    }
}

/// What a stop hook says when the model wants to end its turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopDecision {
    /// Let the turn end.
    Allow,
    /// Do not end: `message` is injected (as a meta user message) and the model goes on.
    Block {
        /// What the model is told.
        message: String,
    },
    /// End the whole run now.
    Stop {
        /// Why.
        reason: String,
    },
}

/// What a stop hook sees.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StopContext<'a> {
    /// The history, ending with the model's final response.
    pub history: &'a [Message],
    /// Whether the previous continuation came from a stop hook (so a hook can avoid
    /// blocking forever).
    pub stop_hook_active: bool,
}

/// Runs when the model ends its turn without a tool use.
pub trait StopHook: Send {
    /// The decision.
    fn on_stop<'a>(&'a mut self, ctx: StopContext<'a>) -> BoxFuture<'a, StopDecision>;
}

impl<F> StopHook for F
where
    F: FnMut(StopContext<'_>) -> StopDecision + Send,
{
    fn on_stop<'a>(&'a mut self, ctx: StopContext<'a>) -> BoxFuture<'a, StopDecision> {
        let decision = self(ctx);
        Box::pin(std::future::ready(decision))
    }
}
