//! [`RestateStore`]: a [`SessionStore`] over Restate keyed state, through the ingress.

mod object;
mod wire;

use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use restate_sdk::endpoint::Builder;
use threadline_store::{Appended, Entry, SessionInfo, SessionKey, SessionStore, StoreError};

use crate::http::ClientError;
use crate::ingress::Ingress;

pub use object::{SessionIndex, SessionLog};
pub use wire::{SESSION_INDEX, SESSION_LOG};

use wire::{
    AppendRequest, AppendResult, DeleteRequest, Listed, LoadPage, LoadRequest, WireEntry,
    object_key,
};

/// The largest append request the store sends (Restate's ingress refuses bodies over 32 MiB).
pub const MAX_APPEND_REQUEST_BYTES: usize = 30 * 1024 * 1024;

/// How many times a load starts over when the log changes under it (a delete).
const LOAD_ATTEMPTS: usize = 3;

/// Binds the store's objects (`SessionLog`, `SessionIndex`) on an endpoint.
///
/// ```
/// use restate_sdk::endpoint::Endpoint;
///
/// let endpoint = threadline_restate::bind_store(Endpoint::builder()).build();
/// # drop(endpoint);
/// ```
pub fn bind_store(builder: Builder) -> Builder {
    builder.bind(SessionLog).bind(SessionIndex)
}

/// A [`SessionStore`] whose data lives in Restate keyed state, reached through the ingress.
///
/// Each session is one `SessionLog` Virtual Object (key: the project and the session id,
/// each percent-encoded, joined by `/`) holding its main log and its sub-sessions; each
/// project has one `SessionIndex` object listing its sessions. Serve both on a worker with
/// [`bind_store`], register the worker with the Restate server, then use the store from
/// anywhere that reaches the ingress.
///
/// * An append is one exclusive invocation: all of its entries or none, ids already held
///   skipped. Each entry is one state key holding its exact bytes (never re-serialized).
/// * A load reads pages of at most 8 MiB from a shared handler (it runs beside appends).
///   Entries appended while a load pages are not returned by it; a delete during a load
///   makes the load start over (twice at most).
/// * `list_sessions` reads the project's `SessionIndex`, which the append updates before it
///   returns; a session's `mtime_ms` is refreshed at most once a second while it is appended
///   to continuously.
/// * Deleting a main key clears the object (the main log and every sub-session) in one step.
#[derive(Debug, Clone)]
pub struct RestateStore {
    ingress: Ingress,
}

fn backend(action: impl Into<String>, source: ClientError) -> StoreError {
    StoreError::Backend {
        backend: "restate",
        action: action.into(),
        source: Box::new(source),
    }
}

