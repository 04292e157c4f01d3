//! Text blocks, wherever they are (messages, nested results, system): not empty, no cache
//! marker on an empty block, and not whitespace only where the API rejects that.
//!
//! Where whitespace-only text is rejected (the API's texts are known, docs/api-notes.md#message-sequence,
//! but no documentation gives the positions):
//! the API rejects a content list — a merged turn, a `tool_result`'s or `search_result`'s
//! blocks, the system prompt — that holds text and nothing but whitespace-only text: the
//! response `"\n\n"` sent back as an assistant turn (nick1udwig/kibitz#78), the assistant turn
//! `[{"type":"text","text":" "}]` (anomalyco/opencode#31260), `[text " "]` and `[text "\n"]` as
//! the only block (probed by LibreChat-AI/agents#124). It accepts a whitespace-only block
//! beside other content: `[text " ", text "real"]` (the same probe), an earlier assistant
//! message holding a `"\n\n"` text block (a recorded request answered with 200). Whether a
//! whitespace-only block beside only non-text blocks (a `tool_use`, server tool blocks) is
//! rejected is not settled by any source, so it is accepted: `check` must never reject what
//! the API accepts. A whitespace-only block beside other content is a warning: users of other
//! agents report the API's whitespace text for such blocks, and the normalizer drops them.

use super::report::{Ctx, Loc};
use super::rule::{self, Rule};

/// The API's texts for one part of the request (`messages` or `system`).
#[derive(Clone, Copy)]
pub(super) struct TextTexts {
    /// For an empty text block.
    pub(super) empty: &'static str,
    /// For a whitespace-only text block.
    pub(super) whitespace: &'static str,
}

/// The texts the API uses for blocks in `messages`.
pub(super) const IN_MESSAGES: TextTexts = TextTexts {
    empty: rule::EMPTY_TEXT_MESSAGES,
    whitespace: rule::WHITESPACE_TEXT_MESSAGES,
};

/// The texts the API uses for blocks in `system`.
pub(super) const IN_SYSTEM: TextTexts = TextTexts {
    empty: rule::EMPTY_TEXT_SYSTEM,
    whitespace: rule::WHITESPACE_TEXT_SYSTEM,
};

/// Checks one text block at `loc`. An empty block gets the cache-marker rule when it carries
/// a marker, the empty-text rule otherwise; a whitespace-only block gets the whitespace rule
/// when `blank_list` (its content list holds nothing but blank text, [`only_blank_text`]).
pub(super) fn check_text_block(
    ctx: &mut Ctx<'_>,
    text: &str,
    has_marker: bool,
    loc: Loc,
    texts: TextTexts,
    blank_list: bool,
) {
    if text.is_empty() {
        if has_marker {
            let message = rule::cache_control_on_empty_text(&loc.api());
            ctx.report_at(
                Rule::CacheControlOnEmptyText,
                loc,
                loc.field("text"),
                message,
            );
        } else {
            ctx.report(Rule::EmptyTextBlock, loc, texts.empty.to_owned());
        }
    } else if blank_list && is_blank(text) {
        // Audit: docs/api-notes.md#message-sequence [WIRE, many]; positions as in the module docs.
        ctx.report(Rule::WhitespaceTextBlock, loc, texts.whitespace.to_owned());
    } else if is_blank(text) {
        // Beside other content the API has been seen to accept it, and users of other agents
        // report its whitespace text for such blocks: a warning (`normalize` drops the block).
        let message = format!(
            "{}: a whitespace-only text block beside other content; the API may answer \"{}\" (`threadline normalize` drops it)",
            loc.api(),
            texts.whitespace
        );
        ctx.warn(Rule::WhitespaceTextBlock, loc, message);
    }
}

/// Whether a content list, given as the text of each of its pieces (`None` for a piece that is
/// not text), holds at least one piece and only empty or whitespace-only text: the lists whose
/// whitespace-only blocks the API rejects. Stops at the first other piece.
pub(super) fn only_blank_text<'a>(texts: impl IntoIterator<Item = Option<&'a str>>) -> bool {
    let mut any = false;
    for text in texts {
        match text {
            Some(text) if is_blank(text) => any = true,
            _ => return false,
        }
    }
    any
}

/// Whether `text` holds only whitespace (stops at the first other character).
pub(super) fn is_blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}
