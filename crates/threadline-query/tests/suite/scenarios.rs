//! One scenario per `Transition` and per `Terminal`, against the scripted service: each
//! asserts the path taken (never message text), that every request passed `validate`, that
//! consecutive requests kept their prefix (unless a compaction came between), and that the
//! history left behind normalizes to a valid request.

use crate::common;
#[path = "scenarios/request_builder.rs"]
mod request_builder;
#[path = "scenarios/telemetry.rs"]
mod telemetry;

use std::time::Duration;

use common::{
    Calls, Log, Outcome, assert_history_valid, check, compaction, cut_short, prompt,
    reactive_compaction, run, sleep_input, tool_result_texts, tools, with_web_search,
};
use futures::future::BoxFuture;
use serde_json::json;
use threadline_message::{CompactTrigger, Message};
use threadline_query::recovery::{INTERRUPTED, MAX_OUTPUT_RECOVERY_ATTEMPTS, STREAM_FAILED};
use threadline_query::scripted::{Reply, Response, ScriptedService};
use threadline_query::{
    CancellationToken, ContextPolicy, Event, PolicyError, Query, QueryConfig, State, StepInput,
    StepOutcome, StopDecision, Terminal, TokenBudget, ToolSet, Transition,
};
use threadline_wire::service::{ServiceError, ServiceErrorKind};
use threadline_wire::{ApiErrorType, Content, ContentBlock, Role, StopReason};

const MODEL: &str = threadline_query::scripted::SCRIPTED_MODEL;

fn config() -> QueryConfig {
    QueryConfig::new(MODEL, 1024).with_system("You are a test.")
}

fn end(id: &str, text: &str) -> Reply {
    Reply::stream(Response::new(id).text(text).stop(StopReason::EndTurn))
}

/// A response asking for one `read` (`toolu_1`, 1 ms).
fn read_once(id: &str) -> Reply {
    Reply::stream(
        Response::new(id)
            .tool_use("toolu_1", "read", sleep_input(1))
            .stop(StopReason::ToolUse),
    )
}

/// The checks after a compaction: the second request is what follows the boundary (the
/// summary alone), every request passed `validate`, and the visible history is valid.
fn check_after_compaction(outcome: &Outcome, service: &ScriptedService, tools: &ToolSet) {
    let requests = service.requests();
    assert_eq!(requests[1].messages.len(), 1);
    assert!(service.violations().is_empty());
    assert_history_valid(outcome.state.visible(), tools);
}

#[tokio::test(start_paused = true)]
async fn next_turn_then_completed() {
    let log = Log::default();
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .text("Reading.")
                .tool_use("toolu_1", "read", sleep_input(5))
                .stop(StopReason::ToolUse),
        ),
        end("msg_2", "Done."),
    ]);
    let set = tools(&log);
    let q = Query::new(service.clone(), config()).with_tools(set.clone());
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.terminal, Terminal::Completed);
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(out.state.turn_count, 1);
    assert_eq!(service.requests().len(), 2);
    check(&out, &service, &set);
}

/// A policy with scripted answers to the prompt-too-long steps and the blocking limit.
#[derive(Default)]
struct Scripted {
    drains: bool,
    compacts: bool,
    blocking: Option<(u64, u64)>,
    calls: Calls,
}

impl ContextPolicy for Scripted {
    fn drain(&mut self, _input: StepInput<'_>) -> StepOutcome {
        self.calls.push("drain");
        if self.drains {
            StepOutcome::rewritten()
        } else {
            StepOutcome::unchanged()
        }
    }

    fn reactive_compact<'a>(
        &'a mut self,
        _input: StepInput<'a>,
        _error: &'a ServiceError,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        reactive_compaction(
            &self.calls,
            self.compacts,
            250_000,
            "Summary: the user asked for the thing.",
        )
    }

    fn blocking_limit(&self, _history: &[Message], _boundary: usize) -> Option<(u64, u64)> {
        self.blocking
    }
}

