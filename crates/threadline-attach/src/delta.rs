//! Delta announcements: tell the model only what changed in a set it must know about (the
//! deferred tools, the agents, the MCP servers' instructions), derived from history alone.
//!
//! What the model has been told is rebuilt on every turn by scanning the history since the
//! last compaction for earlier announcements of the same set (additions add, removals
//! remove). Comparing that with the current set gives the announcement: only the difference,
//! nothing when there is none, `initial` on the first one. There is no state to keep in sync:
//! after a compaction the scan finds nothing and the whole set is announced again. The tool
//! descriptions stay static, so a change in the set never invalidates the cached prefix.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use threadline_message::{Attachment, DeltaAnnouncement, DeltaItem, Message};

use crate::history::attachments_since_last_compaction;
use crate::source::{Phase, Source, SourceContext, SourceFuture, SourceOutput};

/// The set of tools whose schemas are loaded on demand.
pub const DEFERRED_TOOLS: &str = "deferred_tools";
/// The set of sub-agents the model may start.
pub const AGENT_LISTING: &str = "agent_listing";
/// The set of MCP servers' instructions.
pub const MCP_INSTRUCTIONS: &str = "mcp_instructions";

/// What the model has been told about `set`: the names announced since the last compaction
/// (additions add, removals remove), and whether any announcement of `set` was found.
pub fn told(history: &[Message], set: &str) -> (BTreeSet<String>, bool) {
    let mut names = BTreeSet::new();
    let mut any = false;
    for attachment in attachments_since_last_compaction(history) {
        let Attachment::Delta(delta) = attachment else {
            continue;
        };
        if delta.set != set {
            continue;
        }
        any = true;
        for item in &delta.added {
            names.insert(item.name.clone());
        }
        for name in &delta.removed {
            names.remove(name);
        }
    }
    (names, any)
}

/// What the model has been told about `set`, with the last description announced for each
/// name (additions add or replace, removals remove).
pub fn told_descriptions(history: &[Message], set: &str) -> BTreeMap<String, String> {
    let mut told = BTreeMap::new();
    for attachment in attachments_since_last_compaction(history) {
        let Attachment::Delta(delta) = attachment else {
            continue;
        };
        if delta.set != set {
            continue;
        }
        for item in &delta.added {
            told.insert(item.name.clone(), item.description.clone());
        }
        for name in &delta.removed {
            told.remove(name);
        }
    }
    told
}

/// Like [`announcement`], and a known name whose description changed is announced again
/// (added with its new description): for sets whose descriptions are the content, such as
/// an MCP server's instructions after it reconnects with different ones.
pub fn announcement_with_descriptions(
    set: &str,
    history: &[Message],
    current: &[DeltaItem],
) -> Option<DeltaAnnouncement> {
    let mut announced = announcement(set, history, current);
    let told = told_descriptions(history, set);
    let mut now: BTreeMap<&str, &DeltaItem> = BTreeMap::new();
    for item in current {
        now.entry(item.name.as_str()).or_insert(item);
    }
    let changed: Vec<DeltaItem> = now
        .iter()
        .filter(|(name, item)| told.get(**name).is_some_and(|d| *d != item.description))
        .map(|(_, item)| (*item).clone())
        .collect();
    if changed.is_empty() {
        return announced;
    }
    let delta = announced.get_or_insert_with(|| DeltaAnnouncement {
        set: set.to_owned(),
        added: Vec::new(),
        removed: Vec::new(),
        initial: false,
    });
    delta.added.extend(changed);
    delta.added.sort_by(|a, b| a.name.cmp(&b.name));
    announced
}

