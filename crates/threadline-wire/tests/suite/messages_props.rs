//! `Messages` (a persistent vector of shared messages) behaves as a `Vec<MessageParam>` under
//! any sequence of edits, a clone never sees a later edit of the original, and
//! `common_prefix` is exactly the number of leading entries that are the same allocation,
//! whatever the lengths (across the 64-entry chunks), edits and clones.

use std::sync::Arc;

use proptest::prelude::*;
use threadline_wire::{ContentBlock, MessageParam, Messages};

fn message(n: u32) -> MessageParam {
    // Quotes and backslashes: the serialized form is checked too.
    MessageParam::user(vec![ContentBlock::text(format!("m{n} \"q\" \\ "))])
}

#[derive(Debug, Clone)]
enum Op {
    Push(u32),
    Extend(u32, usize),
    Pop,
    Truncate(usize),
    Insert(usize, u32),
    Remove(usize),
    Set(usize, u32),
    Swap(usize, usize),
    Retain(u32),
    Tail(usize),
    Clear,
    /// Rewrites every message through `iter_mut` (from the back when the flag is set).
    EditAll(u32, bool),
    /// Keeps a clone of the current messages (and of the model) to check later.
    Snapshot,
    /// Continues from a kept clone (the request a retry resends, a fork).
    Restore(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => any::<u32>().prop_map(Op::Push),
        3 => (any::<u32>(), 0usize..150).prop_map(|(n, k)| Op::Extend(n, k)),
        1 => Just(Op::Pop),
        2 => any::<usize>().prop_map(Op::Truncate),
        1 => (any::<usize>(), any::<u32>()).prop_map(|(i, n)| Op::Insert(i, n)),
        1 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), any::<u32>()).prop_map(|(i, n)| Op::Set(i, n)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Swap(a, b)),
        1 => (2u32..5).prop_map(Op::Retain),
        1 => any::<usize>().prop_map(Op::Tail),
        1 => Just(Op::Clear),
        1 => (any::<u32>(), any::<bool>()).prop_map(|(n, back)| Op::EditAll(n, back)),
        3 => Just(Op::Snapshot),
        1 => any::<usize>().prop_map(Op::Restore),
    ]
}

/// The leading entries that are the same allocation, one by one.
fn naive_common_prefix(a: &Messages, b: &Messages) -> usize {
    a.shared()
        .zip(b.shared())
        .take_while(|(x, y)| Arc::ptr_eq(x, y))
        .count()
}

