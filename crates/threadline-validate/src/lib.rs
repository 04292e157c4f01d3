//! The conformance validator: the Messages API's acceptance rules, checked offline, each
//! reported with the API's own error text.
//!
//! It is what `threadline check`, the mock API and the tests of every crate that builds
//! requests use to tell whether the API would accept a request; a crate of its own so that
//! `threadline-wire` stays the API's types and streams, and whoever needs only those does not
//! compile the rules. The facts behind each rule, with their sources, are in
//! `docs/api-notes.md`.
//!
//! [`validate`] checks a [`MessagesRequest`] against one model's row of the
//! [model table](threadline_wire::model::ModelTable) and returns every [`Violation`] it finds (none means
//! the API would accept the request as far as an offline check can tell). Each violation
//! carries its [`Rule`], the JSON path of the offending place in the request as sent, and the
//! message the API returns for it, byte-for-byte where a public source quotes it.
//!
//! ```
//! use threadline_wire::model::ModelTable;
//! use threadline_validate::{validate, Rule};
//! use threadline_wire::MessagesRequest;
//!
//! let request: MessagesRequest = serde_json::from_str(r#"{
//!     "model": "claude-haiku-4-5", "max_tokens": 1024,
//!     "messages": [
//!         {"role": "user", "content": "What's the weather in Paris?"},
//!         {"role": "assistant", "content": [
//!             {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}}
//!         ]},
//!         {"role": "user", "content": "Never mind."}
//!     ]
//! }"#).expect("a valid request body");
//! let model = ModelTable::builtin().resolve(&request.model).model();
//!
//! let violations = validate(&request, model);
//! assert_eq!(violations.len(), 1);
//! assert_eq!(violations[0].rule, Rule::ToolUseWithoutResult);
//! assert_eq!(violations[0].path, "messages.1");
//! assert_eq!(
//!     violations[0].to_string(),
//!     "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: \
//!      toolu_01. Each `tool_use` block must have a corresponding `tool_result` block in the \
//!      next message."
//! );
//! ```
//!
//! # Unknown models: warnings, not violations
//!
//! A rule is *model-specific* when what it finds depends on the model's row: `max_tokens`
//! above the model's maximum, a `thinking.type` the model does not take, sampling parameters,
//! temperature with thinking, effort levels, prefill (and the trailing-whitespace rule that
//! applies only where prefill is accepted), and `role: "system"` messages. For an id the table
//! does not know, the row is the table's conservative default ([`Model::is_guess`]), whose
//! limits are guesses: what the model-specific rules find against it goes to
//! [`Report::warnings`], never to [`Report::violations`] — the API accepted
//! `claude-3-7-sonnet-latest` with `max_tokens: 16000` although the default allows 8,192.
//! The shape rules (pairing, ids, empty content, cache markers, …) hold for every model and
//! stay violations. So do the rules of manual thinking (`budget_tokens` ≥ 1024 and below
//! `max_tokens`, no forced `tool_choice`, the final assistant turn starting with thinking):
//! the default row takes `thinking.type: "enabled"`, and on a model that does not the API
//! rejects the request for the type itself, so a request they reject is rejected either way.
//! [`validate`] returns the violations only; [`validate_report`] both.
//!
//! A known model's row may also list capabilities the documentation is silent on for it
//! ([`Model::undocumented`]; Haiku 5.5's mid-conversation system messages and tool changes):
//! using one is reported as a warning that says the docs are silent, not as a violation.
//!
//! A few findings are warnings for every model: rules that no recorded response and no
//! documented rule bounds (see [`Rule`]; today the effort parameter on a model with no effort
//! levels).
//!
//! # Merged messages
//!
//! The API merges consecutive messages of the same role into one turn before it checks them,
//! and its messages name positions in the merged sequence (a recorded 400 says
//! `messages.0.content.1` for a `tool_result` sent as `messages.1.content.0` right after a
//! user string message). The validator checks the merged sequence too. [`Violation::message`]
//! is the API's text, with the API's merged positions; [`Violation::path`] is the position in
//! the request as sent, so a caller can find and fix the block. Without consecutive same-role
//! messages the two agree.
//!
//! # Order
//!
//! Violations come sorted by the place they point at, in request order: parameters
//! (`max_tokens`, `thinking`, `temperature`, `top_p`, `top_k`, `output_config`), `tools` by
//! index, `tool_choice`, `system`, `messages` by original message index (a message-level
//! violation before those of its blocks, blocks by index, a block before the blocks nested in
//! it), then the top-level `cache_control`. Violations at the same place keep the order in
//! which the checks run. The order is deterministic: no hash-map iteration reaches the output.
//!
//! # Cost
//!
//! One pass over the messages and their blocks, after gathering references to the messages
//! into one flat list (8 bytes a message: a request keeps its messages in shared chunks, and
//! the walk reaches each message several times); ids are kept as borrowed `&str` in hash
//! sets; nothing is cloned; strings are allocated only for violations. The rarer rules (system
//! messages and tool changes, `clear_at`, per-message effort, tool references) walk the
//! messages again only when that pass saw something they check: on a large request each walk
//! costs a cache miss per block.
#![forbid(unsafe_code)]

