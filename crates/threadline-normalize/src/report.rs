//! The typed report of every repair the pipeline made: which pass, what, and where.
//!
//! Conversions that every array goes through (dropping UI-only messages, rendering
//! attachments, merging fragments and consecutive messages, removing stale cache markers) are
//! not repairs and are not reported. A repair is a change made because the input, sent as it
//! is, would have been rejected by the API or would have reached the model in a shape it was
//! not meant to have.

use std::fmt;

/// A pass of the pipeline, in pipeline order (see the crate documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Pass {
    /// 1. Attachments bubbled up to the turn they belong to.
    ReorderAttachments,
    /// 2. Messages that never go to the API dropped.
    DropNonApi,
    /// 3. Attachments rendered as model-visible text.
    RenderAttachments,
    /// 4. Streaming fragments of one response merged.
    MergeAssistantFragments,
    /// 5. Consecutive messages of one role merged, tool results first.
    MergeConsecutiveUsers,
    /// 6. Thinking blocks only where the API accepts them.
    ThinkingHygiene,
    /// 7. No empty text, no empty message.
    EmptyContent,
    /// 8. Error tool results carry text only.
    ErrorResultsTextOnly,
    /// 9. At most `media_limit` images and documents.
    MediaCap,
    /// 10. Every `tool_use` answered once, in the next message, first.
    EnsureToolResultPairing,
}

impl Pass {
    /// Every pass, in pipeline order.
    pub const ALL: [Pass; 10] = [
        Pass::ReorderAttachments,
        Pass::DropNonApi,
        Pass::RenderAttachments,
        Pass::MergeAssistantFragments,
        Pass::MergeConsecutiveUsers,
        Pass::ThinkingHygiene,
        Pass::EmptyContent,
        Pass::ErrorResultsTextOnly,
        Pass::MediaCap,
        Pass::EnsureToolResultPairing,
    ];

    /// The pass's name, as its module is named (`ensure_tool_result_pairing`).
    pub fn name(self) -> &'static str {
        match self {
            Pass::ReorderAttachments => "reorder_attachments",
            Pass::DropNonApi => "drop_non_api",
            Pass::RenderAttachments => "render_attachments",
            Pass::MergeAssistantFragments => "merge_assistant_fragments",
            Pass::MergeConsecutiveUsers => "merge_consecutive_users",
            Pass::ThinkingHygiene => "thinking_hygiene",
            Pass::EmptyContent => "empty_content",
            Pass::ErrorResultsTextOnly => "error_results_text_only",
            Pass::MediaCap => "media_cap",
            Pass::EnsureToolResultPairing => "ensure_tool_result_pairing",
        }
    }
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RepairKind {
    /// A `tool_use` had no `tool_result` in the next message: a synthetic `is_error` result
    /// ([`threadline_message::MISSING_TOOL_RESULT`]) was inserted first in that message.
    SyntheticToolResult {
        /// The unanswered `tool_use` id.
        tool_use_id: String,
    },
    /// A `tool_result` answered no `tool_use` of the immediately preceding assistant message.
    OrphanToolResultRemoved {
        /// The id it named.
        tool_use_id: String,
    },
    /// A `tool_use` (or server / MCP tool use) repeated an earlier id, as a resumed session
    /// produces; the first occurrence was kept.
    DuplicateToolUseRemoved {
        /// The repeated id.
        id: String,
    },
    /// A second `tool_result` for one `tool_use`; the first was kept.
    DuplicateToolResultRemoved {
        /// The id both answered.
        tool_use_id: String,
    },
    /// A `server_tool_use` without its result block in the same assistant message.
    ServerToolUseRemoved {
        /// Its id.
        id: String,
    },
    /// A server tool result block with no server tool use before it in its message.
    OrphanServerToolResultRemoved {
        /// The id it named.
        tool_use_id: String,
    },
    /// A `tool_result` came after other content of its message and was moved first.
    ToolResultMovedFirst {
        /// The id it answers.
        tool_use_id: String,
    },
    /// A block in a message of the wrong role (`tool_result` in an assistant message;
    /// `tool_use`, server tool blocks or thinking in a user message).
    MisplacedBlockRemoved {
        /// The block's `type`.
        block_type: String,
    },
    /// A `tool_use` / `server_tool_use` id outside the API's pattern was rewritten (results
    /// naming it were rewritten the same way).
    ToolUseIdRewritten {
        /// The id as it was.
        from: String,
        /// The id as sent.
        to: String,
    },
    /// A message appearing again with the same id (a resumed session replayed it) was
    /// dropped; the first occurrence was kept.
    DuplicateMessageRemoved,
    /// An empty or whitespace-only text block removed (in a message or in a tool result).
    EmptyTextRemoved,
    /// A message that would have been empty got [`crate::EMPTY_PLACEHOLDER`].
    PlaceholderInserted,
    /// An assistant message with nothing left was dropped (adjacent user messages merged).
    EmptyAssistantDropped,
    /// An assistant message holding only thinking was dropped (it is not the latest one, or it
    /// lost the content its thinking belonged to).
    OrphanThinkingDropped,
    /// A thinking block where the API rejects it: after other content of an assistant
    /// message, or in a user message.
    MisplacedThinkingDropped,
    /// A `thinking` block without its `signature`, which the API rejects.
    UnsignedThinkingDropped,
    /// A thinking block at the end of a final (prefill) assistant message.
    TrailingThinkingStripped,
    /// Whitespace at the end of a final (prefill) assistant message.
    TrailingWhitespaceTrimmed,
    /// An image or document removed from an `is_error` tool result.
    ImageStrippedFromErrorResult,
    /// An image or document over the media limit, replaced by [`crate::MEDIA_OMITTED`].
    MediaDropped,
}

