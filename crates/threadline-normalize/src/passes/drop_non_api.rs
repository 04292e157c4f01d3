//! Pass 2: what never goes to the API is dropped; what does is cloned, once.

use threadline_message::{Message, SystemKind};
use threadline_wire::ContentBlock;

use crate::Options;
use crate::draft::{Draft, Item};
use crate::ids::{IdSet, id_set};
use crate::report::{Pass, RepairKind, Report};

/// The messages of `messages`, in `order`, that reach the API, as drafts (attachments kept
/// for [`render_attachments`](super::render_attachments)).
///
/// Dropped, never repairs (they are conversions every session goes through):
/// - virtual user messages (`is_virtual`: shown, never sent);
/// - progress messages, tool-use summaries and tombstones;
/// - every message a tombstone retracts (by id, wherever the tombstone is), e.g. the partial
///   response a streaming fallback replaced;
/// - assistant messages with `is_api_error` (a local error shown as a response);
/// - system messages, except `local_command`, which the model sees as user text wrapped in
///   `<local-command-stdout>…</local-command-stdout>` (unless already wrapped in a
///   `<local-command-…>` tag, or the record of the command itself, which Claude Code 2.1
///   writes as `<command-name>…</command-name>` and sends as it is);
/// - message kinds this version does not know;
/// - a message whose id appeared earlier in the array: a resumed session replays messages
///   with their ids, and the copy is the same message again (`DuplicateMessageRemoved`, the
///   one repair of this pass; the first occurrence is kept);
/// - unless [`Options::keep_cache_control`], the `cache_control` markers on the blocks: the
///   internal array's markers are stale, the cache planner places its own on the normalized
///   request.
///
/// Assumes `order` indexes `messages`. Guarantees: user and assistant drafts carry the
/// message's blocks unchanged otherwise, with their input index as origin; this is the one
/// place the input is cloned.
pub(crate) fn drop_non_api<'a>(
    messages: &'a [Message],
    order: &[usize],
    options: &Options,
    report: &mut Report,
) -> Vec<Item<'a>> {
    let retracted = retracted_ids(messages);
    let mut seen: IdSet<'a> = id_set(messages.len());
    let mut items = Vec::with_capacity(order.len());
    for &n in order {
        let Some(message) = messages.get(n) else {
            continue;
        };
        let id = message.id().as_str();
        if retracted.as_ref().is_some_and(|ids| ids.contains(id)) {
            continue;
        }
        if !seen.insert(id) {
            report.push(
                Pass::DropNonApi,
                RepairKind::DuplicateMessageRemoved,
                Some(n),
            );
            continue;
        }
        let item = match message {
            Message::User(user) if !user.is_virtual => {
                Item::Draft(Draft::user(clone_blocks(&user.content, options), Some(n)))
            }
            Message::Assistant(assistant) if !assistant.is_api_error => {
                Item::Draft(Draft::assistant(
                    clone_blocks(&assistant.content, options),
                    Some(n),
                    assistant.api_message_id.as_deref(),
                ))
            }
            Message::System(system) => match &system.kind {
                SystemKind::LocalCommand { content } => Item::Draft(Draft::user(
                    vec![ContentBlock::text(local_command_text(content))],
                    Some(n),
                )),
                _ => continue,
            },
            Message::Attachment(attachment) => Item::Attachment {
                attachment: &attachment.attachment,
                origin: n,
            },
            _ => continue,
        };
        items.push(item);
    }
    items
}

/// The ids retracted by the tombstones of `messages`; `None` when there is no tombstone.
fn retracted_ids(messages: &[Message]) -> Option<IdSet<'_>> {
    let mut ids: Option<IdSet<'_>> = None;
    for message in messages {
        if let Message::Tombstone(tombstone) = message {
            ids.get_or_insert_with(|| id_set(4))
                .insert(tombstone.retracts.as_str());
        }
    }
    ids
}

/// The user text a local command's output becomes.
fn local_command_text(content: &str) -> String {
    let start = content.trim_start();
    if ["<local-command-", "<command-name>", "<command-message>"]
        .iter()
        .any(|tag| start.starts_with(tag))
    {
        content.to_owned()
    } else {
        format!("<local-command-stdout>{content}</local-command-stdout>")
    }
}

