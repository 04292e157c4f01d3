//! One test for every compaction failure the peers' users report (issue numbers are in each
//! project's own tracker), showing that it cannot happen here.

use crate::common;

use common::{check_valid, epoch, last_thinking, model, request_for};
use serde_json::json;
use threadline_compact::estimate::estimate_context;
use threadline_compact::reattach::ReattachOptions;
use threadline_compact::{
    AutocompactError, AutocompactOptions, CircuitBreaker, CompactContext, Compacted,
    ExtractiveSummarizer, HistoryOnly, MicrocompactOptions, ReactiveError, ReactiveGuard,
    ScriptedSummarizer, SummarizeError, Summarizer, TailOptions, autocompact,
    clear_old_tool_results, overhead_of, reactive_compact,
};
use threadline_message::{Attachment, CompactTrigger, Message, tool_result_block};
use threadline_testkit::messages::{SessionBuilder, text, tool_use};
use threadline_validate::validate;
use threadline_wire::api_error::ApiErrorType;
use threadline_wire::service::ServiceError;
use threadline_wire::{ApiErrorResponse, ContentBlock, MessagesRequest};

/// A session of `rounds` rounds: a prompt, a `Read` of `src/file_i.rs` with a result of
/// `result_bytes`, an `Edit` of it, and an answer with signed thinking.
fn working_session(rounds: usize, result_bytes: usize) -> Vec<Message> {
    let mut b = SessionBuilder::new();
    for i in 0..rounds {
        b.user(format!("Step {i}: refactor src/file_{i}.rs"));
        let read = format!("toolu_r{i:03}");
        let edit = format!("toolu_e{i:03}");
        let msg = b.response_id();
        let thinking = b.thinking(format!("I should read file {i} first."));
        b.assistant(
            &msg,
            vec![
                thinking,
                tool_use(
                    &read,
                    "Read",
                    json!({"file_path": format!("src/file_{i}.rs")}),
                ),
            ],
        );
        b.tool_results(vec![tool_result_block(
            &read,
            format!(
                "// file {i}\n{}",
                "fn body() {}\n".repeat(result_bytes / 13)
            )
            .as_str()
            .into(),
            false,
        )]);
        let msg = b.response_id();
        b.assistant(
            &msg,
            vec![tool_use(&edit, "Edit", json!({"file_path": format!("src/file_{i}.rs"), "old_string": "a", "new_string": "b"}))],
        );
        b.tool_results(vec![tool_result_block(&edit, "edited".into(), false)]);
        let msg = b.response_id();
        let thinking = b.thinking(format!("File {i} is done."));
        b.assistant(
            &msg,
            vec![thinking, text(format!("Refactored src/file_{i}.rs."))],
        );
    }
    b.into_messages()
}

fn options() -> AutocompactOptions {
    AutocompactOptions {
        tail: TailOptions {
            min_tokens: 500,
            min_text_messages: 3,
            max_tokens: 2_000,
        },
        reattach: ReattachOptions {
            max_files: 3,
            file_tokens: 300,
            total_tokens: 900,
        },
        ..AutocompactOptions::default()
    }
}

fn context<'a>(base: &'a MessagesRequest, limit: u64) -> CompactContext<'a> {
    CompactContext {
        model: model(),
        base,
        limit,
        now: epoch(),
        trigger: CompactTrigger::Auto,
        files: &HistoryOnly,
    }
}

fn run(
    history: &[Message],
    summarizer: &dyn Summarizer,
    limit: u64,
    breaker: &mut CircuitBreaker,
) -> Result<Compacted, AutocompactError> {
    let base = request_for(history);
    futures::executor::block_on(autocompact(
        history,
        summarizer,
        &context(&base, limit),
        &options(),
        breaker,
    ))
}

fn summary(text: &str) -> Result<String, SummarizeError> {
    Ok(format!(
        "<analysis>scratch</analysis><summary>{text}</summary>"
    ))
}

fn too_long(actual: u64, limit: u64) -> Result<String, SummarizeError> {
    Err(SummarizeError::PromptTooLong {
        actual: Some(actual),
        limit: Some(limit),
    })
}

