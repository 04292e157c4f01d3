//! The model table: per-model limits, capabilities and prices, loaded from data.
//!
//! The numbers live in `data/models.json` (compiled in), never in code, because they change
//! per model and over time; each row names the documentation pages and the date its numbers
//! were read ([`Model::source`]). An id the table does not know resolves to a conservative
//! default (small window, small output, no prefill, the highest cache minimum and prices)
//! together with a warning, never a panic. That row says it is a guess
//! ([`Model::is_guess`]): the validator reports what its model-specific rules find against it
//! as warnings only.
//!
//! ```
//! use threadline_wire::model::ModelTable;
//! let table = ModelTable::builtin();
//! let sonnet = table.resolve("claude-sonnet-4-5");
//! assert!(sonnet.is_known());
//! assert_eq!(sonnet.model().id, "claude-sonnet-4-5-20250929");
//! assert_eq!(sonnet.model().max_output_tokens, 64_000);
//! let mystery = table.resolve("claude-next");
//! assert!(mystery.warning().is_some());
//! ```

use std::sync::{Arc, OnceLock};

use serde::Deserialize;

mod models_api;
mod on_platform;

pub use on_platform::{PlatformIds, PlatformRules, Withheld};

use crate::platform::Platform;

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[non_exhaustive]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Output (thinking included).
    pub output: f64,
    /// Cache write with a five-minute lifetime.
    pub cache_write_5m: f64,
    /// Cache write with a one-hour lifetime.
    pub cache_write_1h: f64,
    /// Cache read (hit or refresh).
    pub cache_read: f64,
}

/// The `thinking.type` values a model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ThinkingMode {
    /// Manual thinking with `budget_tokens`.
    Enabled,
    /// Adaptive thinking.
    Adaptive,
    /// Thinking explicitly off.
    Disabled,
}

/// A capability that only some models have (the row's `features`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Feature {
    /// Server-side compaction: the `compact_20260112` context edit.
    ServerCompaction,
    /// Tool search (`tool_search_tool_regex_20251119`, `…_bm25_…`) and `defer_loading` tools.
    ToolSearch,
    /// Mid-conversation tool changes: `tool_addition` / `tool_removal` blocks.
    ToolChanges,
    /// `output_config.task_budget`.
    TaskBudget,
    /// Per-message effort: `output_config.effort` on a `role: "system"` message.
    PerMessageEffort,
    /// On-demand compaction: the top-level `compaction` field (`compact-2026-09-04`).
    OnDemandCompaction,
    /// Thinking bound to its prefix: a thinking block sent back after the `system` prompt, the
    /// non-deferred tools or an earlier message changed is refused (or dropped under
    /// `drop_block`).
    PrefixBoundThinking,
    /// A name this version does not know (newer data): never matches a query.
    #[serde(other)]
    Unknown,
}

/// A capability a row can name as one the documentation is silent on for its model (the row's
/// `undocumented`): neither claimed nor denied. The row does not claim it (its
/// `system_messages` or `features` leave it out), so threadline never relies on it; the
/// validator reports a request using it as a warning, not a violation, and the mock serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Capability {
    /// `role: "system"` messages inside `messages` (the row's `system_messages`).
    SystemMessages,
    /// [`Feature::ServerCompaction`].
    ServerCompaction,
    /// [`Feature::ToolSearch`].
    ToolSearch,
    /// [`Feature::ToolChanges`].
    ToolChanges,
    /// [`Feature::TaskBudget`].
    TaskBudget,
    /// [`Feature::PerMessageEffort`].
    PerMessageEffort,
    /// [`Feature::OnDemandCompaction`].
    OnDemandCompaction,
    /// [`Feature::PrefixBoundThinking`].
    PrefixBoundThinking,
    /// Server-side fallbacks (`fallbacks`): on the Claude API for every model; a platform
    /// may withhold them.
    ServerSideFallbacks,
    /// A name this version does not know (newer data): never matches a query.
    #[serde(other)]
    Unknown,
}

impl Capability {
    /// What the capability is, in words, for a message.
    pub fn describe(self) -> &'static str {
        match self {
            Capability::SystemMessages => "mid-conversation `role: \"system\"` messages",
            Capability::ServerCompaction => "server-side compaction (`compact_20260112`)",
            Capability::ToolSearch => "tool search (`defer_loading`)",
            Capability::ToolChanges => "`tool_addition` / `tool_removal` blocks",
            Capability::TaskBudget => "`output_config.task_budget`",
            Capability::PerMessageEffort => {
                "per-message effort (`output_config` on a system message)"
            }
            Capability::OnDemandCompaction => "on-demand compaction (`compaction`)",
            Capability::PrefixBoundThinking => "thinking bound to its prefix",
            Capability::ServerSideFallbacks => "server-side fallbacks (`fallbacks`)",
            Capability::Unknown => "an unknown capability",
        }
    }
}

impl From<Feature> for Capability {
    fn from(feature: Feature) -> Capability {
        match feature {
            Feature::ServerCompaction => Capability::ServerCompaction,
            Feature::ToolSearch => Capability::ToolSearch,
            Feature::ToolChanges => Capability::ToolChanges,
            Feature::TaskBudget => Capability::TaskBudget,
            Feature::PerMessageEffort => Capability::PerMessageEffort,
            Feature::OnDemandCompaction => Capability::OnDemandCompaction,
            Feature::PrefixBoundThinking => Capability::PrefixBoundThinking,
            Feature::Unknown => Capability::Unknown,
        }
    }
}