fn clone_blocks(blocks: &[ContentBlock], options: &Options) -> Vec<ContentBlock> {
    let mut blocks = blocks.to_vec();
    if !options.keep_cache_control {
        blocks
            .iter_mut()
            .for_each(ContentBlock::clear_cache_control);
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use serde_json::json;
    use threadline_message::{Level, MessageId, UserMessage};
    use threadline_wire::Content;
    use threadline_wire::{CacheControl, TextBlock};

    fn kept(messages: &[Message]) -> Vec<String> {
        let order: Vec<usize> = (0..messages.len()).collect();
        drop_non_api(
            messages,
            &order,
            &Options::default(),
            &mut Report::default(),
        )
        .into_iter()
        .map(|item| match item {
            Item::Draft(d) => format!("{}@{:?}", drafts_shape(std::slice::from_ref(&d)), d.origin),
            Item::Attachment { origin, .. } => format!("attachment@{origin}"),
        })
        .collect()
    }

    #[test]
    fn ui_only_kinds_are_dropped() {
        let mut virtual_user = user("shown only");
        if let Message::User(UserMessage { is_virtual, .. }) = &mut virtual_user {
            *is_virtual = true;
        }
        let mut api_error = asst_text("Overloaded");
        if let Message::Assistant(a) = &mut api_error {
            a.is_api_error = true;
        }
        let messages = [
            user("q"),
            virtual_user,
            Message::progress("t1", json!({"lines": 3})),
            Message::tool_use_summary("Read 2 files", vec!["t1".into()]),
            api_error,
            Message::system(SystemKind::Informational {
                level: Level::Warning,
                content: "careful".into(),
            }),
            Message::system(SystemKind::TurnDuration { duration_ms: 3 }),
            Message::system(SystemKind::ForkedFrom {
                session: "source".into(),
                message: MessageId::from("m1"),
            }),
            Message::system(SystemKind::Title {
                title: "a title".into(),
            }),
            reminder("r"),
            asst_text("a"),
        ];
        assert_eq!(
            kept(&messages),
            ["U: text(q)@Some(0)", "attachment@9", "A: text(a)@Some(10)"]
        );
    }

    #[test]
    fn tombstones_retract_by_id_wherever_they_are() {
        let messages = [
            Message::tombstone(MessageId::from("late")),
            user("q"),
            with_id(frag("msg_1", vec![text("partial")]), "partial"),
            Message::tombstone(MessageId::from("partial")),
            frag("msg_1", vec![text("full")]),
            with_id(user("retracted later"), "late"),
        ];
        assert_eq!(
            kept(&messages),
            ["U: text(q)@Some(1)", "A: text(full)@Some(4)"]
        );
    }

    #[test]
    fn a_replayed_message_is_kept_once() {
        let messages = [
            with_id(user("q"), "u1"),
            with_id(asst_text("a"), "a1"),
            with_id(user("q"), "u1"),
            with_id(asst_text("a"), "a1"),
            with_id(user("q"), "u2"),
        ];
        let order: Vec<usize> = (0..messages.len()).collect();
        let mut report = Report::default();
        let items = drop_non_api(&messages, &order, &Options::default(), &mut report);
        assert_eq!(items.len(), 3);
        let indices: Vec<_> = report.repairs.iter().map(|r| r.message_index).collect();
        assert_eq!(indices, [Some(2), Some(3)]);
    }

    #[test]
    fn local_commands_become_user_text() {
        let messages = [
            Message::system(SystemKind::LocalCommand {
                content: "3 files".into(),
            }),
            Message::system(SystemKind::LocalCommand {
                content: "<local-command-stderr>oops</local-command-stderr>".into(),
            }),
            Message::system(SystemKind::LocalCommand {
                content: "<command-name>/mcp</command-name>".into(),
            }),
        ];
        assert_eq!(
            kept(&messages),
            [
                "U: text(<local-command-stdout>3 files</local-command-stdout>)@Some(0)",
                "U: text(<local-command-stderr>oops</local-command-stderr>)@Some(1)",
                "U: text(<command-name>/mcp</command-name>)@Some(2)"
            ]
        );
    }

    #[test]
    fn stale_cache_markers_are_removed_unless_kept() {
        let mut marked = TextBlock::new("x");
        marked.cache_control = Some(Box::new(CacheControl::ephemeral()));
        let mut thinking = thinking("t");
        if let ContentBlock::Thinking(b) = &mut thinking {
            b.extra
                .insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        let nested = threadline_message::tool_result_block(
            "t1",
            Content::Blocks(vec![ContentBlock::Text(marked.clone())]),
            false,
        );
        let unknown = ContentBlock::Unknown(
            json!({"type": "future_x", "cache_control": {"type": "ephemeral"}}),
        );
        let messages = [asst(vec![
            thinking,
            ContentBlock::Text(marked),
            nested,
            unknown,
        ])];
        let order = [0];
        let mut report = Report::default();
        let stripped = drop_non_api(&messages, &order, &Options::default(), &mut report);
        let json = serde_json::to_string(&stripped_blocks(&stripped)).expect("serializes");
        assert!(!json.contains("cache_control"), "{json}");
        let keep = Options::default().with_keep_cache_control(true);
        let kept = drop_non_api(&messages, &order, &keep, &mut report);
        let json = serde_json::to_string(&stripped_blocks(&kept)).expect("serializes");
        assert_eq!(json.matches("cache_control").count(), 4, "{json}");
    }

    fn stripped_blocks<'a>(items: &'a [Item<'a>]) -> &'a [ContentBlock] {
        match &items[0] {
            Item::Draft(d) => &d.blocks,
            Item::Attachment { .. } => &[],
        }
    }
}
