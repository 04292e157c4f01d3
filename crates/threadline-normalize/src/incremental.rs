//! Incremental normalization: a [`Normalizer`] that keeps the normalized request and, when
//! the internal array only grew, re-normalizes only its tail.
//!
//! An agent normalizes its whole history before every request; the history grows by a few
//! messages per turn. [`Normalizer::update`] gives exactly what [`normalize`](crate::normalize)
//! gives (the messages; the report is [`normalize`](crate::normalize)'s business), at a cost
//! that depends on the turn, not on the history.
//!
//! # The boundary
//!
//! The cached request is split at a *boundary*: input message `B`, an assistant message that
//! begins output message `J` (its draft is the first of that output message: it merged into
//! nothing before it and survived every pass). Output messages before `J` (the *prefix*) are
//! kept; from `B` on, the input is re-normalized on its own (the *tail*) and spliced in at
//! `J`. After each update the boundary moves to the latest assistant output message that is
//! not thinking-only, so the next tail is about one turn long.
//!
//! Why the prefix does not change when messages are appended, pass by pass, as long as `B`
//! still begins its output message (checked on every update: the tail's output must begin with
//! `B`'s draft):
//!
//! 1. *Attachments* bubble up to the nearest assistant or tool-result message: one appended
//!    after `B` stops at `B` at the latest.
//! 2. *Dropping*: a tail message whose id occurred before `B` is a replay the batch pipeline
//!    drops, a tombstone in the tail may retract a message before `B`, and one before `B` may
//!    retract a tail message — each of these is global and makes the update fall back (below).
//! 3. *Rendering* is per attachment.
//! 4. *Fragments* merge into the nearest assistant draft before them: for any tail fragment,
//!    that is `B`'s or a later one; and `B` merged into nothing before it (it begins `J`).
//! 5. *Consecutive messages* merge only when adjacent, and `B`'s assistant draft stands
//!    between the prefix's last user draft and the tail.
//! 6. *Thinking hygiene*: "the latest assistant message" and "the final message" are in the
//!    tail, both before and after appending (`B` is an assistant message that survives).
//! 7. *Empty content* and 8. *error results* are per message (an emptied message merges its
//!    neighbours, which stay on their side of `B`).
//! 9. *Media cap* counts the whole request: the oldest go first, so the tail is capped on its
//!    own and the prefix's oldest media are replaced as the total grows (below).
//! 10. *Pairing* looks at adjacent messages only, except for duplicate tool use ids: a tail
//!     tool use whose id the prefix already used makes the update fall back. The end of the
//!     request (trailing thinking, trailing whitespace, a missing last result) is in the tail.
//!
//! # The media cap
//!
//! The prefix keeps, oldest first, every image and document its messages held when the cap
//! ran, and where each ended up in the output (or that the last pass removed it). The batch
//! cap replaces the oldest first, so the tail's own media go only when they alone exceed the
//! limit (and then every prefix media is gone): the tail is capped on its own. When prefix and
//! tail together exceed the limit, the prefix's oldest media are replaced by
//! [`MEDIA_OMITTED`] where they are, as the batch cap would have replaced them before the
//! pairing pass (which treats a media block and the text replacing it alike). Each media
//! block is replaced once: the cost follows the number of new media, not the history.
//!
//! # Falling back
//!
//! The update recomputes everything (as [`normalize`](crate::normalize) does) and picks a new
//! boundary when the array did not only grow, when there is no boundary yet, when `B` no
//! longer begins its output message, when the tail replays or retracts across the boundary,
//! repeats a prefix tool use id, or needs media back that the prefix already gave up. Each
//! is rare in a live session (a resume, a rewind, a streaming fallback that retracts `B`) and
//! passes once the boundary has moved past it. [`Normalizer::last_update`] says which path
//! was taken and why.
//!
//! # Detecting growth
//!
//! "Only grew" is checked at a constant cost: the length did not shrink, and the ids (64-bit
//! hashes of them) at the first message, the boundary, the last message seen and at distances
//! 1, 2, 4, … 64 back from it are unchanged. An insertion or a removal anywhere before the last message seen
//! moves the last one's id, a truncation shortens the array, a compaction or a rewind changes
//! the ids at the end: all detected. An edit in place — a message replaced or changed at a
//! place not checked (clearing an old tool result in place, say) — is not: call
//! [`Normalizer::reset`] after one. (Checking every id would make each update cost O(N).)
//!
//! ```
//! use threadline_message::Message;
//! use threadline_normalize::{normalize, IncrementalUpdate, Normalizer, Options};
//! use threadline_wire::ContentBlock;
//!
//! let mut session = vec![
//!     Message::user_text("Hi"),
//!     Message::assistant(vec![ContentBlock::text("Hello!")]),
//! ];
//! let mut normalizer = Normalizer::new(Options::default());
//! normalizer.update(&session);
//!
//! for turn in 0..3 {
//!     session.push(Message::user_text(format!("Question {turn}")));
//!     session.push(Message::assistant(vec![ContentBlock::text(format!("Answer {turn}"))]));
//!     let messages = normalizer.update(&session).to_vec();
//!     assert_eq!(messages, normalize(&session, &Options::default()).messages);
//!     // Only the last answer and what follows it were normalized again.
//!     assert!(matches!(normalizer.last_update(), IncrementalUpdate::Tail { messages: 3, .. }));
//! }
//! ```