/// One model's row.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[non_exhaustive]
pub struct Model {
    /// The canonical id (dated for models before the 4.6 generation).
    pub id: String,
    /// Other ids that resolve to this model.
    pub aliases: Vec<String>,
    /// Context window in tokens.
    pub context_window: u64,
    /// Largest `max_tokens` accepted.
    pub max_output_tokens: u64,
    /// Prompts shorter than this are silently not cached.
    pub min_cacheable_tokens: u64,
    /// Accepted `thinking.type` values.
    pub thinking: Vec<ThinkingMode>,
    /// Whether a final assistant message (prefill) is accepted.
    pub prefill: bool,
    /// Whether non-default `temperature`, `top_p`, `top_k` are accepted.
    pub sampling_params: bool,
    /// Whether `role: "system"` messages (mid-conversation system messages) are accepted
    /// inside `messages`; absent in the data means no.
    #[serde(default)]
    pub system_messages: bool,
    /// Accepted `output_config.effort` levels.
    pub effort: Vec<String>,
    /// The effort levels at which `thinking: {type: "disabled"}` is accepted, when only some
    /// are (Opus 5: up to `high`); absent in the data means all.
    #[serde(default)]
    pub disabled_thinking_efforts: Option<Vec<String>>,
    /// The capabilities only some models have; absent in the data means none.
    #[serde(default)]
    pub features: Vec<Feature>,
    /// The capabilities the documentation says nothing about for this model (see
    /// [`Capability`]); absent in the data means none. A row never claims what it lists here.
    #[serde(default)]
    pub undocumented: Vec<Capability>,
    /// Whether thinking blocks of earlier turns are kept (not stripped) by the API.
    pub keeps_prior_thinking: bool,
    /// Whether input + `max_tokens` over the window is a 400 (older models) rather than a
    /// `model_context_window_exceeded` stop.
    pub rejects_input_plus_max_tokens_over_window: bool,
    /// Prices.
    pub prices: Prices,
    /// When the model was retired from the API, if it was. Informative: nothing refuses a
    /// retired model (the mock serves it, because tests name retired models).
    #[serde(default)]
    pub retired: Option<String>,
    /// Where the row's numbers come from, in words: the documentation pages, the snapshot
    /// (commit) they were read at and the date it was fetched, and which numbers no source
    /// gives. Informative, for an embedder to show; every built-in row has one, a row of an
    /// extension may leave it out.
    #[serde(default)]
    pub source: Option<String>,
    /// The model's ids on the platforms that write them their own way (Bedrock, Vertex AI).
    #[serde(default, skip_serializing_if = "is_default")]
    pub platform_ids: PlatformIds,
    /// This row is the table's conservative default, standing in for an id the table does not
    /// know: its limits are guesses (set by [`ModelTable::from_json`], never read from data).
    #[serde(skip)]
    guess: bool,
    /// The platform the row describes the model on ([`ModelTable::on_platform`]).
    #[serde(skip)]
    platform: Platform,
    /// What that platform withholds, with its refusals.
    #[serde(skip)]
    withheld: Vec<Withheld>,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Model {
    /// Whether this row is the conservative default the table gives an unknown id, so that
    /// its limits and capabilities are guesses, not the model's. The validator reports what
    /// its model-specific rules find against such a row as warnings, never as violations.
    pub fn is_guess(&self) -> bool {
        self.guess
    }

    /// The platform this row describes the model on (the Claude API unless the table is a
    /// [`ModelTable::on_platform`] view): its features are those the platform offers.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// What the row's platform answers when a request uses `capability`, if the platform
    /// does not offer it (on Amazon Bedrock, on-demand compaction). Never on the Claude API.
    pub fn withheld(&self, capability: impl Into<Capability>) -> Option<&Withheld> {
        let capability = capability.into();
        self.withheld.iter().find(|w| w.capability == capability)
    }

    /// Whether the model has `feature` (never for [`Feature::Unknown`]).
    pub fn supports(&self, feature: Feature) -> bool {
        feature != Feature::Unknown && self.features.contains(&feature)
    }

    /// Whether the row claims `capability` (`system_messages`, or the feature in `features`;
    /// never [`Capability::Unknown`]).
    pub fn claims(&self, capability: Capability) -> bool {
        match capability {
            Capability::SystemMessages => self.system_messages,
            Capability::ServerCompaction => self.supports(Feature::ServerCompaction),
            Capability::ToolSearch => self.supports(Feature::ToolSearch),
            Capability::ToolChanges => self.supports(Feature::ToolChanges),
            Capability::TaskBudget => self.supports(Feature::TaskBudget),
            Capability::PerMessageEffort => self.supports(Feature::PerMessageEffort),
            Capability::OnDemandCompaction => self.supports(Feature::OnDemandCompaction),
            Capability::PrefixBoundThinking => self.supports(Feature::PrefixBoundThinking),
            Capability::ServerSideFallbacks => self.withheld(capability).is_none(),
            Capability::Unknown => false,
        }
    }

    /// Whether the model has `capability` or may have it: the row claims it, or the
    /// documentation is silent on it ([`Model::is_undocumented`]).
    pub fn may_have(&self, capability: Capability) -> bool {
        self.claims(capability) || self.is_undocumented(capability)
    }

    /// Whether the model binds the thinking blocks it wrote to the prefix they followed, or
    /// may (its row claims [`Feature::PrefixBoundThinking`] or is silent on it): a block sent
    /// back after `system`, the non-deferred tools or an earlier message changed is refused.
    /// Every layer that would change the prefix asks this one question.
    pub fn binds_thinking(&self) -> bool {
        self.may_have(Capability::PrefixBoundThinking)
    }

    /// Whether the documentation is silent on whether the model has `capability` (the row's
    /// `undocumented`; never for [`Capability::Unknown`]).
    pub fn is_undocumented(&self, capability: impl Into<Capability>) -> bool {
        let capability = capability.into();
        capability != Capability::Unknown && self.undocumented.contains(&capability)
    }

    /// Whether `thinking.type` = `mode` is accepted.
    pub fn accepts_thinking(&self, mode: ThinkingMode) -> bool {
        self.thinking.contains(&mode)
    }

    /// The dollar cost of a usage, by this model's prices: its billed tokens
    /// ([`Usage::billed`](crate::response::Usage::billed)), so every `usage.iterations` pass
    /// is paid for (a compaction pass, a declined fallback hop), not only the top-level
    /// figures. Every pass is priced as this model's; to price a pass of another model (a
    /// fallback hop names its `model`) by that model's row, use [`ModelTable::cost`].
    pub fn cost(&self, usage: &crate::response::Usage) -> f64 {
        self.cost_of_tokens(&usage.billed())
    }

    /// The cost of exactly the top-level token figures of `usage` (its `iterations` unread).
    fn cost_of_tokens(&self, usage: &crate::response::Usage) -> f64 {
        let per_token = |tokens: Option<u64>, price: f64| tokens.unwrap_or(0) as f64 * price / 1e6;
        let (write_5m, write_1h) = match &usage.cache_creation {
            Some(split) => (
                split.ephemeral_5m_input_tokens,
                split.ephemeral_1h_input_tokens,
            ),
            None => (usage.cache_creation_input_tokens, None),
        };
        per_token(usage.input_tokens, self.prices.input)
            + per_token(usage.output_tokens, self.prices.output)
            + per_token(write_5m, self.prices.cache_write_5m)
            + per_token(write_1h, self.prices.cache_write_1h)
            + per_token(usage.cache_read_input_tokens, self.prices.cache_read)
    }
}

#[derive(Debug, Deserialize)]
struct TableFile {
    default: Model,
    models: Vec<Model>,
    #[serde(default)]
    platforms: on_platform::PlatformTable,
}

/// An extension of a table (`ModelTable::extended_from_json`): rows to add or replace, and
/// optionally another conservative default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtensionFile {
    #[serde(default)]
    docs: Option<serde_json::Value>,
    #[serde(default)]
    default: Option<Model>,
    #[serde(default)]
    models: Vec<Model>,
}

