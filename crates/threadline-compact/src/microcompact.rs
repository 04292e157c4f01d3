//! Microcompact: clear old tool results, keep the structure.
//!
//! Results of a configurable set of tools (the ones whose output can be fetched again: reads,
//! searches, shell output) are replaced by [`CLEARED_PLACEHOLDER`], except the most recent
//! `keep_recent` and those after the last assistant message (the current turn's, which the
//! model has not seen yet). Tool uses, their inputs, the assistant's text and every thinking
//! block stay as they are, so pairing and the model's own notes survive.
//!
//! Two paths, both chosen so that clearing costs no prompt cache:
//! - **time-based** ([`microcompact_time_based`]): local content is cleared only when the
//!   cache of the last request has expired anyway ([`crate::ttl`]);
//! - **server-side** ([`with_server_side_clearing`]): local content is left alone and the
//!   request carries a `clear_tool_uses_20250919` edit, so the API clears the results on its
//!   side after the cached prefix.
//!
//! Either way a `microcompact_boundary` system message records what was cleared.

use std::collections::BTreeSet;
use std::time::SystemTime;

use serde_json::{Value, json};
use threadline_message::{Message, SystemKind};
use threadline_wire::request::{ClearToolUsesEdit, ContextEdit, ContextManagement};
use threadline_wire::{CacheTtl, Content, ContentBlock, MessagesRequest, ToolDefinition};

use crate::budget::fresh_from;
use crate::estimate::content_tokens;
use crate::stamp::derived_header;
use crate::ttl::cache_expired;
use crate::units::IdMap;

/// The text a cleared tool result is replaced with.
pub const CLEARED_PLACEHOLDER: &str = "[Old tool result content cleared]";

/// The `anthropic-beta` value a request with `context_management` is sent with.
pub const CONTEXT_MANAGEMENT_BETA: &str = threadline_wire::betas::CONTEXT_MANAGEMENT;

/// The tools whose results may be cleared by default: their output can be produced again.
pub const DEFAULT_CLEARABLE_TOOLS: &[&str] = &[
    "Read",
    "Bash",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
];

/// What microcompact clears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MicrocompactOptions {
    /// The most recent results (of clearable tools) kept whole; default 5.
    pub keep_recent: usize,
    /// The tools whose results may be cleared; default [`DEFAULT_CLEARABLE_TOOLS`].
    pub tools: BTreeSet<String>,
    /// The lifetime of the prompt cache in use (time-based path); default five minutes.
    pub cache_ttl: CacheTtl,
}

impl Default for MicrocompactOptions {
    fn default() -> Self {
        MicrocompactOptions {
            keep_recent: 5,
            tools: DEFAULT_CLEARABLE_TOOLS
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            cache_ttl: CacheTtl::FiveMinutes,
        }
    }
}

/// The array after a local microcompact.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Microcompacted {
    /// The messages, results cleared and the boundary appended.
    pub messages: Vec<Message>,
    /// The tool uses whose results were cleared, in array order.
    pub cleared: Vec<String>,
    /// The estimated tokens saved.
    pub tokens_saved: u64,
}

/// Whether a tool result's content is the placeholder microcompact left.
pub(crate) fn is_cleared(content: &Content) -> bool {
    matches!(content, Content::Text(t) if t == CLEARED_PLACEHOLDER)
}

