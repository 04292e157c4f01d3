//! [`MemoryStore`]: sessions in a map behind a mutex (tests, short-lived agents).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use crate::entry::Entry;
use crate::error::StoreError;
use crate::key::SessionKey;
use crate::store::{Appended, SessionInfo, SessionStore};

/// Sessions in memory, gone with the process. A clone shares the data (an `Arc` inside).
///
/// Every operation completes without awaiting: the map's lock is held only while the
/// operation copies entries in or out.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<BTreeMap<SessionKey, Log>>>,
}

#[derive(Debug, Default)]
struct Log {
    entries: Vec<Entry>,
    ids: HashSet<String>,
    mtime_ms: u64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// The map, even if a thread panicked while holding it (every operation leaves the map
    /// consistent before it can panic, so the data is sound).
    fn map(&self) -> MutexGuard<'_, BTreeMap<SessionKey, Log>> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn append_now(&self, key: &SessionKey, entries: &[Entry]) -> Result<Appended, StoreError> {
        key.validate()?;
        let mut done = Appended::default();
        if entries.is_empty() {
            return Ok(done);
        }
        let mut map = self.map();
        let log = map.entry(key.clone()).or_default();
        for entry in entries {
            if let Some(id) = entry.id()
                && !log.ids.insert(id.to_owned())
            {
                done.duplicates += 1;
                continue;
            }
            log.entries.push(entry.clone());
            done.written += 1;
        }
        if done.written > 0 {
            log.mtime_ms = now_ms().max(log.mtime_ms);
        } else if log.entries.is_empty() {
            map.remove(key);
        }
        Ok(done)
    }

    fn load_now(&self, key: &SessionKey) -> Result<Option<Vec<Entry>>, StoreError> {
        key.validate()?;
        Ok(self.map().get(key).map(|log| log.entries.clone()))
    }

    fn list_now(&self, project: &str) -> Vec<SessionInfo> {
        let map = self.map();
        let mut sessions: BTreeMap<&str, u64> = BTreeMap::new();
        for (key, log) in map.iter().filter(|(k, _)| k.project == project) {
            let mtime = sessions.entry(key.session.as_str()).or_default();
            *mtime = (*mtime).max(log.mtime_ms);
        }
        sessions
            .into_iter()
            .map(|(session, mtime)| SessionInfo::new(session, mtime))
            .collect()
    }

    fn delete_now(&self, key: &SessionKey) -> Result<(), StoreError> {
        key.validate()?;
        let mut map = self.map();
        if key.is_main() {
            map.retain(|k, _| k.project != key.project || k.session != key.session);
        } else {
            map.remove(key);
        }
        Ok(())
    }

    fn subkeys_now(&self, key: &SessionKey) -> Result<Vec<String>, StoreError> {
        key.validate()?;
        let map = self.map();
        // The map is sorted by key, so the subpaths come out sorted.
        Ok(map
            .keys()
            .filter(|k| k.project == key.project && k.session == key.session)
            .filter_map(|k| k.subpath.clone())
            .collect())
    }
}

impl SessionStore for MemoryStore {
    fn append<'a>(
        &'a self,
        key: &'a SessionKey,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, Result<Appended, StoreError>> {
        Box::pin(async move { self.append_now(key, entries) })
    }

    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Option<Vec<Entry>>, StoreError>> {
        Box::pin(async move { self.load_now(key) })
    }

    fn list_sessions<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, StoreError>> {
        Box::pin(async move {
            crate::key::check_part("project", project)?;
            Ok(self.list_now(project))
        })
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.delete_now(key) })
    }

    fn list_subkeys<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move { self.subkeys_now(key) })
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_the_data() {
        let store = MemoryStore::new();
        let clone = store.clone();
        let key = SessionKey::new("p", "s").expect("key");
        let entry = Entry::new(&br#"{"uuid":"1"}"#[..]).expect("entry");
        futures::executor::block_on(clone.append(&key, std::slice::from_ref(&entry)))
            .expect("append");
        assert_eq!(
            futures::executor::block_on(store.load(&key)).expect("load"),
            Some(vec![entry])
        );
        let listed = store.list_now("p");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].session, "s");
        assert!(listed[0].mtime_ms > 1_000_000_000_000, "{listed:?}");
    }
}
