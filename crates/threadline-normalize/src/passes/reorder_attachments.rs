//! Pass 1: attachments bubble up to the turn they belong to.

use threadline_message::Message;
use threadline_wire::ContentBlock;

/// The order in which the input is read: indices into `messages`, attachments moved up.
///
/// Each attachment bubbles up from where it is towards the start of the array until it meets
/// a *stop point* — an assistant message, or a user message whose first block is a
/// `tool_result` — and is placed right after it. Attachments that meet no stop point end up
/// first. Attachments keep their relative order; every other message keeps its place
/// relative to the others.
///
/// Why: the sources that produce attachments run while the user's prompt is being submitted
/// or while tools run, so attachments are recorded after the prompt or after the tool
/// results. Moved up, the context they carry reaches the model before the prompt it is
/// about, and never between an assistant's `tool_use` and its results.
///
/// Assumes nothing about the array. Guarantees: a permutation of `0..messages.len()`. Cost:
/// one walk from the end, pushing onto a reversed list that is reversed once at the end — no
/// insertion at the front, so O(N) whatever the number of attachments.
pub(crate) fn reorder_attachments(messages: &[Message]) -> Vec<usize> {
    let mut reversed = Vec::with_capacity(messages.len());
    // Attachments seen (from the end) and not yet placed, last one first.
    let mut pending: Vec<usize> = Vec::new();
    for (n, message) in messages.iter().enumerate().rev() {
        if matches!(message, Message::Attachment(_)) {
            pending.push(n);
            continue;
        }
        if !pending.is_empty() && is_stop_point(message) {
            // Reversed at the end, these land right after the stop point, in their order.
            reversed.append(&mut pending);
        }
        reversed.push(n);
    }
    reversed.append(&mut pending);
    reversed.reverse();
    reversed
}

/// Whether an attachment bubbling up stops right after `message`.
fn is_stop_point(message: &Message) -> bool {
    match message {
        Message::Assistant(_) => true,
        Message::User(user) => matches!(user.content.first(), Some(ContentBlock::ToolResult(_))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use threadline_message::{Level, SystemKind};

    fn order(messages: &[Message]) -> Vec<usize> {
        reorder_attachments(messages)
    }

    #[test]
    fn attachments_move_above_the_prompt_to_the_last_assistant() {
        let messages = [
            user("q1"),      // 0
            asst_text("a1"), // 1
            user("q2"),      // 2
            reminder("r1"),  // 3
            reminder("r2"),  // 4
        ];
        assert_eq!(order(&messages), [0, 1, 3, 4, 2]);
    }

    #[test]
    fn a_tool_result_message_is_a_stop_point() {
        let messages = [
            user("q"),                                       // 0
            asst(vec![tool_use("t1")]),                      // 1
            results(&["t1"]),                                // 2
            user_blocks(vec![text("x"), result("t2", "r")]), // 3: not a stop point
            reminder("r"),                                   // 4
        ];
        assert_eq!(order(&messages), [0, 1, 2, 4, 3]);
    }

    #[test]
    fn attachments_with_no_stop_point_above_go_first() {
        let messages = [
            user("q"),
            Message::system(SystemKind::Informational {
                level: Level::Info,
                content: "i".into(),
            }),
            reminder("r1"),
            user("q2"),
            reminder("r2"),
        ];
        assert_eq!(order(&messages), [2, 4, 0, 1, 3]);
    }

    #[test]
    fn attachments_already_after_a_stop_point_stay() {
        let messages = [
            user("q"),
            asst(vec![tool_use("t1")]),
            reminder("r"),
            results(&["t1"]),
        ];
        assert_eq!(order(&messages), [0, 1, 2, 3]);
    }

    #[test]
    fn empty_and_attachment_only_arrays() {
        assert!(order(&[]).is_empty());
        assert_eq!(order(&[reminder("a"), reminder("b")]), [0, 1]);
    }

    #[test]
    fn many_attachments_are_linear() {
        // 50k attachments below one prompt: front insertion would be quadratic.
        let mut messages = vec![asst_text("a"), user("q")];
        messages.extend((0..50_000).map(|_| reminder("r")));
        let order = order(&messages);
        assert_eq!(order[0], 0);
        assert_eq!(order[1], 2);
        assert_eq!(order.last(), Some(&1));
    }
}
