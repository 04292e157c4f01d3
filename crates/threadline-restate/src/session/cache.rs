//! The sessions a worker ran last, kept in memory beside the stored bytes they equal.
//!
//! A turn starts by reading the session's state. Deserializing every message and normalizing
//! the whole history again costs what the history costs, every turn. A worker that ran the
//! session's previous turn still holds its finished [`State`] — with what the loop derived from
//! the history (the incremental normalizer, the compaction boundary, the estimates) — and the
//! bytes it stored for it. When the state the turn reads is byte for byte those bytes (every
//! message key, and the loop key), the turn continues from the kept `State` instead: what a
//! cold load would have built, already warm. Nothing is trusted: any other worker's turn, an
//! operator's edit, a lost write or a retried attempt shows as different bytes, and the turn
//! loads cold. Comparing the bytes costs a `memcmp` of the stored history, far less than
//! parsing it.
//!
//! A session is kept only when every message its turn wrote reads back as the message the
//! loop holds (checked on what the turn wrote, not the history), so a warm turn sees exactly
//! the messages a cold one would. The kept sessions are bounded by their stored bytes
//! ([`Worker::with_session_cache`](crate::Worker::with_session_cache)); the least recently
//! used go first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use threadline_query::State;

/// The default bound of a worker's kept sessions, in stored bytes. Their in-memory form takes
/// more again: each kept loop state holds the history and its normalized request.
pub const DEFAULT_SESSION_CACHE_BYTES: usize = 128 << 20;

/// A session's loop state with the bytes it is stored as (as its last turn on this worker
/// left it, or as a turn read it).
pub(crate) struct Kept {
    /// The finished state, history included.
    pub(crate) state: State,
    /// The stored bytes of each message, in order.
    pub(crate) message_bytes: Vec<Vec<u8>>,
    /// The stored bytes of the loop key.
    pub(crate) loop_bytes: Vec<u8>,
    /// What the last turn's cache planner memoized, for the next turn's (see
    /// [`super::memo`]; empty for a session loaded from its bytes).
    pub(crate) memo: threadline_cache::PrefixMemo,
}

impl Kept {
    fn bytes(&self) -> usize {
        self.message_bytes
            .iter()
            .map(Vec::len)
            .sum::<usize>()
            .saturating_add(self.loop_bytes.len())
    }

    /// Whether `message_bytes` and `loop_bytes` (what the turn read) are what was kept.
    pub(crate) fn matches(&self, message_bytes: &[Vec<u8>], loop_bytes: Option<&[u8]>) -> bool {
        loop_bytes == Some(self.loop_bytes.as_slice()) && self.message_bytes == message_bytes
    }
}

struct Entry {
    kept: Kept,
    bytes: usize,
    used_at: u64,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    bytes: usize,
    clock: u64,
}

/// How a worker's kept sessions served its turns ([`Worker::session_cache`](crate::Worker::session_cache)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SessionCacheStats {
    /// Sessions kept now.
    pub sessions: usize,
    /// Their stored bytes.
    pub bytes: usize,
    /// Turns that continued from a kept session.
    pub warm_turns: u64,
    /// Turns that loaded their session from its stored bytes.
    pub cold_turns: u64,
}

/// The kept sessions of a worker, shared by its clones.
pub(crate) struct SessionCache {
    limit: usize,
    inner: Mutex<Inner>,
    warm: AtomicU64,
    cold: AtomicU64,
}

impl std::fmt::Debug for SessionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCache")
            .field("limit", &self.limit)
            .field("stats", &self.stats())
            .finish()
    }
}

impl SessionCache {
    /// Keeps sessions up to `limit` stored bytes in all (0: none).
    pub(crate) fn new(limit: usize) -> SessionCache {
        SessionCache {
            limit,
            inner: Mutex::default(),
            warm: AtomicU64::new(0),
            cold: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `session` out (a turn owns it until it gives the session back with
    /// [`put`](Self::put)).
    pub(crate) fn take(&self, session: &str) -> Option<Kept> {
        let mut inner = self.lock();
        let entry = inner.entries.remove(session)?;
        inner.bytes -= entry.bytes;
        Some(entry.kept)
    }

    /// Counts a turn's load, warm or cold.
    pub(crate) fn count(&self, warm: bool) {
        let counter = if warm { &self.warm } else { &self.cold };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Keeps `kept` as `session`'s latest state, forgetting the least recently used sessions
    /// beyond the limit (a session larger than the limit is not kept).
    pub(crate) fn put(&self, session: &str, kept: Kept) {
        let bytes = kept.bytes();
        if bytes > self.limit {
            return;
        }
        let mut inner = self.lock();
        if let Some(old) = inner.entries.remove(session) {
            inner.bytes -= old.bytes;
        }
        while inner.bytes + bytes > self.limit {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.used_at)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            if let Some(entry) = inner.entries.remove(&oldest) {
                inner.bytes -= entry.bytes;
            }
        }
        inner.clock += 1;
        let used_at = inner.clock;
        inner.bytes += bytes;
        inner.entries.insert(
            session.to_owned(),
            Entry {
                kept,
                bytes,
                used_at,
            },
        );
    }

    pub(crate) fn stats(&self) -> SessionCacheStats {
        let inner = self.lock();
        SessionCacheStats {
            sessions: inner.entries.len(),
            bytes: inner.bytes,
            warm_turns: self.warm.load(Ordering::Relaxed),
            cold_turns: self.cold.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(bytes: usize) -> Kept {
        Kept {
            state: State::default(),
            message_bytes: vec![vec![b'x'; bytes]],
            loop_bytes: Vec::new(),
            memo: Default::default(),
        }
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_total_stays_bounded() {
        let cache = SessionCache::new(100);
        cache.put("a", kept(40));
        cache.put("b", kept(40));
        // `a` is taken and given back: now the most recent.
        let a = cache.take("a").expect("kept");
        cache.put("a", a);
        cache.put("c", kept(40));
        assert!(cache.take("b").is_none(), "the least recently used went");
        assert_eq!(cache.stats().bytes, 80);
        assert!(cache.take("a").is_some());
        assert!(cache.take("c").is_some());
        assert_eq!(cache.stats().bytes, 0);
    }

    #[test]
    fn a_session_over_the_limit_is_not_kept_and_a_zero_limit_keeps_nothing() {
        let cache = SessionCache::new(100);
        cache.put("big", kept(101));
        assert!(cache.take("big").is_none());
        let none = SessionCache::new(0);
        none.put("a", kept(1));
        assert_eq!(none.stats().sessions, 0);
    }

    #[test]
    fn only_the_very_bytes_kept_match() {
        let k = Kept {
            state: State::default(),
            message_bytes: vec![b"{}".to_vec(), b"[1]".to_vec()],
            loop_bytes: b"{\"a\":1}".to_vec(),
            memo: Default::default(),
        };
        let same = [b"{}".to_vec(), b"[1]".to_vec()];
        assert!(k.matches(&same, Some(b"{\"a\":1}")));
        assert!(!k.matches(&same, Some(b"{\"a\": 1}")));
        assert!(!k.matches(&same, None));
        assert!(!k.matches(&same[..1], Some(b"{\"a\":1}")));
        let other = [b"{}".to_vec(), b"[2]".to_vec()];
        assert!(!k.matches(&other, Some(b"{\"a\":1}")));
    }
}
