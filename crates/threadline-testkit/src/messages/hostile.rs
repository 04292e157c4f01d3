//! Mutations that turn a valid session into a hostile one: what crashes, resumes, streaming
//! fallbacks, UI bugs and hand-edited transcripts leave in a real message array.
//!
//! Each mutation picks its target with a [`prop::sample::Index`] among the places it applies
//! to, and does nothing when there is none, so any list of mutations applies to any session
//! and shrinks well. Inserted messages get fresh deterministic headers; duplicated ones keep
//! theirs (a resumed session replays the same ids).

use proptest::prelude::*;
use proptest::sample::Index;
use threadline_message::{Attachment, Message, SystemKind};
use threadline_wire::{Content, ContentBlock};

use super::plan::{attachment, prompt_text};
use super::{SessionBuilder, image, server_tool_use, text};

/// Blank text, as a UI or a cut stream leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blank {
    /// `""`.
    Empty,
    /// Spaces.
    Spaces,
    /// Newlines and tabs.
    Newlines,
}

impl Blank {
    fn text(self) -> &'static str {
        match self {
            Blank::Empty => "",
            Blank::Spaces => "   ",
            Blank::Newlines => "\n\t\n",
        }
    }
}

/// One damage done to a session.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// A `tool_result` block is lost (its message too when nothing else is left).
    DropToolResult(Index),
    /// A `tool_use` block is lost (its result is orphaned).
    DropToolUse(Index),
    /// A slice of up to `len` messages re-appears with the same ids, right after itself or at
    /// the end (a resumed session).
    Duplicate {
        /// Where the slice starts.
        start: Index,
        /// Its length (at least 1).
        len: usize,
        /// Re-append at the end instead of right after the slice.
        at_end: bool,
    },
    /// A slice of up to `len` messages re-appears at the end under fresh message ids (a
    /// session resumed by a tool that re-records the history): the tool use ids repeat.
    Rerecord {
        /// Where the slice starts.
        start: Index,
        /// Its length (at least 1).
        len: usize,
    },
    /// A tool use id (and its results' ids) gets characters the API rejects (`call|x.1`,
    /// as other providers write them).
    InvalidToolId(Index),
    /// A thinking block loses its signature.
    UnsignedThinking(Index),
    /// A block lands in the wrong role: a tool result in an assistant message, or a tool use
    /// or thinking block in a user message.
    MisplacedBlock {
        /// Which message.
        at: Index,
        /// Which kind of block.
        kind: Index,
    },
    /// Two neighbouring messages swap places (interleaves fragments and results).
    SwapAdjacent(Index),
    /// An assistant message is split into one fragment per block sharing its API message id,
    /// and the last fragment moves past the next message.
    Fragment(Index),
    /// The session ends right after an assistant message holding a tool use (cut-off stream).
    CutAfterToolUse(Index),
    /// The session ends anywhere.
    Truncate(Index),
    /// A blank text block is inserted into a user or assistant message.
    BlankText {
        /// Which message.
        at: Index,
        /// Where in it.
        position: Index,
        /// What blank.
        blank: Blank,
    },
    /// A user or assistant message holding only blank text (or nothing) is inserted.
    BlankMessage {
        /// Where.
        at: Index,
        /// An assistant message rather than a user one.
        assistant: bool,
        /// What blank (`Empty` inserts a message with no blocks at all).
        blank: Blank,
    },
    /// An assistant message holding only thinking (its own API message id) is inserted.
    OrphanThinking(Index),
    /// An attachment is inserted anywhere.
    Attachment {
        /// Where.
        at: Index,
        /// What.
        attachment: Attachment,
    },
    /// A tombstone retracting an existing message is inserted anywhere.
    Tombstone {
        /// Where.
        at: Index,
        /// The retracted message.
        target: Index,
    },
    /// User text is put before the tool results of a user message.
    ResultNotFirst {
        /// Which message.
        at: Index,
        /// The text.
        text: String,
    },
    /// A server tool use loses its result, or an assistant message gets a server tool use
    /// without one.
    DanglingServerToolUse(Index),
    /// A tool result becomes an error carrying images.
    ImagesInErrorResult(Index),
    /// A user message with `count` images is inserted.
    ManyImages {
        /// Where.
        at: Index,
        /// How many images.
        count: usize,
    },
    /// A tool result's content becomes blank (`""`, `[]`, a blank text block, or absent).
    BlankResult {
        /// Which result.
        at: Index,
        /// What blank.
        blank: Blank,
    },
    /// An assistant text block gets trailing whitespace.
    TrailingWhitespace(Index),
    /// A tool result block is repeated in its message.
    DuplicateResultBlock(Index),
    /// A system message (any subtype, `local_command` included) is inserted anywhere.
    System {
        /// Where.
        at: Index,
        /// What.
        kind: SystemKind,
    },
    /// User text typed while the model was working, inserted anywhere.
    UserTextAnywhere {
        /// Where.
        at: Index,
        /// The text.
        text: String,
    },
}

