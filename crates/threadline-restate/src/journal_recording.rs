//! An in-memory [`Journal`] that behaves like Restate's for one Virtual Object: it records
//! every step of an invocation, replays the recorded prefix on the next attempt (dropping the
//! work unpolled), and can be told to "crash" at any step, before or after the work ran, or
//! to cancel. State is the object's state: committed when an invocation completes, rebuilt
//! from the committed state plus the replayed writes on every attempt.
//!
//! It makes determinism and crash/replay behaviour testable without a server.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt as _;
use futures::future::BoxFuture;

use crate::journal::{Journal, JournalError, ReadState};

/// Where a simulated crash happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Crash {
    /// At journal entry `index`, before its work runs (the worker died between steps).
    Before(usize),
    /// At journal entry `index`, after its work ran but before its result was journaled (the
    /// worker died mid-step: the work ran, its result is lost).
    After(usize),
}

#[derive(Debug, Clone)]
enum Entry {
    Step { name: String, value: Vec<u8> },
    Awakeable { value: Vec<u8> },
}

#[derive(Debug, Default)]
struct Rec {
    entries: Vec<Entry>,
    cursor: usize,
    committed: BTreeMap<String, Vec<u8>>,
    state: BTreeMap<String, Vec<u8>>,
    crash: Option<Crash>,
    cancel_at: Option<usize>,
    executed: Vec<String>,
    answers: VecDeque<Vec<u8>>,
    asked: Vec<String>,
}

/// An in-memory [`Journal`] that behaves like Restate's for one Virtual Object: it records
/// every step of an invocation, replays the recorded prefix on the next attempt ([`begin`])
/// with the work dropped unpolled, and can "crash" at any entry, before or after its work
/// ([`crash`]), or cancel ([`cancel_at`]). State is committed when an invocation
/// [`complete`]s and rebuilt from it plus the replayed writes on every attempt. Clones share
/// it.
///
/// [`begin`]: RecordingJournal::begin
/// [`crash`]: RecordingJournal::crash
/// [`cancel_at`]: RecordingJournal::cancel_at
/// [`complete`]: RecordingJournal::complete
#[derive(Debug, Clone, Default)]
pub struct RecordingJournal {
    inner: Arc<Mutex<Rec>>,
}

impl RecordingJournal {
    /// An empty journal and state.
    pub fn new() -> RecordingJournal {
        RecordingJournal::default()
    }

    fn lock(&self) -> MutexGuard<'_, Rec> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts an attempt of the current invocation: replay from the first entry, state back
    /// to what was committed.
    pub fn begin(&self) {
        let mut rec = self.lock();
        rec.cursor = 0;
        rec.state = rec.committed.clone();
    }

    /// Ends the invocation: its state is committed and its journal dropped.
    pub fn complete(&self) {
        let mut rec = self.lock();
        rec.committed = rec.state.clone();
        rec.entries.clear();
        rec.cursor = 0;
    }

    /// Makes the next attempt crash at `crash` (once).
    pub fn crash(&self, crash: Crash) {
        self.lock().crash = Some(crash);
    }

    /// Makes the operation at entry `index` answer [`JournalError::Cancelled`] (once).
    pub fn cancel_at(&self, index: usize) {
        self.lock().cancel_at = Some(index);
    }

    /// Queues the value the next awakeable is resolved with.
    pub fn answer(&self, value: Vec<u8>) {
        self.lock().answers.push_back(value);
    }

    /// The names of the steps whose work actually ran, over all attempts, in order.
    pub fn executed(&self) -> Vec<String> {
        self.lock().executed.clone()
    }

    /// The names of the journaled entries of the current invocation (`awakeable` for an
    /// awakeable).
    pub fn entries(&self) -> Vec<String> {
        self.lock()
            .entries
            .iter()
            .map(|e| match e {
                Entry::Step { name, .. } => name.clone(),
                Entry::Awakeable { .. } => "awakeable".to_owned(),
            })
            .collect()
    }

