//! Thinking bound to its prefix (docs/api-notes.md#thinking-bound-to-its-prefix), on the
//! models whose row has `Feature::PrefixBoundThinking`.
//!
//! **Signing.** Every `thinking` / `redacted_thinking` block the mock serves on such a model
//! (from a scenario step, streamed or not) gets a signature the mock computes, replacing the
//! scenario's:
//!
//! ```text
//! tlmock1.<model>.<system>.<tools>.<messages>.<predecessor>.<mac>
//! ```
//!
//! `<system>`, `<tools>` and `<messages>` are 16-hex-digit digests of what preceded the block
//! when it was written: the top-level `system`, the non-deferred tools (as a set) and the
//! messages before it, every `thinking` / `redacted_thinking` block left out (dropping leading
//! thinking blocks changes nothing) and every `cache_control` too; for a block in the answer,
//! the request's messages then the answer's earlier blocks. After a `compaction` block (either
//! kind) the messages start at the newest one. `<predecessor>` is the digest of the previous
//! thinking block's signature (zeros for none), `<mac>` a 32-digit keyed digest of all of it
//! and the block's text (`signing::digest`): a client can read a signature but not make one.
//! A `redacted_thinking` block's `data` becomes `<signature>#<the scenario's data>`.
//!
//! **Checking.** Before answering a request on such a model, every thinking block after the
//! newest `compaction` block (the API ignores what precedes it) is read back:
//!
//! - a signature that is not the mock's or whose mac fails (its text edited) is a 400
//!   ``messages.N.content.M: Invalid `signature` in `thinking` block``, whatever the settings;
//! - a block another model wrote is dropped silently (`model_binding_mismatch`);
//! - a block whose recorded prefix is not the request's, or whose recorded predecessor is not
//!   the last thinking block kept before it (the first block may follow any: blocks may go
//!   from the front), is a 400 with the API's text under the default `error` (ours appended:
//!   what changed); under `drop_block` it is dropped (`prefix_binding_mismatch`), and so is
//!   every later block it was written before, since their chain runs through it. A block the
//!   mock signed after the drop follows the last block kept, so it stays readable while the
//!   client keeps sending the dropped ones with `drop_block`.
//!
//! With the `thinking-binding-controls-2026-08-01` beta every answer lists the dropped blocks
//! in `input_transformations` (`[]` for none; on `message_start` when streamed).

use std::borrow::Cow;

use serde_json::Value;
use threadline_wire::betas::{THINKING_BINDING_CONTROLS, header_names};
use threadline_wire::content::{Content, ContentBlock};
use threadline_wire::model::{Feature, ModelTable};
use threadline_wire::request::{MessageParam, PrefixMismatchBehavior};
use threadline_wire::{InputTransformation, MessagesRequest};

use crate::respond::{Script, encode};
use crate::signing::{canonical, digest};

/// The first field of every signature the mock makes.
const VERSION: &str = "tlmock1";
/// Hex digits kept of each recorded digest.
const FIELD: usize = 16;
/// Hex digits kept of the mac.
const MAC: usize = 32;
/// The predecessor of the first thinking block of a conversation.
const NO_PREDECESSOR: &str = "0000000000000000";
/// Between the signature and the scenario's data in a `redacted_thinking` block.
const REDACTED_SEPARATOR: char = '#';

/// The API's text for a block whose signature does not verify.
const TAMPERED: &str = "Invalid `signature` in `thinking` block";
/// The API's sentences after [`TAMPERED`] for a block bound to another prefix.
const BOUND_ELSEWHERE: &str = ". The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".";
/// The API's sentence after [`BOUND_ELSEWHERE`] when the request lacks the beta header.
const NEEDS_HEADER: &str = " That setting requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header.";

/// `input_transformations` reason: the block's prefix or chain changed.
const PREFIX_MISMATCH: &str = "prefix_binding_mismatch";
/// `input_transformations` reason: another model wrote the block.
const MODEL_MISMATCH: &str = "model_binding_mismatch";

/// What a signature records about its block.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Binding {
    model: String,
    system: String,
    tools: String,
    messages: String,
    predecessor: String,
}

