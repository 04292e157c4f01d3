//! Pass 9: at most `media_limit` images and documents per request.

use threadline_wire::{Content, ContentBlock};

use crate::MEDIA_OMITTED;
use crate::draft::{Draft, is_media};
use crate::report::{Pass, RepairKind, Report};

/// Replaces the oldest images and documents by the text [`MEDIA_OMITTED`] until at most
/// `limit` remain (`MediaDropped`, one per block). Counted: image and document blocks of
/// every message and those nested in `tool_result` content.
///
/// Why: the API rejects a request with more than 100 images (600 on some models) and the
/// oldest are the least relevant. A text stands in for each dropped block so that no message
/// or result is left empty and the model knows something was there.
///
/// Assumes error results already text-only (their media must not use up the budget).
/// Guarantees: at most `limit` media blocks; the newest are kept; nothing else changes.
/// Cost: two walks over the blocks.
pub(crate) fn media_cap(drafts: &mut [Draft<'_>], limit: usize, report: &mut Report) {
    let total: usize = drafts.iter().map(|d| count(&d.blocks)).sum();
    let mut excess = total.saturating_sub(limit);
    for draft in drafts.iter_mut() {
        if excess == 0 {
            break;
        }
        let origin = draft.origin;
        drop_oldest(&mut draft.blocks, &mut excess, origin, report);
    }
}

fn count(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::ToolResult(result) => match &result.content {
                Some(Content::Blocks(nested)) => count(nested),
                _ => 0,
            },
            other => usize::from(is_media(other)),
        })
        .sum()
}

fn drop_oldest(
    blocks: &mut [ContentBlock],
    excess: &mut usize,
    origin: Option<usize>,
    report: &mut Report,
) {
    for block in blocks.iter_mut() {
        if *excess == 0 {
            return;
        }
        if is_media(block) {
            *block = ContentBlock::text(MEDIA_OMITTED);
            *excess -= 1;
            report.push(Pass::MediaCap, RepairKind::MediaDropped, origin);
        } else if let ContentBlock::ToolResult(result) = block
            && let Some(Content::Blocks(nested)) = &mut result.content
        {
            drop_oldest(nested, excess, origin, report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::tool_result_block;

    #[test]
    fn the_oldest_media_go_first_nested_ones_included() {
        let messages = [
            user_blocks(vec![image(), text("look")]),
            asst(vec![tool_use("t1")]),
            user_blocks(vec![tool_result_block(
                "t1",
                Content::Blocks(vec![image(), image()]),
                false,
            )]),
            user_blocks(vec![image()]),
        ];
        let mut drafts = drafts(&messages);
        let mut report = Report::default();
        media_cap(&mut drafts, 2, &mut report);
        let omitted = format!("text({MEDIA_OMITTED})");
        assert_eq!(
            drafts_shape(&drafts[..1]),
            format!("U: {omitted} text(look)")
        );
        let ContentBlock::ToolResult(r) = &drafts[2].blocks[0] else {
            panic!("a tool result")
        };
        let Some(Content::Blocks(nested)) = &r.content else {
            panic!("blocks")
        };
        let nested: Vec<_> = nested.iter().map(block_shape).collect();
        assert_eq!(nested, [omitted.as_str(), "image"]);
        assert_eq!(drafts_shape(&drafts[3..]), "U: image");
        let indices: Vec<_> = report.repairs.iter().map(|r| r.message_index).collect();
        assert_eq!(indices, [Some(0), Some(2)]);
    }

    #[test]
    fn under_the_limit_nothing_changes() {
        let messages = [user_blocks(vec![image(), image()])];
        let mut drafts = drafts(&messages);
        let mut report = Report::default();
        media_cap(&mut drafts, 2, &mut report);
        assert!(report.is_empty());
        media_cap(&mut drafts, 0, &mut report);
        assert_eq!(report.len(), 2);
    }
}
