//! On-demand compaction (`compact-2026-09-04`) in the mock: a request with the top-level
//! `compaction` field is answered with a summary instead of a reply, and the signed block it
//! returns is checked when it comes back (docs/api-notes.md#on-demand-compaction).
//!
//! **Serving.** The request takes a scenario step like any other. The answer is one assistant
//! message whose content is exactly one block `{"type": "compaction", "content": SUMMARY,
//! "signature": SIG}`, `stop_reason: "compaction"`, top-level `input_tokens` / `output_tokens`
//! 0 and the real figures in `usage.iterations` (`type: "compaction"`: the input from the usage
//! model — the prompt-cache simulator by default, which so sees the request — the output from
//! the summary's length). Streamed: `message_start`, one `content_block_start` carrying the
//! whole block, its `content_block_stop`, `message_delta`, `message_stop`; no deltas. SUMMARY is
//! the step's `compaction_summary`, else its text, else a default naming how many messages
//! were summarized.
//!
//! **No summary** (HTTP 200, `content: []`): a step whose stop reason (explicit, or `tool_use`
//! for a step holding a tool call) is `max_tokens`, `model_context_window_exceeded`,
//! `tool_use`, `refusal` or `end_turn` (with its `stop_details`); and, whatever the step, a
//! request whose estimated input is over the model's context window
//! (`model_context_window_exceeded`, zero usage: no call could be made). A scripted error,
//! fixture or reset step answers as it does any request (a 529 with
//! `error_code: compaction_unavailable` is an error step with that code).
//!
//! **The signature**: `tlmock-compaction-v2.SOURCE.CHAIN.BINDING.TAG`, lower-case hex, where
//! SOURCE (32) = `digest("compaction-source", [model, canonical(messages summarized)])`,
//! CHAIN (64) = the thinking-binding chain of the messages summarized (so that thinking in
//! turns kept verbatim after the block stays valid, `thinking_binding`), BINDING (64) =
//! `digest("compaction-content", [SOURCE, summary])` and TAG (32) =
//! `digest("compaction-tag", [SOURCE, CHAIN, BINDING])`, each under the mock's key
//! (`signing::digest`). A block sent back whose signature is not of that form or whose TAG
//! does not match was not made by the mock: 400 `compaction_signature_invalid`; one whose
//! TAG matches but whose content is not the one BINDING covers was edited: 400
//! `compaction_content_mismatch`. Both texts are ours (the API's are not published). The
//! model is bound into SOURCE but not compared with a later request's model: whether the API
//! refuses a block under another model is not documented.
//!
//! The request-shape rules (the header, the parameters refused with `compaction`, placement,
//! `compaction_block_misplaced`, `compaction_nothing_to_summarize`, more than one block,
//! extra fields on the block) are `threadline-validate`'s, so `threadline check` knows them;
//! the mock answers the first one found as a 400, with the error code where the API has one
//! ([`error_code`]).

use serde_json::{Value, json};
use threadline_validate::Rule;
use threadline_wire::model::Model;
use threadline_wire::{
    ApiErrorType, Content, ContentBlock, IterationKind, MessageParam, MessagesRequest, Usage,
    UsageIteration,
};

use crate::scenario::{Block, MessageStep};
use crate::signing::{canonical, digest};
use crate::usage::{UsageModel, estimate_tokens};

/// The signature's format and version.
const PREFIX: &str = "tlmock-compaction-v2";
/// Hex digits of the SOURCE and TAG parts (BINDING is a whole digest, 64).
const SHORT_HEX: usize = 32;
/// The stop reasons that answer a compaction request without a summary.
pub(crate) const NO_SUMMARY: [&str; 5] = [
    "max_tokens",
    "model_context_window_exceeded",
    "tool_use",
    "refusal",
    "end_turn",
];

/// The error code of a validator rule whose 400 carries one (the rule is named after it).
pub(crate) fn error_code(rule: Rule) -> Option<&'static str> {
    match rule {
        Rule::CompactionBlockMisplaced | Rule::CompactionNothingToSummarize => Some(rule.name()),
        _ => None,
    }
}

