//! Token estimation: a fast estimate from sizes, corrected by the last usage the API reported.
//!
//! The estimate walks the values and adds byte lengths; it never serializes. Text counts one
//! token per [`BYTES_PER_TOKEN`] bytes (rounded up), images and documents a fixed
//! [`MEDIA_TOKENS`] each (their real cost depends on pixels and pages, which are not known
//! offline), and JSON values (tool inputs, tool schemas, server tool results, unknown blocks)
//! the length they would have as compact JSON. It errs on the high side for code and prose,
//! which is the safe side for a threshold.
//!
//! [`estimate_context`] is what the thresholds compare against: the API's own count of the
//! last response (`input + cache_creation + cache_read + output` tokens), plus the estimate of
//! what was appended since. Only when no response in the visible history reports usage does
//! it fall back to the estimate of everything.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use threadline_message::{Attachment, Message, SystemKind};
use threadline_wire::content::MediaSource;
use threadline_wire::service::ServiceError;
use threadline_wire::{
    Content, ContentBlock, CountTokensRequest, MessageParam, MessagesRequest, SystemPrompt,
    ToolDefinition,
};

use crate::units::since_last_boundary;

/// Bytes of text per token, the rough ratio for English prose and code.
pub const BYTES_PER_TOKEN: u64 = 4;

/// The fixed cost counted for one image or document block.
pub const MEDIA_TOKENS: u64 = 2_000;

/// The cost counted for a message's role and framing.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Tokens for `bytes` bytes of text.
pub fn text_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// The length `value` would have as compact JSON, without serializing it (strings are counted
/// unescaped; numbers at their shortest plausible width).
pub fn json_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 1 + items.iter().map(|v| json_len(v) + 1).sum::<usize>().max(1),
        Value::Object(map) => {
            1 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + json_len(v))
                .sum::<usize>()
                .max(1)
        }
    }
}

fn json_tokens(value: &Value) -> u64 {
    text_tokens(json_len(value))
}

/// The estimated tokens of one content block.
pub fn block_tokens(block: &ContentBlock) -> u64 {
    match block {
        ContentBlock::Text(b) => text_tokens(b.text.len()),
        ContentBlock::Image(_) => MEDIA_TOKENS,
        ContentBlock::Document(d) => match &*d.source {
            // A plain-text document is read as its text, when that is cheaper than the
            // fixed cost it is still counted at least as text.
            MediaSource::Text(t) => text_tokens(t.data.len()).max(MEDIA_TOKENS),
            _ => MEDIA_TOKENS,
        },
        ContentBlock::SearchResult(s) => {
            text_tokens(s.source.len() + s.title.len())
                + s.content.iter().map(block_tokens).sum::<u64>()
        }
        ContentBlock::ToolUse(u) => text_tokens(u.name.len() + u.id.len()) + json_tokens(&u.input),
        ContentBlock::ToolResult(r) => {
            text_tokens(r.tool_use_id.len()) + r.content.as_ref().map_or(0, content_tokens)
        }
        ContentBlock::Thinking(t) => text_tokens(t.thinking.len()),
        ContentBlock::RedactedThinking(r) => text_tokens(r.data.len()),
        ContentBlock::ServerToolUse(u) | ContentBlock::McpToolUse(u) => {
            text_tokens(u.name.len() + u.id.len()) + u.input.as_ref().map_or(0, json_tokens)
        }
        ContentBlock::ContainerUpload(c) => text_tokens(c.file_id.len()),
        ContentBlock::Compaction(c) => text_tokens(
            c.content.as_ref().map_or(0, String::len)
                + c.encrypted_content.as_ref().map_or(0, String::len),
        ),
        ContentBlock::Unknown(value) => json_tokens(value),
        other => other
            .server_tool_result()
            .map_or(0, |r| r.content.as_ref().map_or(0, json_tokens)),
    }
}

/// The estimated tokens of a message's or a tool result's content.
pub fn content_tokens(content: &Content) -> u64 {
    match content {
        Content::Text(text) => text_tokens(text.len()),
        Content::Blocks(blocks) => blocks.iter().map(block_tokens).sum(),
    }
}

