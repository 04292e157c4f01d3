//! The `system` prompt: no empty text blocks, no marker on an empty block, not only
//! whitespace (a whitespace-only block beside a block with text is accepted, as in messages).

use super::View;
use super::cache::Breakpoints;
use super::report::{Ctx, Loc};
use super::rule::{self, Rule};
use super::text::{IN_SYSTEM, check_text_block, is_blank, only_blank_text};
use threadline_wire::request::SystemPrompt;

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>, breakpoints: &mut Breakpoints) {
    match view.system {
        None => {}
        // An empty string is the same as no system prompt.
        Some(SystemPrompt::Text(text)) if !text.is_empty() && is_blank(text) => {
            let message = rule::WHITESPACE_TEXT_SYSTEM.to_owned();
            ctx.report(Rule::WhitespaceTextBlock, Loc::System(None), message);
        }
        Some(SystemPrompt::Text(_)) => {}
        Some(SystemPrompt::Blocks(blocks)) => {
            let blank = only_blank_text(blocks.iter().map(|b| Some(b.text.as_str())));
            for (n, block) in blocks.iter().enumerate() {
                let loc = Loc::System(Some(n));
                if let Some(marker) = &block.cache_control {
                    breakpoints.marker(ctx, (&**marker).into(), loc);
                }
                check_text_block(
                    ctx,
                    &block.text,
                    block.cache_control.is_some(),
                    loc,
                    IN_SYSTEM,
                    blank,
                );
            }
        }
    }
}