fn blank() -> impl Strategy<Value = Blank> {
    prop_oneof![
        Just(Blank::Empty),
        Just(Blank::Spaces),
        Just(Blank::Newlines)
    ]
}

/// One mutation, every kind.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let i = any::<Index>;
    prop_oneof![
        3 => i().prop_map(Mutation::DropToolResult),
        3 => i().prop_map(Mutation::DropToolUse),
        2 => (i(), 1usize..8, any::<bool>()).prop_map(|(start, len, at_end)| Mutation::Duplicate { start, len, at_end }),
        3 => i().prop_map(Mutation::SwapAdjacent),
        1 => (i(), 1usize..8).prop_map(|(start, len)| Mutation::Rerecord { start, len }),
        1 => i().prop_map(Mutation::InvalidToolId),
        1 => i().prop_map(Mutation::UnsignedThinking),
        1 => (i(), i()).prop_map(|(at, kind)| Mutation::MisplacedBlock { at, kind }),
        2 => i().prop_map(Mutation::Fragment),
        1 => i().prop_map(Mutation::CutAfterToolUse),
        1 => i().prop_map(Mutation::Truncate),
        2 => (i(), i(), blank()).prop_map(|(at, position, blank)| Mutation::BlankText { at, position, blank }),
        1 => (i(), any::<bool>(), blank()).prop_map(|(at, assistant, blank)| Mutation::BlankMessage { at, assistant, blank }),
        2 => i().prop_map(Mutation::OrphanThinking),
        2 => (i(), attachment()).prop_map(|(at, attachment)| Mutation::Attachment { at, attachment }),
        1 => (i(), i()).prop_map(|(at, target)| Mutation::Tombstone { at, target }),
        2 => (i(), prompt_text()).prop_map(|(at, text)| Mutation::ResultNotFirst { at, text }),
        1 => i().prop_map(Mutation::DanglingServerToolUse),
        1 => i().prop_map(Mutation::ImagesInErrorResult),
        1 => (i(), 1usize..=130).prop_map(|(at, count)| Mutation::ManyImages { at, count }),
        1 => (i(), blank()).prop_map(|(at, blank)| Mutation::BlankResult { at, blank }),
        1 => i().prop_map(Mutation::TrailingWhitespace),
        1 => i().prop_map(Mutation::DuplicateResultBlock),
        1 => (i(), prop_oneof![
            "[a-z ]{1,20}".prop_map(|content| SystemKind::LocalCommand { content }),
            Just(SystemKind::TurnDuration { duration_ms: 1 }),
        ]).prop_map(|(at, kind)| Mutation::System { at, kind }),
        1 => (i(), prompt_text()).prop_map(|(at, text)| Mutation::UserTextAnywhere { at, text }),
    ]
}

/// Applies `mutations` in order to the builder's messages.
pub fn apply_mutations(b: &mut SessionBuilder, mutations: &[Mutation]) {
    for mutation in mutations {
        apply(b, mutation);
    }
}