impl RepairKind {
    /// A noun phrase for the summary, singular or plural.
    fn noun(&self, plural: bool) -> &'static str {
        let (one, many) = match self {
            RepairKind::SyntheticToolResult { .. } => {
                ("synthetic tool result", "synthetic tool results")
            }
            RepairKind::OrphanToolResultRemoved { .. } => {
                ("orphan tool result removed", "orphan tool results removed")
            }
            RepairKind::DuplicateToolUseRemoved { .. } => {
                ("duplicate tool use removed", "duplicate tool uses removed")
            }
            RepairKind::DuplicateToolResultRemoved { .. } => (
                "duplicate tool result removed",
                "duplicate tool results removed",
            ),
            RepairKind::ServerToolUseRemoved { .. } => (
                "unanswered server tool use removed",
                "unanswered server tool uses removed",
            ),
            RepairKind::OrphanServerToolResultRemoved { .. } => (
                "orphan server tool result removed",
                "orphan server tool results removed",
            ),
            RepairKind::ToolResultMovedFirst { .. } => {
                ("tool result moved first", "tool results moved first")
            }
            RepairKind::MisplacedBlockRemoved { .. } => {
                ("misplaced block removed", "misplaced blocks removed")
            }
            RepairKind::ToolUseIdRewritten { .. } => {
                ("tool use id rewritten", "tool use ids rewritten")
            }
            RepairKind::DuplicateMessageRemoved => {
                ("replayed message removed", "replayed messages removed")
            }
            RepairKind::EmptyTextRemoved => {
                ("empty text block removed", "empty text blocks removed")
            }
            RepairKind::PlaceholderInserted => ("placeholder inserted", "placeholders inserted"),
            RepairKind::EmptyAssistantDropped => (
                "empty assistant message dropped",
                "empty assistant messages dropped",
            ),
            RepairKind::OrphanThinkingDropped => (
                "thinking-only assistant message dropped",
                "thinking-only assistant messages dropped",
            ),
            RepairKind::MisplacedThinkingDropped => (
                "misplaced thinking block dropped",
                "misplaced thinking blocks dropped",
            ),
            RepairKind::UnsignedThinkingDropped => (
                "unsigned thinking block dropped",
                "unsigned thinking blocks dropped",
            ),
            RepairKind::TrailingThinkingStripped => (
                "trailing thinking block stripped",
                "trailing thinking blocks stripped",
            ),
            RepairKind::TrailingWhitespaceTrimmed => {
                ("trailing whitespace trimmed", "trailing whitespace trimmed")
            }
            RepairKind::ImageStrippedFromErrorResult => (
                "image stripped from an error result",
                "images stripped from error results",
            ),
            RepairKind::MediaDropped => (
                "image or document dropped over the media limit",
                "images or documents dropped over the media limit",
            ),
        };
        if plural { many } else { one }
    }
}

impl fmt::Display for RepairKind {
    /// The noun phrase, with the id where there is one (`synthetic tool result for toolu_1`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.noun(false))?;
        match self {
            RepairKind::SyntheticToolResult { tool_use_id }
            | RepairKind::OrphanToolResultRemoved { tool_use_id }
            | RepairKind::DuplicateToolResultRemoved { tool_use_id }
            | RepairKind::OrphanServerToolResultRemoved { tool_use_id }
            | RepairKind::ToolResultMovedFirst { tool_use_id } => write!(f, " ({tool_use_id})"),
            RepairKind::DuplicateToolUseRemoved { id }
            | RepairKind::ServerToolUseRemoved { id } => {
                write!(f, " ({id})")
            }
            RepairKind::MisplacedBlockRemoved { block_type } => write!(f, " ({block_type})"),
            RepairKind::ToolUseIdRewritten { from, to } => write!(f, " ({from} -> {to})"),
            _ => Ok(()),
        }
    }
}

