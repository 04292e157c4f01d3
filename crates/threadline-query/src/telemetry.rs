//! The loop's `tracing` spans and events, named after the OpenTelemetry GenAI semantic
//! conventions (the names are in [`threadline_wire::telemetry`], defined once for the
//! workspace):
//!
//! - `invoke_agent` — one run ([`Query::run`](crate::Query::run)): operation, provider,
//!   requested model, conversation id when the config names one.
//! - `chat` (exported as `chat {model}`) — one model call, a child of the run: requested
//!   model and `max_tokens` when it starts; response id, response model, stop reason and
//!   usage (input tokens counting cache reads and writes, as the conventions define them;
//!   output tokens; cache read and cache creation tokens) when it ends; `error.type` (the
//!   service error's kind) when it fails.
//! - `execute_tool` (exported as `execute_tool {tool}`) — one tool call, a child of the run
//!   (not of the model call whose stream it started in): tool name, tool use id, tool type;
//!   `error.type` when the result is an error.
//! - `threadline.compaction` events (INFO) — a context step that changed the history, with
//!   the step's name and the visible history's estimated tokens before and after.
//!
//! Never recorded (ARCHITECTURE.md, "Security"): message content, the system prompt, tool inputs and outputs,
//! error texts (a server may echo a secret), and the API key — only ids, names, counts and
//! error kinds.

use threadline_message::{Message, MessageId};
use threadline_wire::service::ServiceError;
use threadline_wire::telemetry as names;
use threadline_wire::{MessagesRequest, Usage};
use tracing::Span;
use tracing::field::Empty;

use crate::config::QueryConfig;
use crate::tool::ToolOutput;

/// The span of one run.
pub(crate) fn agent_span(config: &QueryConfig) -> Span {
    let span = tracing::info_span!(
        names::SPAN_INVOKE_AGENT,
        { names::OTEL_NAME } = names::OPERATION_INVOKE_AGENT,
        { names::OTEL_KIND } = "internal",
        { names::GEN_AI_OPERATION_NAME } = names::OPERATION_INVOKE_AGENT,
        { names::GEN_AI_PROVIDER_NAME } = names::PROVIDER_ANTHROPIC,
        { names::GEN_AI_REQUEST_MODEL } = config.model.as_str(),
        { names::GEN_AI_CONVERSATION_ID } = Empty,
    );
    if let Some(id) = &config.conversation_id {
        span.record(names::GEN_AI_CONVERSATION_ID, id.as_str());
    }
    span
}

/// The span of one model call; what the response says is recorded by [`record_response`].
pub(crate) fn chat_span(request: &MessagesRequest, turn: u32, conversation: Option<&str>) -> Span {
    let span = tracing::info_span!(
        names::SPAN_CHAT,
        { names::OTEL_NAME } = format!("{} {}", names::OPERATION_CHAT, request.model),
        { names::OTEL_KIND } = "client",
        { names::GEN_AI_OPERATION_NAME } = names::OPERATION_CHAT,
        { names::GEN_AI_PROVIDER_NAME } = names::PROVIDER_ANTHROPIC,
        { names::GEN_AI_REQUEST_MODEL } = request.model.as_str(),
        { names::GEN_AI_REQUEST_MAX_TOKENS } = names::int(request.max_tokens),
        { names::GEN_AI_CONVERSATION_ID } = Empty,
        { names::THREADLINE_TURN } = i64::from(turn),
        { names::GEN_AI_RESPONSE_ID } = Empty,
        { names::GEN_AI_RESPONSE_MODEL } = Empty,
        { names::GEN_AI_RESPONSE_FINISH_REASONS } = Empty,
        { names::GEN_AI_USAGE_INPUT_TOKENS } = Empty,
        { names::GEN_AI_USAGE_OUTPUT_TOKENS } = Empty,
        { names::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS } = Empty,
        { names::GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS } = Empty,
        { names::ERROR_TYPE } = Empty,
    );
    if let Some(id) = conversation {
        span.record(names::GEN_AI_CONVERSATION_ID, id);
    }
    span
}

