//! The Restate objects behind [`RestateStore`](super::RestateStore): `SessionLog` (one per
//! session: the main log and its sub-sessions, one state key per entry holding its exact
//! bytes) and `SessionIndex` (one per project: its sessions and their last append time).

use std::collections::BTreeSet;

use restate_sdk::prelude::*;

use super::wire::{
    AppendRequest, AppendResult, DeleteRequest, INDEX_REFRESH_MS, INDEXED_MS, Listed, LoadPage,
    LoadRequest, LogKeys, PAGE_BYTES, SUBS, Touch, index_key, index_session, parse_object_key,
};

/// The per-session Virtual Object (`SessionLog`), keyed by an encoding of (project, session).
///
/// Exclusive `append` and `delete`, shared `load` and `subkeys`. State: per log (the main one,
/// or a sub-session) a count, one key per entry holding its bytes unchanged, one key per entry
/// id (idempotent append); the sorted list of sub-sessions; when the project index was last
/// refreshed. A sub-session lives in its session's object, so deleting the main key clears
/// everything in one step. Lazy state: an append reads only the keys it needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionLog;

/// The per-project Virtual Object (`SessionIndex`), keyed by the project: one state key per
/// session holding its last append time in milliseconds. `SessionLog` updates it within its
/// own `append` and `delete`, so a listing is current when those return.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionIndex;

/// How many entries a `load` reads at once (pipelined): it holds at most this many entries
/// of up to 8 MiB in memory.
const READ_BATCH: usize = 16;
/// How many id markers an `append` reads at once (small values).
const ID_BATCH: usize = 128;

/// Awaits `futures` together, every one polled with the caller's own waker, and returns their
/// outputs in order.
///
/// The SDK's state futures share one input channel that keeps a single waker, so they must
/// be polled by one task: a combinator giving each future its own waker (e.g. `FuturesOrdered`,
/// which `try_join_all` switches to above 30 futures) leaves some never woken, and the
/// invocation stalled until the server's inactivity timeout (measured: 15 s per append of 100
/// ids). The state commands themselves are issued when the futures are created, in order, so
/// the journal is the same on every attempt.
async fn join_in_one_task<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (future, slot) in pending.iter_mut().zip(done.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(out) => *slot = Some(out),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

fn bad_request(message: impl Into<String>) -> HandlerError {
    TerminalError::new_with_code(400, message.into()).into()
}

fn corrupt(message: impl Into<String>) -> HandlerError {
    TerminalError::new_with_code(500, message.into()).into()
}

fn project_and_session(key: &str) -> HandlerResult<(String, String)> {
    parse_object_key(key).ok_or_else(|| bad_request(format!("not a SessionLog key: {key:?}")))
}

fn subs_of(stored: Option<Json<BTreeSet<String>>>) -> BTreeSet<String> {
    stored.map(Json::into_inner).unwrap_or_default()
}

#[restate_sdk::object(
    name = "SessionLog",
    lazy_state = true,
    client_visibility = "pub(crate)"
)]
impl SessionLog {
    /// Appends entries to the main log or a sub-session; skips ids already held (also within
    /// the call). All or nothing: one invocation.
    #[handler]
    async fn append(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<AppendRequest>,
    ) -> HandlerResult<Json<AppendResult>> {
        let request = request.into_inner();
        let (project, session) = project_and_session(ctx.key())?;
        let keys = LogKeys::new(request.subpath.as_deref());
        let count_key = keys.count();
        let mut count = ctx.get::<u64>(&count_key).await?.unwrap_or(0);
        // Every id's marker read at once (the reads are pipelined), then the entries in order.
        let ids: Vec<String> = request
            .entries
            .iter()
            .filter_map(|e| e.id.as_ref().map(|id| keys.id(id)))
            .collect();
        let mut held = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(ID_BATCH) {
            for value in join_in_one_task(chunk.iter().map(|k| ctx.get::<u64>(k)).collect()).await {
                held.push(value?);
            }
        }
        let mut held = held.into_iter();
        let mut seen = BTreeSet::new();
        let mut result = AppendResult {
            written: 0,
            duplicates: 0,
        };
        for entry in request.entries {
            if let Some(id) = &entry.id {
                let already = held.next().flatten().is_some();
                if already || !seen.insert(id.clone()) {
                    result.duplicates += 1;
                    continue;
                }
                ctx.set(&keys.id(id), count);
            }
            ctx.set(&keys.entry(count), entry.line.into_bytes());
            count += 1;
            result.written += 1;
        }
        if result.written == 0 {
            return Ok(Json(result));
        }
        ctx.set(&count_key, count);
        if let Some(subpath) = request.subpath {
            let mut subs = subs_of(ctx.get::<Json<BTreeSet<String>>>(SUBS).await?);
            if subs.insert(subpath) {
                ctx.set(SUBS, Json(subs));
            }
        }
        let indexed = ctx.get::<u64>(INDEXED_MS).await?;
        if indexed.is_none_or(|at| request.now_ms.saturating_sub(at) >= INDEX_REFRESH_MS) {
            ctx.object_client::<SessionIndexClient>(project)
                .touch(Json(Touch {
                    session,
                    mtime_ms: request.now_ms,
                }))
                .call()
                .await?;
            ctx.set(INDEXED_MS, request.now_ms);
        }
        Ok(Json(result))
    }