/// Codex #14120, #13279, #31351, #40213 (compaction loops): compactions that fail or do not
/// shrink open the breaker after three, and then no model call is made at all.
#[test]
fn the_breaker_stops_compaction_loops() {
    let history = working_session(20, 2_000);
    // Every summary is larger than what it replaces.
    let huge = "x".repeat(400_000);
    let summarizer = ScriptedSummarizer::new((0..10).map(|_| summary(&huge)));
    let mut breaker = CircuitBreaker::new();
    for attempt in 1..=3 {
        let error = run(&history, &summarizer, 1_000_000, &mut breaker).expect_err("never shrinks");
        assert!(
            matches!(error, AutocompactError::NotShrinking { pre, post } if post > pre),
            "attempt {attempt}: {error}"
        );
    }
    let error = run(&history, &summarizer, 1_000_000, &mut breaker).expect_err("breaker open");
    assert!(error.is_breaker_open(), "{error}");
    assert_eq!(
        summarizer.requests().len(),
        3,
        "no call once the breaker is open"
    );

    // Failures of the summarizer count the same way; a success closes the breaker.
    let failing = ScriptedSummarizer::new(vec![
        Err(SummarizeError::Failed {
            message: "overloaded".into(),
        }),
        Err(SummarizeError::Failed {
            message: "overloaded".into(),
        }),
        summary("Twenty files were refactored."),
        Err(SummarizeError::Failed {
            message: "overloaded".into(),
        }),
    ]);
    let mut breaker = CircuitBreaker::new();
    let limit = estimate_context(&history, 0);
    assert!(run(&history, &failing, limit, &mut breaker).is_err());
    assert!(run(&history, &failing, limit, &mut breaker).is_err());
    assert_eq!(breaker.consecutive_failures(), 2);
    run(&history, &failing, limit, &mut breaker).expect("the third compacts");
    assert_eq!(breaker.consecutive_failures(), 0);
}

/// Claude Code #8050, #14274 ("conversation too long" during /compact itself): the summary
/// request drops its oldest rounds and retries, at most three times; each retry is a valid
/// request that still ends with the summary instruction.
#[test]
fn a_summary_request_that_is_too_long_drops_old_rounds_and_retries() {
    let history = working_session(20, 2_000);
    let summarizer = ScriptedSummarizer::new(vec![
        too_long(202_000, 200_000),
        too_long(201_000, 200_000),
        summary("Twenty files were refactored."),
    ]);
    let mut breaker = CircuitBreaker::new();
    let limit = estimate_context(&history, 0) / 2;
    let compacted = run(&history, &summarizer, limit, &mut breaker).expect("third try fits");
    assert_eq!(compacted.summary_attempts, 3);
    assert!(compacted.dropped_messages > 0);
    let requests = summarizer.requests();
    assert_eq!(requests.len(), 3);
    for pair in requests.windows(2) {
        assert!(
            pair[1].messages.len() < pair[0].messages.len(),
            "each retry is shorter"
        );
    }
    for request in &requests {
        assert!(
            validate(request, model()).is_empty(),
            "{:?}",
            validate(request, model())
        );
        let last = request
            .messages
            .last()
            .expect("messages")
            .content
            .to_blocks();
        assert!(
            matches!(last.last(), Some(ContentBlock::Text(t)) if t.text == threadline_compact::summarizer::SUMMARY_PROMPT)
        );
    }

    // Always too long: three retries, then an error (and a failure for the breaker).
    let always = ScriptedSummarizer::new((0..10).map(|_| too_long(201_000, 200_000)));
    let mut breaker = CircuitBreaker::new();
    let error = run(&history, &always, limit, &mut breaker).expect_err("gives up");
    assert_eq!(error, AutocompactError::SummaryTooLong { retries: 3 });
    assert_eq!(
        always.requests().len(),
        4,
        "the first try and three retries"
    );
    assert_eq!(breaker.consecutive_failures(), 1);
}

/// A summary request the estimate already knows is over the window is cut before it is
/// sent, without spending a call on a certain refusal.
#[test]
fn an_over_window_summary_request_is_cut_before_it_is_sent() {
    // ~330k tokens of history on a 200k model.
    let history = working_session(60, 22_000);
    let summarizer = ScriptedSummarizer::new([summary("Sixty files were refactored.")]);
    let mut breaker = CircuitBreaker::new();
    let compacted = run(&history, &summarizer, 150_000, &mut breaker).expect("compacts");
    assert_eq!(summarizer.requests().len(), 1);
    let sent = &summarizer.requests()[0];
    let estimated = threadline_compact::estimate_request(sent) + sent.max_tokens;
    assert!(estimated <= model().context_window, "{estimated}");
    assert!(compacted.dropped_messages > 0);
}

