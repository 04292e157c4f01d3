//! Every recorded SSE stream decodes and accumulates, whatever the chunking; accumulated
//! messages are snapshotted; twins (a stream and its non-streamed recording) agree.

use proptest::prelude::*;
use serde_json::Value;
use threadline_testkit::fixtures;
use threadline_wire::accumulate::{CompletedBlock, Truncation};
use threadline_wire::message_stream::{MessageStreamReader, StreamReadError, read_message};
use threadline_wire::{ResponseMessage, StreamEvent};

#[path = "recorded_streams/tool_search.rs"]
mod tool_search;

/// Streams that were recorded cut short; everything else must be complete.
const KNOWN_INCOMPLETE: &[&str] =
    &["anthropics__anthropic-sdk-python/incomplete_partial_json_response#0"];

/// Decodes `chunks` and returns every event (as JSON), every completed block index, and the
/// outcome.
fn read_chunked<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<Value>, Vec<usize>, Result<ResponseMessage, String>) {
    let mut reader = MessageStreamReader::new();
    let mut events = Vec::new();
    let mut completed = Vec::new();
    for chunk in chunks {
        let pushed = reader.push(
            chunk,
            |event: &StreamEvent, done: Option<&CompletedBlock>| {
                events.push(serde_json::to_value(event).expect("events serialize"));
                completed.extend(done.map(|d| d.index));
            },
        );
        if let Err(e) = pushed {
            return (events, completed, Err(e.to_string()));
        }
    }
    let outcome = reader.finish().map_err(|e| e.to_string());
    (events, completed, outcome)
}

#[test]
fn every_recorded_stream_accumulates() {
    let streams = fixtures::sse_streams();
    assert!(
        streams.len() >= 20,
        "expected the recorded streams, found {}",
        streams.len()
    );
    for (name, sse) in &streams {
        match read_message(sse.as_bytes()) {
            Ok(message) => {
                assert!(
                    !KNOWN_INCOMPLETE.contains(&name.as_str()),
                    "{name} should be incomplete"
                );
                assert!(message.stop_reason.is_some(), "{name}: no stop reason");
                let snapshot_name = name.replace(['/', '#'], "__");
                insta::assert_json_snapshot!(snapshot_name, message);
            }
            Err(StreamReadError::Incomplete(incomplete)) => {
                assert!(
                    KNOWN_INCOMPLETE.contains(&name.as_str()),
                    "{name}: {incomplete}"
                );
                // The SDK fixture is cut by max_tokens inside a tool_use's JSON: the partial
                // message keeps its text block and the tool use, and says so.
                assert!(matches!(
                    &incomplete.reason,
                    Truncation::UnclosedBlock { index: 1, block, partial_json: Some(json) }
                        if block == "tool_use" && json.starts_with('{')
                ));
                let partial = incomplete.partial.expect("a partial message");
                assert_eq!(partial.content.len(), 2);
                assert_eq!(
                    partial.stop_reason,
                    Some(threadline_wire::StopReason::MaxTokens)
                );
            }
            Err(other) => panic!("{name}: {other}"),
        }
    }
}

