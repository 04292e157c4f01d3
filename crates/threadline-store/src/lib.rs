//! Where an agent's sessions live: the [`SessionStore`] contract (append, load, list, delete,
//! list sub-sessions; entries opaque and byte-identical; idempotent append by entry id), the
//! backends, and the conformance suite every backend passes.
#![forbid(unsafe_code)]

#[cfg(feature = "conformance")]
pub mod conformance;
mod entry;
mod error;
mod jsonl;
mod key;
mod memory;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

pub use entry::{Entry, MAX_ENTRY_BYTES};
pub use error::StoreError;
pub use jsonl::JsonlStore;
pub use key::{MAX_KEY_PART_BYTES, SessionKey};
pub use memory::MemoryStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use store::{Appended, SessionInfo, SessionStore};
