//! On-demand compaction (`compact-2026-09-04`): the API writes the summary as one signed
//! `compaction` block, and the history continues from that block.
//!
//! Where the model supports it ([`Feature::OnDemandCompaction`]) and the agent asks for it
//! ([`CompactionMode::OnDemand`](crate::server::CompactionMode::OnDemand)), the autocompact
//! threshold sends [`compaction_request`] — the request the loop would send now, with the
//! top-level `compaction` field and without the parameters the API refuses beside it —
//! instead of a summary prompt. [`read_answer`] takes the block out of the answer, and
//! [`swapped`] writes the new array: a `compact_boundary`, the block in its own assistant
//! message (first in every later request, byte for byte), then the latest prompt group
//! restated verbatim and, when the turn had gone on past it, a short note to continue.
//!
//! The whole visible history is summarized, so no thinking written before the swap is ever
//! sent again: on a model that binds thinking to its prefix nothing can be refused (keeping
//! recent turns verbatim would keep their thinking valid only under conditions the API
//! checks on the next request). Any answer without a block (`max_tokens`,
//! `model_context_window_exceeded`, `tool_use`, `refusal`, `end_turn`, an error) is an
//! [`OnDemandError`]; the caller falls back to the local autocompact.

use std::time::SystemTime;

use threadline_message::{CompactTrigger, Message, SystemKind};
use threadline_wire::content::CompactionBlock;
use threadline_wire::model::{Feature, Model};
use threadline_wire::{
    CompactionParam, ContentBlock, MessagesRequest, ResponseMessage, StopReason,
};

use crate::estimate::estimate_messages;
use crate::stamp::derived_header;
use crate::units::{latest_prompt_group, since_last_boundary};

pub use threadline_message::CONTINUE_AFTER_SUMMARY;

/// The longest `instructions` the API accepts, in characters.
pub const MAX_INSTRUCTIONS_CHARS: usize = 16_384;

/// Whether on-demand compaction can run for `model` (the row claims it).
pub fn supported(model: &Model) -> bool {
    model.supports(Feature::OnDemandCompaction)
}

/// The on-demand compaction request for `base` (the request the loop would send now): the
/// same model, system prompt, tools, thinking and messages, `compaction: {type: summarize}`
/// with `instructions` (blank ones are left out, longer ones cut to the API's maximum), and
/// none of what the API refuses beside it: `context_management`, `stop_sequences`,
/// `output_config.format`, a forcing `tool_choice` (`any` or `tool`), a task budget's
/// `remaining`. Not streamed: the block comes whole either way.
pub fn compaction_request(base: &MessagesRequest, instructions: Option<&str>) -> MessagesRequest {
    let mut request = base.clone();
    let instructions = instructions
        .filter(|i| !i.trim().is_empty())
        .map(|i| i.chars().take(MAX_INSTRUCTIONS_CHARS).collect::<String>());
    request.compaction = Some(CompactionParam::summarize(instructions));
    request.context_management = None;
    request.stop_sequences = None;
    if request
        .tool_choice
        .as_ref()
        .is_some_and(|c| c.forces_tool_use())
    {
        request.tool_choice = None;
    }
    if let Some(config) = &mut request.output_config {
        config.format = None;
        if let Some(budget) = &mut config.task_budget {
            budget.remaining = None;
        }
    }
    request.stream = None;
    request
}

/// Why an on-demand compaction gave no block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OnDemandError {
    /// The API answered without a summary; `stop_reason` says why.
    #[error("on-demand compaction returned no summary (stop reason {stop_reason})")]
    NoSummary {
        /// The answer's `stop_reason` (`max_tokens`, `model_context_window_exceeded`,
        /// `tool_use`, `refusal`, `end_turn`), or `none`.
        stop_reason: String,
    },
    /// The answer's content is not exactly one signed `compaction` block.
    #[error("on-demand compaction answered with {found} instead of one signed compaction block")]
    Malformed {
        /// What the content held, in words.
        found: String,
    },
    /// The request failed (the API's error, or the transport's).
    #[error("on-demand compaction failed: {message}")]
    Failed {
        /// The error, as the service reported it.
        message: String,
    },
    /// There is nothing to summarize (no message since the last boundary).
    #[error("nothing to compact")]
    NothingToCompact,
}