/// Records a complete response on its `chat` span.
pub(crate) fn record_response(span: &Span, message: &threadline_wire::ResponseMessage) {
    span.record(names::GEN_AI_RESPONSE_ID, message.id.as_str());
    span.record(names::GEN_AI_RESPONSE_MODEL, message.model.as_str());
    if let Some(reason) = &message.stop_reason {
        span.record(names::GEN_AI_RESPONSE_FINISH_REASONS, reason.as_str());
    }
    if let Some(usage) = &message.usage {
        record_usage(span, usage);
    }
}

/// Records the usage figures a response reported.
pub(crate) fn record_usage(span: &Span, usage: &Usage) {
    if usage.input_tokens.is_some()
        || usage.cache_read_input_tokens.is_some()
        || usage.cache_creation_input_tokens.is_some()
    {
        span.record(
            names::GEN_AI_USAGE_INPUT_TOKENS,
            names::int(usage.total_input_tokens()),
        );
    }
    for (name, count) in names::usage_counts(usage) {
        span.record(name, count);
    }
}

/// Records a failed call: the error's class ([`names::error_type`]), never its text.
pub(crate) fn record_error(span: &Span, error: &ServiceError) {
    span.record(names::ERROR_TYPE, names::error_type(error));
}

/// Records a call the cancellation token stopped.
pub(crate) fn record_cancelled(span: &Span) {
    span.record(names::ERROR_TYPE, "cancelled");
}

/// The span of one tool call, a child of `parent` (the run's span).
pub(crate) fn tool_span(parent: &Span, name: &str, call_id: &str) -> Span {
    tracing::info_span!(
        parent: parent,
        names::SPAN_EXECUTE_TOOL,
        { names::OTEL_NAME } = format!("{} {name}", names::OPERATION_EXECUTE_TOOL),
        { names::OTEL_KIND } = "internal",
        { names::GEN_AI_OPERATION_NAME } = names::OPERATION_EXECUTE_TOOL,
        { names::GEN_AI_TOOL_NAME } = name,
        { names::GEN_AI_TOOL_CALL_ID } = call_id,
        { names::GEN_AI_TOOL_TYPE } = names::TOOL_TYPE_FUNCTION,
        { names::ERROR_TYPE } = Empty,
    )
}

/// Records a tool's result on its span: only whether it is an error.
pub(crate) fn record_tool_output(span: &Span, output: &ToolOutput) {
    if output.is_error {
        span.record(names::ERROR_TYPE, names::ERROR_TOOL_RESULT);
    }
}

/// A tool call answered without running its tool (unknown tool, input that does not fit the
/// schema, a call that could not be recorded): its span opens and closes at once.
pub(crate) fn unrun_tool(parent: &Span, name: &str, call_id: &str, error_type: &'static str) {
    let span = tool_span(parent, name, call_id);
    span.record(names::ERROR_TYPE, error_type);
}

/// The estimate of a session's visible history ([`estimate`]), kept with the session's
/// [`State`] as the history grows so that the compaction events, recorded around every
/// context step of every iteration, cost what was appended rather than a walk of the
/// history. The loop forgets it when a step edits the history in place; a moved compaction
/// boundary, or a history whose last counted message is no longer where it was (a caller
/// replaced the messages), starts it again. (As for the normalizer, a caller that edits a
/// message in place keeping its id builds a new `State`.)
#[derive(Debug, Clone, Default)]
pub(crate) struct VisibleTokens {
    /// The visible history's first index when `total` was counted.
    start: usize,
    /// The messages counted: `start..counted`.
    counted: usize,
    /// The id of message `counted - 1` (`None` when nothing was counted).
    last: Option<MessageId>,
    total: u64,
}

impl VisibleTokens {
    /// The estimate of the visible history (`messages` from `boundary` on) when compaction
    /// events are recorded (`None`: nobody listens, nothing is counted).
    pub(crate) fn traced(&mut self, messages: &[Message], boundary: usize) -> Option<u64> {
        tracing::enabled!(tracing::Level::INFO).then(|| self.of(messages, boundary))
    }

