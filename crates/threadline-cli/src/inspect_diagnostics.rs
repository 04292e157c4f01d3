//! The API's cache diagnostics recorded in a transcript, beside `inspect`'s own prediction.
//!
//! A threadline transcript of a run with cache diagnostics has a `cache_diagnosis` system
//! record after each response (`api_message_id`, the response's `diagnostics` as the API sent
//! it, the loop's own prediction and whether they agreed). For each request whose response has
//! one, the report adds `diagnostics`: the recorded reason, the loop's prediction, and
//! `inspect`'s own — its simulator's break cause for the request, at the level the API
//! reports (`model`, `system`, `tools`, `messages`, `other`; `none` when it saw no change in
//! the request's structure) — with whether the recorded reason agrees with it. The simulator
//! does not see the tools and system prompt (the unseen prefix), so a `tools_changed` or
//! `system_changed` it cannot know of reads as a disagreement: the record says what the API
//! saw that the transcript does not show.

use std::collections::HashMap;

use serde_json::{Value, json};
use threadline::query::{Agreement, Prediction};
use threadline_cache::CacheBreak;
use threadline_message::{Message, SystemKind};
use threadline_wire::diagnostics::CacheDiagnosis;

/// One recorded `cache_diagnosis` record.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The response's `diagnostics`, as the API sent it.
    pub diagnostics: Value,
    /// The loop's prediction when it ran (`none`, a part, or absent).
    pub predicted: Option<String>,
    /// The loop's verdict then.
    pub agreement: String,
}

/// The transcript's `cache_diagnosis` records, by the response's API message id and by its
/// request id (what a request of the report is keyed by).
pub fn recorded(messages: &[Message]) -> HashMap<String, Recorded> {
    let mut by_id: HashMap<String, Recorded> = HashMap::new();
    for message in messages {
        if let Message::System(s) = message
            && let SystemKind::CacheDiagnosis {
                api_message_id,
                diagnostics,
                predicted,
                agreement,
            } = &s.kind
        {
            by_id.insert(
                api_message_id.clone(),
                Recorded {
                    diagnostics: diagnostics.clone(),
                    predicted: predicted.clone(),
                    agreement: agreement.clone(),
                },
            );
        }
    }
    let aliases: Vec<(String, String)> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some((a.request_id.clone()?, a.api_message_id.clone()?)),
            _ => None,
        })
        .collect();
    for (request, api) in aliases {
        if let Some(found) = by_id.get(&api).cloned() {
            by_id.entry(request).or_insert(found);
        }
    }
    by_id
}

/// `inspect`'s own prediction for a request whose simulated step found `found`.
pub fn prediction(found: Option<&CacheBreak>) -> Prediction {
    match found.and_then(|b| b.cause.prompt_part()) {
        Some(part) => Prediction::Changed(part),
        None => Prediction::NoDivergence,
    }
}

/// The row's `diagnostics`: the recorded reason beside the loop's and `inspect`'s predictions.
pub fn row(recorded: &Recorded, found: Option<&CacheBreak>) -> Value {
    let reason = CacheDiagnosis::from_value(Some(&recorded.diagnostics));
    let ours = prediction(found);
    json!({
        "recorded": recorded.diagnostics,
        "reason": reason_name(&reason),
        "loop_predicted": recorded.predicted,
        "loop_agreement": recorded.agreement,
        "inspect_predicted": ours.as_record(),
        "inspect_agreement": Agreement::of(&reason, ours).as_str(),
    })
}

/// `none` (no divergence), `pending`, or the reason's type.
fn reason_name(reason: &CacheDiagnosis) -> String {
    match reason {
        CacheDiagnosis::Miss(reason) => reason.tag().to_owned(),
        CacheDiagnosis::Pending => "pending".to_owned(),
        _ => "none".to_owned(),
    }
}

/// The table's line for a row's `diagnostics` (empty when it has none).
pub fn render(row: &Value) -> String {
    let d = &row["diagnostics"];
    if !d.is_object() {
        return String::new();
    }
    let missed = d["recorded"]["cache_miss_reason"]["cache_missed_input_tokens"]
        .as_u64()
        .map_or(String::new(), |n| format!(" (~{n} tokens)"));
    format!(
        "      diagnostics: {}{missed} | loop predicted {} ({}) | inspect predicts {} ({})\n",
        crate::terminal_text::terminal_safe(d["reason"].as_str().unwrap_or("?"), false),
        d["loop_predicted"].as_str().unwrap_or("-"),
        d["loop_agreement"].as_str().unwrap_or("-"),
        d["inspect_predicted"].as_str().unwrap_or("-"),
        d["inspect_agreement"].as_str().unwrap_or("-"),
    )
}