impl OnDemandError {
    /// Whether the answer said why there is no summary (HTTP 200, empty content): the
    /// caller falls back to the local autocompact.
    pub fn is_no_summary(&self) -> bool {
        matches!(self, OnDemandError::NoSummary { .. })
    }
}

/// The signed block of an on-demand compaction's answer.
pub fn read_answer(answer: &ResponseMessage) -> Result<CompactionBlock, OnDemandError> {
    let stop = answer.stop_reason.as_ref();
    match answer.content.as_slice() {
        [ContentBlock::Compaction(block)]
            if block.signature.is_some() && stop == Some(&StopReason::Compaction) =>
        {
            Ok(block.clone())
        }
        [] => Err(OnDemandError::NoSummary {
            stop_reason: stop.map_or_else(|| "none".to_owned(), |s| s.as_str().to_owned()),
        }),
        blocks => Err(OnDemandError::Malformed {
            found: format!(
                "{} block(s) ({}), stop reason {}",
                blocks.len(),
                blocks
                    .iter()
                    .map(ContentBlock::tag)
                    .collect::<Vec<_>>()
                    .join(", "),
                stop.map_or("none", |s| s.as_str())
            ),
        }),
    }
}

/// What every swap appends first: the `compact_boundary` after `last_id` (the last message
/// summarized) and the block alone in an assistant message; with the context's estimate
/// before it.
fn opening(
    history: &[Message],
    last_id: &threadline_message::MessageId,
    block: CompactionBlock,
    overhead: u64,
    trigger: CompactTrigger,
    now: SystemTime,
) -> (Vec<Message>, u64) {
    let pre_tokens = crate::estimate::estimate_context(history, overhead);
    let messages = vec![
        Message::system(SystemKind::CompactBoundary {
            trigger,
            pre_tokens,
            last_message_id: Some(last_id.clone()),
        })
        .with_header(derived_header("compact-boundary", Some(last_id), now)),
        Message::assistant(vec![ContentBlock::Compaction(block)]).with_header(derived_header(
            "compaction-block",
            Some(last_id),
            now,
        )),
    ];
    (messages, pre_tokens)
}

/// The result of a swap: one call, nothing dropped or re-attached, the context estimated
/// after it.
fn compacted(messages: Vec<Message>, pre_tokens: u64, overhead: u64) -> crate::Compacted {
    let post_tokens = overhead.saturating_add(estimate_messages(&messages));
    crate::Compacted {
        messages,
        pre_tokens,
        post_tokens,
        summary_attempts: 1,
        dropped_messages: 0,
        reattached: Vec::new(),
    }
}

/// The history after an on-demand compaction of `history`'s visible part (what follows its
/// last boundary): what to append to `history`. `overhead` is the system prompt's and
/// tools' tokens, for the estimates.
pub fn swapped(
    history: &[Message],
    block: CompactionBlock,
    overhead: u64,
    trigger: CompactTrigger,
    now: SystemTime,
) -> Result<crate::Compacted, OnDemandError> {
    let visible = since_last_boundary(history);
    let Some(last_id) = visible.last().map(Message::id) else {
        return Err(OnDemandError::NothingToCompact);
    };
    let (mut messages, pre_tokens) = opening(history, last_id, block, overhead, trigger, now);
    let group = latest_prompt_group(visible);
    if let Some(group) = &group {
        messages.extend(visible[group.clone()].iter().cloned());
    }
    if group.is_none_or(|g| g.end < visible.len()) {
        messages.push(
            Message::user_text(CONTINUE_AFTER_SUMMARY).with_header(derived_header(
                "compact-continue",
                Some(last_id),
                now,
            )),
        );
    }
    Ok(compacted(messages, pre_tokens, overhead))
}

