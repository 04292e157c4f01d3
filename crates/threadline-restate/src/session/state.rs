//! The session's state in the object: one key per message (`m/{index:08}`, its JSON), the
//! loop's state without the messages (`loop`), counters, the status, the current turn's step
//! log (`s/{k:06}`) and the pending question (`ask`). A turn rewrites only the changed suffix
//! of the history, never the whole state in one key.

use serde_json::{Value, json};
use threadline_message::Message;
use threadline_query::State;

use super::cache::Kept;
use super::driver::json_bytes;
use super::records::StepRecord;
use super::{SessionView, ShowRequest, TurnError, TurnOutcome};
use crate::journal::{Journal, ReadState};

/// The state keys.
pub(crate) mod keys {
    /// Completed turns (a JSON number).
    pub(crate) const TURNS: &str = "turns";
    /// Messages in the history (a JSON number).
    pub(crate) const LEN: &str = "len";
    /// The loop's `State` with `messages: []`.
    pub(crate) const LOOP: &str = "loop";
    /// `"idle"`, `"running"`, `"waiting_for_permission"`.
    pub(crate) const STATUS: &str = "status";
    /// Entries in the current turn's step log.
    pub(crate) const STEPS: &str = "steps";
    /// The pending permission question.
    pub(crate) const ASK: &str = "ask";
    /// The outcome of the last turn (a repeated turn id answers it again).
    pub(crate) const LAST_TURN: &str = "last_turn";

    /// The key of message `index`.
    pub(crate) fn message(index: usize) -> String {
        format!("m/{index:08}")
    }

    /// The key of step-log entry `k`.
    pub(crate) fn step(k: u64) -> String {
        format!("s/{k:06}")
    }
}

/// What a turn starts from.
pub(crate) struct Loaded {
    /// The loop state with the bytes it was stored as: what the worker keeps again if the
    /// turn ends without writing (see [`super::cache`]).
    pub(crate) session: Kept,
    pub(crate) turns: u32,
    pub(crate) steps: u64,
    pub(crate) last_turn: Option<TurnOutcome>,
    /// Whether `session` is the kept one, not deserialized.
    pub(crate) warm: bool,
}

async fn number(reader: &impl ReadState, key: &str) -> Result<u64, TurnError> {
    match reader.get(key).await? {
        None => Ok(0),
        Some(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| corrupt(key, "not a number")),
    }
}

fn corrupt(key: &str, message: impl Into<String>) -> TurnError {
    TurnError::CorruptState {
        key: key.to_owned(),
        message: message.into(),
    }
}

