//! The session operations of `threadline_message::session_ops`, over valid and hostile
//! arrays (tool-use pairs lost or duplicated, fragments sharing API ids, signed thinking,
//! tombstones) with compact boundaries and tombstones pointing anywhere added:
//!
//! * (a) a fork at message k normalizes to the same API messages as the prefix `[..=k]`;
//! * (b) forking twice gives byte-identical JSONL;
//! * (c) every kept message is byte-identical to its source except its id (and the ids it
//!   refers to, mapped consistently: one old id, one new id), and `rewrite_line` of the
//!   source's line is the fork's line;
//! * (d) a rewind keeps a prefix unchanged, leaves no `tool_use` without a later
//!   `tool_result`, and normalizes to a request `validate` accepts.

use std::collections::HashMap;

use proptest::prelude::*;
use threadline_message::session_ops::{fork, is_typed_prompt, rewind, rewrite_line};
use threadline_message::{CompactTrigger, Message, MessageId, SystemKind};
use threadline_normalize::{Options, normalize};
use threadline_testkit::messages::any_session;
use threadline_wire::ContentBlock;

use crate::common::{MODEL, check_pairing, check_valid};

/// What an insertion adds to a session.
#[derive(Debug, Clone)]
enum Extra {
    /// A compact boundary naming the message at this index (mod len) as the last before it.
    Boundary(usize),
    /// A tombstone retracting the message at this index (mod len), or an unknown id.
    Tombstone(Option<usize>),
}

/// A session from the testkit with compact boundaries and tombstones inserted at random
/// places, pointing at random messages.
fn session() -> impl Strategy<Value = Vec<Message>> {
    let extra = prop_oneof![
        any::<usize>().prop_map(Extra::Boundary),
        proptest::option::of(any::<usize>()).prop_map(Extra::Tombstone),
    ];
    (
        any_session(),
        proptest::collection::vec((any::<usize>(), extra), 0..4),
    )
        .prop_map(|(mut messages, extras)| {
            for (n, (place, extra)) in extras.into_iter().enumerate() {
                if messages.is_empty() {
                    break;
                }
                let target = |i: usize| messages[i % messages.len()].id().clone();
                let message = match extra {
                    Extra::Boundary(i) => Message::system(SystemKind::CompactBoundary {
                        trigger: CompactTrigger::Auto,
                        pre_tokens: 1000,
                        last_message_id: Some(target(i)),
                    }),
                    Extra::Tombstone(Some(i)) => Message::tombstone(target(i)),
                    Extra::Tombstone(None) => Message::tombstone(MessageId::from("unknown")),
                };
                let header = threadline_message::Header::with(
                    format!("extra-{n}"),
                    "2026-01-01T00:00:00.000Z",
                );
                let at = place % (messages.len() + 1);
                messages.insert(at, message.with_header(header));
            }
            messages
        })
}

fn jsonl(messages: &[Message]) -> Result<String, String> {
    let mut out = String::new();
    for message in messages {
        out.push_str(&serde_json::to_string(message).map_err(|e| e.to_string())?);
        out.push('\n');
    }
    Ok(out)
}

/// The id `message` refers to, if it is a kind that refers to one.
fn reference(message: &Message) -> Option<&MessageId> {
    match message {
        Message::Tombstone(t) => Some(&t.retracts),
        Message::System(s) => match &s.kind {
            SystemKind::CompactBoundary {
                last_message_id, ..
            } => last_message_id.as_ref(),
            _ => None,
        },
        _ => None,
    }
}

/// `message` with its reference set to `id`.
fn with_reference(mut message: Message, id: Option<&MessageId>) -> Message {
    match (&mut message, id) {
        (Message::Tombstone(t), Some(id)) => t.retracts = id.clone(),
        (Message::System(s), id) => {
            if let SystemKind::CompactBoundary {
                last_message_id, ..
            } = &mut s.kind
            {
                *last_message_id = id.cloned();
            }
        }
        _ => {}
    }
    message
}

