//! Merging: the API joins consecutive messages of the same role into one turn before it checks
//! them. A [`Turn`] is such a run of original messages; [`TurnBlocks`] walks its blocks with
//! both their original and their merged positions, without copying anything.

use super::report::Loc;
use crate::content::{Content, ContentBlock, Role};
use crate::request::MessageParam;

/// Consecutive original messages of one role.
#[derive(Debug, Clone, Copy)]
pub(super) struct Turn<'a> {
    /// The role of every message in the run.
    pub(super) role: &'a Role,
    /// The first original message index.
    pub(super) start: usize,
    /// One past the last original message index.
    pub(super) end: usize,
}

/// The turns of `messages`, in order.
pub(super) fn turns(messages: &[MessageParam]) -> Vec<Turn<'_>> {
    let mut turns: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
    for (n, message) in messages.iter().enumerate() {
        match turns.last_mut() {
            Some(turn) if *turn.role == message.role => turn.end = n + 1,
            _ => turns.push(Turn {
                role: &message.role,
                start: n,
                end: n + 1,
            }),
        }
    }
    turns
}

impl Turn<'_> {
    /// The message-level place of this turn (its first original message).
    pub(super) fn loc(&self, turn: usize) -> Loc {
        Loc::Message {
            msg: self.start,
            turn,
        }
    }

    /// Whether every message of the turn is `""` or `[]`.
    pub(super) fn is_empty(&self, messages: &[MessageParam]) -> bool {
        messages[self.start..self.end]
            .iter()
            .all(|m| m.content.is_empty())
    }
}

/// One piece of a turn's content: a block, or a string content (one text block to the API).
#[derive(Debug, Clone, Copy)]
pub(super) enum Piece<'a> {
    /// String content.
    Str(&'a str),
    /// A block.
    Block(&'a ContentBlock),
}

impl<'a> Piece<'a> {
    /// The block's `type`.
    pub(super) fn tag(&self) -> &'a str {
        match self {
            Piece::Str(_) => "text",
            Piece::Block(block) => block.tag(),
        }
    }

    /// Whether this is a thinking or redacted-thinking block.
    pub(super) fn is_thinking(&self) -> bool {
        matches!(self, Piece::Block(block) if block.is_thinking())
    }

    /// Whether this is a client `tool_result` block.
    pub(super) fn is_tool_result(&self) -> bool {
        matches!(self, Piece::Block(ContentBlock::ToolResult(_)))
    }

    /// The text, for string content and text blocks.
    pub(super) fn text(&self) -> Option<&'a str> {
        match self {
            Piece::Str(text) => Some(text),
            Piece::Block(ContentBlock::Text(block)) => Some(&block.text),
            Piece::Block(_) => None,
        }
    }
}

/// A piece with its place.
#[derive(Debug, Clone, Copy)]
pub(super) struct TurnBlock<'a> {
    /// The piece.
    pub(super) piece: Piece<'a>,
    /// Where it is.
    pub(super) loc: Loc,
}

/// The pieces of one turn, in merged order.
pub(super) struct TurnBlocks<'a> {
    messages: &'a [MessageParam],
    turn: usize,
    msg: usize,
    end: usize,
    block: usize,
    merged: usize,
}

impl<'a> TurnBlocks<'a> {
    /// The pieces of `turn` (the `index`-th turn) of `messages`.
    pub(super) fn new(messages: &'a [MessageParam], turn: &Turn<'_>, index: usize) -> Self {
        TurnBlocks {
            messages,
            turn: index,
            msg: turn.start,
            end: turn.end,
            block: 0,
            merged: 0,
        }
    }

    fn emit(&mut self, piece: Piece<'a>, block: Option<usize>) -> TurnBlock<'a> {
        let loc = Loc::Block {
            msg: self.msg,
            block,
            nested: None,
            turn: self.turn,
            merged: self.merged,
        };
        self.merged += 1;
        TurnBlock { piece, loc }
    }
}

impl<'a> Iterator for TurnBlocks<'a> {
    type Item = TurnBlock<'a>;

    fn next(&mut self) -> Option<TurnBlock<'a>> {
        while self.msg < self.end {
            let content = &self.messages[self.msg].content;
            match content {
                Content::Text(text) if self.block == 0 => {
                    self.block = 1;
                    return Some(self.emit(Piece::Str(text), None));
                }
                Content::Blocks(blocks) if self.block < blocks.len() => {
                    let block = self.block;
                    self.block += 1;
                    return Some(self.emit(Piece::Block(&blocks[block]), Some(block)));
                }
                _ => {
                    self.msg += 1;
                    self.block = 0;
                }
            }
        }
        None
    }
}
