//! Builders and checks shared by the unit tests.

use serde_json::json;
use threadline_message::{Attachment, Header, Message, tool_result_block};
use threadline_validate::{Violation, validate};
use threadline_wire::content::{
    Base64Source, ImageBlock, MediaSource, RedactedThinkingBlock, ServerToolResultBlock,
    ServerToolUseBlock, ThinkingBlock,
};
use threadline_wire::model::ModelTable;
use threadline_wire::{Content, ContentBlock, MessageParam, MessagesRequest, Role, ToolUseBlock};

use crate::draft::{Draft, Side};
use crate::{Normalized, Options, normalize, to_internal};

/// A model that accepts prefill and manual thinking (not used).
pub(crate) const MODEL: &str = "claude-sonnet-4-5";

pub(crate) fn user(text: &str) -> Message {
    Message::user_text(text)
}

pub(crate) fn user_blocks(blocks: Vec<ContentBlock>) -> Message {
    Message::user_blocks(blocks)
}

pub(crate) fn meta(text: &str) -> Message {
    Message::meta_user_text(text)
}

pub(crate) fn asst(blocks: Vec<ContentBlock>) -> Message {
    Message::assistant(blocks)
}

pub(crate) fn asst_text(text: &str) -> Message {
    Message::assistant(vec![ContentBlock::text(text)])
}

pub(crate) fn frag(api_id: &str, blocks: Vec<ContentBlock>) -> Message {
    Message::assistant_fragment(api_id, MODEL, blocks)
}

pub(crate) fn att(attachment: Attachment) -> Message {
    Message::attachment(attachment)
}

pub(crate) fn reminder(text: &str) -> Message {
    att(Attachment::Reminder { text: text.into() })
}

pub(crate) fn with_id(message: Message, id: &str) -> Message {
    message.with_header(Header::with(id, "2026-01-01T00:00:00.000Z"))
}

pub(crate) fn text(t: &str) -> ContentBlock {
    ContentBlock::text(t)
}

pub(crate) fn tool_use(id: &str) -> ContentBlock {
    ContentBlock::ToolUse(ToolUseBlock::new(id, "Read", json!({"file_path": "a.rs"})))
}

pub(crate) fn result(id: &str, text: &str) -> ContentBlock {
    tool_result_block(id, Content::Text(text.into()), false)
}

pub(crate) fn results(ids: &[&str]) -> Message {
    user_blocks(ids.iter().map(|id| result(id, "ok")).collect())
}

pub(crate) fn server_use(id: &str) -> ContentBlock {
    ContentBlock::ServerToolUse(
        ServerToolUseBlock::new(id, "web_search").with_input(json!({"query": "q"})),
    )
}

pub(crate) fn server_result(id: &str) -> ContentBlock {
    ContentBlock::WebSearchToolResult(ServerToolResultBlock::new(id).with_content(json!([])))
}

pub(crate) fn thinking(t: &str) -> ContentBlock {
    ContentBlock::Thinking(ThinkingBlock::new(t).with_signature(format!("sig-{t}")))
}

pub(crate) fn unsigned_thinking(t: &str) -> ContentBlock {
    ContentBlock::Thinking(ThinkingBlock::new(t))
}

pub(crate) fn redacted() -> ContentBlock {
    ContentBlock::RedactedThinking(RedactedThinkingBlock::new("opaque"))
}

pub(crate) fn image() -> ContentBlock {
    ContentBlock::Image(ImageBlock::new(MediaSource::Base64(Base64Source::new(
        "image/png",
        "iVBORw0KGgo=",
    ))))
}

/// A compact picture of blocks: `text(hi)`, `use(t1)`, `result(t1)`, `result!(t1)` (error),
/// `thinking`, `redacted`, `srv(id)`, `srvres(id)`, `image`, `document`, else the tag.
pub(crate) fn block_shape(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => format!("text({})", t.text),
        ContentBlock::ToolUse(u) => format!("use({})", u.id),
        ContentBlock::ToolResult(r) if r.is_error == Some(true) => {
            format!("result!({})", r.tool_use_id)
        }
        ContentBlock::ToolResult(r) => format!("result({})", r.tool_use_id),
        ContentBlock::Thinking(_) => "thinking".into(),
        ContentBlock::RedactedThinking(_) => "redacted".into(),
        ContentBlock::ServerToolUse(u) => format!("srv({})", u.id),
        ContentBlock::Image(_) => "image".into(),
        ContentBlock::Document(_) => "document".into(),
        other => match other.server_tool_result() {
            Some(r) => format!("srvres({})", r.tool_use_id),
            None => other.tag().to_owned(),
        },
    }
}

