//! Cache-break detection: where a request stopped matching what the previous one cached, and
//! why.
//!
//! [`diff`] compares two consecutive requests structurally: the first piece (in `tools` →
//! `system` → `messages` order, up to the previous request's last marker) whose prefix differs,
//! and the cause — a changed model, tool set, `tool_choice`, system block, thinking setting, or
//! a message rewritten or removed above the last marker. The [`crate::Simulator`] adds the
//! causes only time and the API's limits explain: the entry expired, it was out of the 20-block
//! lookback, or it was below the model's minimum cacheable length.

use std::fmt;

use threadline_wire::MessagesRequest;
use threadline_wire::diagnostics::{CacheDiagnosis, PromptPart};

use crate::prefix::{Location, Prefix, UnseenPrefix};
use crate::tokens::Estimate;

/// Why a request did not read what the previous one cached.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum BreakCause {
    /// The model changed (caches are per model).
    ModelChanged,
    /// A tool definition was added, removed or changed.
    ToolsChanged {
        /// The first tool that differs (its name in the new request, if it has one there).
        name: Option<String>,
    },
    /// `tool_choice` changed (invalidates system and messages).
    ToolChoiceChanged,
    /// A system block changed.
    SystemChanged,
    /// The thinking or effort setting changed (invalidates messages).
    ThinkingChanged,
    /// A message block above the previous request's last marker was rewritten.
    MessageRewritten,
    /// A new user turn began and the model drops earlier turns' thinking from the prompt
    /// (models that do not keep prior thinking): everything from the first such block on
    /// changed.
    PriorThinkingStripped,
    /// The new request is shorter than the previous one's cached prefix (messages removed).
    MessagesRemoved,
    /// The cached entry expired: the request came after the entry's lifetime.
    TtlExpired {
        /// Milliseconds since the previous request.
        idle_ms: u64,
    },
    /// The previous write was more than 20 blocks before every marker of this request.
    LookbackExceeded {
        /// Blocks between the previous write and the nearest marker after it.
        blocks: usize,
    },
    /// The prefix was shorter than the model's minimum cacheable length, so nothing was
    /// written.
    BelowMinimum {
        /// The prefix's tokens.
        tokens: u64,
        /// The model's minimum.
        minimum: u64,
    },
    /// The request has no marker at all.
    NoMarker,
    /// The agent re-rendered its tool set or the dynamic part of its system prompt (what
    /// follows the part shared across sessions), as a local command recorded: `/mcp`
    /// reconnecting a server. Everything after the shared part is new.
    PrefixReloaded {
        /// The command and what it printed (`/mcp: Reconnected to tidewave.`).
        by: String,
    },
}

impl fmt::Display for BreakCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakCause::ModelChanged => f.write_str("the model changed"),
            BreakCause::ToolsChanged { name: Some(name) } => write!(f, "tools changed (`{name}`)"),
            BreakCause::ToolsChanged { name: None } => f.write_str("tools changed"),
            BreakCause::ToolChoiceChanged => f.write_str("tool_choice changed"),
            BreakCause::SystemChanged => f.write_str("system prompt changed"),
            BreakCause::ThinkingChanged => f.write_str("thinking or effort setting changed"),
            BreakCause::MessageRewritten => {
                f.write_str("a message above the last marker was rewritten")
            }
            BreakCause::PriorThinkingStripped => f.write_str(
                "a new user turn: the model drops earlier thinking blocks from the prompt",
            ),
            BreakCause::MessagesRemoved => {
                f.write_str("messages above the last marker were removed")
            }
            BreakCause::TtlExpired { idle_ms } => {
                write!(
                    f,
                    "cache entry expired ({}s since the previous request)",
                    idle_ms / 1000
                )
            }
            BreakCause::LookbackExceeded { blocks } => write!(
                f,
                "previous write is {blocks} blocks before the nearest marker (lookback is 20)"
            ),
            BreakCause::BelowMinimum { tokens, minimum } => write!(
                f,
                "prefix of {tokens} tokens is below the model's minimum of {minimum}"
            ),
            BreakCause::NoMarker => f.write_str("the request has no cache marker"),
            BreakCause::PrefixReloaded { by } => write!(
                f,
                "tools or the dynamic system prompt re-rendered after the cross-session prefix ({by})"
            ),
        }
    }
}

