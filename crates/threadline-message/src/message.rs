//! The internal message: every kind the session records, only some of which reach the API.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use threadline_wire::content::ToolResultBlock;
use threadline_wire::{Content, ContentBlock, StopReason, Usage};

use crate::attachment::Attachment;
use crate::header::{Header, MessageId};
use crate::system::SystemKind;

fn is_false(b: &bool) -> bool {
    !*b
}

/// Something the user said, or tool results, or a synthetic message for the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Id and time.
    #[serde(flatten)]
    pub header: Header,
    /// The content blocks.
    pub content: Vec<ContentBlock>,
    /// Visible to the model, hidden from the transcript view (injected context).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_meta: bool,
    /// Never sent to the model (UI only).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_virtual: bool,
    /// The summary written by a compaction.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_compact_summary: bool,
    /// The tool's raw result, for UIs (the model sees the `tool_result` block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_result: Option<Value>,
}

/// One assistant fragment: a whole response, or a piece of one (streaming may split a
/// response into fragments that share `api_message_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Id and time.
    #[serde(flatten)]
    pub header: Header,
    /// The API's message id (`msg_…`), shared by fragments of one response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_message_id: Option<String>,
    /// The API's request id (`req_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The model that answered.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// The content blocks.
    pub content: Vec<ContentBlock>,
    /// Why the model stopped, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Usage, when known (boxed: it is large, and most messages have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
    /// A local error shown as an assistant message (never sent to the model).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_api_error: bool,
}

/// A session event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemMessage {
    /// Id and time.
    #[serde(flatten)]
    pub header: Header,
    /// What happened.
    #[serde(flatten)]
    pub kind: SystemKind,
}

/// Context attached for the next turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttachmentMessage {
    /// Id and time.
    #[serde(flatten)]
    pub header: Header,
    /// What is attached.
    pub attachment: Attachment,
}

/// Tool progress, for the UI only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressMessage {
    /// Id and time.
    #[serde(flatten)]
    pub header: Header,
    /// The tool use that reports progress.
    pub tool_use_id: String,
    /// The progress data.
    pub data: Value,
}

/// Retracts an earlier message (e.g. a partial response after a streaming fallback).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tombstone {
    /// Id and time.
    #[serde(flatten)]
    pub header: Header,
    /// The retracted message.
    pub retracts: MessageId,
}

/// A short label for a batch of tool uses, for UIs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseSummary {
    /// Id and time.
    #[serde(flatten)]
    pub header: Header,
    /// The label.
    pub summary: String,
    /// The tool uses it summarizes.
    pub tool_use_ids: Vec<String>,
}

/// One entry of the internal message array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// User input, tool results, synthetic messages.
    User(UserMessage),
    /// A model response or a fragment of one.
    Assistant(AssistantMessage),
    /// A session event.
    System(SystemMessage),
    /// Context for the next turn.
    Attachment(AttachmentMessage),
    /// Tool progress (UI only).
    Progress(ProgressMessage),
    /// A retraction.
    Tombstone(Tombstone),
    /// A UI label for tool uses.
    ToolUseSummary(ToolUseSummary),
}

/// The user text that follows what a server compaction kept (a restated prompt when the turn
/// had gone on past it, or the turns kept verbatim). It also marks where the workspace
/// context goes after the compaction block: in the user message holding it, which no
/// request before the swap sent.
pub const CONTINUE_AFTER_SUMMARY: &str = "The conversation so far was summarized above to save \
context. Continue the task from where the summary leaves off; do not start it over.";

/// The text of the synthetic result given to a tool use whose result is missing.
pub const MISSING_TOOL_RESULT: &str =
    "[Tool result missing: the tool call was interrupted before it produced a result]";

impl Message {
    /// The message's header.
    pub fn header(&self) -> &Header {
        match self {
            Message::User(m) => &m.header,
            Message::Assistant(m) => &m.header,
            Message::System(m) => &m.header,
            Message::Attachment(m) => &m.header,
            Message::Progress(m) => &m.header,
            Message::Tombstone(m) => &m.header,
            Message::ToolUseSummary(m) => &m.header,
        }
    }

    /// The message's id.
    pub fn id(&self) -> &MessageId {
        &self.header().id
    }

    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Message {
        Message::user_blocks(vec![ContentBlock::text(text)])
    }

    /// A user message with the given blocks.
    pub fn user_blocks(content: Vec<ContentBlock>) -> Message {
        Message::User(UserMessage {
            header: Header::new(),
            content,
            is_meta: false,
            is_virtual: false,
            is_compact_summary: false,
            tool_use_result: None,
        })
    }

    /// A meta user message: text the model sees but the transcript view hides.
    pub fn meta_user_text(text: impl Into<String>) -> Message {
        let mut message = Message::user_text(text);
        if let Message::User(user) = &mut message {
            user.is_meta = true;
        }
        message
    }

    /// The summary user message a compaction writes.
    pub fn compact_summary(text: impl Into<String>) -> Message {
        let mut message = Message::user_text(text);
        if let Message::User(user) = &mut message {
            user.is_compact_summary = true;
        }
        message
    }