fn blocks_shape(blocks: &[ContentBlock]) -> String {
    blocks.iter().map(block_shape).collect::<Vec<_>>().join(" ")
}

/// `U: text(hi) | A: use(t1) | U: result(t1)`.
pub(crate) fn shape(messages: &[MessageParam]) -> String {
    messages
        .iter()
        .map(|m| {
            let role = if m.role == Role::Assistant { "A" } else { "U" };
            match &m.content {
                Content::Text(t) => format!("{role}: \"{t}\""),
                Content::Blocks(blocks) => format!("{role}: {}", blocks_shape(blocks)),
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// [`shape`] for drafts.
pub(crate) fn drafts_shape(drafts: &[Draft<'_>]) -> String {
    drafts
        .iter()
        .map(|d| {
            let role = if d.side == Side::Assistant { "A" } else { "U" };
            format!("{role}: {}", blocks_shape(&d.blocks))
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The validator's violations for `messages` sent as they are to [`MODEL`].
pub(crate) fn violations(messages: &[MessageParam]) -> Vec<Violation> {
    let request = MessagesRequest::new(MODEL, 1024, messages.to_vec());
    let model = ModelTable::builtin().resolve(MODEL).model();
    validate(&request, model)
}

pub(crate) fn assert_valid(messages: &[MessageParam]) {
    let found = violations(messages);
    assert!(
        found.is_empty(),
        "{}\n{}",
        shape(messages),
        found
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The non-blank text blocks of the non-meta, non-virtual, non-retracted user messages, in
/// order (a message repeated with the same id counts once).
pub(crate) fn typed_texts(input: &[Message]) -> Vec<&str> {
    let retracted: std::collections::HashSet<&str> = input
        .iter()
        .filter_map(|m| match m {
            Message::Tombstone(t) => Some(t.retracts.as_str()),
            _ => None,
        })
        .collect();
    let mut texts = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for message in input {
        if let Message::User(user) = message
            && seen.insert(user.header.id.as_str())
            && !retracted.contains(user.header.id.as_str())
            && !user.is_meta
            && !user.is_virtual
        {
            for block in &user.content {
                if let ContentBlock::Text(t) = block
                    && !t.text.trim().is_empty()
                {
                    texts.push(t.text.as_str());
                }
            }
        }
    }
    texts
}

/// Every typed user text of `input` is a text block of a user message of `output`, in order.
pub(crate) fn assert_typed_text_kept(input: &[Message], output: &[MessageParam]) {
    let mut sent = output
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| match &m.content {
            Content::Blocks(blocks) => blocks.as_slice(),
            Content::Text(_) => &[],
        })
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        });
    for typed in typed_texts(input) {
        assert!(
            sent.any(|s| s == typed),
            "lost or reordered user text {typed:?} in {}",
            shape(output)
        );
    }
}

/// Normalizes `input` with default options and checks what every output must satisfy: valid,
/// idempotent (same output, no repairs), deterministic, no typed user text lost.
pub(crate) fn check(input: &[Message]) -> Normalized {
    let options = Options::default();
    let out = normalize(input, &options);
    assert_valid(&out.messages);
    let again = normalize(&to_internal(&out.messages), &options);
    assert_eq!(
        shape(&again.messages),
        shape(&out.messages),
        "not idempotent"
    );
    assert_eq!(again.messages, out.messages, "not idempotent");
    assert!(
        again.report.is_empty(),
        "second run repaired: {}",
        again.report
    );
    let json = |m: &[MessageParam]| serde_json::to_string(m).expect("serializes");
    assert_eq!(
        json(&normalize(input, &options).messages),
        json(&out.messages),
        "not deterministic"
    );
    assert_typed_text_kept(input, &out.messages);
    out
}

/// Drafts straight from messages (users and assistants only), for pass-level tests.
pub(crate) fn drafts(input: &[Message]) -> Vec<Draft<'_>> {
    input
        .iter()
        .enumerate()
        .filter_map(|(n, m)| match m {
            Message::User(u) => Some(Draft::user(u.content.clone(), Some(n))),
            Message::Assistant(a) => Some(Draft::assistant(
                a.content.clone(),
                Some(n),
                a.api_message_id.as_deref(),
            )),
            _ => None,
        })
        .collect()
}