/// Codex #9046, #7232, #40619 (compaction that overflows or grows the context): a result that
/// is not smaller is refused and the caller keeps its array; re-attached files never push the
/// result over the limit.
#[test]
fn compaction_never_grows_the_context() {
    let history = working_session(12, 2_000);
    let pre = estimate_context(&history, 0);
    let bloated = ScriptedSummarizer::new([summary(&"y".repeat(4 * pre as usize))]);
    let error =
        run(&history, &bloated, 1_000_000, &mut CircuitBreaker::new()).expect_err("refused");
    assert!(
        matches!(error, AutocompactError::NotShrinking { .. }),
        "{error}"
    );

    // A tight limit: the files fill only the room left below it.
    let limit = 3_000;
    let compacted = run(
        &history,
        &ScriptedSummarizer::new([summary("Twelve files.")]),
        limit,
        &mut CircuitBreaker::new(),
    )
    .expect("compacts");
    assert!(
        compacted.post_tokens < limit,
        "{} >= {limit}",
        compacted.post_tokens
    );
    assert!(compacted.post_tokens < compacted.pre_tokens);
    check_valid(&compacted.messages).expect("valid");
}

/// Claude Code #12225, #13012, #24087 ("thinking blocks in the latest assistant message cannot
/// be modified" during compaction): every layer leaves the latest assistant message, thinking
/// and signature included, byte-identical in the request.
#[test]
fn the_latest_assistant_thinking_is_never_modified() {
    let history = working_session(10, 2_000);
    let before = last_thinking(&history).expect("an assistant message");
    assert!(!before.is_empty());

    let compacted = run(
        &history,
        &ScriptedSummarizer::new([summary("Ten files.")]),
        estimate_context(&history, 0) / 2,
        &mut CircuitBreaker::new(),
    )
    .expect("compacts");
    assert_eq!(last_thinking(&compacted.messages), Some(before.clone()));
    let last = history.last().expect("messages");
    assert!(compacted.messages.contains(last), "kept verbatim");

    let micro = clear_old_tool_results(
        &history,
        &MicrocompactOptions {
            keep_recent: 0,
            ..MicrocompactOptions::default()
        },
        epoch(),
    )
    .expect("clears");
    assert_eq!(last_thinking(&micro.messages), Some(before));
}

/// Codex #18720, #24779 (compaction losing task state): the latest request survives verbatim
/// even when the work since it is larger than the tail, and the files in progress come back
/// as attachments; the extractive summary lists every request and file.
#[test]
fn task_state_survives_compaction() {
    // One request, then a long run of tool work on several files.
    let mut b = SessionBuilder::new();
    b.user("Earlier: set up the project");
    let msg = b.response_id();
    b.assistant(&msg, vec![text("Set up.")]);
    let prompt = b.user("Port every module in src/ to the new error type");
    for i in 0..12 {
        let id = format!("toolu_{i:03}");
        let msg = b.response_id();
        b.assistant(
            &msg,
            vec![tool_use(
                &id,
                "Read",
                json!({"file_path": format!("src/m{i}.rs")}),
            )],
        );
        b.tool_results(vec![tool_result_block(
            &id,
            format!("mod m{i};\n{}", "x".repeat(3_000)).as_str().into(),
            false,
        )]);
    }
    let history = b.into_messages();
    let prompt_message = history
        .iter()
        .find(|m| m.id() == &prompt)
        .cloned()
        .expect("prompt");

    let base = request_for(&history);
    let limit = estimate_context(&history, overhead_of(&base)) / 2;
    let compacted = futures::executor::block_on(autocompact(
        &history,
        &ExtractiveSummarizer,
        &context(&base, limit),
        &options(),
        &mut CircuitBreaker::new(),
    ))
    .expect("compacts");
    // The prompt, verbatim, right after the summary.
    assert_eq!(compacted.messages[2], prompt_message);
    // The tail holds the last two reads (m10, m11); the most recent files before it are
    // re-attached, newest first.
    assert_eq!(
        compacted.reattached,
        ["src/m9.rs", "src/m8.rs", "src/m7.rs"]
    );
    assert!(compacted.messages.iter().any(|m| matches!(m,
        Message::Attachment(a) if matches!(&a.attachment, Attachment::File { path, .. } if path == "src/m9.rs"))));
    // The summary names both requests and the files read.
    let Message::User(summary) = &compacted.messages[1] else {
        panic!("the summary")
    };
    let ContentBlock::Text(summary) = &summary.content[0] else {
        panic!("text")
    };
    assert!(
        summary.text.contains("Earlier: set up the project"),
        "{}",
        summary.text
    );
    assert!(
        summary.text.contains("Port every module"),
        "{}",
        summary.text
    );
    assert!(
        summary.text.contains("src/m0.rs (Read)"),
        "{}",
        summary.text
    );
    check_valid(&compacted.messages).expect("valid");
}