/// The signature of `summary` written by `model` over `summarized`.
pub(crate) fn sign(
    model: &str,
    summarized: &[std::sync::Arc<MessageParam>],
    summary: &str,
) -> String {
    let messages = serde_json::to_value(summarized).unwrap_or(Value::Null);
    let source = digest(
        "compaction-source",
        &[model.as_bytes(), &canonical(&messages)],
    );
    let source = &source[..SHORT_HEX];
    let chain = crate::thinking_binding::chain_of(summarized);
    let binding = digest(
        "compaction-content",
        &[source.as_bytes(), summary.as_bytes()],
    );
    let tag = tag(source, &chain, &binding);
    format!("{PREFIX}.{source}.{chain}.{binding}.{tag}")
}

fn tag(source: &str, chain: &str, binding: &str) -> String {
    let mut tag = digest(
        "compaction-tag",
        &[source.as_bytes(), chain.as_bytes(), binding.as_bytes()],
    );
    tag.truncate(SHORT_HEX);
    tag
}

/// The thinking-binding chain of the messages a signature of the mock's summarized (its
/// CHAIN part), when `signature` is well formed and its TAG holds.
pub(crate) fn summarized_chain(signature: &str) -> Option<&str> {
    let parts: Vec<&str> = signature.split('.').collect();
    let [prefix, source, chain, binding, tag_part] = parts[..] else {
        return None;
    };
    let well_formed = prefix == PREFIX
        && is_hex(source, SHORT_HEX)
        && is_hex(chain, 2 * SHORT_HEX)
        && is_hex(binding, 2 * SHORT_HEX)
        && is_hex(tag_part, SHORT_HEX);
    (well_formed && tag(source, chain, binding) == tag_part).then_some(chain)
}

/// Why a signed block sent back is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tampered {
    /// Not a signature the mock made.
    Signature,
    /// A signature the mock made, over other content.
    Content,
}

impl Tampered {
    /// The API's error code.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Tampered::Signature => "compaction_signature_invalid",
            Tampered::Content => "compaction_content_mismatch",
        }
    }
}

fn is_hex(part: &str, len: usize) -> bool {
    part.len() == len && part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `signature` is the mock's signature of `content`.
pub(crate) fn verify(signature: &str, content: Option<&str>) -> Result<(), Tampered> {
    if summarized_chain(signature).is_none() {
        return Err(Tampered::Signature);
    }
    let mut parts = signature.split('.');
    let (Some(source), Some(binding)) = (parts.nth(1), parts.nth(1)) else {
        return Err(Tampered::Signature);
    };
    // The mock never signs a `null` summary: a block without content was edited.
    let Some(content) = content else {
        return Err(Tampered::Content);
    };
    if digest(
        "compaction-content",
        &[source.as_bytes(), content.as_bytes()],
    ) != binding
    {
        return Err(Tampered::Content);
    }
    Ok(())
}

/// A refusal of the mock's own (the validator found nothing): the error type, the message
/// and the error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) kind: ApiErrorType,
    pub(crate) message: String,
    pub(crate) code: &'static str,
}

/// The refusal of the first signed block of `request` the mock did not sign as it is.
pub(crate) fn check_signatures(request: &MessagesRequest) -> Option<Refusal> {
    for (m, message) in request.messages.iter().enumerate() {
        let Content::Blocks(blocks) = &message.content else {
            continue;
        };
        for (b, block) in blocks.iter().enumerate() {
            let ContentBlock::Compaction(compaction) = block else {
                continue;
            };
            let Some(signature) = &compaction.signature else {
                continue;
            };
            let Err(tampered) = verify(signature, compaction.content.as_deref()) else {
                continue;
            };
            // Texts ours: the API's are not published (reference §2.4 gives the codes only).
            let message = match tampered {
                Tampered::Signature => format!(
                    "messages.{m}.content.{b}.signature: invalid signature in `compaction` block"
                ),
                Tampered::Content => format!(
                    "messages.{m}.content.{b}.content: the `compaction` block's content does not match its signature; send the block back exactly as it was returned"
                ),
            };
            return Some(Refusal {
                kind: ApiErrorType::InvalidRequest,
                message,
                code: tampered.code(),
            });
        }
    }
    None
}

