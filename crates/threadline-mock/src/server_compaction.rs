//! Server-side compaction (`compact_20260112`) in the mock.
//!
//! A request whose `context_management` carries the edit is counted from its last
//! `compaction` block on (the API ignores what precedes it), by the mock's estimate (a token
//! per four bytes of JSON). When the count reaches the edit's trigger (default 150,000), the
//! answer starts with a `compaction` block whose summary is the scenario step's
//! (`compaction_summary`) or an extractive one ([`extractive_summary`]); its usage has
//! `iterations` = [the compaction pass, the message pass] and the top-level figures are the
//! message pass's (as the API reports them); with `pause_after_compaction` the answer is the
//! block alone with `stop_reason: compaction` and only the compaction pass is billed (no
//! message pass ran: the top-level figures are zero). The step's scripted content is used up
//! by the pause: the next step answers the continuation.
//!
//! `count_tokens` with `context_management` applies existing compaction blocks and reports
//! `context_management.original_input_tokens`, the count before them.

use serde_json::{Value, json};
use threadline_wire::json_size::serialized_len;
use threadline_wire::request::{CompactEdit, ContextEdit, ContextManagement};
use threadline_wire::{
    Content, ContentBlock, CountTokensRequest, IterationKind, MessageParam, MessagesRequest,
    SystemPrompt, ToolDefinition, Usage, UsageIteration,
};

use crate::scenario::{Block, MessageStep};
use crate::usage::{UsageModel, estimate_tokens};

/// The API's default trigger.
const DEFAULT_TRIGGER: u64 = 150_000;
/// At most this many sentences in an extractive summary.
const MAX_SENTENCES: usize = 24;
/// At most this many characters per sentence of an extractive summary.
const MAX_SENTENCE_CHARS: usize = 200;

/// The `compact_20260112` edit of `management`, if any.
fn compact_edit(management: Option<&ContextManagement>) -> Option<&CompactEdit> {
    management?.edits.iter().find_map(|e| match e {
        ContextEdit::Compact(edit) => Some(edit),
        _ => None,
    })
}

/// The edit's trigger in input tokens.
fn trigger(edit: &CompactEdit) -> u64 {
    edit.trigger
        .as_ref()
        .and_then(|t| t.get("value"))
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TRIGGER)
}

/// The messages from the last `compaction` block on (that message's earlier blocks dropped);
/// all of them when there is none.
pub(crate) fn from_last_compaction(
    messages: &[std::sync::Arc<MessageParam>],
) -> Vec<std::sync::Arc<MessageParam>> {
    let last = messages.iter().enumerate().rev().find_map(|(i, m)| {
        blocks(&m.content)
            .iter()
            .rposition(|b| matches!(b, ContentBlock::Compaction(_)))
            .map(|j| (i, j))
    });
    let Some((i, j)) = last else {
        return messages.to_vec();
    };
    let mut kept = messages[i..].to_vec();
    if let Some(first) = kept.first_mut() {
        let kept_blocks = blocks(&first.content)[j..].to_vec();
        std::sync::Arc::make_mut(first).content = Content::Blocks(kept_blocks);
    }
    kept
}

/// The estimate of a request's input: a token per four bytes of its system, tools and
/// `messages`.
fn estimate(
    system: &Option<SystemPrompt>,
    tools: &Option<Vec<ToolDefinition>>,
    messages: &[std::sync::Arc<MessageParam>],
) -> u64 {
    estimate_tokens(serialized_len(system) + serialized_len(tools) + serialized_len(messages))
}

/// A message's blocks (none for the string shorthand, which holds no compaction block).
fn blocks(content: &Content) -> &[ContentBlock] {
    match content {
        Content::Blocks(blocks) => blocks,
        Content::Text(_) => &[],
    }
}

/// The mock's count of `request`'s input from its last compaction block on.
pub(crate) fn counted_input(request: &MessagesRequest) -> u64 {
    estimate(
        &request.system,
        &request.tools,
        &from_last_compaction(&request.messages.to_shared_vec()),
    )
}

