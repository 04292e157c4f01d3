//! The request bodies of `POST /v1/messages` and `POST /v1/messages/count_tokens`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::Messages;
use crate::cache_control::CacheControl;
use crate::content::{Content, ContentBlock, Role, TextBlock};
use crate::tools::{ToolChoice, ToolDefinition};

wire_struct! {
    /// One message of the conversation: `{role, content}`.
    pub struct MessageParam {
        required {
            /// Who wrote it.
            pub role: Role,
            /// What it says.
            pub content: Content,
        }
        optional {}
    }
}

impl MessageParam {
    /// A user message with the given blocks.
    pub fn user(blocks: Vec<ContentBlock>) -> Self {
        MessageParam {
            role: Role::User,
            content: Content::Blocks(blocks),
            extra: crate::Extra::new(),
        }
    }

    /// An assistant message with the given blocks.
    pub fn assistant(blocks: Vec<ContentBlock>) -> Self {
        MessageParam {
            role: Role::Assistant,
            content: Content::Blocks(blocks),
            extra: crate::Extra::new(),
        }
    }

    /// Whether this is a turn-scoped system message: `role: "system"` with `clear_at:
    /// "next_user_message"` ([`CLEAR_AT_NEXT_USER_MESSAGE`]). None of its blocks takes a
    /// `cache_control`, and the API's automatic caching passes over it
    /// (docs/api-notes.md#mid-conversation-system-messages): the validator, the cache
    /// planner and the beta headers ask here.
    ///
    /// ```
    /// use threadline_wire::MessageParam;
    ///
    /// let reminder: MessageParam = serde_json::from_str(
    ///     r#"{"role":"system","clear_at":"next_user_message","content":"Be brief."}"#,
    /// )?;
    /// assert!(reminder.is_turn_scoped());
    /// assert!(!MessageParam::user(vec![]).is_turn_scoped());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn is_turn_scoped(&self) -> bool {
        self.role == Role::System
            && self.extra.get("clear_at").and_then(Value::as_str)
                == Some(CLEAR_AT_NEXT_USER_MESSAGE)
    }
}

/// The `clear_at` value of a turn-scoped system message ([`MessageParam::is_turn_scoped`]).
pub const CLEAR_AT_NEXT_USER_MESSAGE: &str = "next_user_message";

/// The `system` prompt: a string or a list of text blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum SystemPrompt {
    /// A plain string.
    Text(String),
    /// Text blocks, which may carry cache markers.
    Blocks(Vec<TextBlock>),
}

impl Serialize for SystemPrompt {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SystemPrompt::Text(text) => serializer.serialize_str(text),
            SystemPrompt::Blocks(blocks) => {
                serializer.collect_seq(blocks.iter().map(SystemBlockRef))
            }
        }
    }
}

impl<'de> Deserialize<'de> for SystemPrompt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SystemVisitor;
        impl<'de> serde::de::Visitor<'de> for SystemVisitor {
            type Value = SystemPrompt;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of text blocks")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SystemPrompt, E> {
                Ok(SystemPrompt::Text(v.to_owned()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<SystemPrompt, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element::<SystemBlock>()? {
                    blocks.push(block.0);
                }
                Ok(SystemPrompt::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(SystemVisitor)
    }
}

/// A system block: a text block whose `type` tag is checked and dropped.
struct SystemBlock(TextBlock);

impl<'de> Deserialize<'de> for SystemBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match ContentBlock::deserialize(deserializer)? {
            ContentBlock::Text(block) => Ok(SystemBlock(block)),
            other => Err(serde::de::Error::custom(format!(
                "system blocks must be `text`, found `{}`",
                other.tag()
            ))),
        }
    }
}

impl Serialize for SystemBlockRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", "text")?;
        self.0.__serialize_fields(&mut map, Some("type"))?;
        map.end()
    }
}

/// A system text block serialized with its `type` tag.
struct SystemBlockRef<'a>(&'a TextBlock);

impl SystemPrompt {
    /// The prompt as text blocks.
    pub fn blocks(&self) -> Vec<TextBlock> {
        match self {
            SystemPrompt::Text(text) => vec![TextBlock::new(text.clone())],
            SystemPrompt::Blocks(blocks) => blocks.clone(),
        }
    }
}

wire_struct! {
    /// `{"type":"enabled","budget_tokens":N}`: manual extended thinking.
    pub struct ThinkingEnabled {
        required {
            /// Tokens the model may think with (≥ 1024, < `max_tokens`).
            pub budget_tokens: u64,
        }
        optional {
            /// `summarized` or `omitted` (`updates` with `enabled` is not documented).
            pub display: ThinkingDisplay,
        }
    }
}