/// A model table (or an extension of one) could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelTableError {
    /// Not JSON, or not the shape of `data/models.json` (a row missing a field, a field of the
    /// wrong type, an unknown top-level key).
    #[error("the model table is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
    /// A row with an empty id.
    #[error("a model row has an empty id")]
    EmptyId,
    /// Two rows of the extension claim the same id or alias.
    #[error("the model id or alias `{0}` appears twice in the extension")]
    Duplicate(String),
}

/// The table of known models, as one platform offers them (the Claude API unless made with
/// [`ModelTable::on_platform`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTable {
    default: Model,
    models: Vec<Model>,
    platform: Platform,
    platforms: on_platform::PlatformTable,
}

/// The result of looking a model id up.
#[derive(Debug, Clone, Copy)]
pub struct Resolved<'a> {
    model: &'a Model,
    requested: Option<&'a str>,
}

impl<'a> Resolved<'a> {
    /// The model's row (the conservative default for an unknown id).
    pub fn model(&self) -> &'a Model {
        self.model
    }

    /// Whether the id was in the table.
    pub fn is_known(&self) -> bool {
        self.requested.is_none()
    }

    /// A warning for an unknown id, saying that conservative limits apply.
    pub fn warning(&self) -> Option<String> {
        self.requested.map(|id| {
            format!(
                "unknown model `{id}`: using conservative limits ({} token window, {} output tokens, no prefill)",
                self.model.context_window, self.model.max_output_tokens
            )
        })
    }
}

const BUILTIN: &str = include_str!("../data/models.json");

fn builtin_shared() -> &'static Arc<ModelTable> {
    static TABLE: OnceLock<Arc<ModelTable>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Arc::new(
            ModelTable::from_json(BUILTIN)
                .expect("the built-in model table is valid JSON, checked by a unit test"),
        )
    })
}

