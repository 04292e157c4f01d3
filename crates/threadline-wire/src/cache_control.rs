//! `cache_control`: prompt-cache breakpoints.

wire_string_enum! {
    /// How long a cache entry lives.
    pub enum CacheTtl {
        /// Five minutes (the default).
        FiveMinutes = "5m",
        /// One hour.
        OneHour = "1h",
    }
}

wire_struct! {
    /// A prompt-cache breakpoint: `{"type":"ephemeral","ttl":"5m"|"1h"}`.
    pub struct CacheControl {
        required {
            /// Always `ephemeral` today.
            pub kind: String => "type",
        }
        optional {
            /// The lifetime; absent means five minutes.
            pub ttl: CacheTtl,
        }
    }
}

impl CacheControl {
    /// An `ephemeral` breakpoint with the default (five minute) lifetime; add
    /// `.with_ttl(CacheTtl::OneHour)` for an hour.
    pub fn ephemeral() -> Self {
        CacheControl {
            kind: "ephemeral".to_owned(),
            ttl: None,
            extra: crate::Extra::new(),
        }
    }

    /// The effective lifetime (absent means five minutes).
    pub fn effective_ttl(&self) -> CacheTtl {
        self.ttl.clone().unwrap_or(CacheTtl::FiveMinutes)
    }
}

/// `value` (request JSON, or any part of it) without any `cache_control` key, at any depth:
/// what two requests share once their breakpoints are set aside (Claude Code names a request
/// message by the hash of this form; tests compare requests by it).
///
/// ```
/// use serde_json::json;
/// use threadline_wire::cache_control::without_cache_control;
///
/// let marked = json!({"role": "user", "content": [
///     {"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]});
/// assert_eq!(
///     without_cache_control(&marked),
///     json!({"role": "user", "content": [{"type": "text", "text": "Hi"}]})
/// );
/// ```
pub fn without_cache_control(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}
