//! The passes, one module each, in pipeline order. Each pass's function documents what it
//! assumes and what it guarantees; [`crate::pipeline`] runs them.

pub(crate) mod drop_non_api;
pub(crate) mod empty_content;
pub(crate) mod ensure_tool_result_pairing;
pub(crate) mod error_results_text_only;
pub(crate) mod media_cap;
pub(crate) mod merge_assistant_fragments;
pub(crate) mod merge_consecutive_users;
pub(crate) mod render_attachments;
pub(crate) mod reorder_attachments;
pub(crate) mod thinking_hygiene;

pub(crate) use drop_non_api::drop_non_api;
pub(crate) use empty_content::{empty_content, start_with_user, trim_final_assistant};
pub(crate) use ensure_tool_result_pairing::ensure_tool_result_pairing;
pub(crate) use error_results_text_only::error_results_text_only;
pub(crate) use media_cap::media_cap;
pub(crate) use merge_assistant_fragments::merge_assistant_fragments;
pub(crate) use merge_consecutive_users::merge_consecutive_users;
pub(crate) use render_attachments::render_attachments;
pub(crate) use reorder_attachments::reorder_attachments;
pub(crate) use thinking_hygiene::{strip_final_trailing_thinking, thinking_hygiene};