impl ModelTable {
    /// The table compiled into this crate.
    pub fn builtin() -> &'static ModelTable {
        builtin_shared()
    }

    /// This table with the rows of `json` added: a JSON object in the format of
    /// `data/models.json` whose `models` rows are added (a row whose id or an alias names a
    /// known model replaces that model) and whose optional `default` replaces the
    /// conservative default. For models newer than this build, or a gateway's own ids.
    ///
    /// ```
    /// use threadline_wire::model::ModelTable;
    ///
    /// let row = r#"{"id": "claude-next", "aliases": ["next"], "context_window": 2000000,
    ///     "max_output_tokens": 256000, "min_cacheable_tokens": 1024,
    ///     "thinking": ["adaptive"], "prefill": false, "sampling_params": false, "effort": [],
    ///     "keeps_prior_thinking": true, "rejects_input_plus_max_tokens_over_window": false,
    ///     "prices": {"input": 2.0, "output": 10.0, "cache_write_5m": 2.5,
    ///                "cache_write_1h": 4.0, "cache_read": 0.2}}"#;
    /// let table = ModelTable::builtin().extended_from_json(&format!(r#"{{"models": [{row}]}}"#))?;
    /// assert_eq!(table.resolve("next").model().context_window, 2_000_000);
    /// assert!(table.resolve("claude-sonnet-5").is_known());
    /// assert!(ModelTable::builtin().extended_from_json("{\"models\": 3}").is_err());
    /// # Ok::<(), threadline_wire::model::ModelTableError>(())
    /// ```
    pub fn extended_from_json(&self, json: &str) -> Result<ModelTable, ModelTableError> {
        // An object, not a sequence: serde would read `[]` as a struct of defaults.
        let value: serde_json::Value = serde_json::from_str(json)?;
        if !value.is_object() {
            return Err(ModelTableError::Invalid(serde::de::Error::custom(
                "an extension is a JSON object",
            )));
        }
        let file = if models_api::is_models_api(&value) {
            ExtensionFile {
                docs: None,
                default: None,
                models: models_api::rows(&value, &self.default)?,
            }
        } else {
            ExtensionFile::deserialize(value)?
        };
        let _ = file.docs;
        let mut seen: Vec<&str> = Vec::new();
        for row in &file.models {
            if row.id.is_empty() || row.aliases.iter().any(String::is_empty) {
                return Err(ModelTableError::EmptyId);
            }
            for name in std::iter::once(&row.id).chain(&row.aliases) {
                if seen.contains(&name.as_str()) {
                    return Err(ModelTableError::Duplicate(name.clone()));
                }
                seen.push(name);
            }
        }
        let mut table = self.clone();
        let rules = table.platforms.rules(table.platform);
        if let Some(mut default) = file.default {
            default.guess = true;
            on_platform::apply(&mut default, table.platform, rules);
            table.default = default;
        }
        // New rows first (the table lists models newest first); a row they name goes.
        table.models.retain(|known| {
            !std::iter::once(&known.id)
                .chain(&known.aliases)
                .any(|name| seen.contains(&name.as_str()))
        });
        let mut models = file.models;
        for row in &mut models {
            on_platform::apply(row, table.platform, rules);
        }
        models.append(&mut table.models);
        table.models = models;
        Ok(table)
    }

    /// A table from JSON in the format of `data/models.json`.
    pub fn from_json(json: &str) -> Result<ModelTable, serde_json::Error> {
        let mut file: TableFile = serde_json::from_str(json)?;
        file.default.guess = true;
        Ok(ModelTable {
            default: file.default,
            models: file.models,
            platform: Platform::Anthropic,
            platforms: file.platforms,
        })
    }

    /// This table as `platform` offers it:
    /// - the platform's model ids resolve to their rows: the ids the data gives for it
    ///   ([`Model::platform_ids`], on Bedrock with or without a cross-region prefix), and any
    ///   id written the platform's way ([`Platform::base_model_id`]);
    /// - a capability the platform does not offer (the data's `platforms` rules) is gone from
    ///   every row, which keeps the platform's refusal ([`Model::withheld`]): the loop and the
    ///   compaction policy, which ask [`Model::supports`], never use it there, and the
    ///   validator quotes the platform.
    ///
    /// ```
    /// use threadline_wire::model::{Feature, ModelTable};
    /// use threadline_wire::platform::Platform;
    ///
    /// let api = ModelTable::builtin();
    /// let bedrock = api.on_platform(Platform::Bedrock);
    /// let sonnet = bedrock.resolve("us.anthropic.claude-sonnet-4-6");
    /// assert!(sonnet.is_known());
    /// assert!(api.resolve("claude-sonnet-4-6").model().supports(Feature::OnDemandCompaction));
    /// assert!(!sonnet.model().supports(Feature::OnDemandCompaction));
    /// assert!(sonnet.model().withheld(Feature::OnDemandCompaction).is_some());
    /// assert_eq!(
    ///     bedrock.platform_id("claude-haiku-4-5"),
    ///     Some("anthropic.claude-haiku-4-5-20251001-v1:0"),
    /// );
    /// // The Claude API does not take a Bedrock id.
    /// assert!(!api.resolve("us.anthropic.claude-sonnet-4-6").is_known());
    /// ```
    pub fn on_platform(&self, platform: Platform) -> ModelTable {
        let mut table = self.clone();
        table.platform = platform;
        let rules = table.platforms.rules(platform);
        on_platform::apply(&mut table.default, platform, rules);
        for row in &mut table.models {
            on_platform::apply(row, platform, rules);
        }
        table
    }

    /// The platform this table describes the models on.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// `platform`'s rules in this table's data, if it is a cloud platform.
    pub fn platform_rules(&self, platform: Platform) -> Option<&PlatformRules> {
        self.platforms.rules(platform)
    }

    /// The id the table's platform names a model by, when `id` is the API's id or alias of a
    /// known row and the data gives the platform's id for it (Bedrock's without a
    /// cross-region prefix). `None` on the Claude API and Foundry, whose ids are the API's,
    /// and for an id already written the platform's way.
    pub fn platform_id(&self, id: &str) -> Option<&str> {
        self.find(id)?.platform_ids.on(self.platform)
    }

    /// The dollar cost of a response served by `model_id`: with `usage.iterations`, each
    /// pass priced by the row of the model it names when the table knows it (a fallback
    /// hop), else by `model_id`'s row; without iterations, [`Model::cost`] of `model_id`.
    pub fn cost(&self, model_id: &str, usage: &crate::response::Usage) -> f64 {
        let served = self.resolve(model_id).model();
        let Some(iterations) = usage.iterations() else {
            return served.cost(usage);
        };
        let other_row = |it: &crate::usage_iterations::UsageIteration| {
            it.model
                .as_deref()
                .and_then(|m| self.get(m))
                .filter(|row| row.id != served.id)
        };
        // The served model's passes together, through `Usage::billed` (which keeps a
        // top-level cache-write split); each other model's pass by its own row.
        let own: Vec<_> = iterations
            .iter()
            .filter(|it| other_row(it).is_none())
            .cloned()
            .collect();
        let own_cost = if own.is_empty() {
            0.0
        } else {
            let mut own_usage = usage.clone();
            own_usage.iterations = Some(own);
            served.cost(&own_usage)
        };
        own_cost
            + iterations
                .iter()
                .filter_map(|it| other_row(it).map(|row| row.cost_of_tokens(&it.as_usage())))
                .sum::<f64>()
    }

    /// Every known model.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// The row for an id or alias, if known; on a cloud platform's view
    /// ([`on_platform`](Self::on_platform)) also for the platform's ids.
    pub fn get(&self, id: &str) -> Option<&Model> {
        self.find(id).or_else(|| {
            let platform = self.platform;
            self.models
                .iter()
                .find(|m| on_platform::names(m, platform, id))
                .or_else(|| self.find(&platform.base_model_id(id)?))
        })
    }

    /// The row whose API id or alias is `id`.
    fn find(&self, id: &str) -> Option<&Model> {
        self.models
            .iter()
            .find(|m| m.id == id || m.aliases.iter().any(|a| a == id))
    }

    /// The row for an id, or the conservative default with a warning.
    pub fn resolve<'a>(&'a self, id: &'a str) -> Resolved<'a> {
        match self.get(id) {
            Some(model) => Resolved {
                model,
                requested: None,
            },
            None => Resolved {
                model: &self.default,
                requested: Some(id),
            },
        }
    }
}