/// The announcement `history` calls for when `set` is now `current`: `None` when the model
/// already knows exactly `current`.
///
/// `current` may hold a name twice (the first entry counts) and come in any order: the
/// announcement lists names sorted, so the same state always gives the same bytes. Only names
/// are compared; a changed description of a known name is not re-announced.
pub fn announcement(
    set: &str,
    history: &[Message],
    current: &[DeltaItem],
) -> Option<DeltaAnnouncement> {
    let (told, announced_before) = told(history, set);
    let mut now: BTreeMap<&str, &DeltaItem> = BTreeMap::new();
    for item in current {
        now.entry(item.name.as_str()).or_insert(item);
    }
    let added: Vec<DeltaItem> = now
        .iter()
        .filter(|(name, _)| !told.contains(**name))
        .map(|(_, item)| (*item).clone())
        .collect();
    let removed: Vec<String> = told
        .iter()
        .filter(|name| !now.contains_key(name.as_str()))
        .cloned()
        .collect();
    if added.is_empty() && removed.is_empty() {
        return None;
    }
    Some(DeltaAnnouncement {
        set: set.to_owned(),
        added,
        removed,
        initial: !announced_before,
    })
}

/// The current members of a set, asked for on every turn.
pub type CurrentSet = Arc<dyn Fn() -> Vec<DeltaItem> + Send + Sync>;

/// A [`Source`] announcing the changes of one set. Build one per set: for the three the
/// agent has, [`deferred_tools`](Self::deferred_tools), [`agent_listing`](Self::agent_listing)
/// and [`mcp_instructions`](Self::mcp_instructions); for a set of your own, [`new`](Self::new).
///
/// ```
/// use threadline_attach::DeltaSource;
/// use threadline_message::{DeltaItem, Message};
///
/// let plugins = DeltaSource::new("plugins", || vec![DeltaItem {
///     name: "lint".into(),
///     description: "runs the linter".into(),
/// }]);
/// let mut history = vec![Message::user_text("hi")];
/// let first = plugins.announcement(&history).expect("the model knows nothing yet");
/// assert!(first.initial);
/// history.push(Message::attachment(threadline_message::Attachment::Delta(first)));
/// assert_eq!(plugins.announcement(&history), None); // nothing changed
/// ```
pub struct DeltaSource {
    set: String,
    name: String,
    current: CurrentSet,
    /// Re-announce a known name whose description changed ([`announcement_with_descriptions`]).
    by_description: bool,
}

impl std::fmt::Debug for DeltaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaSource")
            .field("set", &self.set)
            .finish_non_exhaustive()
    }
}

impl DeltaSource {
    /// Announces the changes of `set`, whose members `current` gives on every turn. The
    /// source is named `{set}_delta`.
    pub fn new(
        set: impl Into<String>,
        current: impl Fn() -> Vec<DeltaItem> + Send + Sync + 'static,
    ) -> Self {
        let set = set.into();
        DeltaSource {
            name: format!("{set}_delta"),
            set,
            current: Arc::new(current),
            by_description: false,
        }
    }

    /// Deferred tools: each item a tool name (and a one-line description).
    pub fn deferred_tools(current: impl Fn() -> Vec<DeltaItem> + Send + Sync + 'static) -> Self {
        DeltaSource::new(DEFERRED_TOOLS, current)
    }

    /// The agent listing: each item an agent type and what it is for.
    pub fn agent_listing(current: impl Fn() -> Vec<DeltaItem> + Send + Sync + 'static) -> Self {
        DeltaSource::new(AGENT_LISTING, current)
    }

    /// MCP instructions: each item a server name and its instructions; a server whose
    /// instructions changed (it reconnected with different ones) is announced again.
    pub fn mcp_instructions(current: impl Fn() -> Vec<DeltaItem> + Send + Sync + 'static) -> Self {
        let mut source = DeltaSource::new(MCP_INSTRUCTIONS, current);
        source.by_description = true;
        source
    }

    /// The set announced.
    pub fn set(&self) -> &str {
        &self.set
    }

    /// The announcement `history` calls for now (see [`announcement`]).
    pub fn announcement(&self, history: &[Message]) -> Option<DeltaAnnouncement> {
        if self.by_description {
            announcement_with_descriptions(&self.set, history, &(self.current)())
        } else {
            announcement(&self.set, history, &(self.current)())
        }
    }
}

