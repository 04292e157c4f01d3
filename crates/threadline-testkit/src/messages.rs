//! Internal message arrays (`Vec<threadline_message::Message>`) for property tests and
//! benchmarks.
//!
//! * [`valid_session`]: realistic sessions that are valid by construction — user prompts
//!   (text, images, documents, compact summaries), meta and virtual user messages, assistant
//!   responses with signed thinking, text, client tool uses with unique `toolu_…` ids and
//!   server tool uses with their results, streamed as one message or as fragments sharing an
//!   API message id (also split around their tool results, as streaming tool execution
//!   records them), tool results first in the next user message (text, images, errors),
//!   progress, tool-use summaries, every attachment kind and every system event in the places
//!   an agent puts them, and a retracted partial response followed by its tombstone.
//! * [`hostile_session`]: the same, then damaged by a list of [`Mutation`]s — lost tool results
//!   and tool uses, duplicated slices with the same ids (resumed sessions), interleaved
//!   fragments, cut-off streams, empty and whitespace-only text, orphaned thinking, attachments
//!   anywhere, tombstones, results not first, dangling server tool uses, images in error
//!   results, more than 100 images.
//! * [`long_session`]: a deterministic session of exactly `n` messages of the same realistic
//!   mix, for benchmarks.
//!
//! Every header is deterministic: ids come from counters ([`SessionBuilder`]) and timestamps
//! from the message's position, so a failing case prints the same way on every run and can
//! be pasted as a regression test. [`SessionBuilder`] is also the way to write such tests by
//! hand.
//!
//! ```
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//! use threadline_message::Message;
//! use threadline_testkit::messages::{SessionBuilder, long_session, valid_session};
//!
//! let mut runner = TestRunner::deterministic();
//! let session = valid_session().new_tree(&mut runner).expect("a session").current();
//! assert!(matches!(session.iter().find(|m| matches!(m, Message::User(_))), Some(_)));
//!
//! assert_eq!(long_session(500, 7), long_session(500, 7));
//! assert_eq!(long_session(500, 7).len(), 500);
//!
//! let mut b = SessionBuilder::new();
//! b.user("Read the file");
//! let toolu = b.tool_use_id();
//! let msg = b.response_id();
//! b.assistant(&msg, vec![threadline_testkit::messages::tool_use(&toolu, "Read", serde_json::json!({}))]);
//! b.tool_results(vec![threadline_message::tool_result_block(&toolu, "fn main() {}".into(), false)]);
//! assert_eq!(b.messages().len(), 3);
//! ```

mod hostile;
mod plan;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};
use threadline_message::{Attachment, Header, Message, MessageId, SystemKind};
use threadline_wire::content::{
    Base64Source, DocumentBlock, ImageBlock, MediaSource, PlainTextSource, RedactedThinkingBlock,
    ServerToolResultBlock, ServerToolUseBlock, ThinkingBlock,
};
use threadline_wire::{ContentBlock, StopReason, ToolUseBlock};

pub use hostile::{Mutation, apply_mutations, mutation};
pub use plan::{
    AnswerPlan, Layout, Outcome, Prompt, ResultsLayout, StepPlan, ThinkingPlan, ToolPlan, TurnPlan,
    attachment, build, build_turn, prompt_text, turn_plan,
};

/// The model named on generated assistant messages.
pub const MODEL: &str = "claude-sonnet-4-5-20250929";

/// The base64 data of the generated images (the PNG signature: short, and never decoded).
pub const PNG_DATA: &str = "iVBORw0KGgo=";

/// Builds internal messages with deterministic headers and ids.
///
/// Message ids are UUID-shaped (`00000000-0000-4000-8000-000000000001`, …), timestamps are
/// `2026-01-01T00:00:00.000Z` plus one second per message (wrapping daily), tool-use ids are
/// `toolu_000001`, …, API message ids `msg_000001`, …, server tool-use ids `srvtoolu_000001`.
#[derive(Debug, Clone, Default)]
pub struct SessionBuilder {
    messages: Vec<Message>,
    next_message: u64,
    next_tool: u64,
    next_response: u64,
    next_server_tool: u64,
    next_signature: u64,
}

impl SessionBuilder {
    /// An empty session.
    pub fn new() -> Self {
        SessionBuilder::default()
    }