/// A model table a caller passes (to the loop's `QueryConfig`, the compaction policy, the cache
/// planner): cheap to clone, the built-in table by default.
#[derive(Clone, PartialEq)]
pub struct SharedModelTable(Arc<ModelTable>);

impl SharedModelTable {
    /// The built-in table (no copy: every handle on it shares one).
    pub fn builtin() -> SharedModelTable {
        SharedModelTable(Arc::clone(builtin_shared()))
    }

    /// The table.
    pub fn table(&self) -> &ModelTable {
        &self.0
    }
}

impl Default for SharedModelTable {
    fn default() -> Self {
        SharedModelTable::builtin()
    }
}

impl std::ops::Deref for SharedModelTable {
    type Target = ModelTable;

    fn deref(&self) -> &ModelTable {
        &self.0
    }
}

impl From<ModelTable> for SharedModelTable {
    fn from(table: ModelTable) -> Self {
        SharedModelTable(Arc::new(table))
    }
}

impl From<Arc<ModelTable>> for SharedModelTable {
    fn from(table: Arc<ModelTable>) -> Self {
        SharedModelTable(table)
    }
}

impl std::fmt::Debug for SharedModelTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if Arc::ptr_eq(&self.0, builtin_shared()) {
            f.write_str("SharedModelTable(builtin)")
        } else if self.0.platform == Platform::Anthropic {
            write!(f, "SharedModelTable({} models)", self.0.models.len())
        } else {
            let (models, platform) = (self.0.models.len(), self.0.platform);
            write!(f, "SharedModelTable({models} models on {platform})")
        }
    }
}

impl SharedModelTable {
    /// This table as `platform` offers it ([`ModelTable::on_platform`]).
    pub fn on_platform(&self, platform: Platform) -> SharedModelTable {
        if self.0.platform == platform {
            return self.clone();
        }
        SharedModelTable::from(self.0.on_platform(platform))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_ids_are_unique() {
        let table = ModelTable::from_json(BUILTIN).expect("valid");
        let mut ids: Vec<&str> = table
            .models()
            .iter()
            .flat_map(|m| {
                std::iter::once(m.id.as_str()).chain(m.aliases.iter().map(String::as_str))
            })
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "an id or alias appears twice");
    }

    #[test]
    fn reference_numbers() {
        let table = ModelTable::builtin();
        let haiku = table.resolve("claude-haiku-4-5").model();
        assert_eq!(
            (
                haiku.context_window,
                haiku.max_output_tokens,
                haiku.min_cacheable_tokens
            ),
            (200_000, 64_000, 4096)
        );
        assert!(haiku.prefill);
        let opus = table.resolve("claude-opus-4-7").model();
        assert!(!opus.prefill && !opus.accepts_thinking(ThinkingMode::Enabled));
        assert_eq!(opus.prices.cache_read, 0.5);
    }

    #[test]
    fn features_follow_the_docs_model_lists() {
        let table = ModelTable::builtin();
        let has = |id: &str, f: Feature| table.resolve(id).model().supports(f);
        assert!(has("claude-sonnet-4-6", Feature::ServerCompaction));
        assert!(!has("claude-haiku-4-5", Feature::ServerCompaction));
        assert!(has("claude-haiku-4-5", Feature::ToolSearch));
        assert!(!has("claude-opus-4-1", Feature::ToolSearch));
        assert!(has("claude-opus-4-8", Feature::ToolChanges));
        assert!(!has("claude-sonnet-5", Feature::ToolChanges));
        assert!(has("claude-opus-4-7", Feature::TaskBudget));
        assert!(!has("claude-opus-4-6", Feature::TaskBudget));
        // An unknown model is assumed to have none; an unknown name parses and matches nothing.
        assert!(!has("claude-from-the-future", Feature::ToolSearch));
        let row: Model = serde_json::from_value(serde_json::json!({
            "id": "x", "aliases": [], "context_window": 1, "max_output_tokens": 1,
            "min_cacheable_tokens": 1, "thinking": [], "prefill": false, "sampling_params": false,
            "effort": [], "keeps_prior_thinking": false,
            "rejects_input_plus_max_tokens_over_window": false, "features": ["teleport"],
            "prices": {"input": 1.0, "output": 1.0, "cache_write_5m": 1.0, "cache_write_1h": 1.0, "cache_read": 1.0}
        }))
        .expect("a row with a future feature parses");
        assert_eq!(row.features, vec![Feature::Unknown]);
        assert!(!row.supports(Feature::Unknown));
    }

