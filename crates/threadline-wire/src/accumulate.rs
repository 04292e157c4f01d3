//! Folds stream events into the final [`ResponseMessage`], exactly as the official SDKs do.
//!
//! The rules (the TypeScript SDK's `MessageStream` and the Python SDK's `accumulate_event`):
//! - `message_start` gives the message shell; a second one before `message_stop` is an error,
//!   and so is any other event before the first.
//! - `content_block_start` appends the block; `text_delta` and `thinking_delta` append text;
//!   `input_json_delta` appends to a per-block buffer that is parsed at `content_block_stop`
//!   (an empty buffer keeps the `{}` the block started with); `signature_delta` replaces the
//!   signature; `citations_delta` pushes a citation; `compaction_delta` sets the summary.
//! - `message_delta` sets the stop reason and stop sequence, and overwrites (never adds) the
//!   cumulative usage fields it carries: `output_tokens` always, and `input_tokens`,
//!   `cache_creation_input_tokens`, `cache_read_input_tokens`, `server_tool_use` and
//!   `iterations` when present.
//! - `ping` and events of unknown type are ignored anywhere; an `error` event is a typed error.
//!
//! Beyond the SDKs, the accumulator reports each block the moment its `content_block_stop`
//! arrives ([`CompletedBlock`]) so a tool can start before the message ends, and it refuses to
//! call a stream complete that was not: [`MessageAccumulator::finish`] returns the partial
//! message together with a [`StreamIncomplete`] error when `message_stop` or a
//! `content_block_stop` is missing.

use serde_json::Value;

use crate::api_error::ApiErrorBody;
use crate::content::ContentBlock;
use crate::json_size::serialized_len;
use crate::response::ResponseMessage;
use crate::stream_event::{ContentDelta, MessageDelta, StreamEvent};

/// The default bound on what a stream may accumulate (64 MiB): the JSON of the blocks that
/// `message_start` and `content_block_start` bring and of every delta, a block counting at
/// least its size in memory (see [`MessageAccumulator::with_max_message_bytes`]).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// A content block whose `content_block_stop` has arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedBlock {
    /// The block's index in the message content.
    pub index: usize,
    /// The complete block (a tool use has its parsed input).
    pub block: ContentBlock,
}

impl CompletedBlock {
    /// The block as a tool use, if it is one: the signal to start running the tool.
    pub fn as_tool_use(&self) -> Option<&crate::content::ToolUseBlock> {
        match &self.block {
            ContentBlock::ToolUse(tool_use) => Some(tool_use),
            _ => None,
        }
    }
}

/// An event the accumulator could not apply.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AccumulateError {
    /// An event arrived before `message_start`.
    #[error("stream event `{event}` arrived before `message_start`")]
    EventBeforeMessageStart {
        /// The event's type.
        event: String,
    },
    /// A second `message_start` arrived before `message_stop`.
    #[error("unexpected `message_start`: a message was already started and not stopped")]
    MessageStartTwice,
    /// An event arrived after `message_stop`.
    #[error("stream event `{event}` arrived after `message_stop`")]
    EventAfterMessageStop {
        /// The event's type.
        event: String,
    },
    /// `content_block_start` named an index other than the next position.
    #[error("`content_block_start` for index {index}, expected index {expected}")]
    BlockOutOfOrder {
        /// The index the event named.
        index: usize,
        /// The next free position.
        expected: usize,
    },
    /// A delta or stop named a block that was never started.
    #[error("`{event}` for block {index}, which was never started")]
    UnknownBlock {
        /// The event's type.
        event: String,
        /// The index it named.
        index: usize,
    },
    /// A delta or stop arrived for a block that was already stopped.
    #[error("`{event}` for block {index}, which was already stopped")]
    BlockAlreadyStopped {
        /// The event's type.
        event: String,
        /// The index it named.
        index: usize,
    },
    /// A delta does not fit the block it names (e.g. `text_delta` on a `tool_use`).
    #[error("`{delta}` cannot apply to the `{block}` block at index {index}")]
    DeltaMismatch {
        /// The block's index.
        index: usize,
        /// The delta's type.
        delta: String,
        /// The block's type.
        block: String,
    },
    /// A tool use's streamed input is not valid JSON.
    #[error("the input of tool use `{tool_use_id}` (block {index}) is not valid JSON: {message}")]
    InvalidToolInput {
        /// The block's index.
        index: usize,
        /// The tool use id.
        tool_use_id: String,
        /// The JSON parser's message.
        message: String,
    },
    /// The accumulated text passed the configured bound.
    #[error("the streamed message is larger than the {limit}-byte limit")]
    MessageTooLarge {
        /// The bound in bytes.
        limit: usize,
    },
    /// The API sent an `error` event.
    #[error("the API reported an error mid-stream: {}: {}", .error.kind, .error.message)]
    Api {
        /// The error.
        error: ApiErrorBody,
        /// The request id, when the event carried one.
        request_id: Option<String>,
    },
}