/// Clears the results of clearable tools except the most recent `keep_recent`, those after
/// the last assistant message (the model has not seen them yet: the rule the budget uses for
/// "fresh") and those no larger than the placeholder, whether or not the cache has expired
/// (the caller decided), and appends a `microcompact_boundary` stamped `now`. `None` when
/// there is nothing to clear.
pub fn clear_old_tool_results(
    history: &[Message],
    options: &MicrocompactOptions,
    now: SystemTime,
) -> Option<Microcompacted> {
    let mut clearable_ids: IdMap<'_, ()> = IdMap::default();
    for message in history {
        if let Message::Assistant(a) = message {
            for block in &a.content {
                if let ContentBlock::ToolUse(u) = block
                    && options.tools.contains(&u.name)
                {
                    clearable_ids.insert(u.id.as_str(), ());
                }
            }
        }
    }
    // Results of clearable tools, in order; the last `keep_recent` are kept.
    let mut results: Vec<(usize, usize)> = Vec::new();
    for (i, message) in history.iter().enumerate() {
        if let Message::User(u) = message {
            for (j, block) in u.content.iter().enumerate() {
                if let ContentBlock::ToolResult(r) = block
                    && clearable_ids.contains_key(r.tool_use_id.as_str())
                {
                    results.push((i, j));
                }
            }
        }
    }
    let keep_from = results.len().saturating_sub(options.keep_recent);
    // Results the model has not seen yet are never cleared: the clock is the last
    // response's, so a tool that ran past the cache's lifetime would otherwise lose its
    // result before it was ever sent.
    let seen = fresh_from(history);
    let mut messages = history.to_vec();
    let mut cleared = Vec::new();
    let mut tokens_saved = 0;
    for &(i, j) in results[..keep_from].iter().take_while(|(i, _)| *i < seen) {
        if let Message::User(u) = &mut messages[i]
            && let Some(ContentBlock::ToolResult(r)) = u.content.get_mut(j)
            && !r.content.as_ref().is_some_and(is_cleared)
        {
            let before = r.content.as_ref().map_or(0, content_tokens);
            let placeholder = Content::Text(CLEARED_PLACEHOLDER.to_owned());
            // A result no larger than the placeholder stays: clearing it would cost bytes
            // (and the cache) for nothing.
            if before <= content_tokens(&placeholder) {
                continue;
            }
            tokens_saved += before - content_tokens(&placeholder);
            r.content = Some(placeholder);
            cleared.push(r.tool_use_id.clone());
        }
    }
    if cleared.is_empty() {
        return None;
    }
    let last_id = history.last().map(Message::id);
    messages.push(
        Message::system(SystemKind::MicrocompactBoundary {
            cleared_tool_use_ids: cleared.clone(),
            tokens_saved,
        })
        .with_header(derived_header("microcompact", last_id, now)),
    );
    Some(Microcompacted {
        messages,
        cleared,
        tokens_saved,
    })
}

/// The time-based path: clears old results only when the cache of the last request has
/// expired at `now` (so clearing costs no cache); `None` when it has not, or when there is
/// nothing to clear. Results after the last assistant message are never cleared (see
/// [`clear_old_tool_results`]), however late their tools finished.
pub fn microcompact_time_based(
    history: &[Message],
    options: &MicrocompactOptions,
    now: SystemTime,
) -> Option<Microcompacted> {
    if !cache_expired(history, &options.cache_ttl, now) {
        return None;
    }
    clear_old_tool_results(history, options, now)
}

/// When the server-side edit applies and how much it must clear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSideOptions {
    /// Apply when the input reaches this many tokens (the API's default is 100,000).
    pub trigger_input_tokens: u64,
    /// Apply only if at least this many input tokens are cleared (so a small clearing does
    /// not break the cache for nothing); `None` for no minimum.
    pub clear_at_least: Option<u64>,
}

impl Default for ServerSideOptions {
    fn default() -> Self {
        ServerSideOptions {
            trigger_input_tokens: 100_000,
            clear_at_least: Some(20_000),
        }
    }
}