/// A summary naming how many messages it covers, from the first sentence of each user text
/// (and of a previous summary).
pub(crate) fn default_summary(messages: &[std::sync::Arc<MessageParam>]) -> String {
    let extract = crate::server_compaction::extractive_summary(messages);
    let n = messages.len();
    let noun = if n == 1 { "message" } else { "messages" };
    format!("Summary of the conversation ({n} {noun} summarized): {extract}")
}

/// What a compaction request is answered with: the message, its events and its usage.
pub(crate) struct Served {
    /// The JSON of the whole message (`stream: false`).
    pub(crate) message: Value,
    /// The SSE events, encoded (`stream: true`).
    pub(crate) events: Vec<Vec<u8>>,
    /// The usage reported.
    pub(crate) usage: Value,
}

impl Served {
    /// The body and its content type, as the request asked (streamed or not).
    pub(crate) fn body(&self, stream: bool) -> (Vec<u8>, &'static str) {
        if stream {
            (self.events.concat(), "text/event-stream; charset=utf-8")
        } else {
            let body = serde_json::to_vec(&self.message).unwrap_or_default();
            (body, "application/json")
        }
    }
}

/// The stop reason the step gives a compaction request: its own, `compaction` when it names
/// a `compaction_summary` (a step scripted for either kind of request), `tool_use` when it
/// holds a tool call, else `compaction`.
fn stop_reason(step: &MessageStep) -> String {
    if let Some(reason) = &step.stop_reason {
        return reason.clone();
    }
    if step.compaction_summary.is_some() {
        return "compaction".to_owned();
    }
    let calls = step
        .content
        .iter()
        .any(|b| matches!(b, Block::ToolUse { .. }));
    if calls { "tool_use" } else { "compaction" }.to_owned()
}

/// The summary the step writes: its `compaction_summary`, else its text, else the default.
fn summary(step: &MessageStep, request: &MessagesRequest) -> String {
    if let Some(summary) = &step.compaction_summary {
        return summary.clone();
    }
    let text: String = step
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if text.is_empty() {
        default_summary(&request.messages.to_shared_vec())
    } else {
        text
    }
}

/// The answer of compaction request `request` (of `request_bytes` bytes, on `model`) from
/// `step`, with message id `message_id`.
pub(crate) fn serve(
    step: &MessageStep,
    request: &MessagesRequest,
    model: &Model,
    request_bytes: usize,
    usage_model: &dyn UsageModel,
    message_id: &str,
) -> Served {
    let over_window = estimate_tokens(request_bytes) > model.context_window;
    let stop = if over_window {
        "model_context_window_exceeded".to_owned()
    } else {
        stop_reason(step)
    };
    let summary = (!NO_SUMMARY.contains(&stop.as_str())).then(|| summary(step, request));
    let stop = if summary.is_some() {
        "compaction".to_owned()
    } else {
        stop
    };
    let output = match &summary {
        Some(summary) => estimate_tokens(summary.len()),
        None if stop == "max_tokens" => request.max_tokens,
        None => 0,
    };
    let usage = match (&step.usage, over_window) {
        (Some(explicit), _) => explicit.clone(),
        (None, true) => serde_json::to_value(billed(&Usage::new(), 0)).unwrap_or(Value::Null),
        (None, false) => {
            let pass = usage_model.usage(request, request_bytes, output);
            serde_json::to_value(billed(&pass, output)).unwrap_or(Value::Null)
        }
    };
    let content: Vec<Value> = summary
        .iter()
        .map(|summary| {
            let signature = sign(&request.model, &request.messages.to_shared_vec(), summary);
            json!({"type": "compaction", "content": summary, "signature": signature})
        })
        .collect();
    let reported_model = step.model.as_deref().unwrap_or(&request.model);
    let mut message = json!({"id": message_id, "type": "message", "role": "assistant",
        "content": content, "model": reported_model, "stop_reason": stop,
        "stop_sequence": null, "usage": usage});
    let mut delta = json!({"stop_reason": stop, "stop_sequence": null});
    if let Some(details) = &step.stop_details {
        message["stop_details"] = details.clone();
        delta["stop_details"] = details.clone();
    }
    let start_usage = json!({"input_tokens": 0, "output_tokens": 0,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": message_id,
        "type": "message", "role": "assistant", "content": [], "model": reported_model,
        "stop_reason": null, "stop_sequence": null, "usage": start_usage}}),
    ];
    for (index, block) in content.iter().enumerate() {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta", "delta": delta, "usage": message["usage"]}));
    events.push(json!({"type": "message_stop"}));
    Served {
        events: events.iter().map(crate::respond::encode).collect(),
        usage: message["usage"].clone(),
        message,
    }
}

