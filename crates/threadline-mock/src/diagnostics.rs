//! Cache diagnostics (beta `cache-diagnosis-2026-04-07`), computed from what the mock received.
//!
//! For every answered request that asked for `diagnostics` (and named the beta in
//! `anthropic-beta`; without it the API ignores the field), the mock keeps a fingerprint under
//! the id of its answer: hashes of the canonical JSON of `model`, `tools`, `system`, each
//! message, and of the other prompt-shaping parameters, with token estimates from byte lengths
//! (markers excluded: moving a `cache_control` changes nothing cached). A later request's
//! `previous_message_id` is compared with it and the earliest divergence reported, in the order
//! the prompt is rendered (model, tools, system, then messages; inferred: the docs do not give the
//! order between `tools` and `system`):
//!
//! | found | reported |
//! |---|---|
//! | `previous_message_id: null` | `null` (the first turn) |
//! | an unknown id (or one evicted) | `previous_message_not_found` |
//! | a different model / tools / system | `model_changed` / `tools_changed` / `system_changed` |
//! | another prompt-shaping parameter differs | `unavailable` |
//! | an earlier message altered or removed | `messages_changed` |
//! | nothing (messages only appended) | `null` |
//!
//! `cache_missed_input_tokens` is the estimate of the previous request's input from the
//! divergence on. At most [`MAX_FINGERPRINTS`] fingerprints are kept, the oldest evicted first.
//! A scenario step may force what is reported ([`MessageStep::diagnostics`]).
//!
//! [`MessageStep::diagnostics`]: crate::scenario::MessageStep::diagnostics

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use serde_json::{Value, json};
use threadline_wire::MessagesRequest;
use threadline_wire::betas::{CACHE_DIAGNOSIS, header_names};

use crate::respond::{Script, encode};

/// How many fingerprints the mock keeps (the oldest is evicted past this).
pub const MAX_FINGERPRINTS: usize = 1024;

/// How many messages a fingerprint hashes one by one (its comparison horizon): the rest is one
/// hash, and a divergence there is `unavailable` (as the API answers past its horizon). A kept
/// fingerprint is therefore at most a few KiB.
pub const HORIZON: usize = 512;

/// A part of a request: its hash and an estimate of its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Part {
    hash: u64,
    tokens: u64,
}

/// What the mock remembers of a request it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    model: Part,
    tools: Part,
    system: Part,
    /// `tool_choice`, `thinking`, `context_management`, `output_config`.
    other: u64,
    /// Each message (at most [`HORIZON`] once kept).
    messages: Vec<Part>,
    /// The messages past the horizon, once kept: how many, one hash of their hashes, tokens.
    tail: Option<(usize, u64, u64)>,
}

/// One hash of a run of message hashes.
fn hash_run(parts: &[Part]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for p in parts {
        p.hash.hash(&mut hasher);
    }
    hasher.finish()
}

/// The betas of a header as a sorted set (order and spacing do not matter; bounded).
fn beta_set(header: &str) -> Vec<&str> {
    let mut betas: Vec<&str> = header
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .take(64)
        .collect();
    betas.sort_unstable();
    betas.dedup();
    betas
}

impl Fingerprint {
    /// `betas` is the request's `anthropic-beta` header: the set of betas shapes the prompt
    /// too (a change of it is `unavailable`, docs/api-notes.md#cache-diagnostics).
    fn of(request: &MessagesRequest, betas: &str) -> Fingerprint {
        let part = |value: Option<Value>| {
            let value = value.unwrap_or(Value::Null);
            let text = canonical(value);
            Part {
                hash: hash_str(&text),
                tokens: if text == "null" {
                    0
                } else {
                    crate::usage::estimate_tokens(text.len())
                },
            }
        };
        Fingerprint {
            model: part(Some(Value::String(request.model.clone()))),
            tools: part(request.tools.as_ref().map(to_value)),
            system: part(request.system.as_ref().map(to_value)),
            other: part(Some(json!([
                request.tool_choice.as_ref().map(to_value),
                request.thinking.as_ref().map(to_value),
                request.context_management.as_ref().map(to_value),
                request.output_config.as_ref().map(to_value),
                request.extra.get("output_format"),
                beta_set(betas),
            ])))
            .hash,
            messages: request
                .messages
                .iter()
                .map(|m| part(Some(to_value(m))))
                .collect(),
            tail: None,
        }
    }