    /// A user message carrying one tool result.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: Content,
        is_error: bool,
    ) -> Message {
        Message::user_blocks(vec![tool_result_block(tool_use_id, content, is_error)])
    }

    /// A user message carrying an error result for a tool use (interrupted, denied, failed).
    pub fn synthetic_error_result(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
    ) -> Message {
        Message::tool_result(tool_use_id, Content::Text(text.into()), true)
    }

    /// An assistant message.
    pub fn assistant(content: Vec<ContentBlock>) -> Message {
        Message::Assistant(AssistantMessage {
            header: Header::new(),
            api_message_id: None,
            request_id: None,
            model: String::new(),
            content,
            stop_reason: None,
            usage: None,
            is_api_error: false,
        })
    }

    /// An assistant fragment of an API response.
    pub fn assistant_fragment(
        api_message_id: impl Into<String>,
        model: impl Into<String>,
        content: Vec<ContentBlock>,
    ) -> Message {
        let mut message = Message::assistant(content);
        if let Message::Assistant(assistant) = &mut message {
            assistant.api_message_id = Some(api_message_id.into());
            assistant.model = model.into();
        }
        message
    }

    /// The assistant message for a complete API response.
    pub fn from_response(
        response: &threadline_wire::ResponseMessage,
        request_id: Option<String>,
    ) -> Message {
        Message::Assistant(AssistantMessage {
            header: Header::new(),
            api_message_id: Some(response.id.clone()),
            request_id,
            model: response.model.clone(),
            content: response.content.clone(),
            stop_reason: response.stop_reason.clone(),
            usage: response.usage.clone().map(Box::new),
            is_api_error: false,
        })
    }

    /// A system message.
    pub fn system(kind: SystemKind) -> Message {
        Message::System(SystemMessage {
            header: Header::new(),
            kind,
        })
    }

    /// An attachment message.
    pub fn attachment(attachment: Attachment) -> Message {
        Message::Attachment(AttachmentMessage {
            header: Header::new(),
            attachment,
        })
    }

    /// A progress message.
    pub fn progress(tool_use_id: impl Into<String>, data: Value) -> Message {
        Message::Progress(ProgressMessage {
            header: Header::new(),
            tool_use_id: tool_use_id.into(),
            data,
        })
    }

    /// A tombstone retracting `id`.
    pub fn tombstone(id: MessageId) -> Message {
        Message::Tombstone(Tombstone {
            header: Header::new(),
            retracts: id,
        })
    }

    /// A tool-use summary.
    pub fn tool_use_summary(summary: impl Into<String>, tool_use_ids: Vec<String>) -> Message {
        Message::ToolUseSummary(ToolUseSummary {
            header: Header::new(),
            summary: summary.into(),
            tool_use_ids,
        })
    }

    /// The same message with the given header (for imports, replays and deterministic tests).
    pub fn with_header(mut self, header: Header) -> Message {
        match &mut self {
            Message::User(m) => m.header = header,
            Message::Assistant(m) => m.header = header,
            Message::System(m) => m.header = header,
            Message::Attachment(m) => m.header = header,
            Message::Progress(m) => m.header = header,
            Message::Tombstone(m) => m.header = header,
            Message::ToolUseSummary(m) => m.header = header,
        }
        self
    }
}

/// A `tool_result` block.
pub fn tool_result_block(
    tool_use_id: impl Into<String>,
    content: Content,
    is_error: bool,
) -> ContentBlock {
    let mut block = ToolResultBlock::new(tool_use_id).with_content(content);
    block.is_error = is_error.then_some(true);
    ContentBlock::ToolResult(block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::Level;

    #[test]
    fn every_kind_round_trips_through_json() {
        let messages = vec![
            Message::user_text("hi"),
            Message::meta_user_text("<system-reminder>x</system-reminder>"),
            Message::synthetic_error_result("toolu_1", "interrupted by user"),
            Message::assistant_fragment(
                "msg_1",
                "claude-sonnet-4-6",
                vec![ContentBlock::text("ok")],
            ),
            Message::system(SystemKind::Informational {
                level: Level::Warning,
                content: "w".into(),
            }),
            Message::attachment(Attachment::DateChange {
                date: "2026-11-29".into(),
            }),
            Message::progress("toolu_1", serde_json::json!({"lines": 3})),
            Message::tombstone(MessageId::from("m1")),
            Message::tool_use_summary("Read 2 files", vec!["toolu_1".into()]),
        ];
        for message in messages {
            let json = serde_json::to_string(&message).expect("serializes");
            let back: Message = serde_json::from_str(&json).expect("parses");
            assert_eq!(back, message, "{json}");
        }
    }

    #[test]
    fn error_results_are_marked() {
        let Message::User(user) = Message::synthetic_error_result("toolu_1", "denied") else {
            panic!("a user message")
        };
        assert!(
            matches!(&user.content[0], ContentBlock::ToolResult(r) if r.is_error == Some(true))
        );
    }
}
