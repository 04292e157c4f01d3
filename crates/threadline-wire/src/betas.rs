//! The `anthropic-beta` values a request needs, read from what the request carries.
//!
//! A beta feature is asked for twice: by a field in the body and by its name in the
//! `anthropic-beta` header. Deriving the header from the body keeps the two from drifting
//! apart: a client sends [`header_value`] of its configured betas and the request, so a
//! request with a `compact_20260112` edit always carries `compact-2026-01-12`, and one
//! without it never does (a beta named for nothing can change how the API renders the
//! prompt, which costs the cache).
//!
//! ```
//! use threadline_wire::betas::{self, COMPACT};
//! use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
//!
//! let hello = MessageParam::user(vec![ContentBlock::text("hi")]);
//! let mut request = MessagesRequest::new("claude-opus-4-6", 1024, vec![hello]);
//! assert!(betas::required(&request).is_empty());
//! request.context_management =
//!     Some(serde_json::from_str(r#"{"edits":[{"type":"compact_20260112"}]}"#)?);
//! assert_eq!(betas::required(&request), vec![COMPACT]);
//! assert_eq!(
//!     betas::header_value(&["files-api-2025-04-14".to_owned()], &request).as_deref(),
//!     Some("files-api-2025-04-14,compact-2026-01-12"),
//! );
//! # Ok::<(), serde_json::Error>(())
//! ```

use crate::content::{Content, ContentBlock};
use crate::request::{
    ContextEdit, ContextManagement, CountTokensRequest, MessageParam, MessagesRequest,
    OutputConfig, ThinkingConfig, ThinkingDisplay,
};

/// Server-side compaction (`compact_20260112`).
pub const COMPACT: &str = "compact-2026-01-12";
/// Client-directed context editing (`clear_tool_uses_20250919`, `clear_thinking_20251015`).
pub const CONTEXT_MANAGEMENT: &str = "context-management-2025-06-27";
/// Cache diagnostics (`diagnostics: {previous_message_id}`).
pub const CACHE_DIAGNOSIS: &str = "cache-diagnosis-2026-04-07";
/// Server-side fallback (`fallbacks`: `"default"` or a list).
pub const SERVER_SIDE_FALLBACK: &str = "server-side-fallback-2026-07-01";
/// Mid-conversation tool changes (`tool_addition` / `tool_removal` blocks in `role: "system"`
/// messages; the system messages themselves need no header).
pub const MID_CONVERSATION_TOOL_CHANGES: &str = "mid-conversation-tool-changes-2026-07-01";
/// Inline tool definitions (`tool_addition` / `tool_removal` blocks, Claude API only), the
/// header the docs name for tool changes since 2026-09-15; the API takes either this or
/// [`MID_CONVERSATION_TOOL_CHANGES`] for them.
pub const INLINE_TOOLS: &str = "inline-tools-2026-09-15";
/// Per-message effort (`output_config` on a `role: "system"` message).
pub const MID_CONVERSATION_OUTPUT_CONFIG: &str = "mid-conversation-output-config-2026-07-01";
/// The header Claude Code 2.1.328 sends per-message effort with (undocumented; a gateway
/// treats it as carrying the per-message beta): the validator accepts it in place of
/// [`MID_CONVERSATION_OUTPUT_CONFIG`], threadline never sends it.
pub const PER_TURN_CONTROL: &str = "per-turn-control-2026-07-01";
/// Task budgets (`output_config.task_budget`).
pub const TASK_BUDGETS: &str = "task-budgets-2026-03-13";
/// Thinking `display: "updates"` (progress updates as thinking blocks with text).
pub const THINKING_DISPLAY_UPDATES: &str = "thinking-display-updates-2026-08-18";
/// Turn-scoped mid-conversation system messages (`clear_at` on a `role: "system"` message).
pub const MID_CONVERSATION_SYSTEM_CLEAR_AT: &str = "mid-conversation-system-clear-at-2026-08-21";

/// Thinking block binding controls (`thinking.block_binding`), and with it
/// `input_transformations` on every response.
pub const THINKING_BINDING_CONTROLS: &str = "thinking-binding-controls-2026-08-01";
/// On-demand compaction: the top-level `compaction` field, and every later request that
/// carries the signed `compaction` block it returned.
pub const COMPACT_ON_DEMAND: &str = "compact-2026-09-04";