mod automatic_cache;
mod block_binding;
mod cache;
mod clear_at;
mod context_management;
mod fallbacks;
mod hash;
mod ids;
mod message_effort;
mod message_list;
mod messages;
mod on_demand_compaction;
mod output_config;
mod params;
mod prefill;
mod report;
mod rule;
mod seen;
mod system;
mod text;
mod thinking;
mod tool_changes;
mod tool_search;
mod tools;
mod turns;

use std::fmt;

pub use ids::{is_valid_server_tool_use_id, is_valid_tool_name, is_valid_tool_use_id};
pub use rule::Rule;

use message_list::MessageList;
use threadline_wire::cache_control::CacheControl;
use threadline_wire::model::Model;
use threadline_wire::request::ThinkingConfig;
use threadline_wire::request::{
    ContextManagement, CountTokensRequest, Effort, MessagesRequest, OutputConfig, SystemPrompt,
};
use threadline_wire::tools::{ToolChoice, ToolDefinition};

/// One broken rule: which, where, and what the API says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// The JSON path of the offending place in the request as sent, e.g.
    /// `messages.3.content.0` (`messages.3.content` for string content, `tools.1.name`,
    /// `thinking.budget_tokens`, `cache_control`).
    pub path: String,
    /// The full `error.message` the API returns for it. It often starts with the API's own
    /// path (`messages.N: …`), which names positions after merging same-role messages.
    pub message: String,
}

impl Violation {
    /// A violation of `rule` at `path`, with the API's `message`.
    pub fn new(rule: Rule, path: impl Into<String>, message: impl Into<String>) -> Self {
        Violation {
            rule,
            path: path.into(),
            message: message.into(),
        }
    }

    /// Whether [`message`](Self::message) already starts with [`path`](Self::path) (followed by
    /// `:` or `.`), so that printing the message alone says where.
    pub fn message_starts_with_path(&self) -> bool {
        self.message
            .strip_prefix(self.path.as_str())
            .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('.'))
    }
}

impl fmt::Display for Violation {
    /// `PATH: MESSAGE`, or the message alone when it already starts with the path, so users
    /// read the API's own words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message_starts_with_path() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Settings for the few rules whose limits are not certain or depend on headers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValidateOptions {
    /// The longest custom tool name accepted (default 64, the documented limit; real 2026
    /// errors show 128).
    pub max_tool_name_len: usize,
    /// Whether interleaved thinking is on (beta `interleaved-thinking-2025-05-14`), which lets
    /// `thinking.budget_tokens` exceed `max_tokens` (default false).
    pub interleaved_thinking: bool,
    /// The betas the `anthropic-beta` header names, when the header is known (default
    /// `None`: not known, so the rule that a beta feature needs its header is not checked).
    pub betas: Option<Vec<String>>,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            max_tool_name_len: 64,
            interleaved_thinking: false,
            betas: None,
        }
    }
}

impl ValidateOptions {
    /// These options with another tool-name length limit.
    pub fn with_max_tool_name_len(mut self, max_len: usize) -> Self {
        self.max_tool_name_len = max_len;
        self
    }

    /// These options with interleaved thinking on or off.
    pub fn with_interleaved_thinking(mut self, on: bool) -> Self {
        self.interleaved_thinking = on;
        self
    }

    /// These options adjusted for an `anthropic-beta` header value (comma-separated betas;
    /// `""` is a request sent without the header): interleaved thinking is on when the header
    /// names it, and the betas the body's features need are checked against it
    /// ([`Rule::BetaHeaderMissing`]).
    pub fn with_beta_header(mut self, betas: &str) -> Self {
        let interleaved = betas
            .split(',')
            .any(|b| b.trim().starts_with("interleaved-thinking-"));
        let names = self.betas.get_or_insert_with(Vec::new);
        for beta in betas.split(',').map(str::trim).filter(|b| !b.is_empty()) {
            if names.len() < MAX_BETAS && !names.iter().any(|n| n == beta) {
                names.push(beta.to_owned());
            }
        }
        let on = self.interleaved_thinking || interleaved;
        self.with_interleaved_thinking(on)
    }