use std::collections::HashSet;

use threadline_message::Message;
use threadline_wire::{Content, ContentBlock, MessageParam, Messages, Role};

use crate::draft::{Draft, is_media};
use crate::pipeline::run_drafts;
use crate::report::Report;
use crate::{MEDIA_OMITTED, Options};

/// How the last [`Normalizer::update`] computed its result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IncrementalUpdate {
    /// Nothing was computed yet.
    Nothing,
    /// The array was the one seen last: the cached request was returned.
    Unchanged,
    /// Only the tail was normalized again.
    Tail {
        /// The first input message of the tail.
        from: usize,
        /// How many input messages were normalized again.
        messages: usize,
    },
    /// Everything was normalized again.
    Full {
        /// Why.
        reason: FullReason,
    },
}

/// Why an update normalized the whole array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FullReason {
    /// The first update, or the first after [`Normalizer::reset`].
    First,
    /// The array did not only grow: it shrank, or a checked id changed (an edit, a
    /// compaction, a rewind).
    NotAppended,
    /// No boundary yet (no assistant message that begins an output message).
    NoBoundary,
    /// The boundary's message no longer begins its output message (a tombstone retracted
    /// it, or it became orphaned thinking, or its tool uses were removed).
    BoundaryLost,
    /// A tail message has the id of a message before the boundary (a replay), or one retracted
    /// before the boundary.
    ReplayAcrossBoundary,
    /// A tombstone in the tail retracts a message that is not in the tail.
    RetractionAcrossBoundary,
    /// A tool use in the tail repeats an id used before the boundary.
    DuplicateToolUseAcrossBoundary,
    /// The tail holds fewer media than before, so media the prefix gave up would come back.
    MediaCapReceded,
    /// Where the prefix's media ended up is not known exactly.
    MediaUntracked,
}

/// Normalizes a growing internal array, re-normalizing only its tail; the result always
/// equals [`normalize`](crate::normalize)'s messages. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Normalizer {
    options: Options,
    output: Messages,
    seen: Seen,
    boundary: Option<Boundary>,
    prefix: Prefix,
    last: IncrementalUpdate,
    /// How many leading messages of `output` equal the previous update's.
    unchanged: usize,
    /// Where the input is cut with [`Options::from_last_compaction`].
    cut: CompactionCut,
}

/// The cut at the last `compaction` block, and what the array looked like when it was
/// found: rescanned (one backward walk) only when the array shrank, its first message or the
/// message at the cut changed, or appended messages hold a compaction block or a tombstone.
#[derive(Debug, Clone, Default)]
struct CompactionCut {
    at: usize,
    scanned: usize,
    first: Option<threadline_message::MessageId>,
    at_id: Option<threadline_message::MessageId>,
}

