//! Property: for any sequence of current sets with compactions in between, the announcements
//! since the last compaction add up to the current set, the first one after a compaction is
//! `initial`, and an unchanged set emits nothing.

use std::collections::BTreeSet;

use proptest::prelude::*;
use threadline_attach::delta::announcement;
use threadline_message::{
    Attachment, CompactTrigger, DeltaAnnouncement, DeltaItem, Message, SystemKind,
};

const SET: &str = "agent_listing";

#[derive(Debug, Clone)]
enum Step {
    /// The set is now these names (duplicates and any order allowed).
    Current(Vec<String>),
    /// A compaction: the old history is replaced (`truncate`) or only closed by a boundary.
    Compact { truncate: bool },
    /// Unrelated traffic: user text and another set's announcement.
    Noise(Vec<String>),
}

/// Names from a small hostile pool (so sets overlap and repeat) or anything at all.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "Read", "read", "", " ", "é", "日本語", "a\nb", "<system-reminder>", "Grep", "🦀",
        ])
        .prop_map(str::to_owned),
        1 => "\\PC{0,12}",
    ]
}

fn names() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(name(), 0..7)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => names().prop_map(Step::Current),
        1 => any::<bool>().prop_map(|truncate| Step::Compact { truncate }),
        1 => names().prop_map(Step::Noise),
    ]
}

fn items(names: &[String]) -> Vec<DeltaItem> {
    names
        .iter()
        .map(|n| DeltaItem {
            name: n.clone(),
            description: format!("does {n}"),
        })
        .collect()
}

fn boundary() -> Message {
    Message::system(SystemKind::CompactBoundary {
        trigger: CompactTrigger::Auto,
        pre_tokens: 100,
        last_message_id: None,
    })
}

/// The announcements of `SET` after the last boundary, replayed independently of the code
/// under test.
fn since_compaction(history: &[Message]) -> Vec<&DeltaAnnouncement> {
    let mut found = Vec::new();
    for message in history {
        match message {
            Message::System(s) if matches!(s.kind, SystemKind::CompactBoundary { .. }) => {
                found.clear();
            }
            Message::Attachment(a) => {
                if let Attachment::Delta(d) = &a.attachment
                    && d.set == SET
                {
                    found.push(d);
                }
            }
            _ => {}
        }
    }
    found
}

fn add_up(announcements: &[&DeltaAnnouncement]) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for a in announcements {
        for item in &a.added {
            set.insert(item.name.clone());
        }
        for name in &a.removed {
            set.remove(name);
        }
    }
    set
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn announcements_add_up_to_the_current_set(steps in prop::collection::vec(step(), 1..30)) {
        let mut history: Vec<Message> = vec![Message::user_text("start")];
        for step in steps {
            match step {
                Step::Compact { truncate } => {
                    if truncate {
                        history.clear();
                    }
                    history.push(boundary());
                    history.push(Message::compact_summary("summary"));
                }
                Step::Noise(names) => {
                    history.push(Message::user_text("unrelated"));
                    if let Some(other) = announcement("deferred_tools", &history, &items(&names)) {
                        history.push(Message::attachment(Attachment::Delta(other)));
                    }
                }
                Step::Current(names) => {
                    let current: BTreeSet<String> = names.iter().cloned().collect();
                    let before = since_compaction(&history).len();
                    let told_before = add_up(&since_compaction(&history));
                    match announcement(SET, &history, &items(&names)) {
                        None => {
                            // Nothing to say only when the model already knows the set.
                            prop_assert_eq!(&told_before, &current);
                        }
                        Some(a) => {
                            prop_assert!(!a.added.is_empty() || !a.removed.is_empty());
                            // The first after a compaction (or ever) is initial, no other.
                            prop_assert_eq!(a.initial, before == 0);
                            // Only differences: nothing re-added, nothing removed twice.
                            for item in &a.added {
                                prop_assert!(!told_before.contains(&item.name));
                                prop_assert!(current.contains(&item.name));
                            }
                            for name in &a.removed {
                                prop_assert!(told_before.contains(name));
                                prop_assert!(!current.contains(name));
                            }
                            // Sorted, each once: the same state gives the same bytes.
                            let added: Vec<&String> = a.added.iter().map(|i| &i.name).collect();
                            prop_assert!(added.windows(2).all(|w| w[0] < w[1]));
                            prop_assert!(a.removed.windows(2).all(|w| w[0] < w[1]));
                            history.push(Message::attachment(Attachment::Delta(a)));
                        }
                    }
                    // Since the last compaction, the announcements add up to the current set.
                    prop_assert_eq!(add_up(&since_compaction(&history)), current.clone());
                    // An unchanged set (in any order, with duplicates) emits nothing.
                    let mut again = names.clone();
                    again.reverse();
                    again.extend(names.iter().cloned());
                    prop_assert_eq!(announcement(SET, &history, &items(&again)), None);
                }
            }
        }
    }
}

#[test]
fn an_empty_set_says_nothing_until_something_is_announced() {
    assert_eq!(announcement(SET, &[], &[]), None);
    let history = vec![boundary()];
    assert_eq!(announcement(SET, &history, &[]), None);
}

#[test]
fn emptying_the_set_announces_every_removal_and_the_next_addition_is_not_initial() {
    let mut history = Vec::new();
    let first = announcement(SET, &history, &items(&["a".into(), "b".into()])).expect("first");
    history.push(Message::attachment(Attachment::Delta(first)));
    let emptied = announcement(SET, &history, &[]).expect("removals");
    assert_eq!(emptied.removed, ["a", "b"]);
    assert!(emptied.added.is_empty());
    history.push(Message::attachment(Attachment::Delta(emptied)));
    let back = announcement(SET, &history, &items(&["a".into()])).expect("back");
    assert!(!back.initial);
}