    #[test]
    fn the_models_claude_code_2_1_328_picks_are_known_with_the_november_numbers() {
        // What Claude Code 2.1.328 sends for its default model and for `--model opus`,
        // `sonnet`, `haiku` (observed against the mock), and the 5.1 models: each is known,
        // with the window, output, cache minimum and prices of the reference's §6.1.
        let table = ModelTable::builtin();
        for (id, input, output, cache_read) in [
            ("claude-opus-5-5", 4.0, 20.0, 0.2),
            ("claude-sonnet-5-5", 2.0, 10.0, 0.1),
            ("claude-haiku-5-5", 0.1, 0.5, 0.01),
            ("claude-fable-5-1", 10.0, 50.0, 0.25),
            ("claude-mythos-5-1", 10.0, 50.0, 0.25),
        ] {
            let resolved = table.resolve(id);
            assert!(resolved.is_known(), "{id}");
            let model = resolved.model();
            assert_eq!(
                (
                    model.context_window,
                    model.max_output_tokens,
                    model.min_cacheable_tokens
                ),
                (1_000_000, 128_000, 512),
                "{id}"
            );
            assert_eq!(
                (
                    model.prices.input,
                    model.prices.output,
                    model.prices.cache_read
                ),
                (input, output, cache_read),
                "{id}"
            );
            assert!(!model.prefill && model.accepts_thinking(ThinkingMode::Adaptive));
            assert!(!model.accepts_thinking(ThinkingMode::Enabled), "{id}");
        }
        // Claude Code sends `role: "system"` messages to Opus 5.5 (reference §3.6).
        assert!(table.resolve("claude-opus-5-5").model().system_messages);
        assert!(
            !table
                .resolve("claude-opus-5-5")
                .model()
                .accepts_thinking(ThinkingMode::Disabled)
        );
    }

    #[test]
    fn an_undocumented_capability_is_never_claimed_and_haiku_5_5_lists_system_messages() {
        let table = ModelTable::builtin();
        for model in table.models() {
            for &capability in &model.undocumented {
                assert_ne!(capability, Capability::Unknown, "{}", model.id);
                let claimed = model.claims(capability);
                assert!(
                    !claimed,
                    "{} claims {capability:?} and lists it as undocumented",
                    model.id
                );
            }
        }
        // Reference api-2026-autumn.md §3.1 ("Haiku 5.5 UNC"), §6.2, §9.
        let haiku = table.resolve("claude-haiku-5-5").model();
        assert!(!haiku.system_messages);
        assert!(haiku.is_undocumented(Capability::SystemMessages));
        assert!(haiku.is_undocumented(Feature::ToolChanges));
        assert!(!haiku.is_undocumented(Feature::Unknown));
        // Documented either way: Sonnet 5 does not take them, Opus 5.5 does.
        for id in ["claude-sonnet-5", "claude-opus-5-5", "claude-haiku-4-5"] {
            assert!(table.resolve(id).model().undocumented.is_empty(), "{id}");
        }
        assert!(
            table
                .resolve("claude-from-the-future")
                .model()
                .undocumented
                .is_empty()
        );
    }