impl CompactionCut {
    fn update(&mut self, messages: &[Message]) -> usize {
        let same = messages.len() >= self.scanned
            && messages.first().map(Message::id) == self.first.as_ref()
            && messages.get(self.at).map(Message::id) == self.at_id.as_ref()
            && !crate::from_compaction::may_move_cut(&messages[self.scanned.min(messages.len())..]);
        if !same {
            self.at = crate::from_compaction::last_compaction_start(messages);
            self.first = messages.first().map(|m| m.id().clone());
            self.at_id = messages.get(self.at).map(|m| m.id().clone());
        }
        self.scanned = messages.len();
        self.at
    }
}

/// Where the prefix ends: input message `input` begins output message `output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Boundary {
    input: usize,
    output: usize,
}

/// What the array looked like at the last update: its length and the ids (hashed) at a few
/// places.
#[derive(Debug, Clone, Default)]
struct Seen {
    len: usize,
    checkpoints: Vec<(usize, u64)>,
}

/// What the batch pipeline would know about the prefix when normalizing the tail.
#[derive(Debug, Clone)]
struct Prefix {
    /// Hashes of the ids of the input messages before the boundary.
    message_ids: HashSet<u64>,
    /// Hashes of the ids retracted by tombstones before the boundary.
    retracted: HashSet<u64>,
    /// Hashes of the tool use ids (client, server, MCP) in the prefix's output.
    tool_ids: HashSet<u64>,
    /// The prefix's media when the cap ran, oldest first: where each is in the output, or
    /// `None` when the pairing pass removed it (or the cap had already replaced it).
    media: Vec<Option<Location>>,
    /// How many of `media` (the oldest) are replaced by [`MEDIA_OMITTED`].
    media_dropped: usize,
    /// Whether `media` is exact.
    media_tracked: bool,
}

impl Default for Prefix {
    fn default() -> Self {
        Prefix {
            message_ids: HashSet::new(),
            retracted: HashSet::new(),
            tool_ids: HashSet::new(),
            media: Vec::new(),
            media_dropped: 0,
            media_tracked: true,
        }
    }
}

/// Where a media block is in the output: a message, then block indices (the first in the
/// message's content, the next ones in `tool_result` content).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    message: usize,
    path: Vec<usize>,
}

impl Normalizer {
    /// A normalizer with nothing seen yet.
    pub fn new(options: Options) -> Self {
        Normalizer {
            options,
            output: Messages::new(),
            seen: Seen::default(),
            boundary: None,
            prefix: Prefix::default(),
            last: IncrementalUpdate::Nothing,
            unchanged: 0,
            cut: CompactionCut::default(),
        }
    }

    /// The options it normalizes with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The normalized request's messages for `messages`: equal to
    /// `normalize(messages, options).messages`, computed from the tail only when `messages`
    /// is the array seen last with messages appended.
    pub fn update(&mut self, messages: &[Message]) -> &Messages {
        let messages = if self.options.from_last_compaction {
            &messages[self.cut.update(messages)..]
        } else {
            messages
        };
        if self.last == IncrementalUpdate::Nothing {
            self.full(messages, FullReason::First);
        } else if !self.seen.matches(messages) {
            self.full(messages, FullReason::NotAppended);
        } else if messages.len() == self.seen.len {
            self.last = IncrementalUpdate::Unchanged;
            self.unchanged = self.output.len();
        } else if let Err(reason) = self.tail(messages) {
            self.full(messages, reason);
        }
        self.seen = Seen::of(messages, self.boundary.map(|b| b.input));
        &self.output
    }

    /// The messages of the last update.
    pub fn messages(&self) -> &Messages {
        &self.output
    }

    /// How the last update was computed.
    pub fn last_update(&self) -> &IncrementalUpdate {
        &self.last
    }

    /// How many leading messages of the last update's result are the update before's,
    /// unchanged: everything before the boundary after a tail update (less any prefix message
    /// whose oldest media the cap replaced), everything when the array was the one seen last,
    /// none after a full normalization. A caller deriving something per message (sizes,
    /// hashes) can keep what it derived for these and redo only the rest.
    pub fn unchanged_prefix(&self) -> usize {
        self.unchanged
    }

