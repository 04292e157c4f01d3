//! The working representation the passes share: a message of the request being built.
//!
//! The input is cloned exactly once, in [`drop_non_api`](crate::passes::drop_non_api), into
//! [`Draft`]s; every later pass moves drafts and blocks, never clones them.

use threadline_message::{AssistantMessage, Attachment, Header, Message, UserMessage};
use threadline_wire::{Content, ContentBlock, MessageParam, Role};

/// Who speaks in a draft: the two roles the request holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// A user message (typed text, tool results, rendered context).
    User,
    /// An assistant message (a response, or fragments of one).
    Assistant,
}

/// One message of the request being built.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draft<'a> {
    /// Its role.
    pub(crate) side: Side,
    /// Its content.
    pub(crate) blocks: Vec<ContentBlock>,
    /// The input index of the message it came from (the first one, once merged); `None` for
    /// messages the pipeline made up.
    pub(crate) origin: Option<usize>,
    /// The API message id shared by the fragments of one streamed response.
    pub(crate) api_message_id: Option<&'a str>,
}

impl<'a> Draft<'a> {
    /// A user draft.
    pub(crate) fn user(blocks: Vec<ContentBlock>, origin: Option<usize>) -> Self {
        Draft {
            side: Side::User,
            blocks,
            origin,
            api_message_id: None,
        }
    }

    /// An assistant draft.
    pub(crate) fn assistant(
        blocks: Vec<ContentBlock>,
        origin: Option<usize>,
        api_message_id: Option<&'a str>,
    ) -> Self {
        Draft {
            side: Side::Assistant,
            blocks,
            origin,
            api_message_id,
        }
    }

    /// Whether this is a user message.
    pub(crate) fn is_user(&self) -> bool {
        self.side == Side::User
    }

    /// Whether this is an assistant message.
    pub(crate) fn is_assistant(&self) -> bool {
        self.side == Side::Assistant
    }

    /// The request message.
    pub(crate) fn into_param(self) -> MessageParam {
        let role = match self.side {
            Side::User => Role::User,
            Side::Assistant => Role::Assistant,
        };
        MessageParam::new(role, Content::Blocks(self.blocks))
    }
}

/// An element of the array between passes 2 and 3: a draft, or an attachment still to render.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item<'a> {
    /// A message for the API.
    Draft(Draft<'a>),
    /// An attachment, with its input index.
    Attachment {
        /// The payload.
        attachment: &'a Attachment,
        /// Its index in the input.
        origin: usize,
    },
}

/// Whether `block` is a client `tool_result`.
pub(crate) fn is_tool_result(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::ToolResult(_))
}

/// Whether `block` is an image or a document (what the media cap counts).
pub(crate) fn is_media(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Image(_) | ContentBlock::Document(_))
}

/// Whether `text` is empty or whitespace only (what the API rejects in a text block).
pub(crate) fn is_blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}

/// Whether `block` is a text block the API rejects (empty or whitespace only).
pub(crate) fn is_blank_text(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Text(t) if is_blank(&t.text))
}

/// The id a server tool result block answers: the known result types, and any block of an
/// unknown type named `*_tool_result` with a `tool_use_id` (the validator reads them the same
/// way).
pub(crate) fn server_result_id(block: &ContentBlock) -> Option<&str> {
    if let Some(result) = block.server_tool_result() {
        return Some(&result.tool_use_id);
    }
    match block {
        ContentBlock::Unknown(value) if block.tag().ends_with("_tool_result") => {
            value.get("tool_use_id").and_then(|id| id.as_str())
        }
        _ => None,
    }
}

/// The timestamp of every message [`to_internal`] makes.
pub const INTERNAL_TIMESTAMP: &str = "1970-01-01T00:00:00.000Z";

/// Request messages back as internal messages, with deterministic headers (ids `n0`, `n1`, …,
/// timestamp [`INTERNAL_TIMESTAMP`]): `user` messages become plain user messages,
/// `assistant` messages assistant messages with no API id; any other role is read as `user`.
///
/// Normalizing the result again gives the same request and an empty report
/// (normalization is idempotent):
///
/// ```
/// use threadline_message::Message;
/// use threadline_normalize::{normalize, to_internal, Options};
/// use threadline_wire::ContentBlock;
///
/// let session = vec![
///     Message::user_text("hi"),
///     Message::assistant(vec![ContentBlock::text("hello   ")]),
/// ];
/// let once = normalize(&session, &Options::default());
/// let twice = normalize(&to_internal(&once.messages), &Options::default());
/// assert_eq!(twice.messages, once.messages);
/// assert!(twice.report.is_empty());
/// ```
pub fn to_internal(messages: &[MessageParam]) -> Vec<Message> {
    messages
        .iter()
        .enumerate()
        .map(|(n, message)| {
            let header = Header::with(format!("n{n}"), INTERNAL_TIMESTAMP);
            let content = match &message.content {
                Content::Text(text) => vec![ContentBlock::text(text.clone())],
                Content::Blocks(blocks) => blocks.clone(),
            };
            if message.role == Role::Assistant {
                Message::Assistant(AssistantMessage {
                    header,
                    api_message_id: None,
                    request_id: None,
                    model: String::new(),
                    content,
                    stop_reason: None,
                    usage: None,
                    is_api_error: false,
                })
            } else {
                Message::User(UserMessage {
                    header,
                    content,
                    is_meta: false,
                    is_virtual: false,
                    is_compact_summary: false,
                    tool_use_result: None,
                })
            }
        })
        .collect()
}