/// A prompt-too-long answer, then `ok`, with `policy` answering the error: the run, the
/// service and the policy's calls.
async fn retry_after_prompt_too_long(policy: Scripted) -> (Outcome, ScriptedService, Calls) {
    let service =
        ScriptedService::new([Reply::prompt_too_long(210_000, 200_000), end("msg_1", "ok")]);
    let calls = policy.calls.clone();
    let q = Query::new(service.clone(), config()).with_policy(policy);
    let out = run(q, State::default(), prompt()).await;
    (out, service, calls)
}

#[tokio::test(start_paused = true)]
async fn collapse_drain_retry() {
    let (out, service, calls) = retry_after_prompt_too_long(Scripted {
        drains: true,
        ..Scripted::default()
    })
    .await;
    assert_eq!(out.path(), [Transition::CollapseDrainRetry]);
    assert_eq!(out.terminal, Terminal::Completed);
    assert_eq!(calls.take(), ["drain"]);
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn reactive_compact_retry_moves_the_visible_window() {
    let (out, service, calls) = retry_after_prompt_too_long(Scripted {
        compacts: true,
        ..Scripted::default()
    })
    .await;
    assert_eq!(out.path(), [Transition::ReactiveCompactRetry]);
    assert_eq!(out.terminal, Terminal::Completed);
    // Drain first (nothing to drain), then compaction.
    assert_eq!(calls.take(), ["drain", "reactive_compact"]);
    assert_eq!(out.state.compaction.compactions, 1);
    // The retry sends what follows the boundary: the summary alone.
    check_after_compaction(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn prompt_too_long_without_help_is_terminal() {
    let service = ScriptedService::new([Reply::prompt_too_long(210_000, 200_000)]);
    let q = Query::new(service.clone(), config());
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(
        out.terminal,
        Terminal::PromptTooLong {
            tokens: Some((210_000, 200_000))
        }
    );
    assert!(out.path().is_empty());
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn prompt_too_long_after_a_compaction_that_did_not_help() {
    let service = ScriptedService::new([
        Reply::prompt_too_long(210_000, 200_000),
        Reply::prompt_too_long(205_000, 200_000),
    ]);
    let policy = Scripted {
        compacts: true,
        ..Scripted::default()
    };
    let q = Query::new(service.clone(), config()).with_policy(policy);
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::ReactiveCompactRetry]);
    assert!(matches!(out.terminal, Terminal::PromptTooLong { .. }));
}

fn cut(id: &str) -> Reply {
    Reply::stream(
        Response::new(id)
            .text("A long answer that was cut")
            .stop(StopReason::MaxTokens),
    )
}

#[tokio::test(start_paused = true)]
async fn max_tokens_escalates_once_then_resumes_then_gives_up() {
    let mut replies: Vec<Reply> = (0..5).map(|i| cut(&format!("msg_{i}"))).collect();
    replies.push(end("msg_never", "unused"));
    let service = ScriptedService::new(replies);
    let q = Query::new(service.clone(), config().with_escalated_max_tokens(16_000));
    let out = run(q, State::default(), prompt()).await;
    let mut expected = vec![Transition::MaxOutputTokensEscalate];
    expected.extend(std::iter::repeat_n(
        Transition::MaxOutputTokensRecovery,
        MAX_OUTPUT_RECOVERY_ATTEMPTS as usize,
    ));
    assert_eq!(out.path(), expected);
    assert_eq!(out.terminal, Terminal::Completed);
    let requests = service.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[0].max_tokens, 1024);
    assert!(requests[1..].iter().all(|r| r.max_tokens == 16_000));
    // The escalation retracted the cut output: the retry is the same conversation.
    assert_eq!(requests[0].messages, requests[1].messages);
    // Each resume adds the cut answer and one meta message.
    assert_eq!(requests[2].messages.len(), requests[1].messages.len() + 2);
    assert_eq!(service.remaining(), 1);
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn max_tokens_escalation_then_success() {
    let service = ScriptedService::new([cut("msg_1"), end("msg_2", "short")]);
    let q = Query::new(service.clone(), config());
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::MaxOutputTokensEscalate]);
    assert_eq!(out.terminal, Terminal::Completed);
    // Escalated to the model table's output limit.
    assert_eq!(service.requests()[1].max_tokens, config().escalated_limit());
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn a_max_tokens_error_from_the_service_takes_the_same_ladder() {
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .text("cut here")
                .fail(ServiceError::new(ServiceErrorKind::MaxTokens, "max_tokens")),
        ),
        end("msg_2", "short"),
    ]);
    let q = Query::new(service.clone(), config());
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::MaxOutputTokensEscalate]);
    assert_eq!(out.terminal, Terminal::Completed);
    let requests = service.requests();
    assert_eq!(requests[0].messages, requests[1].messages);
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn stop_hook_blocking_then_completed() {
    let service = ScriptedService::new([end("msg_1", "first"), end("msg_2", "second")]);
    let mut seen_active = Vec::new();
    let hook = move |ctx: threadline_query::StopContext<'_>| {
        seen_active.push(ctx.stop_hook_active);
        if ctx.stop_hook_active {
            StopDecision::Allow
        } else {
            StopDecision::Block {
                message: "Run the tests before you stop.".into(),
            }
        }
    };
    let q = Query::new(service.clone(), config()).with_stop_hook(hook);
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::StopHookBlocking]);
    assert_eq!(out.terminal, Terminal::Completed);
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn a_stop_hook_that_always_blocks_is_stopped_at_the_limit() {
    let replies: Vec<Reply> = (0..20).map(|i| end(&format!("msg_{i}"), "again")).collect();
    let service = ScriptedService::new(replies);
    let hook = |_ctx: threadline_query::StopContext<'_>| StopDecision::Block {
        message: "no".into(),
    };
    let mut cfg = config();
    cfg.max_stop_hook_blocks = 2;
    let q = Query::new(service.clone(), cfg).with_stop_hook(hook);
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::StopHookBlocking; 2]);
    assert!(matches!(out.terminal, Terminal::HookStopped { .. }));
    check(&out, &service, &ToolSet::new());
}