    /// Forgets everything: the next update normalizes the whole array. Needed after an edit
    /// that changes a message in place and keeps every id (see the module documentation).
    pub fn reset(&mut self) {
        *self = Normalizer::new(self.options.clone());
    }

    /// Normalizes everything and picks a boundary.
    fn full(&mut self, messages: &[Message], reason: FullReason) {
        let run = Run::new(messages, 0, &self.options);
        self.prefix = Prefix::default();
        self.boundary = None;
        self.output = Messages::new();
        self.last = IncrementalUpdate::Full { reason };
        self.unchanged = 0;
        self.splice(
            messages,
            run,
            Boundary {
                input: 0,
                output: 0,
            },
        );
    }

    /// Normalizes the tail from the boundary, or says why it cannot.
    fn tail(&mut self, messages: &[Message]) -> Result<(), FullReason> {
        let boundary = self.boundary.ok_or(FullReason::NoBoundary)?;
        let tail = messages
            .get(boundary.input..)
            .ok_or(FullReason::NotAppended)?;
        self.check_tail_messages(tail)?;
        // The old tail's output goes first: the run's allocations then reuse its memory,
        // still in cache, instead of cold memory from a heap as large as the history. (On a
        // fall back, `full` replaces the whole output anyway.)
        self.output.truncate(boundary.output);
        let prefix_media = self.prefix.media.len();
        let run = Run::new(messages, boundary.input, &self.options);
        let begins = run.origins.first() == Some(&Some(boundary.input))
            && run
                .messages
                .first()
                .is_some_and(|m| m.role == Role::Assistant);
        if !begins {
            return Err(FullReason::BoundaryLost);
        }
        if run
            .messages
            .iter()
            .flat_map(tool_use_ids)
            .any(|id| self.prefix.tool_ids.contains(&hash_id(id)))
        {
            return Err(FullReason::DuplicateToolUseAcrossBoundary);
        }
        let excess = (prefix_media + run.media.len()).saturating_sub(self.options.media_limit);
        let prefix_excess = excess.min(prefix_media);
        if prefix_excess < self.prefix.media_dropped {
            return Err(FullReason::MediaCapReceded);
        }
        if prefix_excess > self.prefix.media_dropped && !self.prefix.media_tracked {
            return Err(FullReason::MediaUntracked);
        }
        let mut unchanged = boundary.output;
        for location in self.prefix.media[self.prefix.media_dropped..prefix_excess]
            .iter()
            .flatten()
        {
            unchanged = unchanged.min(location.message);
            omit_media(&mut self.output, location);
        }
        self.unchanged = unchanged;
        self.prefix.media_dropped = prefix_excess;
        self.last = IncrementalUpdate::Tail {
            from: boundary.input,
            messages: tail.len(),
        };
        self.splice(messages, run, boundary);
        Ok(())
    }

    /// The checks on the tail's input that the batch pipeline's global decisions need.
    fn check_tail_messages(&self, tail: &[Message]) -> Result<(), FullReason> {
        let mut tail_ids: Option<HashSet<&str>> = None;
        for message in tail {
            let id = hash_id(message.id().as_str());
            if self.prefix.message_ids.contains(&id) || self.prefix.retracted.contains(&id) {
                return Err(FullReason::ReplayAcrossBoundary);
            }
            if let Message::Tombstone(tombstone) = message
                && !tail_ids
                    .get_or_insert_with(|| tail.iter().map(|m| m.id().as_str()).collect())
                    .contains(tombstone.retracts.as_str())
            {
                return Err(FullReason::RetractionAcrossBoundary);
            }
        }
        Ok(())
    }