    /// The estimate of the visible history (`messages` from `boundary` on): what was
    /// counted, plus what was appended since.
    pub(crate) fn of(&mut self, messages: &[Message], boundary: usize) -> u64 {
        let start = boundary.min(messages.len());
        let same = self.start == start
            && self.counted <= messages.len()
            && self.counted.checked_sub(1).map(|i| messages[i].id()) == self.last.as_ref();
        if !same {
            *self = VisibleTokens {
                start,
                counted: start,
                last: None,
                total: 0,
            };
        }
        self.total = self
            .total
            .saturating_add(estimate(&messages[self.counted..]));
        self.counted = messages.len();
        self.last = messages.last().map(|m| m.id().clone());
        self.total
    }

    /// Forgets the count (a step edited messages in place): nothing is counted, so the next
    /// estimate walks the visible history.
    pub(crate) fn forget(&mut self) {
        *self = VisibleTokens::default();
    }
}

/// A context step changed the history.
pub(crate) fn compaction(step: &'static str, turn: u32, before: u64, after: u64) {
    tracing::info!(
        name: names::EVENT_COMPACTION,
        {
            { names::COMPACTION_STEP } = step,
            { names::THREADLINE_TURN } = i64::from(turn),
            { names::COMPACTION_TOKENS_BEFORE } = names::int(before),
            { names::COMPACTION_TOKENS_AFTER } = names::int(after),
        },
        "context step changed the history"
    );
}

/// The estimated tokens of `visible` (the workspace's one estimate, `threadline_wire::tokens`):
/// the user and assistant blocks, about four bytes a token.
pub(crate) fn estimate(visible: &[Message]) -> u64 {
    visible
        .iter()
        .flat_map(|message| match message {
            Message::User(user) => user.content.as_slice(),
            Message::Assistant(assistant) => assistant.content.as_slice(),
            _ => &[],
        })
        .map(threadline_wire::tokens::block_tokens)
        .fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::sample::Index;
    use threadline_message::{CompactTrigger, SystemKind};
    use threadline_testkit::messages::any_session;
    use threadline_wire::ContentBlock;

    use super::*;
    use crate::state::State;

    /// What the loop does to a run's history between two estimates.
    #[derive(Debug, Clone)]
    enum Op {
        /// Appends the next message of the session.
        Append,
        /// Replaces a message's content in place with `len` bytes of text (then forgets).
        Edit(Index, usize),
        /// Appends a compaction boundary (the visible history starts after it).
        Compact,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => Just(Op::Append),
            2 => (any::<Index>(), 0usize..4_000).prop_map(|(at, len)| Op::Edit(at, len)),
            1 => Just(Op::Compact),
        ]
    }

    proptest! {
        #[test]
        fn the_kept_estimate_equals_a_walk_of_the_visible_history(
            session in any_session(),
            ops in prop::collection::vec(op(), 0..60),
        ) {
            let mut state = State::default();
            let mut tokens = VisibleTokens::default();
            let mut next = session.iter().cycle();
            for op in ops {
                match op {
                    Op::Append => {
                        if let Some(message) = next.next() {
                            state.messages.push(message.clone());
                        }
                    }
                    Op::Edit(at, len) => {
                        if !state.messages.is_empty() {
                            let i = at.index(state.messages.len());
                            let text = vec![ContentBlock::text("x".repeat(len))];
                            match &mut state.messages[i] {
                                Message::User(user) => user.content = text,
                                Message::Assistant(assistant) => assistant.content = text,
                                _ => {}
                            }
                            tokens.forget();
                        }
                    }
                    Op::Compact => {
                        state.messages.push(Message::system(SystemKind::CompactBoundary {
                            trigger: CompactTrigger::Auto,
                            pre_tokens: 1,
                            last_message_id: None,
                        }));
                        state.compaction.boundary = state.messages.len();
                    }
                }
                prop_assert_eq!(
                    tokens.of(&state.messages, state.compaction.boundary),
                    estimate(state.visible())
                );
            }
        }
    }
}
