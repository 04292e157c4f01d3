//! `threadline check` on the tool-search and context-management rules: `defer_loading` + `cache_control` on one tool,
//! and each context-management rule, one body each, with the exact line it prints (the API's
//! text where it publishes one, ours otherwise: see `threadline_validate::Rule`).

use serde_json::{Value, json};

use crate::common::{code, stderr, temp_file, threadline};

/// `check` on `body` (with `--beta BETA` when given): the exit code and stdout's lines.
fn check(name: &str, body: &Value, beta: Option<&str>) -> (i32, Vec<String>) {
    let file = temp_file(name, body.to_string().as_bytes());
    let path = file.to_str().expect("utf-8 path");
    let mut args = vec!["check", path];
    if let Some(beta) = beta {
        args.extend(["--beta", beta]);
    }
    let out = threadline(&args);
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    (code(&out), lines)
}

fn edits(model: &str, edits: Value) -> Value {
    json!({"model": model, "max_tokens": 1024,
           "messages": [{"role": "user", "content": "Hello"}],
           "context_management": {"edits": edits}})
}

#[test]
fn check_reports_a_deferred_tool_with_a_cache_marker_in_the_apis_words() {
    let body = json!({"model": "claude-sonnet-4-6", "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hello"}],
        "tools": [{"name": "read", "input_schema": {"type": "object"}},
                  {"name": "deploy", "input_schema": {"type": "object"}, "defer_loading": true,
                   "cache_control": {"type": "ephemeral"}}]});
    assert_eq!(
        check("deferred-marker.json", &body, None),
        (
            1,
            vec!["tools.1.cache_control: Tool 'deploy' cannot have both defer_loading=true and cache_control set. Tools with defer_loading cannot use prompt caching.".to_owned()]
        )
    );
}

#[test]
fn check_reports_a_compaction_trigger_below_50000() {
    let body = edits(
        "claude-sonnet-4-6",
        json!([{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 20000}}]),
    );
    assert_eq!(
        check("compact-trigger.json", &body, None),
        (
            1,
            vec!["context_management.edits.0.trigger.value: Input should be greater than or equal to 50000".to_owned()]
        )
    );
}

#[test]
fn check_reports_a_compaction_trigger_of_another_type() {
    let body = edits(
        "claude-sonnet-4-6",
        json!([{"type": "compact_20260112", "trigger": {"type": "tool_uses", "value": 60000}}]),
    );
    assert_eq!(
        check("compact-trigger-type.json", &body, None),
        (
            1,
            vec![
                "context_management.edits.0.trigger.type: Input should be 'input_tokens'"
                    .to_owned()
            ]
        )
    );
}

#[test]
fn check_reports_clear_thinking_listed_after_another_edit() {
    let body = edits(
        "claude-sonnet-4-6",
        json!([{"type": "clear_tool_uses_20250919"}, {"type": "clear_thinking_20251015"}]),
    );
    assert_eq!(
        check("clear-thinking-order.json", &body, None),
        (
            1,
            vec!["context_management.edits.1: clear_thinking_20251015 must be the first edit when combined with other edits".to_owned()]
        )
    );
}

#[test]
fn check_reports_zero_thinking_turns_kept() {
    let body = edits(
        "claude-sonnet-4-6",
        json!([{"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 0}}]),
    );
    assert_eq!(
        check("clear-thinking-keep.json", &body, None),
        (
            1,
            vec![
                "context_management.edits.0.keep.value: Input should be greater than or equal to 1"
                    .to_owned()
            ]
        )
    );
}

#[test]
fn check_reports_compaction_on_a_model_without_it() {
    let body = edits(
        "claude-haiku-4-5",
        json!([{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 100000}}]),
    );
    assert_eq!(
        check("compact-model.json", &body, None),
        (
            1,
            vec![
                "context_management.edits.0: compact_20260112 is not supported on this model"
                    .to_owned()
            ]
        )
    );
}

#[test]
fn check_reports_the_compaction_beta_missing_from_the_header() {
    let body = edits("claude-sonnet-4-6", json!([{"type": "compact_20260112"}]));
    let missing = (
        1,
        vec!["context_management: Extra inputs are not permitted".to_owned()],
    );
    assert_eq!(
        check("compact-beta.json", &body, Some("files-api-2025-04-14")),
        missing
    );
    // Without a header the betas are unknown: nothing to report.
    assert_eq!(check("compact-beta.json", &body, None), (0, vec![]));
    assert_eq!(
        check("compact-beta.json", &body, Some("compact-2026-01-12")),
        (0, vec![])
    );
}

#[test]
fn check_reports_the_context_management_beta_missing_for_the_clear_edits() {
    let body = edits(
        "claude-sonnet-4-6",
        json!([{"type": "clear_thinking_20251015"}, {"type": "clear_tool_uses_20250919"}, {"type": "compact_20260112"}]),
    );
    assert_eq!(
        check("clear-beta.json", &body, Some("compact-2026-01-12")),
        (
            1,
            vec!["context_management: Extra inputs are not permitted".to_owned()]
        )
    );
    assert_eq!(
        check(
            "clear-beta.json",
            &body,
            Some("context-management-2025-06-27,compact-2026-01-12")
        ),
        (0, vec![])
    );
}
