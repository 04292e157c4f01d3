//! Merging: the API joins consecutive messages of the same role into one turn before it checks
//! them. A [`Turn`] is such a run of original messages; [`TurnBlocks`] walks its blocks with
//! both their original and their merged positions, without copying anything.

use super::message_list::MessageList;
use super::report::Loc;
use threadline_wire::content::{Content, ContentBlock, Role};

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

/// The turns of `messages`, in order, found as the walk goes (nothing is collected: a
/// 100k-message request would otherwise allocate and fill a table as large as a cache level
/// on every validation).
#[derive(Debug, Clone)]
pub(super) struct Turns<'a> {
    messages: MessageList<'a>,
    next: usize,
}

impl<'a> Turns<'a> {
    /// The turns of `messages`.
    pub(super) fn new(messages: MessageList<'a>) -> Self {
        Turns { messages, next: 0 }
    }
}

impl<'a> Iterator for Turns<'a> {
    type Item = Turn<'a>;

    fn next(&mut self) -> Option<Turn<'a>> {
        let start = self.next;
        let role = &self.messages.get(start)?.role;
        let run = self
            .messages
            .range(start + 1..self.messages.len())
            .take_while(|m| m.role == *role)
            .count();
        self.next = start + 1 + run;
        Some(Turn {
            role,
            start,
            end: self.next,
        })
    }
}

/// What the end-of-conversation rules need to know about the turns, gathered in the one
/// forward pass: the last turn, and the first assistant turn of the tool-use chain
/// (`assistant → user(tool_result …) → assistant …`) the conversation ends in.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Tail<'a> {
    /// The last turn seen, with its index.
    last: Option<(usize, Turn<'a>)>,
    /// The last assistant turn seen (its index) and the first assistant turn of its chain.
    assistant_chain: Option<(usize, (usize, Turn<'a>))>,
    /// The last turn seen is a user turn continuing a chain: the turn before it is an
    /// assistant turn and its first piece is a `tool_result`.
    last_continues: bool,
}

impl<'a> Tail<'a> {
    /// Takes note of turn `t`, whose first piece is a `tool_result` when
    /// `first_is_tool_result`.
    pub(super) fn observe(&mut self, t: usize, turn: Turn<'a>, first_is_tool_result: bool) {
        let previous_is_assistant = self
            .last
            .is_some_and(|(_, previous)| *previous.role == Role::Assistant);
        match turn.role {
            Role::Assistant => {
                let start = match self.assistant_chain {
                    Some((a, start)) if self.last_continues && a + 2 == t => start,
                    _ => (t, turn),
                };
                self.assistant_chain = Some((t, start));
                self.last_continues = false;
            }
            Role::User => {
                self.last_continues = previous_is_assistant && first_is_tool_result;
            }
            _ => self.last_continues = false,
        }
        self.last = Some((t, turn));
    }

    /// The last turn, with its index.
    pub(super) fn last(&self) -> Option<(usize, Turn<'a>)> {
        self.last
    }

    /// The first assistant turn of the chain the conversation ends in, when it ends inside
    /// one: with an assistant turn, or with a user turn continuing the chain. `None` when it
    /// ends with a fresh user turn (or no turn at all).
    pub(super) fn final_chain_start(&self) -> Option<(usize, Turn<'a>)> {
        let (l, last) = self.last?;
        let (a, start) = self.assistant_chain?;
        let ends_in_chain = match last.role {
            Role::Assistant => a == l,
            Role::User => self.last_continues && a + 1 == l,
            _ => false,
        };
        ends_in_chain.then_some(start)
    }
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
    pub(super) fn is_empty(&self, messages: MessageList<'_>) -> bool {
        messages
            .range(self.start..self.end)
            .all(|m| m.content.is_empty())
    }

    /// Whether this is a system turn of effort-only messages: each with empty content and an
    /// `output_config` object (a per-message effort change, which renders nothing).
    pub(super) fn is_effort_only(&self, messages: MessageList<'_>) -> bool {
        *self.role == Role::System
            && messages.range(self.start..self.end).all(|m| {
                m.content.is_empty() && m.extra.get("output_config").is_some_and(|v| v.is_object())
            })
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
    messages: MessageList<'a>,
    turn: usize,
    msg: usize,
    end: usize,
    block: usize,
    merged: usize,
}

impl<'a> TurnBlocks<'a> {
    /// The pieces of `turn` (the `index`-th turn) of `messages`.
    pub(super) fn new(messages: MessageList<'a>, turn: &Turn<'_>, index: usize) -> Self {
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
            let content = &self.messages.at(self.msg).content;
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The chain start as the rule states it, over the whole table of turns: from the last
    /// assistant turn of the chain, step back over every `assistant → user(tool_result …)`.
    fn chain_start_by_table(roles: &[Role], first_is_result: &[bool]) -> Option<usize> {
        let last = roles.len().checked_sub(1)?;
        let continues_chain = |user: usize| {
            user >= 1
                && roles[user] == Role::User
                && roles[user - 1] == Role::Assistant
                && first_is_result[user]
        };
        let mut start = match roles[last] {
            Role::Assistant => last,
            Role::User if continues_chain(last) => last - 1,
            _ => return None,
        };
        while start >= 2 && continues_chain(start - 1) {
            start -= 2;
        }
        Some(start)
    }

    proptest! {
        /// The forward tracker finds the chain start the backward walk over all turns finds,
        /// for any sequence of roles (system and repeated roles included).
        #[test]
        fn tail_tracks_the_final_chain_start(
            turns in prop::collection::vec(
                (prop::sample::select(vec![Role::User, Role::Assistant, Role::System]), any::<bool>()),
                0..40,
            )
        ) {
            let roles: Vec<Role> = turns.iter().map(|(role, _)| role.clone()).collect();
            let firsts: Vec<bool> = turns.iter().map(|(_, first)| *first).collect();
            let mut tail = Tail::default();
            for (t, role) in roles.iter().enumerate() {
                let turn = Turn { role, start: t, end: t + 1 };
                tail.observe(t, turn, firsts[t]);
            }
            let found = tail.final_chain_start().map(|(t, turn)| {
                assert_eq!(turn.start, t);
                t
            });
            prop_assert_eq!(found, chain_start_by_table(&roles, &firsts));
            prop_assert_eq!(tail.last().map(|(t, _)| t), roles.len().checked_sub(1));
        }
    }

    #[test]
    fn turns_merge_runs_of_one_role() {
        let message =
            |role: Role| threadline_wire::MessageParam::new(role, Content::Text("x".into()));
        let messages = [
            message(Role::User),
            message(Role::User),
            message(Role::Assistant),
            message(Role::User),
        ];
        let refs: Vec<&threadline_wire::MessageParam> = messages.iter().collect();
        let spans: Vec<(usize, usize)> = Turns::new(MessageList::new(&refs))
            .map(|t| (t.start, t.end))
            .collect();
        assert_eq!(spans, [(0, 2), (2, 3), (3, 4)]);
        assert_eq!(Turns::new(MessageList::new(&[])).count(), 0);
    }
}