    /// Whether the header names `beta`'s feature (any date); `None` when the header is not
    /// known.
    pub fn names_beta(&self, beta: &str) -> Option<bool> {
        let names = self.betas.as_ref()?;
        Some(
            names
                .iter()
                .any(|n| threadline_wire::betas::header_names(n, beta)),
        )
    }
}

/// The most betas one header is read for (a header is a few names; this bounds hostile input).
const MAX_BETAS: usize = 64;

/// Everything one validation found: what the API rejects, and what it may accept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// What the API rejects the request for, in request order (see the module docs).
    pub violations: Vec<Violation>,
    /// Findings the API may accept, in request order: model-specific rules checked against
    /// the conservative default row of an unknown model, and rules no recorded response or
    /// documented rule bounds.
    pub warnings: Vec<Violation>,
}

impl Report {
    /// Whether the API would accept the request as far as an offline check can tell (no
    /// violations; warnings do not count).
    pub fn is_accepted(&self) -> bool {
        self.violations.is_empty()
    }
}

/// The violations of a `POST /v1/messages` body against `model`'s row, with default options
/// (the warnings are left out: [`validate_report`] has both).
pub fn validate(request: &MessagesRequest, model: &Model) -> Vec<Violation> {
    validate_with(request, model, &ValidateOptions::default())
}

/// [`validate`] with explicit options.
pub fn validate_with(
    request: &MessagesRequest,
    model: &Model,
    options: &ValidateOptions,
) -> Vec<Violation> {
    validate_report(request, model, options).violations
}

/// The violations and the warnings of a `POST /v1/messages` body against `model`'s row.
///
/// ```
/// use threadline_wire::model::ModelTable;
/// use threadline_validate::{validate_report, Rule, ValidateOptions};
/// use threadline_wire::MessagesRequest;
///
/// let request: MessagesRequest = serde_json::from_str(r#"{
///     "model": "claude-3-7-sonnet-latest", "max_tokens": 16000,
///     "messages": [{"role": "user", "content": "Hello"}]
/// }"#).expect("a valid request body");
/// let model = ModelTable::builtin().resolve(&request.model).model();
/// let report = validate_report(&request, model, &ValidateOptions::default());
/// assert!(report.is_accepted());
/// assert_eq!(report.warnings[0].rule, Rule::MaxTokensTooLarge);
/// ```
pub fn validate_report(
    request: &MessagesRequest,
    model: &Model,
    options: &ValidateOptions,
) -> Report {
    let messages = MessageList::gather(&request.messages);
    run(
        &View::of_messages(request, MessageList::new(&messages)),
        model,
        options,
    )
}

/// The violations of a `POST /v1/messages/count_tokens` body against `model`'s row (the same
/// rules, except those about `max_tokens` and sampling, which the endpoint does not take).
pub fn validate_count_tokens(request: &CountTokensRequest, model: &Model) -> Vec<Violation> {
    validate_count_tokens_with(request, model, &ValidateOptions::default())
}

/// [`validate_count_tokens`] with explicit options.
pub fn validate_count_tokens_with(
    request: &CountTokensRequest,
    model: &Model,
    options: &ValidateOptions,
) -> Vec<Violation> {
    validate_count_tokens_report(request, model, options).violations
}

/// The violations and the warnings of a `POST /v1/messages/count_tokens` body.
pub fn validate_count_tokens_report(
    request: &CountTokensRequest,
    model: &Model,
    options: &ValidateOptions,
) -> Report {
    let messages = MessageList::gather(&request.messages);
    run(
        &View::of_count_tokens(request, MessageList::new(&messages)),
        model,
        options,
    )
}

/// The fields the rules read, borrowed from either request type.
struct View<'a> {
    model: &'a str,
    max_tokens: Option<u64>,
    messages: MessageList<'a>,
    system: Option<&'a SystemPrompt>,
    tools: &'a [ToolDefinition],
    tool_choice: Option<&'a ToolChoice>,
    thinking: Option<&'a ThinkingConfig>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<u64>,
    cache_control: Option<&'a CacheControl>,
    effort: Option<&'a Effort>,
    has_mcp_servers: bool,
    output_config: Option<&'a OutputConfig>,
    context_management: Option<&'a ContextManagement>,
    mcp_servers: Option<&'a serde_json::Value>,
    fallbacks: Option<&'a threadline_wire::request::Fallbacks>,
    has_fallback_credit_token: bool,
    compaction: Option<&'a threadline_wire::request::CompactionParam>,
    stop_sequences: Option<&'a [String]>,
}