    /// The fingerprint as kept: the messages past the horizon folded into one hash.
    fn bounded(mut self) -> Fingerprint {
        if self.messages.len() > HORIZON {
            let rest = self.messages.split_off(HORIZON);
            let tokens = rest
                .iter()
                .fold(0u64, |sum, m| sum.saturating_add(m.tokens));
            self.tail = Some((HORIZON + rest.len(), hash_run(&rest), tokens));
        }
        self
    }

    /// The tokens of the parts from `tools` on (what a change there misses).
    fn tokens_from_tools(&self) -> u64 {
        self.tools.tokens.saturating_add(self.tokens_from_system())
    }

    fn tokens_from_system(&self) -> u64 {
        self.system
            .tokens
            .saturating_add(self.tokens_from_message(0))
    }

    fn tokens_from_message(&self, index: usize) -> u64 {
        let tail = self.tail.map_or(0, |(_, _, tokens)| tokens);
        self.messages
            .iter()
            .skip(index)
            .fold(tail, |sum, m| sum.saturating_add(m.tokens))
    }

    /// The earliest divergence of `next` from `self`: `None` when there is none.
    fn compare(&self, next: &Fingerprint) -> Option<Value> {
        let changed = |kind: &str, missed: u64| {
            Some(json!({"type": kind, "cache_missed_input_tokens": missed}))
        };
        if self.model.hash != next.model.hash {
            return changed("model_changed", self.tokens_from_tools());
        }
        if self.tools.hash != next.tools.hash {
            return changed("tools_changed", self.tokens_from_tools());
        }
        if self.system.hash != next.system.hash {
            return changed("system_changed", self.tokens_from_system());
        }
        if self.other != next.other {
            return Some(json!({"type": "unavailable"}));
        }
        let altered = self
            .messages
            .iter()
            .enumerate()
            .find(|(i, m)| next.messages.get(*i).map(|n| n.hash) != Some(m.hash))
            .map(|(i, _)| i);
        match (altered, self.tail) {
            (Some(altered), _) => changed("messages_changed", self.tokens_from_message(altered)),
            (None, Some((count, hash, _))) => {
                let same = next
                    .messages
                    .get(HORIZON..count)
                    .is_some_and(|run| hash_run(run) == hash);
                // Past the horizon: where it diverged is not known.
                (!same).then(|| json!({"type": "unavailable"}))
            }
            (None, None) => None,
        }
    }
}

/// `value` as JSON (the wire types always serialize).
fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The JSON text of `value` without its `cache_control` markers.
fn canonical(mut value: Value) -> String {
    strip_markers(&mut value, 0);
    value.to_string()
}

fn strip_markers(value: &mut Value, depth: usize) {
    // Request bodies are bounded; so is this walk (serde_json's own recursion limit is 128).
    if depth > 256 {
        return;
    }
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            for v in map.values_mut() {
                strip_markers(v, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                strip_markers(v, depth + 1);
            }
        }
        _ => {}
    }
}