/// The limit counts the blocks of the whole run: a tool call between two blocks does not
/// start the count again (it did, and such a run never ended).
#[tokio::test(start_paused = true)]
async fn a_stop_hook_that_always_blocks_is_stopped_at_the_limit_across_tool_turns() {
    let log = Log::default();
    let replies: Vec<Reply> = (0..20)
        .map(|i| {
            if i % 2 == 0 {
                Reply::stream(
                    Response::new(&format!("msg_{i}"))
                        .tool_use(&format!("toolu_{i}"), "read", sleep_input(1))
                        .stop(StopReason::ToolUse),
                )
            } else {
                end(&format!("msg_{i}"), "again")
            }
        })
        .collect();
    let service = ScriptedService::new(replies);
    let hook = |_ctx: threadline_query::StopContext<'_>| StopDecision::Block {
        message: "no".into(),
    };
    let mut cfg = config();
    cfg.max_stop_hook_blocks = 2;
    let set = tools(&log);
    let q = Query::new(service.clone(), cfg)
        .with_tools(set.clone())
        .with_stop_hook(hook);
    let out = run(q, State::default(), prompt()).await;
    assert!(
        matches!(out.terminal, Terminal::HookStopped { .. }),
        "{:?}",
        out.terminal
    );
    assert_eq!(
        out.path(),
        [
            Transition::NextTurn,
            Transition::StopHookBlocking,
            Transition::NextTurn,
            Transition::StopHookBlocking,
            Transition::NextTurn,
        ]
    );
    assert_eq!(service.requests().len(), 6);
    check(&out, &service, &set);
}

#[tokio::test(start_paused = true)]
async fn hook_stopped() {
    let service = ScriptedService::new([end("msg_1", "done")]);
    let hook = |_ctx: threadline_query::StopContext<'_>| StopDecision::Stop {
        reason: "budget exhausted".into(),
    };
    let q = Query::new(service.clone(), config()).with_stop_hook(hook);
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(
        out.terminal,
        Terminal::HookStopped {
            reason: "budget exhausted".into()
        }
    );
    assert!(out.path().is_empty());
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn pause_turn_resume_sends_the_paused_turn_back() {
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .text("Searching.")
                .block(json!({"type": "server_tool_use", "id": "srvtoolu_01",
                    "name": "web_search", "input": {"query": "rust"}}))
                .stop(StopReason::PauseTurn),
        ),
        Reply::stream(
            Response::new("msg_2")
                .text("Found it.")
                .stop(StopReason::EndTurn),
        ),
    ]);
    let q = Query::new(service.clone(), config()).with_shaper(with_web_search);
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::PauseTurnResume]);
    assert_eq!(out.terminal, Terminal::Completed);
    let requests = service.requests();
    let last = requests[1].messages.last().expect("messages");
    assert_eq!(last.role, Role::Assistant);
    let Content::Blocks(blocks) = &last.content else {
        panic!("blocks")
    };
    assert!(matches!(blocks.last(), Some(ContentBlock::ServerToolUse(u)) if u.id == "srvtoolu_01"));
    check(&out, &service, &ToolSet::new());
}

