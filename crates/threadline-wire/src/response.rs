//! The response message, its usage and its stop reason.

use serde_json::Value;

use crate::content::{ContentBlock, Role};

wire_string_enum! {
    /// Why the model stopped.
    pub enum StopReason {
        /// A natural end.
        EndTurn = "end_turn",
        /// `max_tokens` was reached: the output is truncated.
        MaxTokens = "max_tokens",
        /// A custom stop sequence matched.
        StopSequence = "stop_sequence",
        /// The model wants tool results.
        ToolUse = "tool_use",
        /// A server-tool loop paused; send the content back as is to continue.
        PauseTurn = "pause_turn",
        /// The model declined.
        Refusal = "refusal",
        /// Generation reached the context window.
        ModelContextWindowExceeded = "model_context_window_exceeded",
        /// Server-side compaction paused the turn (beta).
        Compaction = "compaction",
    }
}

wire_struct! {
    /// `stop_details` of a response: with `stop_reason: refusal`, `{type: "refusal", category,
    /// explanation, fallback_credit_token, fallback_has_prefill_claim, recommended_model}`.
    /// Each optional field may be an explicit `null` (remembered, so it round-trips); unknown
    /// fields round-trip too.
    pub struct StopDetails {
        required {
            /// `refusal` (other kinds parse too).
            pub kind: String => "type",
        }
        optional {
            /// `cyber`, `bio`, `frontier_llm`, `reasoning_extraction`, `general_harms`, … (kept
            /// as a string: new categories must parse).
            pub category: String,
            /// Display text; not stable.
            pub explanation: String,
            /// A token for a manual retry on another model (fallback credit; valid 5 minutes).
            pub fallback_credit_token: String,
            /// Whether a credit retry may carry the refused content as a prefill.
            pub fallback_has_prefill_claim: bool,
            /// Set when a server-side fallback could not run.
            pub recommended_model: String,
        }
    }
}

impl StopDetails {
    /// Whether these are a refusal's details.
    pub fn is_refusal(&self) -> bool {
        self.kind == "refusal"
    }

    /// Reads `stop_details` from its JSON (`None` for `null` or a value of another shape).
    pub fn from_value(value: &Value) -> Option<StopDetails> {
        if value.is_null() {
            return None;
        }
        serde_json::from_value(value.clone()).ok()
    }
}

wire_struct! {
    /// `usage.cache_creation`: cache writes split by lifetime.
    pub struct CacheCreation {
        required {}
        optional {
            /// Tokens written with a five-minute lifetime.
            pub ephemeral_5m_input_tokens: u64,
            /// Tokens written with a one-hour lifetime.
            pub ephemeral_1h_input_tokens: u64,
        }
    }
}

wire_struct! {
    /// Token usage. In a stream, `message_delta` usage is cumulative and overwrites. The
    /// top-level figures exclude compaction passes: bill [`Usage::billed`].
    pub struct Usage {
        required {}
        optional {
            /// Input tokens after the last cache breakpoint.
            pub input_tokens: u64,
            /// Output tokens (thinking included).
            pub output_tokens: u64,
            /// Tokens written to the cache.
            pub cache_creation_input_tokens: u64,
            /// Tokens read from the cache.
            pub cache_read_input_tokens: u64,
            /// Cache writes by lifetime.
            pub cache_creation: CacheCreation,
            /// Server tool request counts.
            pub server_tool_use: Value,
            /// `standard`, `priority` or `batch`.
            pub service_tier: String,
            /// Where inference ran.
            pub inference_geo: String,
            /// `{"thinking_tokens": N}`.
            pub output_tokens_details: Value,
            /// Per-iteration usage (beta: compaction, advisor, fallback); read it with
            /// [`Usage::billed`], [`Usage::context_tokens`] and
            /// [`Usage::compaction_iterations`] (`crate::usage_iterations`).
            pub iterations: Vec<crate::usage_iterations::UsageIteration>,
        }
    }
}

impl Usage {
    /// All input tokens: uncached + cache writes + cache reads (saturating at `u64::MAX`: the
    /// counts come from a server or a transcript, either of which may be hostile).
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens
            .unwrap_or(0)
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0))
            .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
    }

    /// The share of input tokens read from the cache, in `0.0..=1.0` (0 when there was no
    /// input).
    pub fn cache_read_share(&self) -> f64 {
        let total = self.total_input_tokens();
        if total == 0 {
            0.0
        } else {
            self.cache_read_input_tokens.unwrap_or(0) as f64 / total as f64
        }
    }
}