impl Binding {
    /// The mac of this binding for a block whose text (or redacted data) is `text`.
    fn mac(&self, text: &str) -> String {
        let mut mac = digest(
            "thinking block",
            &[
                VERSION.as_bytes(),
                self.model.as_bytes(),
                self.system.as_bytes(),
                self.tools.as_bytes(),
                self.messages.as_bytes(),
                self.predecessor.as_bytes(),
                text.as_bytes(),
            ],
        );
        mac.truncate(MAC);
        mac
    }

    /// The signature of a block whose text is `text`.
    fn sign(&self, text: &str) -> String {
        let Binding {
            model,
            system,
            tools,
            messages,
            predecessor,
        } = self;
        let mac = self.mac(text);
        format!("{VERSION}.{model}.{system}.{tools}.{messages}.{predecessor}.{mac}")
    }

    /// What `signature` records, when it is the mock's and its mac holds for `text`.
    fn read(signature: &str, text: &str) -> Option<Binding> {
        let rest = signature.strip_prefix(VERSION)?.strip_prefix('.')?;
        // From the right: a model id may hold dots.
        let mut fields = rest.rsplitn(6, '.');
        let mac = fields.next()?;
        let predecessor = fields.next()?.to_owned();
        let messages = fields.next()?.to_owned();
        let tools = fields.next()?.to_owned();
        let system = fields.next()?.to_owned();
        let model = fields.next()?.to_owned();
        let binding = Binding {
            model,
            system,
            tools,
            messages,
            predecessor,
        };
        (binding.mac(text) == mac).then_some(binding)
    }
}

/// The first `FIELD` hex digits of a digest.
fn short(domain: &str, parts: &[&[u8]]) -> String {
    let mut d = digest(domain, parts);
    d.truncate(FIELD);
    d
}

/// The digest a successor records of the thinking block whose signature (or redacted data)
/// is `chain_id`.
fn predecessor_of(chain_id: Option<&str>) -> String {
    chain_id.map_or_else(
        || NO_PREDECESSOR.to_owned(),
        |id| short("predecessor", &[id.as_bytes()]),
    )
}

/// A thinking block's signature as its successor names it: a `thinking` block's `signature`,
/// a `redacted_thinking` block's `data`.
fn chain_id(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::Thinking(t) => Some(t.signature.as_deref().unwrap_or("")),
        ContentBlock::RedactedThinking(r) => Some(r.data.as_str()),
        _ => None,
    }
}

/// What a thinking block sent back records, when its signature is the mock's and holds.
fn read_block(block: &ContentBlock) -> Option<Binding> {
    match block {
        ContentBlock::Thinking(t) => Binding::read(t.signature.as_deref()?, &t.thinking),
        ContentBlock::RedactedThinking(r) => {
            let (signature, data) = r.data.split_once(REDACTED_SEPARATOR)?;
            Binding::read(signature, data)
        }
        _ => None,
    }
}

/// The digests of what precedes every block of a request: `system` and the non-deferred
/// tools.
struct Frame {
    model: String,
    system: String,
    tools: String,
}

impl Frame {
    fn of(model: &str, request: &MessagesRequest) -> Frame {
        let system: Vec<ContentBlock> = request
            .system
            .as_ref()
            .map(|s| s.blocks().into_iter().map(ContentBlock::Text).collect())
            .unwrap_or_default();
        let system = canonical(&serde_json::to_value(&system).unwrap_or(Value::Null));
        // A set: sorted by their bytes.
        let mut tools: Vec<Vec<u8>> = request
            .tools
            .iter()
            .flatten()
            .filter(|t| !t.is_deferred())
            .map(|t| canonical(&serde_json::to_value(t).unwrap_or(Value::Null)))
            .collect();
        tools.sort_unstable();
        let tools: Vec<&[u8]> = tools.iter().map(Vec::as_slice).collect();
        Frame {
            model: model.to_owned(),
            system: short("system", &[&system]),
            tools: short("tools", &tools),
        }
    }
}

/// One message as the walk reads it: its other fields (role, `clear_at`, …) and its blocks.
struct Turn<'a> {
    head: Vec<u8>,
    blocks: Cow<'a, [ContentBlock]>,
}

