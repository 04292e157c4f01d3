//! Cache diagnostics (beta `cache-diagnosis-2026-04-07`).
//!
//! A request opts in with `"diagnostics": {"previous_message_id": null | "msg_…"}` (`null` on
//! the first turn, then the previous response's `id`). The response then says whether its
//! request diverged from the previous one, and where first: [`CacheDiagnosis`], read from a
//! [`ResponseMessage`](crate::ResponseMessage) by
//! [`ResponseMessage::cache_diagnosis`](crate::ResponseMessage::cache_diagnosis)
//! (on `message_start` when streaming; the accumulator keeps it).
//!
//! ```
//! use threadline_wire::diagnostics::{CacheDiagnosis, CacheMissReason, DiagnosticsParam};
//! use threadline_wire::ResponseMessage;
//!
//! // `null` opts in on the first turn and is written as `null`.
//! let first = serde_json::to_string(&DiagnosticsParam::first())?;
//! assert_eq!(first, r#"{"previous_message_id":null}"#);
//!
//! let message: ResponseMessage = serde_json::from_str(
//!     r#"{"id":"msg_2","role":"assistant","content":[],"model":"m",
//!         "diagnostics":{"cache_miss_reason":{"type":"system_changed","cache_missed_input_tokens":812}}}"#,
//! )?;
//! let CacheDiagnosis::Miss(reason) = message.cache_diagnosis() else { panic!() };
//! assert_eq!(reason.tag(), "system_changed");
//! assert_eq!(reason.missed_input_tokens(), Some(812));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde_json::Value;

wire_struct! {
    /// The request's `diagnostics`: the response this request follows (`None` is written as
    /// `null`: the first turn of a session, which opts in).
    pub struct DiagnosticsParam {
        required {
            /// The previous response's `id`, or `None` (`null`) on the first turn.
            pub previous_message_id: Option<String>,
        }
        optional {}
    }
}

impl DiagnosticsParam {
    /// `{"previous_message_id": null}`: opt in on the first turn.
    pub fn first() -> Self {
        DiagnosticsParam {
            previous_message_id: None,
            extra: crate::Extra::new(),
        }
    }

    /// `{"previous_message_id": id}`: compare with the request that `id` answered.
    pub fn after(id: impl Into<String>) -> Self {
        DiagnosticsParam {
            previous_message_id: Some(id.into()),
            extra: crate::Extra::new(),
        }
    }
}

wire_struct! {
    /// The fields of a `*_changed` miss reason.
    pub struct CacheMissChange {
        required {}
        optional {
            /// An estimate (from byte lengths) of the input the divergence costs the cache: a
            /// magnitude, not a billing number (it can exceed `usage.input_tokens`).
            pub cache_missed_input_tokens: u64,
        }
    }
}

wire_struct! {
    /// The (empty) body of `previous_message_not_found` and `unavailable`.
    pub struct CacheMissNoDetail {
        required {}
        optional {}
    }
}

wire_enum! {
    /// `cache_miss_reason`: the earliest divergence from the previous request.
    pub enum CacheMissReason (tag = "type") {
        /// A different `model`.
        ModelChanged(CacheMissChange) = "model_changed",
        /// `system` differs.
        SystemChanged(CacheMissChange) = "system_changed",
        /// Tools added, removed, reordered or serialized differently.
        ToolsChanged(CacheMissChange) = "tools_changed",
        /// Model, system and tools equal, but an earlier message was altered, reordered or
        /// removed (appending is not a change).
        MessagesChanged(CacheMissChange) = "messages_changed",
        /// No fingerprint of the previous message (no header then, another workspace, expired).
        PreviousMessageNotFound(CacheMissNoDetail) = "previous_message_not_found",
        /// No diagnosis (another prompt-shaping parameter differs, or beyond the horizon).
        Unavailable(CacheMissNoDetail) = "unavailable",
    }
}

/// The part of a request a cache diagnosis names: the level at which the API reports a
/// divergence (and at which a client's own break detection can be compared with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PromptPart {
    /// `model`.
    Model,
    /// `system`.
    System,
    /// `tools`.
    Tools,
    /// An earlier message (appending is not a change).
    Messages,
    /// Another prompt-shaping parameter (`tool_choice`, `thinking`, …): the API answers
    /// `unavailable` for these.
    Other,
}

impl PromptPart {
    /// `model`, `system`, `tools`, `messages` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptPart::Model => "model",
            PromptPart::System => "system",
            PromptPart::Tools => "tools",
            PromptPart::Messages => "messages",
            PromptPart::Other => "other",
        }
    }
}

impl std::fmt::Display for PromptPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CacheMissReason {
    /// The part a `*_changed` reason names (`None` for the others and unknown types).
    pub fn part(&self) -> Option<PromptPart> {
        match self {
            CacheMissReason::ModelChanged(_) => Some(PromptPart::Model),
            CacheMissReason::SystemChanged(_) => Some(PromptPart::System),
            CacheMissReason::ToolsChanged(_) => Some(PromptPart::Tools),
            CacheMissReason::MessagesChanged(_) => Some(PromptPart::Messages),
            _ => None,
        }
    }

    /// A `*_changed` reason's `cache_missed_input_tokens`.
    pub fn missed_input_tokens(&self) -> Option<u64> {
        match self {
            CacheMissReason::ModelChanged(c)
            | CacheMissReason::SystemChanged(c)
            | CacheMissReason::ToolsChanged(c)
            | CacheMissReason::MessagesChanged(c) => c.cache_missed_input_tokens,
            CacheMissReason::Unknown(value) => value
                .get("cache_missed_input_tokens")
                .and_then(Value::as_u64),
            _ => None,
        }
    }