wire_struct! {
    /// A complete response message (the non-streaming body, or an accumulated stream).
    pub struct ResponseMessage {
        required {
            /// The message id (`msg_…`).
            pub id: String,
            /// Always `assistant`.
            pub role: Role,
            /// The content blocks.
            pub content: Vec<ContentBlock>,
            /// The model that answered (a dated id for older models).
            pub model: String,
        }
        optional {
            /// Always `message`.
            pub kind: String => "type",
            /// Why the model stopped (`null` while streaming).
            pub stop_reason: StopReason,
            /// The stop sequence that matched.
            pub stop_sequence: String,
            /// Details of a refusal.
            pub stop_details: Value,
            /// The code-execution container used.
            pub container: Value,
            /// Token usage.
            pub usage: Usage,
            /// Context edits applied (beta).
            pub context_management: Value,
            /// Cache diagnostics (beta); read with [`ResponseMessage::cache_diagnosis`].
            pub diagnostics: Value,
            /// What the API changed in the request before reading it (beta
            /// `thinking-binding-controls-2026-08-01`: every response carries the list, `[]`
            /// when nothing changed; streamed on `message_start`).
            pub input_transformations: Vec<InputTransformation>,
        }
    }
}

wire_struct! {
    /// One entry of `input_transformations`: e.g. `{"type": "thinking_dropped", "path":
    /// "messages.1.content.0", "reason": "prefix_binding_mismatch"}`.
    pub struct InputTransformation {
        required {
            /// `thinking_dropped` (other kinds parse too).
            pub kind: String => "type",
        }
        optional {
            /// Where the dropped block was, as `messages.I.content.J`.
            pub path: String,
            /// `prefix_binding_mismatch`, `model_binding_mismatch` or
            /// `organization_binding_mismatch` (kept as a string: new reasons must parse).
            pub reason: String,
        }
    }
}

impl InputTransformation {
    /// A `thinking_dropped` entry at `path` for `reason`.
    pub fn thinking_dropped(path: String, reason: &str) -> InputTransformation {
        InputTransformation {
            kind: "thinking_dropped".to_owned(),
            path: Some(path),
            reason: Some(reason.to_owned()),
            extra: crate::Extra::new(),
        }
    }
}

impl ResponseMessage {
    /// The response's cache diagnostics (`diagnostics`: absent, `null`, pending or a reason).
    pub fn cache_diagnosis(&self) -> crate::diagnostics::CacheDiagnosis {
        match &self.diagnostics {
            Some(value) => crate::diagnostics::CacheDiagnosis::from_value(Some(value)),
            None => crate::diagnostics::CacheDiagnosis::from_value(self.extra.get("diagnostics")),
        }
    }

    /// `stop_details`, typed (`None` when absent, `null` or not an object with a `type`).
    pub fn typed_stop_details(&self) -> Option<StopDetails> {
        self.stop_details.as_ref().and_then(StopDetails::from_value)
    }

    /// The tool uses of this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &crate::content::ToolUseBlock> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t),
            _ => None,
        })
    }

    /// All the text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refusal_stop_details_parse_and_round_trip() {
        let value = json!({"type": "refusal", "category": "cyber", "explanation": "no",
            "fallback_credit_token": null, "fallback_has_prefill_claim": false,
            "recommended_model": null, "future": [1]});
        let details = StopDetails::from_value(&value).expect("parses");
        assert!(details.is_refusal());
        assert_eq!(details.category.as_deref(), Some("cyber"));
        assert_eq!(details.explanation.as_deref(), Some("no"));
        assert_eq!(details.fallback_has_prefill_claim, Some(false));
        assert_eq!(details.fallback_credit_token, None);
        assert_eq!(serde_json::to_value(&details).expect("serializes"), value);
        assert_eq!(StopDetails::from_value(&Value::Null), None);
        assert_eq!(StopDetails::from_value(&json!("x")), None);
        assert_eq!(StopDetails::from_value(&json!({"category": "bio"})), None);
    }

    #[test]
    fn unknown_stop_reasons_still_parse() {
        let reason: StopReason = serde_json::from_value(json!("brand_new")).expect("parses");
        assert_eq!(
            serde_json::to_value(&reason).expect("serializes"),
            json!("brand_new")
        );
        let reason: StopReason =
            serde_json::from_value(json!("model_context_window_exceeded")).expect("parses");
        assert_eq!(reason, StopReason::ModelContextWindowExceeded);
    }
}