/// A paused response: the result of the search the previous pause left running (`n - 1`,
/// unless `first`), some text, and search `n` left running.
fn paused_reply(n: usize, first: bool) -> Reply {
    let mut response = Response::new(&format!("msg_p{n}"));
    if !first {
        response = response.block(search_result(n - 1));
    }
    Reply::stream(
        response
            .text("Searching.")
            .block(json!({"type": "server_tool_use", "id": search_id(n),
                "name": "web_search", "input": {"query": "rust"}}))
            .stop(StopReason::PauseTurn),
    )
}

/// The response that ends a paused series: the last search's result, then text.
fn resumed_end(n: usize, text: &str) -> Reply {
    Reply::stream(
        Response::new(&format!("msg_e{n}"))
            .block(search_result(n))
            .text(text)
            .stop(StopReason::EndTurn),
    )
}

fn search_id(n: usize) -> String {
    format!("srvtoolu_{n:02}")
}

fn search_result(n: usize) -> serde_json::Value {
    json!({"type": "web_search_tool_result", "tool_use_id": search_id(n), "content": []})
}

/// The bound counts pauses in a row: a turn that ends between two series starts the count
/// again.
#[tokio::test(start_paused = true)]
async fn pause_turn_resumes_are_counted_in_a_row() {
    let limit = threadline_query::recovery::MAX_PAUSE_TURN_RESUMES as usize;
    let series = limit - 1;
    let mut replies: Vec<Reply> = (0..series).map(|n| paused_reply(n, n == 0)).collect();
    replies.push(resumed_end(series - 1, "First part."));
    replies.extend((series..2 * series).map(|n| paused_reply(n, n == series)));
    replies.push(resumed_end(2 * series - 1, "Done."));
    let service = ScriptedService::new(replies);
    let hook = |ctx: threadline_query::StopContext<'_>| {
        if ctx.stop_hook_active {
            StopDecision::Allow
        } else {
            StopDecision::Block {
                message: "Keep searching.".into(),
            }
        }
    };
    let q = Query::new(service.clone(), config())
        .with_shaper(with_web_search)
        .with_stop_hook(hook);
    let out = run(q, State::default(), prompt()).await;
    let mut expected = vec![Transition::PauseTurnResume; series];
    expected.push(Transition::StopHookBlocking);
    expected.extend(vec![Transition::PauseTurnResume; series]);
    assert_eq!(out.path(), expected);
    assert_eq!(out.terminal, Terminal::Completed);
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn token_budget_continuation_until_the_target() {
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .text("part one")
                .output_tokens(2_000)
                .stop(StopReason::EndTurn),
        ),
        Reply::stream(
            Response::new("msg_2")
                .text("part two")
                .output_tokens(8_000)
                .stop(StopReason::EndTurn),
        ),
    ]);
    let q = Query::new(
        service.clone(),
        config().with_token_budget(TokenBudget::new(10_000)),
    );
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::TokenBudgetContinuation]);
    assert_eq!(out.terminal, Terminal::Completed);
    assert_eq!(out.state.output_tokens, 10_000);
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn max_turns_stops_after_recording_the_results() {
    let log = Log::default();
    let set = tools(&log);
    let service = ScriptedService::new([read_once("msg_1"), end("msg_never", "unused")]);
    let q = Query::new(service.clone(), config().with_max_turns(1)).with_tools(set.clone());
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.terminal, Terminal::MaxTurns { limit: 1 });
    assert!(out.path().is_empty());
    assert_eq!(tool_result_texts(&out.state.messages).len(), 1);
    check(&out, &service, &set);
}