/// The `clear_tool_uses_20250919` edit for `options`: keep the most recent `keep_recent`
/// uses, and exclude every tool of `tools` that is not clearable (sorted, so the request is
/// byte-identical whatever the tools' order).
pub fn clear_tool_uses_edit(
    options: &MicrocompactOptions,
    server: &ServerSideOptions,
    tools: &[ToolDefinition],
) -> ClearToolUsesEdit {
    let exclude: BTreeSet<String> = tools
        .iter()
        .map(|t| t.name().to_owned())
        .filter(|name| !options.tools.contains(name))
        .collect();
    let mut edit = ClearToolUsesEdit::new()
        .with_trigger(json!({"type": "input_tokens", "value": server.trigger_input_tokens}))
        .with_keep(json!({"type": "tool_uses", "value": options.keep_recent}));
    edit.clear_at_least = server
        .clear_at_least
        .map(|n| json!({"type": "input_tokens", "value": n}));
    edit.exclude_tools = (!exclude.is_empty()).then(|| exclude.into_iter().collect());
    edit
}

/// The server-side path: adds the `clear_tool_uses_20250919` edit to `request` (replacing an
/// earlier one, after any `clear_thinking_20251015` edit, which the API wants first); the
/// messages are not touched. The request needs [`CONTEXT_MANAGEMENT_BETA`], which `threadline-client` adds
/// (`threadline_wire::betas`).
pub fn with_server_side_clearing(
    request: &mut MessagesRequest,
    options: &MicrocompactOptions,
    server: &ServerSideOptions,
) {
    let edit = ContextEdit::ClearToolUses(clear_tool_uses_edit(
        options,
        server,
        request.tools.as_deref().unwrap_or(&[]),
    ));
    let management = request
        .context_management
        .get_or_insert_with(|| ContextManagement::new(Vec::new()));
    management
        .edits
        .retain(|e| !matches!(e, ContextEdit::ClearToolUses(_)));
    let at = management
        .edits
        .iter()
        .rposition(|e| matches!(e, ContextEdit::ClearThinking(_)))
        .map_or(0, |i| i + 1);
    management.edits.insert(at, edit);
}

