//! `threadline inspect` on a transcript with the API's cache diagnostics recorded: the reason
//! beside the loop's prediction and inspect's own.

use serde_json::json;
use threadline_cli::{inspect, session};
use threadline_message::{Message, SystemKind};
use threadline_wire::{ContentBlock, Usage};

fn answered(id: &str, text: &str) -> Message {
    let mut message =
        Message::assistant_fragment(id, "claude-sonnet-4-6", vec![ContentBlock::text(text)]);
    if let Message::Assistant(a) = &mut message {
        a.usage = Some(Box::new(
            Usage::new()
                .with_input_tokens(3)
                .with_output_tokens(5)
                .with_cache_creation_input_tokens(2000)
                .with_cache_read_input_tokens(0),
        ));
    }
    message
}

fn diagnosis(
    id: &str,
    diagnostics: serde_json::Value,
    predicted: Option<&str>,
    agreement: &str,
) -> Message {
    Message::system(SystemKind::CacheDiagnosis {
        api_message_id: id.to_owned(),
        diagnostics,
        predicted: predicted.map(str::to_owned),
        agreement: agreement.to_owned(),
    })
}

#[test]
fn a_recorded_reason_is_shown_beside_the_loops_and_inspects_predictions() {
    let messages = [
        Message::user_text("Hi"),
        answered("msg_1", "Hello"),
        diagnosis("msg_1", serde_json::Value::Null, None, "inconclusive"),
        Message::user_text("Again"),
        answered("msg_2", "Hello again"),
        diagnosis(
            "msg_2",
            json!({"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 812}}),
            Some("system"),
            "agrees",
        ),
        Message::user_text("Once more"),
        answered("msg_3", "Still here"),
    ];
    let transcript: String = messages
        .iter()
        .map(|m| serde_json::to_string(m).expect("serializes") + "\n")
        .collect();
    let session = session::read_session(&transcript);
    let analysed = inspect::report(&session, None);
    let report = inspect::to_json(&analysed).expect("serializes");
    let rows = report["requests"].as_array().expect("requests");
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[0]["diagnostics"],
        json!({"recorded": null, "reason": "none", "loop_predicted": null,
            "loop_agreement": "inconclusive", "inspect_predicted": "none",
            "inspect_agreement": "agrees"})
    );
    // The system prompt is not in the transcript: inspect sees only an append, and says the
    // recorded reason disagrees with what it can see; the loop, which saw the request, agreed.
    assert_eq!(
        rows[1]["diagnostics"],
        json!({"recorded": {"cache_miss_reason": {"type": "system_changed",
                "cache_missed_input_tokens": 812}},
            "reason": "system_changed", "loop_predicted": "system", "loop_agreement": "agrees",
            "inspect_predicted": "none", "inspect_agreement": "disagrees"})
    );
    // No record, no key.
    assert!(rows[2].get("diagnostics").is_none());
    let text = inspect::render_text(&analysed);
    assert!(
        text.contains(
            "diagnostics: system_changed (~812 tokens) | loop predicted system (agrees) | inspect predicts none (disagrees)"
        ),
        "{text}"
    );
    assert_eq!(text.matches("      diagnostics: ").count(), 2, "{text}");
}
