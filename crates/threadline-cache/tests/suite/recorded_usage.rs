//! The simulator against the usage the real API recorded in `fixtures/`.
//!
//! * Every recorded exchange sequence with requests is replayed through the simulator with the
//!   requests' own markers (as sent); the predicted cache-read share must track the recorded
//!   one: `share_mae` ≤ 0.05 per fixture.
//! * The prompt-cache pair (`test_anthropic_cache_real_api`: a write then a read) and the
//!   streamed prompt-cache recording (`anthropic-code-execution-20260120-prompt-cache`: three
//!   server-tool iterations in one response, usage summed) are checked in detail; the pair
//!   also with exact counts for the history's assistant message (its recorded
//!   `output_tokens`) instead of the estimate.
//! * The sub-agent conversations recorded in the fixture Claude Code transcripts (the main
//!   chains are `threadline inspect`'s, in `threadline-cli/tests/suite/inspect.rs`).
//!
//! As in `threadline inspect`, the first recorded usage calibrates what a recording cannot
//! show: the unseen prefix (total input minus the estimate of the visible request), the
//! uncached tail (its `input_tokens`), and what was already cached before the recording
//! started (its `cache_read_input_tokens`, from an earlier run of the same test).

use serde_json::Value;

use threadline_cache::{Calibration, Estimate, ExactCounts, Planner, Scaled};
use threadline_message::claude_code::{ImportOptions, import_claude_code};
use threadline_testkit::fixtures;
use threadline_wire::model::ModelTable;
use threadline_wire::{ContentBlock, MessageParam, MessagesRequest, Usage};

/// The usage a response recorded: the JSON body's, or the stream's final (cumulative) one.
fn recorded_usage(response: &fixtures::RecordedResponse) -> Option<Usage> {
    if let Some(body) = response.body.as_json() {
        return serde_json::from_value(body.get("usage")?.clone()).ok();
    }
    let sse = response.body.as_sse()?;
    threadline_wire::message_stream::read_message(sse.as_bytes())
        .ok()?
        .usage
}

/// The usage of the first `message_start` of a stream (the first sampling iteration).
fn message_start_usage(sse: &str) -> Option<Usage> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["type"] == "message_start")
        .and_then(|v| serde_json::from_value(v["message"]["usage"].clone()).ok())
}

struct Replay {
    name: String,
    shares: Vec<(f64, f64)>,
}

impl Replay {
    fn mae(&self) -> f64 {
        self.shares.iter().map(|(r, p)| (r - p).abs()).sum::<f64>() / self.shares.len() as f64
    }
}

/// Replays the successful `/v1/messages` exchanges of one fixture, 10 s apart.
fn replay(fixture: &fixtures::Fixture) -> Option<Replay> {
    replay_with(fixture, false)
}

/// [`replay`], optionally counting each assistant message of the history exactly: the
/// `output_tokens` its response recorded.
fn replay_with(fixture: &fixtures::Fixture, exact_outputs: bool) -> Option<Replay> {
    let responses: Vec<Option<(Vec<ContentBlock>, u64)>> = fixture
        .exchanges
        .iter()
        .filter(|e| e.response.status.is_none_or(|s| s == 200))
        .filter(|e| {
            e.request
                .as_ref()
                .is_some_and(|r| r.endpoint == "/v1/messages")
        })
        .map(|e| {
            let body = e.response.body.as_json()?;
            let content = serde_json::from_value(body.get("content")?.clone()).ok()?;
            let tokens = body.get("usage")?.get("output_tokens")?.as_u64()?;
            Some((content, tokens))
        })
        .collect();
    let pairs: Vec<(MessagesRequest, Usage)> = fixture
        .exchanges
        .iter()
        .filter(|e| e.response.status.is_none_or(|s| s == 200))
        .filter_map(|e| {
            let request = e
                .request
                .as_ref()
                .filter(|r| r.endpoint == "/v1/messages")?;
            let request: MessagesRequest = serde_json::from_value(request.body.clone()).ok()?;
            Some((request, recorded_usage(&e.response)?))
        })
        .collect();
    let (first_request, first_usage) = pairs.first()?;
    let model = ModelTable::builtin().resolve(&first_request.model).model();
    let calibration = Calibration::from_first(first_request, first_usage);
    let mut sim = calibration.simulator(model);
    let mut exact = ExactCounts::over(Scaled::new(Estimate, calibration.scale));
    let mut output: Option<&(Vec<ContentBlock>, u64)> = None;
    let mut shares = Vec::new();
    for (i, (request, usage)) in pairs.iter().enumerate() {
        if exact_outputs && let Some((content, tokens)) = output {
            // The previous response is in this request's history: count it exactly.
            if let Some(at) = request.messages.iter().rposition(|m| {
                m.role == threadline_wire::Role::Assistant
                    && m.content.to_blocks().first() == content.first()
            }) {
                exact.insert_message(request, at, *tokens);
                sim.set_counter(exact.clone());
            }
        }
        let step = sim.step(i as u64 * 10_000, request);
        shares.push((usage.cache_read_share(), step.usage.read_share()));
        output = responses.get(i).and_then(Option::as_ref);
    }
    Some(Replay {
        name: fixture.name.clone(),
        shares,
    })
}