fn hash_str(text: &str) -> u64 {
    // SipHash with fixed keys: the same body gives the same fingerprint on every run.
    let mut hasher = std::hash::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The fingerprints of answered requests, by answer id, bounded.
#[derive(Debug, Default)]
pub(crate) struct Fingerprints {
    inner: Mutex<Store>,
}

#[derive(Debug, Default)]
struct Store {
    by_id: HashMap<String, Fingerprint>,
    order: VecDeque<String>,
}

impl Fingerprints {
    /// The `diagnostics` to answer `request` with (`None`: the request did not ask, or its
    /// beta header does not name the feature), remembering its fingerprint under
    /// `message_id`. `forced` (from the scenario) replaces what would be computed.
    pub(crate) fn answer(
        &self,
        request: &MessagesRequest,
        beta_header: &str,
        message_id: &str,
        forced: Option<&Value>,
    ) -> Option<Value> {
        let asked = request.diagnostics.as_ref()?;
        if !header_names(beta_header, CACHE_DIAGNOSIS) {
            return None;
        }
        let fingerprint = Fingerprint::of(request, beta_header);
        let mut store = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let computed = match &asked.previous_message_id {
            None => Value::Null,
            Some(id) => match store.by_id.get(id) {
                None => json!({"cache_miss_reason": {"type": "previous_message_not_found"}}),
                Some(previous) => match previous.compare(&fingerprint) {
                    None => Value::Null,
                    Some(reason) => json!({"cache_miss_reason": reason}),
                },
            },
        };
        store.insert(message_id.to_owned(), fingerprint.bounded());
        Some(forced.cloned().unwrap_or(computed))
    }
}

impl Store {
    fn insert(&mut self, id: String, fingerprint: Fingerprint) {
        if self.by_id.insert(id.clone(), fingerprint).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > MAX_FINGERPRINTS {
            if let Some(oldest) = self.order.pop_front() {
                self.by_id.remove(&oldest);
            }
        }
    }
}

/// Puts `diagnostics` on the answer: on the message, and on `message_start` when streamed.
pub(crate) fn attach(script: &mut Script, diagnostics: Value) {
    if let Some(message) = script.message.as_object_mut() {
        message.insert("diagnostics".to_owned(), diagnostics.clone());
    }
    let Some(first) = script.events.first_mut() else {
        return;
    };
    let Some(mut event) = decode(first) else {
        return;
    };
    if event["type"] != "message_start" {
        return;
    }
    if let Some(message) = event.get_mut("message").and_then(Value::as_object_mut) {
        message.insert("diagnostics".to_owned(), diagnostics);
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
    use threadline_wire::diagnostics::DiagnosticsParam;
    use threadline_wire::{CacheControl, ContentBlock, MessageParam, SystemPrompt};

    const BETA: &str = "cache-diagnosis-2026-04-07";

    fn request(messages: &[&str], previous: Option<&str>) -> MessagesRequest {
        let mut r = MessagesRequest::new(
            "claude-sonnet-4-6",
            64,
            messages
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let block = vec![ContentBlock::text(*t)];
                    if i % 2 == 0 {
                        MessageParam::user(block)
                    } else {
                        MessageParam::assistant(block)
                    }
                })
                .collect::<Vec<_>>(),
        );
        r.system = Some(SystemPrompt::Text("Be brief. ".repeat(40)));
        r.diagnostics = Some(match previous {
            Some(id) => DiagnosticsParam::after(id),
            None => DiagnosticsParam::first(),
        });
        r
    }

    #[test]
    fn the_earliest_divergence_is_reported_and_appends_are_none() {
        let f = Fingerprints::default();
        assert_eq!(
            f.answer(&request(&["a"], None), BETA, "m1", None),
            Some(Value::Null)
        );
        // Appended, with the marker moved: no divergence.
        let mut appended = request(&["a", "b", "c"], Some("m1"));
        appended.cache_control = Some(Box::new(CacheControl::ephemeral()));
        assert_eq!(f.answer(&appended, BETA, "m2", None), Some(Value::Null));
        let mut system = request(&["a", "b", "c", "d", "e"], Some("m2"));
        system.system = Some(SystemPrompt::Text("Today is Tuesday.".into()));
        // The previous system prompt (402 bytes of JSON: 101 tokens) and its three messages.
        let tokens_of = |m: MessageParam| {
            crate::usage::estimate_tokens(serde_json::to_string(&m).expect("serializes").len())
        };
        let text = |t: &str| vec![ContentBlock::text(t)];
        let tokens = 101
            + tokens_of(MessageParam::user(text("a")))
            + tokens_of(MessageParam::assistant(text("b")))
            + tokens_of(MessageParam::user(text("c")));
        assert_eq!(tokens, 144);
        assert_eq!(
            f.answer(&system, BETA, "m3", None),
            Some(json!({"cache_miss_reason":
                {"type": "system_changed", "cache_missed_input_tokens": tokens}}))
        );
        let mut rewritten = system.clone();
        rewritten.diagnostics = Some(DiagnosticsParam::after("m3"));
        rewritten.messages[1] = MessageParam::assistant(vec![ContentBlock::text("B")]);
        let reason = f.answer(&rewritten, BETA, "m4", None).expect("asked");
        assert_eq!(reason["cache_miss_reason"]["type"], "messages_changed");
        let mut model = rewritten.clone();
        model.diagnostics = Some(DiagnosticsParam::after("m4"));
        model.model = "claude-opus-4-6".into();
        let reason = f.answer(&model, BETA, "m5", None).expect("asked");
        assert_eq!(reason["cache_miss_reason"]["type"], "model_changed");
        let mut choice = model.clone();
        choice.diagnostics = Some(DiagnosticsParam::after("m5"));
        choice.thinking = serde_json::from_str(r#"{"type":"adaptive"}"#).ok();
        let reason = f.answer(&choice, BETA, "m6", None).expect("asked");
        assert_eq!(
            reason,
            json!({"cache_miss_reason": {"type": "unavailable"}})
        );

        assert_eq!(
            f.answer(&request(&["a"], Some("msg_unknown")), BETA, "m7", None),
            Some(json!({"cache_miss_reason": {"type": "previous_message_not_found"}}))
        );
        // Not asked, or no beta header: nothing.
        let mut plain = request(&["a"], None);
        assert_eq!(f.answer(&plain, "other-2026-01-01", "m8", None), None);
        plain.diagnostics = None;
        assert_eq!(f.answer(&plain, BETA, "m9", None), None);
        // A forced reason replaces the computed one.
        let forced = json!({"cache_miss_reason": {"type": "tools_changed"}});
        assert_eq!(
            f.answer(&request(&["a"], Some("m1")), BETA, "m10", Some(&forced)),
            Some(forced)
        );
    }

    #[test]
    fn a_changed_beta_set_is_unavailable_and_its_order_does_not_matter() {
        let f = Fingerprints::default();
        let first = request(&["a"], None);
        let two = format!("{BETA},compact-2026-01-12");
        let reordered = format!("compact-2026-01-12, {BETA}");
        assert_eq!(f.answer(&first, &two, "b1", None), Some(Value::Null));
        let same = request(&["a", "b", "c"], Some("b1"));
        assert_eq!(f.answer(&same, &reordered, "b2", None), Some(Value::Null));
        let fewer = request(&["a", "b", "c", "d", "e"], Some("b2"));
        assert_eq!(
            f.answer(&fewer, BETA, "b3", None),
            Some(json!({"cache_miss_reason": {"type": "unavailable"}}))
        );
    }

    #[test]
    fn past_the_horizon_a_change_is_unavailable_and_an_append_is_none() {
        let f = Fingerprints::default();
        let texts: Vec<String> = (0..HORIZON + 40).map(|i| format!("m{i}")).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let long = request(&texts, None);
        assert_eq!(f.answer(&long, BETA, "h1", None), Some(Value::Null));
        {
            let store = f.inner.lock().expect("not poisoned");
            let kept = &store.by_id["h1"];
            assert_eq!(kept.messages.len(), HORIZON);
            assert_eq!(kept.tail.map(|t| t.0), Some(HORIZON + 40));
        }
        let mut appended = long.clone();
        appended
            .messages
            .push(MessageParam::user(vec![ContentBlock::text("more")]));
        appended.diagnostics = Some(DiagnosticsParam::after("h1"));
        assert_eq!(f.answer(&appended, BETA, "h2", None), Some(Value::Null));
        let mut late = appended.clone();
        late.diagnostics = Some(DiagnosticsParam::after("h2"));
        late.messages[HORIZON + 3] = MessageParam::assistant(vec![ContentBlock::text("edited")]);
        assert_eq!(
            f.answer(&late, BETA, "h3", None),
            Some(json!({"cache_miss_reason": {"type": "unavailable"}}))
        );
        let mut early = late.clone();
        early.diagnostics = Some(DiagnosticsParam::after("h3"));
        early.messages[2] = MessageParam::user(vec![ContentBlock::text("edited")]);
        let reason = f.answer(&early, BETA, "h4", None).expect("asked");
        assert_eq!(reason["cache_miss_reason"]["type"], "messages_changed");
        let mut cut = early.clone();
        cut.diagnostics = Some(DiagnosticsParam::after("h4"));
        cut.messages.truncate(HORIZON + 1);
        assert_eq!(
            f.answer(&cut, BETA, "h5", None),
            Some(json!({"cache_miss_reason": {"type": "unavailable"}}))
        );
    }

    #[test]
    fn memory_is_bounded_and_the_oldest_are_evicted() {
        let f = Fingerprints::default();
        for n in 0..MAX_FINGERPRINTS + 10 {
            f.answer(&request(&["a"], None), BETA, &format!("m{n}"), None);
        }
        let store = f.inner.lock().expect("not poisoned");
        assert_eq!(store.by_id.len(), MAX_FINGERPRINTS);
        assert_eq!(store.order.len(), MAX_FINGERPRINTS);
        assert!(!store.by_id.contains_key("m9"));
        assert!(store.by_id.contains_key("m10"));
        drop(store);
        assert_eq!(
            f.answer(&request(&["a"], Some("m0")), BETA, "x", None),
            Some(json!({"cache_miss_reason": {"type": "previous_message_not_found"}}))
        );
    }
}