/// Why a stream that ended is not a complete message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Truncation {
    /// No `message_start` was seen: there is no message at all.
    #[error("the stream ended before `message_start`")]
    NoMessageStart,
    /// A block was started but never stopped.
    #[error("the stream ended inside block {index} (`{block}`) before its `content_block_stop`")]
    UnclosedBlock {
        /// The block's index.
        index: usize,
        /// The block's type.
        block: String,
        /// For a tool use, the input JSON text received so far. The block's `input` holds it
        /// parsed as far as it goes (an unfinished string left out), like the SDKs' snapshots.
        partial_json: Option<String>,
    },
    /// Every block was closed but `message_stop` never came.
    #[error("the stream ended before `message_stop`")]
    NoMessageStop,
}

/// A stream that ended without a complete message: what was received, and why it is partial.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("incomplete stream: {reason}")]
#[non_exhaustive]
pub struct StreamIncomplete {
    /// The message as far as it got (`None` without `message_start`).
    pub partial: Option<Box<ResponseMessage>>,
    /// What was missing.
    pub reason: Truncation,
}

#[derive(Debug, Clone)]
enum BlockState {
    Open { partial_json: String },
    Stopped,
}

/// Folds [`StreamEvent`]s into a [`ResponseMessage`].
///
/// ```
/// use threadline_wire::{accumulate::MessageAccumulator, StreamEvent};
/// let events = [
///     r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}"#,
///     r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\".\"}"}}"#,
///     r#"{"type":"content_block_stop","index":0}"#,
///     r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}}"#,
///     r#"{"type":"message_stop"}"#,
/// ];
/// let mut acc = MessageAccumulator::new();
/// let mut started = Vec::new();
/// for data in events {
///     if let Some(done) = acc.push(&StreamEvent::from_json(data)?)? {
///         // A tool can start here, before the message ends.
///         started.extend(done.as_tool_use().map(|t| t.input.clone()));
///     }
/// }
/// assert_eq!(started, [serde_json::json!({"path": "."})]);
/// let message = acc.finish()?;
/// assert_eq!(message.usage.and_then(|u| u.output_tokens), Some(12));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct MessageAccumulator {
    message: Option<ResponseMessage>,
    blocks: Vec<BlockState>,
    stopped: bool,
    bytes: usize,
    max_bytes: usize,
}

impl Default for MessageAccumulator {
    fn default() -> Self {
        MessageAccumulator::new()
    }
}

impl MessageAccumulator {
    /// An accumulator with the default size bound.
    pub fn new() -> Self {
        MessageAccumulator::with_max_message_bytes(DEFAULT_MAX_MESSAGE_BYTES)
    }

    /// An accumulator that refuses to accumulate more than `max_bytes`, counting everything
    /// the server sends into the message: the JSON of the content `message_start` carries and
    /// of each block a `content_block_start` opens, a block counting at least what it takes
    /// in memory (so a flood of empty blocks is bounded too), and each delta's text, input,
    /// thinking or signature (a citation or an unknown delta by its JSON).
    pub fn with_max_message_bytes(max_bytes: usize) -> Self {
        MessageAccumulator {
            message: None,
            blocks: Vec::new(),
            stopped: false,
            bytes: 0,
            max_bytes,
        }
    }

    /// The message so far.
    pub fn message(&self) -> Option<&ResponseMessage> {
        self.message.as_ref()
    }

