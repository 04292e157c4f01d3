//! The rules the validator checks, and the API's own words for each.
//!
//! Every text here is the `error.message` the Messages API returns (summarised, with
//! sources, in `docs/api-notes.md`), byte-for-byte where a public source or a recorded
//! response quotes it — backticks, the API's "preceeding" typo and its pydantic-style paths
//! included. Each variant's documentation says where its text comes from; the few texts that
//! are inferred rather than observed say so.
//!
//! `api` arguments are positions as the API writes them: after consecutive same-role messages
//! are merged, `messages.N` counts merged turns and `content.M` counts blocks of the merged
//! turn (a string content counts as one text block). The validator's [`Violation::path`]
//! keeps the position in the request as sent.
//!
//! Every variant ends with an *Audit* line (`check` must never reject what the API accepts):
//! the recorded fixture exchange (`fixtures/canonical/<repo>/<name>#<exchange>`) or the
//! section of `docs/api-notes.md` that bounds the rule, and whether the rule is model-specific (a warning, not a violation,
//! for a model the table does not know). A rule nothing bounds reports warnings only.
//!
//! Evidence tags in the Audit lines: `WIRE` is an error text observed in real API responses
//! quoted in public code (with how often); `DOC:<page>` is the page
//! `https://platform.claude.com/docs/en/…/<page>` of the public documentation; `PY` a type of
//! the official Python SDK (`anthropics/anthropic-sdk-python`); `ISSUE owner/repo#n` a public
//! GitHub issue.
//!
//! [`Violation::path`]: super::Violation::path

use std::fmt;

use threadline_wire::model::Capability;

