//! The body of `POST /v1/messages` assembled from the serialized messages of earlier requests:
//! [`BodyFragments`].
//!
//! A conversation's requests repeat every earlier message, and serializing the body again each
//! turn costs as much as the history (most of it escaping strings that have not changed). The
//! client keeps, for the last few conversations it sent, the last body, the last request's
//! messages (shared, not copied: a request's [`Messages`] keeps its messages in shared
//! chunks, kept at the same cost at any length) and where each one's JSON is in the body.
//! The leading messages a request holds equal to the matching conversation's last one keep
//! their bytes ([`Messages::equal_prefix`]: the shared ones found chunk by chunk, others
//! compared by value), and so does any later message equal to the one at the same index; any
//! other is serialized.
//!
//! The body is the request's other fields serialized (`messages` left empty) with the
//! messages spliced in: byte for byte what `serde_json::to_vec` gives for the whole request (a
//! property test over hostile request sequences checks it). Everything up to the first message
//! that changed is already in the last body, in place: when the HTTP layer has let go of that
//! body (it has, once it was sent), its buffer is taken back ([`Bytes::try_into_mut`]) and
//! only what follows the first change is written. A turn then costs a comparison per 64
//! earlier messages and the bytes of what changed, not a copy of the history. Nothing is
//! trusted: when the fields do not come out in the expected order the whole request is
//! serialized instead.

use std::ops::Range;
use std::sync::Arc;

use bytes::{BufMut as _, Bytes, BytesMut};
use threadline_wire::{MessageParam, Messages, MessagesRequest};

/// How many conversations the fragments are kept for (the session and its subagents); the
/// one used least recently is forgotten first.
pub const CONVERSATIONS: usize = 4;

/// The last body of one conversation, its messages and where each one's JSON is in it.
#[derive(Clone, Default)]
struct Conversation {
    /// The last request's messages (shared with it: cloning them costs the same at any
    /// length).
    messages: Messages,
    /// Where the JSON of each of `messages` is in `body`.
    fragments: Vec<Range<usize>>,
    /// The last body (shared with the HTTP layer while it is being sent).
    body: Bytes,
    /// How long its head is: `{"model":…,"max_tokens":…,"messages":[`.
    head: usize,
    used: u64,
}

/// Serialized messages of the last request of up to [`CONVERSATIONS`] conversations, from
/// which the next body is assembled. See the [module documentation](self).
///
/// ```
/// use threadline_client::BodyFragments;
/// use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
///
/// let mut fragments = BodyFragments::new();
/// let mut request = MessagesRequest::new(
///     "claude-sonnet-4-5",
///     1024,
///     vec![MessageParam::user(vec![ContentBlock::text("Read \"lib.rs\".")])],
/// );
/// for _ in 0..2 {
///     let body = fragments.body(&mut request).expect("serializes");
///     assert_eq!(body, serde_json::to_vec(&request).expect("serializes"));
///     request.messages.push(MessageParam::assistant(vec![ContentBlock::text("Done.")]));
///     request.messages.push(MessageParam::user(vec![ContentBlock::text("Again.")]));
/// }
/// ```
#[derive(Clone, Default)]
pub struct BodyFragments {
    conversations: Vec<Conversation>,
    clock: u64,
}

impl std::fmt::Debug for BodyFragments {
    /// How many messages are kept per conversation, not the messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept: Vec<usize> = self
            .conversations
            .iter()
            .map(|c| c.fragments.len())
            .collect();
        f.debug_struct("BodyFragments")
            .field("messages", &kept)
            .finish()
    }
}

impl BodyFragments {
    /// Nothing kept yet.
    pub fn new() -> BodyFragments {
        BodyFragments::default()
    }

