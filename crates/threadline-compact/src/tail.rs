//! The verbatim tail autocompact keeps after the summary.
//!
//! The tail starts at a safe cut point ([`crate::units`]): walking back from the end, it grows
//! until it holds at least `min_tokens` and `min_text_messages` messages with text, and never
//! past `max_tokens`. The last unit is always kept (the model is in the middle of it: its
//! thinking blocks must reach the API unchanged), and so is the latest typed prompt with the
//! meta messages and attachments that came with it: when the tail cannot reach back to them
//! within `max_tokens`, they are restated verbatim right after the summary, so the task is
//! never lost.

use threadline_message::Message;

use crate::estimate::message_tokens;
use crate::units::{has_text, latest_prompt_group, safe_cut_points};

/// Bounds on the verbatim tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailOptions {
    /// Grow the tail to at least this many tokens (default 10,000)…
    pub min_tokens: u64,
    /// …and at least this many messages with text (default 5)…
    pub min_text_messages: usize,
    /// …but never past this many tokens (default 40,000).
    pub max_tokens: u64,
}

impl Default for TailOptions {
    fn default() -> Self {
        TailOptions {
            min_tokens: 10_000,
            min_text_messages: 5,
            max_tokens: 40_000,
        }
    }
}

/// Where the tail starts, and whether the latest prompt must be restated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailPlan {
    /// The index (in the visible messages) the tail starts at.
    pub start: usize,
    /// The part of the latest prompt group ([`latest_prompt_group`]) before `start`, to be
    /// restated after the summary (empty when the tail holds it all).
    pub restated_prompt: std::ops::Range<usize>,
}

/// Plans the tail of `visible` (the messages after the last compaction boundary).
pub fn plan_tail(visible: &[Message], options: &TailOptions) -> TailPlan {
    let n = visible.len();
    let safe = safe_cut_points(visible);
    let mut tokens = 0u64;
    let mut texts = 0usize;
    let mut start = n;
    let mut chosen: Option<usize> = None;
    let mut units_seen = 0usize;
    for cut in (0..n).rev() {
        tokens += message_tokens(&visible[cut]);
        texts += usize::from(has_text(&visible[cut]));
        if !safe[cut] {
            continue;
        }
        units_seen += 1;
        // The last unit is kept whatever its size.
        if tokens > options.max_tokens && units_seen > 1 {
            break;
        }
        start = cut;
        if tokens >= options.min_tokens && texts >= options.min_text_messages {
            chosen = Some(cut);
            break;
        }
    }
    let start = chosen.unwrap_or(start);
    let restated_prompt = match latest_prompt_group(visible) {
        Some(group) if group.start < start => group.start..group.end.min(start),
        _ => 0..0,
    };
    TailPlan {
        start,
        restated_prompt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_message::tool_result_block;
    use threadline_testkit::messages::{SessionBuilder, text, tool_use};

    fn options(min: u64, max: u64) -> TailOptions {
        TailOptions {
            min_tokens: min,
            min_text_messages: 2,
            max_tokens: max,
        }
    }

    #[test]
    fn the_tail_stops_at_a_safe_point_within_bounds() {
        let mut b = SessionBuilder::new();
        for i in 0..6 {
            b.user(format!("request {i} {}", "x".repeat(400)));
            let msg = b.response_id();
            let id = format!("toolu_{i}");
            b.assistant(&msg, vec![tool_use(&id, "Read", json!({}))]);
            b.tool_results(vec![tool_result_block(
                &id,
                "y".repeat(400).as_str().into(),
                false,
            )]);
            let msg2 = b.response_id();
            b.assistant(&msg2, vec![text("done")]);
        }
        let visible = b.into_messages();
        let plan = plan_tail(&visible, &options(200, 10_000));
        // The last round: prompt, tool use, result, answer.
        assert_eq!(plan.start, visible.len() - 4);
        assert!(plan.restated_prompt.is_empty());
        let safe = safe_cut_points(&visible);
        assert!(safe[plan.start]);
    }

    #[test]
    fn a_prompt_beyond_the_maximum_is_restated() {
        let mut b = SessionBuilder::new();
        b.user("fix the parser");
        for i in 0..5 {
            let msg = b.response_id();
            let id = format!("toolu_{i}");
            b.assistant(&msg, vec![tool_use(&id, "Read", json!({}))]);
            b.tool_results(vec![tool_result_block(
                &id,
                "y".repeat(4_000).as_str().into(),
                false,
            )]);
        }
        let visible = b.into_messages();
        let plan = plan_tail(&visible, &options(100_000, 1_500));
        assert_eq!(plan.start, visible.len() - 2, "only the last unit");
        assert_eq!(plan.restated_prompt, 0..1);
    }
}