/// One acceptance rule of the Messages API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// `messages` is `[]`. Text `messages: at least one message is required` (observed, many).
    ///
    /// Audit: docs/api-notes.md#message-sequence (WIRE, many).
    EmptyMessages,
    /// A message other than an optional final assistant message has `""` or `[]` content.
    /// Text `messages.N: all messages must have non-empty content except for the optional final
    /// assistant message` (observed, many).
    ///
    /// Audit: docs/api-notes.md#message-sequence (WIRE, many); the optional final assistant message is exempt as
    /// the text says.
    EmptyContent,
    /// A text block (in a message or nested in a `tool_result`) is `""`.
    /// Text `messages: text content blocks must be non-empty`; in `system`,
    /// `system: text content blocks must be non-empty` (observed, many).
    ///
    /// Audit: docs/api-notes.md#message-sequence (WIRE, many); the `system:` text is quoted from real responses in
    /// public code (e.g. request `req_011CURe5b5KfYRq37fv8qqhM`).
    EmptyTextBlock,
    /// A text block holds only whitespace and its content list (the merged turn, a
    /// `tool_result`'s blocks, the system prompt) holds nothing but such blocks. Text
    /// `messages: text content blocks must contain non-whitespace text` / `system: …`
    /// (observed, many).
    ///
    /// Audit: docs/api-notes.md#message-sequence (WIRE, many) for the texts; the positions (a content list holding
    /// nothing but blank text) are bounded by a recorded 200 (an earlier
    /// assistant `"\n\n"` block accepted) and the public probes cited in `text.rs`. It once
    /// fired on any whitespace-only block; that was too strict.
    WhitespaceTextBlock,
    /// A message role the model does not accept: `system` on a model whose table row says
    /// `system_messages: false`, or an unknown role. Text `messages.N.role: Input should be
    /// 'user' or 'assistant'` (observed; the current text is uncertain).
    ///
    /// Audit: docs/api-notes.md#mid-conversation-system-messages (DOC:mid-conversation-system-messages; WIRE, text uncertain).
    /// Model-specific for `system` (the row's `system_messages`): a warning on an unknown
    /// model, and a warning saying the documentation is silent on a model whose row lists
    /// `system_messages` as `undocumented` (Haiku 5.5).
    InvalidRole,
    /// An assistant message's `tool_use` blocks are not all answered by `tool_result` blocks at
    /// the start of the immediately following user message. Text ``messages.N: `tool_use` ids
    /// were found without `tool_result` blocks immediately after: ID[, ID…]. Each `tool_use`
    /// block must have a corresponding `tool_result` block in the next message.`` with N the
    /// assistant message (observed, many; the separator between several ids is inferred).
    ///
    /// Audit: docs/api-notes.md#tool-pairing (DOC:handle-tool-calls; WIRE, many); recorded 200s with answered
    /// calls, e.g. `anthropics__anthropic-sdk-python/092be1de-d3f8-4c22-a4ea-a7ad54689836#1`.
    ToolUseWithoutResult,
    /// A `tool_result` answers no `tool_use` of the previous message. Text
    /// ``messages.N.content.M: unexpected `tool_use_id` found in `tool_result` blocks: ID. Each
    /// `tool_result` block must have a corresponding `tool_use` block in the previous
    /// message.`` (observed, many; reproduced by a recorded 400).
    ///
    /// Audit: docs/api-notes.md#tool-pairing (WIRE, many); recorded 400
    /// `anthropics__anthropic-sdk-python/f59a9391-643b-422c-96dc-1f28bc7ea4d7#1`, reproduced
    /// word for word.
    OrphanToolResult,
    /// Two `tool_result` blocks answer the same id. Text ``messages.N.content.M: each tool_use
    /// must have a single result. Found multiple `tool_result` blocks with id: ID`` (observed).
    ///
    /// Audit: docs/api-notes.md#tool-pairing (WIRE, several).
    DuplicateToolResult,
    /// A `tool_use` (or `server_tool_use`) id appears twice in the conversation. Text
    /// ``messages.N.content.M: `tool_use` ids must be unique`` (observed).
    ///
    /// Audit: docs/api-notes.md#tool-pairing (WIRE, several).
    DuplicateToolUseId,
    /// A `tool_result` block in an assistant (or system) message. Text ``messages.N:
    /// `tool_result` blocks can only be in `user` messages`` (observed).
    ///
    /// Audit: docs/api-notes.md#tool-pairing (WIRE, several).
    ToolResultInAssistant,
    /// A `tool_use` id outside `^[a-zA-Z0-9_-]+$`. Text `messages.N.content.M.tool_use.id:
    /// String should match pattern '^[a-zA-Z0-9_-]+$'` (observed, many).
    ///
    /// Audit: docs/api-notes.md#content-blocks-and-ids (WIRE, many).
    ToolUseIdPattern,
    /// A `server_tool_use` id outside `^srvtoolu_[a-zA-Z0-9_]+$`. Text
    /// `messages.N.content.M.server_tool_use.id: String should match pattern
    /// '^srvtoolu_[a-zA-Z0-9_]+$'` (observed once).
    ///
    /// Audit: docs/api-notes.md#content-blocks-and-ids (WIRE, one occurrence); recorded 200s send `srvtoolu_…` ids back,
    /// e.g. `anthropics__anthropic-sdk-python/092be1de-d3f8-4c22-a4ea-a7ad54689836#1`.
    ServerToolUseIdPattern,
    /// A server tool result block (`web_search_tool_result`, …) whose `tool_use_id` names no
    /// earlier `server_tool_use`; result blocks of server tools this version does not know
    /// (any `*_tool_result` with a `tool_use_id`) included. Text ``messages.N.content.M:
    /// unexpected `tool_use_id` found in `TYPE` blocks: ID. Each `TYPE` block must have a
    /// corresponding `server_tool_use` block before it.`` (observed for `advisor_tool_result`).
    ///
    /// Audit: the texts for `web_search_tool_result`, `tool_search_tool_result`,
    /// `code_execution_tool_result` and `advisor_tool_result` are quoted from real 400s in
    /// public code (no documentation page quotes them); recorded 200s with paired server blocks bound the
    /// passing side.
    OrphanServerToolResult,
    /// An assistant message left a `server_tool_use` without its result and the next user
    /// message holds something other than `tool_result` blocks (which ends the turn). Text
    /// ``\`NAME\` tool use with id \`ID\` was found without a corresponding \`NAME_tool_result\`
    /// block`` (documented).
    ///
    /// Audit: docs/api-notes.md#tool-pairing (DOC:handling-stop-reasons); recorded 200
    /// `pydantic__pydantic-ai/test_pause_turn_web_search_streaming_vcr#1` (a paused turn
    /// resumed) bounds the passing side.
    ServerToolPending,
    /// A request resuming a turn with a pending `server_tool_use` no longer defines that server
    /// tool. Text ``\`NAME\` tool use with id \`ID\` was found, but no \`NAME\` tool was
    /// provided``: the documentation quotes only the ending ``but no `NAME` tool was
    /// provided``; the beginning is inferred.
    ///
    /// Audit: docs/api-notes.md#tool-pairing (DOC:handling-stop-reasons, the ending only);
    /// docs/api-notes.md#tool-search ("resume without the pending server tool defined").
    ServerToolNotProvided,
    /// A custom tool name outside `^[a-zA-Z0-9_-]{1,64}$` (64 is
    /// [`ValidateOptions::max_tool_name_len`]). Text `tools.N.custom.name: String should match
    /// pattern '^[a-zA-Z0-9_-]{1,64}$'` (observed with 64 and with 128).
    ///
    /// [`ValidateOptions::max_tool_name_len`]: super::ValidateOptions::max_tool_name_len
    ///
    /// Audit: docs/api-notes.md#tool-definitions (DOC:define-tools; WIRE); the limit is
    /// `ValidateOptions::max_tool_name_len` because 64 and 128 are both observed.
    ToolNamePattern,
    /// Two tools share a name. Text `tools: Tool names must be unique.` (observed, many).
    ///
    /// Audit: docs/api-notes.md#tool-definitions (WIRE, many).
    DuplicateToolName,
    /// `tool_choice` without tools. Text `tool_choice may only be specified while providing
    /// tools.` (observed, many).
    ///
    /// Audit: docs/api-notes.md#tool-definitions (WIRE, many); skipped with `mcp_servers`, whose servers provide tools this validator cannot list (recorded 200 `pydantic__pydantic-ai/test_anthropic_mcp_servers_stream#0` sends `mcp_servers` without `tools`).
    ToolChoiceWithoutTools,
    /// `tool_choice` names a tool that is not defined. Text `tool_choice.name: Tool 'X' not
    /// found in provided tools` (observed).
    ///
    /// Audit: docs/api-notes.md#tool-definitions (WIRE).
    ToolChoiceUnknownTool,
    /// A tool with both `defer_loading: true` and `cache_control`. Text `Tool 'NAME' cannot
    /// have both defer_loading=true and cache_control set. Tools with defer_loading cannot use
    /// prompt caching.` (observed: Wei-Shaw/sub2api#4990, relayed by a gateway; the rule is
    /// documented on the tool-search page; see docs/api-notes.md#tool-search).
    ///
    /// Audit: docs/api-notes.md#tool-search (DOC; ISSUE Wei-Shaw/sub2api#4990).
    DeferredToolWithCacheControl,
    /// Every tool has `defer_loading: true`. Text `At least one tool must have
    /// defer_loading=false. All tools cannot be deferred.` (documented).
    ///
    /// Audit: docs/api-notes.md#tool-search (DOC:tool-search-tool); recorded 200
    /// `pydantic__pydantic-ai/test_anthropic_native_tool_search_streaming#0` (deferred tools
    /// beside the non-deferred search tool) bounds the passing side.
    AllToolsDeferred,
    /// A `tool_reference` (in `tool_result` content or a `tool_search_tool_result`) names a
    /// tool `tools` does not declare. Text `Tool reference 'NAME' not found in available
    /// tools` (documented). Skipped with MCP servers or toolsets, whose tools are not listed.
    ///
    /// Audit: docs/api-notes.md#tool-search (DOC:tool-search-tool); recorded 200
    /// `pydantic__pydantic-ai/test_anthropic_native_tool_search_streaming#1` sends a found
    /// reference back.
    ToolReferenceNotFound,
    /// `defer_loading: true` on a model without tool search (the model table's
    /// `tool_search` feature). The text is ours: the API's is not published.
    ///
    /// Audit: docs/api-notes.md#tool-search (Opus 4.5+, Sonnet 4.5+, Haiku 4.5, the 5
    /// family; not Opus 4.1 or older). Model-specific: a warning on an unknown model.
    DeferLoadingUnsupported,
    /// More than 4 `cache_control` breakpoints (tools, system blocks, message blocks, blocks
    /// nested in `tool_result` content; top-level automatic caching counts one). Text `A maximum
    /// of 4 blocks with cache_control may be provided. Found 5.` (observed, many).
    ///
    /// Audit: docs/api-notes.md#prompt-caching (WIRE, many); recorded 200s with markers, e.g.
    /// `pydantic__pydantic-ai/test_anthropic_cache_real_api#0`.
    TooManyCacheBreakpoints,
    /// `cache_control` on an empty text block. Text `messages.N.content.M.text: cache_control
    /// cannot be set for empty text blocks` (observed).
    ///
    /// Audit: docs/api-notes.md#prompt-caching (WIRE, several; DOC:prompt-caching "Empty text blocks cannot be
    /// cached").
    CacheControlOnEmptyText,
    /// `cache_control` on a `thinking` or `redacted_thinking` block, whose schema has no such
    /// field. Text `messages.N.content.M.thinking.cache_control: Extra inputs are not permitted`
    /// (inferred from the API's strict-schema message).
    ///
    /// Audit: docs/api-notes.md#prompt-caching (DOC:prompt-caching: thinking blocks cannot be marked; SDK
    /// types have no field); the text is inferred from the strict-schema message
    /// (docs/api-notes.md#request-body).
    CacheControlOnThinking,
    /// A `1h` breakpoint after a `5m` one, in `tools` → `system` → `messages` order. Text
    /// ``PATH.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m'
    /// cache_control block. Blocks are processed in the following order: `tools`, `system`,
    /// `messages`.`` (observed in two repositories).
    ///
    /// Audit: docs/api-notes.md#prompt-caching (WIRE, two repositories; DOC:prompt-caching "Mixing different
    /// TTLs").
    CacheTtlOrder,
    /// The top-level automatic `cache_control` lands on a block (the request's last cacheable
    /// one) that already has an explicit marker with a different lifetime (the same lifetime is
    /// a no-op). The API's text is not published: ours is `cache_control.ttl: the automatic
    /// cache_control (ttl 'A') lands on PATH, which already has a cache_control with ttl 'B';
    /// use the same ttl or remove one of them`.
    ///
    /// Audit: docs/api-notes.md#automatic-caching (DOC: a different TTL is a 400; text not
    /// published).
    AutomaticCacheTtlConflict,
    /// Manual thinking with `budget_tokens` below 1024. Text
    /// `thinking.enabled.budget_tokens: Input should be greater than or equal to 1024`
    /// (observed, many).
    ///
    /// Audit: docs/api-notes.md#request-body and #thinking (DOC:create; WIRE, many).
    ThinkingBudgetTooSmall,
    /// Manual thinking with `budget_tokens` ≥ `max_tokens` (allowed with interleaved thinking).
    /// Text ``\`max_tokens\` must be greater than \`thinking.budget_tokens\`. Please consult our
    /// documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size``
    /// (observed, many).
    ///
    /// Audit: docs/api-notes.md#request-body and #thinking (DOC:extended-thinking; WIRE, many); the
    /// interleaved-thinking exception is an option.
    ThinkingBudgetNotBelowMaxTokens,
    /// Manual thinking with a `tool_choice` that forces tool use (`any`, `tool`). Text
    /// `Thinking may not be enabled when tool_choice forces tool use.` (observed, many).
    ///
    /// Audit: docs/api-notes.md#thinking (WIRE, many; DOC:thinking); adaptive thinking is exempt.
    ThinkingWithForcedToolChoice,
    /// Manual thinking and the final assistant message (the one that starts the last
    /// `tool_use`/`tool_result` chain, or a final prefill) does not start with a thinking
    /// block. Text ``messages.N.content.0.type: Expected `thinking` or `redacted_thinking`, but
    /// found `text`. When `thinking` is enabled, a final `assistant` message must start with a
    /// thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). …``
    /// (observed, many).
    ///
    /// Audit: docs/api-notes.md#thinking (WIRE, many; DOC:thinking "Thinking with tool use"); recorded 200s with manual thinking and earlier thinking turns, e.g.
    /// `pydantic__pydantic-ai/test_anthropic_model_thinking_part#1`, bound the passing side.
    FinalAssistantMissingThinking,
    /// An assistant message holds thinking blocks but does not start with one. Text
    /// ``messages.N.content.0: If an assistant message contains any thinking blocks, the first
    /// block must be `thinking` or `redacted_thinking`. Found `text`.`` (observed).
    ///
    /// Audit: docs/api-notes.md#thinking (WIRE, several).
    ThinkingNotFirst,
    /// A `thinking` block without its `signature`. Text
    /// `messages.N.content.M.thinking.signature: Field required` (observed).
    ///
    /// Audit: docs/api-notes.md#thinking (WIRE).
    ThinkingSignatureMissing,
    /// The conversation ends with an assistant message on a model whose row says
    /// `prefill: false`. Text `This model does not support assistant message prefill. The
    /// conversation must end with a user message.` (documented, observed many).
    ///
    /// Audit: docs/api-notes.md#message-sequence and #per-model-parameters (DOC:api/errors; WIRE, many); recorded 200
    /// `pydantic__pydantic-ai/test_pause_turn_web_search_streaming_vcr#1` (a `pause_turn`
    /// continuation is not a prefill). Model-specific: a warning on an unknown model.
    PrefillUnsupported,
    /// A final assistant message (prefill) ends with whitespace. Text `final assistant content
    /// cannot end with trailing whitespace` (documented, observed).
    ///
    /// Audit: docs/api-notes.md#message-sequence (DOC:prefill-claudes-response; WIRE). Checked only where the row
    /// accepts prefill, so model-specific: a warning on an unknown model.
    TrailingWhitespace,
    /// `max_tokens` above the model's maximum. Text `max_tokens: 999999 > 64000, which is the
    /// maximum allowed number of output tokens for claude-haiku-4-5-20251001` (observed, many).
    ///
    /// Audit: docs/api-notes.md#length-limits (WIRE, many) and #model-table (the limits); recorded 200s at the limits,
    /// e.g.
    /// `crmne__ruby_llm/chat_anthropic_claude-sonnet-4-6_compacts_a_long_conversation_and_bills_the_summarization_pass#0`
    /// (128,000 on Sonnet 4.6). Model-specific: on an unknown model a warning (a recorded
    /// request for `claude-3-7-sonnet-latest` with 16,000 was accepted).
    MaxTokensTooLarge,
    /// A `thinking.type` the model's row does not accept. Texts `adaptive thinking is not
    /// supported on this model`, `"thinking.type.enabled" is not supported for this model. …`
    /// and `"thinking.type.disabled" is not supported for this model. …` (documented).
    ///
    /// Audit: docs/api-notes.md#per-model-parameters (DOC:thinking-troubleshooting, DOC:api/errors). Model-specific: a
    /// warning on an unknown model.
    ThinkingTypeUnsupported,
    /// A non-default `temperature`, `top_p` or `top_k` on a model whose row says
    /// `sampling_params: false`. Text ``\`temperature\` is deprecated for this model.`` (and the
    /// same for `top_p`, observed; `top_k` by analogy).
    ///
    /// Audit: docs/api-notes.md#per-model-parameters (WIRE for `temperature`; DOC: sampling parameters rejected on Opus
    /// 4.7+ and the 5 family). Model-specific: a warning on an unknown model.
    SamplingParamUnsupported,
    /// `temperature` other than 1 while thinking is on. Text ``\`temperature\` may only be set
    /// to 1 when thinking is enabled`` (the newer variant, on models with adaptive thinking,
    /// appends ` or in adaptive mode`) (observed, many).
    ///
    /// Audit: docs/api-notes.md#thinking (WIRE, many; DOC:thinking "Sampling parameters"). Its text and
    /// whether it applies depend on the row, so model-specific: a warning on an unknown model.
    TemperatureWithThinking,
    /// An `output_config.effort` level the model's row does not list. Text `This model does not
    /// support effort level 'xhigh'. Supported levels: high, low, max, medium.` (reproduced by
    /// a recorded 400); on a model with no effort levels `output_config.effort: Extra inputs are
    /// not permitted` (observed for the missing beta; inferred here).
    ///
    /// Audit: the level text: recorded 400
    /// `pydantic__pydantic-ai/test_anthropic_explicit_effort_xhigh_unsupported_model_errors#0`,
    /// reproduced word for word; docs/api-notes.md#per-model-parameters (DOC:effort). A model with no effort levels:
    /// neither a recorded response nor a documented rejection bounds it, so that finding is a
    /// warning for every model. Model-specific: a warning on an unknown model.
    EffortUnsupported,
    // --- Tool changes, context management, thinking display, task budgets. Texts
    // marked "ours" are not published by the API; they live beside their checks
    // (`tool_changes.rs`, `context_management.rs`, `output_config.rs`).
    /// A mid-conversation `role: "system"` message out of place: first in `messages`, not
    /// directly after a user turn (or an assistant turn ending in a server tool result),
    /// followed by a user turn (a turn-scoped one too), or holding `tool_addition` /
    /// `tool_removal` blocks directly after a paused assistant turn (one ending in a server
    /// tool result). Consecutive system messages are judged as one; an effort-only one (empty
    /// content, `output_config`) may stand anywhere. Texts (not published; quoted from real
    /// 400s in public code): first, `messages.N: use the top-level 'system' parameter for the
    /// initial system prompt` (observed once); after the wrong turn, `messages.N: role 'system'
    /// must follow a 'user' message or an 'assistant' message ending in a server tool result;
    /// the directive-only form (content: [] with output_config) is accepted at any position`
    /// (observed once, without its `messages.N: `); before the wrong turn, `messages.N: role
    /// 'system' must precede an 'assistant' message or end the array; the directive-only form
    /// (content: [] with output_config) is accepted at any position` (observed several times).
    /// Tool changes after a paused turn: ours. Between a `tool_use` and its `tool_result` is the
    /// pairing rule's ([`Rule::ToolUseWithoutResult`]), not re-reported.
    ///
    /// Audit: docs/api-notes.md#mid-conversation-system-messages
    /// (DOC:mid-conversation-system-messages; WIRE for the three placement texts).
    /// Checked only on a model whose row accepts system messages.
    SystemMessagePlacement,
    /// A `tool_addition` / `tool_removal` block outside a `role: "system"` message. Text ours:
    /// ``messages.N.content.M: `tool_addition` blocks can only be in `system` messages``.
    ///
    /// Audit: docs/api-notes.md#tool-changes (DOC: the blocks live in system messages).
    ToolChangeOutsideSystemMessage,
    /// A tool change referring to a tool not declared in `tools` (or an MCP server not in
    /// `mcp_servers` / an `mcp_toolset`). Text ours: `messages.N.content.M.tool.name: Tool 'X'
    /// not found in provided tools`.
    ///
    /// Audit: docs/api-notes.md#tool-changes (DOC; 400, text not published).
    ToolChangeUnknownTool,
    /// Tool changes on a model without [`Feature::ToolChanges`]. Text ours.
    ///
    /// [`Feature::ToolChanges`]: threadline_wire::model::Feature::ToolChanges
    ///
    /// Audit: docs/api-notes.md#tool-changes (DOC). Model-specific: a warning on an
    /// unknown model, and on a model whose row lists `tool_changes` as `undocumented`.
    ToolChangesUnsupported,
    /// `output_config.effort` on a `role: "system"` message of a model without per-message
    /// effort ([`Feature::PerMessageEffort`]). Text the docs': `messages.N.output_config.effort:
    /// output_config.effort requires a model that supports per-turn effort; this model does
    /// not`.
    ///
    /// [`Feature::PerMessageEffort`]: threadline_wire::model::Feature::PerMessageEffort
    ///
    /// Audit: docs/api-notes.md#mid-conversation-system-messages (DOC, effort page).
    /// Model-specific: a warning on an unknown model, and on a model whose row lists
    /// `per_message_effort` as `undocumented`.
    PerMessageEffortUnsupported,
    /// A beta feature in the body without its `anthropic-beta` name (checked only when the
    /// header is known: [`ValidateOptions::with_beta_header`]). Texts: `context_management:
    /// Extra inputs are not permitted` (observed for a beta-only field sent without its beta);
    /// `output_config.task_budget: Extra inputs are not permitted` (the same pattern,
    /// inferred); for tool change blocks ours; for `clear_at` on a message
    /// `messages.N.clear_at: Extra inputs are not permitted` (documented); for
    /// `thinking.display: "updates"` the unknown-value text of [`Rule::ThinkingDisplayInvalid`]
    /// (ours; the API rejects it like an unknown value).
    ///
    /// [`ValidateOptions::with_beta_header`]: super::ValidateOptions::with_beta_header
    ///
    /// Audit: docs/api-notes.md#request-body (WIRE: beta-only fields without the beta); recorded 200
    /// `crmne__ruby_llm/chat_anthropic_claude-sonnet-4-6_compacts_…#0` (with the beta);
    /// DOC:mid-conversation-system-messages for `clear_at`, DOC:thinking for `updates`.
    BetaHeaderMissing,
    /// A `compact_20260112` trigger below 50,000 input tokens. Text ours (the minimum is
    /// documented, its 400 text not published): `context_management.edits.N.trigger.value:
    /// Input should be greater than or equal to 50000`.
    ///
    /// Audit: docs/api-notes.md#server-side-compaction and #unverified-points; recorded 200s at exactly 50,000
    /// (`crmne__ruby_llm/…compacts…#0`, `pydantic__pydantic-ai/test_anthropic_compaction_usage_with_cache_streaming#0`).
    CompactTriggerTooSmall,
    /// A context edit of a shape the API does not take: a `compact_20260112` trigger other
    /// than `input_tokens`, a `clear_tool_uses_20250919` trigger other than `input_tokens` /
    /// `tool_uses`, a `clear_thinking_20251015` `keep` of 0 thinking turns. Texts ours.
    ///
    /// Audit: docs/api-notes.md#context-editing and #server-side-compaction (DOC:context-editing, DOC:compaction).
    ContextEditInvalid,
    /// `clear_thinking_20251015` combined with other edits but not listed first. Text ours.
    ///
    /// Audit: docs/api-notes.md#context-editing (DOC:context-editing: "must be listed first").
    ClearThinkingNotFirst,
    /// `compact_20260112` on a model without [`Feature::ServerCompaction`]. Text ours.
    ///
    /// [`Feature::ServerCompaction`]: threadline_wire::model::Feature::ServerCompaction
    ///
    /// Audit: docs/api-notes.md#server-side-compaction (DOC:compaction model list). Model-specific: a warning on
    /// an unknown model.
    CompactUnsupported,
    /// `thinking.display` with `thinking.type: "disabled"`. Text ours.
    ///
    /// Audit: docs/api-notes.md#output-config (DOC:adaptive-thinking: "`display` with `disabled` is
    /// invalid").
    ThinkingDisplayWithDisabled,
    /// `output_config.task_budget.total` below 20,000. Text ours (documented minimum).
    ///
    /// Audit: docs/api-notes.md#output-config (DOC:task-budgets).
    TaskBudgetTooSmall,
    /// `output_config.task_budget` on a model without [`Feature::TaskBudget`]. Text ours.
    ///
    /// [`Feature::TaskBudget`]: threadline_wire::model::Feature::TaskBudget
    ///
    /// Audit: docs/api-notes.md#output-config (DOC:task-budgets model list). Model-specific: a
    /// warning on an unknown model.
    TaskBudgetUnsupported,
    /// `thinking: {type: "disabled"}` at an effort level the model's row does not allow it
    /// with (`disabled_thinking_efforts`; Opus 5 takes it up to `high`). Text ours.
    ///
    /// Audit: docs/api-notes.md#output-config and docs/api-notes.md#per-model-parameters (DOC:effort). Model-specific:
    /// a warning on an unknown model.
    ThinkingDisabledAtEffort,
    /// `fallbacks` of a shape the API does not take: a list of no entries or more than three,
    /// an entry naming the request's model or another entry's, `"default"` with only the
    /// list-only beta (`server-side-fallback-2026-06-01`), a shape other than `"default"` or a
    /// list, or `fallbacks` beside a top-level `fallback_credit_token` (a hard 400). Texts ours:
    /// the rules are documented, their texts not published. (The missing beta is
    /// [`Rule::BetaHeaderMissing`], with the API's pattern `fallbacks: Extra inputs are not
    /// permitted`.)
    ///
    /// Audit: docs/api-notes.md#refusals-and-fallbacks (DOC; PY `beta_fallbacks_param.py`,
    /// `beta_fallback_credit_token_param.py`).
    FallbacksInvalid,
    // --- Thinking display `updates` and turn-scoped system messages (autumn 2026).
    /// A `thinking.display` value the API does not take: anything but `summarized`, `omitted`
    /// and (beta `thinking-display-updates-2026-08-18`) `updates`. Text ours, in the pattern of
    /// the API's schema errors (the API's is not published): `thinking.adaptive.display: Input
    /// should be 'summarized' or 'omitted'` (`… 'summarized', 'omitted' or 'updates'` when the
    /// header names the beta). `updates` without its beta is [`Rule::BetaHeaderMissing`], with
    /// the same text: the API rejects it like an unknown value. `updates` with `thinking.type:
    /// "enabled"` is a warning only: whether the API accepts it is not documented (Claude Code
    /// 2.1.328 sends it to Sonnet and Haiku 4.5).
    ///
    /// Audit: docs/api-notes.md#thinking (DOC:thinking "Controlling thinking display": the
    /// three values, `updates` behind its beta; the rejection of `updates` without it).
    ThinkingDisplayInvalid,
    /// A `clear_at` the API does not take: on a message whose role is not `system`, or a value
    /// other than `next_user_message` / `never`. Texts `messages.N.clear_at: clear_at is only
    /// permitted on role 'system' messages` and `messages.N.clear_at: Input should be
    /// 'next_user_message' or 'never'` (documented). N is the message as sent (a check of one
    /// message's own field, before merging; inferred). The missing beta
    /// (`mid-conversation-system-clear-at-2026-08-21`) is [`Rule::BetaHeaderMissing`], with the
    /// documented `messages.N.clear_at: Extra inputs are not permitted`.
    ///
    /// Audit: docs/api-notes.md#mid-conversation-system-messages
    /// (DOC:mid-conversation-system-messages "Turn-scoped system messages", which lists the
    /// validation errors).
    ClearAtInvalid,
    /// A turn-scoped system message (`clear_at: "next_user_message"`) carrying what it may not:
    /// a block other than `text`, an `output_config`, or `cache_control` on a block. Texts
    /// `messages.N: a turn-scoped system message supports text blocks only (clear_at:
    /// 'next_user_message')`, `messages.N: output_config is not permitted on a turn-scoped
    /// system message (clear_at: 'next_user_message')` and `messages.N.content.M: cache_control
    /// is not permitted on a turn-scoped system message (clear_at: 'next_user_message')`
    /// (documented; N and M as sent, inferred). One followed directly by a user message is
    /// the placement rule's ([`Rule::SystemMessagePlacement`]), as for any system message.
    ///
    /// Audit: docs/api-notes.md#mid-conversation-system-messages
    /// (DOC:mid-conversation-system-messages "Turn-scoped system messages").
    TurnScopedSystemMessageInvalid,
    // --- On-demand compaction (`compact-2026-09-04`, autumn 2026).
    /// A request of on-demand compaction (top-level `compaction`) the API refuses, or a signed
    /// `compaction` block sent back in a shape it refuses (400s without an error code): a
    /// `compaction.type` other than `summarize`, an unknown field in it, blank `instructions`
    /// or more than 16,384 characters of them; `context_management`, `stop_sequences`,
    /// `output_config.format` or a `tool_choice` of type `any` / `tool` beside it; a
    /// conversation ending with an assistant `tool_use`; `output_config.task_budget.remaining`
    /// on a compaction request or on any request carrying a signed block; more than one
    /// signed block; a field the block does not have (`messages.N.content.M.compaction.
    /// citations: Extra inputs are not permitted`, quoted). Texts ours but the last: the
    /// parameter errors carry a message whose text is not published. (The missing header is
    /// [`Rule::BetaHeaderMissing`], with the texts ``compaction: the `compaction` parameter
    /// requires anthropic-beta: compact-2026-09-04`` — the documented fragment in a sentence of
    /// ours — and, for a signed block, `` `compaction` is not an expected content block type ``,
    /// quoted.)
    ///
    /// Audit: docs/api-notes.md#on-demand-compaction (DOC:compaction-on-demand, reference §2.1
    /// and §2.4).
    OnDemandCompactionInvalid,
    /// `compaction` on a model without [`Feature::OnDemandCompaction`]. Text ours.
    ///
    /// [`Feature::OnDemandCompaction`]: threadline_wire::model::Feature::OnDemandCompaction
    ///
    /// Audit: docs/api-notes.md#on-demand-compaction (DOC:compaction-on-demand model list).
    /// Model-specific: a warning on an unknown model, and on a model whose row lists
    /// `on_demand_compaction` as `undocumented` (Haiku 5.5).
    OnDemandCompactionUnsupported,
    /// A signed `compaction` block that is not the first block of the first message (the
    /// messages it summarized were sent in front of it). The API's error code
    /// `compaction_block_misplaced` (this rule's name); text ours.
    ///
    /// Audit: docs/api-notes.md#on-demand-compaction (DOC:compaction-on-demand, errors table).
    CompactionBlockMisplaced,
    /// A compaction request whose user and assistant messages hold nothing but a signed
    /// `compaction` block. The API's error code `compaction_nothing_to_summarize` (this rule's
    /// name); text ours.
    ///
    /// Audit: docs/api-notes.md#on-demand-compaction (DOC:compaction-on-demand, errors table).
    CompactionNothingToSummarize,
    /// `thinking.block_binding` the API does not take: with a thinking type other than
    /// `adaptive`, or a `prefix_mismatch_behavior` other than `error` / `drop_block`. Texts ours
    /// (the rule is documented, its text not published): `thinking.TYPE.block_binding:
    /// block_binding is only supported with adaptive thinking ("thinking.type.adaptive")` and
    /// `thinking.adaptive.block_binding.prefix_mismatch_behavior: Input should be 'error' or
    /// 'drop_block'`. The missing beta (`thinking-binding-controls-2026-08-01`) is
    /// [`Rule::BetaHeaderMissing`], with the documented ending `block_binding: Extra inputs are
    /// not permitted` (full path `thinking.TYPE.block_binding`, as a gateway records it).
    ///
    /// Audit: docs/api-notes.md#thinking-bound-to-its-prefix (DOC:preserved-thinking; Sonnet
    /// 5.5's page: `between_tools` with `block_binding` is a 400).
    BlockBindingInvalid,
}