    /// Whether `message_stop` has arrived.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Applies one event. Returns the block that the event completed, if it was a
    /// `content_block_stop`. An error leaves the accumulator as it was before the event.
    pub fn push(&mut self, event: &StreamEvent) -> Result<Option<CompletedBlock>, AccumulateError> {
        match event {
            StreamEvent::Ping(_) | StreamEvent::Unknown(_) => Ok(None),
            StreamEvent::Error(event) => Err(AccumulateError::Api {
                error: event.error.clone(),
                request_id: event.request_id.clone(),
            }),
            StreamEvent::MessageStart(start) => {
                if self.message.is_some() {
                    return Err(if self.stopped {
                        AccumulateError::EventAfterMessageStop {
                            event: "message_start".to_owned(),
                        }
                    } else {
                        AccumulateError::MessageStartTwice
                    });
                }
                let bytes = start.message.content.iter().map(block_cost).sum::<usize>();
                if bytes > self.max_bytes {
                    return Err(AccumulateError::MessageTooLarge {
                        limit: self.max_bytes,
                    });
                }
                self.blocks = start
                    .message
                    .content
                    .iter()
                    .map(|_| BlockState::Stopped)
                    .collect();
                self.message = Some((*start.message).clone());
                self.bytes = bytes;
                Ok(None)
            }
            other => {
                let tag = other.tag();
                if self.stopped {
                    return Err(AccumulateError::EventAfterMessageStop {
                        event: tag.to_owned(),
                    });
                }
                let Some(message) = self.message.as_mut() else {
                    return Err(AccumulateError::EventBeforeMessageStart {
                        event: tag.to_owned(),
                    });
                };
                match other {
                    StreamEvent::ContentBlockStart(start) => {
                        let expected = message.content.len();
                        if start.index != expected {
                            return Err(AccumulateError::BlockOutOfOrder {
                                index: start.index,
                                expected,
                            });
                        }
                        let added = block_cost(&start.content_block);
                        if self.bytes.saturating_add(added) > self.max_bytes {
                            return Err(AccumulateError::MessageTooLarge {
                                limit: self.max_bytes,
                            });
                        }
                        message.content.push((*start.content_block).clone());
                        self.blocks.push(BlockState::Open {
                            partial_json: String::new(),
                        });
                        self.bytes += added;
                        Ok(None)
                    }
                    StreamEvent::ContentBlockDelta(delta) => {
                        let index = delta.index;
                        let added = delta_len(&delta.delta);
                        if self.bytes.saturating_add(added) > self.max_bytes {
                            return Err(AccumulateError::MessageTooLarge {
                                limit: self.max_bytes,
                            });
                        }
                        let (block, state) = open_block(message, &mut self.blocks, index, tag)?;
                        apply_delta(block, state, index, &delta.delta)?;
                        self.bytes += added;
                        Ok(None)
                    }
                    StreamEvent::ContentBlockStop(stop) => {
                        let index = stop.index;
                        let (block, state) = open_block(message, &mut self.blocks, index, tag)?;
                        if let BlockState::Open { partial_json } = state
                            && !partial_json.is_empty()
                        {
                            set_parsed_input(block, index, partial_json)?;
                        }
                        *state = BlockState::Stopped;
                        Ok(Some(CompletedBlock {
                            index,
                            block: block.clone(),
                        }))
                    }
                    StreamEvent::MessageDelta(delta) => {
                        apply_message_delta(message, delta);
                        Ok(None)
                    }
                    StreamEvent::MessageStop(_) => {
                        self.stopped = true;
                        Ok(None)
                    }
                    // Handled above.
                    StreamEvent::Ping(_)
                    | StreamEvent::Unknown(_)
                    | StreamEvent::Error(_)
                    | StreamEvent::MessageStart(_) => Ok(None),
                }
            }
        }
    }

    /// Ends the stream: the complete message, or the partial one with what was missing.
    pub fn finish(self) -> Result<ResponseMessage, StreamIncomplete> {
        let Some(message) = self.message else {
            return Err(StreamIncomplete {
                partial: None,
                reason: Truncation::NoMessageStart,
            });
        };
        let unclosed = self
            .blocks
            .into_iter()
            .enumerate()
            .find_map(|(i, s)| match s {
                BlockState::Open { partial_json } => Some((i, partial_json)),
                BlockState::Stopped => None,
            });
        if let Some((index, partial_json)) = unclosed {
            // Show the tool input as far as it arrived, as the SDKs' snapshots do (jiter's
            // partial mode: an unfinished string is left out); the raw text stays in the error.
            let mut message = message;
            if let Some(parsed) = crate::partial_json::parse_partial(&partial_json)
                && let Some(slot) = message.content.get_mut(index).and_then(input_of)
            {
                *slot = parsed;
            }
            let block = message
                .content
                .get(index)
                .map(|b| b.tag().to_owned())
                .unwrap_or_default();
            let tracks_input = matches!(
                message.content.get(index),
                Some(
                    ContentBlock::ToolUse(_)
                        | ContentBlock::ServerToolUse(_)
                        | ContentBlock::McpToolUse(_)
                )
            );
            return Err(StreamIncomplete {
                partial: Some(Box::new(message)),
                reason: Truncation::UnclosedBlock {
                    index,
                    block,
                    partial_json: tracks_input.then_some(partial_json),
                },
            });
        }
        if !self.stopped {
            return Err(StreamIncomplete {
                partial: Some(Box::new(message)),
                reason: Truncation::NoMessageStop,
            });
        }
        Ok(message)
    }
}

