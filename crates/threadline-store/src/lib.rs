//! Where an agent's sessions live: the [`SessionStore`] contract (append, load, list, delete,
//! list sub-sessions; entries opaque and byte-identical; idempotent append by entry id), the
//! backends, and the conformance suite every backend passes.
//!
//! ```
//! use threadline_store::{Entry, JsonlStore, SessionKey, SessionStore};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = std::env::temp_dir().join(format!("threadline-store-doc-{}", std::process::id()));
//! let store = JsonlStore::new(&root);
//! let key = SessionKey::new("-home-me-project", "6f1c")?;
//! let line = Entry::new(&br#"{"type":"user","uuid":"u-1", "text": "hi"}"#[..])?;
//! futures::executor::block_on(async {
//!     // A retried append (the same uuid) writes nothing the second time.
//!     let first = store.append(&key, std::slice::from_ref(&line)).await?;
//!     let retry = store.append(&key, std::slice::from_ref(&line)).await?;
//!     assert_eq!((first.written, retry.written, retry.duplicates), (1, 0, 1));
//!     // One entry, byte for byte as appended (spacing included).
//!     assert_eq!(store.load(&key).await?, Some(vec![line.clone()]));
//!     store.delete(&key).await
//! })?;
//! std::fs::remove_dir_all(&root)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Backends
//!
//! - [`MemoryStore`]: a map behind a mutex; a clone shares the data.
//! - [`JsonlStore`]: Claude Code's layout, one JSONL file per session under a root, locked
//!   appends, idempotent across processes, torn tails reported and dropped.
//! - `SqliteStore` (feature `sqlite`): one row per entry in a WAL database, on a thread of
//!   its own.
//!
//! # Features
//!
//! - `conformance`: the `conformance` module: `conformance::run_all` on any store.
//! - `sqlite`: `SqliteStore` (rusqlite with SQLite compiled in).
#![forbid(unsafe_code)]

#[cfg(feature = "conformance")]
pub mod conformance;
mod entry;
mod error;
mod jsonl;
pub mod jsonl_file;
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