impl Rule {
    /// Every rule, in declaration order.
    pub const ALL: &'static [Rule] = &[
        Rule::EmptyMessages,
        Rule::EmptyContent,
        Rule::EmptyTextBlock,
        Rule::WhitespaceTextBlock,
        Rule::InvalidRole,
        Rule::ToolUseWithoutResult,
        Rule::OrphanToolResult,
        Rule::DuplicateToolResult,
        Rule::DuplicateToolUseId,
        Rule::ToolResultInAssistant,
        Rule::ToolUseIdPattern,
        Rule::ServerToolUseIdPattern,
        Rule::OrphanServerToolResult,
        Rule::ServerToolPending,
        Rule::ServerToolNotProvided,
        Rule::ToolNamePattern,
        Rule::DuplicateToolName,
        Rule::ToolChoiceWithoutTools,
        Rule::ToolChoiceUnknownTool,
        Rule::DeferredToolWithCacheControl,
        Rule::AllToolsDeferred,
        Rule::ToolReferenceNotFound,
        Rule::DeferLoadingUnsupported,
        Rule::TooManyCacheBreakpoints,
        Rule::CacheControlOnEmptyText,
        Rule::CacheControlOnThinking,
        Rule::CacheTtlOrder,
        Rule::AutomaticCacheTtlConflict,
        Rule::ThinkingBudgetTooSmall,
        Rule::ThinkingBudgetNotBelowMaxTokens,
        Rule::ThinkingWithForcedToolChoice,
        Rule::FinalAssistantMissingThinking,
        Rule::ThinkingNotFirst,
        Rule::ThinkingSignatureMissing,
        Rule::PrefillUnsupported,
        Rule::TrailingWhitespace,
        Rule::MaxTokensTooLarge,
        Rule::ThinkingTypeUnsupported,
        Rule::SamplingParamUnsupported,
        Rule::TemperatureWithThinking,
        Rule::EffortUnsupported,
        Rule::SystemMessagePlacement,
        Rule::ToolChangeOutsideSystemMessage,
        Rule::ToolChangeUnknownTool,
        Rule::ToolChangesUnsupported,
        Rule::PerMessageEffortUnsupported,
        Rule::BetaHeaderMissing,
        Rule::CompactTriggerTooSmall,
        Rule::ContextEditInvalid,
        Rule::ClearThinkingNotFirst,
        Rule::CompactUnsupported,
        Rule::ThinkingDisplayWithDisabled,
        Rule::TaskBudgetTooSmall,
        Rule::TaskBudgetUnsupported,
        Rule::ThinkingDisabledAtEffort,
        Rule::FallbacksInvalid,
        Rule::ThinkingDisplayInvalid,
        Rule::ClearAtInvalid,
        Rule::TurnScopedSystemMessageInvalid,
        Rule::OnDemandCompactionInvalid,
        Rule::OnDemandCompactionUnsupported,
        Rule::CompactionBlockMisplaced,
        Rule::CompactionNothingToSummarize,
        Rule::BlockBindingInvalid,
    ];

    /// A stable snake_case name for the rule (for logs, JSON output and test tables).
    pub fn name(self) -> &'static str {
        match self {
            Rule::EmptyMessages => "empty_messages",
            Rule::EmptyContent => "empty_content",
            Rule::EmptyTextBlock => "empty_text_block",
            Rule::WhitespaceTextBlock => "whitespace_text_block",
            Rule::InvalidRole => "invalid_role",
            Rule::ToolUseWithoutResult => "tool_use_without_result",
            Rule::OrphanToolResult => "orphan_tool_result",
            Rule::DuplicateToolResult => "duplicate_tool_result",
            Rule::DuplicateToolUseId => "duplicate_tool_use_id",
            Rule::ToolResultInAssistant => "tool_result_in_assistant",
            Rule::ToolUseIdPattern => "tool_use_id_pattern",
            Rule::ServerToolUseIdPattern => "server_tool_use_id_pattern",
            Rule::OrphanServerToolResult => "orphan_server_tool_result",
            Rule::ServerToolPending => "server_tool_pending",
            Rule::ServerToolNotProvided => "server_tool_not_provided",
            Rule::ToolNamePattern => "tool_name_pattern",
            Rule::DuplicateToolName => "duplicate_tool_name",
            Rule::ToolChoiceWithoutTools => "tool_choice_without_tools",
            Rule::ToolChoiceUnknownTool => "tool_choice_unknown_tool",
            Rule::DeferredToolWithCacheControl => "deferred_tool_with_cache_control",
            Rule::AllToolsDeferred => "all_tools_deferred",
            Rule::ToolReferenceNotFound => "tool_reference_not_found",
            Rule::DeferLoadingUnsupported => "defer_loading_unsupported",
            Rule::TooManyCacheBreakpoints => "too_many_cache_breakpoints",
            Rule::CacheControlOnEmptyText => "cache_control_on_empty_text",
            Rule::CacheControlOnThinking => "cache_control_on_thinking",
            Rule::CacheTtlOrder => "cache_ttl_order",
            Rule::AutomaticCacheTtlConflict => "automatic_cache_ttl_conflict",
            Rule::ThinkingBudgetTooSmall => "thinking_budget_too_small",
            Rule::ThinkingBudgetNotBelowMaxTokens => "thinking_budget_not_below_max_tokens",
            Rule::ThinkingWithForcedToolChoice => "thinking_with_forced_tool_choice",
            Rule::FinalAssistantMissingThinking => "final_assistant_missing_thinking",
            Rule::ThinkingNotFirst => "thinking_not_first",
            Rule::ThinkingSignatureMissing => "thinking_signature_missing",
            Rule::PrefillUnsupported => "prefill_unsupported",
            Rule::TrailingWhitespace => "trailing_whitespace",
            Rule::MaxTokensTooLarge => "max_tokens_too_large",
            Rule::ThinkingTypeUnsupported => "thinking_type_unsupported",
            Rule::SamplingParamUnsupported => "sampling_param_unsupported",
            Rule::TemperatureWithThinking => "temperature_with_thinking",
            Rule::EffortUnsupported => "effort_unsupported",
            Rule::SystemMessagePlacement => "system_message_placement",
            Rule::ToolChangeOutsideSystemMessage => "tool_change_outside_system_message",
            Rule::ToolChangeUnknownTool => "tool_change_unknown_tool",
            Rule::ToolChangesUnsupported => "tool_changes_unsupported",
            Rule::PerMessageEffortUnsupported => "per_message_effort_unsupported",
            Rule::BetaHeaderMissing => "beta_header_missing",
            Rule::CompactTriggerTooSmall => "compact_trigger_too_small",
            Rule::ContextEditInvalid => "context_edit_invalid",
            Rule::ClearThinkingNotFirst => "clear_thinking_not_first",
            Rule::CompactUnsupported => "compact_unsupported",
            Rule::ThinkingDisplayWithDisabled => "thinking_display_with_disabled",
            Rule::TaskBudgetTooSmall => "task_budget_too_small",
            Rule::TaskBudgetUnsupported => "task_budget_unsupported",
            Rule::ThinkingDisabledAtEffort => "thinking_disabled_at_effort",
            Rule::FallbacksInvalid => "fallbacks_invalid",
            Rule::ThinkingDisplayInvalid => "thinking_display_invalid",
            Rule::ClearAtInvalid => "clear_at_invalid",
            Rule::TurnScopedSystemMessageInvalid => "turn_scoped_system_message_invalid",
            Rule::OnDemandCompactionInvalid => "on_demand_compaction_invalid",
            Rule::OnDemandCompactionUnsupported => "on_demand_compaction_unsupported",
            Rule::CompactionBlockMisplaced => "compaction_block_misplaced",
            Rule::CompactionNothingToSummarize => "compaction_nothing_to_summarize",
            Rule::BlockBindingInvalid => "block_binding_invalid",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------------------------
// The texts. Fixed texts are constants; the others are built by the functions below.

pub(super) const EMPTY_MESSAGES: &str = "messages: at least one message is required";
pub(super) const EMPTY_TEXT_MESSAGES: &str = "messages: text content blocks must be non-empty";
pub(super) const EMPTY_TEXT_SYSTEM: &str = "system: text content blocks must be non-empty";
pub(super) const WHITESPACE_TEXT_MESSAGES: &str =
    "messages: text content blocks must contain non-whitespace text";
pub(super) const WHITESPACE_TEXT_SYSTEM: &str =
    "system: text content blocks must contain non-whitespace text";
pub(super) const DUPLICATE_TOOL_NAME: &str = "tools: Tool names must be unique.";
pub(super) const TOOL_CHOICE_WITHOUT_TOOLS: &str =
    "tool_choice may only be specified while providing tools.";
pub(super) const THINKING_BUDGET_TOO_SMALL: &str =
    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024";
pub(super) const THINKING_BUDGET_NOT_BELOW_MAX_TOKENS: &str = "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size";
pub(super) const THINKING_WITH_FORCED_TOOL_CHOICE: &str =
    "Thinking may not be enabled when tool_choice forces tool use.";
pub(super) const PREFILL_UNSUPPORTED: &str = "This model does not support assistant message prefill. The conversation must end with a user message.";
pub(super) const TRAILING_WHITESPACE: &str =
    "final assistant content cannot end with trailing whitespace";
pub(super) const ADAPTIVE_UNSUPPORTED: &str = "adaptive thinking is not supported on this model";
pub(super) const ENABLED_UNSUPPORTED: &str = "\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior.";
pub(super) const DISABLED_UNSUPPORTED: &str = "\"thinking.type.disabled\" is not supported for this model. Thinking defaults to adaptive mode when not specified; use \"thinking.type.enabled\" with \"budget_tokens\" for extended thinking.";
pub(super) const TEMPERATURE_WITH_THINKING: &str =
    "`temperature` may only be set to 1 when thinking is enabled";
pub(super) const TEMPERATURE_WITH_THINKING_ADAPTIVE: &str =
    "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode";
pub(super) const EFFORT_NOT_PERMITTED: &str =
    "output_config.effort: Extra inputs are not permitted";

/// `messages.N: all messages must have non-empty content …`.
pub(super) fn empty_content(api_turn: usize) -> String {
    format!(
        "messages.{api_turn}: all messages must have non-empty content except for the optional final assistant message"
    )
}

/// Ours: the warning for a capability the model's row lists as `undocumented`, where `refusal`
/// is what the validator would report if the model lacked it.
pub(super) fn undocumented(
    api: &str,
    model: &str,
    capability: Capability,
    refusal: &str,
) -> String {
    format!(
        "{api}: the documentation does not say whether {model} accepts {}, so the API may accept this; if {model} does not, the answer is `{refusal}`",
        capability.describe()
    )
}

/// A capability the request's platform does not offer: the platform's refusal, and why.
pub(super) fn withheld(
    api: &str,
    platform: threadline_wire::platform::Platform,
    capability: Capability,
    refusal: &str,
) -> String {
    format!(
        "{api}: {refusal} ({} does not offer {})",
        platform.display_name(),
        capability.describe()
    )
}

/// `messages.N.role: Input should be 'user' or 'assistant'`.
pub(super) fn invalid_role(api_turn: usize) -> String {
    format!("messages.{api_turn}.role: Input should be 'user' or 'assistant'")
}

/// ``messages.N: `tool_use` ids were found without `tool_result` blocks immediately after: …``.
pub(super) fn tool_use_without_result(api_turn: usize, ids: &[&str]) -> String {
    format!(
        "messages.{api_turn}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ids.join(", ")
    )
}

/// ``messages.N.content.M: unexpected `tool_use_id` found in `tool_result` blocks: …``.
pub(super) fn orphan_tool_result(api_block: &str, ids: &[&str]) -> String {
    format!(
        "{api_block}: unexpected `tool_use_id` found in `tool_result` blocks: {}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        ids.join(", ")
    )
}

/// ``messages.N.content.M: each tool_use must have a single result. …``.
pub(super) fn duplicate_tool_result(api_block: &str, id: &str) -> String {
    format!(
        "{api_block}: each tool_use must have a single result. Found multiple `tool_result` blocks with id: {id}"
    )
}

/// ``messages.N.content.M: `tool_use` ids must be unique``.
pub(super) fn duplicate_tool_use_id(api_block: &str) -> String {
    format!("{api_block}: `tool_use` ids must be unique")
}

/// ``messages.N: `tool_result` blocks can only be in `user` messages``.
pub(super) fn tool_result_in_assistant(api_turn: usize) -> String {
    format!("messages.{api_turn}: `tool_result` blocks can only be in `user` messages")
}

/// `messages.N.content.M.tool_use.id: String should match pattern …`.
pub(super) fn tool_use_id_pattern(api_block: &str) -> String {
    format!("{api_block}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
}

/// `messages.N.content.M.server_tool_use.id: String should match pattern …`.
pub(super) fn server_tool_use_id_pattern(api_block: &str) -> String {
    format!(
        "{api_block}.server_tool_use.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'"
    )
}

/// ``messages.N.content.M: unexpected `tool_use_id` found in `TYPE` blocks: …`` (the call
/// block is `server_tool_use`, or `mcp_tool_use` for `mcp_tool_result`).
pub(super) fn orphan_server_tool_result(api_block: &str, block_type: &str, id: &str) -> String {
    let call = if block_type == "mcp_tool_result" {
        "mcp_tool_use"
    } else {
        "server_tool_use"
    };
    format!(
        "{api_block}: unexpected `tool_use_id` found in `{block_type}` blocks: {id}. Each `{block_type}` block must have a corresponding `{call}` block before it."
    )
}

/// The result block type that answers a server tool.
pub(super) fn server_tool_result_type(name: &str) -> String {
    if name.starts_with("tool_search_tool_") {
        "tool_search_tool_result".to_owned()
    } else {
        format!("{name}_tool_result")
    }
}

/// ``\`NAME\` tool use with id \`ID\` was found without a corresponding \`NAME_tool_result\` block``.
pub(super) fn server_tool_pending(name: &str, id: &str) -> String {
    format!(
        "`{name}` tool use with id `{id}` was found without a corresponding `{}` block",
        server_tool_result_type(name)
    )
}

/// ``\`NAME\` tool use with id \`ID\` was found, but no \`NAME\` tool was provided``.
pub(super) fn server_tool_not_provided(name: &str, id: &str) -> String {
    format!("`{name}` tool use with id `{id}` was found, but no `{name}` tool was provided")
}

/// `tools.N.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`.
pub(super) fn tool_name_pattern(tool: usize, max_len: usize) -> String {
    format!(
        "tools.{tool}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,{max_len}}}$'"
    )
}

/// `tool_choice.name: Tool 'X' not found in provided tools`.
pub(super) fn tool_choice_unknown_tool(name: &str) -> String {
    format!("tool_choice.name: Tool '{name}' not found in provided tools")
}

/// `Tool 'NAME' cannot have both defer_loading=true and cache_control set. …`.
pub(super) fn deferred_tool_with_cache_control(name: &str) -> String {
    format!(
        "Tool '{name}' cannot have both defer_loading=true and cache_control set. Tools with defer_loading cannot use prompt caching."
    )
}

/// `At least one tool must have defer_loading=false. …` (documented).
pub(super) const ALL_TOOLS_DEFERRED: &str =
    "At least one tool must have defer_loading=false. All tools cannot be deferred.";

/// `Tool reference 'NAME' not found in available tools` (documented).
pub(super) fn tool_reference_not_found(name: &str) -> String {
    format!("Tool reference '{name}' not found in available tools")
}

/// `defer_loading` on a model without tool search. Ours: the API's text is not published.
pub(super) fn defer_loading_unsupported(tool: &str, model: &str) -> String {
    format!(
        "Tool '{tool}' has defer_loading=true, but {model} does not support tool search (threadline's model table; the API's text is not published)."
    )
}

/// `A maximum of 4 blocks with cache_control may be provided. Found N.`.
pub(super) fn too_many_cache_breakpoints(found: usize) -> String {
    format!("A maximum of 4 blocks with cache_control may be provided. Found {found}.")
}

/// Ours (the API's text is not published): the automatic marker's lifetime `wanted` differs
/// from the explicit marker's `there` on the block at `path` where it lands.
pub(super) fn automatic_cache_ttl_conflict(wanted: &str, path: &str, there: &str) -> String {
    format!(
        "cache_control.ttl: the automatic cache_control (ttl '{wanted}') lands on {path}, which already has a cache_control with ttl '{there}'; use the same ttl or remove one of them"
    )
}

/// `PATH.text: cache_control cannot be set for empty text blocks`.
pub(super) fn cache_control_on_empty_text(api_block: &str) -> String {
    format!("{api_block}.text: cache_control cannot be set for empty text blocks")
}

/// `PATH.thinking.cache_control: Extra inputs are not permitted`.
pub(super) fn cache_control_on_thinking(api_block: &str, block_type: &str) -> String {
    format!("{api_block}.{block_type}.cache_control: Extra inputs are not permitted")
}

/// `PATH.cache_control.ttl: a ttl='1h' cache_control block must not come after …` (`api_ttl`
/// is the whole `PATH.cache_control.ttl`).
pub(super) fn cache_ttl_order(api_ttl: &str) -> String {
    format!(
        "{api_ttl}: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Blocks are processed in the following order: `tools`, `system`, `messages`."
    )
}

/// ``messages.N.content.0.type: Expected `thinking` or `redacted_thinking`, but found `X`. …``.
pub(super) fn final_assistant_missing_thinking(api_turn: usize, found: &str) -> String {
    format!(
        "messages.{api_turn}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    )
}

/// ``messages.N.content.0: If an assistant message contains any thinking blocks, …``.
pub(super) fn thinking_not_first(api_turn: usize, found: &str) -> String {
    format!(
        "messages.{api_turn}.content.0: If an assistant message contains any thinking blocks, the first block must be `thinking` or `redacted_thinking`. Found `{found}`."
    )
}

/// `messages.N.content.M.thinking.signature: Field required`.
pub(super) fn thinking_signature_missing(api_block: &str) -> String {
    format!("{api_block}.thinking.signature: Field required")
}

/// `max_tokens: N > MAX, which is the maximum allowed number of output tokens for ID`.
pub(super) fn max_tokens_too_large(max_tokens: u64, maximum: u64, model_id: &str) -> String {
    format!(
        "max_tokens: {max_tokens} > {maximum}, which is the maximum allowed number of output tokens for {model_id}"
    )
}

/// ``\`PARAM\` is deprecated for this model.``.
pub(super) fn sampling_param_unsupported(param: &str) -> String {
    format!("`{param}` is deprecated for this model.")
}

/// `This model does not support effort level 'X'. Supported levels: a, b, c.` (levels sorted).
pub(super) fn effort_unsupported(level: &str, supported: &[String]) -> String {
    let mut levels: Vec<&str> = supported.iter().map(String::as_str).collect();
    levels.sort_unstable();
    format!(
        "This model does not support effort level '{level}'. Supported levels: {}.",
        levels.join(", ")
    )
}
