//! The body of `POST /v1/messages` assembled from the serialized messages of earlier requests:
//! [`BodyFragments`].
//!
//! A conversation's requests repeat every earlier message, and serializing the body again each
//! turn costs as much as the history (most of it escaping strings that have not changed). The
//! client keeps each message's JSON beside a copy of the message, for the last few
//! conversations it sent; a request's message equal (`==`) to the one at the same index of the
//! matching conversation reuses its bytes, any other is serialized. The body is then the
//! request's other fields serialized (`messages` left empty) with the fragments spliced in:
//! byte for byte what `serde_json::to_vec` gives for the whole request (a property test over
//! hostile request sequences checks it). Nothing is trusted: when the fields do not come out in
//! the expected order the whole request is serialized instead.

use threadline_wire::{MessageParam, MessagesRequest};

/// How many conversations the fragments are kept for (the session and its subagents); the
/// one used least recently is forgotten first.
pub const CONVERSATIONS: usize = 4;

/// One message and its JSON.
#[derive(Clone)]
struct Fragment {
    message: MessageParam,
    json: Box<[u8]>,
}

/// The fragments of one conversation's last request.
#[derive(Clone, Default)]
struct Conversation {
    fragments: Vec<Fragment>,
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

    /// The JSON of `request` (compact, as `serde_json::to_vec` writes it), reusing the bytes
    /// of the messages the matching conversation's last request had at the same index, and
    /// keeping this request's. `request` is lent mutably only to serialize its other fields
    /// without its messages; it is given back as it was.
    pub fn body(&mut self, request: &mut MessagesRequest) -> Result<Vec<u8>, serde_json::Error> {
        let messages = std::mem::take(&mut request.messages);
        let shell = serde_json::to_vec(request);
        request.messages = messages;
        let shell = shell?;
        let mut head = b"{\"model\":".to_vec();
        serde_json::to_writer(&mut head, &request.model)?;
        head.extend_from_slice(
            format!(",\"max_tokens\":{},\"messages\":[]", request.max_tokens).as_bytes(),
        );
        let Some(first) = request.messages.first() else {
            return Ok(shell);
        };
        if !shell.starts_with(&head) {
            // Not the layout this assembly knows: serialize the whole request.
            return serde_json::to_vec(request);
        }
        self.clock += 1;
        let slot = self.slot_for(first);
        let conversation = &mut self.conversations[slot];
        conversation.used = self.clock;
        let mut old = std::mem::take(&mut conversation.fragments).into_iter();
        let mut fragments = Vec::with_capacity(request.messages.len());
        for message in &request.messages {
            let fragment = match old.next() {
                Some(kept) if kept.message == *message => kept,
                _ => Fragment {
                    message: message.clone(),
                    json: serde_json::to_vec(message)?.into_boxed_slice(),
                },
            };
            fragments.push(fragment);
        }
        // The position of `]` in `"messages":[]`.
        let split = head.len() - 1;
        let size = shell.len() + fragments.iter().map(|f| f.json.len() + 1).sum::<usize>();
        let mut body = Vec::with_capacity(size);
        body.extend_from_slice(&shell[..split]);
        for (i, fragment) in fragments.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&fragment.json);
        }
        body.extend_from_slice(&shell[split..]);
        self.conversations[slot].fragments = fragments;
        Ok(body)
    }

    /// The conversation whose last request started with `first`, else an empty one (a new
    /// slot, or the one used least recently).
    fn slot_for(&mut self, first: &MessageParam) -> usize {
        if let Some(slot) = self
            .conversations
            .iter()
            .position(|c| c.fragments.first().is_some_and(|f| f.message == *first))
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
        self.conversations[slot].fragments.clear();
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::content::Content;
    use threadline_wire::{ContentBlock, Role};

    fn request(texts: &[&str]) -> MessagesRequest {
        let messages = texts
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