#[tokio::test(start_paused = true)]
async fn model_error_is_terminal() {
    let service = ScriptedService::new([Reply::api_error(
        529,
        ApiErrorType::Overloaded,
        "Overloaded",
    )]);
    let q = Query::new(service.clone(), config());
    let out = run(q, State::default(), prompt()).await;
    assert!(matches!(
        out.terminal,
        Terminal::ModelError {
            status: Some(529),
            ..
        }
    ));
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn a_stream_failing_after_tool_uses_gives_each_a_synthetic_result() {
    let log = Log::default();
    let set = tools(&log);
    let service = ScriptedService::new([Reply::stream(
        Response::new("msg_1")
            .tool_use("toolu_1", "write", sleep_input(1_000))
            .tool_use("toolu_2", "write", sleep_input(1_000))
            .sleep(Duration::from_millis(10))
            .fail(ServiceError::new(
                ServiceErrorKind::Connection,
                "connection reset",
            )),
    )]);
    let q = Query::new(service.clone(), config()).with_tools(set.clone());
    let out = run(q, State::default(), prompt()).await;
    assert!(matches!(out.terminal, Terminal::ModelError { .. }));
    assert_eq!(
        tool_result_texts(&out.state.messages),
        cut_short(&["toolu_1", "toolu_2"], STREAM_FAILED)
    );
    check(&out, &service, &set);
}

#[tokio::test(start_paused = true)]
async fn a_cut_stream_keeps_the_text_that_arrived() {
    let service = ScriptedService::new([Reply::stream(
        Response::new("msg_1")
            .text("Complete block.")
            .unfinished_text("Half a sent")
            .cut(),
    )]);
    let q = Query::new(service.clone(), config());
    let out = run(q, State::default(), prompt()).await;
    assert!(matches!(out.terminal, Terminal::ModelError { .. }));
    let text: String = out
        .state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a.content.iter().filter_map(|b| match b {
                threadline_wire::ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(text, "Complete block.Half a sent");
    check(&out, &service, &ToolSet::new());
}

#[tokio::test(start_paused = true)]
async fn blocking_limit_sends_nothing() {
    let service = ScriptedService::new([end("msg_1", "unused")]);
    let policy = Scripted {
        blocking: Some((300_000, 200_000)),
        ..Scripted::default()
    };
    let q = Query::new(service.clone(), config()).with_policy(policy);
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(
        out.terminal,
        Terminal::BlockingLimit {
            tokens: 300_000,
            limit: 200_000
        }
    );
    assert!(service.requests().is_empty());
    check(&out, &service, &ToolSet::new());
}

/// A policy whose first tool-result budget step edits message `at` in place, reporting the
/// edit from `at` (`exact`) or anywhere.
struct EditsInPlace {
    at: usize,
    exact: bool,
    done: bool,
}

impl ContextPolicy for EditsInPlace {
    fn tool_result_budget(&mut self, input: StepInput<'_>) -> StepOutcome {
        if std::mem::replace(&mut self.done, true) {
            return StepOutcome::unchanged();
        }
        if let Some(Message::User(user)) = input.history.get_mut(self.at) {
            user.content = vec![ContentBlock::text("edited in place")];
        }
        if self.exact {
            StepOutcome::rewritten_from(self.at)
        } else {
            StepOutcome::rewritten()
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_unchanged_prefix_is_the_runs_start_less_what_a_step_edited() {
    let service = ScriptedService::new([
        end("msg_1", "one"),
        end("msg_2", "two"),
        end("msg_3", "three"),
        end("msg_4", "four"),
    ]);
    let first = run(
        Query::new(service.clone(), config()),
        State::default(),
        prompt(),
    )
    .await;
    assert_eq!(first.terminal, Terminal::Completed);
    assert_eq!(first.state.unchanged_prefix(), 0, "it started empty");
    let start = first.state.messages.len();

    // A run that only appends leaves everything it started with.
    let appended = run(Query::new(service.clone(), config()), first.state, prompt()).await;
    assert_eq!(appended.terminal, Terminal::Completed);
    assert!(appended.state.messages.len() > start);
    assert_eq!(appended.state.unchanged_prefix(), start);
    let edited_at = start;
    let before = appended.state.messages[..edited_at].to_vec();

    // A step that edits message `edited_at` and says so keeps what precedes it.
    let policy = EditsInPlace {
        at: edited_at,
        exact: true,
        done: false,
    };
    let q = Query::new(service.clone(), config()).with_policy(policy);
    let exact = run(q, appended.state, prompt()).await;
    assert_eq!(exact.terminal, Terminal::Completed);
    assert_eq!(exact.state.unchanged_prefix(), edited_at);
    assert_eq!(exact.state.messages[..edited_at], before[..]);
    let Message::User(edited) = &exact.state.messages[edited_at] else {
        panic!("message {edited_at} is the second run's prompt")
    };
    assert_eq!(edited.content, [ContentBlock::text("edited in place")]);

    // One that does not say where claims nothing.
    let policy = EditsInPlace {
        at: 0,
        exact: false,
        done: false,
    };
    let q = Query::new(service.clone(), config()).with_policy(policy);
    let anywhere = run(q, exact.state, prompt()).await;
    assert_eq!(anywhere.terminal, Terminal::Completed);
    assert_eq!(anywhere.state.unchanged_prefix(), 0);
}

/// A message a step changes in place is recorded again as it now is — in the transcript and
/// as `Event::Rewritten` — so that the transcript reads back as the history the loop holds
/// (a resumed session then sends what the live one sent), whether the step lists where it
/// edited or claims the whole history.
#[tokio::test(start_paused = true)]
async fn what_a_step_changes_in_place_is_recorded_again_and_reads_back_as_the_history() {
    use threadline_message::{TranscriptWriter, read_transcript};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("session.jsonl");
    let service = ScriptedService::new([
        end("msg_1", "one"),
        end("msg_2", "two"),
        end("msg_3", "three"),
    ]);
    let transcript = || TranscriptWriter::open(&path).expect("opens");
    let first = run(
        Query::new(service.clone(), config()).with_transcript(transcript()),
        State::default(),
        prompt(),
    )
    .await;
    let mut state = first.state;
    for (at, exact) in [(0, true), (1, false)] {
        let policy = EditsInPlace {
            at,
            exact,
            done: false,
        };
        let held = state.messages.len();
        let q = Query::new(service.clone(), config())
            .with_policy(policy)
            .with_transcript(transcript());
        let out = run(q, state, prompt()).await;
        assert_eq!(out.terminal, Terminal::Completed);
        let rewritten: Vec<usize> = out
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Rewritten { index, message } => {
                    assert_eq!(Some(message), out.state.messages.get(*index));
                    Some(*index)
                }
                _ => None,
            })
            .collect();
        // The history the step saw: what the run started with and its prompt. Recorded
        // again from where the step said it edited (`at`), or all of it.
        let seen = held + prompt().len();
        let from = if exact { at } else { 0 };
        assert_eq!(rewritten, (from..seen).collect::<Vec<_>>());
        let read = read_transcript(&path).expect("reads");
        assert!(read.problems.is_empty(), "{:?}", read.problems);
        assert_eq!(read.messages, out.state.messages);
        state = out.state;
    }
}

/// Runs `service` with `tools`, cancelled one second in (on tokio's clock).
async fn run_cancelled_after_a_second(service: &ScriptedService, tools: &ToolSet) -> Outcome {
    let cancel = CancellationToken::new();
    let q = Query::new(service.clone(), config())
        .with_tools(tools.clone())
        .with_cancellation(cancel.clone());
    let abort = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    });
    let out = run(q, State::default(), prompt()).await;
    abort.await.expect("abort task");
    out
}

#[tokio::test(start_paused = true)]
async fn aborted_streaming_answers_every_emitted_tool_use() {
    let log = Log::default();
    let set = tools(&log);
    let service = ScriptedService::new([Reply::stream(
        Response::new("msg_1")
            .tool_use("toolu_1", "read", sleep_input(10))
            .tool_use("toolu_2", "write", sleep_input(10_000))
            .sleep(Duration::from_secs(60))
            .text("never arrives")
            .stop(StopReason::ToolUse),
    )]);
    let out = run_cancelled_after_a_second(&service, &set).await;
    assert_eq!(out.terminal, Terminal::AbortedStreaming);
    // toolu_1 finished before the abort and keeps its real result; toolu_2 was running.
    assert_eq!(
        tool_result_texts(&out.state.messages),
        [
            ("toolu_1".to_owned(), "slept 10 ms".to_owned(), false),
            ("toolu_2".to_owned(), INTERRUPTED.to_owned(), true)
        ]
    );
    check(&out, &service, &set);
}

#[tokio::test(start_paused = true)]
async fn aborted_tools() {
    let log = Log::default();
    let set = tools(&log);
    let service = ScriptedService::new([Reply::stream(
        Response::new("msg_1")
            .tool_use("toolu_1", "write", sleep_input(10_000))
            .tool_use("toolu_2", "write", sleep_input(10_000))
            .stop(StopReason::ToolUse),
    )]);
    let out = run_cancelled_after_a_second(&service, &set).await;
    assert_eq!(out.terminal, Terminal::AbortedTools);
    let results = tool_result_texts(&out.state.messages);
    assert_eq!(results.len(), 2);
    assert!(
        results
            .iter()
            .all(|(_, text, err)| text == INTERRUPTED && *err)
    );
    // The second (unsafe) call never started.
    assert_eq!(log.order("start"), ["toolu_1"]);
    check(&out, &service, &set);
}

#[tokio::test(start_paused = true)]
async fn unknown_tools_invalid_input_and_denied_calls_become_readable_errors() {
    let log = Log::default();
    let set = tools(&log);
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .tool_use("toolu_1", "nope", serde_json::json!({}))
                .tool_use("toolu_2", "read", serde_json::json!({"ms": "soon"}))
                .tool_use("toolu_3", "write", sleep_input(1))
                .stop(StopReason::ToolUse),
        ),
        end("msg_2", "ok"),
    ]);
    let deny_writes = |r: threadline_query::PermissionRequest<'_>| {
        if r.tool == "write" {
            threadline_query::Permission::Deny {
                message: "writes are off".into(),
            }
        } else {
            threadline_query::Permission::Allow
        }
    };
    let q = Query::new(service.clone(), config())
        .with_tools(set.clone())
        .with_permission(deny_writes);
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    let results = tool_result_texts(&out.state.messages);
    assert!(results.iter().all(|(_, _, is_error)| *is_error));
    assert_eq!(results[2].1, "writes are off");
    assert!(log.order("start").is_empty(), "no tool ran");
    check(&out, &service, &set);
}