/// The `index`-th of the places `f` finds (message index, block index), if any.
fn pick_block(
    messages: &[Message],
    index: &Index,
    f: impl Fn(&Message, &ContentBlock) -> bool,
) -> Option<(usize, usize)> {
    let places: Vec<(usize, usize)> = messages
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            blocks(m)
                .iter()
                .enumerate()
                .filter(|(_, block)| f(m, block))
                .map(move |(j, _)| (i, j))
                .collect::<Vec<_>>()
        })
        .collect();
    (!places.is_empty()).then(|| places[index.index(places.len())])
}

/// The `index`-th message `f` accepts.
fn pick_message(
    messages: &[Message],
    index: &Index,
    f: impl Fn(&Message) -> bool,
) -> Option<usize> {
    let places: Vec<usize> = (0..messages.len()).filter(|&i| f(&messages[i])).collect();
    (!places.is_empty()).then(|| places[index.index(places.len())])
}

/// A position to insert at (`0..=len`).
fn position(messages: &[Message], index: &Index) -> usize {
    index.index(messages.len() + 1)
}

fn blocks(message: &Message) -> &[ContentBlock] {
    match message {
        Message::User(u) => &u.content,
        Message::Assistant(a) => &a.content,
        _ => &[],
    }
}

fn blocks_mut(message: &mut Message) -> Option<&mut Vec<ContentBlock>> {
    match message {
        Message::User(u) => Some(&mut u.content),
        Message::Assistant(a) => Some(&mut a.content),
        _ => None,
    }
}

fn is_tool_result(_: &Message, block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::ToolResult(_))
}

fn insert(b: &mut SessionBuilder, at: usize, message: Message) {
    let header = b.header();
    b.messages_mut().insert(at, message.with_header(header));
}

/// Removes block `j` of message `i`, and the message when it is left empty.
fn remove_block(messages: &mut Vec<Message>, i: usize, j: usize) {
    if let Some(content) = blocks_mut(&mut messages[i]) {
        content.remove(j);
        if content.is_empty() {
            messages.remove(i);
        }
    }
}

