//! The usage of each API response in a message array, counted once.
//!
//! A streamed response can be stored as several assistant fragments (Claude Code writes one
//! record per content block), each repeating the response's usage. Input and cache figures are
//! equal across them; `output_tokens` is a streaming placeholder on all but the last (Claude
//! Code before 2.1.97). So a response's usage is its **last** fragment's, and a response is
//! told by its key: the request id (`req_…`), else the API message id (`msg_…`). A local API
//! error message (`is_api_error`) answered no request and has no usage.
//!
//! ```
//! use threadline_message::response_usage::{ResponseUsage, response_key};
//! use threadline_message::Message;
//! use threadline_wire::{ContentBlock, Usage};
//!
//! let fragment = |output: u64| {
//!     let mut m = Message::assistant_fragment("msg_1", "claude-sonnet-4-6", vec![ContentBlock::text("…")]);
//!     if let Message::Assistant(a) = &mut m {
//!         a.usage = Some(Box::new(serde_json::from_value(serde_json::json!({"input_tokens": 10, "output_tokens": output})).unwrap()));
//!     }
//!     m
//! };
//! let messages = vec![Message::user_text("hi"), fragment(1), fragment(148)];
//! let usage = ResponseUsage::of(&messages);
//! assert_eq!(usage.of_message(&messages[1]).and_then(|u| u.output_tokens), Some(148));
//! assert_eq!(usage.responses().count(), 1);
//! assert_eq!(response_key(&messages[2]), Some("msg_1"));
//! ```

use std::collections::HashMap;

use serde::Serialize;

use threadline_wire::{BilledTotals, Usage};

use crate::message::Message;

/// The key that tells an assistant message's response: its request id, else its API message
/// id; `None` for other messages and for a response stored with neither.
pub fn response_key(message: &Message) -> Option<&str> {
    match message {
        Message::Assistant(a) => a.request_id.as_deref().or(a.api_message_id.as_deref()),
        _ => None,
    }
}

/// Each response's usage, its last fragment's (see the [module docs](self)).
///
/// The keys are hashed with `foldhash` (randomly seeded per map, so crafted ids cannot force
/// collisions): a transcript has a key per response, and SipHash's setup per key was most of
/// the cost of reading them.
#[derive(Debug, Clone, Default)]
pub struct ResponseUsage<'a> {
    by_key: HashMap<&'a str, &'a Usage, foldhash::fast::RandomState>,
    /// Responses without a key, each fragment its own response, in order.
    keyless: Vec<&'a Usage>,
}

impl<'a> ResponseUsage<'a> {
    /// The responses of `messages` and their usage.
    pub fn of(messages: &'a [Message]) -> Self {
        let mut usage = ResponseUsage::default();
        for message in messages {
            let Message::Assistant(a) = message else {
                continue;
            };
            let Some(used) = a.usage.as_deref().filter(|_| !a.is_api_error) else {
                continue;
            };
            match response_key(message) {
                Some(key) => {
                    usage.by_key.insert(key, used);
                }
                None => usage.keyless.push(used),
            }
        }
        usage
    }

    /// The usage of the response `message` belongs to: its key's last fragment's, or — without
    /// a key — its own; `None` for a message that is not a response or recorded none.
    pub fn of_message(&self, message: &'a Message) -> Option<&'a Usage> {
        let Message::Assistant(a) = message else {
            return None;
        };
        if a.is_api_error {
            return None;
        }
        match response_key(message) {
            Some(key) => self.by_key.get(key).copied(),
            None => a.usage.as_deref(),
        }
    }

    /// Every response's usage, once each (in no particular order: sum them).
    pub fn responses(&self) -> impl Iterator<Item = &'a Usage> + '_ {
        self.by_key
            .values()
            .copied()
            .chain(self.keyless.iter().copied())
    }
}

/// Tokens summed over the responses of a session, each response counted once: what a
/// session cost. One type for both sums: a session summary's
/// ([`SessionInfo::tokens`](crate::SessionInfo::tokens), over [`ResponseUsage::responses`])
/// and a Claude Code import's ([`ImportResult::usage`](crate::ImportResult::usage), over the
/// file's records, every branch).
///
/// Serialized with the session listing's short names: `responses`, `input`, `output`,
/// `cache_creation_input`, `cache_read_input`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UsageTotals {
    /// How many responses were counted.
    pub responses: u64,
    /// Uncached input tokens.
    #[serde(rename = "input")]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(rename = "output")]
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(rename = "cache_creation_input")]
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(rename = "cache_read_input")]
    pub cache_read_input_tokens: u64,
}

impl UsageTotals {
    /// Counts one more response and adds what it bills ([`Usage::billed`]: every
    /// `usage.iterations` pass, a server-side compaction's included), saturating (the
    /// counts are the server's). The sum is [`BilledTotals::add`]'s, the one sum of billed
    /// usage.
    pub fn add_billed(&mut self, usage: &Usage) {
        let mut billed = BilledTotals {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens,
            cache_read_input_tokens: self.cache_read_input_tokens,
        };
        billed.add(usage);
        self.responses = self.responses.saturating_add(1);
        self.input_tokens = billed.input_tokens;
        self.output_tokens = billed.output_tokens;
        self.cache_creation_input_tokens = billed.cache_creation_input_tokens;
        self.cache_read_input_tokens = billed.cache_read_input_tokens;
    }

    /// Every token, in and out.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_billed_counts_every_iteration_and_saturates() {
        // The recorded ruby_llm compaction exchange: a compaction pass and the message.
        let usage: Usage = serde_json::from_str(
            r#"{"input_tokens":162,"output_tokens":11,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,
            "iterations":[{"type":"compaction","input_tokens":99195,"output_tokens":81},
                          {"type":"message","input_tokens":162,"output_tokens":11}]}"#,
        )
        .expect("parses");
        let mut totals = UsageTotals::default();
        totals.add_billed(&usage);
        assert_eq!(
            (totals.responses, totals.input_tokens, totals.output_tokens),
            (1, 99_357, 92)
        );
        let huge = Usage::new()
            .with_input_tokens(u64::MAX)
            .with_output_tokens(u64::MAX);
        totals.add_billed(&huge);
        totals.add_billed(&huge);
        assert_eq!(
            (totals.responses, totals.input_tokens, totals.output_tokens),
            (3, u64::MAX, u64::MAX)
        );
    }
}
