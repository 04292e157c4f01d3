//! Token estimation: a fast estimate from sizes, corrected by the last usage the API reported.
//!
//! The estimate of the API's pieces (text, JSON, media, blocks, messages, tools, a whole
//! request) is the workspace's one, [`threadline_wire::tokens`], re-exported here: text one
//! token per [`BYTES_PER_TOKEN`] bytes (rounded up), images and documents of unknown size a
//! fixed [`MEDIA_TOKENS`], JSON values the length they would have as compact JSON, and
//! [`BLOCK_OVERHEAD_TOKENS`] per block and [`MESSAGE_OVERHEAD_TOKENS`] per message. It errs on
//! the high side for code and prose, which is the safe side for a threshold. This module adds
//! the internal message kinds ([`message_tokens`], [`attachment_tokens`]) on top of it.
//!
//! [`estimate_context`] is what the thresholds compare against: the API's own count of the
//! last response (`input + cache_creation + cache_read + output` tokens), plus the estimate of
//! what was appended since. Only when no response in the visible history reports usage does
//! it fall back to the estimate of everything.

use threadline_message::{Attachment, Message, MessageId, SystemKind};
use threadline_wire::service::CountTokens;
use threadline_wire::{CountTokensRequest, MessagesRequest};

use crate::units::since_last_boundary;

/// The workspace's one estimate of the API's pieces ([`threadline_wire::tokens`]), which this
/// module extends to the internal message kinds (attachments, local command output).
pub use threadline_wire::tokens::{
    BLOCK_OVERHEAD_TOKENS, BYTES_PER_TOKEN, MEDIA_TOKENS, MESSAGE_OVERHEAD_TOKENS, block_tokens,
    content_tokens, estimate_params, estimate_request, json_len, json_tokens, system_tokens,
    text_tokens, tools_tokens,
};

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
            Attachment::ClaudeCodeRendered { texts, .. } => {
                text_tokens(texts.iter().map(String::len).sum())
            }
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
                MESSAGE_OVERHEAD_TOKENS + BLOCK_OVERHEAD_TOKENS + text_tokens(content.len())
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
    let after_carried = carried_last(history, history.len().saturating_sub(visible.len()))
        .and_then(|last| visible.iter().rposition(|m| m.id() == last))
        .map_or(0, |i| i + 1);
    after_removal.max(after_carried)
}

/// The last message the compaction whose boundary ends just before `start` carried over
/// (its `last_message_id`), if `history[start - 1]` is such a boundary.
fn carried_last(history: &[Message], start: usize) -> Option<&MessageId> {
    match start.checked_sub(1).and_then(|b| history.get(b))? {
        Message::System(s) => match &s.kind {
            SystemKind::CompactBoundary {
                last_message_id, ..
            } => last_message_id.as_ref(),
            _ => None,
        },
        _ => None,
    }
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
    let start = history.len() - since_last_boundary(history).len();
    estimate_context_from(history, start, overhead)
}

/// [`estimate_context`] for a caller that knows where the visible history starts: `start`
/// must be the index after the last `compact_boundary` of `history` (0 without one), as the
/// loop tracks it; then the two are equal. The anchor is looked for from the end back, and the
/// look stops at the first message that settles it (the anchor, a `microcompact_boundary`, the
/// last message the compaction carried over), so the estimate costs what was added since the
/// last usable response, not the history: the loop asks for it every iteration.
pub fn estimate_context_from(history: &[Message], start: usize, overhead: u64) -> u64 {
    let start = start.min(history.len());
    let carried_last = carried_last(history, start);
    let mut visible_from = start;
    let mut anchor = None;
    for i in (start..history.len()).rev() {
        let message = &history[i];
        if Some(message.id()) == carried_last {
            break;
        }
        match message {
            Message::System(s) => match s.kind {
                SystemKind::MicrocompactBoundary { .. } => break,
                SystemKind::CompactBoundary { .. } => {
                    visible_from = i + 1;
                    break;
                }
                _ => {}
            },
            Message::Assistant(a) if !a.is_api_error => {
                if let Some(total) = a.usage.as_ref().and_then(|u| {
                    Some(reported_input(u)?.saturating_add(u.output_tokens.unwrap_or(0)))
                }) {
                    anchor = Some((i, total, a.api_message_id.as_ref()));
                    break;
                }
            }
            _ => {}
        }
    }
    match anchor {
        Some((i, reported, api_id)) => {
            let since: u64 = history[i + 1..]
                .iter()
                .filter(|m| {
                    !matches!(m, Message::Assistant(a)
                        if api_id.is_some() && a.api_message_id.as_ref() == api_id)
                })
                .map(message_tokens)
                .sum();
            reported.saturating_add(since)
        }
        None => overhead.saturating_add(estimate_messages(&history[visible_from..])),
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

/// The input tokens of `request`: counted by `counter` when there is one and it answers
/// (`(n, true)`), else estimated (`(n, false)`) — a failed count never fails the caller.
pub async fn count_or_estimate(
    counter: Option<&dyn CountTokens>,
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
    use threadline_wire::service::ServiceError;
    use threadline_wire::{ContentBlock, MessageParam, Usage};

    struct Fixed(Option<u64>);

    impl CountTokens for Fixed {
        fn count_tokens(
            &self,
            request: CountTokensRequest,
        ) -> threadline_wire::service::CountFuture<'_> {
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
        assert_eq!(
            estimate,
            MESSAGE_OVERHEAD_TOKENS + BLOCK_OVERHEAD_TOKENS + 10
        );
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
    fn images_cost_a_fixed_amount_and_virtual_messages_nothing() {
        let image = threadline_testkit::messages::image();
        assert_eq!(block_tokens(&image), MEDIA_TOKENS + BLOCK_OVERHEAD_TOKENS);
        let mut message = Message::user_text("x".repeat(400));
        assert_eq!(
            message_tokens(&message),
            MESSAGE_OVERHEAD_TOKENS + BLOCK_OVERHEAD_TOKENS + 100
        );
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