fn apply(b: &mut SessionBuilder, mutation: &Mutation) {
    match mutation {
        Mutation::DropToolResult(index) => {
            if let Some((i, j)) = pick_block(b.messages(), index, is_tool_result) {
                remove_block(b.messages_mut(), i, j);
            }
        }
        Mutation::DropToolUse(index) => {
            if let Some((i, j)) = pick_block(b.messages(), index, |_, block| {
                matches!(block, ContentBlock::ToolUse(_))
            }) {
                remove_block(b.messages_mut(), i, j);
            }
        }
        Mutation::Duplicate { start, len, at_end } => {
            let messages = b.messages_mut();
            if messages.is_empty() {
                return;
            }
            let start = start.index(messages.len());
            let end = (start + (*len).max(1)).min(messages.len());
            let slice: Vec<Message> = messages[start..end].to_vec();
            let at = if *at_end { messages.len() } else { end };
            messages.splice(at..at, slice);
        }
        Mutation::Rerecord { start, len } => {
            if b.messages().is_empty() {
                return;
            }
            let start = start.index(b.messages().len());
            let end = (start + (*len).max(1)).min(b.messages().len());
            let slice: Vec<Message> = b.messages()[start..end].to_vec();
            for message in slice {
                b.push(message);
            }
        }
        Mutation::InvalidToolId(index) => {
            let Some((i, j)) = pick_block(b.messages(), index, |_, block| {
                matches!(block, ContentBlock::ToolUse(_))
            }) else {
                return;
            };
            let Some(ContentBlock::ToolUse(tool_use)) = blocks(&b.messages()[i]).get(j) else {
                return;
            };
            let from = tool_use.id.clone();
            let to = format!("call|{}.1", from.trim_start_matches("toolu_"));
            for message in b.messages_mut() {
                for block in blocks_mut(message).into_iter().flatten() {
                    match block {
                        ContentBlock::ToolUse(u) if u.id == from => u.id.clone_from(&to),
                        ContentBlock::ToolResult(r) if r.tool_use_id == from => {
                            r.tool_use_id.clone_from(&to);
                        }
                        _ => {}
                    }
                }
            }
        }
        Mutation::UnsignedThinking(index) => {
            if let Some((i, j)) = pick_block(b.messages(), index, |_, block| {
                matches!(block, ContentBlock::Thinking(_))
            }) && let Some(content) = blocks_mut(&mut b.messages_mut()[i])
                && let ContentBlock::Thinking(thinking) = &mut content[j]
            {
                thinking.signature = None;
            }
        }
        Mutation::MisplacedBlock { at, kind } => {
            let Some(i) = pick_message(b.messages(), at, |m| {
                matches!(m, Message::User(_) | Message::Assistant(_))
            }) else {
                return;
            };
            let id = b.tool_use_id();
            let is_user = matches!(b.messages()[i], Message::User(_));
            let block = match (is_user, kind.index(2)) {
                (false, _) => threadline_message::tool_result_block(&id, "stray".into(), false),
                (true, 0) => super::tool_use(&id, "Read", serde_json::json!({})),
                (true, _) => b.thinking("stray thinking"),
            };
            if let Some(content) = blocks_mut(&mut b.messages_mut()[i]) {
                content.push(block);
            }
        }
        Mutation::SwapAdjacent(index) => {
            let messages = b.messages_mut();
            if messages.len() >= 2 {
                let i = index.index(messages.len() - 1);
                messages.swap(i, i + 1);
            }
        }
        Mutation::Fragment(index) => {
            let Some(i) = pick_message(
                b.messages(),
                index,
                |m| matches!(m, Message::Assistant(a) if a.content.len() >= 2),
            ) else {
                return;
            };
            let fresh = b.response_id();
            let Message::Assistant(original) = b.messages_mut().remove(i) else {
                return;
            };
            let api = original.api_message_id.clone().unwrap_or(fresh);
            let mut fragments: Vec<Message> = Vec::new();
            for block in &original.content {
                let mut fragment = original.clone();
                fragment.api_message_id = Some(api.clone());
                fragment.content = vec![block.clone()];
                fragment.header = b.header();
                fragments.push(Message::Assistant(fragment));
            }
            let messages = b.messages_mut();
            let count = fragments.len();
            messages.splice(i..i, fragments);
            // The last fragment moves past the message that followed the original.
            let last = i + count - 1;
            if last + 1 < messages.len() {
                messages.swap(last, last + 1);
            }
        }
        Mutation::CutAfterToolUse(index) => {
            if let Some((i, j)) = pick_block(b.messages(), index, |_, block| {
                matches!(block, ContentBlock::ToolUse(_))
            }) {
                let messages = b.messages_mut();
                messages.truncate(i + 1);
                if let Some(content) = blocks_mut(&mut messages[i]) {
                    content.truncate(j + 1);
                }
            }
        }
        Mutation::Truncate(index) => {
            let messages = b.messages_mut();
            let at = index.index(messages.len() + 1);
            messages.truncate(at.max(1));
        }
        Mutation::BlankText {
            at,
            position,
            blank,
        } => {
            if let Some(i) = pick_message(b.messages(), at, |m| {
                matches!(m, Message::User(_) | Message::Assistant(_))
            }) && let Some(content) = blocks_mut(&mut b.messages_mut()[i])
            {
                let j = position.index(content.len() + 1);
                content.insert(j, text(blank.text()));
            }
        }
        Mutation::BlankMessage {
            at,
            assistant,
            blank,
        } => {
            let content = match blank {
                Blank::Empty => Vec::new(),
                other => vec![text(other.text())],
            };
            let message = if *assistant {
                let api = b.response_id();
                Message::assistant_fragment(api, super::MODEL, content)
            } else {
                Message::user_blocks(content)
            };
            let at = position(b.messages(), at);
            insert(b, at, message);
        }
        Mutation::OrphanThinking(index) => {
            let api = b.response_id();
            let block = b.thinking("let me think about this");
            let at = position(b.messages(), index);
            insert(
                b,
                at,
                Message::assistant_fragment(api, super::MODEL, vec![block]),
            );
        }
        Mutation::Attachment { at, attachment } => {
            let at = position(b.messages(), at);
            insert(b, at, Message::attachment(attachment.clone()));
        }
        Mutation::Tombstone { at, target } => {
            if b.messages().is_empty() {
                return;
            }
            let target = b.messages()[target.index(b.messages().len())].id().clone();
            let at = position(b.messages(), at);
            insert(b, at, Message::tombstone(target));
        }
        Mutation::ResultNotFirst { at, text: typed } => {
            if let Some(i) = pick_message(b.messages(), at, |m| {
                matches!(m, Message::User(u)
                    if matches!(u.content.first(), Some(ContentBlock::ToolResult(_))))
            }) && let Some(content) = blocks_mut(&mut b.messages_mut()[i])
            {
                content.insert(0, text(typed.clone()));
            }
        }
        Mutation::DanglingServerToolUse(index) => {
            let Some(i) = pick_message(b.messages(), index, |m| matches!(m, Message::Assistant(_)))
            else {
                return;
            };
            let id = b.server_tool_use_id();
            if let Some(content) = blocks_mut(&mut b.messages_mut()[i]) {
                if let Some(j) = content
                    .iter()
                    .position(|block| block.server_tool_result().is_some())
                {
                    content.remove(j);
                } else {
                    content.push(server_tool_use(&id, "rust proptest"));
                }
            }
        }
        Mutation::ImagesInErrorResult(index) => {
            if let Some((i, j)) = pick_block(b.messages(), index, is_tool_result)
                && let Some(content) = blocks_mut(&mut b.messages_mut()[i])
                && let ContentBlock::ToolResult(result) = &mut content[j]
            {
                result.is_error = Some(true);
                result.content = Some(Content::Blocks(vec![
                    text("Error: screenshot failed"),
                    image(),
                    image(),
                ]));
            }
        }
        Mutation::ManyImages { at, count } => {
            let mut content = vec![text("Compare these screenshots")];
            content.extend((0..*count).map(|_| image()));
            let at = position(b.messages(), at);
            insert(b, at, Message::user_blocks(content));
        }
        Mutation::BlankResult { at, blank } => {
            if let Some((i, j)) = pick_block(b.messages(), at, is_tool_result)
                && let Some(content) = blocks_mut(&mut b.messages_mut()[i])
                && let ContentBlock::ToolResult(result) = &mut content[j]
            {
                result.content = match blank {
                    Blank::Empty => Some(Content::Text(String::new())),
                    Blank::Spaces => Some(Content::Blocks(vec![text(blank.text())])),
                    Blank::Newlines => None,
                };
            }
        }
        Mutation::TrailingWhitespace(index) => {
            if let Some((i, j)) = pick_block(b.messages(), index, |m, block| {
                matches!(m, Message::Assistant(_)) && matches!(block, ContentBlock::Text(_))
            }) && let Some(content) = blocks_mut(&mut b.messages_mut()[i])
                && let ContentBlock::Text(t) = &mut content[j]
            {
                t.text.push_str(" \n ");
            }
        }
        Mutation::DuplicateResultBlock(index) => {
            if let Some((i, j)) = pick_block(b.messages(), index, is_tool_result)
                && let Some(content) = blocks_mut(&mut b.messages_mut()[i])
            {
                let copy = content[j].clone();
                content.insert(j + 1, copy);
            }
        }
        Mutation::System { at, kind } => {
            let at = position(b.messages(), at);
            insert(b, at, Message::system(kind.clone()));
        }
        Mutation::UserTextAnywhere { at, text: typed } => {
            let at = position(b.messages(), at);
            insert(b, at, Message::user_text(typed.clone()));
        }
    }
}