impl Source for DeltaSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn phase(&self) -> Phase {
        Phase::Environment
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            Ok(SourceOutput::from(
                self.announcement(cx.turn.history).map(Attachment::Delta),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_message::{CompactTrigger, SystemKind};

    #[test]
    fn mcp_instructions_are_announced_again_when_they_change() {
        let current = Arc::new(std::sync::Mutex::new("Use add.".to_owned()));
        let shared = Arc::clone(&current);
        let source = DeltaSource::mcp_instructions(move || {
            vec![DeltaItem {
                name: "calc".into(),
                description: shared.lock().map(|s| s.clone()).unwrap_or_default(),
            }]
        });
        let mut history = vec![Message::user_text("hi")];
        let first = source.announcement(&history).expect("initial");
        assert!(first.initial);
        history.push(Message::attachment(Attachment::Delta(first)));
        assert_eq!(source.announcement(&history), None);
        *current.lock().expect("lock") = "Use add and mul.".into();
        let again = source.announcement(&history).expect("changed");
        assert_eq!(
            again,
            DeltaAnnouncement {
                set: MCP_INSTRUCTIONS.into(),
                added: vec![DeltaItem {
                    name: "calc".into(),
                    description: "Use add and mul.".into(),
                }],
                removed: vec![],
                initial: false,
            }
        );
        history.push(Message::attachment(Attachment::Delta(again)));
        assert_eq!(source.announcement(&history), None);
        // The other sets keep comparing names only.
        let tools = DeltaSource::deferred_tools(|| {
            vec![DeltaItem {
                name: "calc".into(),
                description: "other".into(),
            }]
        });
        let told = vec![Message::attachment(Attachment::Delta(DeltaAnnouncement {
            set: DEFERRED_TOOLS.into(),
            added: vec![DeltaItem {
                name: "calc".into(),
                description: "x".into(),
            }],
            removed: vec![],
            initial: true,
        }))];
        assert_eq!(tools.announcement(&told), None);
    }

    fn items(names: &[&str]) -> Vec<DeltaItem> {
        names
            .iter()
            .map(|n| DeltaItem {
                name: (*n).into(),
                description: String::new(),
            })
            .collect()
    }

    fn names(items: &[DeltaItem]) -> Vec<&str> {
        items.iter().map(|i| i.name.as_str()).collect()
    }

    #[test]
    fn the_first_announcement_is_initial_and_lists_everything_sorted() {
        let a = announcement("agents", &[], &items(&["b", "a", "b"])).expect("announced");
        assert!(a.initial);
        assert_eq!(names(&a.added), ["a", "b"]);
        assert!(a.removed.is_empty());
    }

    #[test]
    fn later_announcements_carry_only_the_difference() {
        let mut history = Vec::new();
        let first = announcement("agents", &history, &items(&["a", "b"])).expect("first");
        history.push(Message::attachment(Attachment::Delta(first)));
        let second = announcement("agents", &history, &items(&["b", "c"])).expect("second");
        assert!(!second.initial);
        assert_eq!(names(&second.added), ["c"]);
        assert_eq!(second.removed, ["a"]);
        history.push(Message::attachment(Attachment::Delta(second)));
        assert_eq!(announcement("agents", &history, &items(&["c", "b"])), None);
    }

    #[test]
    fn other_sets_do_not_count() {
        let history = [Message::attachment(Attachment::Delta(
            announcement("tools", &[], &items(&["a"])).expect("tools"),
        ))];
        let agents = announcement("agents", &history, &items(&["a"])).expect("agents");
        assert!(agents.initial);
    }

    #[test]
    fn after_a_compaction_everything_is_announced_again() {
        let mut history = vec![Message::attachment(Attachment::Delta(
            announcement("agents", &[], &items(&["a"])).expect("first"),
        ))];
        history.push(Message::system(SystemKind::CompactBoundary {
            trigger: CompactTrigger::Manual,
            pre_tokens: 1,
            last_message_id: None,
        }));
        let again = announcement("agents", &history, &items(&["a"])).expect("again");
        assert!(again.initial);
        assert_eq!(names(&again.added), ["a"]);
    }
}
