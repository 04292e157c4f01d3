//! Model rows from the Models API's shape (`GET /v1/models`, `GET /v1/models/{id}`), so a user
//! adds a model the build does not know by saving what the API says about it.
//!
//! The Models API gives an entry's `id`, `max_input_tokens` (the context window), `max_tokens`
//! (the largest `max_tokens`) and `capabilities`: `thinking.types.{adaptive,enabled}`,
//! `effort.{low,medium,high,xhigh,max}` and `context_management.compact_20260112`, each
//! `{"supported": bool}` (docs/api-notes.md#models-api). It says nothing of prices, the
//! smallest cacheable prompt, prefill, sampling parameters, system messages or tool search:
//! those come from the row's own fields when the entry carries them (the names of
//! `data/models.json`, beside the API's), else from the table's conservative default.

use serde_json::{Map, Value};

use super::{Model, ModelTableError, ThinkingMode};

/// Whether `value` is in the Models API's shape: a list (`{"data": [...]}`) or one entry
/// (`{"type": "model", ...}`).
pub(super) fn is_models_api(value: &Value) -> bool {
    value.get("data").is_some_and(Value::is_array) || value.get("type") == Some(&"model".into())
}

/// The rows of a Models API list or entry; fields the API does not give come from the entry's
/// own fields, else from `fallback`.
pub(super) fn rows(value: &Value, fallback: &Model) -> Result<Vec<Model>, ModelTableError> {
    let entries: Vec<&Value> = match value.get("data").and_then(Value::as_array) {
        Some(list) => list.iter().collect(),
        None => vec![value],
    };
    entries
        .into_iter()
        .map(|entry| row(entry, fallback))
        .collect()
}

fn supported(capabilities: &Map<String, Value>, path: &[&str]) -> Option<bool> {
    let mut at = capabilities.get(path[0])?;
    for key in &path[1..] {
        at = at.get(key)?;
    }
    at.get("supported").and_then(Value::as_bool)
}