fn assert_same(messages: &Messages, model: &[MessageParam]) {
    assert_eq!(messages.len(), model.len());
    assert_eq!(messages.iter().count(), model.len());
    assert!(messages.iter().eq(model.iter()));
    assert!(messages.iter().rev().eq(model.iter().rev()));
    assert_eq!(messages, model);
    assert_eq!(messages.first(), model.first());
    assert_eq!(messages.last(), model.last());
    assert_eq!(
        serde_json::to_string(messages).expect("serializes"),
        serde_json::to_string(model).expect("serializes")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn messages_behave_as_a_vec_and_clones_are_persistent(
        start in 0usize..300,
        ops in proptest::collection::vec(op(), 0..120),
        probe in any::<usize>(),
    ) {
        let mut model: Vec<MessageParam> = (0..start as u32).map(message).collect();
        let mut messages = Messages::from(model.clone());
        let mut snapshots: Vec<(Messages, Vec<MessageParam>)> = Vec::new();
        for op in ops {
            let len = model.len();
            match op {
                Op::Push(n) => {
                    messages.push(message(n));
                    model.push(message(n));
                }
                Op::Extend(n, k) => {
                    let more: Vec<MessageParam> = (0..k as u32).map(|i| message(n ^ i)).collect();
                    messages.extend(more.clone());
                    model.extend(more);
                }
                Op::Pop => prop_assert_eq!(messages.pop(), model.pop()),
                Op::Truncate(n) => {
                    let n = n % (len + 2);
                    messages.truncate(n);
                    model.truncate(n);
                }
                Op::Insert(i, n) => {
                    let i = i % (len + 1);
                    messages.insert(i, message(n));
                    model.insert(i, message(n));
                }
                Op::Remove(i) if len > 0 => {
                    prop_assert_eq!(messages.remove(i % len), model.remove(i % len));
                }
                Op::Set(i, n) if len > 0 => {
                    messages[i % len] = message(n);
                    model[i % len] = message(n);
                }
                Op::Swap(a, b) if len > 0 => {
                    messages.swap(a % len, b % len);
                    model.swap(a % len, b % len);
                }
                Op::Retain(k) => {
                    let keep = |m: &MessageParam| !serde_json::to_string(m).expect("json").len().is_multiple_of(k as usize);
                    messages.retain(keep);
                    model.retain(keep);
                }
                Op::Tail(from) => {
                    let from = from % (len + 2);
                    messages = messages.tail(from);
                    model = model.get(from..).unwrap_or_default().to_vec();
                }
                Op::Clear => {
                    messages.clear();
                    model.clear();
                }
                Op::EditAll(n, back) => {
                    let edit = |(i, m): (usize, &mut MessageParam)| *m = message(n ^ i as u32);
                    if back {
                        messages.iter_mut().rev().enumerate().for_each(edit);
                        model.iter_mut().rev().enumerate().for_each(edit);
                    } else {
                        (&mut messages).into_iter().enumerate().for_each(edit);
                        model.iter_mut().enumerate().for_each(edit);
                    }
                }
                Op::Snapshot => snapshots.push((messages.clone(), model.clone())),
                Op::Restore(k) if !snapshots.is_empty() => {
                    let (kept, kept_model) = snapshots[k % snapshots.len()].clone();
                    messages = kept;
                    model = kept_model;
                }
                Op::Remove(_) | Op::Set(..) | Op::Swap(..) | Op::Restore(_) => {}
            }
            assert_same(&messages, &model);
            // Every kept clone still reads as it did, and shares exactly what it shares.
            for (kept, kept_model) in &snapshots {
                assert_same(kept, kept_model);
                prop_assert_eq!(
                    messages.common_prefix(kept),
                    naive_common_prefix(&messages, kept)
                );
                prop_assert_eq!(
                    kept.common_prefix(&messages),
                    naive_common_prefix(kept, &messages)
                );
                prop_assert_eq!(
                    messages.equal_prefix(kept),
                    messages.iter().zip(kept.iter()).take_while(|(a, b)| a == b).count()
                );
            }
        }
        let copy = messages.clone();
        prop_assert_eq!(copy.common_prefix(&messages), messages.len());
        // Ranges, indexing and the shared entries agree with the model.
        let len = model.len();
        let a = probe % (len + 1);
        let b = a + (probe / 7) % (len - a + 1);
        prop_assert!(messages.range(a..b).eq(model[a..b].iter()));
        prop_assert!(messages.range(a..b).rev().eq(model[a..b].iter().rev()));
        prop_assert!(messages.range(a..).eq(model[a..].iter()));
        prop_assert!(messages.shared_from(a).map(|m| &**m).eq(model[a..].iter()));
        for i in [0, a, b, len.saturating_sub(1)] {
            prop_assert_eq!(messages.get(i), model.get(i));
            prop_assert_eq!(messages.shared_at(i).map(|m| &**m), model.get(i));
        }
        // A copy of each message in a new allocation: equal, sharing nothing.
        let fresh = Messages::from(model.clone());
        prop_assert_eq!(fresh.common_prefix(&messages), 0);
        prop_assert_eq!(fresh.equal_prefix(&messages), messages.len());
        prop_assert_eq!(&fresh, &messages);
        prop_assert_eq!(messages.into_vec(), model);
    }
}

#[test]
fn an_edit_copies_what_it_changes_and_keeps_the_rest_shared() {
    let mut messages: Messages = (0..1000).map(message).collect();
    let kept = messages.clone();
    messages[500] = message(7);
    assert_eq!(messages.common_prefix(&kept), 500);
    assert_eq!(naive_common_prefix(&messages, &kept), 500);
    // After the edit, the entries are still the very same messages.
    assert!(
        messages
            .shared_from(501)
            .zip(kept.shared_from(501))
            .all(|(a, b)| Arc::ptr_eq(a, b))
    );
    messages.truncate(10);
    messages.push(message(1));
    assert_eq!(messages.common_prefix(&kept), 10);
    assert_eq!(kept.len(), 1000);
}

#[test]
#[should_panic(expected = "out of bounds")]
fn a_range_past_the_end_panics_as_slicing_does() {
    let messages: Messages = (0..3).map(message).collect();
    let _ = messages.range(2..5);
}