    /// A builder continuing `messages` (their headers are kept); counters start past any
    /// number already used, so a new id never collides with a generated one.
    pub fn continuing(messages: Vec<Message>) -> Self {
        let n = messages.len() as u64 * 8 + 1_000_000;
        SessionBuilder {
            messages,
            next_message: n,
            next_tool: n,
            next_response: n,
            next_server_tool: n,
            next_signature: n,
        }
    }

    /// The next deterministic header.
    pub fn header(&mut self) -> Header {
        self.next_message += 1;
        let n = self.next_message;
        let seconds = n % 86_400;
        Header::with(
            format!("00000000-0000-4000-8000-{n:012x}"),
            format!(
                "2026-01-01T{:02}:{:02}:{:02}.000Z",
                seconds / 3600,
                seconds / 60 % 60,
                seconds % 60
            ),
        )
    }

    /// Appends `message` with the next deterministic header; returns its id.
    pub fn push(&mut self, message: Message) -> MessageId {
        let header = self.header();
        let id = header.id.clone();
        self.messages.push(message.with_header(header));
        id
    }

    /// Appends `message` as it is, header included (a duplicate, a replay).
    pub fn push_as_is(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// A fresh client tool-use id (`toolu_000001`).
    pub fn tool_use_id(&mut self) -> String {
        self.next_tool += 1;
        format!("toolu_{:06}", self.next_tool)
    }

    /// A fresh API message id (`msg_000001`).
    pub fn response_id(&mut self) -> String {
        self.next_response += 1;
        format!("msg_{:06}", self.next_response)
    }

    /// A fresh server tool-use id (`srvtoolu_000001`).
    pub fn server_tool_use_id(&mut self) -> String {
        self.next_server_tool += 1;
        format!("srvtoolu_{:06}", self.next_server_tool)
    }

    /// A signed thinking block with a fresh signature.
    pub fn thinking(&mut self, text: impl Into<String>) -> ContentBlock {
        self.next_signature += 1;
        thinking(
            text,
            format!("EqQBCkYIBxgCKkB{:08}sig", self.next_signature),
        )
    }

    /// The messages so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages so far, mutably (for mutations).
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        &mut self.messages
    }

    /// The finished session.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// Appends a user text message.
    pub fn user(&mut self, text: impl Into<String>) -> MessageId {
        self.push(Message::user_text(text))
    }

    /// Appends a meta user text message (model-visible, hidden from the transcript view).
    pub fn meta(&mut self, text: impl Into<String>) -> MessageId {
        self.push(Message::meta_user_text(text))
    }

    /// Appends a user message holding tool results (and whatever else `blocks` holds).
    pub fn tool_results(&mut self, blocks: Vec<ContentBlock>) -> MessageId {
        self.push(Message::user_blocks(blocks))
    }

    /// Appends an assistant fragment of response `api_message_id` (model [`MODEL`], request id
    /// derived from the response id, stop reason `tool_use` when it holds a tool use).
    pub fn assistant(&mut self, api_message_id: &str, blocks: Vec<ContentBlock>) -> MessageId {
        let has_tool_use = blocks.iter().any(|b| matches!(b, ContentBlock::ToolUse(_)));
        let mut message = Message::assistant_fragment(api_message_id, MODEL, blocks);
        if let Message::Assistant(assistant) = &mut message {
            assistant.request_id = Some(api_message_id.replacen("msg_", "req_", 1));
            assistant.stop_reason = Some(if has_tool_use {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            });
        }
        self.push(message)
    }

    /// Appends an attachment message.
    pub fn attachment(&mut self, attachment: Attachment) -> MessageId {
        self.push(Message::attachment(attachment))
    }

    /// Appends a system message.
    pub fn system(&mut self, kind: SystemKind) -> MessageId {
        self.push(Message::system(kind))
    }
}

/// A text block.
pub fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::text(text)
}

/// A thinking block with the given signature.
pub fn thinking(text: impl Into<String>, signature: impl Into<String>) -> ContentBlock {
    ContentBlock::Thinking(ThinkingBlock::new(text).with_signature(signature))
}

/// A redacted-thinking block.
pub fn redacted_thinking(data: impl Into<String>) -> ContentBlock {
    ContentBlock::RedactedThinking(RedactedThinkingBlock::new(data))
}