#[test]
fn every_recorded_exchange_sequence_is_predicted_within_the_target() {
    let mut replays = 0;
    for fixture in fixtures::all_fixtures() {
        // Server-side compaction reports per-iteration usage (`usage.iterations`) that the
        // simulator does not model: its top-level counters are those of the last iteration.
        if fixture
            .name
            .ends_with("test_anthropic_compaction_usage_with_cache_streaming")
        {
            continue;
        }
        let Some(replay) = replay(fixture) else {
            continue;
        };
        replays += 1;
        let mae = replay.mae();
        println!(
            "{}: share_mae {mae:.4} over {} requests",
            replay.name,
            replay.shares.len()
        );
        assert!(
            mae <= 0.05,
            "{}: share_mae {mae:.4} > 0.05 ({:?})",
            replay.name,
            replay.shares
        );
    }
    assert!(replays >= 10, "only {replays} fixtures replayed");
}

#[test]
fn the_cache_write_then_read_pair() {
    let fixture = fixtures::fixture("pydantic__pydantic-ai/test_anthropic_cache_real_api");
    let replay = replay(fixture).expect("two requests with usage");
    let mae = replay.mae();
    println!("{}: share_mae {mae:.4}: {:?}", replay.name, replay.shares);
    assert_eq!(replay.shares.len(), 2);
    // The second request is predicted, not calibrated: it reads what the first cached and
    // writes the new turn (recorded: 1111 read, 418 written, 3 uncached).
    let (recorded, predicted) = replay.shares[1];
    assert!(
        (recorded - predicted).abs() <= 0.05,
        "{recorded} vs {predicted}"
    );
    assert!(mae <= 0.05);
}

#[test]
fn exact_output_counts_sharpen_the_pair() {
    // The same replay, with each assistant message of the history counted exactly (its
    // response's `output_tokens`) instead of estimated.
    let fixture = fixtures::fixture("pydantic__pydantic-ai/test_anthropic_cache_real_api");
    let estimated = replay(fixture).expect("replays");
    let exact = replay_with(fixture, true).expect("replays");
    let error = |r: &Replay| (r.shares[1].0 - r.shares[1].1).abs();
    println!(
        "second request share error: estimate {:.4}, exact output counts {:.4}",
        error(&estimated),
        error(&exact)
    );
    assert!(error(&exact) < error(&estimated));
    assert!(error(&exact) <= 0.01);
}

#[test]
fn the_streamed_prompt_cache_recording() {
    // One response of three sampling iterations (code execution twice, then the answer); the
    // recorded usage sums them: 6 uncached, 3337 written, 6289 read. The request was not
    // recorded: its size comes from the first iteration's `message_start` usage (2 uncached,
    // 3068 written), and the API's automatic 5m breakpoint on each server tool result marks
    // the two later iterations.
    let fixture =
        fixtures::fixture("vercel__ai/anthropic-code-execution-20260120-prompt-cache.1.chunks");
    let sse = fixture.exchanges[0]
        .response
        .body
        .as_sse()
        .expect("a stream");
    let message =
        threadline_wire::message_stream::read_message(sse.as_bytes()).expect("accumulates");
    let recorded = message.usage.clone().expect("usage");
    let first = message_start_usage(sse).expect("message_start usage");
    let model = ModelTable::builtin().resolve(&message.model).model();

    let prompt = MessagesRequest::new(&message.model, 1024, vec![]);
    let mut sim = Calibration::from_first(&prompt, &first).simulator(model);
    let mut request = prompt.clone();
    request.cache_control = Some(Box::new(threadline_wire::CacheControl::ephemeral()));
    let mut total = threadline_cache::Predicted::default();
    let mut content: Vec<ContentBlock> = Vec::new();
    for (i, iteration) in [0usize, 2, 4].into_iter().enumerate() {
        content.extend(message.content[content.len()..iteration].iter().cloned());
        request.messages = if content.is_empty() {
            vec![].into()
        } else {
            vec![MessageParam::assistant(content.clone())].into()
        };
        let step = sim.step(i as u64 * 5_000, &request);
        total.input_tokens += step.usage.input_tokens;
        total.cache_creation_input_tokens += step.usage.cache_creation_input_tokens;
        total.cache_read_input_tokens += step.usage.cache_read_input_tokens;
    }
    let (r, p) = (recorded.cache_read_share(), total.read_share());
    println!(
        "streamed prompt cache: recorded share {r:.4} ({recorded:?}), predicted {p:.4} ({total:?})"
    );
    assert!(total.cache_read_input_tokens >= 2 * 3068);
    assert!((r - p).abs() <= 0.05, "share error {}", (r - p).abs());
}