    /// The committed state.
    pub fn committed(&self) -> BTreeMap<String, Vec<u8>> {
        self.lock().committed.clone()
    }

    /// The state as the current attempt sees it.
    pub fn state(&self) -> BTreeMap<String, Vec<u8>> {
        self.lock().state.clone()
    }

    /// The ids of the awakeables created (all attempts).
    pub fn asked(&self) -> Vec<String> {
        self.lock().asked.clone()
    }

    /// A crash or cancel set for entry `index`, taken.
    fn interrupt(rec: &mut Rec, index: usize, after_work: bool) -> Option<JournalError> {
        if rec.cancel_at == Some(index) && !after_work {
            rec.cancel_at = None;
            return Some(JournalError::Cancelled);
        }
        let hit = match rec.crash {
            Some(Crash::Before(i)) => i == index && !after_work,
            Some(Crash::After(i)) => i == index && after_work,
            None => false,
        };
        if hit {
            rec.crash = None;
            return Some(JournalError::Abandoned(format!(
                "simulated crash at entry {index}"
            )));
        }
        None
    }
}

impl ReadState for RecordingJournal {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, JournalError>> {
        let value = self.lock().state.get(key).cloned();
        std::future::ready(Ok(value)).boxed()
    }
}

impl Journal for RecordingJournal {
    fn step<'a>(
        &'a self,
        name: &'a str,
        work: BoxFuture<'static, Vec<u8>>,
    ) -> BoxFuture<'a, Result<Vec<u8>, JournalError>> {
        async move {
            let index = {
                let mut rec = self.lock();
                let index = rec.cursor;
                match rec.entries.get(index) {
                    Some(Entry::Step {
                        name: recorded,
                        value,
                    }) if recorded == name => {
                        let value = value.clone();
                        rec.cursor += 1;
                        return Ok(value);
                    }
                    Some(other) => {
                        return Err(JournalError::Terminal {
                            code: 570,
                            message: format!("journal mismatch at {index}: {other:?} vs {name}"),
                        });
                    }
                    None => {}
                }
                if let Some(error) = Self::interrupt(&mut rec, index, false) {
                    return Err(error);
                }
                index
            };
            let value = work.await;
            let mut rec = self.lock();
            rec.executed.push(name.to_owned());
            if let Some(error) = Self::interrupt(&mut rec, index, true) {
                return Err(error);
            }
            rec.entries.push(Entry::Step {
                name: name.to_owned(),
                value: value.clone(),
            });
            rec.cursor = index + 1;
            Ok(value)
        }
        .boxed()
    }

    fn set(&self, key: &str, value: Vec<u8>) {
        self.lock().state.insert(key.to_owned(), value);
    }

    fn clear(&self, key: &str) {
        self.lock().state.remove(key);
    }

    fn awakeable(&self) -> (String, BoxFuture<'_, Result<Vec<u8>, JournalError>>) {
        let mut rec = self.lock();
        let index = rec.cursor;
        let id = format!("awk_{index}");
        rec.asked.push(id.clone());
        if let Some(Entry::Awakeable { value }) = rec.entries.get(index) {
            let value = value.clone();
            rec.cursor += 1;
            return (id, std::future::ready(Ok(value)).boxed());
        }
        drop(rec);
        let future = async move {
            let mut rec = self.lock();
            if rec.entries.len() != index {
                return Err(JournalError::Terminal {
                    code: 570,
                    message: format!("journal mismatch at {index}: an awakeable"),
                });
            }
            if let Some(error) = Self::interrupt(&mut rec, index, false) {
                return Err(error);
            }
            let Some(value) = rec.answers.pop_front() else {
                return Err(JournalError::Abandoned("no answer queued".to_owned()));
            };
            rec.entries.push(Entry::Awakeable {
                value: value.clone(),
            });
            rec.cursor = index + 1;
            Ok(value)
        };
        (id, future.boxed())
    }
}
