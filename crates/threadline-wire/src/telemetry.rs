//! The names of the telemetry the workspace emits: one definition of each span name,
//! attribute name and attribute value, shared by the loop (`threadline-query`), the HTTP
//! client (`threadline-client`) and the built-in tools (`threadline-tools`).
//!
//! The attribute names are those of the OpenTelemetry semantic conventions for generative AI
//! (the GenAI spans, agent spans and attribute registry, version 1.41), so a
//! `tracing-opentelemetry` layer exports the spans unchanged: a `chat` span per model call, an
//! `execute_tool` span per tool call, an `invoke_agent` span per run. `tracing` span names are
//! static; the conventions' dynamic names (`chat {gen_ai.request.model}`) are carried in the
//! [`OTEL_NAME`] field, which `tracing-opentelemetry` uses as the exported span name.
//!
//! What is deliberately never recorded (the project's security rule, and the conventions'
//! opt-in content attributes): message content, system prompts, tool inputs and outputs, and the API key.
//! Only ids, model names, counts, stop reasons, tool names and error classes are.
//!
//! This module holds names only (no `tracing` dependency): the crates that emit record them.

/// `tracing-opentelemetry`'s field for the exported span name.
pub const OTEL_NAME: &str = "otel.name";
/// `tracing-opentelemetry`'s field for the span kind (`client`, `internal`).
pub const OTEL_KIND: &str = "otel.kind";

/// The operation: [`OPERATION_CHAT`], [`OPERATION_EXECUTE_TOOL`] or
/// [`OPERATION_INVOKE_AGENT`].
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The provider: always [`PROVIDER_ANTHROPIC`] here.
pub const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The session the call belongs to, where the caller names one.
pub const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// The model id the request names.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// The request's `max_tokens`.
pub const GEN_AI_REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// The response's message id (`msg_…`).
pub const GEN_AI_RESPONSE_ID: &str = "gen_ai.response.id";
/// The model that answered.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// Why the model stopped. The conventions type it as a string array; `tracing` has no array
/// values, and a Messages response has exactly one stop reason, so it is that string.
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// All input tokens: the conventions count cached tokens in, so this is uncached input +
/// cache writes + cache reads ([`Usage::total_input_tokens`](crate::Usage::total_input_tokens)).
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Output tokens.
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Input tokens read from the prompt cache.
pub const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// Input tokens written to the prompt cache.
pub const GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: &str =
    "gen_ai.usage.cache_creation.input_tokens";
/// The tool's name.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// The tool use's id (`toolu_…`).
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// The kind of tool: [`TOOL_TYPE_FUNCTION`] for every client-side tool.
pub const GEN_AI_TOOL_TYPE: &str = "gen_ai.tool.type";
/// The class of error an operation ended with (an error kind, never its text).
pub const ERROR_TYPE: &str = "error.type";
/// The HTTP status of the response.
pub const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
/// The API's `request-id` header (provider-specific, so in the `anthropic.` namespace).
pub const ANTHROPIC_REQUEST_ID: &str = "anthropic.request_id";

/// `gen_ai.operation.name` of a model call.
pub const OPERATION_CHAT: &str = "chat";
/// `gen_ai.operation.name` of a tool call.
pub const OPERATION_EXECUTE_TOOL: &str = "execute_tool";
/// `gen_ai.operation.name` of a run of the loop.
pub const OPERATION_INVOKE_AGENT: &str = "invoke_agent";
/// `gen_ai.provider.name` of the Anthropic API.
pub const PROVIDER_ANTHROPIC: &str = "anthropic";
/// `gen_ai.tool.type` of a tool the application runs.
pub const TOOL_TYPE_FUNCTION: &str = "function";
/// `error.type` of a tool call that returned an error result.
pub const ERROR_TOOL_RESULT: &str = "tool_error";

/// The span of one model call, as the loop sees it (`chat {model}` when exported).
pub const SPAN_CHAT: &str = "chat";
/// The span of one tool call (`execute_tool {tool}` when exported).
pub const SPAN_EXECUTE_TOOL: &str = "execute_tool";
/// The span of one run of the loop (`invoke_agent` when exported).
pub const SPAN_INVOKE_AGENT: &str = "invoke_agent";
/// The client's span of one HTTP exchange with the Messages API.
pub const SPAN_HTTP_MESSAGES: &str = "anthropic.messages";

