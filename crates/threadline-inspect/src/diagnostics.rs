//! The API's cache diagnostics recorded in a transcript, beside the report's own prediction.
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

use serde::Serialize;
use serde_json::Value;
use threadline_cache::{Agreement, CacheBreak, Prediction};
use threadline_message::{Message, SystemKind};
use threadline_wire::diagnostics::CacheDiagnosis;

/// One recorded `cache_diagnosis` record.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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
    if by_id.is_empty() {
        // Nothing recorded (most transcripts): no alias to add.
        return by_id;
    }
    for message in messages {
        if let Message::Assistant(a) = message
            && let (Some(request), Some(api)) = (&a.request_id, &a.api_message_id)
            && let Some(found) = by_id.get(api).cloned()
        {
            by_id.entry(request.clone()).or_insert(found);
        }
    }
    by_id
}

/// A request's `diagnostics`: the recorded reason beside the loop's and `inspect`'s
/// predictions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DiagnosticsRow {
    /// The response's `diagnostics`, as the API sent it.
    pub recorded: Value,
    /// The recorded reason: `none` (no divergence), `pending`, or the reason's type.
    pub reason: String,
    /// The loop's prediction when it ran.
    pub loop_predicted: Option<String>,
    /// The loop's verdict then.
    pub loop_agreement: String,
    /// `inspect`'s prediction: `none` or the part its simulator's break names.
    pub inspect_predicted: Option<String>,
    /// Whether the recorded reason agrees with it: `agrees`, `disagrees` or `inconclusive`.
    pub inspect_agreement: String,
}

impl DiagnosticsRow {
    /// The row of `recorded` for a request whose simulated step found `found`.
    pub fn of(recorded: &Recorded, found: Option<&CacheBreak>) -> DiagnosticsRow {
        let reason = CacheDiagnosis::from_value(Some(&recorded.diagnostics));
        let ours = Prediction::of_break(found);
        DiagnosticsRow {
            recorded: recorded.diagnostics.clone(),
            reason: reason_name(&reason),
            loop_predicted: recorded.predicted.clone(),
            loop_agreement: recorded.agreement.clone(),
            inspect_predicted: ours.as_record().map(str::to_owned),
            inspect_agreement: Agreement::of(&reason, ours).as_str().to_owned(),
        }
    }

    /// The cache-missed input tokens the recorded reason names, if it does.
    pub fn missed_tokens(&self) -> Option<u64> {
        self.recorded
            .get("cache_miss_reason")
            .and_then(|reason| reason.get("cache_missed_input_tokens"))
            .and_then(Value::as_u64)
    }
}

/// `none` (no divergence), `pending`, or the reason's type.
fn reason_name(reason: &CacheDiagnosis) -> String {
    match reason {
        CacheDiagnosis::Miss(reason) => reason.tag().to_owned(),
        CacheDiagnosis::Pending => "pending".to_owned(),
        _ => "none".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use threadline_cache::BreakCause;
    use threadline_message::Message;

    use super::*;

    fn record(id: &str, diagnostics: Value, predicted: Option<&str>, agreement: &str) -> Message {
        Message::system(SystemKind::CacheDiagnosis {
            api_message_id: id.to_owned(),
            diagnostics,
            predicted: predicted.map(str::to_owned),
            agreement: agreement.to_owned(),
        })
    }

    #[test]
    fn a_recorded_reason_is_compared_with_the_simulators_break() {
        let missed = json!({"cache_miss_reason": {"type": "system_changed",
            "cache_missed_input_tokens": 812}});
        let by_id = recorded(&[record("msg_1", missed.clone(), Some("system"), "agrees")]);
        let found = by_id.get("msg_1").expect("recorded");
        // No break seen: the simulator saw no change, the API saw the system prompt change.
        let row = DiagnosticsRow::of(found, None);
        assert_eq!(row.reason, "system_changed");
        assert_eq!(row.inspect_predicted.as_deref(), Some("none"));
        assert_eq!(row.inspect_agreement, "disagrees");
        assert_eq!(row.loop_predicted.as_deref(), Some("system"));
        assert_eq!(row.missed_tokens(), Some(812));
        // A break the simulator attributes to a re-rendered system prompt agrees.
        let reloaded = CacheBreak {
            location: None,
            cause: BreakCause::PrefixReloaded {
                by: "/mcp".to_owned(),
            },
        };
        let row = DiagnosticsRow::of(found, Some(&reloaded));
        assert_eq!(row.inspect_predicted.as_deref(), Some("system"));
        assert_eq!(row.inspect_agreement, "agrees");
        // Pending and no divergence.
        let pending = Recorded {
            diagnostics: json!({"cache_miss_reason": null}),
            predicted: None,
            agreement: "inconclusive".to_owned(),
        };
        let row = DiagnosticsRow::of(&pending, None);
        assert_eq!(
            (row.reason.as_str(), row.missed_tokens()),
            ("pending", None)
        );
        assert_eq!(row.inspect_agreement, "inconclusive");
    }
}