fn delta_len(delta: &ContentDelta) -> usize {
    match delta {
        ContentDelta::Text(d) => d.text.len(),
        ContentDelta::InputJson(d) => d.partial_json.len(),
        ContentDelta::Thinking(d) => d.thinking.len(),
        ContentDelta::Signature(d) => d.signature.len(),
        ContentDelta::Compaction(d) => {
            d.content.as_ref().map_or(0, String::len)
                + d.encrypted_content.as_ref().map_or(0, String::len)
        }
        ContentDelta::Citations(_) | ContentDelta::Unknown(_) => serialized_len(delta),
    }
}

/// What a block started by the server counts against the bound: its JSON, and at least the
/// memory it takes.
fn block_cost(block: &ContentBlock) -> usize {
    serialized_len(block)
        .max(std::mem::size_of::<ContentBlock>() + std::mem::size_of::<BlockState>())
}

fn open_block<'m>(
    message: &'m mut ResponseMessage,
    blocks: &'m mut [BlockState],
    index: usize,
    event: &str,
) -> Result<(&'m mut ContentBlock, &'m mut BlockState), AccumulateError> {
    let (Some(block), Some(state)) = (message.content.get_mut(index), blocks.get_mut(index)) else {
        return Err(AccumulateError::UnknownBlock {
            event: event.to_owned(),
            index,
        });
    };
    if matches!(state, BlockState::Stopped) {
        return Err(AccumulateError::BlockAlreadyStopped {
            event: event.to_owned(),
            index,
        });
    }
    Ok((block, state))
}

/// The input slot of a block that streams its input (`tool_use`, `server_tool_use`,
/// `mcp_tool_use`).
fn input_of(block: &mut ContentBlock) -> Option<&mut Value> {
    match block {
        ContentBlock::ToolUse(b) => Some(&mut b.input),
        ContentBlock::ServerToolUse(b) | ContentBlock::McpToolUse(b) => Some(
            b.input
                .get_or_insert_with(|| Value::Object(Default::default())),
        ),
        _ => None,
    }
}

fn apply_delta(
    block: &mut ContentBlock,
    state: &mut BlockState,
    index: usize,
    delta: &ContentDelta,
) -> Result<(), AccumulateError> {
    let mismatch = |block: &ContentBlock, delta: &ContentDelta| AccumulateError::DeltaMismatch {
        index,
        delta: delta.tag().to_owned(),
        block: block.tag().to_owned(),
    };
    match (block, delta) {
        (ContentBlock::Text(text), ContentDelta::Text(d)) => text.text.push_str(&d.text),
        (ContentBlock::Text(text), ContentDelta::Citations(d)) => {
            text.citations
                .get_or_insert_with(Vec::new)
                .push((*d.citation).clone());
        }
        (ContentBlock::Thinking(thinking), ContentDelta::Thinking(d)) => {
            thinking.thinking.push_str(&d.thinking);
        }
        (ContentBlock::Thinking(thinking), ContentDelta::Signature(d)) => {
            thinking.signature = Some(d.signature.clone());
        }
        (ContentBlock::Compaction(compaction), ContentDelta::Compaction(d)) => {
            if d.content.is_some() {
                compaction.content = d.content.clone();
            }
            if d.encrypted_content.is_some() {
                compaction.encrypted_content = d.encrypted_content.clone();
            }
        }
        (block, ContentDelta::InputJson(d)) => {
            if input_of(block).is_none() {
                return Err(mismatch(block, delta));
            }
            if let BlockState::Open { partial_json } = state {
                partial_json.push_str(&d.partial_json);
            }
        }
        // A delta type this version does not know changes nothing it could misread.
        (_, ContentDelta::Unknown(_)) => {}
        (block, _) => return Err(mismatch(block, delta)),
    }
    Ok(())
}