#[test]
fn twins_agree() {
    // vercel/ai recorded the same requests streamed and not streamed.
    for (stream, body) in [
        (
            "vercel__ai/anthropic-text.chunks",
            "vercel__ai/anthropic-text",
        ),
        (
            "vercel__ai/anthropic-clear-thinking.1.chunks",
            "vercel__ai/anthropic-clear-thinking.1",
        ),
    ] {
        let sse = fixtures::fixture(stream).exchanges[0]
            .response
            .body
            .as_sse()
            .expect("an SSE body")
            .to_owned();
        let json = fixtures::fixture(body).exchanges[0]
            .response
            .body
            .as_json()
            .expect("a JSON body")
            .clone();
        let accumulated = serde_json::to_value(read_message(sse.as_bytes()).expect("complete"))
            .expect("serializes");
        let recorded: ResponseMessage =
            serde_json::from_value(json.clone()).expect("the twin parses");
        // The two were separate API calls: ids, usage and the generated text differ. What must
        // agree is the shape the accumulator builds: the same fields, block types and stop.
        let keys = |v: &Value| -> Vec<String> {
            v.as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(
            keys(&accumulated),
            keys(&json),
            "{stream}: top-level fields differ"
        );
        let block_types = |v: &Value| -> Vec<Value> {
            v["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| b["type"].clone())
                .collect()
        };
        assert_eq!(block_types(&accumulated), block_types(&json), "{stream}");
        assert_eq!(accumulated["stop_reason"], json["stop_reason"], "{stream}");
        assert_eq!(
            accumulated["model"],
            serde_json::to_value(&recorded.model).expect("string")
        );
        for (a, r) in accumulated["content"]
            .as_array()
            .into_iter()
            .flatten()
            .zip(json["content"].as_array().into_iter().flatten())
        {
            assert_eq!(keys(a), keys(r), "{stream}: block fields differ");
        }
    }
}

#[test]
fn every_utf8_and_crlf_split_gives_the_same_result() {
    for (name, sse) in fixtures::sse_streams() {
        let bytes = sse.as_bytes();
        let whole = read_chunked([bytes]);
        // Cut inside every multi-byte character (at most 40 per stream, to stay quick).
        let inside_chars: Vec<usize> = (1..bytes.len())
            .filter(|&i| !sse.is_char_boundary(i))
            .take(40)
            .collect();
        for cut in inside_chars {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(read_chunked([a, b]), whole, "{name}: cut at {cut}");
        }
        // The same stream with CRLF line ends, cut between every `\r` and its `\n`.
        let crlf = sse.replace('\n', "\r\n");
        let mut chunks = Vec::new();
        let mut start = 0;
        for (i, _) in crlf.match_indices('\r') {
            chunks.push(&crlf.as_bytes()[start..=i]);
            start = i + 1;
        }
        chunks.push(&crlf.as_bytes()[start..]);
        assert_eq!(
            read_chunked(chunks.iter().copied()),
            whole,
            "{name}: CRLF split"
        );
    }
}

/// `bytes` cut at the given points (sampled anywhere, end included), in order.
fn split_at<'a>(bytes: &'a [u8], cuts: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for p in points {
        chunks.push(&bytes[start..p]);
        start = p;
    }
    chunks.push(&bytes[start..]);
    chunks
}

fn line_endings(sse: &str, style: u8) -> String {
    match style {
        0 => sse.to_owned(),
        1 => sse.replace('\n', "\r\n"),
        _ => sse.replace('\n', "\r"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any chunking, any line-ending style: the same events, completed blocks and message.
    #[test]
    fn chunking_never_changes_the_result(
        pick in any::<prop::sample::Index>(),
        style in 0u8..3,
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let streams = fixtures::sse_streams();
        let (name, sse) = &streams[pick.index(streams.len())];
        let baseline = read_chunked([sse.as_bytes()]);
        let text = line_endings(sse, style);
        prop_assert_eq!(read_chunked(split_at(text.as_bytes(), &cuts)), baseline, "{}", name);
    }

    /// Random bytes, randomly chunked, never panic the decoder or the accumulator.
    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(
            prop_oneof![
                2 => any::<u8>(),
                3 => prop::sample::select(b"data: {}[]\"type\":message_start content_block_delta index\n\r0".to_vec()),
            ],
            0..800,
        ),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let _ = read_chunked(split_at(&bytes, &cuts));
    }

    /// Recorded events with bytes flipped never panic the reader either.
    #[test]
    fn corrupted_recordings_never_panic(
        pick in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let streams = fixtures::sse_streams();
        let (_, sse) = &streams[pick.index(streams.len())];
        let mut bytes = sse.as_bytes().to_vec();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let _ = read_chunked([bytes.as_slice()]);
    }
}

#[test]
fn an_endless_data_line_is_refused_in_bounded_memory() {
    // 100 MB of `data:` without a newline, fed in 64 KiB chunks: the reader must refuse it
    // once the event bound is crossed instead of buffering it all.
    let limit = 1 << 20;
    let mut reader = MessageStreamReader::with_limits(limit, 64 << 20);
    let mut chunk = b"data: ".to_vec();
    chunk.resize(64 * 1024, b'x');
    let mut fed = 0usize;
    let mut error = None;
    while fed < 100_000_000 {
        if let Err(e) = reader.push(&chunk, |_, _| {}) {
            error = Some(e);
            break;
        }
        fed += chunk.len();
        chunk[..6].copy_from_slice(b"xxxxxx");
    }
    let error = error.expect("the endless event is refused");
    assert!(
        matches!(error, StreamReadError::Sse(threadline_wire::sse::SseError::EventTooLarge { limit: l, .. }) if l == limit),
        "{error}"
    );
    assert!(fed <= 2 * limit, "refused only after {fed} bytes");
}

/// The one stream-to-message fold (`service::collect_message`, used by the client,
/// the compaction's summary call and the durable worker) gives, on every recorded stream, what
/// the paths it replaced gave: the SDK-equivalent reader's message, and the same accumulator
/// driven by hand to the end of the stream (the client's and the compaction's old loop); a
/// recorded stream cut short is the same `Truncated` error, after events.
#[test]
fn the_one_fold_equals_the_old_paths_on_every_recorded_stream() {
    use threadline_wire::accumulate::MessageAccumulator;
    use threadline_wire::service::{ServiceErrorKind, collect_message};

    for (name, sse) in &fixtures::sse_streams() {
        // A recording may lack the blank line after its last event: end it, so every event
        // the reader's `finish` would see is in the list.
        let (events, _, _) = read_chunked([sse.as_bytes(), b"\n\n".as_slice()]);
        let events: Vec<StreamEvent> = events
            .into_iter()
            .map(|e| serde_json::from_value(e).expect("a recorded event parses back"))
            .collect();
        let folded = futures::executor::block_on(collect_message(futures::stream::iter(
            events.iter().cloned().map(Ok),
        )));
        // The old loop: every event pushed, then finish.
        let mut accumulator = MessageAccumulator::new();
        for event in &events {
            accumulator
                .push(event)
                .expect("recorded streams keep the protocol");
        }
        let by_hand = accumulator.finish();
        match (folded, by_hand, read_message(sse.as_bytes())) {
            (Ok(folded), Ok(by_hand), Ok(read)) => {
                let folded = serde_json::to_value(folded).expect("serializes");
                assert_eq!(
                    folded,
                    serde_json::to_value(by_hand).expect("serializes"),
                    "{name}"
                );
                assert_eq!(
                    folded,
                    serde_json::to_value(read).expect("serializes"),
                    "{name}"
                );
            }
            (Err(error), Err(incomplete), Err(StreamReadError::Incomplete(_))) => {
                assert!(KNOWN_INCOMPLETE.contains(&name.as_str()), "{name}");
                assert_eq!(error.kind(), ServiceErrorKind::Truncated, "{name}");
                assert_eq!(error.message(), incomplete.to_string(), "{name}");
                assert!(error.events_delivered() && !error.is_retryable(), "{name}");
            }
            (folded, by_hand, read) => panic!(
                "{name}: the paths disagree: fold {:?}, by hand {:?}, reader {:?}",
                folded.map(|_| ()),
                by_hand.map(|_| ()),
                read.map(|_| ())
            ),
        }
    }
}