wire_string_enum! {
    /// `thinking.display`: whether thinking blocks carry a summary or come back empty (an
    /// omitted block has `thinking: ""` and a full `signature`, echoed unchanged). Invalid
    /// with `disabled`; the default depends on the model. A value this version does not know
    /// parses as `Other` (the validator reports it).
    pub enum ThinkingDisplay {
        /// The thinking text is a summary.
        Summarized = "summarized",
        /// The thinking text is empty; the signature is kept.
        Omitted = "omitted",
        /// Reasoning blocks come back empty; the short progress update before each tool call
        /// is its own thinking block with text (beta `thinking-display-updates-2026-08-18`).
        Updates = "updates",
    }
}

wire_struct! {
    /// The fields of `{"type":"adaptive"}` and `{"type":"disabled"}`.
    pub struct ThinkingOptions {
        required {}
        optional {
            /// `summarized`, `omitted` or (with its beta) `updates`; invalid with `disabled`.
            pub display: ThinkingDisplay,
            /// What the API does with a thinking block whose prefix changed (beta
            /// `thinking-binding-controls-2026-08-01`; adaptive thinking only).
            pub block_binding: BlockBinding,
        }
    }
}

wire_string_enum! {
    /// `thinking.block_binding.prefix_mismatch_behavior`: on a model that binds thinking to
    /// its prefix, what happens to a block sent back after the `system` prompt, the
    /// non-deferred tools or an earlier message changed.
    pub enum PrefixMismatchBehavior {
        /// The request is refused with a 400 (the default).
        Error = "error",
        /// The block and every later thinking block are dropped; the response lists them in
        /// `input_transformations`.
        DropBlock = "drop_block",
    }
}

wire_struct! {
    /// `thinking.block_binding` (beta `thinking-binding-controls-2026-08-01`).
    pub struct BlockBinding {
        required {}
        optional {
            /// `error` or `drop_block`.
            pub prefix_mismatch_behavior: PrefixMismatchBehavior,
        }
    }
}

impl BlockBinding {
    /// `{"prefix_mismatch_behavior": behavior}`.
    pub fn with_behavior(behavior: PrefixMismatchBehavior) -> BlockBinding {
        BlockBinding {
            prefix_mismatch_behavior: Some(behavior),
            extra: crate::Extra::new(),
        }
    }
}

wire_struct! {
    /// The top-level `compaction` field (beta `compact-2026-09-04`): summarize the conversation
    /// now. The answer is one assistant message holding one signed `compaction` block, with
    /// `stop_reason: "compaction"`.
    pub struct CompactionParam {
        required {
            /// `summarize`.
            pub kind: String => "type",
        }
        optional {
            /// Replaces the default summarization prompt (non-blank, at most 16,384 characters).
            pub instructions: String,
        }
    }
}

impl CompactionParam {
    /// `{"type":"summarize"}`, with `instructions` when given.
    pub fn summarize(instructions: Option<String>) -> CompactionParam {
        CompactionParam {
            kind: "summarize".to_owned(),
            instructions,
            extra: crate::Extra::new(),
        }
    }
}

impl ThinkingConfig {
    /// `{"type":"adaptive"}`, with `display` when given.
    pub fn adaptive(display: Option<ThinkingDisplay>) -> ThinkingConfig {
        ThinkingConfig::Adaptive(ThinkingOptions {
            display,
            block_binding: None,
            extra: crate::Extra::new(),
        })
    }

    /// `thinking` asking the API to drop a thinking block whose prefix changed (and every
    /// later one) instead of refusing the request (`block_binding.prefix_mismatch_behavior:
    /// "drop_block"`): adaptive thinking with its other settings kept, or adaptive thinking
    /// when `thinking` is absent (a refused thinking block shows it was on). `None` for
    /// manual or disabled thinking, where the API takes no `block_binding`.
    pub fn dropping_unbound_blocks(thinking: Option<&ThinkingConfig>) -> Option<ThinkingConfig> {
        let mut options = match thinking {
            None => ThinkingOptions {
                display: None,
                block_binding: None,
                extra: crate::Extra::new(),
            },
            Some(ThinkingConfig::Adaptive(options)) => options.clone(),
            Some(_) => return None,
        };
        options.block_binding = Some(BlockBinding::with_behavior(
            PrefixMismatchBehavior::DropBlock,
        ));
        Some(ThinkingConfig::Adaptive(options))
    }

    /// `thinking.block_binding.prefix_mismatch_behavior`, whatever the type.
    pub fn prefix_mismatch_behavior(&self) -> Option<&PrefixMismatchBehavior> {
        match self {
            ThinkingConfig::Adaptive(o) | ThinkingConfig::Disabled(o) => o
                .block_binding
                .as_ref()
                .and_then(|b| b.prefix_mismatch_behavior.as_ref()),
            _ => None,
        }
    }