#[tokio::test(start_paused = true)]
async fn requests_are_byte_identical_for_the_same_session() {
    async fn once() -> Vec<String> {
        let log = Log::default();
        let service = ScriptedService::new([
            Reply::stream(
                Response::new("msg_1")
                    .tool_use("toolu_1", "nope", serde_json::json!({}))
                    .stop(StopReason::ToolUse),
            ),
            end("msg_2", "ok"),
        ]);
        let q = Query::new(service.clone(), config()).with_tools(tools(&log));
        run(q, State::default(), vec![Message::user_text("same")]).await;
        service
            .requests()
            .iter()
            .map(|r| serde_json::to_string(r).expect("json"))
            .collect()
    }
    assert_eq!(once().await, once().await);
}

#[tokio::test(start_paused = true)]
async fn events_report_every_appended_message_and_the_transitions() {
    let log = Log::default();
    let set = tools(&log);
    let service = ScriptedService::new([read_once("msg_1"), end("msg_2", "ok")]);
    let q = Query::new(service.clone(), config()).with_tools(set);
    let out = run(q, State::default(), prompt()).await;
    let reported: Vec<_> = out.messages().into_iter().map(|m| m.id().clone()).collect();
    let history: Vec<_> = out.state.messages.iter().map(|m| m.id().clone()).collect();
    assert_eq!(reported, history);
    let transitions: Vec<Transition> = out
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Transition(t) => Some(*t),
            _ => None,
        })
        .collect();
    assert_eq!(transitions, out.path());
}

