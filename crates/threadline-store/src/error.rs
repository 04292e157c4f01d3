//! What can go wrong in a session store.

/// A failure of a [`SessionStore`](crate::SessionStore) operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A key part is empty, too long or has a control character.
    #[error("invalid session key: the {part} {reason}")]
    InvalidKey {
        /// `project`, `session` or `subpath`.
        part: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An entry is not one JSON object on one line.
    #[error("invalid entry: {reason}")]
    InvalidEntry {
        /// What is wrong with it.
        reason: String,
    },
    /// An entry is larger than the store accepts.
    #[error("entry of {bytes} bytes is over the {max}-byte limit")]
    EntryTooLarge {
        /// The entry's size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Stored data could not be read back as entries (a torn or foreign file, a bad row).
    #[error("corrupt store at {location}: {reason}")]
    Corrupt {
        /// Where (a file and line, a row, a state key).
        location: String,
        /// What was found.
        reason: String,
    },
    /// The file system failed.
    #[error("{action} {path}")]
    Io {
        /// What the store was doing (`reading`, `appending to`, …).
        action: &'static str,
        /// The file or directory.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The backend (a database, a remote service) failed.
    #[error("{backend} failed: {action}")]
    Backend {
        /// Which backend (`sqlite`, `restate`, …).
        backend: &'static str,
        /// What it was doing.
        action: String,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl StoreError {
    /// Whether the caller's input was refused (a key or an entry), as opposed to the store
    /// failing: retrying the same call cannot succeed.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            StoreError::InvalidKey { .. }
                | StoreError::InvalidEntry { .. }
                | StoreError::EntryTooLarge { .. }
        )
    }

    /// Whether the store failed in a way a retry may fix (I/O, a busy database, a remote
    /// service).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Io { .. } | StoreError::Backend { .. })
    }
}