    /// Puts `run` (the output for `messages[from.input..]`) at `from.output`, then moves the
    /// boundary to the latest assistant output message that is not thinking-only and does not
    /// begin with a carried server tool result.
    fn splice(&mut self, messages: &[Message], run: Run, from: Boundary) {
        self.output.truncate(from.output);
        let next = run
            .messages
            .iter()
            .zip(&run.origins)
            .enumerate()
            .rev()
            .find_map(|(j, (message, origin))| {
                let origin = (*origin)?;
                (message.role == Role::Assistant
                    && !is_thinking_only(message)
                    && !begins_with_server_result(message))
                .then_some((j, origin))
            });
        let Run {
            messages: run_messages,
            media,
            capped,
            tracked,
            ..
        } = run;
        if let Some((j, input)) = next {
            let region = messages.get(from.input..input).unwrap_or_default();
            for message in region {
                self.prefix
                    .message_ids
                    .insert(hash_id(message.id().as_str()));
                if let Message::Tombstone(tombstone) = message {
                    self.prefix
                        .retracted
                        .insert(hash_id(tombstone.retracts.as_str()));
                }
            }
            for message in &run_messages[..j] {
                for id in tool_use_ids(message) {
                    self.prefix.tool_ids.insert(hash_id(id));
                }
            }
            // The region's media come first in the run (drafts keep their order), each in the
            // region's output; the oldest `capped` of the run were replaced by the cap.
            let region_media = media.iter().take_while(|m| m.origin < input).count();
            let misplaced = media.iter().enumerate().any(|(k, m)| {
                let in_region = k < region_media;
                (m.origin < input) != in_region
                    || m.at
                        .as_ref()
                        .is_some_and(|at| (at.message < j) != in_region)
            });
            self.prefix.media_tracked &= tracked && !misplaced;
            self.prefix.media_dropped += capped.min(region_media);
            self.prefix
                .media
                .extend(media.into_iter().take(region_media).map(|m| {
                    m.at.map(|at| Location {
                        message: at.message + from.output,
                        path: at.path,
                    })
                }));
            self.boundary = Some(Boundary {
                input,
                output: from.output + j,
            });
        }
        // Without a candidate the boundary stays where it was (`from`, or none after a full
        // normalization).
        self.output.extend(run_messages);
    }
}

impl Seen {
    /// How far back from the last message the ids are checked: 1, 2, 4, … up to this.
    const MAX_BACK: usize = 64;

    /// The length of `messages` and the ids at: the first message, `boundary`, the last one
    /// and 1, 2, 4, … [`Self::MAX_BACK`] before it. A constant number of places, near the end
    /// (where edits happen and memory is warm), so the check costs the same at any length.
    fn of(messages: &[Message], boundary: Option<usize>) -> Self {
        let len = messages.len();
        // The first, the boundary, the last and 1, 2, 4, … 64 before it.
        let mut places: Vec<usize> = Vec::with_capacity(3 + Self::MAX_BACK.ilog2() as usize + 1);
        if len > 0 {
            places.push(0);
            places.extend(boundary);
            let last = len - 1;
            let mut back = 0usize;
            while back <= last && back <= Self::MAX_BACK {
                places.push(last - back);
                back = if back == 0 { 1 } else { back * 2 };
            }
        }
        places.sort_unstable();
        places.dedup();
        let mut checkpoints = Vec::with_capacity(places.len());
        checkpoints.extend(
            places
                .into_iter()
                .filter_map(|n| messages.get(n).map(|m| (n, hash_id(m.id().as_str())))),
        );
        Seen { len, checkpoints }
    }

    /// Whether `messages` may be the array seen, with messages appended.
    fn matches(&self, messages: &[Message]) -> bool {
        messages.len() >= self.len
            && self.checkpoints.iter().all(|(n, id)| {
                messages
                    .get(*n)
                    .is_some_and(|m| hash_id(m.id().as_str()) == *id)
            })
    }
}

/// A media block of a run, in the order the cap counts them.
#[derive(Debug)]
struct RunMedia {
    /// The input index of the message its draft came from.
    origin: usize,
    /// Where it is in the run's output; `None` when the cap replaced it or pairing removed it.
    at: Option<Location>,
}