fn has_mcp_servers(value: Option<&serde_json::Value>) -> bool {
    match value {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Array(servers)) => !servers.is_empty(),
        Some(_) => true,
    }
}

impl<'a> View<'a> {
    fn of_messages(r: &'a MessagesRequest, messages: MessageList<'a>) -> Self {
        View {
            model: &r.model,
            max_tokens: Some(r.max_tokens),
            messages,
            system: r.system.as_ref(),
            tools: r.tools.as_deref().unwrap_or(&[]),
            tool_choice: r.tool_choice.as_ref(),
            thinking: r.thinking.as_ref(),
            temperature: r.temperature,
            top_p: r.top_p,
            top_k: r.top_k,
            cache_control: r.cache_control.as_deref(),
            effort: r.output_config.as_ref().and_then(|c| c.effort.as_ref()),
            has_mcp_servers: has_mcp_servers(r.mcp_servers.as_ref()),
            output_config: r.output_config.as_ref(),
            context_management: r.context_management.as_ref(),
            mcp_servers: r.mcp_servers.as_ref(),
            fallbacks: r.fallbacks.as_ref(),
            has_fallback_credit_token: r.extra.contains_key("fallback_credit_token"),
            compaction: r.compaction.as_ref(),
            stop_sequences: r.stop_sequences.as_deref(),
        }
    }

    fn of_count_tokens(r: &'a CountTokensRequest, messages: MessageList<'a>) -> Self {
        View {
            model: &r.model,
            max_tokens: None,
            messages,
            system: r.system.as_ref(),
            tools: r.tools.as_deref().unwrap_or(&[]),
            tool_choice: r.tool_choice.as_ref(),
            thinking: r.thinking.as_ref(),
            temperature: None,
            top_p: None,
            top_k: None,
            cache_control: r.cache_control.as_deref(),
            effort: r.output_config.as_ref().and_then(|c| c.effort.as_ref()),
            has_mcp_servers: has_mcp_servers(r.mcp_servers.as_ref()),
            output_config: r.output_config.as_ref(),
            context_management: r.context_management.as_ref(),
            mcp_servers: r.mcp_servers.as_ref(),
            fallbacks: None,
            has_fallback_credit_token: false,
            compaction: None,
            stop_sequences: None,
        }
    }

    /// Whether manual thinking (`type: enabled`) is on and the model accepts it (when it does
    /// not, only the unsupported-type violation is reported).
    fn manual_thinking(&self, model: &Model) -> bool {
        matches!(self.thinking, Some(ThinkingConfig::Enabled(_)))
            && model.accepts_thinking(threadline_wire::model::ThinkingMode::Enabled)
    }
}

fn run(view: &View<'_>, model: &Model, options: &ValidateOptions) -> Report {
    run_checks(view, model, options, None)
}

/// The checks; `seen` overrides what the walk over the messages notes (tests run every
/// check with [`seen::Seen::everything`]).
fn run_checks(
    view: &View<'_>,
    model: &Model,
    options: &ValidateOptions,
    seen: Option<seen::Seen>,
) -> Report {
    let mut ctx = report::Ctx::new(model, options);
    let mut breakpoints = cache::Breakpoints::default();
    params::check(&mut ctx, view);
    output_config::check(&mut ctx, view);
    context_management::check(&mut ctx, view);
    fallbacks::check(&mut ctx, view);
    tools::check(&mut ctx, view, &mut breakpoints);
    tool_search::check_tools(&mut ctx, view);
    let references_at = ctx.mark();
    system::check(&mut ctx, view, &mut breakpoints);
    let (tail, noted) = messages::check(&mut ctx, view, &mut breakpoints);
    // The rarer rules walk the messages again only when the walk saw what they check.
    let seen = seen.unwrap_or(noted);
    if seen.tool_reference {
        // Its findings rank where they always did: before those of `system` and `messages`.
        ctx.run_as_at(references_at, |ctx| {
            tool_search::check_references(ctx, view);
        });
    }
    if seen.tool_changes() {
        tool_changes::check(&mut ctx, view);
    }
    if seen.clear_at {
        clear_at::check(&mut ctx, view);
    }
    if seen.message_output_config {
        message_effort::check(&mut ctx, view);
    }
    if view.compaction.is_some() || seen.compaction_block {
        on_demand_compaction::check(&mut ctx, view);
    }
    block_binding::check(&mut ctx, view);
    prefill::check(&mut ctx, view, &tail);
    thinking::check_final_assistant(&mut ctx, view, &tail);
    automatic_cache::check(&mut ctx, view);
    breakpoints.finish(&mut ctx, view.cache_control);
    ctx.finish()
}