impl BreakCause {
    /// The part of the request this cause names, at the level the API's cache diagnostics
    /// report (`model_changed`, `system_changed`, `tools_changed`, `messages_changed`; a
    /// changed `tool_choice` or thinking setting is [`PromptPart::Other`], which the API
    /// answers `unavailable`). `None` for causes that are not a change in the request's
    /// structure (expiry, lookback, minimum, no marker, earlier thinking the API strips).
    pub fn prompt_part(&self) -> Option<PromptPart> {
        match self {
            BreakCause::ModelChanged => Some(PromptPart::Model),
            BreakCause::ToolsChanged { .. } => Some(PromptPart::Tools),
            BreakCause::SystemChanged | BreakCause::PrefixReloaded { .. } => {
                Some(PromptPart::System)
            }
            BreakCause::ToolChoiceChanged | BreakCause::ThinkingChanged => Some(PromptPart::Other),
            BreakCause::MessageRewritten | BreakCause::MessagesRemoved => {
                Some(PromptPart::Messages)
            }
            BreakCause::PriorThinkingStripped
            | BreakCause::TtlExpired { .. }
            | BreakCause::LookbackExceeded { .. }
            | BreakCause::BelowMinimum { .. }
            | BreakCause::NoMarker => None,
        }
    }
}

/// A cache break.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CacheBreak {
    /// The first piece that differs, when the break is a change (none for expiry and limits).
    pub location: Option<Location>,
    /// Why.
    #[serde(flatten)]
    pub cause: BreakCause,
}

impl CacheBreak {
    /// This break with `announced` as its cause, when the caller announced a change (a
    /// reloaded prefix, a new model) since the last request and the break is at a located
    /// difference other than removed messages: the announced change made it. Both simulators
    /// report a break after an announcement this way.
    pub(crate) fn attributed(self, announced: Option<BreakCause>) -> CacheBreak {
        match (announced, self.location) {
            (Some(cause), Some(location)) if self.cause != BreakCause::MessagesRemoved => {
                CacheBreak {
                    location: Some(location),
                    cause,
                }
            }
            _ => self,
        }
    }
}

impl fmt::Display for CacheBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(location) => write!(f, "{location}: {}", self.cause),
            None => write!(f, "{}", self.cause),
        }
    }
}

/// The first piece, up to and including `upto` of `previous`, whose prefix differs in `next`,
/// and why; `None` when `next` starts with all of it.
pub fn first_difference(
    previous: &Prefix,
    next: &Prefix,
    upto: usize,
    next_request: Option<&MessagesRequest>,
) -> Option<CacheBreak> {
    for i in 0..=upto.min(previous.pieces.len().saturating_sub(1)) {
        let old = &previous.pieces[i];
        let Some(new) = next.pieces.get(i) else {
            return Some(CacheBreak {
                location: Some(old.location),
                cause: BreakCause::MessagesRemoved,
            });
        };
        if old.prefix_hash == new.prefix_hash {
            continue;
        }
        let same_piece = old.own_hash == new.own_hash && old.location == new.location;
        let first_of_section = |p: &Prefix, pred: fn(&Location) -> bool| {
            p.pieces.iter().position(|q| pred(&q.location)) == Some(i)
        };
        let cause = if old.thinking && !new.thinking && old.own_hash != new.own_hash {
            BreakCause::PriorThinkingStripped
        } else if same_piece && i == 0 {
            BreakCause::ModelChanged
        } else if same_piece && first_of_section(next, |l| matches!(l, Location::System { .. })) {
            BreakCause::ToolChoiceChanged
        } else if same_piece && first_of_section(next, |l| matches!(l, Location::Message { .. })) {
            BreakCause::ThinkingChanged
        } else {
            match (old.location, new.location) {
                (Location::Tool { .. }, _) | (_, Location::Tool { .. }) => {
                    let name = match new.location {
                        Location::Tool { index } => next_request
                            .and_then(|r| r.tools.as_ref())
                            .and_then(|t| t.get(index))
                            .map(|t| t.name().to_owned()),
                        _ => None,
                    };
                    BreakCause::ToolsChanged { name }
                }
                (Location::System { .. }, _) | (_, Location::System { .. }) => {
                    BreakCause::SystemChanged
                }
                (Location::Unseen { .. }, _) => BreakCause::SystemChanged,
                _ => BreakCause::MessageRewritten,
            }
        };
        return Some(CacheBreak {
            location: Some(new.location),
            cause,
        });
    }
    None
}

