//! Text blocks, wherever they are (messages, nested results, system): not empty, not
//! whitespace only, no cache marker on an empty block.

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
/// a marker, the empty-text rule otherwise.
pub(super) fn check_text_block(
    ctx: &mut Ctx<'_>,
    text: &str,
    has_marker: bool,
    loc: Loc,
    texts: TextTexts,
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
    } else if is_blank(text) {
        ctx.report(Rule::WhitespaceTextBlock, loc, texts.whitespace.to_owned());
    }
}

/// Whether `text` holds only whitespace (stops at the first other character).
pub(super) fn is_blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}