/// A client `tool_use` block.
pub fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(ToolUseBlock::new(id, name, input))
}

/// A `server_tool_use` block calling `web_search`.
pub fn server_tool_use(id: &str, query: &str) -> ContentBlock {
    ContentBlock::ServerToolUse(
        ServerToolUseBlock::new(id, "web_search").with_input(json!({ "query": query })),
    )
}

/// The `web_search_tool_result` block answering server tool use `id`.
pub fn web_search_result(id: &str) -> ContentBlock {
    ContentBlock::WebSearchToolResult(ServerToolResultBlock::new(id).with_content(json!([{
        "type": "web_search_result",
        "url": "https://docs.rs/serde",
        "title": "serde - Rust",
        "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ2",
        "page_age": null
    }])))
}

/// A small inline PNG image block.
pub fn image() -> ContentBlock {
    ContentBlock::Image(ImageBlock::new(MediaSource::Base64(Base64Source::new(
        "image/png",
        PNG_DATA,
    ))))
}

/// A plain-text document block.
pub fn document(data: impl Into<String>) -> ContentBlock {
    ContentBlock::Document(
        DocumentBlock::new(MediaSource::Text(PlainTextSource::new("text/plain", data)))
            .with_title("notes.txt"),
    )
}

/// Realistic valid sessions (1 to 5 turns), valid by construction; see the module docs.
pub fn valid_session() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(turn_plan(), 1..6).prop_map(|turns| build(&turns))
}

/// A valid session damaged by 1 to 7 [`Mutation`]s; see the module docs.
pub fn hostile_session() -> impl Strategy<Value = Vec<Message>> {
    (
        prop::collection::vec(turn_plan(), 1..6),
        prop::collection::vec(mutation(), 1..8),
    )
        .prop_map(|(turns, mutations)| {
            let mut builder = SessionBuilder::new();
            for turn in &turns {
                build_turn(&mut builder, turn);
            }
            apply_mutations(&mut builder, &mutations);
            builder.into_messages()
        })
}

/// Valid or hostile sessions, half each.
pub fn any_session() -> impl Strategy<Value = Vec<Message>> {
    prop_oneof![valid_session(), hostile_session()]
}

/// A deterministic session of exactly `n` messages of the realistic mix [`valid_session`]
/// draws from, for benchmarks: turns are drawn from [`turn_plan`] with a ChaCha generator
/// seeded by `seed` (not a strategy: the same `(n, seed)` gives the same session, on every
/// run), built one after the other, and the last one is cut at `n` messages (so the session
/// may end anywhere, e.g. right after a tool use, as a live session does).
pub fn long_session(n: usize, seed: u64) -> Vec<Message> {
    let mut builder = SessionBuilder::new();
    extend_session(&mut builder, n, seed);
    let mut messages = builder.into_messages();
    messages.truncate(n);
    messages
}

/// Appends turns drawn as [`long_session`] does until `builder` holds at least `n` messages
/// (not cut: the last turn is whole). Used to grow a session turn by turn.
pub fn extend_session(builder: &mut SessionBuilder, n: usize, seed: u64) {
    let mut runner = seeded_runner(seed);
    let strategy = turn_plan();
    while builder.messages().len() < n {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            // Turn plans have no filters, so drawing one cannot be rejected.
            break;
        };
        build_turn(builder, &tree.current());
    }
}

/// Draws one turn plan deterministically from `seed` (for growing sessions in tests and
/// benchmarks).
pub fn seeded_turn(seed: u64) -> Option<TurnPlan> {
    let mut runner = seeded_runner(seed);
    turn_plan()
        .new_tree(&mut runner)
        .ok()
        .map(|tree| tree.current())
}

