//! Autocompact: summarize what came before, keep a verbatim tail.
//!
//! The new array is `compact_boundary` → the summary (a user message marked
//! `is_compact_summary`) → the latest prompt when the tail does not reach it → the verbatim
//! tail ([`crate::tail`]; without its thinking blocks on a model that binds thinking to its
//! prefix, [`crate::binding`]) → re-attached files ([`crate::reattach`]).
//!
//! The summary request is a fork of the main request: the same model, system prompt, tools,
//! `tool_choice`, thinking, `context_management` and messages — so it reads the main
//! request's cached prefix (the API's cache invalidates the messages on a changed
//! `tool_choice` or thinking setting) and needs the same betas — followed by
//! [`SUMMARY_PROMPT`] (which asks for text and no tool call), with only `max_tokens`
//! changed. When that request is itself too long, the oldest rounds
//! are dropped from it (enough to cover the reported excess, else a fifth of them) and it is
//! retried, at most [`AutocompactOptions::max_summary_retries`] times.
//!
//! A compaction that fails or does not shrink the context is a failure for the
//! [`CircuitBreaker`]; the driver refuses to run while the breaker is open.

use std::time::SystemTime;

use threadline_message::{CompactTrigger, Message, SystemKind};
use threadline_wire::model::Model;
use threadline_wire::request::ThinkingConfig;
use threadline_wire::{Content, ContentBlock, MessageParam, Messages, MessagesRequest, Role};

use crate::breaker::CircuitBreaker;
use crate::estimate::{
    estimate_context, estimate_messages, estimate_params, estimate_request, system_tokens,
    tools_tokens,
};
use crate::reattach::{CurrentFiles, ReattachOptions, reattachments};
use crate::stamp::derived_header;
use crate::summarizer::{
    SUMMARY_PROMPT, SummarizeError, Summarizer, extract_summary, summary_message_text,
};
use crate::tail::{TailOptions, plan_tail};
use crate::units::since_last_boundary;

/// How autocompact shapes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutocompactOptions {
    /// The verbatim tail's bounds.
    pub tail: TailOptions,
    /// The re-attached files' budgets.
    pub reattach: ReattachOptions,
    /// `max_tokens` of the summary request (default 20,000, capped at the model's maximum).
    pub summary_max_tokens: u64,
    /// Retries of a summary request that is too long (default 3).
    pub max_summary_retries: u32,
}

impl Default for AutocompactOptions {
    fn default() -> Self {
        AutocompactOptions {
            tail: TailOptions::default(),
            reattach: ReattachOptions::default(),
            summary_max_tokens: 20_000,
            max_summary_retries: 3,
        }
    }
}

/// What a compaction needs besides the history.
#[derive(Clone, Copy)]
pub struct CompactContext<'a> {
    /// The model the session talks to.
    pub model: &'a Model,
    /// The request the session would send now: its prefix is reused by the summary request,
    /// its system prompt and tools count in every estimate.
    pub base: &'a MessagesRequest,
    /// The result must be estimated below this many tokens (the autocompact threshold, or
    /// less after a prompt-too-long error).
    pub limit: u64,
    /// The time stamped on the messages written.
    pub now: SystemTime,
    /// Why compaction runs.
    pub trigger: CompactTrigger,
    /// Where re-attached files are read.
    pub files: &'a dyn CurrentFiles,
}

impl std::fmt::Debug for CompactContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactContext")
            .field("model", &self.model.id)
            .field("limit", &self.limit)
            .field("trigger", &self.trigger)
            .finish_non_exhaustive()
    }
}

/// The tokens of `request`'s system prompt and tools.
pub fn overhead_of(request: &MessagesRequest) -> u64 {
    request.system.as_ref().map_or(0, system_tokens)
        + request.tools.as_deref().map_or(0, tools_tokens)
}

/// A successful compaction.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Compacted {
    /// The new array: boundary, summary, (restated prompt), tail, re-attachments. What the
    /// model sees starts at the boundary.
    pub messages: Vec<Message>,
    /// The estimated context before.
    pub pre_tokens: u64,
    /// The estimated context after (system prompt and tools included).
    pub post_tokens: u64,
    /// Summary requests sent (1 when the first was not too long).
    pub summary_attempts: u32,
    /// Request messages dropped from the summary request to make it fit.
    pub dropped_messages: usize,
    /// The paths of the re-attached files.
    pub reattached: Vec<String>,
}

