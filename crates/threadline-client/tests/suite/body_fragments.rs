//! The client's request body assembled from cached fragments ([`BodyFragments`]) is, byte for
//! byte, `serde_json::to_vec` of the whole request: over hostile requests (unknown fields and
//! blocks, quotes, escapes, astral characters, a `messages` key among the unknown fields, a
//! model id with quotes) and sequences of them that append, edit, remove and reorder messages,
//! change the other fields, and interleave more conversations than the client keeps. The
//! request is given back as it was lent.

use proptest::prelude::*;
use serde_json::Value;
use threadline_client::BodyFragments;
use threadline_testkit::strategies::{hostile_text, message_param, messages_request};
use threadline_wire::content::Content;
use threadline_wire::{CacheControl, MessageParam, MessagesRequest};

#[derive(Debug, Clone)]
enum Step {
    /// Conversation `c` (modulo how many there are) gets a new message.
    Append(usize, Value),
    /// Its message at (index modulo the length) is replaced.
    Edit(usize, usize, Value),
    /// Its message at (index modulo the length) is removed.
    Remove(usize, usize),
    /// Two of its messages swap places.
    Swap(usize, usize, usize),
    /// A cache marker is put in place on the last block of its message at (index modulo the
    /// length), as the planner does: the message is shared with the fragments kept, so the
    /// change copies it.
    Mark(usize, usize),
    /// Its model id changes.
    Model(usize, String),
    /// Its `max_tokens` changes.
    MaxTokens(usize, u64),
    /// An unknown top-level field named `messages` (or another) is added.
    Extra(usize, bool, String),
    /// The conversation is sent as it is.
    Send(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (any::<usize>(), message_param()).prop_map(|(c, m)| Step::Append(c, m)),
        1 => (any::<usize>(), any::<usize>(), message_param()).prop_map(|(c, i, m)| Step::Edit(c, i, m)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(c, i)| Step::Remove(c, i)),
        1 => (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(c, a, b)| Step::Swap(c, a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(c, i)| Step::Mark(c, i)),
        1 => (any::<usize>(), hostile_text()).prop_map(|(c, m)| Step::Model(c, m)),
        1 => (any::<usize>(), any::<u64>()).prop_map(|(c, n)| Step::MaxTokens(c, n)),
        1 => (any::<usize>(), any::<bool>(), hostile_text()).prop_map(|(c, m, v)| Step::Extra(c, m, v)),
        2 => any::<usize>().prop_map(Step::Send),
    ]
}

fn check(
    fragments: &mut BodyFragments,
    request: &mut MessagesRequest,
) -> Result<(), TestCaseError> {
    let before = request.clone();
    let expected = serde_json::to_vec(&*request).expect("a request serializes");
    let body = fragments.body(request).expect("a request serializes");
    prop_assert_eq!(&*request, &before, "the request is given back as it was");
    prop_assert!(
        body == expected,
        "assembled:\n{}\nserialized:\n{}",
        String::from_utf8_lossy(&body),
        String::from_utf8_lossy(&expected)
    );
    Ok(())
}

// The default configuration: 256 cases, or `PROPTEST_CASES`.
proptest! {
    #[test]
    fn the_assembled_body_is_the_serialized_request_byte_for_byte(
        requests in prop::collection::vec(messages_request(), 1..7),
        steps in prop::collection::vec(step(), 0..40),
    ) {
        let mut conversations: Vec<MessagesRequest> =
            requests.into_iter().filter_map(|r| serde_json::from_value(r).ok()).collect();
        prop_assume!(!conversations.is_empty());
        let n = conversations.len();
        let mut fragments = BodyFragments::new();
        for request in &mut conversations {
            check(&mut fragments, request)?;
        }
        for step in steps {
            let c = match &step {
                Step::Append(c, _) | Step::Edit(c, _, _) | Step::Remove(c, _)
                | Step::Swap(c, _, _) | Step::Mark(c, _) | Step::Model(c, _) | Step::MaxTokens(c, _)
                | Step::Extra(c, _, _) | Step::Send(c) => c % n,
            };
            let request = &mut conversations[c];
            let len = request.messages.len();
            match step {
                Step::Append(_, m) => {
                    if let Ok(m) = serde_json::from_value::<MessageParam>(m) {
                        request.messages.push(m);
                    }
                }
                Step::Edit(_, i, m) if len > 0 => {
                    if let Ok(m) = serde_json::from_value::<MessageParam>(m) {
                        request.messages[i % len] = m;
                    }
                }
                Step::Remove(_, i) if len > 0 => {
                    request.messages.remove(i % len);
                }
                Step::Swap(_, a, b) if len > 0 => request.messages.swap(a % len, b % len),
                Step::Mark(_, i) if len > 0 => {
                    if let Content::Blocks(blocks) = &mut request.messages[i % len].content
                        && let Some(block) = blocks.last_mut()
                    {
                        block.set_cache_control(CacheControl::ephemeral());
                    }
                }
                Step::Model(_, model) => request.model = model,
                Step::MaxTokens(_, n) => request.max_tokens = n,
                Step::Extra(_, messages, value) => {
                    let key = if messages { "messages".to_owned() } else { format!("x_{}", value.len()) };
                    request.extra.insert(key, Value::String(value));
                }
                _ => {}
            }
            check(&mut fragments, request)?;
        }
    }
}