/// The cost counted for the frame around an attachment's rendering (a `<system-reminder>`
/// tag and a sentence or two).
pub const ATTACHMENT_FRAME_TOKENS: u64 = 30;

/// The estimated tokens of an attachment as rendered for the model.
pub fn attachment_tokens(attachment: &Attachment) -> u64 {
    ATTACHMENT_FRAME_TOKENS
        + match attachment {
            Attachment::File { path, content, .. } => text_tokens(path.len() + content.len()),
            Attachment::Directory { path, entries, .. } => {
                text_tokens(path.len() + entries.iter().map(|e| e.len() + 1).sum::<usize>())
            }
            Attachment::NestedInstructions { path, content } => {
                text_tokens(path.len() + content.len())
            }
            Attachment::DateChange { date } => text_tokens(date.len()),
            Attachment::QueuedCommand { prompt } => text_tokens(prompt.len()),
            Attachment::TodoReminder { items } => text_tokens(
                items
                    .iter()
                    .map(|i| i.content.len() + i.status.len() + 4)
                    .sum(),
            ),
            Attachment::TokenUsage { .. } => 10,
            Attachment::Delta(delta) => text_tokens(
                delta
                    .added
                    .iter()
                    .map(|i| i.name.len() + i.description.len() + 4)
                    .sum::<usize>()
                    + delta.removed.iter().map(|r| r.len() + 2).sum::<usize>(),
            ),
            Attachment::AgentMention { agent } => text_tokens(agent.len()),
            Attachment::Reminder { text } => text_tokens(text.len()),
            Attachment::UiOnly { .. } => return 0,
            // A kind added later: count its JSON, the upper bound of what is rendered.
            other => serde_json::to_value(other).map_or(0, |v| json_tokens(&v)),
        }
}

/// The estimated tokens one internal message contributes to a request (zero for what
/// normalization drops: virtual messages, API errors, progress, tombstones, UI summaries and
/// system events other than local command output).
pub fn message_tokens(message: &Message) -> u64 {
    match message {
        Message::User(u) if !u.is_virtual => {
            MESSAGE_OVERHEAD_TOKENS + u.content.iter().map(block_tokens).sum::<u64>()
        }
        Message::Assistant(a) if !a.is_api_error => {
            MESSAGE_OVERHEAD_TOKENS + a.content.iter().map(block_tokens).sum::<u64>()
        }
        Message::System(s) => match &s.kind {
            SystemKind::LocalCommand { content } => {
                MESSAGE_OVERHEAD_TOKENS + text_tokens(content.len())
            }
            _ => 0,
        },
        Message::Attachment(a) => attachment_tokens(&a.attachment),
        _ => 0,
    }
}