fn prompt_too_long(actual: u64, maximum: u64) -> ServiceError {
    ServiceError::from_api_response(
        400,
        ApiErrorResponse::new(
            ApiErrorType::InvalidRequest,
            format!("prompt is too long: {actual} tokens > {maximum} maximum"),
        ),
        None,
    )
}

/// Claude Code's "prompt is too long" ends the session; goose detects it by substring only:
/// here the error's counts drive one compaction for the turn, the retried array is valid and
/// smaller, and a second refusal in the same turn is reported, not looped.
#[test]
fn reactive_compact_retries_once_per_turn() {
    let history = working_session(20, 2_000);
    let base = request_for(&history);
    let estimated = estimate_context(&history, overhead_of(&base));
    // The API counted 30% more than the estimate, over its maximum.
    let actual = estimated * 13 / 10;
    let error = prompt_too_long(actual, actual - 1_000);
    let summarizer = ScriptedSummarizer::new([summary("Twenty files."), summary("again")]);
    let mut breaker = CircuitBreaker::new();
    let mut guard = ReactiveGuard::new();
    let ctx = context(&base, 1_000_000);
    let compacted = futures::executor::block_on(reactive_compact(
        &history,
        &error,
        &summarizer,
        &ctx,
        &options(),
        &mut breaker,
        &mut guard,
    ))
    .expect("compacts");
    assert!(matches!(&compacted.messages[0], Message::System(s)
        if matches!(s.kind, threadline_message::SystemKind::CompactBoundary { trigger: CompactTrigger::Reactive, .. })));
    // Aimed below the maximum less the estimate's shortfall.
    assert!(compacted.post_tokens < (actual - 1_000) - (actual - estimated));
    check_valid(&compacted.messages).expect("valid");

    // Refused again in the same turn: reported.
    let again = futures::executor::block_on(reactive_compact(
        &compacted.messages,
        &error,
        &summarizer,
        &ctx,
        &options(),
        &mut breaker,
        &mut guard,
    ))
    .expect_err("no second compaction");
    assert!(matches!(
        again,
        ReactiveError::StillTooLongAfterCompaction {
            actual: Some(_),
            ..
        }
    ));
    assert!(again.is_terminal());
    assert_eq!(summarizer.requests().len(), 1);

    // A new turn may compact again; other errors are not this layer's business.
    guard.new_turn();
    let overloaded = ServiceError::from_api_response(
        529,
        ApiErrorResponse::new(ApiErrorType::Overloaded, "Overloaded"),
        None,
    );
    let other = futures::executor::block_on(reactive_compact(
        &history,
        &overloaded,
        &summarizer,
        &ctx,
        &options(),
        &mut breaker,
        &mut guard,
    ))
    .expect_err("not ours");
    assert_eq!(other, ReactiveError::NotPromptTooLong);
    assert!(!guard.compacted_this_turn());
}

/// Codex #5385, goose #7444 (pairing 400s after compaction): the tail never starts between a
/// tool use and its result, even when the size bounds fall exactly there.
#[test]
fn the_tail_never_starts_inside_a_tool_pair() {
    let history = working_session(8, 2_000);
    for max in [100, 300, 600, 900, 1_200, 2_000, 5_000] {
        let mut opts = options();
        opts.tail = TailOptions {
            min_tokens: max / 2,
            min_text_messages: 1,
            max_tokens: max,
        };
        let base = request_for(&history);
        let result = futures::executor::block_on(autocompact(
            &history,
            &ScriptedSummarizer::new([summary("Eight files.")]),
            &context(&base, estimate_context(&history, 0)),
            &opts,
            &mut CircuitBreaker::new(),
        ));
        let compacted = result.expect("compacts");
        check_valid(&compacted.messages).unwrap_or_else(|e| panic!("max {max}: {e}"));
        let normalized = threadline_normalize::normalize(&compacted.messages, &Default::default());
        assert!(
            normalized.report.repairs.is_empty(),
            "max {max}: repairs {:?}",
            normalized.report.summary()
        );
    }
}