/// Compares two consecutive requests: the first block of `previous`, up to its last marker,
/// that `next` does not repeat, and why. `None` when `next` extends everything `previous`
/// cached (or `previous` has no marker).
///
/// ```
/// use threadline_cache::breaks::{diff, BreakCause};
/// use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
///
/// let mut first = MessagesRequest::new("claude-sonnet-4-6", 1024, vec![
///     MessageParam::user(vec![ContentBlock::text("Summarize the report.")]),
/// ]);
/// first.cache_control = Some(Box::new(threadline_wire::CacheControl::ephemeral()));
/// let mut second = first.clone();
/// second.messages[0] = MessageParam::user(vec![ContentBlock::text("Summarize the reports.")]);
/// let found = diff(&first, &second).expect("a break");
/// assert_eq!(found.cause, BreakCause::MessageRewritten);
/// assert_eq!(found.to_string(), "messages.0.content.0: a message above the last marker was rewritten");
/// ```
pub fn diff(previous: &MessagesRequest, next: &MessagesRequest) -> Option<CacheBreak> {
    let old = Prefix::of(previous, &Estimate, UnseenPrefix::default());
    let new = Prefix::of(next, &Estimate, UnseenPrefix::default());
    let last = old.breakpoints().last()?.0;
    first_difference(&old, &new, last, Some(next))
}

/// The first piece of `previous` (all of it, markers or not) that `next` does not repeat, and
/// why: what the API's cache diagnostics compare (request structure, the earliest divergence;
/// appending is not a change). `None` when `next` starts with the whole of `previous`.
pub fn divergence(previous: &MessagesRequest, next: &MessagesRequest) -> Option<CacheBreak> {
    let old = Prefix::of(previous, &Estimate, UnseenPrefix::default());
    let new = Prefix::of(next, &Estimate, UnseenPrefix::default());
    divergence_of(&old, &new, next)
}

fn divergence_of(old: &Prefix, new: &Prefix, next: &MessagesRequest) -> Option<CacheBreak> {
    if old.pieces.is_empty() {
        // Nothing to diverge from but the model (an empty request: no tools, system or
        // messages).
        return None;
    }
    first_difference(old, new, old.pieces.len() - 1, Some(next))
}

/// [`divergence`] along a session: remembers the last request it saw (its prefix only).
#[derive(Debug, Clone, Default)]
pub struct RequestDivergence {
    previous: Option<Prefix>,
    /// The previous request's messages as flattened, reused for those the next one repeats.
    memo: crate::memo::PrefixMemo,
}

impl RequestDivergence {
    /// A detector that has seen no request.
    pub fn new() -> Self {
        RequestDivergence::default()
    }

    /// Sees `request` (the one about to be sent): `None` when it is the first one seen,
    /// else `Some` of its divergence from the previous one (`Some(None)`: none).
    pub fn observe(&mut self, request: &MessagesRequest) -> Option<Option<CacheBreak>> {
        let new = Prefix::of_in_memoized(
            request,
            &Estimate,
            UnseenPrefix::default(),
            threadline_wire::model::ModelTable::builtin(),
            &mut self.memo,
        );
        let found = self
            .previous
            .as_ref()
            .map(|old| divergence_of(old, &new, request));
        if let Some(old) = self.previous.replace(new) {
            self.memo.recycle(old);
        }
        found
    }
}

