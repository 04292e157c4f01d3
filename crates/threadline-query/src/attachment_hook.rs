//! The context channels of `threadline-attach` as loop hooks (feature `attach`): the
//! synthetic context message put in front of every request ([`ContextShaper`], a
//! [`RequestShaper`]) and the per-turn attachment collector ([`CollectorHook`], an
//! [`AttachmentHook`] over [`AttachmentSources`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use threadline_attach::{Collector, Turn, UserContext, Workspace};
use threadline_message::Message;
use threadline_wire::MessagesRequest;

use crate::hooks::AttachmentHook;
use crate::request_hooks::RequestShaper;

/// Puts the session's context message (instruction files, date) in front of the normalized
/// messages of every request; it is built once per session and never stored in the history.
/// The default puts nothing.
#[derive(Debug, Clone, Default)]
pub struct ContextShaper {
    user_context: Option<Arc<UserContext>>,
}

impl ContextShaper {
    /// Puts `context` in front of every request.
    pub fn new(context: UserContext) -> ContextShaper {
        ContextShaper {
            user_context: Some(Arc::new(context)),
        }
    }

    /// Puts the context message in front of `request`'s messages.
    pub fn apply(&self, request: &mut MessagesRequest) {
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

/// The attachment sources of a session and what they read (the workspace, today's date).
/// Clones share the collector.
#[derive(Debug, Clone)]
pub struct AttachmentSources {
    collector: Arc<Collector>,
    workspace: Option<Arc<Workspace>>,
    today: Option<Arc<str>>,
}

impl AttachmentSources {
    /// The sources of `collector`, with no workspace and no date.
    pub fn new(collector: Collector) -> AttachmentSources {
        AttachmentSources {
            collector: Arc::new(collector),
            workspace: None,
            today: None,
        }
    }

    /// The workspace the sources read (and confine `@` mentions to).
    pub fn with_workspace(mut self, workspace: Arc<Workspace>) -> AttachmentSources {
        self.workspace = Some(workspace);
        self
    }

    /// Today's date, `YYYY-MM-DD`, for the sources that announce it.
    pub fn with_today(mut self, today: &str) -> AttachmentSources {
        self.today = Some(Arc::from(today));
        self
    }

    /// The attachments for a turn over `history`, with the user's `input` when it starts one.
    pub async fn collect(&self, history: &[Message], input: Option<&str>) -> Vec<Message> {
        self.collect_reported(history, input).await.messages()
    }

    /// [`Self::collect`], with the collector's report (an `@` mention refused, a source that
    /// failed or timed out) beside the attachments.
    pub async fn collect_reported(
        &self,
        history: &[Message],
        input: Option<&str>,
    ) -> threadline_attach::Collected {
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
        self.collector.collect(&turn).await
    }
}

/// Next-turn attachments from [`AttachmentSources`] (collected after each tool-using turn;
/// collect for the user's input yourself with [`AttachmentSources::collect`]).
///
/// ```
/// use std::sync::Arc;
/// use threadline_attach::{Collector, FileMentions};
/// use threadline_query::{AttachmentSources, CollectorHook, ContextShaper, Query, QueryConfig};
/// use threadline_query::scripted::ScriptedService;
///
/// let mut collector = Collector::new();
/// collector.add(FileMentions::new());
/// let sources = AttachmentSources::new(collector).with_today("2026-01-01");
/// let query = Query::new(ScriptedService::new([]), QueryConfig::new("claude-sonnet-4-5", 1024))
///     .with_shaper(ContextShaper::default())
///     .with_attachments(CollectorHook::new(sources));
/// # let _ = query;
/// ```
#[derive(Debug, Clone)]
pub struct CollectorHook(AttachmentSources);

impl CollectorHook {
    /// The hook over `sources`.
    pub fn new(sources: AttachmentSources) -> CollectorHook {
        CollectorHook(sources)
    }
}

impl AttachmentHook for CollectorHook {
    fn collect<'a>(&'a mut self, history: &'a [Message]) -> BoxFuture<'a, Vec<Message>> {
        Box::pin(self.0.collect(history, None))
    }
}
