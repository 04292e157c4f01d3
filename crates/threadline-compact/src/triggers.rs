//! When each layer would trigger, for a history: what `threadline inspect` reports.

use std::time::SystemTime;

use threadline_message::Message;
use threadline_wire::model::Model;
use threadline_wire::{Content, ContentBlock};

use crate::budget::{BudgetOptions, would_store};
use crate::estimate::estimate_context;
use crate::microcompact::{CLEARED_PLACEHOLDER, MicrocompactOptions};
use crate::thresholds::{Level, Thresholds};
use crate::ttl::cache_expires_at;
use crate::units::{since_last_boundary, tool_names};

/// Where a history stands with respect to every layer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TriggerReport {
    /// The estimated context (anchored on the last reported usage).
    pub tokens: u64,
    /// The model's thresholds.
    pub thresholds: Thresholds,
    /// Where `tokens` stands.
    pub level: Level,
    /// Tokens left before autocompact triggers (0 when it would).
    pub tokens_until_autocompact: u64,
    /// Results not yet sent that the budget would store (tool use ids).
    pub budget_would_store: Vec<String>,
    /// Results of clearable tools microcompact would clear (beyond the most recent ones).
    pub microcompact_clearable: Vec<String>,
    /// When the cache of the last request expires (the time-based microcompact may run from
    /// then on), if known.
    pub cache_expires_at: Option<SystemTime>,
    /// Whether the time-based microcompact would run at `now`.
    pub microcompact_due: bool,
}

/// Reports when each layer would trigger for `history` on `model`, with `overhead` tokens of
/// system prompt and tools, at `now`.
pub fn triggers(
    history: &[Message],
    model: &Model,
    overhead: u64,
    now: SystemTime,
    budget: &BudgetOptions,
    micro: &MicrocompactOptions,
) -> TriggerReport {
    let thresholds = Thresholds::for_model(model);
    let tokens = estimate_context(history, overhead);
    let visible = since_last_boundary(history);
    let names = tool_names(visible);

    let budget_would_store = would_store(visible, budget);
    let mut clearable = Vec::new();
    for message in visible {
        let Message::User(u) = message else { continue };
        for block in &u.content {
            let ContentBlock::ToolResult(r) = block else {
                continue;
            };
            let Some(content) = &r.content else { continue };
            let tool = names.get(r.tool_use_id.as_str()).copied().unwrap_or("");
            if micro.tools.contains(tool) {
                clearable.push((
                    r.tool_use_id.clone(),
                    matches!(content, Content::Text(t) if t == CLEARED_PLACEHOLDER),
                ));
            }
        }
    }
    // As microcompact does: all but the most recent `keep_recent`, less those already cleared.
    let keep_from = clearable.len().saturating_sub(micro.keep_recent);
    let clearable: Vec<String> = clearable
        .into_iter()
        .take(keep_from)
        .filter(|(_, cleared)| !cleared)
        .map(|(id, _)| id)
        .collect();
    let expires = cache_expires_at(history, &micro.cache_ttl);
    TriggerReport {
        tokens,
        thresholds,
        level: thresholds.level(tokens),
        tokens_until_autocompact: thresholds.autocompact.saturating_sub(tokens),
        budget_would_store,
        microcompact_due: !clearable.is_empty() && expires.is_some_and(|at| now >= at),
        microcompact_clearable: clearable,
        cache_expires_at: expires,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_message::{Header, tool_result_block};
    use threadline_testkit::messages::{SessionBuilder, text, tool_use};
    use threadline_wire::model::ModelTable;

    #[test]
    fn reports_each_layer() {
        let mut b = SessionBuilder::new();
        b.user("read them all");
        for i in 0..7 {
            let msg = b.response_id();
            let id = format!("toolu_{i}");
            b.assistant(&msg, vec![tool_use(&id, "Read", json!({}))]);
            b.tool_results(vec![tool_result_block(
                &id,
                "x".repeat(400).as_str().into(),
                false,
            )]);
        }
        let msg = b.response_id();
        b.assistant(&msg, vec![text("done")]);
        // A fresh result over the budget, after the last answer.
        b.tool_results(vec![tool_result_block(
            "toolu_9",
            "y".repeat(60_000).as_str().into(),
            false,
        )]);
        let mut history = b.into_messages();
        let last_answer = history.len() - 2;
        history[last_answer] = history[last_answer]
            .clone()
            .with_header(Header::with("answer", "2026-01-01T10:00:00.000Z"));
        let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
        let at = |t: &str| humantime::parse_rfc3339(t).expect("time");
        let report = triggers(
            &history,
            model,
            1_000,
            at("2026-01-01T10:01:00Z"),
            &BudgetOptions::default(),
            &MicrocompactOptions::default(),
        );
        assert_eq!(report.budget_would_store, ["toolu_9"]);
        assert_eq!(report.microcompact_clearable, ["toolu_0", "toolu_1"]);
        assert_eq!(report.cache_expires_at, Some(at("2026-01-01T10:05:00Z")));
        assert!(!report.microcompact_due, "the cache is still warm");
        assert_eq!(report.level, Level::Ok);
        assert_eq!(report.tokens_until_autocompact, 167_000 - report.tokens);
        let later = triggers(
            &history,
            model,
            1_000,
            at("2026-01-01T10:06:00Z"),
            &BudgetOptions::default(),
            &MicrocompactOptions::default(),
        );
        assert!(later.microcompact_due);
    }
}