/// Why autocompact did not compact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AutocompactError {
    /// The circuit breaker is open after repeated failures.
    #[error("compaction is paused after {failures} consecutive failures")]
    BreakerOpen {
        /// Failures in a row.
        failures: u32,
    },
    /// There is nothing before the tail to summarize.
    #[error("nothing to compact: the whole context is the recent tail")]
    NothingToCompact,
    /// What every compaction keeps (the system prompt and tools, the latest prompt, the
    /// recent tail) is already at or over the limit: no summary of the rest can bring the
    /// context under it, so none is asked for.
    #[error("the part a compaction keeps is already {kept} tokens (limit {limit})")]
    KeptTooLarge {
        /// Estimated tokens of what would be kept.
        kept: u64,
        /// The limit.
        limit: u64,
    },
    /// The summary request stayed too long after dropping older rounds.
    #[error("the summary request is still too long after {retries} retries")]
    SummaryTooLong {
        /// Retries made.
        retries: u32,
    },
    /// The summarizer failed.
    #[error(transparent)]
    Summarize(SummarizeError),
    /// The summary was empty.
    #[error("the summarizer returned an empty summary")]
    EmptySummary,
    /// The result would not be smaller than the input.
    #[error("compaction would not shrink the context ({pre} -> {post} tokens)")]
    NotShrinking {
        /// Estimated tokens before.
        pre: u64,
        /// Estimated tokens after.
        post: u64,
    },
    /// The result is still at or above the limit (the tail that must be kept is too large).
    #[error("after compaction the context is still {post} tokens (limit {limit})")]
    StillTooLarge {
        /// Estimated tokens after.
        post: u64,
        /// The limit.
        limit: u64,
    },
}

impl AutocompactError {
    /// Whether the breaker stopped the attempt (no model call was made).
    pub fn is_breaker_open(&self) -> bool {
        matches!(self, AutocompactError::BreakerOpen { .. })
    }

    /// Whether this counts as a failure for the breaker.
    pub fn counts_as_failure(&self) -> bool {
        !matches!(
            self,
            AutocompactError::BreakerOpen { .. }
                | AutocompactError::NothingToCompact
                | AutocompactError::KeptTooLarge { .. }
        )
    }
}

/// The summary request for `base`: `base` unchanged (tools, `tool_choice`, thinking,
/// `context_management` and cache markers included), then [`SUMMARY_PROMPT`] (added to a
/// final user message, or as a new one), with `max_tokens` capped at `summary_max_tokens`
/// and the model's maximum — raised above a manual thinking budget, which must stay below
/// it.
pub fn summary_request(
    base: &MessagesRequest,
    model: &Model,
    summary_max_tokens: u64,
) -> MessagesRequest {
    let mut request = base.clone();
    let mut max_tokens = summary_max_tokens.min(model.max_output_tokens).max(1);
    if let Some(ThinkingConfig::Enabled(thinking)) = &request.thinking
        && thinking.budget_tokens >= max_tokens
    {
        max_tokens = thinking
            .budget_tokens
            .saturating_add(summary_max_tokens)
            .min(model.max_output_tokens)
            .max(max_tokens);
    }
    request.max_tokens = max_tokens;
    let prompt = ContentBlock::text(SUMMARY_PROMPT);
    match request.messages.last_mut() {
        Some(last) if last.role == Role::User => {
            let mut blocks = last.content.to_blocks();
            blocks.push(prompt);
            last.content = Content::Blocks(blocks);
        }
        _ => request.messages.push(MessageParam::user(vec![prompt])),
    }
    request
}