/// The betas `request` needs, in a fixed order, each once.
pub fn required(request: &MessagesRequest) -> Vec<&'static str> {
    let mut out = Vec::new();
    context_management(request.context_management.as_ref(), &mut out);
    if request.fallbacks.is_some() {
        need(&mut out, SERVER_SIDE_FALLBACK);
    }
    body_features(
        &request.messages,
        request.output_config.as_ref(),
        request.thinking.as_ref(),
        &mut out,
    );
    if request.diagnostics.is_some() {
        need(&mut out, CACHE_DIAGNOSIS);
    }
    if request.compaction.is_some() {
        need(&mut out, COMPACT_ON_DEMAND);
    }
    out
}

/// The betas a `count_tokens` body needs (its `context_management` ones).
pub fn required_for_count(request: &CountTokensRequest) -> Vec<&'static str> {
    let mut out = Vec::new();
    context_management(request.context_management.as_ref(), &mut out);
    body_features(
        &request.messages,
        request.output_config.as_ref(),
        request.thinking.as_ref(),
        &mut out,
    );
    out
}

/// The betas named by the messages (tool changes, `clear_at`, per-message `output_config`),
/// the output config (task budget) and the thinking setting (`display: "updates"`).
fn body_features(
    messages: &crate::Messages,
    output_config: Option<&OutputConfig>,
    thinking: Option<&ThinkingConfig>,
    out: &mut Vec<&'static str>,
) {
    /// Whether a message asks for a beta.
    type Check = fn(&MessageParam) -> bool;
    let checks: [(&'static str, Check); 4] = [
        (MID_CONVERSATION_TOOL_CHANGES, has_tool_change),
        (COMPACT_ON_DEMAND, has_signed_compaction),
        (MID_CONVERSATION_SYSTEM_CLEAR_AT, |m| {
            m.extra.contains_key("clear_at")
        }),
        (MID_CONVERSATION_OUTPUT_CONFIG, |m| {
            m.extra.get("output_config").is_some_and(|v| !v.is_null()) && !m.is_turn_scoped()
        }),
    ];
    // One pass over the messages (each read once, while it is in cache), stopping when
    // every message-borne beta is found.
    let mut found = [false; 4];
    for m in messages {
        for (found, (_, check)) in found.iter_mut().zip(&checks) {
            *found = *found || check(m);
        }
        if found.iter().all(|f| *f) {
            break;
        }
    }
    for ((beta, _), found) in checks.into_iter().zip(found) {
        if found {
            need(out, beta);
        }
    }
    if output_config.is_some_and(|c| c.task_budget.is_some()) {
        need(out, TASK_BUDGETS);
    }
    if thinking.and_then(ThinkingConfig::display) == Some(&ThinkingDisplay::Updates) {
        need(out, THINKING_DISPLAY_UPDATES);
    }
    if thinking.is_some_and(has_block_binding) {
        need(out, THINKING_BINDING_CONTROLS);
    }
}

/// Whether `thinking` carries `block_binding` (either value asks for the beta).
fn has_block_binding(thinking: &ThinkingConfig) -> bool {
    match thinking {
        ThinkingConfig::Adaptive(o) | ThinkingConfig::Disabled(o) => {
            o.block_binding.is_some() || o.extra.contains_key("block_binding")
        }
        ThinkingConfig::Enabled(e) => e.extra.contains_key("block_binding"),
        _ => false,
    }
}

/// Whether `message` holds an on-demand compaction block (one with a `signature`).
pub fn has_signed_compaction(message: &MessageParam) -> bool {
    match &message.content {
        Content::Blocks(blocks) => blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::Compaction(c) if c.signature.is_some())),
        Content::Text(_) => false,
    }
}

/// Whether `message` holds a `tool_addition` or `tool_removal` block.
pub fn has_tool_change(message: &MessageParam) -> bool {
    match &message.content {
        Content::Blocks(blocks) => blocks.iter().any(|b| {
            matches!(
                b,
                ContentBlock::ToolAddition(_) | ContentBlock::ToolRemoval(_)
            )
        }),
        Content::Text(_) => false,
    }
}

fn need(out: &mut Vec<&'static str>, beta: &'static str) {
    if !out.contains(&beta) {
        out.push(beta);
    }
}

/// The beta one `context_management` edit needs (`None` for an edit this version does not
/// know).
pub fn for_edit(edit: &ContextEdit) -> Option<&'static str> {
    match edit {
        ContextEdit::Compact(_) => Some(COMPACT),
        ContextEdit::ClearToolUses(_) | ContextEdit::ClearThinking(_) => Some(CONTEXT_MANAGEMENT),
        _ => None,
    }
}