/// Where a keep-recent-turns compaction of `visible` (the messages after the last boundary)
/// cuts: the start of the verbatim tail [`plan_tail`](crate::tail::plan_tail) would keep,
/// moved back until the kept part starts with a user message that follows an assistant
/// message and separates no tool use from its result. The API requires the first kept
/// message to differ in role from the last summarized one, and the block itself is sent in
/// an assistant message: a kept assistant message would merge with it, and its thinking
/// would no longer come first. `None` when nothing would be summarized.
pub fn keep_recent_cut(visible: &[Message], tail: &crate::TailOptions) -> Option<usize> {
    let safe = crate::units::safe_cut_points(visible);
    let mut cut = crate::tail::plan_tail(visible, tail)
        .start
        .min(visible.len());
    let starts_a_user_turn = |cut: usize| {
        cut < visible.len()
            && matches!(visible[cut], Message::User(_))
            && matches!(visible[cut - 1], Message::Assistant(_))
            && safe[cut]
    };
    while cut > 0 && !starts_a_user_turn(cut) {
        cut -= 1;
    }
    (cut > 0 && cut >= floor(visible)).then_some(cut)
}

/// The smallest cut that leaves something to summarize and keeps the older part a prefix of
/// what was sent: after an earlier swap's block, past the user message holding the note
/// that swap ended with (the workspace context went there, and an older part cut before it
/// would place the context elsewhere), or past the first user message when there is no note.
fn floor(visible: &[Message]) -> usize {
    let leading_block = matches!(visible.first(), Some(Message::Assistant(a))
        if matches!(a.content.first(), Some(ContentBlock::Compaction(_))));
    if !leading_block {
        return 1;
    }
    let note = ContentBlock::text(CONTINUE_AFTER_SUMMARY);
    let user = |m: &Message| matches!(m, Message::User(_));
    visible
        .iter()
        .position(|m| matches!(m, Message::User(u) if u.content.contains(&note)))
        .or_else(|| visible.iter().position(user))
        .map_or(visible.len(), |i| i + 1)
}

