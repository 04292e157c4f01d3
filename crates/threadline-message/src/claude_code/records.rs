//! Mapping: a chain record to a [`Message`], field by field.

use serde::Deserialize;
use serde_json::{Map, Value};
use threadline_wire::{ContentBlock, StopReason, Usage};

use super::attachments::map_attachment;
use super::graph::{conversation_type, uuid};
use super::lines::Record;
use crate::header::{Header, MessageId, Timestamp};
use crate::message::{AssistantMessage, AttachmentMessage, Message, SystemMessage, UserMessage};
use crate::system::{CompactTrigger, Level, SystemKind};
use crate::transcript::{LineProblem, LineProblemKind};

pub(super) enum Mapped {
    // Boxed: a message is much larger than a map.
    Message(Box<Message>),
    Opaque(Map<String, Value>),
}

pub(super) fn map_record(record: Record, problems: &mut Vec<LineProblem>) -> Mapped {
    let Record { line, mut object } = record;
    let Some(record_type) = conversation_type(&object).map(str::to_owned) else {
        return Mapped::Opaque(object);
    };
    let header = Header {
        id: MessageId(uuid(&object).unwrap_or_default().to_owned()),
        timestamp: Timestamp(
            str_field(&object, "timestamp")
                .unwrap_or_default()
                .to_owned(),
        ),
    };
    let mut block_problems = Vec::new();
    let mapped = match record_type.as_str() {
        "user" => map_user(&object, header, &mut block_problems).map(|mut user| {
            user.tool_use_result = object.remove("toolUseResult").filter(|v| !v.is_null());
            Some(Message::User(user))
        }),
        "assistant" => map_assistant(&object, header, &mut block_problems)
            .map(|assistant| Some(Message::Assistant(assistant))),
        "attachment" => map_attachment(&object).map(|attachment| {
            Some(Message::Attachment(AttachmentMessage {
                header,
                attachment,
            }))
        }),
        _ => Ok(map_system(&object).map(|kind| Message::System(SystemMessage { header, kind }))),
    };
    match mapped {
        Ok(Some(message)) => {
            problems.extend(
                block_problems
                    .into_iter()
                    .map(|kind| LineProblem { line, kind }),
            );
            Mapped::Message(Box::new(message))
        }
        Ok(None) => Mapped::Opaque(object),
        Err(error) => {
            problems.push(LineProblem {
                line,
                kind: LineProblemKind::Unmapped { record_type, error },
            });
            Mapped::Opaque(object)
        }
    }
}

pub(super) fn str_field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

pub(super) fn bool_field(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool) == Some(true)
}

/// A non-negative number as `u64` (fractions, which Claude Code writes for some durations,
/// are rounded).
pub(super) fn u64_field(object: Option<&Map<String, Value>>, key: &str) -> Option<u64> {
    let value = object?.get(key)?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            // In range: finite, non-negative, and `as` saturates at u64::MAX.
            .map(|f| f.round() as u64)
    })
}

/// The API-style `message` object of a user or assistant record.
fn api_message(object: &Map<String, Value>) -> Result<&Map<String, Value>, String> {
    object
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| "no `message` object".to_owned())
}

/// `message.content`: a string (one text block) or a list of blocks. A block that does not
/// parse is kept verbatim as an unknown block and reported.
fn content_blocks(
    message: &Map<String, Value>,
    problems: &mut Vec<LineProblemKind>,
) -> Result<Vec<ContentBlock>, String> {
    match message.get("content") {
        Some(Value::String(text)) => Ok(vec![ContentBlock::text(text.clone())]),
        Some(Value::Array(items)) => Ok(items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                ContentBlock::deserialize(item).unwrap_or_else(|error| {
                    problems.push(LineProblemKind::BadBlock {
                        index,
                        error: error.to_string(),
                    });
                    ContentBlock::Unknown(item.clone())
                })
            })
            .collect()),
        Some(_) => Err("`message.content` is neither text nor a list of blocks".to_owned()),
        None => Err("no `message.content`".to_owned()),
    }
}