fn context_management(management: Option<&ContextManagement>, out: &mut Vec<&'static str>) {
    for edit in management.map(|m| m.edits.as_slice()).unwrap_or_default() {
        if let Some(beta) = for_edit(edit) {
            need(out, beta);
        }
    }
}

/// The `anthropic-beta` header for `request`: the `configured` betas in their order, then
/// each [`required`] one not already named (a configured beta of the same feature with
/// another date counts as named: the caller chose that version). `None` when there are none.
pub fn header_value(configured: &[String], request: &MessagesRequest) -> Option<String> {
    merge(configured, required(request))
}

/// [`header_value`] for a `count_tokens` body.
pub fn count_header_value(configured: &[String], request: &CountTokensRequest) -> Option<String> {
    merge(configured, required_for_count(request))
}

fn merge(configured: &[String], required: Vec<&'static str>) -> Option<String> {
    let mut names: Vec<String> = configured
        .iter()
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty())
        .collect();
    for beta in required {
        let feature = feature_of(beta);
        if !names.iter().any(|n| feature_of(n) == feature) {
            names.push(beta.to_owned());
        }
    }
    (!names.is_empty()).then(|| names.join(","))
}

/// Whether the comma-separated `header` names `beta`'s feature (any date).
pub fn header_names(header: &str, beta: &str) -> bool {
    let feature = feature_of(beta);
    header.split(',').any(|b| feature_of(b.trim()) == feature)
}