impl<'a> Turn<'a> {
    fn of(message: &'a MessageParam) -> Turn<'a> {
        let blocks = match &message.content {
            Content::Text(text) => Cow::Owned(vec![ContentBlock::text(text.clone())]),
            Content::Blocks(blocks) => Cow::Borrowed(blocks.as_slice()),
        };
        let role = serde_json::to_value(&message.role).unwrap_or(Value::Null);
        Turn {
            head: head(role, &message.extra),
            blocks,
        }
    }
}

/// The canonical bytes of a message without its content.
fn head(role: Value, extra: &threadline_wire::Extra) -> Vec<u8> {
    let mut fields = extra.clone();
    fields.insert("role".to_owned(), role);
    canonical(&Value::Object(fields))
}

/// A thinking block found by [`walk`]: where it is, and the digest of the messages before it.
struct Seen<'b> {
    message: usize,
    block: usize,
    thinking: &'b ContentBlock,
    messages: String,
}

/// Every thinking block after the newest `compaction` block, with the digest of the messages
/// before it (from that compaction block on; thinking blocks and `cache_control` left out).
///
/// An on-demand compaction block alone in its message (the placement a client uses to keep
/// recent turns) carries the chain of the messages it summarized
/// ([`crate::on_demand_compaction::summarized_chain`]): the walk resumes from it, as if the
/// kept turns still followed the summarized ones. So thinking in turns kept verbatim after the
/// block stays valid, and a kept turn edited, or anything inserted between the block and
/// them, breaks it, as the API's keep-recent-turns rules say.
fn walk<'b>(turns: &'b [Turn<'_>]) -> Vec<Seen<'b>> {
    walk_with_chain(turns).0
}

/// The chain digest of `messages` as the walk leaves it after the last one: what an
/// on-demand compaction block of exactly these messages records.
pub(crate) fn chain_of(messages: &[std::sync::Arc<MessageParam>]) -> String {
    let turns: Vec<Turn<'_>> = messages.iter().map(|m| Turn::of(m)).collect();
    walk_with_chain(&turns).1
}

fn walk_with_chain<'b>(turns: &'b [Turn<'_>]) -> (Vec<Seen<'b>>, String) {
    let start = || digest("messages", &[]);
    let mut chain = start();
    let mut seen = Vec::new();
    for (i, turn) in turns.iter().enumerate() {
        // The digests of the message's blocks so far, thinking left out.
        let mut kept: Vec<u8> = Vec::new();
        let mut resumed = false;
        for (j, block) in turn.blocks.iter().enumerate() {
            match block {
                ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => {
                    let messages = short("prefix", &[chain.as_bytes(), &turn.head, &kept]);
                    seen.push(Seen {
                        message: i,
                        block: j,
                        thinking: block,
                        messages,
                    });
                }
                ContentBlock::Compaction(compaction) => {
                    // The API reads from the newest compaction block on.
                    seen.clear();
                    kept.clear();
                    let summarized = compaction
                        .signature
                        .as_deref()
                        .and_then(crate::on_demand_compaction::summarized_chain)
                        .filter(|_| turn.blocks.len() == 1);
                    match summarized {
                        Some(state) => {
                            chain = state.to_owned();
                            resumed = true;
                        }
                        None => {
                            chain = start();
                            kept.extend_from_slice(block_digest(block).as_bytes());
                        }
                    }
                }
                other => kept.extend_from_slice(block_digest(other).as_bytes()),
            }
        }
        if !resumed {
            chain = digest("messages", &[chain.as_bytes(), &turn.head, &kept]);
        }
    }
    (seen, chain)
}

fn block_digest(block: &ContentBlock) -> String {
    let value = serde_json::to_value(block).unwrap_or(Value::Null);
    digest("block", &[&canonical(&value)])
}

/// The model id whose blocks are bound, when `model` is a binding model of `models`.
fn binding_model(models: &ModelTable, model: &str) -> Option<String> {
    let resolved = models.resolve(model);
    let row = resolved.model();
    (resolved.is_known() && row.supports(Feature::PrefixBoundThinking)).then(|| row.id.clone())
}

/// What the check of a request leaves for its answer.
#[derive(Debug, Default)]
pub(crate) struct Bound {
    /// `input_transformations`, when the request named the beta.
    transformations: Option<Vec<InputTransformation>>,
}

/// Checks the thinking blocks of `request` (see the module docs): the request to answer (the
/// dropped blocks removed) and what its answer lists, or the 400 message.
pub(crate) fn check(
    mut request: MessagesRequest,
    models: &ModelTable,
    beta_header: &str,
) -> Result<(MessagesRequest, Bound), String> {
    let header = header_names(beta_header, THINKING_BINDING_CONTROLS);
    let mut bound = Bound {
        transformations: header.then(Vec::new),
    };
    let Some(model) = binding_model(models, &request.model) else {
        return Ok((request, bound));
    };
    let drop_blocks = matches!(
        request
            .thinking
            .as_ref()
            .and_then(|t| t.prefix_mismatch_behavior()),
        Some(PrefixMismatchBehavior::DropBlock)
    );
    let dropped = {
        let turns: Vec<Turn<'_>> = request.messages.iter().map(Turn::of).collect();
        let seen = walk(&turns);
        let mut recorded = Vec::with_capacity(seen.len());
        // A tampered block is refused whatever the setting, wherever it is.
        for s in &seen {
            match read_block(s.thinking) {
                Some(binding) => recorded.push(binding),
                None => {
                    return Err(format!(
                        "messages.{}.content.{}: {TAMPERED}",
                        s.message, s.block
                    ));
                }
            }
        }
        let frame = Frame::of(&model, &request);
        // The last block kept: a dropped block is no link of the chain.
        let mut previous: Option<&str> = None;
        let mut dropped: Vec<(usize, usize, &'static str)> = Vec::new();
        for (s, binding) in seen.iter().zip(&recorded) {
            let reason = if binding.model == frame.model {
                let changed = changes(&frame, &s.messages, previous, binding);
                if changed.is_empty() {
                    None
                } else if drop_blocks {
                    Some(PREFIX_MISMATCH)
                } else {
                    return Err(mismatch(s.message, s.block, header, &changed));
                }
            } else {
                Some(MODEL_MISMATCH)
            };
            match reason {
                Some(reason) => dropped.push((s.message, s.block, reason)),
                None => previous = chain_id(s.thinking),
            }
        }
        dropped
    };
    for &(i, j, _) in dropped.iter().rev() {
        if let Some(message) = request.messages.get_mut(i)
            && let Content::Blocks(blocks) = &mut message.content
            && j < blocks.len()
        {
            blocks.remove(j);
        }
    }
    if let Some(list) = &mut bound.transformations {
        list.extend(dropped.iter().map(|&(i, j, reason)| {
            InputTransformation::thinking_dropped(format!("messages.{i}.content.{j}"), reason)
        }));
    }
    Ok((request, bound))
}

/// What differs between what `binding` records and the request, in words (ours).
fn changes(
    frame: &Frame,
    messages: &str,
    previous: Option<&str>,
    binding: &Binding,
) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if binding.system != frame.system {
        changed.push("the `system` prompt changed");
    }
    if binding.tools != frame.tools {
        changed.push("the `tools` list changed");
    }
    if binding.messages != messages {
        changed.push("an earlier message changed");
    }
    // The first block present may follow any: blocks may be dropped from the front.
    if previous.is_some() && binding.predecessor != predecessor_of(previous) {
        changed.push("the thinking block before it was removed");
    }
    changed
}

/// The 400 text of the block at `messages.i.content.j` bound to another prefix: the API's,
/// then ours naming what changed.
fn mismatch(i: usize, j: usize, header: bool, changed: &[&str]) -> String {
    let mut text = format!("messages.{i}.content.{j}: {TAMPERED}{BOUND_ELSEWHERE}");
    if !header {
        text.push_str(NEEDS_HEADER);
    }
    text.push_str(" Since the block was written, ");
    text.push_str(&changed.join("; "));
    text.push('.');
    text
}

impl Bound {
    /// Signs the thinking blocks of `script` (an answer to `request`) and lists the dropped
    /// blocks, as the module docs say.
    pub(crate) fn serve(
        &self,
        script: &mut Script,
        request: &MessagesRequest,
        models: &ModelTable,
    ) {
        sign(script, request, models);
        if let Some(list) = &self.transformations {
            attach(script, list);
        }
    }
}

/// Replaces the signatures of the thinking blocks of `script` with the mock's, when the model
/// that answers binds them.
fn sign(script: &mut Script, request: &MessagesRequest, models: &ModelTable) {
    let Some(model) = script.message.get("model").and_then(Value::as_str) else {
        return;
    };
    let Some(model) = binding_model(models, model) else {
        return;
    };
    let Some(content) = script.message.get("content").and_then(Value::as_array) else {
        return;
    };
    let is_thinking = |b: &Value| {
        matches!(
            b.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    };
    if !content.iter().any(is_thinking) {
        return;
    }
    let answer: Vec<ContentBlock> = content
        .iter()
        .map(|v| {
            serde_json::from_value(v.clone()).unwrap_or_else(|_| ContentBlock::Unknown(v.clone()))
        })
        .collect();
    let mut turns: Vec<Turn<'_>> = request.messages.iter().map(Turn::of).collect();
    let role = Value::String("assistant".to_owned());
    turns.push(Turn {
        head: head(role, &threadline_wire::Extra::new()),
        blocks: Cow::Owned(answer),
    });
    let last = turns.len() - 1;
    let frame = Frame::of(&model, request);
    let mut previous: Option<String> = None;
    // (block index in the answer, the new `signature` or `data`)
    let mut signed: Vec<(usize, String)> = Vec::new();
    for s in walk(&turns) {
        if s.message != last {
            previous = chain_id(s.thinking).map(str::to_owned);
            continue;
        }
        let binding = Binding {
            model: frame.model.clone(),
            system: frame.system.clone(),
            tools: frame.tools.clone(),
            messages: s.messages,
            predecessor: predecessor_of(previous.as_deref()),
        };
        let stored = match s.thinking {
            ContentBlock::Thinking(t) => binding.sign(&t.thinking),
            ContentBlock::RedactedThinking(r) => {
                format!("{}{REDACTED_SEPARATOR}{}", binding.sign(&r.data), r.data)
            }
            _ => continue,
        };
        previous = Some(stored.clone());
        signed.push((s.block, stored));
    }
    let Some(content) = script
        .message
        .get_mut("content")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for (j, stored) in &signed {
        if let Some(block) = content.get_mut(*j) {
            set_signature(block, stored);
        }
    }
    for event in &mut script.events {
        let Some(mut decoded) = decode(event) else {
            continue;
        };
        let Some(j) = decoded.get("index").and_then(Value::as_u64) else {
            continue;
        };
        let Some((_, stored)) = signed.iter().find(|(k, _)| *k as u64 == j) else {
            continue;
        };
        let changed = match decoded.get("type").and_then(Value::as_str) {
            Some("content_block_start") => decoded
                .get_mut("content_block")
                .is_some_and(|block| set_signature(block, stored)),
            Some("content_block_delta") => decoded.get_mut("delta").is_some_and(|delta| {
                delta.get("type").and_then(Value::as_str) == Some("signature_delta")
                    && set_field(delta, "signature", stored)
            }),
            _ => false,
        };
        if changed {
            *event = encode(&decoded);
        }
    }
}

/// Puts `stored` in a thinking block's `signature` (unless it is the empty one a stream
/// starts with) or a redacted block's `data`; whether it did.
fn set_signature(block: &mut Value, stored: &str) -> bool {
    match block.get("type").and_then(Value::as_str) {
        Some("thinking") => {
            let empty = block
                .get("signature")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            !empty && set_field(block, "signature", stored)
        }
        Some("redacted_thinking") => set_field(block, "data", stored),
        _ => false,
    }
}

fn set_field(object: &mut Value, field: &str, value: &str) -> bool {
    match object.as_object_mut() {
        Some(map) => {
            map.insert(field.to_owned(), Value::String(value.to_owned()));
            true
        }
        None => false,
    }
}

/// `input_transformations` on the message and on its `message_start` event.
fn attach(script: &mut Script, list: &[InputTransformation]) {
    let value = serde_json::to_value(list).unwrap_or_else(|_| Value::Array(Vec::new()));
    if let Some(message) = script.message.as_object_mut() {
        message.insert("input_transformations".to_owned(), value.clone());
    }
    let Some(first) = script.events.first_mut() else {
        return;
    };
    let Some(mut event) = decode(first) else {
        return;
    };
    if event.get("type").and_then(Value::as_str) != Some("message_start") {
        return;
    }
    if let Some(message) = event.get_mut("message").and_then(Value::as_object_mut) {
        message.insert("input_transformations".to_owned(), value);
        *first = encode(&event);
    }
}

/// The JSON of one encoded event (its `data:` line).
fn decode(encoded: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(encoded).ok()?;
    let data = text.lines().find_map(|l| l.strip_prefix("data: "))?;
    serde_json::from_str(data).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::respond::script;
    use crate::scenario::{Block, Step};
    use serde_json::json;
    use threadline_wire::Usage;

    const OPUS_55: &str = "claude-opus-5-5";

    fn binding() -> Binding {
        Binding {
            model: OPUS_55.to_owned(),
            system: "0123456789abcdef".to_owned(),
            tools: "fedcba9876543210".to_owned(),
            messages: "00112233445566ff".to_owned(),
            predecessor: NO_PREDECESSOR.to_owned(),
        }
    }

    #[test]
    fn a_signature_reads_back_only_with_its_own_text_and_fields() {
        let b = binding();
        let signature = b.sign("Let me think.");
        assert!(signature.starts_with("tlmock1.claude-opus-5-5.0123456789abcdef."));
        assert_eq!(Binding::read(&signature, "Let me think."), Some(b.clone()));
        assert_eq!(Binding::read(&signature, "Let me think!"), None);
        // Any field edited breaks the mac.
        let forged = signature.replace("fedcba9876543210", "fedcba9876543211");
        assert_eq!(Binding::read(&forged, "Let me think."), None);
        // A model id with dots still reads (fields are read from the right).
        let dotted = Binding {
            model: "anthropic.claude-x-v1:0".to_owned(),
            ..b
        };
        let signature = dotted.sign("t");
        assert_eq!(Binding::read(&signature, "t"), Some(dotted));
    }

    #[test]
    fn foreign_and_hostile_signatures_are_refused_without_a_panic() {
        for s in [
            "",
            "EqQBCgIYAhIM",
            "tlmock1",
            "tlmock1.",
            "tlmock1.......",
            "tlmock1.m.a.b.c.d.e",
            "tlmock1.é.\u{0}.ß.🙂.x.y",
        ] {
            assert_eq!(Binding::read(s, "t"), None, "{s:?}");
        }
        let redacted = ContentBlock::RedactedThinking(
            serde_json::from_value(json!({"data": "no separator"})).expect("block"),
        );
        assert_eq!(read_block(&redacted), None);
    }

    fn request(body: Value) -> MessagesRequest {
        serde_json::from_value(body).expect("a request")
    }

    fn thinking_seen(body: Value) -> Vec<(usize, usize, String)> {
        let request = request(body);
        let turns: Vec<Turn<'_>> = request.messages.iter().map(Turn::of).collect();
        walk(&turns)
            .into_iter()
            .map(|s| (s.message, s.block, s.messages))
            .collect()
    }

    fn thinking(text: &str) -> Value {
        json!({"type": "thinking", "thinking": text, "signature": "s"})
    }

    #[test]
    fn the_messages_digest_ignores_thinking_blocks_cache_markers_and_the_string_form() {
        let with = json!({"model": OPUS_55, "max_tokens": 9, "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [thinking("a"), {"type": "text", "text": "Yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "More", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [thinking("b")]}
        ]});
        let without = json!({"model": OPUS_55, "max_tokens": 9, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "More"}]},
            {"role": "assistant", "content": [thinking("b")]}
        ]});
        let a = thinking_seen(with);
        let b = thinking_seen(without);
        assert_eq!(a.len(), 2);
        assert_eq!(a[1], b[0]);
        // An edit before the block changes it.
        let edited = json!({"model": OPUS_55, "max_tokens": 9, "messages": [
            {"role": "user", "content": "Hi!"},
            {"role": "assistant", "content": [{"type": "text", "text": "Yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "More"}]},
            {"role": "assistant", "content": [thinking("b")]}
        ]});
        assert_ne!(thinking_seen(edited)[0].2, b[0].2);
    }

    #[test]
    fn the_walk_starts_at_the_newest_compaction_block() {
        let compaction = json!({"type": "compaction", "content": "Summary."});
        let long = json!({"model": OPUS_55, "max_tokens": 9, "messages": [
            {"role": "user", "content": "Old"},
            {"role": "assistant", "content": [thinking("old"), {"type": "text", "text": "Old answer"}]},
            {"role": "user", "content": "Next"},
            {"role": "assistant", "content": [compaction.clone(), thinking("new")]}
        ]});
        let short = json!({"model": OPUS_55, "max_tokens": 9, "messages": [
            {"role": "user", "content": "Other"},
            {"role": "assistant", "content": [compaction, thinking("new")]}
        ]});
        let long = thinking_seen(long);
        assert_eq!(long.len(), 1, "the block before the compaction is not read");
        assert_eq!((long[0].0, long[0].1), (3, 1));
        assert_eq!(long[0].2, thinking_seen(short)[0].2);
    }

    /// The answer of `step` to `request`, signed, as the mock serves it.
    fn answer(step: Step, request: &MessagesRequest, beta: &str) -> Script {
        let Step::Message(step) = step else {
            unreachable!("a message step")
        };
        let mut script = script(
            &step,
            "msg_1",
            &request.model,
            || "toolu_1".to_owned(),
            |_| Usage::default(),
        );
        let (checked, bound) =
            check(request.clone(), ModelTable::builtin(), beta).expect("accepted");
        bound.serve(&mut script, &checked, ModelTable::builtin());
        script
    }

    fn step() -> Step {
        Step::message(vec![
            Block::Thinking {
                thinking: "Let me think.".to_owned(),
                signature: "scenario".to_owned(),
            },
            Block::RedactedThinking {
                data: "ZW5j".to_owned(),
            },
            Block::Text {
                text: "Hello.".to_owned(),
            },
        ])
    }

    #[test]
    fn the_streamed_and_whole_answers_carry_the_same_signatures() {
        let first = request(json!({"model": OPUS_55, "max_tokens": 9,
            "messages": [{"role": "user", "content": "Hi"}]}));
        let script = answer(step(), &first, THINKING_BINDING_CONTROLS);
        let content = &script.message["content"];
        let signature = content[0]["signature"].as_str().expect("signed");
        assert!(
            signature.starts_with("tlmock1.claude-opus-5-5."),
            "{signature}"
        );
        let data = content[1]["data"].as_str().expect("signed");
        assert!(data.ends_with("#ZW5j"), "{data}");
        assert_eq!(script.message["input_transformations"], json!([]));
        let streamed = threadline_wire::message_stream::read_message(&script.events.concat())
            .expect("complete");
        assert_eq!(
            serde_json::to_value(&streamed).expect("serializes"),
            script.message
        );
        // Sent back with a new user turn: accepted, nothing dropped.
        let mut messages = first.messages.clone();
        messages.push(
            serde_json::from_value(json!({"role": "assistant", "content": content}))
                .expect("a message"),
        );
        messages.push(
            serde_json::from_value(json!({"role": "user", "content": "More"})).expect("a message"),
        );
        let mut next = first;
        next.messages = messages;
        let (_, bound) = check(next, ModelTable::builtin(), "").expect("accepted");
        assert!(bound.transformations.is_none());
    }

    #[test]
    fn a_model_without_binding_keeps_the_scenarios_signatures() {
        let request = request(json!({"model": "claude-sonnet-5", "max_tokens": 9,
            "messages": [{"role": "user", "content": "Hi"}]}));
        let script = answer(step(), &request, "");
        assert_eq!(script.message["content"][0]["signature"], "scenario");
        assert_eq!(script.message["content"][1]["data"], "ZW5j");
        assert!(script.message.get("input_transformations").is_none());
    }
}
