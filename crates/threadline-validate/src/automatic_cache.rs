//! Top-level automatic caching (`cache_control` on the request).
//!
//! The automatic marker lands on the request's **last cacheable block**, walking back silently
//! past blocks that cannot carry a marker (thinking, redacted thinking, empty text, blocks
//! this version does not know), from the messages into `system` and then the tools that are
//! not deferred; turn-scoped system messages are skipped whole (their blocks take no marker,
//! docs/api-notes.md#mid-conversation-system-messages); when none is found nothing is cached
//! (docs/api-notes.md#automatic-caching). It counts
//! as one of the four breakpoints ([`super::cache::Breakpoints`], which reports a fifth as
//! `TooManyCacheBreakpoints`). When the block it lands on already has an explicit marker,
//! the same lifetime is a no-op and a different one is a 400
//! ([`Rule::AutomaticCacheTtlConflict`]; the API's text is not published).

use super::View;
use super::clear_at::is_turn_scoped;
use super::report::{Ctx, Loc};
use super::rule::{self, Rule};
use threadline_wire::cache_control::CacheControl;
use threadline_wire::content::Content;
use threadline_wire::request::SystemPrompt;

/// Where the automatic marker lands: the path of the block (as sent) and its explicit marker.
struct Landing<'a> {
    path: String,
    marker: Option<&'a CacheControl>,
}

/// The last cacheable block of the request, if there is one.
fn landing<'a>(view: &View<'a>) -> Option<Landing<'a>> {
    for (m, message) in view.messages.iter().enumerate().rev() {
        if is_turn_scoped(message) {
            continue;
        }
        match &message.content {
            Content::Text(text) if !text.is_empty() => {
                return Some(Landing {
                    path: format!("messages.{m}.content"),
                    marker: None,
                });
            }
            Content::Text(_) => {}
            Content::Blocks(blocks) => {
                if let Some((b, block)) = blocks
                    .iter()
                    .enumerate()
                    .rev()
                    .find(|(_, b)| b.is_cache_eligible())
                {
                    return Some(Landing {
                        path: format!("messages.{m}.content.{b}"),
                        marker: block.cache_control(),
                    });
                }
            }
        }
    }
    match view.system {
        Some(SystemPrompt::Text(text)) if !text.is_empty() => {
            return Some(Landing {
                path: "system".to_owned(),
                marker: None,
            });
        }
        Some(SystemPrompt::Blocks(blocks)) => {
            if let Some((i, block)) = blocks
                .iter()
                .enumerate()
                .rev()
                .find(|(_, b)| !b.text.is_empty())
            {
                return Some(Landing {
                    path: format!("system.{i}"),
                    marker: block.cache_control.as_deref(),
                });
            }
        }
        _ => {}
    }
    view.tools
        .iter()
        .enumerate()
        .rev()
        .find(|(_, t)| !t.is_deferred())
        .map(|(i, tool)| Landing {
            path: format!("tools.{i}"),
            marker: tool.cache_control(),
        })
}

/// Checks the top-level marker against the block it lands on.
pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let Some(automatic) = view.cache_control else {
        return;
    };
    let Some(Landing {
        path,
        marker: Some(explicit),
    }) = landing(view)
    else {
        return;
    };
    let (wanted, there) = (automatic.effective_ttl(), explicit.effective_ttl());
    if wanted != there {
        let message = rule::automatic_cache_ttl_conflict(wanted.as_str(), &path, there.as_str());
        ctx.report_at(
            Rule::AutomaticCacheTtlConflict,
            Loc::TopCache,
            "cache_control.ttl".to_owned(),
            message,
        );
    }
}
