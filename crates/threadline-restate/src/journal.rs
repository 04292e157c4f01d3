//! The few durable operations the session driver needs, behind one trait: journaled steps,
//! keyed state, awakeables. [`RestateJournal`](crate::RestateJournal) implements it over a
//! Restate `ObjectContext`; [`RecordingJournal`](crate::RecordingJournal) in memory, for tests
//! that crash a turn at any step and replay it without a server.
//!
//! Every value is bytes (the JSON the driver wrote), so a replayed value is the very bytes the
//! first attempt produced.

use futures::future::BoxFuture;

/// Why a journal operation did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The invocation was cancelled (Restate's terminal error 409): the driver aborts the
    /// loop, lets it write its synthetic results, and persists a valid history.
    #[error("the invocation was cancelled")]
    Cancelled,
    /// The attempt is over (the worker is going away, or a test's simulated crash): nothing
    /// more may be written; the engine replays the invocation later.
    #[error("the attempt was abandoned: {0}")]
    Abandoned(String),
    /// Any other terminal failure of the engine (a journal mismatch, an undecodable value).
    #[error("journal failure {code}: {message}")]
    Terminal {
        /// The engine's code (HTTP-like).
        code: u16,
        /// Its message.
        message: String,
    },
}

impl JournalError {
    /// Whether this is a cancellation (the driver then writes a valid, aborted history).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JournalError::Cancelled)
    }
}

/// Reads keyed state (what a shared, read-only handler can do).
pub trait ReadState: Send + Sync {
    /// The value of `key`, if set.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, JournalError>>;
}

/// The durable operations of one invocation: journaled steps, keyed state, awakeables;
/// every value is bytes (the JSON the driver wrote), so a replayed value is the very bytes the
/// first attempt produced.
///
/// Rules the driver follows, so a replay takes the same path: every step is awaited before
/// the next operation; control flow depends only on values the journal returned.
pub trait Journal: ReadState {
    /// Runs `work` as the journaled step `name` and returns its result. On replay the
    /// recorded result is returned and `work` is dropped unpolled. `work` cannot fail: a
    /// failure the driver wants replayed is part of the value.
    fn step<'a>(
        &'a self,
        name: &'a str,
        work: BoxFuture<'static, Vec<u8>>,
    ) -> BoxFuture<'a, Result<Vec<u8>, JournalError>>;

    /// Sets `key` to `value`.
    fn set(&self, key: &str, value: Vec<u8>);

    /// Clears `key`.
    fn clear(&self, key: &str);

    /// A new awakeable: its id (which a client resolves) and the future of the value it is
    /// resolved with.
    fn awakeable(&self) -> (String, BoxFuture<'_, Result<Vec<u8>, JournalError>>);
}