/// Reads the session's state. When its bytes are exactly those `kept` holds (the state this
/// worker left after the session's previous turn), the kept `State` is the result; otherwise
/// every message is deserialized.
pub(crate) async fn load(journal: &impl Journal, kept: Option<Kept>) -> Result<Loaded, TurnError> {
    let turns = u32::try_from(number(journal, keys::TURNS).await?).unwrap_or(u32::MAX);
    let len = usize::try_from(number(journal, keys::LEN).await?).unwrap_or(usize::MAX);
    let steps = number(journal, keys::STEPS).await?;
    let mut message_bytes = Vec::new();
    for index in 0..len {
        let key = keys::message(index);
        let bytes = journal
            .get(&key)
            .await?
            .ok_or_else(|| corrupt(&key, "missing"))?;
        message_bytes.push(bytes);
    }
    let loop_bytes = journal.get(keys::LOOP).await?;
    let last_turn = match journal.get(keys::LAST_TURN).await? {
        Some(bytes) => serde_json::from_slice(&bytes).ok(),
        None => None,
    };
    if let Some(kept) = kept.filter(|k| k.matches(&message_bytes, loop_bytes.as_deref())) {
        return Ok(Loaded {
            session: kept,
            turns,
            steps,
            last_turn,
            warm: true,
        });
    }
    let messages = message_bytes
        .iter()
        .enumerate()
        .map(|(index, bytes)| {
            serde_json::from_slice::<Message>(bytes)
                .map_err(|e| corrupt(&keys::message(index), e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut state: State = match &loop_bytes {
        Some(bytes) => {
            serde_json::from_slice(bytes).map_err(|e| corrupt(keys::LOOP, e.to_string()))?
        }
        None => State::default(),
    };
    state.messages = messages;
    Ok(Loaded {
        session: Kept {
            state,
            message_bytes,
            loop_bytes: loop_bytes.unwrap_or_default(),
            memo: Default::default(),
        },
        turns,
        steps,
        last_turn,
        warm: false,
    })
}

/// Writes the turn's result: the changed suffix of the history, the loop state, counters.
///
/// The messages the loop reports unchanged since the turn started
/// ([`State::unchanged_prefix`]: it only appended after them) keep their stored bytes
/// without being serialized again, so a turn serializes what it added, not the history. The
/// rest is compared with what was stored, and written from the first difference on.
///
/// Returns the session to keep (see [`super::cache`]): the finished state with the bytes now
/// stored, unless a message the turn wrote does not read back as the message the loop holds
/// (a warm turn would then see other messages than a cold one).
pub(crate) fn persist(
    journal: &impl Journal,
    old: Vec<Vec<u8>>,
    mut state: State,
    outcome: &TurnOutcome,
) -> Result<Option<Kept>, TurnError> {
    let kept = state.unchanged_prefix().min(old.len());
    let messages = std::mem::take(&mut state.messages);
    let mut new = Vec::with_capacity(messages.len() - kept);
    for (index, message) in messages.iter().enumerate().skip(kept) {
        let bytes = serde_json::to_vec(message)
            .map_err(|e| corrupt(&keys::message(index), e.to_string()))?;
        new.push(bytes);
    }
    // `new[i]` is message `kept + i`; the first that differs from what was stored, and all
    // after it, are written.
    let same = old[kept..]
        .iter()
        .zip(&new)
        .take_while(|(a, b)| a == b)
        .count();
    for (i, bytes) in new.iter().enumerate().skip(same) {
        journal.set(&keys::message(kept + i), bytes.clone());
    }
    for index in messages.len()..old.len() {
        journal.clear(&keys::message(index));
    }
    let loop_bytes = serde_json::to_vec(&state).map_err(|e| corrupt(keys::LOOP, e.to_string()))?;
    journal.set(keys::LOOP, loop_bytes.clone());
    journal.set(keys::LEN, messages.len().to_string().into_bytes());
    journal.set(keys::TURNS, outcome.turns.to_string().into_bytes());
    journal.set(keys::LAST_TURN, json_bytes(outcome));
    journal.set(keys::STATUS, json_bytes(&json!("idle")));
    journal.clear(keys::ASK);
    let reads_back = new.iter().zip(&messages[kept..]).all(|(bytes, message)| {
        serde_json::from_slice::<Message>(bytes).is_ok_and(|read| read == *message)
    });
    if !reads_back {
        tracing::debug!("a message does not read back as written; the session is not kept");
        return Ok(None);
    }
    let mut message_bytes = old;
    message_bytes.truncate(kept);
    message_bytes.extend(new);
    state.messages = messages;
    Ok(Some(Kept {
        state,
        message_bytes,
        loop_bytes,
        memo: Default::default(),
    }))
}

/// The inspection view (the `show` handler).
pub(crate) async fn show(
    reader: &impl ReadState,
    request: &ShowRequest,
    max_bytes: usize,
) -> Result<SessionView, TurnError> {
    let status = match reader.get(keys::STATUS).await? {
        Some(bytes) => serde_json::from_slice::<String>(&bytes).unwrap_or_default(),
        None => "idle".to_owned(),
    };
    let turns = u32::try_from(number(reader, keys::TURNS).await?).unwrap_or(u32::MAX);
    let len = usize::try_from(number(reader, keys::LEN).await?).unwrap_or(usize::MAX);
    let since = request.since.unwrap_or(0).min(len);
    let mut messages = Vec::new();
    let mut total = 0usize;
    let mut next = None;
    for index in since..len {
        let key = keys::message(index);
        let Some(bytes) = reader.get(&key).await? else {
            break;
        };
        if total + bytes.len() > max_bytes && !messages.is_empty() {
            next = Some(index);
            break;
        }
        total += bytes.len();
        messages.push(serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null));
    }
    let count = number(reader, keys::STEPS).await?;
    let mut steps = Vec::new();
    for k in 0..count.min(100_000) {
        if let Some(bytes) = reader.get(&keys::step(k)).await?
            && let Ok(step) = serde_json::from_slice::<StepRecord>(&bytes)
        {
            steps.push(step);
        }
    }
    let ask = match reader.get(keys::ASK).await? {
        Some(bytes) => serde_json::from_slice::<Value>(&bytes).ok(),
        None => None,
    };
    Ok(SessionView {
        status,
        turns,
        message_count: len,
        since,
        messages,
        next,
        steps,
        ask,
    })
}