    /// The `display` setting, whatever the type.
    pub fn display(&self) -> Option<&ThinkingDisplay> {
        match self {
            ThinkingConfig::Enabled(e) => e.display.as_ref(),
            ThinkingConfig::Adaptive(o) | ThinkingConfig::Disabled(o) => o.display.as_ref(),
            _ => None,
        }
    }
}

wire_enum! {
    /// The `thinking` setting.
    pub enum ThinkingConfig (tag = "type") {
        /// Manual thinking with a budget.
        Enabled(ThinkingEnabled) = "enabled",
        /// No thinking.
        Disabled(ThinkingOptions) = "disabled",
        /// The model decides how much to think.
        Adaptive(ThinkingOptions) = "adaptive",
    }
}

wire_struct! {
    /// `metadata`: `{user_id}`.
    pub struct Metadata {
        required {}
        optional {
            /// An opaque id for the end user.
            pub user_id: String,
        }
    }
}

wire_string_enum! {
    /// `output_config.effort`.
    pub enum Effort {
        /// Low.
        Low = "low",
        /// Medium.
        Medium = "medium",
        /// High.
        High = "high",
        /// Extra high.
        XHigh = "xhigh",
        /// Maximum.
        Max = "max",
    }
}

wire_struct! {
    /// `output_config.task_budget` (beta `task-budgets-2026-03-13`): `{"type":"tokens","total",
    /// "remaining"?}`, a countdown shown to the model only (no usage field reports it).
    pub struct TaskBudget {
        required {
            /// `tokens`.
            pub kind: String => "type",
            /// The whole task's budget in tokens (at least 20,000).
            pub total: u64,
        }
        optional {
            /// What is left, for clients that compact or rewrite history.
            pub remaining: u64,
        }
    }
}

impl TaskBudget {
    /// `{"type":"tokens","total":N}`.
    pub fn tokens(total: u64) -> TaskBudget {
        TaskBudget {
            kind: "tokens".to_owned(),
            total,
            remaining: None,
            extra: crate::Extra::new(),
        }
    }
}

wire_struct! {
    /// `output_config`: effort, structured output format and task budget.
    pub struct OutputConfig {
        required {}
        optional {
            /// How hard the model works.
            pub effort: Effort,
            /// `{"type":"json_schema","schema":…}`.
            pub format: Value,
            /// A token budget for the whole task (beta).
            pub task_budget: TaskBudget,
        }
    }
}

wire_struct! {
    /// `clear_tool_uses_20250919`: clear old tool results server-side.
    pub struct ClearToolUsesEdit {
        required {}
        optional {
            /// When to apply: `{"type":"input_tokens"|"tool_uses","value":N}`.
            pub trigger: Value,
            /// How many recent tool uses to keep: `{"type":"tool_uses","value":N}`.
            pub keep: Value,
            /// Apply only if at least this much is cleared.
            pub clear_at_least: Value,
            /// Tools never cleared.
            pub exclude_tools: Vec<String>,
            /// Also clear tool inputs.
            pub clear_tool_inputs: Value,
        }
    }
}

wire_struct! {
    /// `clear_thinking_20251015`: clear old thinking server-side.
    pub struct ClearThinkingEdit {
        required {}
        optional {
            /// `{"type":"thinking_turns","value":N}` or `"all"`.
            pub keep: Value,
        }
    }
}

wire_struct! {
    /// `compact_20260112` (beta): server-side compaction.
    pub struct CompactEdit {
        required {}
        optional {
            /// When to compact.
            pub trigger: Value,
            /// Stop with `stop_reason: compaction` after compacting.
            pub pause_after_compaction: bool,
            /// Summarization instructions.
            pub instructions: String,
        }
    }
}

wire_enum! {
    /// One `context_management` edit.
    pub enum ContextEdit (tag = "type") {
        /// Clear old tool results.
        ClearToolUses(ClearToolUsesEdit) = "clear_tool_uses_20250919",
        /// Clear old thinking.
        ClearThinking(ClearThinkingEdit) = "clear_thinking_20251015",
        /// Compact server-side.
        Compact(CompactEdit) = "compact_20260112",
    }
}

wire_struct! {
    /// `context_management` (beta): server-side context edits.
    pub struct ContextManagement {
        required {
            /// The edits, in order.
            pub edits: Vec<ContextEdit>,
        }
        optional {}
    }
}