/// One repair.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Repair {
    /// The pass that made it.
    pub pass: Pass,
    /// What it did.
    pub kind: RepairKind,
    /// The index, in the *input* array, of the message the repaired content came from, when
    /// known. For content merged from several messages (fragments, consecutive users) it is
    /// the first of them; for a synthetic tool result, the assistant message whose tool use
    /// it answers; `None` for repairs of the array as a whole.
    pub message_index: Option<usize>,
}

impl fmt::Display for Repair {
    /// `messages[3]: synthetic tool result (toolu_1) [ensure_tool_result_pairing]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message_index {
            Some(index) => write!(f, "messages[{index}]: ")?,
            None => f.write_str("messages: ")?,
        }
        write!(f, "{} [{}]", self.kind, self.pass)
    }
}

/// Every repair of one normalization, in the order they were made (pass by pass, and within
/// a pass in message order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The repairs.
    pub repairs: Vec<Repair>,
}

impl Report {
    /// Whether nothing was repaired.
    pub fn is_empty(&self) -> bool {
        self.repairs.is_empty()
    }

    /// How many repairs were made.
    pub fn len(&self) -> usize {
        self.repairs.len()
    }

    /// How many repairs match `predicate`.
    pub fn count(&self, predicate: impl Fn(&RepairKind) -> bool) -> usize {
        self.repairs.iter().filter(|r| predicate(&r.kind)).count()
    }

    /// Records a repair.
    pub(crate) fn push(&mut self, pass: Pass, kind: RepairKind, message_index: Option<usize>) {
        self.repairs.push(Repair {
            pass,
            kind,
            message_index,
        });
    }

    /// A one-line summary, repairs grouped by kind in order of first appearance:
    /// `3 repairs: 2 synthetic tool results, 1 orphan tool result removed`, or `no repairs`.
    pub fn summary(&self) -> String {
        if self.repairs.is_empty() {
            return "no repairs".to_owned();
        }
        // Few kinds: a linear scan keeps first-appearance order with no hash map.
        let mut groups: Vec<(&RepairKind, usize)> = Vec::new();
        for repair in &self.repairs {
            let kind = std::mem::discriminant(&repair.kind);
            match groups
                .iter_mut()
                .find(|(k, _)| std::mem::discriminant(*k) == kind)
            {
                Some((_, n)) => *n += 1,
                None => groups.push((&repair.kind, 1)),
            }
        }
        let total = self.repairs.len();
        let mut out = format!("{total} repair{}: ", if total == 1 { "" } else { "s" });
        for (i, (kind, n)) in groups.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&format!("{n} {}", kind.noun(*n != 1)));
        }
        out
    }
}

impl fmt::Display for Report {
    /// The [summary](Report::summary).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repair(kind: RepairKind) -> Repair {
        Repair {
            pass: Pass::EnsureToolResultPairing,
            kind,
            message_index: Some(2),
        }
    }

    #[test]
    fn summary_groups_by_kind_in_first_appearance_order() {
        let synthetic = |id: &str| {
            repair(RepairKind::SyntheticToolResult {
                tool_use_id: id.into(),
            })
        };
        let report = Report {
            repairs: vec![
                synthetic("toolu_1"),
                repair(RepairKind::OrphanToolResultRemoved {
                    tool_use_id: "toolu_9".into(),
                }),
                synthetic("toolu_2"),
            ],
        };
        assert_eq!(
            report.summary(),
            "3 repairs: 2 synthetic tool results, 1 orphan tool result removed"
        );
        assert_eq!(report.to_string(), report.summary());
        assert_eq!(Report::default().summary(), "no repairs");
        let one = Report {
            repairs: vec![repair(RepairKind::PlaceholderInserted)],
        };
        assert_eq!(one.summary(), "1 repair: 1 placeholder inserted");
    }

    #[test]
    fn a_repair_says_where_what_and_which_pass() {
        let r = repair(RepairKind::SyntheticToolResult {
            tool_use_id: "toolu_1".into(),
        });
        assert_eq!(
            r.to_string(),
            "messages[2]: synthetic tool result (toolu_1) [ensure_tool_result_pairing]"
        );
        let whole = Repair {
            message_index: None,
            ..repair(RepairKind::PlaceholderInserted)
        };
        assert_eq!(
            whole.to_string(),
            "messages: placeholder inserted [ensure_tool_result_pairing]"
        );
    }

    #[test]
    fn passes_are_listed_in_pipeline_order_with_their_module_names() {
        let names: Vec<_> = Pass::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names.first(), Some(&"reorder_attachments"));
        assert_eq!(names.last(), Some(&"ensure_tool_result_pairing"));
        let mut sorted = Pass::ALL;
        sorted.sort();
        assert_eq!(sorted, Pass::ALL);
    }
}
