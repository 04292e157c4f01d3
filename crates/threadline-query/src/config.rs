//! The run's fixed settings.

use threadline_normalize::Options;
use threadline_wire::model::{Capability, SharedModelTable};
use threadline_wire::platform::{self, Platform};
use threadline_wire::request::ContextManagement;
use threadline_wire::request::{Effort, OutputConfig};
use threadline_wire::{Fallbacks, SystemPrompt, ThinkingConfig};

use crate::token_budget::TokenBudget;
use crate::tool_search::ToolSearchConfig;

/// What every request of a run shares.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueryConfig {
    /// The model id.
    pub model: String,
    /// `max_tokens` of every request (until an escalation).
    pub max_tokens: u64,
    /// `max_tokens` after an escalation (clamped to the model's output limit). `None`: the
    /// model table's output limit, or [`QueryConfig::DEFAULT_ESCALATED_MAX_TOKENS`].
    pub escalated_max_tokens: Option<u64>,
    /// The system prompt.
    pub system: Option<SystemPrompt>,
    /// Extended thinking.
    pub thinking: Option<ThinkingConfig>,
    /// `output_config` (effort, structured output format, task budget), sent with every
    /// request of the run.
    pub output_config: Option<OutputConfig>,
    /// At most this many tool-using turns per run.
    pub max_turns: Option<u32>,
    /// Keep the model working until this many output tokens.
    pub token_budget: Option<TokenBudget>,
    /// How many times stop hooks may block in one run.
    pub max_stop_hook_blocks: u32,
    /// Normalization options. The loop always turns [`Options::resume_paused_turn`] on (a
    /// paused turn is sent back as it came; every request of a run defines the same tools),
    /// and [`Options::from_last_compaction`], whatever this says.
    pub normalize: Options,
    /// Server-side fallback models (`fallbacks`), sent with every request. The API needs the
    /// `server-side-fallback-2026-07-01` beta header with it; the client's configuration
    /// adds headers, not the loop.
    pub fallbacks: Option<Fallbacks>,
    /// When tools are deferred behind tool search (default: auto, above 10 % of the
    /// context window, on models with tool search).
    pub tool_search: ToolSearchConfig,
    /// Ask for cache diagnostics (`diagnostics: {previous_message_id}`) on every request; see
    /// [`CacheDiagnosisReport`](crate::CacheDiagnosisReport). The body names the beta header.
    pub cache_diagnostics: bool,
    /// Server-side context edits (`context_management`: `compact_20260112` from
    /// `threadline_compact::server`), sent with every request. The client derives the beta
    /// headers from the body.
    pub context_management: Option<ContextManagement>,
    /// The session this run belongs to, recorded as `gen_ai.conversation.id` on the run's
    /// spans (telemetry only: never sent to the API).
    pub conversation_id: Option<String>,
    /// The model table the loop (and the compaction policy and tool search it drives) reads
    /// limits and features from: the built-in one by default, or one extended with
    /// `ModelTable::extended_from_json` for models newer than this build.
    pub models: SharedModelTable,
}

impl QueryConfig {
    /// Settings for `model` with `max_tokens`, and nothing else.
    pub fn new(model: impl Into<String>, max_tokens: u64) -> QueryConfig {
        QueryConfig {
            model: model.into(),
            max_tokens,
            escalated_max_tokens: None,
            system: None,
            thinking: None,
            output_config: None,
            max_turns: None,
            token_budget: None,
            max_stop_hook_blocks: QueryConfig::DEFAULT_MAX_STOP_HOOK_BLOCKS,
            normalize: Options::default(),
            fallbacks: None,
            tool_search: ToolSearchConfig::default(),
            cache_diagnostics: false,
            context_management: None,
            conversation_id: None,
            models: SharedModelTable::builtin(),
        }
    }

    /// With a model table other than the built-in one (e.g.
    /// `ModelTable::builtin().extended_from_json(…)`).
    pub fn with_models(mut self, models: impl Into<SharedModelTable>) -> QueryConfig {
        self.models = models.into();
        self
    }