/// A summary made of the first sentence of each user text (after the previous summary, if
/// the request holds one), bounded.
pub fn extractive_summary(messages: &[std::sync::Arc<MessageParam>]) -> String {
    let mut sentences: Vec<String> = Vec::new();
    for message in messages {
        let all = message.content.to_blocks();
        for block in &all {
            let user = message.role == threadline_wire::Role::User;
            let text = match block {
                ContentBlock::Compaction(c) => c.content.as_deref(),
                ContentBlock::Text(t) if user => Some(t.text.as_str()),
                _ => None,
            };
            let Some(text) = text else { continue };
            let first = text
                .split_inclusive(['.', '!', '?', '\n'])
                .map(str::trim)
                .find(|s| !s.is_empty());
            if let Some(first) = first {
                sentences.push(first.chars().take(MAX_SENTENCE_CHARS).collect());
            }
        }
    }
    let skip = sentences.len().saturating_sub(MAX_SENTENCES);
    let body = sentences[skip..].join(" ");
    format!("<summary>{body}</summary>")
}

/// How a step is answered when the request's compaction edit triggers: the step to script
/// (the compaction block first) and the usage to report.
pub(crate) struct Compacting {
    /// The step with its content replaced.
    pub(crate) step: MessageStep,
    /// The compaction pass's input (the count that reached the trigger).
    pub(crate) input: u64,
    /// The summary's output tokens.
    pub(crate) output: u64,
    /// The request the message pass sees: the summary, instead of what it replaced.
    pub(crate) after: MessagesRequest,
    /// Paused after the summary: no message pass ran.
    pub(crate) paused: bool,
}

/// The compaction the request triggers on this step, if any.
pub(crate) fn plan(step: &MessageStep, request: &MessagesRequest) -> Option<Compacting> {
    let edit = compact_edit(request.context_management.as_ref())?;
    let input = counted_input(request);
    if input < trigger(edit) {
        return None;
    }
    let kept = from_last_compaction(&request.messages.to_shared_vec());
    let summary = step
        .compaction_summary
        .clone()
        .unwrap_or_else(|| extractive_summary(&kept));
    let output = estimate_tokens(summary.len());
    let mut after = request.clone();
    after.messages = vec![MessageParam::user(vec![ContentBlock::text(
        summary.clone(),
    )])]
    .into();
    let mut step = step.clone();
    let block = Block::Compaction {
        content: Some(summary),
        encrypted_content: None,
    };
    let paused = edit.pause_after_compaction == Some(true);
    if paused {
        step.content = vec![block];
        step.stop_reason = Some("compaction".to_owned());
    } else {
        step.content.insert(0, block);
    }
    Some(Compacting {
        step,
        input,
        output,
        after,
        paused,
    })
}

impl Compacting {
    /// The usage of the answer: the message pass's (from `usage`, for the request after the
    /// summary) at the top level, and both passes in `iterations`. `output_tokens` is the
    /// whole answer's estimate (the summary included).
    pub(crate) fn usage(&self, usage: &dyn UsageModel, output_tokens: u64) -> Usage {
        let message_output = output_tokens.saturating_sub(self.output);
        let after_bytes = serde_json::to_vec(&self.after).map_or(0, |v| v.len());
        let pass = |kind, input, output, write, read| {
            UsageIteration::new()
                .with_kind(kind)
                .with_input_tokens(input)
                .with_output_tokens(output)
                .with_cache_creation_input_tokens(write)
                .with_cache_read_input_tokens(read)
        };
        let compaction = pass(IterationKind::Compaction, self.input, self.output, 0, 0);
        if self.paused {
            // Only the summary was written: the top level (the non-compaction passes) is zero.
            return Usage::new()
                .with_input_tokens(0)
                .with_output_tokens(0)
                .with_cache_creation_input_tokens(0)
                .with_cache_read_input_tokens(0)
                .with_iterations(vec![compaction]);
        }
        let mut top = usage.usage(&self.after, after_bytes, message_output);
        top.iterations = Some(vec![
            compaction,
            pass(
                IterationKind::Message,
                top.input_tokens.unwrap_or(0),
                message_output,
                top.cache_creation_input_tokens.unwrap_or(0),
                top.cache_read_input_tokens.unwrap_or(0),
            ),
        ]);
        top
    }
}