wire_struct! {
    /// The body of `POST /v1/messages`.
    pub struct MessagesRequest {
        required {
            /// The model id.
            pub model: String,
            /// The most tokens the model may generate.
            pub max_tokens: u64,
            /// The conversation.
            pub messages: Messages,
        }
        optional {
            /// The system prompt.
            pub system: SystemPrompt,
            /// Tool definitions.
            pub tools: Vec<ToolDefinition>,
            /// How tools may be used.
            pub tool_choice: ToolChoice,
            /// Extended thinking.
            pub thinking: ThinkingConfig,
            /// Stream the response as server-sent events.
            pub stream: bool,
            /// Custom stop sequences.
            pub stop_sequences: Vec<String>,
            /// Request metadata.
            pub metadata: Metadata,
            /// Sampling temperature.
            pub temperature: f64,
            /// Nucleus sampling.
            pub top_p: f64,
            /// Top-k sampling.
            pub top_k: u64,
            /// Top-level automatic caching (uses one breakpoint slot).
            pub cache_control: Box<CacheControl>,
            /// Effort and output format.
            pub output_config: OutputConfig,
            /// `auto` or `standard_only`.
            pub service_tier: String,
            /// Code-execution container reuse.
            pub container: Value,
            /// Where inference runs.
            pub inference_geo: String,
            /// Server-side context edits (beta).
            pub context_management: ContextManagement,
            /// MCP connector servers (beta).
            pub mcp_servers: Value,
            /// Server-side fallback to other models on a classifier decline (beta
            /// `server-side-fallback-2026-07-01`; `…-2026-06-01` takes a list only).
            pub fallbacks: Fallbacks,
            /// Cache diagnostics (beta `cache-diagnosis-2026-04-07`): the previous response.
            pub diagnostics: crate::diagnostics::DiagnosticsParam,
            /// On-demand compaction (beta `compact-2026-09-04`): summarize instead of answering.
            pub compaction: CompactionParam,
        }
    }
}

wire_struct! {
    /// One entry of a `fallbacks` list: the model to fall back to and what to change for it.
    pub struct FallbackModel {
        required {
            /// The fallback model (distinct from the request's and the other entries').
            pub model: String,
        }
        optional {
            /// The output limit on this model.
            pub max_tokens: u64,
            /// Thinking on this model.
            pub thinking: ThinkingConfig,
            /// Output config on this model.
            pub output_config: OutputConfig,
            /// Speed on this model.
            pub speed: String,
        }
    }
}

/// `fallbacks`: `"default"` or a list of at most three [`FallbackModel`]s (the API's limit;
/// not checked here). Any other shape is kept as it came.
#[derive(Debug, Clone, PartialEq)]
pub enum Fallbacks {
    /// `"default"`: the server's default fallback chain.
    Default,
    /// The models to try, in order.
    List(Vec<FallbackModel>),
    /// A shape this version does not know, kept for round trips.
    Other(Value),
}

impl Serialize for Fallbacks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Fallbacks::Default => serializer.serialize_str("default"),
            Fallbacks::List(list) => list.serialize(serializer),
            Fallbacks::Other(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Fallbacks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if value.as_str() == Some("default") {
            return Ok(Fallbacks::Default);
        }
        if value.is_array()
            && let Ok(list) = serde_json::from_value::<Vec<FallbackModel>>(value.clone())
        {
            return Ok(Fallbacks::List(list));
        }
        Ok(Fallbacks::Other(value))
    }
}

wire_struct! {
    /// The body of `POST /v1/messages/count_tokens`.
    pub struct CountTokensRequest {
        required {
            /// The model id.
            pub model: String,
            /// The conversation.
            pub messages: Messages,
        }
        optional {
            /// The system prompt.
            pub system: SystemPrompt,
            /// Tool definitions.
            pub tools: Vec<ToolDefinition>,
            /// How tools may be used.
            pub tool_choice: ToolChoice,
            /// Extended thinking.
            pub thinking: ThinkingConfig,
            /// Effort and output format.
            pub output_config: OutputConfig,
            /// Accepted and ignored for caching.
            pub cache_control: Box<CacheControl>,
            /// Server-side context edits (beta).
            pub context_management: ContextManagement,
            /// MCP connector servers (beta).
            pub mcp_servers: Value,
        }
    }
}

impl From<&MessagesRequest> for CountTokensRequest {
    fn from(request: &MessagesRequest) -> Self {
        CountTokensRequest {
            model: request.model.clone(),
            messages: request.messages.clone(),
            system: request.system.clone(),
            tools: request.tools.clone(),
            tool_choice: request.tool_choice.clone(),
            thinking: request.thinking.clone(),
            output_config: request.output_config.clone(),
            cache_control: request.cache_control.clone(),
            context_management: request.context_management.clone(),
            mcp_servers: request.mcp_servers.clone(),
            extra: crate::Extra::new(),
        }
    }
}

wire_struct! {
    /// The response of `POST /v1/messages/count_tokens`.
    pub struct CountTokensResponse {
        required {
            /// The estimated input tokens.
            pub input_tokens: u64,
        }
        optional {
            /// `{"original_input_tokens": N}` with context management.
            pub context_management: Value,
        }
    }
}