/// The sub-agent conversations of a Claude Code transcript (records with `isSidechain`), each
/// as the JSONL of its own records, keyed by the uuid of its first record.
fn sidechain_conversations(text: &str) -> Vec<(String, String)> {
    let records: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let parent: std::collections::HashMap<String, String> = records
        .iter()
        .filter_map(|r| {
            Some((
                r["uuid"].as_str()?.to_owned(),
                r["parentUuid"].as_str()?.to_owned(),
            ))
        })
        .collect();
    let root = |id: &str| {
        let mut id = id.to_owned();
        while let Some(p) = parent.get(&id) {
            id.clone_from(p);
        }
        id
    };
    let mut groups: Vec<(String, String)> = Vec::new();
    for (line, record) in text
        .lines()
        .zip(text.lines().map(|l| serde_json::from_str::<Value>(l).ok()))
    {
        let Some(record) = record.filter(|r| r["isSidechain"] == true) else {
            continue;
        };
        let Some(uuid) = record["uuid"].as_str() else {
            continue;
        };
        let key = root(uuid);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, lines)) => {
                lines.push_str(line);
                lines.push('\n');
            }
            None => groups.push((key, format!("{line}\n"))),
        }
    }
    groups
}

/// share_mae of one conversation (its requests, planned by the default planner, simulated at
/// their recorded times, calibrated on the first recorded usage), and its request count.
fn conversation_mae(messages: &[threadline_message::Message]) -> Option<(f64, usize)> {
    let requests = threadline_normalize::implied_requests(messages);
    let model_id = messages.iter().find_map(|m| match m {
        threadline_message::Message::Assistant(a) if !a.model.is_empty() => Some(a.model.clone()),
        _ => None,
    })?;
    let model = ModelTable::builtin().resolve(&model_id).model();
    let (first, usage) = requests
        .iter()
        .find_map(|r| Some((r, r.recorded.as_ref()?)))?;
    let first = MessagesRequest::new(&model_id, 1024, first.messages.clone());
    let mut sim = Calibration::from_first(&first, usage).simulator(model);
    let mut planner = Planner::default();
    let mut errors = Vec::new();
    let mut last = 0;
    for r in &requests {
        if r.after_compaction {
            planner.reset();
        }
        let mut request = MessagesRequest::new(&model_id, 1024, r.messages.clone());
        planner.plan(&mut request);
        last = r.at_ms.unwrap_or(last).max(last);
        let step = sim.step(last, &request);
        if let Some(recorded) = &r.recorded {
            errors.push((recorded.cache_read_share() - step.usage.read_share()).abs());
        }
    }
    (!errors.is_empty()).then(|| {
        (
            errors.iter().sum::<f64>() / errors.len() as f64,
            errors.len(),
        )
    })
}

#[test]
fn sub_agent_conversations_in_the_fixture_transcripts_are_predicted_within_the_target() {
    // The main chains are measured by `threadline inspect` (threadline-cli/tests/suite/inspect.rs);
    // the sub-agent conversations recorded in the same files are separate sessions with their
    // own system prompts, measured here one by one.
    let mut measured = 0;
    for path in fixtures::transcripts() {
        let text = std::fs::read_to_string(&path).expect("readable");
        for (root, lines) in sidechain_conversations(&text) {
            let messages =
                import_claude_code(&lines, &ImportOptions::default().with_sidechains(true))
                    .messages;
            let Some((mae, n)) = conversation_mae(&messages) else {
                continue;
            };
            measured += n;
            let name = format!(
                "{}#{}",
                path.file_name()
                    .map(|f| f.to_string_lossy())
                    .unwrap_or_default(),
                &root[..8.min(root.len())]
            );
            println!("{name}: share_mae {mae:.4} over {n} requests");
            assert!(mae <= 0.05, "{name}: share_mae {mae:.4} > 0.05");
        }
    }
    assert!(
        measured >= 100,
        "only {measured} sub-agent requests measured"
    );
}