    /// Deletes the main log with every sub-session (and the session from the project index),
    /// or one sub-session (and the session from the index if nothing is left).
    #[handler]
    async fn delete(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<DeleteRequest>,
    ) -> HandlerResult<()> {
        let request = request.into_inner();
        let (project, session) = project_and_session(ctx.key())?;
        let gone = match request.subpath {
            None => true,
            Some(subpath) => {
                let keys = LogKeys::new(Some(&subpath));
                for state_key in ctx.get_keys().await? {
                    if keys.owns(&state_key) {
                        ctx.clear(&state_key);
                    }
                }
                let mut subs = subs_of(ctx.get::<Json<BTreeSet<String>>>(SUBS).await?);
                if subs.remove(&subpath) {
                    ctx.set(SUBS, Json(subs.clone()));
                }
                let main_exists = ctx.get::<u64>(&LogKeys::new(None).count()).await?.is_some();
                subs.is_empty() && !main_exists
            }
        };
        if gone {
            ctx.clear_all();
            ctx.object_client::<SessionIndexClient>(project)
                .remove(session)
                .call()
                .await?;
        }
        Ok(())
    }

    /// One page of a log's entries from `from` (at most 8 MiB of entry bytes, at least one
    /// entry while any is left) and the log's length (`None`: it does not exist).
    #[handler]
    async fn load(
        &self,
        ctx: SharedObjectContext<'_>,
        request: Json<LoadRequest>,
    ) -> HandlerResult<Json<LoadPage>> {
        let request = request.into_inner();
        let keys = LogKeys::new(request.subpath.as_deref());
        let Some(total) = ctx.get::<u64>(&keys.count()).await? else {
            return Ok(Json(LoadPage {
                total: None,
                entries: Vec::new(),
            }));
        };
        let mut entries = Vec::new();
        let mut bytes = 0usize;
        let mut seq = request.from;
        'page: while seq < total {
            // A few reads at once (pipelined).
            let end = total.min(seq.saturating_add(READ_BATCH as u64));
            let batch: Vec<String> = (seq..end).map(|i| keys.entry(i)).collect();
            let lines =
                join_in_one_task(batch.iter().map(|k| ctx.get::<Vec<u8>>(k)).collect()).await;
            for (key, line) in batch.iter().zip(lines) {
                let Some(line) = line? else {
                    return Err(corrupt(format!("missing state key {key}")));
                };
                if !entries.is_empty() && bytes + line.len() > PAGE_BYTES {
                    break 'page;
                }
                bytes += line.len();
                let line = String::from_utf8(line)
                    .map_err(|_| corrupt(format!("state key {key} is not UTF-8")))?;
                entries.push(line);
                seq += 1;
            }
        }
        Ok(Json(LoadPage {
            total: Some(total),
            entries,
        }))
    }

    /// The sub-sessions holding entries, sorted.
    #[handler]
    async fn subkeys(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Vec<String>>> {
        Ok(Json(
            subs_of(ctx.get::<Json<BTreeSet<String>>>(SUBS).await?)
                .into_iter()
                .collect(),
        ))
    }
}

#[restate_sdk::object(name = "SessionIndex", client_visibility = "pub(crate)")]
impl SessionIndex {
    /// Records that `session` was appended to at `mtime_ms` (the latest time wins).
    #[handler]
    async fn touch(&self, ctx: ObjectContext<'_>, touch: Json<Touch>) -> HandlerResult<()> {
        let touch = touch.into_inner();
        let key = index_key(&touch.session);
        let old = ctx.get::<u64>(&key).await?;
        if old.is_none_or(|old| old < touch.mtime_ms) {
            ctx.set(&key, touch.mtime_ms);
        }
        Ok(())
    }

    /// Forgets `session`.
    #[handler]
    async fn remove(&self, ctx: ObjectContext<'_>, session: String) -> HandlerResult<()> {
        ctx.clear(&index_key(&session));
        Ok(())
    }

    /// The project's sessions and their last append times, sorted by session.
    #[handler]
    async fn list(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Vec<Listed>>> {
        let mut listed = Vec::new();
        for state_key in ctx.get_keys().await? {
            let Some(session) = index_session(&state_key) else {
                continue;
            };
            if let Some(mtime_ms) = ctx.get::<u64>(&state_key).await? {
                listed.push(Listed {
                    session: session.to_owned(),
                    mtime_ms,
                });
            }
        }
        listed.sort_by(|a, b| a.session.cmp(&b.session));
        Ok(Json(listed))
    }
}