/// Records every step, and compacts once the history reaches `compact_at` messages.
struct Recording {
    calls: Calls,
    compact_at: usize,
}

impl ContextPolicy for Recording {
    fn tool_result_budget(&mut self, _input: StepInput<'_>) -> StepOutcome {
        self.calls.push("budget");
        StepOutcome::unchanged()
    }
    fn snip(&mut self, _input: StepInput<'_>) -> StepOutcome {
        self.calls.push("snip");
        StepOutcome::unchanged()
    }
    fn microcompact(&mut self, _input: StepInput<'_>) -> StepOutcome {
        self.calls.push("microcompact");
        StepOutcome::unchanged()
    }
    fn autocompact<'a>(
        &'a mut self,
        input: StepInput<'a>,
    ) -> BoxFuture<'a, Result<StepOutcome, PolicyError>> {
        self.calls.push("autocompact");
        let outcome = if input.history.len() - input.boundary >= self.compact_at {
            compaction(CompactTrigger::Auto, 150_000, "Summary so far.")
        } else {
            StepOutcome::unchanged()
        };
        Box::pin(std::future::ready(Ok(outcome)))
    }
}

struct DateAttachment(Calls);

impl threadline_query::AttachmentHook for DateAttachment {
    fn collect<'a>(&'a mut self, _history: &'a [Message]) -> BoxFuture<'a, Vec<Message>> {
        self.0.push("attachments");
        Box::pin(std::future::ready(vec![Message::attachment(
            threadline_message::Attachment::DateChange {
                date: "2026-12-01".into(),
            },
        )]))
    }
}