/// Drops the oldest rounds of a summary request (a round starts at a user message without
/// tool results): enough to remove `gap` tokens when known, else a fifth of the rounds, at
/// least one. The last round (which holds the summary prompt) is never dropped. Returns the
/// number of messages dropped (0 when nothing can go).
pub fn drop_oldest_rounds(messages: &mut Messages, gap: Option<u64>) -> usize {
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, m)| {
            m.role == Role::User
                && !m
                    .content
                    .to_blocks()
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult(_)))
        })
        .map(|(i, _)| i)
        .collect();
    if starts.is_empty() {
        return 0;
    }
    let cut = match gap {
        // The first round start whose prefix covers the gap (one running sum: linear).
        Some(gap) => {
            let mut dropped = 0;
            let mut from = 0;
            starts
                .iter()
                .copied()
                .find(|&s| {
                    dropped += estimate_params(messages.range(from..s));
                    from = s;
                    dropped >= gap
                })
                .unwrap_or(starts[starts.len() - 1])
        }
        None => {
            let rounds = starts.len() + 1;
            starts[(rounds / 5).max(1).min(starts.len()) - 1]
        }
    };
    *messages = messages.tail(cut);
    cut
}

/// The text an image or document is replaced with when a summary request must shrink.
pub const MEDIA_STRIPPED: &str = "[image or document removed for the summary]";

fn strip_blocks(blocks: &mut [ContentBlock]) -> bool {
    let mut changed = false;
    for block in blocks {
        match block {
            ContentBlock::Image(_) | ContentBlock::Document(_) => {
                *block = ContentBlock::text(MEDIA_STRIPPED);
                changed = true;
            }
            ContentBlock::ToolResult(r) => {
                if let Some(Content::Blocks(inner)) = &mut r.content {
                    changed |= strip_blocks(inner);
                }
            }
            _ => {}
        }
    }
    changed
}

/// Replaces every image and document of `messages` (nested ones in tool results included) by
/// [`MEDIA_STRIPPED`]; returns whether there was any.
pub fn strip_media(messages: &mut Messages) -> bool {
    let mut changed = false;
    for message in messages {
        if let Content::Blocks(blocks) = &mut message.content {
            changed |= strip_blocks(blocks);
        }
    }
    changed
}

/// Whether the context of `history` has reached `limit` (the autocompact threshold).
pub fn should_autocompact(history: &[Message], base: &MessagesRequest, limit: u64) -> bool {
    estimate_context(history, overhead_of(base)) >= limit
}

/// The tail as a compaction carries it: on a model that binds thinking to its prefix, the
/// tail's thinking would be refused after the new summary, so it goes and the rest of each
/// message stays.
fn carried_tail(tail: &[Message], model: &Model) -> Vec<Message> {
    if crate::binding::binds_thinking(model) {
        tail.iter().map(crate::binding::without_thinking).collect()
    } else {
        tail.to_vec()
    }
}

/// Runs one compaction of `history`; see the module docs. The breaker records the outcome.
pub async fn autocompact(
    history: &[Message],
    summarizer: &dyn Summarizer,
    context: &CompactContext<'_>,
    options: &AutocompactOptions,
    breaker: &mut CircuitBreaker,
) -> Result<Compacted, AutocompactError> {
    if breaker.is_open() {
        return Err(AutocompactError::BreakerOpen {
            failures: breaker.consecutive_failures(),
        });
    }
    let result = compact_once(history, summarizer, context, options).await;
    match &result {
        Ok(_) => breaker.record_success(),
        Err(e) if e.counts_as_failure() => breaker.record_failure(),
        Err(_) => {}
    }
    result
}