/// The usage of a compaction call whose pass is `pass` with `output` tokens: zero at the top
/// level, the pass in `iterations`.
fn billed(pass: &Usage, output: u64) -> Usage {
    let iteration = UsageIteration::new()
        .with_kind(IterationKind::Compaction)
        .with_input_tokens(pass.input_tokens.unwrap_or(0))
        .with_output_tokens(output)
        .with_cache_creation_input_tokens(pass.cache_creation_input_tokens.unwrap_or(0))
        .with_cache_read_input_tokens(pass.cache_read_input_tokens.unwrap_or(0));
    Usage::new()
        .with_input_tokens(0)
        .with_output_tokens(0)
        .with_cache_creation_input_tokens(0)
        .with_cache_read_input_tokens(0)
        .with_iterations(vec![iteration])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Step;
    use crate::usage::EstimateUsage;
    use threadline_wire::model::ModelTable;

    fn request(value: Value) -> MessagesRequest {
        serde_json::from_value(value).expect("a request")
    }

    fn compaction_request(stream: bool) -> MessagesRequest {
        request(
            json!({"model": "claude-sonnet-4-6", "max_tokens": 2048, "stream": stream,
            "compaction": {"type": "summarize"},
            "messages": [{"role": "user", "content": "Plan the trip. Paris first."},
                {"role": "assistant", "content": [{"type": "text", "text": "Paris, then Lyon."}]},
                {"role": "user", "content": "And then? Nice."}]}),
        )
    }

    fn message_step(step: Step) -> MessageStep {
        match step {
            Step::Message(m) => m,
            _ => unreachable!("a message step"),
        }
    }

    fn sonnet() -> &'static Model {
        ModelTable::builtin().resolve("claude-sonnet-4-6").model()
    }

    #[test]
    fn signatures_verify_and_tell_an_edit_of_either_part() {
        let r = compaction_request(false);
        let sig = sign("claude-sonnet-4-6", &r.messages.to_shared_vec(), "S.");
        assert_eq!(verify(&sig, Some("S.")), Ok(()));
        assert_eq!(verify(&sig, Some("S!")), Err(Tampered::Content));
        assert_eq!(verify(&sig, None), Err(Tampered::Content));
        assert!(sig.starts_with("tlmock-compaction-v2."));
        assert_eq!(sig.len(), PREFIX.len() + 4 + 32 + 64 + 64 + 32);
        for i in 0..sig.len() {
            let mut edited = sig.clone().into_bytes();
            edited[i] = if edited[i] == b'0' { b'1' } else { b'0' };
            let edited = String::from_utf8(edited).expect("ASCII");
            assert_eq!(verify(&edited, Some("S.")), Err(Tampered::Signature), "{i}");
        }
        assert_eq!(verify("", Some("S.")), Err(Tampered::Signature));
        assert_eq!(
            verify(&format!("{sig}."), Some("S.")),
            Err(Tampered::Signature)
        );
        // Another conversation, another model: another signature for the same summary.
        assert_ne!(
            sig,
            sign("claude-opus-4-8", &r.messages.to_shared_vec(), "S.")
        );
        assert_ne!(
            sig,
            sign("claude-sonnet-4-6", &r.messages.to_shared_vec()[..1], "S.")
        );
    }

    #[test]
    fn a_text_step_is_the_summary_and_the_stream_is_the_message() {
        let step = message_step(Step::text("The trip: Paris, Lyon, Nice."));
        let served = serve(
            &step,
            &compaction_request(true),
            sonnet(),
            400,
            &EstimateUsage,
            "msg_1",
        );
        let m = &served.message;
        assert_eq!(m["stop_reason"], "compaction");
        assert_eq!(m["content"].as_array().map(Vec::len), Some(1));
        assert_eq!(m["content"][0]["type"], "compaction");
        assert_eq!(m["content"][0]["content"], "The trip: Paris, Lyon, Nice.");
        let sig = m["content"][0]["signature"].as_str().expect("signed");
        assert_eq!(verify(sig, Some("The trip: Paris, Lyon, Nice.")), Ok(()));
        assert_eq!(
            m["usage"],
            json!({"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "iterations": [{"type": "compaction",
                "input_tokens": 100, "output_tokens": 7, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}]})
        );
        let body = served.events.concat();
        let read = threadline_wire::message_stream::read_message(&body).expect("complete");
        assert_eq!(serde_json::to_value(&read).expect("serializes"), *m);
        let text = String::from_utf8(body).expect("UTF-8");
        let kinds: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "content_block_start",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
    }

    #[test]
    fn the_default_summary_names_the_messages_and_no_summary_stops_are_empty() {
        let step = message_step(Step::message(Vec::new()));
        let r = compaction_request(false);
        let served = serve(&step, &r, sonnet(), 400, &EstimateUsage, "msg_1");
        assert_eq!(
            served.message["content"][0]["content"],
            "Summary of the conversation (3 messages summarized): <summary>Plan the trip. And then?</summary>"
        );
        for reason in NO_SUMMARY {
            let step = message_step(Step::text("unused").with_stop_reason(reason));
            let served = serve(&step, &r, sonnet(), 400, &EstimateUsage, "msg_1");
            assert_eq!(served.message["content"], json!([]), "{reason}");
            assert_eq!(served.message["stop_reason"], reason);
            let out = if reason == "max_tokens" { 2048 } else { 0 };
            assert_eq!(
                served.message["usage"]["iterations"][0]["output_tokens"],
                out
            );
            let read = threadline_wire::message_stream::read_message(&served.events.concat())
                .expect("complete");
            assert_eq!(
                serde_json::to_value(&read).expect("serializes"),
                served.message
            );
        }
        // A tool call without a stop reason is the model calling a tool: no summary.
        let step = message_step(Step::tool_use("ls", json!({})));
        let served = serve(&step, &r, sonnet(), 400, &EstimateUsage, "msg_1");
        assert_eq!(served.message["stop_reason"], "tool_use");
        assert_eq!(served.message["content"], json!([]));
        // Unless the step names the summary it gives a compaction request.
        let step = message_step(Step::tool_use("ls", json!({})).with_compaction_summary("S."));
        let served = serve(&step, &r, sonnet(), 400, &EstimateUsage, "msg_1");
        assert_eq!(served.message["stop_reason"], "compaction");
        assert_eq!(served.message["content"][0]["content"], "S.");
    }

    #[test]
    fn over_the_context_window_no_call_is_made() {
        let step = message_step(Step::text("unused"));
        let r = compaction_request(false);
        let bytes = usize::try_from(sonnet().context_window * 4 + 8).expect("fits");
        let served = serve(&step, &r, sonnet(), bytes, &EstimateUsage, "msg_1");
        assert_eq!(
            served.message["stop_reason"],
            "model_context_window_exceeded"
        );
        assert_eq!(served.message["content"], json!([]));
        assert_eq!(served.message["usage"]["iterations"][0]["input_tokens"], 0);
    }

    #[test]
    fn an_error_step_reads_its_code_and_old_steps_read_without_one() {
        let yaml = "steps:\n  - {kind: error, status: 529, message: Overloaded, error_code: compaction_unavailable}\n  - {kind: error, status: 529, message: Overloaded}\n";
        let scenario: crate::Scenario = serde_yaml::from_str(yaml).expect("valid");
        assert_eq!(
            scenario.steps,
            [
                Step::overloaded().with_error_code("compaction_unavailable"),
                Step::overloaded()
            ]
        );
        let json = serde_json::to_value(&scenario).expect("serializes");
        assert_eq!(json["steps"][0]["error_code"], "compaction_unavailable");
        assert!(json["steps"][1].get("error_code").is_none(), "{json}");
    }

    #[test]
    fn only_placement_rules_carry_a_code() {
        assert_eq!(
            error_code(Rule::CompactionBlockMisplaced),
            Some("compaction_block_misplaced")
        );
        assert_eq!(
            error_code(Rule::CompactionNothingToSummarize),
            Some("compaction_nothing_to_summarize")
        );
        assert_eq!(error_code(Rule::OnDemandCompactionInvalid), None);
        assert_eq!(error_code(Rule::BetaHeaderMissing), None);
    }
}