fn set_parsed_input(
    block: &mut ContentBlock,
    index: usize,
    json: &str,
) -> Result<(), AccumulateError> {
    let id = match &*block {
        ContentBlock::ToolUse(b) => b.id.clone(),
        ContentBlock::ServerToolUse(b) | ContentBlock::McpToolUse(b) => b.id.clone(),
        _ => String::new(),
    };
    let parsed: Value =
        serde_json::from_str(json).map_err(|e| AccumulateError::InvalidToolInput {
            index,
            tool_use_id: id,
            message: e.to_string(),
        })?;
    if let Some(slot) = input_of(block) {
        *slot = parsed;
    }
    Ok(())
}

fn apply_message_delta(message: &mut ResponseMessage, delta: &MessageDelta) {
    let body = &delta.delta;
    message.stop_reason = body.stop_reason.clone();
    message.stop_sequence = body.stop_sequence.clone();
    if body.stop_details.is_some() || body.extra.contains_key("stop_details") {
        message.stop_details = body.stop_details.clone();
    }
    if body.container.is_some() || body.extra.contains_key("container") {
        message.container = body.container.clone();
    }
    if delta.context_management.is_some() {
        message.context_management = delta.context_management.clone();
    }
    if let Some(update) = &delta.usage {
        let usage = message.usage.get_or_insert_with(Default::default);
        usage.output_tokens = update.output_tokens;
        if update.input_tokens.is_some() {
            usage.input_tokens = update.input_tokens;
        }
        if update.cache_creation_input_tokens.is_some() {
            usage.cache_creation_input_tokens = update.cache_creation_input_tokens;
        }
        if update.cache_read_input_tokens.is_some() {
            usage.cache_read_input_tokens = update.cache_read_input_tokens;
        }
        if update.cache_creation.is_some() {
            usage.cache_creation = update.cache_creation.clone();
        }
        if update.server_tool_use.is_some() {
            usage.server_tool_use = update.server_tool_use.clone();
        }
        if update.iterations.is_some() {
            usage.iterations = update.iterations.clone();
        }
        if update.output_tokens_details.is_some() {
            usage.output_tokens_details = update.output_tokens_details.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_all(
        acc: &mut MessageAccumulator,
        events: &[&str],
    ) -> Vec<Result<Option<CompletedBlock>, AccumulateError>> {
        events
            .iter()
            .map(|e| acc.push(&StreamEvent::from_json(e).expect("test events parse")))
            .collect()
    }

    const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_read_input_tokens":7,"output_tokens":1}}}"#;

    #[test]
    fn usage_overwrites_never_adds() {
        let mut acc = MessageAccumulator::new();
        push_all(
            &mut acc,
            &[
                START,
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":10}}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12,"input_tokens":6}}"#,
                r#"{"type":"message_stop"}"#,
            ],
        );
        let usage = acc.finish().expect("complete").usage.expect("usage");
        assert_eq!(usage.output_tokens, Some(12));
        assert_eq!(usage.input_tokens, Some(6));
        assert_eq!(usage.cache_read_input_tokens, Some(7));
    }

    #[test]
    fn signature_replaces_and_thinking_appends() {
        let mut acc = MessageAccumulator::new();
        let results = push_all(
            &mut acc,
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"b"}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s1"}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s2"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"message_stop"}"#,
            ],
        );
        assert!(results.iter().all(Result::is_ok));
        let message = acc.finish().expect("complete");
        let ContentBlock::Thinking(t) = &message.content[0] else {
            panic!("thinking expected")
        };
        assert_eq!(
            (t.thinking.as_str(), t.signature.as_deref()),
            ("ab", Some("s2"))
        );
    }

    #[test]
    fn empty_input_buffer_keeps_the_initial_object() {
        let mut acc = MessageAccumulator::new();
        let results = push_all(
            &mut acc,
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
            ],
        );
        let done = results[3]
            .clone()
            .expect("stop applies")
            .expect("a completed block");
        assert_eq!(
            done.as_tool_use().map(|t| &t.input),
            Some(&serde_json::json!({}))
        );
    }

    #[test]
    fn order_errors_are_typed() {
        let mut acc = MessageAccumulator::new();
        let r = push_all(
            &mut acc,
            &[
                r#"{"type":"content_block_stop","index":0}"#,
                START,
                START,
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ],
        );
        assert!(matches!(
            r[0],
            Err(AccumulateError::EventBeforeMessageStart { .. })
        ));
        assert!(matches!(r[2], Err(AccumulateError::MessageStartTwice)));
        assert!(matches!(
            r[3],
            Err(AccumulateError::BlockOutOfOrder {
                index: 1,
                expected: 0
            })
        ));
        assert!(matches!(
            r[4],
            Err(AccumulateError::UnknownBlock { index: 0, .. })
        ));
        assert!(matches!(r[6], Err(AccumulateError::DeltaMismatch { .. })));
        assert!(matches!(r[7], Ok(Some(_))));
        assert!(matches!(
            r[8],
            Err(AccumulateError::BlockAlreadyStopped { .. })
        ));
        assert!(
            matches!(&r[9], Err(AccumulateError::Api { error, .. }) if error.message == "Overloaded")
        );
    }

    #[test]
    fn cut_streams_keep_the_partial_message() {
        let mut acc = MessageAccumulator::new();
        push_all(
            &mut acc,
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            ],
        );
        let err = acc.finish().expect_err("truncated");
        assert_eq!(
            err.reason,
            Truncation::UnclosedBlock {
                index: 0,
                block: "tool_use".into(),
                partial_json: Some("{\"pa".into()),
            }
        );
        assert_eq!(err.partial.map(|m| m.content.len()), Some(1));
        assert_eq!(
            MessageAccumulator::new()
                .finish()
                .expect_err("empty")
                .reason,
            Truncation::NoMessageStart
        );
    }

    #[test]
    fn invalid_tool_json_names_the_tool() {
        let mut acc = MessageAccumulator::new();
        let r = push_all(
            &mut acc,
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"ls","input":{}}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{oops"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
            ],
        );
        assert!(
            matches!(&r[3], Err(AccumulateError::InvalidToolInput { tool_use_id, .. }) if tool_use_id == "toolu_9")
        );
    }

    #[test]
    fn size_bound_is_enforced() {
        let empty = block_cost(&ContentBlock::text(""));
        let mut acc = MessageAccumulator::with_max_message_bytes(empty + 4);
        let r = push_all(
            &mut acc,
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"abc"}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"de"}}"#,
            ],
        );
        assert!(r[2].is_ok());
        assert!(matches!(
            r[3],
            Err(AccumulateError::MessageTooLarge { limit }) if limit == empty + 4
        ));
    }

    #[test]
    fn what_a_block_brings_counts_against_the_bound() {
        let big = "x".repeat(2048);
        let started = format!(
            r#"{{"type":"content_block_start","index":0,"content_block":{{"type":"text","text":"{big}"}}}}"#
        );
        let r = push_all(
            &mut MessageAccumulator::with_max_message_bytes(1024),
            &[START, &started],
        );
        assert!(matches!(
            r[1],
            Err(AccumulateError::MessageTooLarge { limit: 1024 })
        ));

        let in_start = START.replace(
            r#""content":[]"#,
            &format!(r#""content":[{{"type":"text","text":"{big}"}}]"#),
        );
        assert_ne!(in_start, START, "the start carries content");
        let r = push_all(
            &mut MessageAccumulator::with_max_message_bytes(1024),
            &[&in_start],
        );
        assert!(matches!(
            r[0],
            Err(AccumulateError::MessageTooLarge { limit: 1024 })
        ));

        let cited = format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"citations_delta","citation":{{"type":"char_location","cited_text":"{big}","document_index":0,"start_char_index":0,"end_char_index":1}}}}}}"#
        );
        let empty = block_cost(&ContentBlock::text(""));
        let r = push_all(
            &mut MessageAccumulator::with_max_message_bytes(empty + 1024),
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                &cited,
            ],
        );
        assert!(r[1].is_ok());
        assert!(
            matches!(r[2], Err(AccumulateError::MessageTooLarge { .. })),
            "{:?}",
            r[2]
        );
    }

    #[test]
    fn a_flood_of_empty_blocks_is_bounded() {
        let limit = 64 * 1024;
        let mut acc = MessageAccumulator::with_max_message_bytes(limit);
        push_all(&mut acc, &[START]);
        let mut opened = 0;
        loop {
            let event = format!(
                r#"{{"type":"content_block_start","index":{opened},"content_block":{{"type":"text","text":""}}}}"#
            );
            match push_all(&mut acc, &[&event]).remove(0) {
                Ok(_) => opened += 1,
                Err(AccumulateError::MessageTooLarge { .. }) => break,
                Err(other) => panic!("{other}"),
            }
            assert!(opened <= limit, "never refused");
        }
        assert!(
            opened * block_cost(&ContentBlock::text("")) <= limit,
            "{opened} blocks"
        );
    }
}