    /// A `*_changed` reason with an estimate of the missed tokens (`kind` is one of
    /// `model_changed`, `system_changed`, `tools_changed`, `messages_changed`; any other
    /// kind gives an [`Unknown`](CacheMissReason::Unknown) value of that type).
    pub fn changed(kind: &str, missed: Option<u64>) -> Self {
        let change = CacheMissChange {
            cache_missed_input_tokens: missed,
            extra: crate::Extra::new(),
        };
        match kind {
            "model_changed" => CacheMissReason::ModelChanged(change),
            "system_changed" => CacheMissReason::SystemChanged(change),
            "tools_changed" => CacheMissReason::ToolsChanged(change),
            "messages_changed" => CacheMissReason::MessagesChanged(change),
            other => {
                let mut object = serde_json::Map::new();
                object.insert("type".to_owned(), Value::String(other.to_owned()));
                if let Some(missed) = missed {
                    object.insert("cache_missed_input_tokens".to_owned(), missed.into());
                }
                CacheMissReason::Unknown(Value::Object(object))
            }
        }
    }

    /// `previous_message_not_found`.
    pub fn previous_message_not_found() -> Self {
        CacheMissReason::PreviousMessageNotFound(CacheMissNoDetail {
            extra: crate::Extra::new(),
        })
    }

    /// `unavailable`.
    pub fn unavailable() -> Self {
        CacheMissReason::Unavailable(CacheMissNoDetail {
            extra: crate::Extra::new(),
        })
    }
}

wire_struct! {
    /// A response's `diagnostics` object.
    pub struct ResponseDiagnostics {
        required {}
        optional {
            /// The earliest divergence; absent or `null` while the comparison still runs.
            pub cache_miss_reason: CacheMissReason,
        }
    }
}

/// What a response says about its request's cache prefix.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CacheDiagnosis {
    /// No `diagnostics` in the response (not asked for, or no beta header).
    Absent,
    /// `diagnostics: null`: the first turn, or compared and no divergence.
    NoDivergence,
    /// `{"cache_miss_reason": null}`: the comparison was still running (inconclusive).
    Pending,
    /// The earliest divergence.
    Miss(CacheMissReason),
}

impl CacheDiagnosis {
    /// Reads a response's `diagnostics` (`None` when absent). A value of a shape this version
    /// does not know reads as [`Pending`](CacheDiagnosis::Pending): inconclusive, never an
    /// error (the feature never fails a request, nor does reading it).
    pub fn from_value(value: Option<&Value>) -> Self {
        match value {
            None => CacheDiagnosis::Absent,
            Some(Value::Null) => CacheDiagnosis::NoDivergence,
            Some(value) => match serde_json::from_value::<ResponseDiagnostics>(value.clone()) {
                Ok(ResponseDiagnostics {
                    cache_miss_reason: Some(reason),
                    ..
                }) => CacheDiagnosis::Miss(reason),
                _ => CacheDiagnosis::Pending,
            },
        }
    }

    /// The JSON a response carries for this diagnosis (`None` for `Absent`).
    pub fn to_value(&self) -> Option<Value> {
        match self {
            CacheDiagnosis::Absent => None,
            CacheDiagnosis::NoDivergence => Some(Value::Null),
            CacheDiagnosis::Pending => Some(serde_json::json!({"cache_miss_reason": null})),
            CacheDiagnosis::Miss(reason) => Some(serde_json::json!({
                "cache_miss_reason": serde_json::to_value(reason).unwrap_or(Value::Null)
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_param_writes_null_on_the_first_turn() {
        assert_eq!(
            serde_json::to_value(DiagnosticsParam::first()).expect("serializes"),
            json!({"previous_message_id": null})
        );
        assert_eq!(
            serde_json::to_value(DiagnosticsParam::after("msg_1")).expect("serializes"),
            json!({"previous_message_id": "msg_1"})
        );
        let parsed: DiagnosticsParam =
            serde_json::from_value(json!({"previous_message_id": null})).expect("parses");
        assert_eq!(parsed, DiagnosticsParam::first());
    }

    #[test]
    fn every_response_shape_reads_and_writes_back() {
        assert_eq!(CacheDiagnosis::from_value(None), CacheDiagnosis::Absent);
        for value in [
            Value::Null,
            json!({"cache_miss_reason": null}),
            json!({"cache_miss_reason": {"type": "model_changed", "cache_missed_input_tokens": 9}}),
            json!({"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 1}}),
            json!({"cache_miss_reason": {"type": "previous_message_not_found"}}),
            json!({"cache_miss_reason": {"type": "unavailable"}}),
        ] {
            let diagnosis = CacheDiagnosis::from_value(Some(&value));
            assert_eq!(diagnosis.to_value(), Some(value));
        }
        let unknown = json!({"cache_miss_reason": {"type": "weather_changed", "x": 1}});
        let CacheDiagnosis::Miss(reason) = CacheDiagnosis::from_value(Some(&unknown)) else {
            panic!("a miss");
        };
        assert_eq!(reason.tag(), "weather_changed");
        assert!(matches!(reason, CacheMissReason::Unknown(_)));
        assert_eq!(
            CacheDiagnosis::from_value(Some(&json!("odd"))),
            CacheDiagnosis::Pending
        );
        assert_eq!(
            CacheMissReason::changed("tools_changed", Some(3)).missed_input_tokens(),
            Some(3)
        );
        assert_eq!(
            CacheMissReason::changed("tools_changed", None).part(),
            Some(PromptPart::Tools)
        );
        assert_eq!(CacheMissReason::unavailable().part(), None);
        assert_eq!(
            CacheMissReason::changed("x_changed", Some(4)).missed_input_tokens(),
            Some(4)
        );
    }
}