fn row(entry: &Value, fallback: &Model) -> Result<Model, ModelTableError> {
    let invalid = |what: &str| {
        ModelTableError::Invalid(serde::de::Error::custom(format!(
            "a Models API entry {what}"
        )))
    };
    let object = entry
        .as_object()
        .ok_or_else(|| invalid("is not an object"))?;
    let id = object
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or(ModelTableError::EmptyId)?;
    // Start from the conservative default, as JSON, then lay the entry's own row fields
    // (the names of `data/models.json`) and the API's fields over it.
    let mut merged = match serde_json::to_value(fallback).map_err(ModelTableError::Invalid)? {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    merged.insert("aliases".to_owned(), Value::Array(Vec::new()));
    for (key, value) in object {
        if merged.contains_key(key) {
            merged.insert(key.clone(), value.clone());
        }
    }
    merged.insert("id".to_owned(), id.into());
    if let Some(window) = object.get("max_input_tokens").and_then(Value::as_u64) {
        merged.insert("context_window".to_owned(), window.into());
    }
    if let Some(max) = object.get("max_tokens").and_then(Value::as_u64) {
        merged.insert("max_output_tokens".to_owned(), max.into());
    }
    let empty = Map::new();
    let capabilities = object
        .get("capabilities")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if capabilities.contains_key("thinking") {
        let mut modes = Vec::new();
        for (name, mode) in [
            ("adaptive", ThinkingMode::Adaptive),
            ("enabled", ThinkingMode::Enabled),
        ] {
            if supported(capabilities, &["thinking", "types", name]) == Some(true) {
                modes.push(mode);
            }
        }
        // Thinking can be left off unless the API says it is always on (it does not say).
        modes.push(ThinkingMode::Disabled);
        merged.insert(
            "thinking".to_owned(),
            serde_json::to_value(modes).map_err(ModelTableError::Invalid)?,
        );
    }
    if capabilities.contains_key("effort") {
        let levels: Vec<&str> = ["low", "medium", "high", "xhigh", "max"]
            .into_iter()
            .filter(|level| supported(capabilities, &["effort", level]) == Some(true))
            .collect();
        merged.insert("effort".to_owned(), levels.into());
    }
    if let Some(compaction) = supported(capabilities, &["context_management", "compact_20260112"]) {
        let mut features: Vec<Value> = merged
            .get("features")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let name = Value::from("server_compaction");
        features.retain(|f| *f != name);
        if compaction {
            features.push(name);
        }
        merged.insert("features".to_owned(), features.into());
    }
    if merged.get("source").is_none_or(Value::is_null) {
        merged.insert(
            "source".to_owned(),
            "A Models API entry: its window, output limit, thinking, effort and compaction are \
             the API's; what it does not give is the entry's own fields or the table's \
             conservative default"
                .into(),
        );
    }
    let mut model: Model =
        serde_json::from_value(Value::Object(merged)).map_err(ModelTableError::Invalid)?;
    model.guess = false;
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::super::{Feature, ModelTable, ModelTableError, ThinkingMode};

    /// The shape of `GET /v1/models` (docs/api-notes.md#models-api).
    const LIST: &str = r#"{"data": [
        {"type": "model", "id": "claude-next-6", "display_name": "Claude Next 6",
         "created_at": "2026-11-20T00:00:00Z", "max_input_tokens": 2000000, "max_tokens": 256000,
         "capabilities": {
            "thinking": {"supported": true, "types": {"adaptive": {"supported": true}, "enabled": {"supported": false}}},
            "effort": {"supported": true, "low": {"supported": true}, "medium": {"supported": true},
                       "high": {"supported": true}, "max": {"supported": false}},
            "context_management": {"supported": true, "compact_20260112": {"supported": true}},
            "image_input": {"supported": true}},
         "prices": {"input": 3.0, "output": 15.0, "cache_write_5m": 3.75, "cache_write_1h": 6.0, "cache_read": 0.3}},
        {"type": "model", "id": "claude-bare-1", "max_input_tokens": 100000, "max_tokens": 4096}
      ], "has_more": false, "first_id": "claude-next-6", "last_id": "claude-bare-1"}"#;

    #[test]
    fn a_models_api_list_adds_its_models_with_the_apis_limits_and_capabilities() {
        let table = ModelTable::builtin()
            .extended_from_json(LIST)
            .expect("a Models API list");
        let next = table.resolve("claude-next-6");
        assert!(next.is_known());
        let model = next.model();
        assert!(!model.is_guess());
        assert_eq!(
            (model.context_window, model.max_output_tokens),
            (2_000_000, 256_000)
        );
        assert_eq!(
            model.thinking,
            [ThinkingMode::Adaptive, ThinkingMode::Disabled]
        );
        assert_eq!(model.effort, ["low", "medium", "high"]);
        assert!(model.supports(Feature::ServerCompaction));
        assert_eq!(model.prices.input, 3.0, "the entry's own prices");
        assert!(
            model
                .source
                .as_deref()
                .is_some_and(|s| s.contains("Models API"))
        );

        // What the API does not give comes from the conservative default.
        let bare = table.resolve("claude-bare-1").model();
        let default = table.resolve("no-such-model").model();
        assert_eq!(
            (bare.context_window, bare.max_output_tokens),
            (100_000, 4096)
        );
        assert_eq!(bare.prices, default.prices);
        assert_eq!(bare.thinking, default.thinking);
        assert!(!bare.prefill && !bare.system_messages);
        // The built-in rows stay.
        assert!(table.resolve("claude-opus-5-5").is_known());
    }

    #[test]
    fn one_models_api_entry_is_read_too_and_a_bad_one_is_an_error() {
        let one = r#"{"type": "model", "id": "claude-one", "max_input_tokens": 50000, "max_tokens": 1000}"#;
        let table = ModelTable::builtin()
            .extended_from_json(one)
            .expect("one entry");
        assert_eq!(table.resolve("claude-one").model().context_window, 50_000);
        assert!(matches!(
            ModelTable::builtin().extended_from_json(r#"{"data": [{"type": "model"}]}"#),
            Err(ModelTableError::EmptyId)
        ));
        assert!(matches!(
            ModelTable::builtin().extended_from_json(r#"{"data": [3]}"#),
            Err(ModelTableError::Invalid(_))
        ));
        assert!(matches!(
            ModelTable::builtin().extended_from_json(
                r#"{"data": [{"type": "model", "id": "a"}, {"type": "model", "id": "a"}]}"#
            ),
            Err(ModelTableError::Duplicate(_))
        ));
    }
}