/// The event of a context step that changed the history (compaction, microcompact, snip,
/// tool-result budget).
pub const EVENT_COMPACTION: &str = "threadline.compaction";
/// The context step: `tool_result_budget`, `snip`, `microcompact`, `autocompact`, `drain`,
/// `reactive_compact`.
pub const COMPACTION_STEP: &str = "threadline.compaction.step";
/// The estimated tokens of the visible history before the step.
pub const COMPACTION_TOKENS_BEFORE: &str = "threadline.compaction.tokens_before";
/// The estimated tokens of the visible history after the step.
pub const COMPACTION_TOKENS_AFTER: &str = "threadline.compaction.tokens_after";
/// The event of a shell command that ended (`threadline-tools`' `Bash`), inside its
/// `execute_tool` span: its exit code or [`ERROR_TYPE`] `timeout`, never the command.
pub const EVENT_SHELL_EXIT: &str = "threadline.tool.shell";
/// The exit code of a process (`-1`: killed by a signal).
pub const PROCESS_EXIT_CODE: &str = "process.exit.code";
/// The turn a span or event belongs to (0-based).
pub const THREADLINE_TURN: &str = "threadline.turn";

/// A count as a span attribute: the conventions' counts are OpenTelemetry ints (`i64`), and
/// `tracing-opentelemetry` exports a `u64` field as a string, so counts are recorded as `i64`
/// (saturating: a hostile server's count cannot wrap).
pub fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The usage counts a response reported, each under its attribute name: output tokens, cache
/// reads and cache writes, as [`int`]s; a count the response left out is not in the list.
/// (`gen_ai.usage.input_tokens` is not among them: the conventions count cached tokens in, so
/// each emitter sums what it has seen.)
pub fn usage_counts(usage: &crate::Usage) -> impl Iterator<Item = (&'static str, i64)> {
    [
        (GEN_AI_USAGE_OUTPUT_TOKENS, usage.output_tokens),
        (
            GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
            usage.cache_read_input_tokens,
        ),
        (
            GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
            usage.cache_creation_input_tokens,
        ),
    ]
    .into_iter()
    .filter_map(|(name, count)| Some((name, int(count?))))
}

/// The `error.type` of a failed model call: the API's error type when it gave a known one
/// (`overloaded_error`, `rate_limit_error`, …), else the failure's kind (`connection`,
/// `timeout`, `truncated`, `decode`, `max_tokens`, `api`). Never the error's text, which a
/// server controls.
pub fn error_type(error: &crate::service::ServiceError) -> &'static str {
    use crate::ApiErrorType as T;
    use crate::service::ServiceErrorKind as K;
    match error.api_error_type() {
        Some(T::InvalidRequest) => "invalid_request_error",
        Some(T::Authentication) => "authentication_error",
        Some(T::Billing) => "billing_error",
        Some(T::Permission) => "permission_error",
        Some(T::NotFound) => "not_found_error",
        Some(T::RequestTooLarge) => "request_too_large",
        Some(T::RateLimit) => "rate_limit_error",
        Some(T::Api) => "api_error",
        Some(T::Timeout) => "timeout_error",
        Some(T::Overloaded) => "overloaded_error",
        _ => match error.kind() {
            K::Api => "api",
            K::Connection => "connection",
            K::Timeout => "timeout",
            K::Truncated => "truncated",
            K::Decode => "decode",
            K::MaxTokens => "max_tokens",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{ServiceError, ServiceErrorKind};

    #[test]
    fn error_types_name_the_class_never_the_text() {
        let timeout = ServiceError::new(ServiceErrorKind::Timeout, "sk-ant-secret timed out");
        assert_eq!(error_type(&timeout), "timeout");
        let truncated = ServiceError::new(ServiceErrorKind::Truncated, "cut");
        assert_eq!(error_type(&truncated), "truncated");
    }

    #[test]
    fn counts_saturate_into_i64() {
        assert_eq!(int(0), 0);
        assert_eq!(int(1_033), 1_033);
        assert_eq!(int(u64::MAX), i64::MAX);
    }

    #[test]
    fn usage_counts_name_what_the_response_reported() {
        let usage = crate::Usage::default()
            .with_input_tokens(7)
            .with_output_tokens(3)
            .with_cache_read_input_tokens(u64::MAX);
        assert_eq!(
            usage_counts(&usage).collect::<Vec<_>>(),
            [
                (GEN_AI_USAGE_OUTPUT_TOKENS, 3),
                (GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, i64::MAX),
            ]
        );
        assert_eq!(usage_counts(&crate::Usage::default()).count(), 0);
    }
}