    /// Whether `text` contains a date written `YYYY-MM-DD`.
    fn has_iso_date(text: &str) -> bool {
        text.as_bytes().windows(10).any(|w| {
            w.iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            })
        })
    }

    #[test]
    fn every_row_names_the_docs_pages_and_the_date_of_its_source() {
        // Issue 28: the model table's sources (page and date) are in the data file, and the
        // reader keeps them.
        for model in ModelTable::builtin().models() {
            let source = model.source.as_deref().unwrap_or_default();
            assert!(
                source.contains("Claude platform docs") && source.contains(".md"),
                "{}: `source` names no docs page",
                model.id
            );
            assert!(
                source.contains('@'),
                "{}: `source` names no snapshot",
                model.id
            );
            assert!(has_iso_date(source), "{}: `source` has no date", model.id);
        }
        assert!(has_iso_date("fetched 2026-08-22)") && !has_iso_date("2026-8-22, 20260822"));
        // An extension's row may leave it out.
        let table = ModelTable::builtin()
            .extended_from_json(&format!(r#"{{"models": [{}]}}"#, row("x", &[], 1)))
            .expect("a row without a source");
        assert_eq!(table.resolve("x").model().source, None);
    }

    #[test]
    fn unknown_models_are_conservative() {
        let table = ModelTable::builtin();
        let unknown = table.resolve("claude-from-the-future");
        assert!(!unknown.is_known());
        let smallest_window = table.models().iter().map(|m| m.context_window).min();
        assert_eq!(Some(unknown.model().context_window), smallest_window);
        assert!(!unknown.model().prefill);
        assert!(unknown.model().is_guess());
        assert!(table.models().iter().all(|m| !m.is_guess()));
        assert!(
            unknown
                .warning()
                .is_some_and(|w| w.contains("claude-from-the-future"))
        );
    }

    #[test]
    fn cost_uses_the_ttl_split() {
        let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
        let usage: crate::response::Usage = serde_json::from_str(
            r#"{"input_tokens":1000000,"output_tokens":1000000,"cache_read_input_tokens":1000000,"cache_creation_input_tokens":2000000,"cache_creation":{"ephemeral_5m_input_tokens":1000000,"ephemeral_1h_input_tokens":1000000}}"#,
        ).expect("parses");
        let expected = 3.0 + 15.0 + 0.3 + 3.75 + 6.0;
        assert!((model.cost(&usage) - expected).abs() < 1e-9);
    }

    #[test]
    fn cost_bills_every_iteration_and_prices_a_fallback_hop_by_its_model() {
        let table = ModelTable::builtin();
        let sonnet = table.resolve("claude-sonnet-4-6").model();
        // The recorded compaction exchange: 99,357 input and 92 output tokens billed.
        let usage: crate::response::Usage = serde_json::from_str(
            r#"{"input_tokens":162,"output_tokens":11,"iterations":[{"type":"compaction","input_tokens":99195,"output_tokens":81},{"type":"message","input_tokens":162,"output_tokens":11}]}"#,
        ).expect("parses");
        let expected = 99_357.0 * 3.0 / 1e6 + 92.0 * 15.0 / 1e6;
        assert!((sonnet.cost(&usage) - expected).abs() < 1e-12);
        assert!((table.cost("claude-sonnet-4-6", &usage) - expected).abs() < 1e-12);
        // A declined hop on another model is priced by that model's row.
        let opus_id = table
            .models()
            .iter()
            .find(|m| m.prices.input != sonnet.prices.input)
            .map(|m| m.id.clone())
            .expect("a row priced differently");
        let other = table.resolve(&opus_id).model();
        let fallback: crate::response::Usage = serde_json::from_value(serde_json::json!({
            "input_tokens": 100, "output_tokens": 10, "iterations": [
                {"type": "message", "model": opus_id, "input_tokens": 100, "output_tokens": 0},
                {"type": "fallback_message", "model": "claude-sonnet-4-6", "input_tokens": 100,
                 "output_tokens": 10}]}))
        .expect("parses");
        let expected = 100.0 * other.prices.input / 1e6
            + 100.0 * sonnet.prices.input / 1e6
            + 10.0 * sonnet.prices.output / 1e6;
        assert!((table.cost("claude-sonnet-4-6", &fallback) - expected).abs() < 1e-12);
        // One-hour writes the top level splits stay one-hour ones through the iterations.
        let hour: crate::response::Usage = serde_json::from_value(serde_json::json!({
            "input_tokens": 10, "cache_creation_input_tokens": 1000,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1000},
            "iterations": [
                {"type": "compaction", "input_tokens": 500, "output_tokens": 20},
                {"type": "message", "input_tokens": 10, "cache_creation_input_tokens": 1000}]}))
        .expect("parses");
        let expected = 510.0 * sonnet.prices.input / 1e6
            + 20.0 * sonnet.prices.output / 1e6
            + 1000.0 * sonnet.prices.cache_write_1h / 1e6;
        assert!((table.cost("claude-sonnet-4-6", &hour) - expected).abs() < 1e-12);
        assert!((sonnet.cost(&hour) - expected).abs() < 1e-12);
    }

    fn row(id: &str, aliases: &[&str], window: u64) -> String {
        serde_json::json!({"id": id, "aliases": aliases, "context_window": window,
            "max_output_tokens": 1000, "min_cacheable_tokens": 1024, "thinking": ["adaptive"],
            "prefill": false, "sampling_params": false, "effort": [],
            "keeps_prior_thinking": true, "rejects_input_plus_max_tokens_over_window": false,
            "prices": {"input": 1.0, "output": 2.0, "cache_write_5m": 1.25,
                "cache_write_1h": 2.0, "cache_read": 0.1}})
        .to_string()
    }

    #[test]
    fn an_extension_adds_and_replaces_rows() {
        let builtin = ModelTable::builtin();
        let json = format!(
            r#"{{"docs": "a gateway's models", "models": [{}, {}]}}"#,
            row("gateway-model", &["gw"], 50_000),
            // Named by the builtin's alias: replaces that row.
            row("claude-sonnet-4-5-custom", &["claude-sonnet-4-5"], 123_000),
        );
        let table = builtin
            .extended_from_json(&json)
            .expect("a valid extension");
        assert_eq!(table.resolve("gw").model().id, "gateway-model");
        assert_eq!(
            table.resolve("claude-sonnet-4-5").model().context_window,
            123_000
        );
        assert!(table.get("claude-sonnet-4-5-20250929").is_none());
        assert_eq!(table.models().len(), builtin.models().len() + 1);
        // The rest is the builtin's; the builtin itself is unchanged.
        assert_eq!(
            table.resolve("claude-sonnet-5").model(),
            builtin.resolve("claude-sonnet-5").model()
        );
        assert!(builtin.get("gw").is_none());
        // The default is kept unless given, and stays a guess either way.
        assert!(table.resolve("nope").model().is_guess());
        let json = format!(r#"{{"default": {}}}"#, row("fallback", &[], 32_000));
        let table = builtin.extended_from_json(&json).expect("a default");
        assert_eq!(table.resolve("nope").model().context_window, 32_000);
        assert!(table.resolve("nope").model().is_guess());
    }

    #[test]
    fn a_broken_extension_is_a_typed_error() {
        let builtin = ModelTable::builtin();
        for bad in [
            "",
            "[]",
            r#"{"models": 3}"#,
            r#"{"modles": []}"#,
            r#"{"models": [{"id": "x"}]}"#,
        ] {
            assert!(
                matches!(
                    builtin.extended_from_json(bad),
                    Err(ModelTableError::Invalid(_))
                ),
                "{bad}"
            );
        }
        let empty = format!(r#"{{"models": [{}]}}"#, row("", &[], 1));
        assert!(matches!(
            builtin.extended_from_json(&empty),
            Err(ModelTableError::EmptyId)
        ));
        let twice = format!(
            r#"{{"models": [{}, {}]}}"#,
            row("a", &["b"], 1),
            row("b", &[], 1)
        );
        assert!(matches!(
            builtin.extended_from_json(&twice),
            Err(ModelTableError::Duplicate(id)) if id == "b"
        ));
    }

    #[test]
    fn each_platform_id_names_its_row_there_and_nowhere_else() {
        let api = ModelTable::builtin();
        for platform in [Platform::Bedrock, Platform::Vertex] {
            let view = api.on_platform(platform);
            let mut seen = Vec::new();
            for row in api.models() {
                let Some(id) = row.platform_ids.on(platform) else {
                    continue;
                };
                assert!(!seen.contains(&id), "{id} twice on {platform}");
                seen.push(id);
                assert_eq!(view.get(id).map(|m| &m.id), Some(&row.id), "{id}");
                assert_eq!(view.platform_id(&row.id), Some(id));
                for alias in &row.aliases {
                    assert_eq!(view.platform_id(alias), Some(id));
                }
                // The API's ids still resolve on the platform's view.
                assert_eq!(view.get(&row.id).map(|m| &m.id), Some(&row.id));
                if id != row.id {
                    assert!(api.get(id).is_none(), "{id} resolves on the API");
                }
            }
            assert!(seen.len() >= 5, "{platform}: {seen:?}");
        }
        let bedrock = api.on_platform(Platform::Bedrock);
        for prefix in crate::platform::BEDROCK_REGION_PREFIXES {
            let id = format!("{prefix}anthropic.claude-sonnet-4-5-20250929-v1:0");
            assert_eq!(
                bedrock.get(&id).map(|m| m.id.as_str()),
                Some("claude-sonnet-4-5-20250929")
            );
        }
        // A Bedrock id the data does not give resolves by its form; an ARN is unknown.
        assert_eq!(
            bedrock
                .get("global.anthropic.claude-opus-5-5")
                .map(|m| m.id.as_str()),
            Some("claude-opus-5-5")
        );
        let arn = "arn:aws:bedrock:us-east-2:123456789012:application-inference-profile/x";
        assert!(!bedrock.resolve(arn).is_known());
        // The API's and Foundry's ids are the API's: nothing to map.
        assert_eq!(api.platform_id("claude-sonnet-4-6"), None);
        let foundry = api.on_platform(Platform::Foundry);
        assert_eq!(foundry.platform_id("claude-sonnet-4-6"), None);
        assert!(foundry.get("anthropic.claude-sonnet-4-6").is_none());
        // An id already the platform's maps to nothing more.
        assert_eq!(bedrock.platform_id("anthropic.claude-sonnet-4-6"), None);
    }

    #[test]
    fn bedrock_withholds_on_demand_compaction_from_every_row_and_says_so_in_its_words() {
        let api = ModelTable::builtin();
        let bedrock = api.on_platform(Platform::Bedrock);
        assert_eq!(bedrock.platform(), Platform::Bedrock);
        let offered_on_the_api = api
            .models()
            .iter()
            .filter(|m| m.supports(Feature::OnDemandCompaction))
            .count();
        assert!(offered_on_the_api > 5);
        for row in bedrock
            .models()
            .iter()
            .chain([bedrock.resolve("x").model()])
        {
            assert_eq!(row.platform(), Platform::Bedrock);
            assert!(!row.supports(Feature::OnDemandCompaction), "{}", row.id);
            assert!(!row.may_have(Capability::OnDemandCompaction), "{}", row.id);
            let withheld = row.withheld(Feature::OnDemandCompaction).expect("withheld");
            assert!(withheld.refusal.contains("extraneous key [compaction]"));
            assert!(row.withheld(Feature::ToolSearch).is_none());
        }
        // Everything else is the API's row.
        let on_api = api.resolve("claude-opus-4-8").model();
        let on_bedrock = bedrock.resolve("claude-opus-4-8").model();
        assert_eq!(on_api.context_window, on_bedrock.context_window);
        assert!(on_bedrock.supports(Feature::ServerCompaction));
        // Vertex and Foundry offer it; the API's rows withhold nothing.
        for platform in [Platform::Vertex, Platform::Foundry, Platform::Anthropic] {
            let view = api.on_platform(platform);
            let row = view.resolve("claude-sonnet-4-6").model();
            assert!(row.supports(Feature::OnDemandCompaction), "{platform}");
            assert!(row.withheld(Feature::OnDemandCompaction).is_none());
        }
        assert!(api.platform_rules(Platform::Anthropic).is_none());
        for platform in [Platform::Bedrock, Platform::Vertex, Platform::Foundry] {
            let rules = api.platform_rules(platform).expect("rules");
            assert!(rules.source.as_deref().is_some_and(|s| s.contains("§6")));
        }
        // A row an extension adds to a platform's view is that platform's too.
        let extended = bedrock
            .extended_from_json(&format!(r#"{{"models": [{}]}}"#, row("x", &[], 1)))
            .expect("an extension");
        let added = extended.resolve("x").model();
        assert_eq!(added.platform(), Platform::Bedrock);
        assert!(added.withheld(Capability::OnDemandCompaction).is_some());
        // Shared handles: the view of a view is the same table.
        let shared = SharedModelTable::builtin().on_platform(Platform::Bedrock);
        assert_eq!(shared.table(), &bedrock);
        assert_eq!(shared.on_platform(Platform::Bedrock), shared);
        assert!(format!("{shared:?}").contains("on bedrock"));
    }

    #[test]
    fn a_shared_table_is_the_builtin_by_default() {
        let shared = SharedModelTable::default();
        assert_eq!(shared.table(), ModelTable::builtin());
        assert_eq!(format!("{shared:?}"), "SharedModelTable(builtin)");
        let extended: SharedModelTable = ModelTable::builtin()
            .extended_from_json(r#"{"models": []}"#)
            .expect("empty extension")
            .into();
        assert_eq!(extended, shared);
        assert!(format!("{extended:?}").contains("models"));
    }
}