/// The estimated tokens of internal messages.
pub fn estimate_messages(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// The estimated tokens of request messages.
pub fn estimate_params(messages: &[MessageParam]) -> u64 {
    messages
        .iter()
        .map(|m| MESSAGE_OVERHEAD_TOKENS + content_tokens(&m.content))
        .sum()
}

/// The estimated tokens of a system prompt.
pub fn system_tokens(system: &SystemPrompt) -> u64 {
    match system {
        SystemPrompt::Text(text) => text_tokens(text.len()),
        SystemPrompt::Blocks(blocks) => blocks.iter().map(|b| text_tokens(b.text.len())).sum(),
    }
}

/// The estimated tokens of tool definitions (names, descriptions and schemas).
pub fn tools_tokens(tools: &[ToolDefinition]) -> u64 {
    tools
        .iter()
        .map(|tool| match serde_json::to_value(tool) {
            Ok(value) => json_tokens(&value),
            Err(_) => 0,
        })
        .sum()
}

/// The estimated input tokens of a whole request: system prompt, tools and messages.
pub fn estimate_request(request: &MessagesRequest) -> u64 {
    request.system.as_ref().map_or(0, system_tokens)
        + request.tools.as_deref().map_or(0, tools_tokens)
        + estimate_params(&request.messages)
}

/// `input + cache_creation + cache_read` tokens of `usage`: the whole input the API counted
/// for the context the response leaves — with `usage.iterations`, the last non-compaction
/// pass's ([`threadline_wire::Usage::context_tokens`]: after a server-side compaction, the
/// summary onward, not the compaction pass's long input). `None` when it reported no
/// `input_tokens` and no iterations. Saturating: the numbers come from transcripts, which
/// may be damaged.
pub fn reported_input(usage: &threadline_wire::Usage) -> Option<u64> {
    if usage.input_tokens.is_none() && usage.iterations().is_none() {
        return None;
    }
    Some(usage.context_tokens())
}

/// Where the usage recorded in `visible` (the messages after the last compaction boundary of
/// `history`) starts to describe the context `visible` is: after the last
/// `microcompact_boundary` (content before it was cleared or removed locally), and after the
/// messages a compaction carried over from before its boundary — its verbatim tail ends
/// with the boundary's `last_message_id`, so every response up to that message's copy was
/// answered, and its usage counted, for the longer context before the compaction.
pub fn trusted_usage_start(history: &[Message], visible: &[Message]) -> usize {
    let after_removal = visible
        .iter()
        .rposition(|m| {
            matches!(m, Message::System(s) if matches!(s.kind, SystemKind::MicrocompactBoundary { .. }))
        })
        .map_or(0, |b| b + 1);
    let boundary = history
        .len()
        .checked_sub(visible.len() + 1)
        .and_then(|b| history.get(b));
    let after_carried = match boundary {
        Some(Message::System(s)) => match &s.kind {
            SystemKind::CompactBoundary {
                last_message_id: Some(last),
                ..
            } => visible
                .iter()
                .rposition(|m| m.id() == last)
                .map_or(0, |i| i + 1),
            _ => 0,
        },
        _ => 0,
    };
    after_removal.max(after_carried)
}

/// The context size the model sees for `history` (only what follows the last compaction
/// boundary), with `overhead` tokens of system prompt and tools.
///
/// The count is anchored on the API's own usage report: the last assistant message in the
/// visible history whose usage describes the visible context ([`trusted_usage_start`]: not
/// before a `microcompact_boundary`, not in the tail a compaction carried over) gives
/// `input + cache_creation + cache_read + output` tokens (which already include the system
/// prompt and tools), and the estimate of every message after it (fragments of that same
/// response excluded) is added. With no such usage — right after a compaction, before the
/// first answer to the compacted context — it is `overhead` plus the estimate of every
/// visible message.
pub fn estimate_context(history: &[Message], overhead: u64) -> u64 {
    let visible = since_last_boundary(history);
    let trusted_from = trusted_usage_start(history, visible);
    let anchor = visible
        .iter()
        .enumerate()
        .skip(trusted_from)
        .rev()
        .find_map(|(i, m)| match m {
            Message::Assistant(a) if !a.is_api_error => a.usage.as_ref().and_then(|u| {
                let total = reported_input(u)?.saturating_add(u.output_tokens.unwrap_or(0));
                Some((i, total, a.api_message_id.clone()))
            }),
            _ => None,
        });
    match anchor {
        Some((i, reported, api_id)) => {
            let since: u64 = visible[i + 1..]
                .iter()
                .filter(|m| {
                    !matches!(m, Message::Assistant(a)
                        if api_id.is_some() && a.api_message_id == api_id)
                })
                .map(message_tokens)
                .sum();
            reported.saturating_add(since)
        }
        None => overhead.saturating_add(estimate_messages(visible)),
    }
}

/// The tokens of the system prompt and tools a session's requests carried, inferred from
/// the first usage recorded in `history` that describes its context (see
/// [`trusted_usage_start`]): that request's reported input less the estimate of the messages
/// it was sent. `None` when no such usage is recorded. A transcript holds neither the system
/// prompt nor the tools, so this is how an estimate of a transcript's context counts them.
pub fn inferred_overhead(history: &[Message]) -> Option<u64> {
    let mut start = 0;
    for (i, message) in history.iter().enumerate() {
        if crate::units::is_compact_boundary(message) {
            start = i + 1;
            continue;
        }
        let Message::Assistant(a) = message else {
            continue;
        };
        if a.is_api_error {
            continue;
        }
        let Some(input) = a.usage.as_deref().and_then(reported_input) else {
            continue;
        };
        let before = &history[..i];
        let visible = &history[start..i];
        if i - start < trusted_usage_start(before, visible) {
            continue;
        }
        // Earlier fragments of the same response are its output, not its input.
        let sent: u64 = visible
            .iter()
            .filter(|m| {
                !matches!(m, Message::Assistant(b)
                    if a.api_message_id.is_some() && b.api_message_id == a.api_message_id)
            })
            .map(message_tokens)
            .sum();
        return Some(input.saturating_sub(sent));
    }
    None
}

/// A future returned by a [`TokenCounter`].
pub type CountFuture<'a> = Pin<Box<dyn Future<Output = Result<u64, ServiceError>> + Send + 'a>>;

/// An exact count through the API's `count_tokens` endpoint: the client implements it, the
/// estimate stays the default because counting costs a round trip (and has its own rate
/// limits).
pub trait TokenCounter {
    /// The input tokens of `request`, as the API counts them.
    fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_>;
}

/// The input tokens of `request`: counted by `counter` when there is one and it answers
/// (`(n, true)`), else estimated (`(n, false)`) — a failed count never fails the caller.
pub async fn count_or_estimate(
    counter: Option<&dyn TokenCounter>,
    request: &MessagesRequest,
) -> (u64, bool) {
    if let Some(counter) = counter
        && let Ok(n) = counter
            .count_tokens(CountTokensRequest::from(request))
            .await
    {
        return (n, true);
    }
    (estimate_request(request), false)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_huge_recorded_overhead_saturates_instead_of_overflowing() {
        let history = vec![Message::user_text("hi")];
        assert_eq!(estimate_context(&history, u64::MAX), u64::MAX);
    }

    use super::*;
    use threadline_message::tool_result_block;
    use threadline_wire::Usage;

    struct Fixed(Option<u64>);

    impl TokenCounter for Fixed {
        fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_> {
            let answer = match self.0 {
                Some(n) => Ok(n + request.messages.len() as u64),
                None => Err(ServiceError::new(
                    threadline_wire::service::ServiceErrorKind::Connection,
                    "connection reset",
                )),
            };
            Box::pin(std::future::ready(answer))
        }
    }

    #[test]
    fn an_exact_count_is_used_when_it_answers() {
        let request = MessagesRequest::new(
            "m",
            1,
            vec![MessageParam::user(vec![ContentBlock::text("x".repeat(40))])],
        );
        let block_on = futures::executor::block_on;
        assert_eq!(
            block_on(count_or_estimate(Some(&Fixed(Some(100))), &request)),
            (101, true)
        );
        let estimate = estimate_request(&request);
        assert_eq!(estimate, MESSAGE_OVERHEAD_TOKENS + 10);
        assert_eq!(
            block_on(count_or_estimate(Some(&Fixed(None)), &request)),
            (estimate, false)
        );
        assert_eq!(
            block_on(count_or_estimate(None, &request)),
            (estimate, false)
        );
    }

    #[test]
    fn text_counts_by_bytes_rounded_up() {
        assert_eq!(text_tokens(0), 0);
        assert_eq!(text_tokens(1), 1);
        assert_eq!(text_tokens(8), 2);
        assert_eq!(text_tokens(9), 3);
    }

    #[test]
    fn json_len_matches_compact_serialization_for_plain_values() {
        let value = serde_json::json!({"file_path": "src/lib.rs", "list": ["a", "bc"], "ok": true});
        let serialized = serde_json::to_string(&value).expect("serializes").len();
        // Numbers are counted at a fixed width; there are none here, so it is exact.
        assert_eq!(json_len(&value), serialized);
    }

    #[test]
    fn images_cost_a_fixed_amount_and_virtual_messages_nothing() {
        let image = threadline_testkit::messages::image();
        assert_eq!(block_tokens(&image), MEDIA_TOKENS);
        let mut message = Message::user_text("x".repeat(400));
        assert_eq!(message_tokens(&message), MESSAGE_OVERHEAD_TOKENS + 100);
        if let Message::User(u) = &mut message {
            u.is_virtual = true;
        }
        assert_eq!(message_tokens(&message), 0);
    }

    #[test]
    fn after_a_server_side_compaction_the_context_is_the_message_pass() {
        // The recorded ruby_llm exchange: the compaction pass read 99,195 tokens, the answer
        // 162 (the summary onward).
        let usage: Usage = serde_json::from_value(serde_json::json!({
            "input_tokens": 162, "output_tokens": 11, "iterations": [
                {"type": "compaction", "input_tokens": 99195, "output_tokens": 81},
                {"type": "message", "input_tokens": 162, "output_tokens": 11}]}))
        .expect("usage");
        assert_eq!(reported_input(&usage), Some(162));
        assert_eq!(reported_input(&Usage::default()), None);
    }

    #[test]
    fn the_estimate_is_anchored_on_the_last_reported_usage() {
        let mut answer = Message::assistant_fragment("msg_1", "m", vec![ContentBlock::text("ok")]);
        if let Message::Assistant(a) = &mut answer {
            a.usage = Some(Box::new(
                Usage::new()
                    .with_input_tokens(10)
                    .with_cache_read_input_tokens(50_000)
                    .with_cache_creation_input_tokens(1_000)
                    .with_output_tokens(200),
            ));
        }
        let appended = Message::user_blocks(vec![tool_result_block(
            "toolu_1",
            "y".repeat(4_000).as_str().into(),
            false,
        )]);
        let history = vec![Message::user_text("hi"), answer, appended.clone()];
        assert_eq!(
            estimate_context(&history, 999),
            51_210 + message_tokens(&appended)
        );
        // Without usage, the overhead and every message.
        let plain = vec![Message::user_text("hi"), appended.clone()];
        assert_eq!(
            estimate_context(&plain, 999),
            999 + estimate_messages(&plain)
        );
    }

    fn answered(id: &str, input: u64) -> Message {
        let mut answer = Message::assistant_fragment(id, "m", vec![ContentBlock::text("ok")]);
        if let Message::Assistant(a) = &mut answer {
            a.usage = Some(Box::new(
                Usage::new()
                    .with_input_tokens(10)
                    .with_cache_read_input_tokens(input - 10)
                    .with_cache_creation_input_tokens(0)
                    .with_output_tokens(5),
            ));
        }
        answer
    }

    #[test]
    fn after_a_compaction_usage_the_kept_tail_recorded_is_not_an_anchor() {
        let big = Message::user_text("z".repeat(400_000));
        let answer = answered("msg_1", 105_000);
        let prompt = Message::user_text("next");
        // What autocompact appends: boundary, summary, the tail (copies, same ids).
        let boundary = Message::system(SystemKind::CompactBoundary {
            trigger: threadline_message::CompactTrigger::Auto,
            pre_tokens: 105_000,
            last_message_id: Some(prompt.id().clone()),
        });
        let summary = Message::compact_summary("what happened");
        let mut history = vec![big, answer.clone(), prompt.clone(), boundary, summary];
        history.extend([answer.clone(), prompt.clone()]);
        let visible = since_last_boundary(&history);
        assert_eq!(trusted_usage_start(&history, visible), visible.len());
        let expected = 15_000 + estimate_messages(visible);
        assert_eq!(estimate_context(&history, 15_000), expected);
        assert!(expected < 20_000);
        // The first answer to the compacted context is an anchor again.
        let fresh = answered("msg_2", 15_100);
        let appended = Message::user_text("y".repeat(400));
        history.extend([fresh, appended.clone()]);
        assert_eq!(
            estimate_context(&history, 15_000),
            15_105 + message_tokens(&appended)
        );
        // The unseen prefix is inferred from the first usage, never from a carried copy.
        assert_eq!(
            inferred_overhead(&history),
            Some(105_000 - message_tokens(&history[0]))
        );
    }
}