    /// These settings on `platform`: the model table becomes the platform's view
    /// ([`ModelTable::on_platform`](threadline_wire::model::ModelTable::on_platform)), so the
    /// loop, the compaction policy and tool search never use what the platform does not offer
    /// (on Bedrock, on-demand compaction falls back to the local autocompact; server-side
    /// `fallbacks`, which no cloud platform offers, are not sent), and a model named by its
    /// API id is sent by the platform's id when the table gives one (`claude-sonnet-4-5` →
    /// `anthropic.claude-sonnet-4-5-20250929-v1:0` on Bedrock).
    ///
    /// ```
    /// use threadline_query::QueryConfig;
    /// use threadline_wire::model::Feature;
    /// use threadline_wire::platform::Platform;
    ///
    /// let config = QueryConfig::new("claude-sonnet-4-6", 1024).on_platform(Platform::Bedrock);
    /// assert_eq!(config.model, "anthropic.claude-sonnet-4-6");
    /// let row = config.models.resolve(&config.model).model();
    /// assert!(!row.supports(Feature::OnDemandCompaction));
    /// ```
    pub fn on_platform(self, platform: Platform) -> QueryConfig {
        self.on_platform_behind(platform, None)
    }

    /// [`on_platform`](Self::on_platform), where a model named by its API id goes on Bedrock
    /// behind the cross-region inference profile `profile` (`us`, `eu`, `apac`, `jp`, `au`,
    /// `global`, `us-gov`; anything else is ignored): Bedrock serves the newer models on
    /// demand only through a profile (docs/api-notes.md#cloud-platforms).
    ///
    /// ```
    /// use threadline_query::QueryConfig;
    /// use threadline_wire::platform::Platform;
    ///
    /// let config = QueryConfig::new("claude-sonnet-4-6", 1024)
    ///     .on_platform_behind(Platform::Bedrock, Some("eu"));
    /// assert_eq!(config.model, "eu.anthropic.claude-sonnet-4-6");
    /// ```
    pub fn on_platform_behind(mut self, platform: Platform, profile: Option<&str>) -> QueryConfig {
        self.models = self.models.on_platform(platform);
        if let Some(id) = self.models.platform_id(&self.model) {
            let profile = profile.filter(|p| {
                platform == Platform::Bedrock && platform::is_bedrock_profile_prefix(p)
            });
            self.model = match profile {
                Some(profile) => format!("{profile}.{id}"),
                None => id.to_owned(),
            };
        }
        // Server-side fallbacks where the platform has none would refuse every request.
        let row = self.models.resolve(&self.model).model();
        if row.withheld(Capability::ServerSideFallbacks).is_some() {
            self.fallbacks = None;
        }
        self
    }

    /// With a tool search policy (off, auto at a share of the window, always; regex or BM25).
    pub fn with_tool_search(mut self, tool_search: ToolSearchConfig) -> QueryConfig {
        self.tool_search = tool_search;
        self
    }

    /// With server-side fallbacks (`"default"` or up to three models).
    pub fn with_fallbacks(mut self, fallbacks: Fallbacks) -> QueryConfig {
        self.fallbacks = Some(fallbacks);
        self
    }

    /// With cache diagnostics asked for on every request.
    pub fn with_cache_diagnostics(mut self) -> QueryConfig {
        self.cache_diagnostics = true;
        self
    }

    /// With server-side context edits on every request.
    pub fn with_context_management(mut self, management: ContextManagement) -> QueryConfig {
        self.context_management = Some(management);
        self
    }

    /// With the session id recorded on the run's spans as `gen_ai.conversation.id`.
    pub fn with_conversation_id(mut self, id: impl Into<String>) -> QueryConfig {
        self.conversation_id = Some(id.into());
        self
    }

    /// With a system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> QueryConfig {
        self.system = Some(SystemPrompt::Text(system.into()));
        self
    }

    /// With extended thinking (`thinking` on every request).
    pub fn with_thinking(mut self, thinking: ThinkingConfig) -> QueryConfig {
        self.thinking = Some(thinking);
        self
    }

    /// With `output_config.effort` on every request (other `output_config` fields kept).
    pub fn with_effort(mut self, effort: Effort) -> QueryConfig {
        self.output_config = Some(
            self.output_config
                .take()
                .unwrap_or_default()
                .with_effort(effort),
        );
        self
    }

    /// With a turn limit.
    pub fn with_max_turns(mut self, max_turns: u32) -> QueryConfig {
        self.max_turns = Some(max_turns);
        self
    }

    /// With a token budget.
    pub fn with_token_budget(mut self, budget: TokenBudget) -> QueryConfig {
        self.token_budget = Some(budget);
        self
    }

    /// With an explicit escalated output limit.
    pub fn with_escalated_max_tokens(mut self, max_tokens: u64) -> QueryConfig {
        self.escalated_max_tokens = Some(max_tokens);
        self
    }

    /// The output limit after an escalation.
    pub fn escalated_limit(&self) -> u64 {
        let table = self.models.resolve(&self.model);
        let model_max = table.model().max_output_tokens;
        let wanted = self.escalated_max_tokens.unwrap_or(if model_max > 0 {
            model_max
        } else {
            QueryConfig::DEFAULT_ESCALATED_MAX_TOKENS
        });
        if model_max > 0 {
            wanted.min(model_max)
        } else {
            wanted
        }
    }
}

