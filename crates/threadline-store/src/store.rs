//! The contract every session store keeps.

use futures::future::BoxFuture;

use crate::entry::Entry;
use crate::error::StoreError;
use crate::key::SessionKey;

/// A session of a project, as [`SessionStore::list_sessions`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session id.
    pub session: String,
    /// When the session (main key or a sub-session) was last appended to, in milliseconds
    /// since the Unix epoch.
    pub mtime_ms: u64,
}

impl SessionInfo {
    /// A listed session.
    pub fn new(session: impl Into<String>, mtime_ms: u64) -> Self {
        SessionInfo {
            session: session.into(),
            mtime_ms,
        }
    }
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Appended {
    /// Entries written.
    pub written: usize,
    /// Entries skipped because the key already held an entry with the same id (a retried
    /// append).
    pub duplicates: usize,
}

/// Where sessions live: an append-only log of opaque entries per [`SessionKey`].
///
/// The contract (the `conformance` module checks every point on a backend):
/// - `load` returns the entries of a key in append order, byte-identical; `None` for a key
///   never written (or deleted).
/// - `append` is atomic per call (all of `entries` or none), keeps the call's order, and is
///   idempotent by [`Entry::id`]: an entry whose id the key already holds is skipped, also
///   within one call. `append(key, &[])` is a no-op and creates nothing.
/// - Concurrent appenders to one key never tear or interleave an entry; each appender's
///   entries keep their order.
/// - Keys are isolated: a sub-session is stored apart from its main session, projects apart
///   from each other.
/// - `list_sessions(project)` lists the project's sessions that have a main or a sub-session
///   entry, each once, with the last append time; an unknown project lists nothing.
/// - `delete` of a main key removes the session and all its sub-sessions; of a sub-session,
///   only it; deleting what does not exist is not an error.
/// - `list_subkeys(key)` lists the subpaths of `key`'s session that hold entries (sorted),
///   never the main key.
pub trait SessionStore: Send + Sync {
    /// Appends `entries` to `key`.
    fn append<'a>(
        &'a self,
        key: &'a SessionKey,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, Result<Appended, StoreError>>;

    /// The entries of `key`, in order (`None`: never written, or deleted).
    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Option<Vec<Entry>>, StoreError>>;

    /// The sessions of `project`, sorted by session id.
    fn list_sessions<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, StoreError>>;

    /// Deletes `key` (a main key: with its sub-sessions).
    fn delete<'a>(&'a self, key: &'a SessionKey) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The subpaths of `key`'s session that hold entries, sorted.
    fn list_subkeys<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;
}
