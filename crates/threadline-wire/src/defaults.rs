//! The defaults every entry point shares: the model, the output limit and the API's address.
//!
//! Each is written here once and used by the facade's `Agent`, the HTTP client, every CLI
//! command (`run`, `demo`, `replay`, `worker`, `inspect`, `session`) and the durable worker.
//! They live in `threadline-wire` because it is the lowest crate all of those already depend
//! on, and because each is a fact about the Messages API (a model id the model table knows, a
//! `max_tokens`, the API's base URL), not about any one consumer; it stays data, with no I/O.
//!
//! ```
//! use threadline_wire::defaults::{DEFAULT_MAX_TOKENS, DEFAULT_MODEL};
//! use threadline_wire::model::ModelTable;
//!
//! let model = ModelTable::builtin().resolve(DEFAULT_MODEL);
//! assert!(model.warning().is_none());
//! assert!(DEFAULT_MAX_TOKENS <= model.model().max_output_tokens);
//! ```

/// The model used unless told otherwise: Sonnet 5, the newest Sonnet whose thinking blocks
/// are not bound to the conversation's prefix. Sonnet 5.5 (in the table, and Claude Code's
/// `sonnet`) binds them: the API refuses a later request in which anything before such a
/// block changed, which keep-tail compaction does (see `docs/api-notes.md`); it becomes the
/// default when compaction never edits before a bound block.
pub const DEFAULT_MODEL: &str = "claude-sonnet-5";

/// The `max_tokens` of each request unless told otherwise (callers cap it at the model's
/// `max_output_tokens`).
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

/// The `max_tokens` of a request to `model` unless told otherwise: [`DEFAULT_MAX_TOKENS`],
/// capped at the model's `max_output_tokens`.
pub fn max_tokens_for(model: &crate::model::Model) -> u64 {
    DEFAULT_MAX_TOKENS.min(model.max_output_tokens)
}

/// The API's production base URL (`/v1/messages` is appended).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelTable;

    #[test]
    fn the_default_model_is_a_known_sonnet_and_the_newest_sonnet_before_the_5_5_family() {
        let table = ModelTable::builtin();
        let resolved = table.resolve(DEFAULT_MODEL);
        assert!(resolved.warning().is_none());
        assert_eq!(resolved.model().id, DEFAULT_MODEL);
        // The table lists models newest first; the first Sonnet outside the prefix-binding
        // 5.5 family is the default.
        let first_sonnet =
            table.models().iter().map(|m| m.id.as_str()).find(|id| {
                id.starts_with("claude-sonnet-") && !id.starts_with("claude-sonnet-5-5")
            });
        assert_eq!(first_sonnet, Some(DEFAULT_MODEL));
    }

    #[test]
    fn the_default_output_limit_fits_the_default_model() {
        let model = ModelTable::builtin().resolve(DEFAULT_MODEL).model();
        assert!(DEFAULT_MAX_TOKENS <= model.max_output_tokens);
    }
}