async fn compact_once(
    history: &[Message],
    summarizer: &dyn Summarizer,
    context: &CompactContext<'_>,
    options: &AutocompactOptions,
) -> Result<Compacted, AutocompactError> {
    let overhead = overhead_of(context.base);
    let visible = since_last_boundary(history);
    let pre_tokens = estimate_context(history, overhead);
    let plan = plan_tail(visible, &options.tail);
    if plan.start == 0 {
        return Err(AutocompactError::NothingToCompact);
    }
    let tail = carried_tail(&visible[plan.start..], context.model);
    let kept = overhead
        .saturating_add(estimate_messages(&visible[plan.restated_prompt.clone()]))
        .saturating_add(estimate_messages(&tail));
    if kept >= context.limit {
        return Err(AutocompactError::KeptTooLarge {
            kept,
            limit: context.limit,
        });
    }

    // The summary, retrying with older rounds dropped while the request is too long.
    let mut request = summary_request(context.base, context.model, options.summary_max_tokens);
    let mut attempts = 0u32;
    let mut retries = 0u32;
    let mut dropped = 0usize;
    let window = context.model.context_window;
    let answer = loop {
        // Known to be too long before sending: drop first, without spending a call.
        let estimated = estimate_request(&request) + request.max_tokens;
        let outcome = if estimated > window {
            Err(SummarizeError::PromptTooLong {
                actual: Some(estimated),
                limit: Some(window),
            })
        } else {
            attempts += 1;
            summarizer.summarize(&request).await
        };
        match outcome {
            Ok(answer) => break answer,
            Err(SummarizeError::PromptTooLong { actual, limit }) => {
                if retries >= options.max_summary_retries {
                    return Err(AutocompactError::SummaryTooLong { retries });
                }
                // Images and documents go first: they are costly and a summary can do
                // without them. Then the oldest rounds.
                if !strip_media(&mut request.messages) {
                    let gap = actual.zip(limit).map(|(a, l)| a.saturating_sub(l));
                    let n = drop_oldest_rounds(&mut request.messages, gap);
                    if n == 0 {
                        return Err(AutocompactError::SummaryTooLong { retries });
                    }
                    dropped += n;
                }
                retries += 1;
            }
            Err(other) => return Err(AutocompactError::Summarize(other)),
        }
    };
    let summary = extract_summary(&answer);
    if summary.is_empty() {
        return Err(AutocompactError::EmptySummary);
    }

    let last_id = visible.last().map(Message::id);
    let mut messages = vec![
        Message::system(SystemKind::CompactBoundary {
            trigger: context.trigger,
            pre_tokens,
            last_message_id: last_id.cloned(),
        })
        .with_header(derived_header("compact-boundary", last_id, context.now)),
    ];
    messages.push(
        Message::compact_summary(summary_message_text(&summary)).with_header(derived_header(
            "compact-summary",
            last_id,
            context.now,
        )),
    );
    messages.extend(visible[plan.restated_prompt.clone()].iter().cloned());
    messages.extend(tail);
    // A kept message stays retracted when its tombstone stood among the summarized ones.
    let missing = crate::retractions::missing_tombstones(visible, &messages);
    let missing: Vec<Message> = missing.into_iter().cloned().collect();
    messages.extend(missing);

    let before_reattach = overhead.saturating_add(estimate_messages(&messages));
    // Files fill the room left below the limit, keeping a margin of a tenth of it.
    let room = context
        .limit
        .saturating_sub(context.limit / 10)
        .saturating_sub(before_reattach);
    let files = reattachments(
        &visible[..plan.start],
        &visible[plan.start..],
        context.files,
        &options.reattach,
        room,
    );
    let reattached = files
        .iter()
        .filter_map(|a| match a {
            threadline_message::Attachment::File { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    for (i, file) in files.into_iter().enumerate() {
        messages.push(Message::attachment(file).with_header(derived_header(
            &format!("compact-reattach-{i}"),
            last_id,
            context.now,
        )));
    }

    let post_tokens = overhead.saturating_add(estimate_messages(&messages));
    if post_tokens >= pre_tokens {
        return Err(AutocompactError::NotShrinking {
            pre: pre_tokens,
            post: post_tokens,
        });
    }
    if post_tokens >= context.limit {
        return Err(AutocompactError::StillTooLarge {
            post: post_tokens,
            limit: context.limit,
        });
    }
    Ok(Compacted {
        messages,
        pre_tokens,
        post_tokens,
        summary_attempts: attempts,
        dropped_messages: dropped,
        reattached,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::model::ModelTable;

    use crate::send_check::{self, assert_send, empty_base};

    #[test]
    fn the_summary_request_keeps_the_prefix_and_every_setting_but_max_tokens() {
        let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
        let mut base = MessagesRequest::new(
            "claude-sonnet-4-5",
            8192,
            vec![
                MessageParam::user(vec![ContentBlock::text("hi")]),
                MessageParam::assistant(vec![ContentBlock::text("hello")]),
            ],
        );
        base.tools = Some(Vec::new());
        base.thinking = Some(ThinkingConfig::Enabled(
            threadline_wire::request::ThinkingEnabled::new(30_000),
        ));
        base.context_management = Some(
            serde_json::from_str(r#"{"edits":[{"type":"clear_thinking_20251015"}]}"#)
                .expect("edits"),
        );
        let request = summary_request(&base, model, 20_000);
        assert_eq!(request.messages.to_vec()[..2], base.messages.to_vec()[..]);
        assert_eq!(request.messages.len(), 3);
        // What the cache and the betas depend on is the main request's.
        assert_eq!(request.tool_choice, None);
        assert_eq!(request.tools, base.tools);
        assert_eq!(request.thinking, base.thinking);
        assert_eq!(request.context_management, base.context_management);
        // Above the thinking budget (20,000 would be below it), within the model's maximum.
        assert_eq!(request.max_tokens, 50_000.min(model.max_output_tokens));
        assert!(request.max_tokens > 30_000);
        base.thinking = None;
        assert_eq!(summary_request(&base, model, 20_000).max_tokens, 20_000);
    }

    /// Compile-time: the driver's future is `Send` (it can be awaited inside the query loop's
    /// `Send` hooks), whatever summarizer and files it is given. The future is never polled.
    #[test]
    fn the_autocompact_future_is_send() {
        let base = empty_base();
        let context = send_check::context(&base);
        let summarizer: &dyn Summarizer = &crate::summarizer::ExtractiveSummarizer;
        let options = AutocompactOptions::default();
        let mut breaker = CircuitBreaker::new();
        let future = autocompact(&[], summarizer, &context, &options, &mut breaker);
        assert_send(&future);
    }

    /// When what a compaction keeps (here the latest prompt, about 2,500 tokens) is already
    /// over the limit, no summary is asked for, and the breaker does not count it: a
    /// summary could not help, and pausing compaction over it would leave the session with
    /// no way down at the blocking limit. Under a higher limit the same history compacts.
    #[test]
    fn a_kept_part_over_the_limit_asks_for_no_summary() {
        let history = [
            Message::user_text("the first task ".repeat(200)),
            Message::assistant(vec![ContentBlock::text("done ".repeat(200))]),
            Message::user_text("the latest task ".repeat(600)),
        ];
        let base = empty_base();
        let context = send_check::context(&base);
        let summarizer = crate::summarizer::ScriptedSummarizer::new([Ok(
            "<summary>the first task is done</summary>".to_owned(),
        )]);
        let options = AutocompactOptions {
            tail: TailOptions {
                min_tokens: 100,
                min_text_messages: 1,
                max_tokens: 2_000,
            },
            ..AutocompactOptions::default()
        };
        let mut breaker = CircuitBreaker::new();
        let run = |context: &CompactContext<'_>, breaker: &mut CircuitBreaker| {
            futures::executor::block_on(autocompact(
                &history,
                &summarizer,
                context,
                &options,
                breaker,
            ))
        };
        let refused = run(&context, &mut breaker);
        let Err(AutocompactError::KeptTooLarge { kept, limit }) = refused else {
            panic!("{refused:?}");
        };
        assert!(kept >= limit && limit == 1_000, "{kept} {limit}");
        assert!(summarizer.requests().is_empty());
        assert_eq!(breaker.consecutive_failures(), 0);
        let roomy = CompactContext {
            limit: kept + 1_000,
            ..context
        };
        let compacted = run(&roomy, &mut breaker).expect("compacts under a higher limit");
        assert!(compacted.post_tokens < compacted.pre_tokens);
        assert_eq!(summarizer.requests().len(), 1);
    }

    #[test]
    fn dropping_rounds_keeps_a_valid_start_and_the_last_round() {
        let user = |t: &str| MessageParam::user(vec![ContentBlock::text(t)]);
        let assistant = |t: &str| MessageParam::assistant(vec![ContentBlock::text(t)]);
        let mut messages = Messages::from(vec![
            user("a"),
            assistant("1"),
            user("b"),
            assistant("2"),
            user("c"),
        ]);
        assert_eq!(drop_oldest_rounds(&mut messages, None), 2);
        assert_eq!(messages[0], user("b"));
        assert_eq!(drop_oldest_rounds(&mut messages, Some(1_000_000)), 2);
        assert_eq!(messages, vec![user("c")]);
        assert_eq!(drop_oldest_rounds(&mut messages, None), 0);
    }
}