/// A beta's name without its trailing `-YYYY-MM-DD` date.
fn feature_of(beta: &str) -> &str {
    // The date is ASCII: a cut inside a multi-byte character means there is none (and
    // `split_at` there would panic; the header comes from configuration or a recording).
    if beta.len() > 11 && beta.is_char_boundary(beta.len() - 11) {
        let (head, date) = beta.split_at(beta.len() - 11);
        let d = date.as_bytes();
        let digits = |r: std::ops::Range<usize>| d[r].iter().all(u8::is_ascii_digit);
        if d[0] == b'-'
            && d[5] == b'-'
            && d[8] == b'-'
            && digits(1..5)
            && digits(6..8)
            && digits(9..11)
        {
            return head;
        }
    }
    beta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ContentBlock, Fallbacks, MessageParam};

    fn request() -> MessagesRequest {
        let hello = MessageParam::user(vec![ContentBlock::text("hi")]);
        MessagesRequest::new("claude-opus-4-6", 1024, vec![hello])
    }

    #[test]
    fn each_feature_in_the_body_names_its_beta_once() {
        let mut r = request();
        r.context_management = Some(
            serde_json::from_str(
                r#"{"edits":[{"type":"clear_thinking_20251015"},{"type":"clear_tool_uses_20250919"},{"type":"compact_20260112"}]}"#,
            )
            .expect("parses"),
        );
        r.fallbacks = Some(Fallbacks::Default);
        assert_eq!(
            required(&r),
            vec![CONTEXT_MANAGEMENT, COMPACT, SERVER_SIDE_FALLBACK]
        );
        r.diagnostics = Some(crate::diagnostics::DiagnosticsParam::first());
        assert_eq!(required(&r).last(), Some(&CACHE_DIAGNOSIS));
    }

    #[test]
    fn block_binding_and_on_demand_compaction_name_their_betas() {
        let mut r = request();
        r.thinking = Some(
            serde_json::from_str(
                r#"{"type":"adaptive","block_binding":{"prefix_mismatch_behavior":"drop_block"}}"#,
            )
            .expect("parses"),
        );
        assert_eq!(required(&r), vec![THINKING_BINDING_CONTROLS]);
        r.thinking = Some(ThinkingConfig::adaptive(None));
        assert!(required(&r).is_empty());
        r.compaction = Some(crate::CompactionParam::summarize(None));
        assert_eq!(required(&r), vec![COMPACT_ON_DEMAND]);
        // A later request carries the signed block instead of the field: same header.
        r.compaction = None;
        r.messages.insert(
            0,
            serde_json::from_str(
                r#"{"role":"assistant","content":[{"type":"compaction","content":"s","signature":"sig"}]}"#,
            )
            .expect("parses"),
        );
        assert_eq!(required(&r), vec![COMPACT_ON_DEMAND]);
        // A threshold compaction block (no signature) needs no on-demand header.
        r.messages[0] = serde_json::from_str(
            r#"{"role":"assistant","content":[{"type":"compaction","content":"s","encrypted_content":"e"}]}"#,
        )
        .expect("parses");
        assert!(required(&r).is_empty());
    }

    #[test]
    fn tool_changes_and_task_budgets_name_their_betas() {
        let mut r = request();
        assert!(required(&r).is_empty());
        r.messages.push(MessageParam {
            role: crate::Role::System,
            content: Content::Blocks(vec![ContentBlock::text("Deploys are allowed.")]),
            extra: crate::Extra::new(),
        });
        // A mid-conversation system message alone needs no header.
        assert!(required(&r).is_empty());
        r.messages.push(MessageParam {
            role: crate::Role::System,
            content: Content::Blocks(vec![ContentBlock::ToolAddition(
                crate::tool_change::ToolChangeBlock::tool("deploy"),
            )]),
            extra: crate::Extra::new(),
        });
        r.output_config = Some(
            serde_json::from_str(r#"{"task_budget":{"type":"tokens","total":50000}}"#)
                .expect("parses"),
        );
        assert_eq!(
            required(&r),
            vec![MID_CONVERSATION_TOOL_CHANGES, TASK_BUDGETS]
        );
        let count = CountTokensRequest::from(&r);
        assert_eq!(
            required_for_count(&count),
            vec![MID_CONVERSATION_TOOL_CHANGES, TASK_BUDGETS]
        );
    }

    #[test]
    fn clear_at_and_display_updates_name_their_betas() {
        let mut r = request();
        r.thinking = Some(crate::request::ThinkingConfig::adaptive(Some(
            ThinkingDisplay::Omitted,
        )));
        assert!(required(&r).is_empty());
        r.thinking = Some(crate::request::ThinkingConfig::adaptive(Some(
            ThinkingDisplay::Updates,
        )));
        let mut reminder: MessageParam = serde_json::from_str(
            r#"{"role":"system","clear_at":"next_user_message","content":"Be brief."}"#,
        )
        .expect("parses");
        r.messages.push(reminder.clone());
        assert_eq!(
            required(&r),
            vec![MID_CONVERSATION_SYSTEM_CLEAR_AT, THINKING_DISPLAY_UPDATES]
        );
        assert_eq!(
            required_for_count(&CountTokensRequest::from(&r)),
            vec![MID_CONVERSATION_SYSTEM_CLEAR_AT, THINKING_DISPLAY_UPDATES]
        );
        // Claude Code names the display beta itself: it is not added twice.
        assert_eq!(
            header_value(&[THINKING_DISPLAY_UPDATES.to_owned()], &r).as_deref(),
            Some("thinking-display-updates-2026-08-18,mid-conversation-system-clear-at-2026-08-21")
        );
        reminder.extra.remove("clear_at");
        r.messages.pop();
        r.messages.push(reminder);
        assert_eq!(required(&r), vec![THINKING_DISPLAY_UPDATES]);
    }

    #[test]
    fn a_configured_version_of_the_same_feature_is_kept_not_doubled() {
        let mut r = request();
        r.fallbacks = Some(Fallbacks::Default);
        let configured = vec!["server-side-fallback-2026-06-01".to_owned()];
        assert_eq!(
            header_value(&configured, &r).as_deref(),
            Some("server-side-fallback-2026-06-01")
        );
        assert!(header_names(
            "a, server-side-fallback-2026-06-01",
            SERVER_SIDE_FALLBACK
        ));
        assert!(!header_names("compact-2026-01-12", SERVER_SIDE_FALLBACK));
        assert_eq!(header_value(&[], &request()), None);
        assert_eq!(header_value(&[" ".to_owned()], &request()), None);
    }

    #[test]
    fn names_without_a_date_are_their_own_feature() {
        assert_eq!(feature_of("compact-2026-01-12"), "compact");
        assert_eq!(feature_of("oauth"), "oauth");
        assert_eq!(feature_of("x-2026-1-12"), "x-2026-1-12");
        assert_eq!(feature_of("é-2026-01-12"), "é");
        // Twelve bytes whose cut at len - 11 falls inside a character.
        assert_eq!(feature_of("€€€€"), "€€€€");
        assert!(!header_names("€€€€,ü-2026-01-1é", COMPACT));
    }

    proptest::proptest! {
        #[test]
        fn any_header_and_any_configured_beta_are_read_without_panicking(
            header in "\\PC{0,40}",
            configured in proptest::collection::vec("\\PC{0,20}", 0..4),
        ) {
            let _ = header_names(&header, COMPACT);
            let mut r = request();
            r.fallbacks = Some(Fallbacks::Default);
            let merged = header_value(&configured, &r).unwrap_or_default();
            proptest::prop_assert!(merged.contains("server-side-fallback-"));
        }
    }
}
