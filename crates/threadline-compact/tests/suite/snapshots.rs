//! The exact request after each layer, for a recorded Claude Code transcript
//! (`d-kimuson__claude-code-viewer/5c0375b4…`: 31 messages of real tool work): budget (applied as
//! each result arrives, as a live session does), snip, time-based microcompact, the
//! server-side edit, autocompact and reactive compact. Long strings are snapshotted as their
//! length, a hash and their first characters, so any changed byte still shows.

use crate::common;

use std::time::Duration;

use common::{check_valid, epoch, model, request_for};
use serde_json::Value;
use threadline_compact::budget::{BudgetOptions, MemoryStore, apply_budget};
use threadline_compact::estimate::{estimate_context, estimate_messages};
use threadline_compact::microcompact::ServerSideOptions;
use threadline_compact::reattach::ReattachOptions;
use threadline_compact::summarizer::SUMMARY_PREAMBLE;
use threadline_compact::{
    AutocompactOptions, CircuitBreaker, CompactContext, ExtractiveSummarizer, HistoryOnly,
    MicrocompactOptions, ReactiveGuard, TailOptions, autocompact, microcompact_time_based,
    overhead_of, reactive_compact, snip_oldest, with_server_side_clearing,
};
use threadline_message::claude_code::{ImportOptions, import_claude_code};
use threadline_message::{CompactTrigger, Message};
use threadline_testkit::fixtures;
use threadline_wire::api_error::ApiErrorType;
use threadline_wire::service::ServiceError;
use threadline_wire::{ApiErrorResponse, MessagesRequest};

const TRANSCRIPT: &str = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";

/// Strings longer than this are shortened in snapshots.
const LONG: usize = 160;

fn session() -> Vec<Message> {
    let path = fixtures::transcripts()
        .into_iter()
        .find(|p| p.to_string_lossy().contains(TRANSCRIPT))
        .expect("the fixture transcript");
    let text = std::fs::read_to_string(path).expect("readable");
    let imported = import_claude_code(&text, &ImportOptions::default());
    assert!(imported.messages.len() > 20, "{}", imported.messages.len());
    imported.messages
}