/// One pass of the pipeline over `messages[start..]`: output messages with their origins,
/// media tracked. The cap drops the tail's own media only when they alone exceed the limit
/// (the batch cap drops the oldest first, so the prefix's go before any of the tail's).
struct Run {
    messages: Vec<MessageParam>,
    /// The input index of the message each output message began with (`None` for messages
    /// the pipeline made up).
    origins: Vec<Option<usize>>,
    /// The run's media when the cap ran, oldest first.
    media: Vec<RunMedia>,
    /// How many of `media` (the oldest) the cap replaced.
    capped: usize,
    /// Whether every media block was found once, and only once, in the output.
    tracked: bool,
}

/// The key under which a media block carries its sequence number through the last pass.
const MEDIA_TAG: &str = "\u{0}threadline-normalize-media";

impl Run {
    /// The pipeline of [`crate::pipeline`] over `messages[start..]`, media tagged on the way.
    fn new(messages: &[Message], start: usize, options: &Options) -> Run {
        let tail = messages.get(start..).unwrap_or_default();
        let mut report = Report::default();
        let mut media = Vec::new();
        let mut drafts = run_drafts(tail, options, &mut report, start == 0, |drafts| {
            for draft in drafts {
                let origin = start + draft.origin.unwrap_or(0);
                tag_media(&mut draft.blocks, origin, &mut media);
            }
        });
        let capped = media.len().saturating_sub(options.media_limit);
        let mut tracked = true;
        let mut path = Vec::new();
        for (n, draft) in drafts.iter_mut().enumerate() {
            untag_media(&mut draft.blocks, n, &mut path, &mut media, &mut tracked);
        }
        let origins = drafts.iter().map(|d| d.origin.map(|o| start + o)).collect();
        Run {
            messages: drafts.into_iter().map(Draft::into_param).collect(),
            origins,
            media,
            capped,
            tracked,
        }
    }
}

/// The `extra` map of a media block.
fn media_extra(block: &mut ContentBlock) -> Option<&mut threadline_wire::Extra> {
    match block {
        ContentBlock::Image(image) => Some(&mut image.extra),
        ContentBlock::Document(document) => Some(&mut document.extra),
        _ => None,
    }
}

/// Tags the media of `blocks` (nested ones in `tool_result` content included, in the order
/// the cap counts them) with their sequence numbers.
fn tag_media(blocks: &mut [ContentBlock], origin: usize, media: &mut Vec<RunMedia>) {
    for block in blocks {
        if is_media(block) {
            if let Some(extra) = media_extra(block) {
                extra.insert(MEDIA_TAG.to_owned(), media.len().into());
            }
            media.push(RunMedia { origin, at: None });
        } else if let ContentBlock::ToolResult(result) = block
            && let Some(Content::Blocks(nested)) = &mut result.content
        {
            tag_media(nested, origin, media);
        }
    }
}

/// Removes the tags from the media of `blocks` (output message `message`), recording where
/// each ended up; `tracked` turns false if a tag is unknown or found twice.
fn untag_media(
    blocks: &mut [ContentBlock],
    message: usize,
    path: &mut Vec<usize>,
    media: &mut [RunMedia],
    tracked: &mut bool,
) {
    for (k, block) in blocks.iter_mut().enumerate() {
        path.push(k);
        if let Some(extra) = media_extra(block) {
            if let Some(tag) = extra.remove(MEDIA_TAG) {
                let slot = tag
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .and_then(|n| media.get_mut(n));
                match slot {
                    Some(slot) if slot.at.is_none() => {
                        slot.at = Some(Location {
                            message,
                            path: path.clone(),
                        });
                    }
                    _ => *tracked = false,
                }
            }
        } else if let ContentBlock::ToolResult(result) = block
            && let Some(Content::Blocks(nested)) = &mut result.content
        {
            untag_media(nested, message, path, media, tracked);
        }
        path.pop();
    }
}

/// Replaces the media block at `location` by [`MEDIA_OMITTED`], as the cap does.
fn omit_media(output: &mut Messages, location: &Location) {
    let Some(Content::Blocks(blocks)) = output.get_mut(location.message).map(|m| &mut m.content)
    else {
        return;
    };
    let mut blocks = blocks;
    let Some((last, outer)) = location.path.split_last() else {
        return;
    };
    for &k in outer {
        let Some(ContentBlock::ToolResult(result)) = blocks.get_mut(k) else {
            return;
        };
        let Some(Content::Blocks(nested)) = &mut result.content else {
            return;
        };
        blocks = nested;
    }
    if let Some(block) = blocks.get_mut(*last) {
        *block = ContentBlock::text(MEDIA_OMITTED);
    }
}

