//! Pass 8: error tool results carry text only.

use threadline_wire::{Content, ContentBlock};

use crate::ERROR_MEDIA_OMITTED;
use crate::draft::{Draft, is_media};
use crate::report::{Pass, RepairKind, Report};

/// Removes the images and documents from every `tool_result` marked `is_error`
/// (`ImageStrippedFromErrorResult`, one per block); a result left with no content says
/// [`ERROR_MEDIA_OMITTED`].
///
/// Why: a failed tool's screenshot or file is noise that costs tokens and would count
/// against the media limit; the error text is what the model needs.
///
/// Assumes blank text already removed (so the replacement is the only text when it is
/// added). Guarantees: no image or document in an error result; the result is never left
/// empty by this pass.
pub(crate) fn error_results_text_only(drafts: &mut [Draft<'_>], report: &mut Report) {
    for draft in drafts.iter_mut() {
        let origin = draft.origin;
        for block in &mut draft.blocks {
            let ContentBlock::ToolResult(result) = block else {
                continue;
            };
            if result.is_error != Some(true) {
                continue;
            }
            let Some(Content::Blocks(nested)) = &mut result.content else {
                continue;
            };
            if !nested.iter().any(is_media) {
                continue;
            }
            nested.retain(|b| {
                let media = is_media(b);
                if media {
                    report.push(
                        Pass::ErrorResultsTextOnly,
                        RepairKind::ImageStrippedFromErrorResult,
                        origin,
                    );
                }
                !media
            });
            if nested.is_empty() {
                nested.push(ContentBlock::text(ERROR_MEDIA_OMITTED));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::tool_result_block;

    fn error_with(blocks: Vec<ContentBlock>, is_error: bool) -> ContentBlock {
        tool_result_block("t1", Content::Blocks(blocks), is_error)
    }

    #[test]
    fn error_results_lose_their_images_and_keep_their_text() {
        let messages = [
            asst(vec![tool_use("t1")]),
            user_blocks(vec![error_with(vec![text("failed"), image()], true)]),
            user_blocks(vec![error_with(vec![image()], true)]),
            user_blocks(vec![error_with(vec![image()], false)]),
        ];
        let mut drafts = drafts(&messages);
        let mut report = Report::default();
        error_results_text_only(&mut drafts, &mut report);
        let nested = |d: &Draft<'_>| match &d.blocks[0] {
            ContentBlock::ToolResult(r) => match &r.content {
                Some(Content::Blocks(b)) => b.iter().map(block_shape).collect::<Vec<_>>(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        assert_eq!(nested(&drafts[1]), ["text(failed)"]);
        assert_eq!(nested(&drafts[2]), [format!("text({ERROR_MEDIA_OMITTED})")]);
        assert_eq!(nested(&drafts[3]), ["image"]);
        assert_eq!(report.len(), 2);
        assert_eq!(report.repairs[1].message_index, Some(2));
    }
}