struct Planner(Calls);

impl threadline_query::CachePlanner for Planner {
    fn plan(&mut self, _request: &mut threadline_wire::MessagesRequest) {
        self.0.push("plan");
    }
    fn reset(&mut self) {
        self.0.push("planner_reset");
    }
}

#[tokio::test(start_paused = true)]
async fn every_iteration_runs_the_steps_in_order_and_a_compaction_moves_the_window() {
    let log = Log::default();
    let set = tools(&log);
    let calls = Calls::default();
    let service = ScriptedService::new([read_once("msg_1"), end("msg_2", "ok")]);
    let shaper_calls = calls.clone();
    let q = Query::new(service.clone(), config())
        .with_tools(set.clone())
        // The first iteration sees 1 message; the second 4 (prompt, tool use, result,
        // attachment) and compacts.
        .with_policy(Recording {
            calls: calls.clone(),
            compact_at: 4,
        })
        .with_shaper(move |_r: &mut threadline_wire::MessagesRequest| shaper_calls.push("shape"))
        .with_cache_planner(Planner(calls.clone()))
        .with_attachments(DateAttachment(calls.clone()));
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    let steps = ["budget", "snip", "microcompact", "autocompact"];
    let mut expected: Vec<&str> = steps.to_vec();
    expected.extend(["shape", "plan", "attachments"]);
    expected.extend(steps);
    expected.extend(["planner_reset", "shape", "plan"]);
    assert_eq!(calls.take(), expected);
    assert_eq!(out.state.compaction.compactions, 1);
    // The second request is what follows the boundary: the summary.
    check_after_compaction(&out, &service, &set);
    // The attachment was appended after the tool result and before the compaction.
    let kinds: Vec<&str> = out
        .state
        .messages
        .iter()
        .map(|m| match m {
            Message::User(u) if u.is_compact_summary => "summary",
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::Attachment(_) => "attachment",
            Message::System(_) => "system",
            _ => "other",
        })
        .collect();
    // The tool call is recorded before its tool runs; the response's end (stop reason and
    // final usage) follows it as a fragment of its own.
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "assistant",
            "user",
            "attachment",
            "system",
            "summary",
            "assistant"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn next_turn_attachments_reach_the_next_request() {
    let log = Log::default();
    let set = tools(&log);
    let service = ScriptedService::new([read_once("msg_1"), end("msg_2", "ok")]);
    let q = Query::new(service.clone(), config())
        .with_tools(set.clone())
        .with_attachments(DateAttachment(Calls::default()));
    let out = run(q, State::default(), prompt()).await;
    assert_eq!(out.terminal, Terminal::Completed);
    let second = serde_json::to_string(&service.requests()[1].messages).expect("json");
    assert!(second.contains("2026-12-01"));
    assert!(
        !serde_json::to_string(&service.requests()[0].messages)
            .expect("json")
            .contains("2026-12-01")
    );
    check(&out, &service, &set);
}