/// Properties (a), (b), (c) for a fork at index `k`.
fn check_fork(messages: &[Message], k: usize) -> Result<(), String> {
    let at = messages[k].id().clone();
    // A fork ends at the first message with that id.
    let end = messages.iter().position(|m| *m.id() == at).unwrap_or(k);
    let prefix = &messages[..=end];
    let forked = fork(messages, &at, "source-session").map_err(|e| e.to_string())?;

    // (a)
    let options = Options::default();
    let of_fork = normalize(&forked.messages, &options).messages;
    let of_prefix = normalize(prefix, &options).messages;
    if of_fork != of_prefix {
        return Err(format!(
            "(a) fork at {k} normalizes to\n{}\nthe prefix to\n{}",
            serde_json::to_string(&of_fork).unwrap_or_default(),
            serde_json::to_string(&of_prefix).unwrap_or_default()
        ));
    }

    // (b)
    let again = fork(messages, &at, "source-session").map_err(|e| e.to_string())?;
    if jsonl(&again.messages)? != jsonl(&forked.messages)? {
        return Err(format!("(b) forking twice at {k} gave different bytes"));
    }

    // (c)
    if !matches!(&forked.messages[0], Message::System(s) if matches!(&s.kind, SystemKind::ForkedFrom { session, message } if session == "source-session" && *message == at))
    {
        return Err("(c) the fork does not start with its forked_from record".into());
    }
    let kept = forked.kept();
    if kept.len() != prefix.len() || forked.source_ids.len() != prefix.len() {
        return Err(format!(
            "(c) {} kept of a prefix of {}",
            kept.len(),
            prefix.len()
        ));
    }
    let mut map: HashMap<&MessageId, &MessageId> = HashMap::new();
    let mut back: HashMap<&MessageId, &MessageId> = HashMap::new();
    for (old, new) in prefix.iter().zip(kept) {
        if map
            .insert(old.id(), new.id())
            .is_some_and(|n| n != new.id())
            || back
                .insert(new.id(), old.id())
                .is_some_and(|o| o != old.id())
        {
            return Err(format!("(c) ids not mapped one to one at {}", old.id()));
        }
    }
    for (n, (old, new)) in prefix.iter().zip(kept).enumerate() {
        if forked.source_ids[n] != *old.id() || new.id() == old.id() {
            return Err(format!(
                "(c) message {n}: id {} not fresh or not recorded",
                new.id()
            ));
        }
        if let (Some(old_ref), Some(new_ref)) = (reference(old), reference(new))
            && let Some(mapped) = map.get(old_ref)
            && *mapped != new_ref
        {
            return Err(format!(
                "(c) message {n}: reference {old_ref} not rewritten"
            ));
        }
        let restored = with_reference(
            new.clone().with_header(old.header().clone()),
            reference(old),
        );
        let (a, b) = (
            serde_json::to_string(old).map_err(|e| e.to_string())?,
            serde_json::to_string(&restored).map_err(|e| e.to_string())?,
        );
        if a != b {
            return Err(format!("(c) message {n} changed:\n{a}\n{b}"));
        }
        // Rewriting the source line gives the fork's line.
        let line = serde_json::to_string(new).map_err(|e| e.to_string())?;
        if rewrite_line(&a, new).as_deref() != Some(line.as_str()) {
            return Err(format!(
                "(c) message {n}: rewrite_line of\n{a}\nis not\n{line}"
            ));
        }
    }
    Ok(())
}

/// Property (d) for a rewind of `turns`.
fn check_rewind(messages: &[Message], turns: usize) -> Result<(), String> {
    let typed = messages.iter().filter(|m| is_typed_prompt(m)).count();
    let rewound = match rewind(messages, turns) {
        Ok(rewound) => rewound,
        Err(e) if turns > typed && e.is_not_enough_turns() => return Ok(()),
        Err(e) => return Err(format!("(d) rewind {turns} of {typed}: {e}")),
    };
    let out = &rewound.messages;
    if out.get(..rewound.kept) != messages.get(..rewound.kept) {
        return Err("(d) the kept messages are not the source's prefix".into());
    }
    if out.len() != rewound.kept + usize::from(!rewound.answered.is_empty()) {
        return Err("(d) more than one message added".into());
    }
    if out.iter().filter(|m| is_typed_prompt(m)).count() != typed - turns {
        return Err(format!("(d) not {turns} prompts fewer"));
    }
    // Every tool use has a result in a later (non-virtual) user message.
    for (n, message) in out.iter().enumerate() {
        let Message::Assistant(assistant) = message else {
            continue;
        };
        for block in &assistant.content {
            let ContentBlock::ToolUse(tool_use) = block else {
                continue;
            };
            let answered = out[n + 1..].iter().any(|m| {
                matches!(m, Message::User(u) if !u.is_virtual && u.content.iter().any(
                    |b| matches!(b, ContentBlock::ToolResult(r) if r.tool_use_id == tool_use.id)))
            });
            if !answered {
                return Err(format!(
                    "(d) tool use {} left without a result",
                    tool_use.id
                ));
            }
        }
    }
    let normalized = normalize(out, &Options::default()).messages;
    if !normalized.is_empty() {
        check_valid(&normalized, MODEL).map_err(|e| format!("(d) {e}"))?;
    }
    check_pairing(&normalized).map_err(|e| format!("(d) {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_fork_normalizes_as_its_prefix_is_deterministic_and_keeps_every_message(
        messages in session(),
        pick in any::<usize>(),
    ) {
        prop_assume!(!messages.is_empty());
        let k = pick % messages.len();
        if let Err(problem) = check_fork(&messages, k) {
            prop_assert!(false, "{problem}");
        }
    }

    #[test]
    fn a_rewind_answers_every_tool_use_and_normalizes_to_a_valid_request(
        messages in session(),
        turns in 0usize..8,
    ) {
        if let Err(problem) = check_rewind(&messages, turns) {
            prop_assert!(false, "{problem}");
        }
    }
}

#[test]
fn forking_at_every_message_of_a_hostile_session_holds() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    for _ in 0..20 {
        let messages = session()
            .new_tree(&mut runner)
            .expect("no filters")
            .current();
        for k in 0..messages.len() {
            if let Err(problem) = check_fork(&messages, k) {
                panic!("{problem}");
            }
        }
    }
}
