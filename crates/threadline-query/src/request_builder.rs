//! The one place a loop's requests are assembled: every iteration's main request, and the
//! request a [`ContextPolicy`](crate::ContextPolicy) builds from it (the autocompact summary
//! request is this request plus the summary instruction).
//!
//! What a request is made of, in order: the model, `max_tokens`, the system prompt,
//! `thinking`, `fallbacks`, `context_management` and the tools as offered (tool search's
//! deferrals applied) from the [`QueryConfig`] and the [`ToolSet`]; the normalized messages;
//! `stream: true`; then the [`RequestShaper`] (the context message) and the
//! [`CachePlanner`] (the markers). The loop adds, per request, what only it knows: the
//! output limit after an escalation, mid-session tool changes and the cache-diagnostics
//! parameter.

use threadline_message::Message;
use threadline_normalize::{Options, normalize};
use threadline_wire::{Messages, MessagesRequest, ToolDefinition};

use crate::config::QueryConfig;
use crate::request_hooks::{CachePlanner, RequestShaper, Unchanged};
use crate::state::loop_normalize_options;
use crate::tool::ToolSet;
use crate::tool_changes::ToolChanges;

/// Assembles the requests of one loop. The loop owns one (built from its config, tools,
/// shaper and cache planner) and hands it to its [`ContextPolicy`](crate::ContextPolicy) in
/// every [`StepInput`](crate::StepInput), so a request a policy builds (the summary
/// request's base) is the request the loop would send.
///
/// ```
/// use threadline_message::Message;
/// use threadline_query::{QueryConfig, RequestBuilder, SharedPlanner, ToolSet};
/// use threadline_wire::SystemPrompt;
///
/// let mut config = QueryConfig::new("claude-sonnet-4-5", 1024);
/// config.system = Some(SystemPrompt::Text("Be brief. ".repeat(400)));
/// let mut builder = RequestBuilder::new(config, &ToolSet::new())
///     .with_cache_planner(SharedPlanner::default());
/// let request = builder.preview(&[Message::user_text("hello")]);
/// assert_eq!(request.model, "claude-sonnet-4-5");
/// assert_eq!(request.stream, Some(true));
/// assert_eq!(request.messages.len(), 1);
/// // Planned as the loop plans: the long system prompt carries a marker.
/// assert!(serde_json::to_string(&request).expect("json").contains("cache_control"));
/// ```
pub struct RequestBuilder {
    config: QueryConfig,
    normalize: Options,
    /// The tools as offered (tool search's deferrals applied).
    tools: Vec<ToolDefinition>,
    /// The tools of the last request the loop sent, when a mid-session change made them
    /// differ from `tools`.
    offered: Option<Vec<ToolDefinition>>,
    /// The loop's mid-session tool changes, whose messages (announcements, thinking left out
    /// after a changed `tools` on a binding model) the preview repeats.
    changes: Option<ToolChanges>,
    /// Whether a compaction happened since the last request the loop built: the changes'
    /// placements then belong to the history before it, until the next request.
    changes_stale: bool,
    shaper: Box<dyn RequestShaper>,
    planner: Box<dyn CachePlanner>,
}