/// The tool use ids (client, server, MCP) of a message.
fn tool_use_ids(message: &MessageParam) -> impl Iterator<Item = &str> {
    let blocks: &[ContentBlock] = match &message.content {
        Content::Blocks(blocks) => blocks,
        Content::Text(_) => &[],
    };
    blocks.iter().filter_map(|block| match block {
        ContentBlock::ToolUse(u) => Some(u.id.as_str()),
        ContentBlock::ServerToolUse(u) | ContentBlock::McpToolUse(u) => Some(u.id.as_str()),
        _ => None,
    })
}

/// Whether an output message begins with a server tool result: the answer to a call carried
/// from an earlier message (tool search beside a client tool), whose pairing the tail could
/// not see if the boundary were here.
fn begins_with_server_result(message: &MessageParam) -> bool {
    match &message.content {
        Content::Blocks(blocks) => blocks
            .first()
            .is_some_and(|b| crate::draft::server_result_id(b).is_some()),
        Content::Text(_) => false,
    }
}

/// Whether an output message holds only thinking (it could be dropped as orphaned thinking
/// once it is no longer the latest assistant message).
fn is_thinking_only(message: &MessageParam) -> bool {
    match &message.content {
        Content::Blocks(blocks) => blocks.iter().all(ContentBlock::is_thinking),
        Content::Text(_) => false,
    }
}