impl QueryConfig {
    /// The output limit used after an escalation when the model table knows no higher one.
    pub const DEFAULT_ESCALATED_MAX_TOKENS: u64 = 64_000;

    /// How many times in a run stop hooks may block before the run stops.
    pub const DEFAULT_MAX_STOP_HOOK_BLOCKS: u32 = 8;
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::model::ModelTable;

    /// A table in which `claude-next` exists, with a 300,000-token output limit, no tool
    /// search and a 1,000-token window.
    fn extended() -> ModelTable {
        let row = serde_json::json!({"id": "claude-next", "aliases": [], "context_window": 1000,
            "max_output_tokens": 300_000, "min_cacheable_tokens": 1024, "thinking": ["adaptive"],
            "prefill": false, "sampling_params": false, "effort": [],
            "keeps_prior_thinking": true, "rejects_input_plus_max_tokens_over_window": false,
            "prices": {"input": 1.0, "output": 2.0, "cache_write_5m": 1.25,
                "cache_write_1h": 2.0, "cache_read": 0.1}});
        ModelTable::builtin()
            .extended_from_json(&serde_json::json!({ "models": [row] }).to_string())
            .expect("a valid extension")
    }

    #[test]
    fn on_a_platform_the_config_takes_its_view_its_ids_and_drops_what_it_withholds() {
        use threadline_wire::model::Feature;
        let api = QueryConfig::new("claude-sonnet-4-5", 1024).with_fallbacks(Fallbacks::Default);
        let bedrock = api.clone().on_platform(Platform::Bedrock);
        assert_eq!(bedrock.model, "anthropic.claude-sonnet-4-5-20250929-v1:0");
        assert_eq!(bedrock.models.platform(), Platform::Bedrock);
        assert_eq!(bedrock.fallbacks, None);
        let vertex = api.clone().on_platform(Platform::Vertex);
        assert_eq!(vertex.model, "claude-sonnet-4-5@20250929");
        assert_eq!(vertex.fallbacks, None);
        // The Claude API keeps all of it; a platform id given stays as given.
        let same = api.clone().on_platform(Platform::Anthropic);
        assert_eq!(
            (same.model.as_str(), same.fallbacks.is_some()),
            ("claude-sonnet-4-5", true)
        );
        let profile =
            QueryConfig::new("eu.anthropic.claude-sonnet-4-6", 1024).on_platform(Platform::Bedrock);
        assert_eq!(profile.model, "eu.anthropic.claude-sonnet-4-6");
        // Behind a profile on Bedrock only, and only a known one.
        let behind = |platform, profile| {
            QueryConfig::new("claude-haiku-4-5", 1024)
                .on_platform_behind(platform, Some(profile))
                .model
        };
        assert_eq!(
            behind(Platform::Bedrock, "global"),
            "global.anthropic.claude-haiku-4-5-20251001-v1:0"
        );
        assert_eq!(
            behind(Platform::Bedrock, "mars"),
            "anthropic.claude-haiku-4-5-20251001-v1:0"
        );
        assert_eq!(behind(Platform::Vertex, "eu"), "claude-haiku-4-5@20251001");
        let row = profile.models.resolve(&profile.model);
        assert!(row.is_known() && !row.model().supports(Feature::OnDemandCompaction));
    }

    #[test]
    fn the_loop_reads_the_model_table_it_is_given() {
        let builtin = QueryConfig::new("claude-next", 1024);
        assert_eq!(builtin.models, SharedModelTable::builtin());
        // Unknown to the builtin: the conservative default's output limit.
        assert_eq!(
            builtin.escalated_limit(),
            ModelTable::builtin().resolve("?").model().max_output_tokens
        );
        let config = QueryConfig::new("claude-next", 1024).with_models(extended());
        assert_eq!(config.escalated_limit(), 300_000);
        assert_ne!(config, builtin);
    }
}