impl std::fmt::Debug for RequestBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestBuilder")
            .field("model", &self.config.model)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl RequestBuilder {
    /// The builder of a loop with `config` and `tools`; no shaper, no cache markers.
    pub fn new(config: QueryConfig, tools: &ToolSet) -> RequestBuilder {
        let definitions = crate::tool_search::definitions(tools, &config);
        RequestBuilder {
            normalize: loop_normalize_options(&config.normalize),
            config,
            tools: definitions,
            offered: None,
            changes: None,
            changes_stale: false,
            shaper: Box::new(Unchanged),
            planner: Box::new(Unchanged),
        }
    }

    /// Shapes every request with `shaper` (after normalization, before cache planning).
    pub fn with_shaper(mut self, shaper: impl RequestShaper + 'static) -> RequestBuilder {
        self.shaper = Box::new(shaper);
        self
    }

    /// Places the markers of every request with `planner`.
    pub fn with_cache_planner(mut self, planner: impl CachePlanner + 'static) -> RequestBuilder {
        self.planner = Box::new(planner);
        self
    }

    pub(crate) fn with_boxed_hooks(
        mut self,
        shaper: Box<dyn RequestShaper>,
        planner: Box<dyn CachePlanner>,
    ) -> RequestBuilder {
        self.shaper = shaper;
        self.planner = planner;
        self
    }

    /// The loop settings every request shares.
    pub fn config(&self) -> &QueryConfig {
        &self.config
    }

    /// The tools every request carries (those of the last request sent, after a
    /// mid-session tool change).
    pub fn tools(&self) -> &[ToolDefinition] {
        self.offered.as_deref().unwrap_or(&self.tools)
    }

    /// The normalization options of the loop (the config's, with paused turns resumed and
    /// nothing before the last server-side compaction sent).
    pub fn normalize_options(&self) -> &Options {
        &self.normalize
    }

    /// The request without messages, shaping or markers: the model, `max_tokens`, system
    /// prompt, `thinking`, `fallbacks`, `context_management`, tools and `stream: true` every
    /// request carries. Its system prompt and tools are what each request adds to its
    /// messages.
    pub fn bare(&self) -> MessagesRequest {
        self.unshaped(Vec::new(), self.config.max_tokens)
    }

    /// `messages` (normalized) in a request with the shared fields, before the tool changes,
    /// the shaper and the planner.
    pub(crate) fn unshaped(
        &self,
        messages: impl Into<Messages>,
        max_tokens: u64,
    ) -> MessagesRequest {
        let mut request = MessagesRequest::new(self.config.model.clone(), max_tokens, messages);
        request.system = self.config.system.clone();
        request.thinking = self.config.thinking.clone();
        request.output_config = self.config.output_config.clone();
        request.fallbacks = self.config.fallbacks.clone();
        request.context_management = self.config.context_management.clone();
        if !self.tools.is_empty() {
            request.tools = Some(self.tools.clone());
        }
        request.stream = Some(true);
        request
    }

    /// The loop's mid-session tool changes, for the preview.
    pub(crate) fn with_tool_changes(mut self, changes: Option<ToolChanges>) -> Self {
        self.changes = changes;
        self
    }

    /// Records the tools a mid-session change left on the request the loop sends.
    pub(crate) fn note_offered(&mut self, request: &MessagesRequest) {
        let tools = request.tools.clone().unwrap_or_default();
        self.offered = (tools != self.tools).then_some(tools);
        self.changes_stale = false;
    }

    /// Shapes and plans `request` (the loop's last two steps).
    pub(crate) fn finish(&mut self, request: &mut MessagesRequest) {
        self.shaper.shape(request);
        self.planner.plan(request);
    }

    /// Forgets what the planner planned before (after a compaction).
    pub(crate) fn reset_planner(&mut self) {
        self.changes_stale = true;
        self.planner.reset();
    }

    /// The request the loop would send now for `visible` (the history after the last
    /// compaction boundary), normalized in one batch: the shared fields, the tools of the
    /// last request sent, shaped, and its markers placed by the loop's planner without
    /// recording the request ([`CachePlanner::plan_unrecorded`]): byte for byte the request
    /// the loop would send next, and the planner left as it was.
    pub fn preview(&mut self, visible: &[Message]) -> MessagesRequest {
        let messages = normalize(visible, &self.normalize).messages;
        let mut request = self.unshaped(messages, self.config.max_tokens);
        if let Some(offered) = &self.offered {
            request.tools = (!offered.is_empty()).then(|| offered.clone());
        }
        if let Some(changes) = &self.changes
            && !self.changes_stale
        {
            changes.replay(&mut request);
        }
        self.shaper.shape(&mut request);
        self.planner.plan_unrecorded(&mut request);
        request
    }
}