/// A fixed 64-bit FNV-1a hash of an id. The sets of hashes only decide whether to fall back:
/// a collision costs a full normalization, never a wrong result.
fn hash_id(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize;
    use crate::testing::*;

    fn check(normalizer: &mut Normalizer, messages: &[Message]) {
        let expected = normalize(messages, normalizer.options()).messages;
        assert_eq!(normalizer.update(messages), expected.as_slice());
    }

    #[test]
    fn growth_takes_the_tail_path_and_equals_batch() {
        let mut session = vec![user("q0")];
        let mut normalizer = Normalizer::new(Options::default());
        check(&mut normalizer, &session);
        assert_eq!(
            normalizer.last_update(),
            &IncrementalUpdate::Full {
                reason: FullReason::First
            }
        );
        for turn in 0..20 {
            let first = turn == 0;
            let id = format!("toolu_{turn}");
            session.push(frag(
                &format!("msg_{turn}"),
                vec![text("look"), tool_use(&id)],
            ));
            session.push(results(&[&id]));
            session.push(reminder("context"));
            session.push(asst_text("done"));
            session.push(user(&format!("q{}", turn + 1)));
            check(&mut normalizer, &session);
            assert!(
                first
                    || matches!(normalizer.last_update(), IncrementalUpdate::Tail { messages, .. } if *messages <= 7),
                "{:?}",
                normalizer.last_update()
            );
        }
        check(&mut normalizer, &session);
        assert_eq!(normalizer.last_update(), &IncrementalUpdate::Unchanged);
    }

    #[test]
    fn a_server_call_carried_across_a_client_tool_round_equals_batch_turn_by_turn() {
        // Tool search beside a client tool: the next response begins with the search's
        // result. Every step of the session normalizes as the batch pipeline does.
        let options = Options::default().with_resume_paused_turn(true);
        let mut normalizer = Normalizer::new(options);
        let mut session = vec![user("q0")];
        check(&mut normalizer, &session);
        let steps = [
            frag(
                "msg_1",
                vec![text("look"), tool_use("toolu_1"), server_use("srvtoolu_1")],
            ),
            results(&["toolu_1"]),
            frag(
                "msg_2",
                vec![
                    server_result("srvtoolu_1"),
                    text("found"),
                    tool_use("toolu_2"),
                ],
            ),
            results(&["toolu_2"]),
            frag("msg_3", vec![text("done")]),
            user("q1"),
            frag("msg_4", vec![text("again")]),
        ];
        for step in steps {
            session.push(step);
            check(&mut normalizer, &session);
        }
        let out = normalize(&session, normalizer.options()).messages;
        let srv = |m: &MessageParam| match &m.content {
            Content::Blocks(b) => b
                .iter()
                .filter(|b| {
                    crate::draft::server_result_id(b).is_some()
                        || matches!(b, ContentBlock::ServerToolUse(_))
                })
                .count(),
            Content::Text(_) => 0,
        };
        assert_eq!(
            out.iter().map(srv).collect::<Vec<_>>(),
            [0, 1, 0, 1, 0, 0, 0, 0]
        );
    }

    #[test]
    fn edits_fall_back_to_a_full_normalization() {
        let mut session = vec![user("q0"), asst_text("a0"), user("q1"), asst_text("a1")];
        let mut normalizer = Normalizer::new(Options::default());
        check(&mut normalizer, &session);
        session.remove(1);
        check(&mut normalizer, &session);
        assert_eq!(
            normalizer.last_update(),
            &IncrementalUpdate::Full {
                reason: FullReason::NotAppended
            }
        );
    }

    #[test]
    fn a_replay_across_the_boundary_falls_back() {
        let first = with_id(user("q0"), "u0");
        let mut session = vec![first.clone(), asst_text("a0"), user("q1"), asst_text("a1")];
        let mut normalizer = Normalizer::new(Options::default());
        check(&mut normalizer, &session);
        session.push(first);
        check(&mut normalizer, &session);
        assert_eq!(
            normalizer.last_update(),
            &IncrementalUpdate::Full {
                reason: FullReason::ReplayAcrossBoundary
            }
        );
    }

    #[test]
    fn a_paused_turn_is_resumed_as_is_and_dropped_once_the_user_writes() {
        let options = Options::default().with_resume_paused_turn(true);
        let mut normalizer = Normalizer::new(options.clone());
        let mut session = vec![user("q0"), asst_text("a0"), user("search it")];
        check(&mut normalizer, &session);
        session.push(asst(vec![
            text("Searching."),
            server_use("srvtoolu_a"),
            server_result("srvtoolu_a"),
            server_use("srvtoolu_b"),
        ]));
        check(&mut normalizer, &session);
        let out = normalizer.messages().to_vec();
        let last = out.last().expect("messages");
        assert_eq!(last.role, Role::Assistant);
        assert_eq!(tool_use_ids(last).last(), Some("srvtoolu_b"));
        // What the API accepts while the request still defines the server tool.
        let mut request = threadline_wire::MessagesRequest::new("claude-sonnet-4-5", 1024, out);
        request.tools = Some(vec![
            serde_json::from_value(
                serde_json::json!({"type": "web_search_20250305", "name": "web_search"}),
            )
            .expect("a server tool"),
        ]);
        let model = threadline_wire::model::ModelTable::builtin()
            .resolve("claude-sonnet-4-5")
            .model();
        assert_eq!(threadline_validate::validate(&request, model), []);
        // The user writes instead of resuming: the pending call goes, in both paths.
        session.push(user("never mind"));
        check(&mut normalizer, &session);
        let ids: Vec<&str> = normalizer
            .messages()
            .iter()
            .flat_map(tool_use_ids)
            .collect();
        assert_eq!(ids, ["srvtoolu_a"]);
        session.push(asst_text("OK."));
        check(&mut normalizer, &session);
    }

    #[test]
    fn the_media_cap_reaches_back_into_the_prefix() {
        let options = Options::default().with_media_limit(3);
        let mut normalizer = Normalizer::new(options.clone());
        let mut session = vec![user_blocks(vec![text("look"), image(), image()])];
        for turn in 0..6 {
            session.push(asst_text(&format!("a{turn}")));
            session.push(user_blocks(vec![text("and this"), image()]));
            check(&mut normalizer, &session);
        }
        assert!(matches!(
            normalizer.last_update(),
            IncrementalUpdate::Tail { .. }
        ));
    }
}