/// The `count_tokens` answer: `input_tokens` counted as the mock counts (`whole`, for the
/// whole body), and with `context_management` the count from the last compaction block on
/// plus `context_management.original_input_tokens` = the whole.
pub(crate) fn count_tokens_answer(request: &CountTokensRequest, whole: u64) -> Value {
    if request.context_management.is_none() {
        return json!({"input_tokens": whole});
    }
    let full = estimate(
        &request.system,
        &request.tools,
        &request.messages.to_shared_vec(),
    );
    let kept = estimate(
        &request.system,
        &request.tools,
        &from_last_compaction(&request.messages.to_shared_vec()),
    );
    let applied = whole.saturating_sub(full.saturating_sub(kept));
    json!({"input_tokens": applied, "context_management": {"original_input_tokens": whole}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Value, edit: Value) -> MessagesRequest {
        serde_json::from_value(json!({"model": "claude-sonnet-4-6", "max_tokens": 1024,
            "messages": messages, "context_management": {"edits": [edit]}}))
        .expect("a request")
    }

    #[test]
    fn counting_starts_at_the_last_compaction_block() {
        let big = "x".repeat(400_000);
        let messages = json!([
            {"role": "user", "content": big},
            {"role": "assistant", "content": [{"type": "text", "text": "before"},
                {"type": "compaction", "content": "<summary>s</summary>"},
                {"type": "text", "text": "after"}]},
            {"role": "user", "content": "next. And more."}
        ]);
        let edit = json!({"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000}});
        let r = request(messages, edit);
        let kept = from_last_compaction(&r.messages.to_shared_vec());
        assert_eq!(kept.len(), 2);
        assert_eq!(blocks(&kept[0].content).len(), 2);
        assert!(counted_input(&r) < 100);
        let step = match crate::Step::text("hi") {
            crate::Step::Message(m) => m,
            _ => unreachable!("a message step"),
        };
        assert!(plan(&step, &r).is_none());
        assert_eq!(
            extractive_summary(&kept),
            "<summary><summary>s</summary> next.</summary>"
        );
    }

    #[test]
    fn count_tokens_applies_compaction_blocks_and_reports_the_original_count() {
        let body = |management: Option<Value>| {
            let mut value = json!({"model": "claude-sonnet-4-6", "messages": [
                {"role": "user", "content": "x".repeat(40_000)},
                {"role": "assistant", "content": [{"type": "compaction", "content": "S."}]},
                {"role": "user", "content": "go on"}]});
            if let Some(m) = management {
                value["context_management"] = m;
            }
            serde_json::from_value::<CountTokensRequest>(value).expect("a count request")
        };
        assert_eq!(
            count_tokens_answer(&body(None), 10_500),
            json!({"input_tokens": 10_500})
        );
        let edits = json!({"edits": [{"type": "compact_20260112"}]});
        let answer = count_tokens_answer(&body(Some(edits)), 10_500);
        assert_eq!(
            answer["context_management"]["original_input_tokens"],
            10_500
        );
        let applied = answer["input_tokens"].as_u64().expect("a count");
        // The 40,000-character message (~10,000 tokens) is not counted.
        assert!(applied < 600, "{answer}");
    }

    #[test]
    fn a_request_over_the_trigger_compacts_and_pauses_when_asked() {
        let messages =
            json!([{"role": "user", "content": format!("First. {}", "y".repeat(220_000))}]);
        let edit = json!({"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000},
            "pause_after_compaction": true});
        let r = request(messages, edit);
        let step = match crate::Step::text("hi").with_compaction_summary("S.") {
            crate::Step::Message(m) => m,
            _ => unreachable!("a message step"),
        };
        let compacting = plan(&step, &r).expect("compacts");
        assert_eq!(compacting.step.stop_reason.as_deref(), Some("compaction"));
        assert_eq!(
            compacting.step.content,
            vec![Block::Compaction {
                content: Some("S.".into()),
                encrypted_content: None
            }]
        );
        let usage = compacting.usage(&crate::usage::EstimateUsage, compacting.output);
        // Paused: only the compaction pass ran and is billed; the top level is zero.
        let its = usage.iterations().expect("iterations");
        assert_eq!(its.len(), 1);
        assert_eq!(its[0].kind, Some(IterationKind::Compaction));
        assert_eq!(its[0].input_tokens, Some(compacting.input));
        assert_eq!(its[0].output_tokens, Some(compacting.output));
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (Some(0), Some(0))
        );
        assert_eq!(usage.billed().input_tokens, Some(compacting.input));
        assert!(compacting.input >= 50_000);
        // Not paused: the compaction pass, then the message pass the top level reports.
        let go = json!({"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000}});
        let messages =
            json!([{"role": "user", "content": format!("First. {}", "y".repeat(220_000))}]);
        let compacting = plan(&step, &request(messages, go)).expect("compacts");
        let usage = compacting.usage(&crate::usage::EstimateUsage, compacting.output + 3);
        let its = usage.iterations().expect("iterations");
        assert_eq!(its.len(), 2);
        assert_eq!(its[1].output_tokens, Some(3));
        assert_eq!(usage.output_tokens, Some(3));
        assert_eq!(usage.input_tokens, its[1].input_tokens);
    }
}