/// The `microcompact_boundary` to record after a response whose `context_management` says
/// the server cleared tool uses (`applied_edits` with `clear_tool_uses_20250919`); `None`
/// when nothing was cleared. The server does not say which uses it cleared, so the list is
/// empty and `tokens_saved` is the sum of its `cleared_input_tokens` (saturating at
/// `u64::MAX`).
pub fn boundary_from_applied_edits(
    context_management: &Value,
    after: Option<&Message>,
    now: SystemTime,
) -> Option<Message> {
    let saved: u64 = context_management
        .get("applied_edits")?
        .as_array()?
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("clear_tool_uses_20250919"))
        .filter_map(|e| e.get("cleared_input_tokens").and_then(Value::as_u64))
        // The server's numbers: a sum that does not fit is at most `u64::MAX`, not a panic.
        .fold(0, u64::saturating_add);
    (saved > 0).then(|| {
        Message::system(SystemKind::MicrocompactBoundary {
            cleared_tool_use_ids: Vec::new(),
            tokens_saved: saved,
        })
        .with_header(derived_header(
            "microcompact-server",
            after.map(Message::id),
            now,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_message::tool_result_block;
    use threadline_testkit::messages::{SessionBuilder, tool_use};

    fn reads(n: usize) -> Vec<Message> {
        let mut b = SessionBuilder::new();
        b.user("read everything");
        for i in 0..n {
            let msg = b.response_id();
            let id = format!("toolu_{i}");
            b.assistant(
                &msg,
                vec![tool_use(
                    &id,
                    if i == 0 { "TodoWrite" } else { "Read" },
                    json!({}),
                )],
            );
            b.tool_results(vec![tool_result_block(
                &id,
                "x".repeat(400).as_str().into(),
                false,
            )]);
        }
        b.into_messages()
    }

    #[test]
    fn keeps_the_most_recent_and_unlisted_tools() {
        let history = reads(8);
        let now = SystemTime::UNIX_EPOCH;
        let out = clear_old_tool_results(&history, &MicrocompactOptions::default(), now)
            .expect("something to clear");
        // toolu_0 is TodoWrite (not clearable); 1..=7 are Read, the last five kept.
        assert_eq!(out.cleared, ["toolu_1", "toolu_2"]);
        assert!(out.tokens_saved > 150);
        assert!(matches!(out.messages.last(), Some(Message::System(s))
            if matches!(&s.kind, SystemKind::MicrocompactBoundary { cleared_tool_use_ids, .. } if cleared_tool_use_ids.len() == 2)));
        assert!(
            clear_old_tool_results(&out.messages, &MicrocompactOptions::default(), now).is_none()
        );
    }

    #[test]
    fn results_the_model_has_not_seen_are_never_cleared() {
        let mut b = SessionBuilder::new();
        b.user("read everything");
        let msg = b.response_id();
        let ids: Vec<String> = (0..7).map(|i| format!("toolu_{i}")).collect();
        b.assistant(
            &msg,
            ids.iter()
                .map(|id| tool_use(id, "Read", json!({})))
                .collect(),
        );
        for id in &ids {
            b.tool_results(vec![tool_result_block(
                id,
                "x".repeat(400).as_str().into(),
                false,
            )]);
        }
        let history = b.into_messages();
        let t0 = history
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant(a) => a.header.timestamp.to_system_time(),
                _ => None,
            })
            .expect("a timed assistant message");
        // The tools finished six minutes after the response: the cache has expired, but
        // none of the seven results has been sent yet.
        let now = t0 + std::time::Duration::from_secs(6 * 60);
        assert!(cache_expired(
            &history,
            &MicrocompactOptions::default().cache_ttl,
            now
        ));
        assert_eq!(
            microcompact_time_based(&history, &MicrocompactOptions::default(), now),
            None
        );
    }

    #[test]
    fn the_server_side_edit_goes_after_clear_thinking() {
        let mut request = MessagesRequest::new("m", 1, Vec::new());
        request.context_management =
            Some(ContextManagement::new(vec![ContextEdit::ClearThinking(
                threadline_wire::request::ClearThinkingEdit::new().with_keep(json!("all")),
            )]));
        let options = MicrocompactOptions::default();
        with_server_side_clearing(&mut request, &options, &ServerSideOptions::default());
        with_server_side_clearing(&mut request, &options, &ServerSideOptions::default());
        let edits = &request.context_management.as_ref().expect("set").edits;
        assert_eq!(edits.len(), 2);
        assert!(matches!(edits[0], ContextEdit::ClearThinking(_)));
        assert!(matches!(edits[1], ContextEdit::ClearToolUses(_)));
    }

    #[test]
    fn applied_edits_become_a_boundary() {
        let cm = json!({"applied_edits": [
            {"type": "clear_thinking_20251015", "cleared_thinking_turns": 3, "cleared_input_tokens": 15000},
            {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 8, "cleared_input_tokens": 50000}
        ]});
        let boundary = boundary_from_applied_edits(&cm, None, SystemTime::UNIX_EPOCH).expect("one");
        assert!(matches!(boundary, Message::System(s)
            if matches!(s.kind, SystemKind::MicrocompactBoundary { tokens_saved: 50_000, .. })));
        assert!(
            boundary_from_applied_edits(
                &json!({"applied_edits": []}),
                None,
                SystemTime::UNIX_EPOCH
            )
            .is_none()
        );
    }

    #[test]
    fn the_server_s_counts_saturate_instead_of_overflowing() {
        let edit = json!({"type": "clear_tool_uses_20250919", "cleared_input_tokens": u64::MAX});
        let cm = json!({"applied_edits": [edit.clone(), edit]});
        let boundary = boundary_from_applied_edits(&cm, None, SystemTime::UNIX_EPOCH).expect("one");
        assert!(matches!(boundary, Message::System(s)
            if matches!(s.kind, SystemKind::MicrocompactBoundary { tokens_saved: u64::MAX, .. })));
    }
}