    /// The JSON of `request` (compact, as `serde_json::to_vec` writes it), keeping the bytes
    /// of the messages the matching conversation's last request had at the same index, and
    /// keeping this request's. `request` is lent mutably only to serialize its other fields
    /// without its messages; it is given back as it was.
    pub fn body(&mut self, request: &mut MessagesRequest) -> Result<Bytes, serde_json::Error> {
        let messages = std::mem::take(&mut request.messages);
        let shell = serde_json::to_vec(request);
        request.messages = messages;
        let shell = shell?;
        let mut head = b"{\"model\":".to_vec();
        serde_json::to_writer(&mut head, &request.model)?;
        head.extend_from_slice(
            format!(",\"max_tokens\":{},\"messages\":[]", request.max_tokens).as_bytes(),
        );
        let Some(first) = request.messages.shared_at(0) else {
            return Ok(shell.into());
        };
        if !shell.starts_with(&head) {
            // Not the layout this assembly knows: serialize the whole request.
            return serde_json::to_vec(request).map(Bytes::from);
        }
        // The position of `]` in `"messages":[]`.
        let split = head.len() - 1;
        self.clock += 1;
        let slot = self.slot_for(first);
        let conversation = &mut self.conversations[slot];
        conversation.used = self.clock;
        let mut fragments = std::mem::take(&mut conversation.fragments);
        let kept = std::mem::take(&mut conversation.messages);
        let old_body = std::mem::take(&mut conversation.body);
        let messages = &request.messages;
        // How many leading messages keep their bytes where they are: those the two requests
        // share (found chunk by chunk, nothing of the messages read), then any equal ones.
        let in_place = if conversation.head == split && old_body.starts_with(&shell[..split]) {
            messages.equal_prefix(&kept).min(fragments.len())
        } else {
            0
        };
        // The bytes of the old body that stay where they are (none without a message kept).
        let kept_to = in_place.checked_sub(1).map_or(0, |n| fragments[n].end);
        // The old bytes after them, for the later messages that are still the same.
        let old = fragments.split_off(in_place);
        let after = old.first().map_or(0, |json| json.start);
        let rest_end = old.last().map_or(after, |json| json.end);
        let rest = old_body.get(after..rest_end).unwrap_or_default().to_vec();
        let mut buffer = match old_body.try_into_mut() {
            Ok(mut own) => {
                own.truncate(kept_to);
                own
            }
            Err(shared) => {
                let mut fresh = BytesMut::with_capacity(shared.len() + shared.len() / 4);
                fresh.extend_from_slice(&shared[..kept_to]);
                fresh
            }
        };
        if in_place == 0 {
            buffer.extend_from_slice(&shell[..split]);
        }
        let mut old = kept.shared_from(in_place).zip(old);
        for (index, message) in messages.shared_from(in_place).enumerate() {
            if in_place + index > 0 {
                buffer.put_u8(b',');
            }
            let start = buffer.len();
            match old.next() {
                Some((kept, json)) if Messages::same_or_equal(kept, message) => {
                    buffer.extend_from_slice(&rest[json.start - after..json.end - after]);
                }
                _ => serde_json::to_writer((&mut buffer).writer(), &**message)?,
            }
            fragments.push(start..buffer.len());
        }
        buffer.extend_from_slice(&shell[split..]);
        let body = buffer.freeze();
        let conversation = &mut self.conversations[slot];
        // This request's messages (the next request shares them, and finds them by chunk).
        conversation.messages = request.messages.clone();
        conversation.fragments = fragments;
        conversation.body = body.clone();
        conversation.head = split;
        Ok(body)
    }

    /// The conversation whose last request started with `first`, else an empty one (a new
    /// slot, or the one used least recently).
    fn slot_for(&mut self, first: &Arc<MessageParam>) -> usize {
        if let Some(slot) = self
            .conversations
            .iter()
            .position(|c| c.messages.holds(0, first))
        {
            return slot;
        }
        if self.conversations.len() < CONVERSATIONS {
            self.conversations.push(Conversation::default());
            return self.conversations.len() - 1;
        }
        let slot = self
            .conversations
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| c.used)
            .map_or(0, |(i, _)| i);
        self.conversations[slot] = Conversation::default();
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::content::Content;
    use threadline_wire::{ContentBlock, Role};

    fn request(texts: &[&str]) -> MessagesRequest {
        let messages: Messages = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                MessageParam::new(role, Content::Blocks(vec![ContentBlock::text(*t)]))
            })
            .collect();
        MessagesRequest::new("claude-sonnet-4-5", 1024, messages).with_stream(true)
    }

    #[test]
    fn an_edited_message_is_serialized_again() {
        let mut fragments = BodyFragments::new();
        let mut first = request(&["a", "b", "c"]);
        fragments.body(&mut first).expect("a body");
        let mut edited = request(&["a", "B \"quoted\"", "c", "d"]);
        let body = fragments.body(&mut edited).expect("a body");
        assert_eq!(body, serde_json::to_vec(&edited).expect("serializes"));
    }

    #[test]
    fn conversations_keep_their_own_fragments_up_to_the_bound() {
        let mut fragments = BodyFragments::new();
        for round in 0..3 {
            for c in 0..CONVERSATIONS + 1 {
                let first = format!("conversation {c}");
                let mut r = request(&[&first, "answer", &format!("round {round}")]);
                let body = fragments.body(&mut r).expect("a body");
                assert_eq!(body, serde_json::to_vec(&r).expect("serializes"));
            }
        }
        assert_eq!(fragments.conversations.len(), CONVERSATIONS);
    }

    #[test]
    fn an_empty_request_is_its_fields() {
        let mut fragments = BodyFragments::new();
        let mut empty = request(&[]);
        assert_eq!(
            fragments.body(&mut empty).expect("a body"),
            serde_json::to_vec(&empty).expect("serializes")
        );
    }
}