/// A view of where a request diverges from the previous one: the query loop's break
/// detector's, or a simulator's ([`Prediction::of_break`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Prediction {
    /// Nothing to compare with: no detector, or the first request it saw.
    Unknown,
    /// The request repeats the previous one (it may append to it).
    NoDivergence,
    /// The request first diverges in this part.
    Changed(PromptPart),
}

impl Prediction {
    /// The prediction a simulated step's break makes: the part of the request it names
    /// ([`BreakCause::prompt_part`]), else no divergence (no break, or one that is no change
    /// in the request's structure).
    pub fn of_break(found: Option<&CacheBreak>) -> Prediction {
        match found.and_then(|b| b.cause.prompt_part()) {
            Some(part) => Prediction::Changed(part),
            None => Prediction::NoDivergence,
        }
    }

    /// As the transcript records it: `None` for `Unknown`, `none`, or the part's name.
    pub fn as_record(self) -> Option<&'static str> {
        match self {
            Prediction::Unknown => None,
            Prediction::NoDivergence => Some("none"),
            Prediction::Changed(part) => Some(part.as_str()),
        }
    }
}

/// Whether the API's diagnosis and a [`Prediction`] agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Agreement {
    /// Both name the same part, or both saw no divergence.
    Agrees,
    /// They differ: the API names another part, or a change the loop did not see, or none
    /// where the loop saw one.
    Disagrees,
    /// Nothing to compare: pending, `unavailable`, `previous_message_not_found`, a reason
    /// this version does not know, or no prediction.
    Inconclusive,
}

impl Agreement {
    /// Compares a response's diagnosis with the prediction for its request.
    pub fn of(reason: &CacheDiagnosis, predicted: Prediction) -> Agreement {
        if predicted == Prediction::Unknown {
            return Agreement::Inconclusive;
        }
        let api = match reason {
            CacheDiagnosis::NoDivergence => Prediction::NoDivergence,
            CacheDiagnosis::Miss(reason) => match reason.part() {
                Some(part) => Prediction::Changed(part),
                None => return Agreement::Inconclusive,
            },
            _ => return Agreement::Inconclusive,
        };
        if api == predicted {
            Agreement::Agrees
        } else {
            Agreement::Disagrees
        }
    }

    /// `agrees`, `disagrees` or `inconclusive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Agreement::Agrees => "agrees",
            Agreement::Disagrees => "disagrees",
            Agreement::Inconclusive => "inconclusive",
        }
    }
}

#[cfg(test)]
mod tests {
    use threadline_wire::diagnostics::CacheMissReason;

    use super::*;

    #[test]
    fn pending_unavailable_and_unknown_are_never_disagreements() {
        let system = Prediction::Changed(PromptPart::System);
        let miss = |kind| CacheDiagnosis::Miss(CacheMissReason::changed(kind, Some(1)));
        assert_eq!(
            Agreement::of(&miss("system_changed"), system),
            Agreement::Agrees
        );
        assert_eq!(
            Agreement::of(&miss("tools_changed"), system),
            Agreement::Disagrees
        );
        assert_eq!(
            Agreement::of(&CacheDiagnosis::NoDivergence, Prediction::NoDivergence),
            Agreement::Agrees
        );
        assert_eq!(
            Agreement::of(&CacheDiagnosis::NoDivergence, system),
            Agreement::Disagrees
        );
        assert_eq!(
            Agreement::of(&miss("messages_changed"), Prediction::NoDivergence),
            Agreement::Disagrees
        );
        for reason in [
            CacheDiagnosis::Pending,
            CacheDiagnosis::Absent,
            CacheDiagnosis::Miss(CacheMissReason::unavailable()),
            CacheDiagnosis::Miss(CacheMissReason::previous_message_not_found()),
            miss("weather_changed"),
        ] {
            assert_eq!(Agreement::of(&reason, system), Agreement::Inconclusive);
        }
        assert_eq!(
            Agreement::of(&miss("system_changed"), Prediction::Unknown),
            Agreement::Inconclusive
        );
    }
}