fn fnv(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn shorten(value: &mut Value) {
    match value {
        // The summary is what autocompact writes: shown whole.
        Value::String(s) if s.starts_with(SUMMARY_PREAMBLE) => {}
        Value::String(s) if s.chars().count() > LONG => {
            let head: String = s.chars().take(60).collect();
            *s = format!(
                "[{} chars, fnv1a {:08x}] {head}…",
                s.chars().count(),
                fnv(s)
            );
        }
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

fn snapshot_of(request: &MessagesRequest) -> Value {
    let mut value = serde_json::to_value(request).expect("serializes");
    shorten(&mut value);
    value
}

fn checked_request(history: &[Message]) -> MessagesRequest {
    check_valid(history).expect("valid");
    request_for(history)
}

fn small_options() -> AutocompactOptions {
    AutocompactOptions {
        tail: TailOptions {
            min_tokens: 1_500,
            min_text_messages: 3,
            max_tokens: 4_000,
        },
        reattach: ReattachOptions {
            max_files: 3,
            file_tokens: 500,
            total_tokens: 1_200,
        },
        ..AutocompactOptions::default()
    }
}

#[test]
fn tool_result_budget() {
    let full = session();
    let options = BudgetOptions {
        default_limit: 2_000,
        preview_bytes: 200,
        ..BudgetOptions::default()
    };
    let mut store = MemoryStore::default();
    let mut live = Vec::new();
    for message in full {
        live.push(message);
        apply_budget(&mut live, &options, &mut store);
    }
    assert!(!store.files.is_empty(), "the transcript has large results");
    insta::assert_json_snapshot!(snapshot_of(&checked_request(&live)));
}

#[test]
fn snip_to_half() {
    let history = session();
    // Anchored on the recorded usage, the context includes Claude Code's system prompt and
    // tools: aim to remove half of the messages' own estimate.
    let target = estimate_context(&history, 0) - estimate_messages(&history) / 2;
    let snipped = snip_oldest(&history, target, 0);
    assert!(estimate_context(&snipped.messages, 0) <= target);
    assert!(!snipped.removed.is_empty());
    insta::assert_json_snapshot!(snapshot_of(&checked_request(&snipped.messages)));
}

#[test]
fn microcompact_after_the_cache_expired() {
    let history = session();
    let last = history
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant(a) => a.header.timestamp.to_system_time(),
            _ => None,
        })
        .expect("a timed assistant message");
    // The main chain has four results of clearable tools (Glob, Glob, Edit, Read); the Glob results are smaller than the placeholder and stay.
    let options = MicrocompactOptions {
        keep_recent: 1,
        ..MicrocompactOptions::default()
    };
    assert!(microcompact_time_based(&history, &options, last + Duration::from_secs(60)).is_none());
    let cleared = microcompact_time_based(&history, &options, last + Duration::from_secs(600))
        .expect("the cache expired: old results are cleared");
    assert!(!cleared.cleared.is_empty());
    insta::assert_json_snapshot!(snapshot_of(&checked_request(&cleared.messages)));
}

#[test]
fn microcompact_server_side() {
    let history = session();
    let mut request = checked_request(&history);
    // Tools outside the clearable set are excluded (sorted, whatever their order).
    request.tools = Some(
        ["TodoWrite", "Read", "Task", "Bash"]
            .iter()
            .map(|name| {
                serde_json::from_value(serde_json::json!({
                    "name": name,
                    "input_schema": {"type": "object"}
                }))
                .expect("a custom tool")
            })
            .collect(),
    );
    let before = serde_json::to_value(&request.messages).expect("json");
    with_server_side_clearing(
        &mut request,
        &MicrocompactOptions::default(),
        &ServerSideOptions::default(),
    );
    assert_eq!(
        serde_json::to_value(&request.messages).expect("json"),
        before
    );
    insta::assert_json_snapshot!(snapshot_of(&request));
}

#[test]
fn autocompact_with_the_extractive_summarizer() {
    let history = session();
    let base = request_for(&history);
    let limit = estimate_context(&history, overhead_of(&base)) / 2;
    let compacted = futures::executor::block_on(autocompact(
        &history,
        &ExtractiveSummarizer,
        &CompactContext {
            model: model(),
            base: &base,
            limit,
            now: epoch(),
            trigger: CompactTrigger::Auto,
            files: &HistoryOnly,
        },
        &small_options(),
        &mut CircuitBreaker::new(),
    ))
    .expect("compacts");
    assert!(compacted.post_tokens < limit);
    insta::assert_json_snapshot!(snapshot_of(&checked_request(&compacted.messages)));
}

#[test]
fn reactive_compact_after_prompt_too_long() {
    let history = session();
    let base = request_for(&history);
    let estimated = estimate_context(&history, overhead_of(&base));
    let error = ServiceError::from_api_response(
        400,
        ApiErrorResponse::new(
            ApiErrorType::InvalidRequest,
            format!(
                "prompt is too long: {} tokens > {} maximum",
                estimated + 5_000,
                estimated
            ),
        ),
        None,
    );
    let compacted = futures::executor::block_on(reactive_compact(
        &history,
        &error,
        &ExtractiveSummarizer,
        &CompactContext {
            model: model(),
            base: &base,
            limit: estimated,
            now: epoch(),
            trigger: CompactTrigger::Auto,
            files: &HistoryOnly,
        },
        &small_options(),
        &mut CircuitBreaker::new(),
        &mut ReactiveGuard::new(),
    ))
    .expect("compacts");
    insta::assert_json_snapshot!(snapshot_of(&checked_request(&compacted.messages)));
}