fn seeded_runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let word = seed ^ (0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(i as u64 + 1));
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    TestRunner::new_with_rng(Config::default(), rng)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(strategy: impl Strategy<Value = Vec<Message>>, n: usize) -> Vec<Vec<Message>> {
        let mut runner = TestRunner::deterministic();
        (0..n)
            .map(|_| {
                strategy
                    .new_tree(&mut runner)
                    .expect("no filters")
                    .current()
            })
            .collect()
    }

    #[test]
    fn headers_are_deterministic_and_unique() {
        let a = long_session(2_000, 1);
        assert_eq!(a, long_session(2_000, 1));
        assert_ne!(a, long_session(2_000, 2));
        let ids: std::collections::HashSet<_> = a.iter().map(|m| m.id().clone()).collect();
        assert_eq!(ids.len(), a.len());
        assert!(
            a.iter()
                .all(|m| m.header().timestamp.to_system_time().is_some())
        );
    }

    #[test]
    fn valid_sessions_cover_every_kind() {
        let sessions = sample(valid_session(), 300);
        let all: Vec<&Message> = sessions.iter().flatten().collect();
        let has = |f: &dyn Fn(&Message) -> bool| all.iter().any(|m| f(m));
        assert!(has(&|m| matches!(m, Message::Progress(_))));
        assert!(has(&|m| matches!(m, Message::Tombstone(_))));
        assert!(has(&|m| matches!(m, Message::ToolUseSummary(_))));
        assert!(has(&|m| matches!(m, Message::User(u) if u.is_meta)));
        assert!(has(&|m| matches!(m, Message::User(u) if u.is_virtual)));
        assert!(has(
            &|m| matches!(m, Message::User(u) if u.is_compact_summary)
        ));
        for kind in [
            "file",
            "directory",
            "nested_instructions",
            "date_change",
            "queued_command",
            "todo_reminder",
            "token_usage",
            "delta",
            "agent_mention",
            "reminder",
            "ui_only",
        ] {
            assert!(
                has(&|m| matches!(m, Message::Attachment(a)
                    if serde_json::to_value(&a.attachment).ok().and_then(|v| v["kind"].as_str().map(str::to_owned)).as_deref() == Some(kind))),
                "{kind}"
            );
        }
        for subtype in [
            "informational",
            "local_command",
            "compact_boundary",
            "microcompact_boundary",
            "api_error",
            "permission_retry",
            "stop_hook_summary",
            "turn_duration",
        ] {
            assert!(
                has(&|m| matches!(m, Message::System(s)
                    if serde_json::to_value(&s.kind).ok().and_then(|v| v["subtype"].as_str().map(str::to_owned)).as_deref() == Some(subtype))),
                "{subtype}"
            );
        }
        // Fragments of one response split around a tool result.
        assert!(sessions.iter().any(|s| s.windows(3).any(|w| matches!(
            (&w[0], &w[1], &w[2]),
            (Message::Assistant(a), Message::User(_), Message::Assistant(b))
                if a.api_message_id.is_some() && a.api_message_id == b.api_message_id
        ))));
    }

    #[test]
    fn valid_sessions_pair_every_tool_use() {
        for session in sample(valid_session(), 200) {
            let mut uses = Vec::new();
            let mut results = Vec::new();
            for message in &session {
                match message {
                    Message::Assistant(a) => {
                        uses.extend(a.content.iter().filter_map(|b| match b {
                            ContentBlock::ToolUse(u) => Some(u.id.clone()),
                            _ => None,
                        }))
                    }
                    Message::User(u) => results.extend(u.content.iter().filter_map(|b| match b {
                        ContentBlock::ToolResult(r) => Some(r.tool_use_id.clone()),
                        _ => None,
                    })),
                    _ => {}
                }
            }
            let unique: std::collections::HashSet<_> = uses.iter().collect();
            assert_eq!(unique.len(), uses.len(), "unique tool-use ids");
            assert_eq!(uses, results, "each use answered once, in order");
        }
    }

    #[test]
    fn hostile_sessions_are_hostile() {
        let sessions = sample(hostile_session(), 300);
        let images = |s: &Vec<Message>| {
            s.iter()
                .map(|m| match m {
                    Message::User(u) => u
                        .content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::Image(_)))
                        .count(),
                    _ => 0,
                })
                .sum::<usize>()
        };
        assert!(sessions.iter().any(|s| images(s) > 100));
        let duplicated = |s: &Vec<Message>| {
            let ids: std::collections::HashSet<_> = s.iter().map(Message::id).collect();
            ids.len() < s.len()
        };
        assert!(sessions.iter().any(duplicated));
        let ends_with_tool_use = |s: &Vec<Message>| {
            matches!(s.last(), Some(Message::Assistant(a))
                if matches!(a.content.last(), Some(ContentBlock::ToolUse(_))))
        };
        assert!(sessions.iter().any(ends_with_tool_use));
    }
}