fn protocol(action: &str, detail: String) -> StoreError {
    StoreError::Corrupt {
        location: format!("restate {action}"),
        reason: detail,
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl RestateStore {
    /// A store that reaches its objects through `ingress`. The worker serving
    /// [`bind_store`]'s objects must be registered with that server.
    pub fn new(ingress: Ingress) -> Self {
        Self { ingress }
    }

    /// The ingress it calls.
    pub fn ingress(&self) -> &Ingress {
        &self.ingress
    }

    async fn invoke<T: serde::de::DeserializeOwned>(
        &self,
        service: &str,
        object: &str,
        handler: &str,
        body: &[u8],
    ) -> Result<T, StoreError> {
        let action = format!("{service}/{handler}");
        let out = self
            .ingress
            .call(service, object, handler, body)
            .await
            .map_err(|e| backend(action.clone(), e))?;
        serde_json::from_slice(&out).map_err(|e| protocol(&action, format!("bad answer: {e}")))
    }

    async fn append_now(
        &self,
        key: &SessionKey,
        entries: &[Entry],
    ) -> Result<Appended, StoreError> {
        key.validate()?;
        if entries.is_empty() {
            return Ok(Appended::default());
        }
        let mut wire_entries = Vec::with_capacity(entries.len());
        for entry in entries {
            let line =
                std::str::from_utf8(entry.bytes()).map_err(|_| StoreError::InvalidEntry {
                    reason: "not UTF-8".to_owned(),
                })?;
            wire_entries.push(WireEntry {
                id: entry.id().map(str::to_owned),
                line: line.to_owned(),
            });
        }
        let request = AppendRequest {
            subpath: key.subpath.clone(),
            now_ms: now_ms(),
            entries: wire_entries,
        };
        let body = serde_json::to_vec(&request).map_err(|e| StoreError::InvalidEntry {
            reason: format!("not serializable: {e}"),
        })?;
        if body.len() > MAX_APPEND_REQUEST_BYTES {
            return Err(StoreError::InvalidEntry {
                reason: format!(
                    "an append request of {} bytes is over the {MAX_APPEND_REQUEST_BYTES}-byte limit of the Restate store: append fewer entries per call",
                    body.len()
                ),
            });
        }
        let object = object_key(&key.project, &key.session);
        let done: AppendResult = self.invoke(SESSION_LOG, &object, "append", &body).await?;
        let mut appended = Appended::default();
        appended.written = done.written;
        appended.duplicates = done.duplicates;
        Ok(appended)
    }

    async fn load_now(&self, key: &SessionKey) -> Result<Option<Vec<Entry>>, StoreError> {
        key.validate()?;
        let object = object_key(&key.project, &key.session);
        'attempt: for _ in 0..LOAD_ATTEMPTS {
            let mut entries: Vec<Entry> = Vec::new();
            let mut snapshot_total: Option<u64> = None;
            loop {
                let request = LoadRequest {
                    subpath: key.subpath.clone(),
                    from: entries.len() as u64,
                };
                let body = serde_json::to_vec(&request)
                    .map_err(|e| protocol("SessionLog/load", e.to_string()))?;
                let page: LoadPage = self.invoke(SESSION_LOG, &object, "load", &body).await?;
                let Some(total) = page.total else {
                    if snapshot_total.is_none() {
                        return Ok(None);
                    }
                    // Deleted while paging: start over.
                    continue 'attempt;
                };
                let end = *snapshot_total.get_or_insert(total);
                if total < end {
                    continue 'attempt;
                }
                for line in page.entries {
                    if entries.len() as u64 >= end {
                        break;
                    }
                    let entry = Entry::new(line.into_bytes()).map_err(|e| StoreError::Corrupt {
                        location: format!("restate SessionLog {object} entry {}", entries.len()),
                        reason: e.to_string(),
                    })?;
                    entries.push(entry);
                }
                if entries.len() as u64 >= end {
                    return Ok(Some(entries));
                }
                if entries.len() as u64 == request.from {
                    return Err(protocol(
                        "SessionLog/load",
                        format!("an empty page at entry {} of {end}", request.from),
                    ));
                }
            }
        }
        Err(protocol(
            "SessionLog/load",
            format!("the log kept changing during {LOAD_ATTEMPTS} loads"),
        ))
    }

    async fn list_now(&self, project: &str) -> Result<Vec<SessionInfo>, StoreError> {
        if project.is_empty() {
            return Ok(Vec::new());
        }
        let listed: Vec<Listed> = self.invoke(SESSION_INDEX, project, "list", b"").await?;
        let mut sessions: Vec<SessionInfo> = listed
            .into_iter()
            .map(|l| SessionInfo::new(l.session, l.mtime_ms))
            .collect();
        sessions.sort_by(|a, b| a.session.cmp(&b.session));
        Ok(sessions)
    }

    async fn delete_now(&self, key: &SessionKey) -> Result<(), StoreError> {
        key.validate()?;
        let object = object_key(&key.project, &key.session);
        let body = serde_json::to_vec(&DeleteRequest {
            subpath: key.subpath.clone(),
        })
        .map_err(|e| protocol("SessionLog/delete", e.to_string()))?;
        let out = self
            .ingress
            .call(SESSION_LOG, &object, "delete", &body)
            .await
            .map_err(|e| backend("SessionLog/delete", e))?;
        if out.is_empty() {
            Ok(())
        } else {
            Err(protocol(
                "SessionLog/delete",
                "expected an empty answer".to_owned(),
            ))
        }
    }

    async fn subkeys_now(&self, key: &SessionKey) -> Result<Vec<String>, StoreError> {
        key.validate()?;
        let object = object_key(&key.project, &key.session);
        let mut subs: Vec<String> = self.invoke(SESSION_LOG, &object, "subkeys", b"").await?;
        subs.sort();
        Ok(subs)
    }
}

impl SessionStore for RestateStore {
    fn append<'a>(
        &'a self,
        key: &'a SessionKey,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, Result<Appended, StoreError>> {
        Box::pin(self.append_now(key, entries))
    }

    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Option<Vec<Entry>>, StoreError>> {
        Box::pin(self.load_now(key))
    }

    fn list_sessions<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, StoreError>> {
        Box::pin(self.list_now(project))
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.delete_now(key))
    }

    fn list_subkeys<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(self.subkeys_now(key))
    }
}