/// The history after a keep-recent-turns compaction: what to append to `history`. The block
/// summarized exactly the messages the request built from `visible[..cut]` held (the caller
/// sent that request); `visible[cut..]` follows it verbatim, thinking included, so that each
/// kept thinking block still follows what it was written after (the API's keep-recent-turns
/// rules: nothing between the block and the kept turns, the kept turns unchanged, `system`
/// and tools unchanged). [`CONTINUE_AFTER_SUMMARY`] follows the kept turns: the user message
/// the workspace context goes into (`threadline_attach::UserContext::prepend_to`), which no
/// request sent before. A background compaction is the same swap: `cut` is the number of
/// messages the compaction request held, and what was appended since is kept.
pub fn swapped_keeping(
    history: &[Message],
    cut: usize,
    block: CompactionBlock,
    overhead: u64,
    trigger: CompactTrigger,
    now: SystemTime,
) -> Result<crate::Compacted, OnDemandError> {
    let visible = since_last_boundary(history);
    let cut = cut.min(visible.len());
    let Some(last_id) = visible[..cut].last().map(Message::id) else {
        return Err(OnDemandError::NothingToCompact);
    };
    let (mut messages, pre_tokens) = opening(history, last_id, block, overhead, trigger, now);
    messages.extend(visible[cut..].iter().cloned());
    // After the kept turns, the note: where the workspace context goes (the kept turns are
    // sent as they were, and a context put in front of them would edit them).
    messages.push(
        Message::user_text(CONTINUE_AFTER_SUMMARY).with_header(derived_header(
            "compact-continue",
            Some(last_id),
            now,
        )),
    );
    Ok(compacted(messages, pre_tokens, overhead))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_testkit::messages::{SessionBuilder, text, tool_use};
    use threadline_wire::model::ModelTable;
    use threadline_wire::{Content, MessageParam};

    fn block() -> CompactionBlock {
        serde_json::from_value(json!({"content": "Summary: parser", "signature": "sig"}))
            .expect("block")
    }

    #[test]
    fn the_request_is_the_loops_with_the_field_and_without_what_the_api_refuses() {
        let hello = MessageParam::user(vec![ContentBlock::text("hi")]);
        let mut base = MessagesRequest::new("claude-opus-5-5", 8192, vec![hello]);
        base.stream = Some(true);
        base.stop_sequences = Some(vec!["END".to_owned()]);
        base.tool_choice = Some(serde_json::from_value(json!({"type": "any"})).expect("choice"));
        base.context_management = Some(
            serde_json::from_value(json!({"edits": [{"type": "clear_tool_uses_20250919"}]}))
                .expect("edits"),
        );
        base.output_config = Some(
            serde_json::from_value(
                json!({"effort": "high", "format": {"type": "json_schema", "schema": {}},
                "task_budget": {"type": "tokens", "total": 50000, "remaining": 1000}}),
            )
            .expect("config"),
        );
        let request = compaction_request(&base, Some("Keep paths."));
        assert_eq!(request.messages, base.messages);
        assert_eq!(
            serde_json::to_value(&request.compaction).expect("json"),
            json!({"type": "summarize", "instructions": "Keep paths."})
        );
        assert_eq!(request.context_management, None);
        assert_eq!(request.stop_sequences, None);
        assert_eq!(request.tool_choice, None);
        assert_eq!(request.stream, None);
        let config = serde_json::to_value(&request.output_config).expect("json");
        assert_eq!(
            config,
            json!({"effort": "high", "task_budget": {"type": "tokens", "total": 50000}})
        );
        assert_eq!(
            threadline_wire::betas::required(&request),
            vec![
                threadline_wire::betas::TASK_BUDGETS,
                threadline_wire::betas::COMPACT_ON_DEMAND
            ]
        );
        // Blank instructions are left out; long ones cut to the maximum.
        let blank = compaction_request(&base, Some("  "));
        assert_eq!(blank.compaction.and_then(|c| c.instructions), None);
        let long = "x".repeat(MAX_INSTRUCTIONS_CHARS + 10);
        let cut = compaction_request(&base, Some(&long));
        assert_eq!(
            cut.compaction.and_then(|c| c.instructions).map(|i| i.len()),
            Some(MAX_INSTRUCTIONS_CHARS)
        );
    }

    #[test]
    fn only_one_signed_block_with_its_stop_reason_is_a_summary() {
        let answer = |content: serde_json::Value, stop: &str| -> ResponseMessage {
            serde_json::from_value(
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-opus-5-5", "content": content, "stop_reason": stop}),
            )
            .expect("answer")
        };
        let good = answer(
            json!([{"type": "compaction", "content": "Summary: parser", "signature": "sig"}]),
            "compaction",
        );
        assert_eq!(read_answer(&good), Ok(block()));
        let none = answer(json!([]), "max_tokens");
        assert_eq!(
            read_answer(&none),
            Err(OnDemandError::NoSummary {
                stop_reason: "max_tokens".to_owned()
            })
        );
        assert!(read_answer(&none).expect_err("no summary").is_no_summary());
        let unsigned = answer(
            json!([{"type": "compaction", "content": "s"}]),
            "compaction",
        );
        assert!(matches!(
            read_answer(&unsigned),
            Err(OnDemandError::Malformed { .. })
        ));
        let text_answer = answer(json!([{"type": "text", "text": "hi"}]), "end_turn");
        let error = read_answer(&text_answer).expect_err("not a block");
        assert_eq!(
            error.to_string(),
            "on-demand compaction answered with 1 block(s) (text), stop reason end_turn instead of one signed compaction block"
        );
    }

    #[test]
    fn the_kept_turns_start_with_a_user_message_after_an_assistant_message() {
        // A tail that would start with an assistant message (the last round's call) moves back
        // to the prompt before it: the block is sent in an assistant message, and a kept
        // assistant message would merge with it (found by a loop test: the kept thinking no
        // longer came first).
        let mut b = SessionBuilder::new();
        b.user("first task");
        let m = b.response_id();
        b.assistant(&m, vec![text("done")]);
        b.user("fix the parser");
        let m = b.response_id();
        let thinking = b.thinking("read it first");
        b.assistant(
            &m,
            vec![thinking, tool_use("t1", "Read", json!({"path": "a"}))],
        );
        b.tool_results(vec![threadline_message::tool_result_block(
            "t1",
            "contents".into(),
            false,
        )]);
        let history = b.into_messages();
        let tail = crate::TailOptions {
            min_tokens: 1,
            min_text_messages: 0,
            max_tokens: 100_000,
        };
        let planned = crate::tail::plan_tail(&history, &tail).start;
        let cut = keep_recent_cut(&history, &tail).expect("a cut");
        assert!(cut <= planned);
        assert!(matches!(history[cut], Message::User(_)));
        assert!(matches!(history[cut - 1], Message::Assistant(_)));
        assert_eq!(cut, 2, "the latest prompt starts the kept turns");
        // Nothing before the first prompt to summarize: no cut.
        let mut b = SessionBuilder::new();
        b.user("only task");
        let m = b.response_id();
        b.assistant(&m, vec![tool_use("t1", "Read", json!({"path": "a"}))]);
        b.tool_results(vec![threadline_message::tool_result_block(
            "t1",
            "contents".into(),
            false,
        )]);
        assert_eq!(keep_recent_cut(&b.into_messages(), &tail), None);
    }

    #[test]
    fn the_swapped_history_starts_with_the_block_and_restates_the_prompt() {
        let mut b = SessionBuilder::new();
        b.user("first task");
        let m = b.response_id();
        b.assistant(&m, vec![text("done")]);
        b.user("fix the parser");
        let m = b.response_id();
        b.assistant(&m, vec![tool_use("t1", "Read", json!({"path": "a"}))]);
        b.tool_results(vec![threadline_message::tool_result_block(
            "t1",
            "contents".into(),
            false,
        )]);
        let history = b.into_messages();
        let now = SystemTime::UNIX_EPOCH;
        let compacted = swapped(&history, block(), 0, CompactTrigger::Auto, now).expect("swapped");
        let appended = compacted.messages;
        assert!(matches!(&appended[0], Message::System(_)));
        assert!(
            matches!(&appended[1], Message::Assistant(a) if a.content == [ContentBlock::Compaction(block())])
        );
        assert_eq!(appended[2], history[2], "the latest prompt, verbatim");
        assert!(
            matches!(&appended[3], Message::User(u) if u.content == [ContentBlock::text(CONTINUE_AFTER_SUMMARY)])
        );
        // What the next request sends: the block first, byte for byte, then the prompt.
        let normalized = threadline_normalize::normalize(
            since_last_boundary(&appended),
            &threadline_normalize::Options::default(),
        );
        let first = serde_json::to_value(&normalized.messages[0]).expect("json");
        assert_eq!(
            first,
            json!({"role": "assistant", "content": [{"type": "compaction", "content": "Summary: parser", "signature": "sig"}]})
        );
        let Content::Blocks(prompt) = &normalized.messages[1].content else {
            panic!("blocks");
        };
        assert_eq!(prompt[0], ContentBlock::text("fix the parser"));
        // The same input, the same bytes.
        let again = swapped(&history, block(), 0, CompactTrigger::Auto, now).expect("swapped");
        assert_eq!(again.messages, appended);
        // At the start of a turn the prompt is the end: no note to continue.
        let fresh = swapped(&history[..3], block(), 0, CompactTrigger::Auto, now).expect("swapped");
        assert_eq!(fresh.messages.len(), 3);
        assert!(supported(
            ModelTable::builtin().resolve("claude-opus-5-5").model()
        ));
        assert!(!supported(
            ModelTable::builtin().resolve("claude-opus-4-5").model()
        ));
    }
}
