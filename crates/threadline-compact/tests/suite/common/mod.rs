//! Checks shared by the compaction tests, each returning the first problem found.

#![allow(dead_code, reason = "each test crate uses a subset of the checks")]

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use threadline_compact::units::{latest_prompt_group, since_last_boundary};
use threadline_message::Message;
use threadline_normalize::{Options, normalize};
use threadline_validate::validate;
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{ContentBlock, MessageParam, MessagesRequest, Role};

/// The model the checks validate against (it accepts prefill).
pub(crate) const MODEL: &str = "claude-sonnet-4-5";

/// The model's table row.
pub(crate) fn model() -> &'static Model {
    ModelTable::builtin().resolve(MODEL).model()
}

/// A fixed time for stamps.
pub(crate) fn epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH
}

/// The request the model would see for `history` (what follows the last boundary).
pub(crate) fn request_for(history: &[Message]) -> MessagesRequest {
    let normalized = normalize(since_last_boundary(history), &Options::default());
    MessagesRequest::new(MODEL, 4096, normalized.messages)
}

/// The request passes `validate`.
pub(crate) fn check_valid(history: &[Message]) -> Result<(), String> {
    let request = request_for(history);
    if request.messages.is_empty() {
        return Ok(());
    }
    let violations = validate(&request, model());
    if violations.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid request: {}\n{}",
            violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
            serde_json::to_string(&request.messages).unwrap_or_default()
        ))
    }
}

/// The latest typed prompt of `input`'s visible part, with the meta messages and attachments
/// that came with it (`latest_prompt_group`), is in `output`, unchanged.
pub(crate) fn check_prompt_kept(input: &[Message], output: &[Message]) -> Result<(), String> {
    let visible = since_last_boundary(input);
    let Some(group) = latest_prompt_group(visible) else {
        return Ok(());
    };
    let kept = since_last_boundary(output);
    match visible[group].iter().find(|m| !kept.contains(m)) {
        None => Ok(()),
        Some(lost) => Err(format!(
            "{} of the latest prompt group was lost or changed",
            lost.id()
        )),
    }
}

/// Tool use ids and result ids of client tools, per message kind.
fn pairs(history: &[Message]) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut uses = BTreeSet::new();
    let mut results = BTreeSet::new();
    for m in history {
        match m {
            Message::Assistant(a) => {
                for b in &a.content {
                    if let ContentBlock::ToolUse(u) = b {
                        uses.insert(u.id.clone());
                    }
                }
            }
            Message::User(u) => {
                for b in &u.content {
                    if let ContentBlock::ToolResult(r) = b {
                        results.insert(r.tool_use_id.clone());
                    }
                }
            }
            _ => {}
        }
    }
    (uses, results)
}

/// No tool pair complete in what the model sees of `input` is split in what it sees of
/// `output` (both halves kept or both gone), and no fragment group is partly kept.
pub(crate) fn check_no_split(input: &[Message], output: &[Message]) -> Result<(), String> {
    let (input, output) = (since_last_boundary(input), since_last_boundary(output));
    let (in_uses, in_results) = pairs(input);
    let (out_uses, out_results) = pairs(output);
    for id in in_uses.intersection(&in_results) {
        if out_uses.contains(id) != out_results.contains(id) {
            return Err(format!("the tool pair {id} was split"));
        }
    }
    let fragments = |history: &[Message]| {
        let mut groups: BTreeMap<String, usize> = BTreeMap::new();
        for m in history {
            if let Message::Assistant(a) = m
                && let Some(id) = &a.api_message_id
            {
                *groups.entry(id.clone()).or_default() += 1;
            }
        }
        groups
    };
    let before = fragments(input);
    for (id, n) in fragments(output) {
        if before.get(&id).is_some_and(|&m| m > n) {
            return Err(format!("the fragments of {id} were split"));
        }
    }
    Ok(())
}

/// The thinking blocks of the last assistant message the model would see.
pub(crate) fn last_thinking(history: &[Message]) -> Option<Vec<ContentBlock>> {
    let request = request_for(history);
    request
        .messages
        .iter()
        .rev()
        .find(|m: &&MessageParam| m.role == Role::Assistant)
        .map(|m| {
            m.content
                .to_blocks()
                .into_iter()
                .filter(ContentBlock::is_thinking)
                .collect()
        })
}