fn map_user(
    object: &Map<String, Value>,
    header: Header,
    problems: &mut Vec<LineProblemKind>,
) -> Result<UserMessage, String> {
    let message = api_message(object)?;
    Ok(UserMessage {
        header,
        content: content_blocks(message, problems)?,
        is_meta: bool_field(object, "isMeta"),
        is_virtual: false,
        is_compact_summary: bool_field(object, "isCompactSummary"),
        tool_use_result: None,
    })
}

fn map_assistant(
    object: &Map<String, Value>,
    header: Header,
    problems: &mut Vec<LineProblemKind>,
) -> Result<AssistantMessage, String> {
    let message = api_message(object)?;
    Ok(AssistantMessage {
        header,
        api_message_id: str_field(message, "id").map(str::to_owned),
        request_id: str_field(object, "requestId").map(str::to_owned),
        model: str_field(message, "model").unwrap_or_default().to_owned(),
        content: content_blocks(message, problems)?,
        stop_reason: str_field(message, "stop_reason").map(StopReason::from),
        // Usage is informational: one that does not parse is left out.
        usage: message
            .get("usage")
            .and_then(|u| Usage::deserialize(u).ok())
            .map(Box::new),
        is_api_error: bool_field(object, "isApiErrorMessage"),
    })
}

/// The kind of a `system` record; `None` for a subtype this version does not map and that
/// has no text to show.
fn map_system(object: &Map<String, Value>) -> Option<SystemKind> {
    let content = str_field(object, "content");
    let text = || content.unwrap_or_default().to_owned();
    let metadata = |key| object.get(key).and_then(Value::as_object);
    let kind = match str_field(object, "subtype") {
        Some("compact_boundary") => {
            let meta = metadata("compactMetadata");
            SystemKind::CompactBoundary {
                trigger: match meta.and_then(|m| str_field(m, "trigger")) {
                    Some("manual") => CompactTrigger::Manual,
                    Some("reactive") => CompactTrigger::Reactive,
                    // `auto`, and whatever a later version adds.
                    _ => CompactTrigger::Auto,
                },
                pre_tokens: u64_field(meta, "preTokens").unwrap_or(0),
                last_message_id: str_field(object, "logicalParentUuid").map(MessageId::from),
            }
        }
        Some("microcompact_boundary") => {
            let meta = metadata("microcompactMetadata");
            SystemKind::MicrocompactBoundary {
                cleared_tool_use_ids: meta
                    .and_then(|m| m.get("compactedToolIds"))
                    .and_then(Value::as_array)
                    .map(|ids| {
                        ids.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                tokens_saved: u64_field(meta, "tokensSaved").unwrap_or(0),
            }
        }
        Some("local_command") => SystemKind::LocalCommand { content: text() },
        Some("api_error") => SystemKind::ApiError {
            message: content
                .map(str::to_owned)
                .unwrap_or_else(|| api_error_message(object.get("error"))),
            attempt: u32_from(u64_field(Some(object), "retryAttempt")),
            max_attempts: u32_from(u64_field(Some(object), "maxRetries")),
            retry_in_ms: u64_field(Some(object), "retryInMs"),
        },
        Some("stop_hook_summary") => SystemKind::StopHookSummary {
            content: content.map(str::to_owned).unwrap_or_else(|| {
                object
                    .get("hookErrors")
                    .and_then(Value::as_array)
                    .map(|errors| {
                        errors
                            .iter()
                            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default()
            }),
            prevented_continuation: bool_field(object, "preventedContinuation"),
        },
        Some("turn_duration") => SystemKind::TurnDuration {
            duration_ms: u64_field(Some(object), "durationMs").unwrap_or(0),
        },
        _ => SystemKind::Informational {
            level: match str_field(object, "level") {
                Some("warning") => Level::Warning,
                Some("error") => Level::Error,
                _ => Level::Info,
            },
            content: content?.to_owned(),
        },
    };
    Some(kind)
}

fn u32_from(value: Option<u64>) -> u32 {
    value.map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// The text of an `api_error` record's `error`: its `message` (possibly nested one level, as
/// the API's error bodies are), else the error as JSON.
fn api_error_message(error: Option<&Value>) -> String {
    let Some(error) = error else {
        return "API error".to_owned();
    };
    error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| {
            error
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
        })
        .map_or_else(|| error.to_string(), str::to_owned)
}
