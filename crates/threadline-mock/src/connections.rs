//! Connection slots: at most `max_connections` served at once, each watched for idleness; a
//! new connection over the limit closes the one idle longest.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// What the server knows of one connection: its requests in flight and when it last did
/// anything, and a way to tell it to close.
#[derive(Debug)]
pub(crate) struct Activity {
    in_flight: AtomicUsize,
    /// Milliseconds since the server's epoch of the last request's start or end.
    last_active_ms: AtomicU64,
    /// Told once when the server wants the slot back.
    close: Notify,
    /// The server asked it to close (so the next eviction picks another).
    closing: AtomicBool,
    /// A request has started on it.
    started: AtomicBool,
    epoch: Instant,
}

impl Activity {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch(&self) {
        self.last_active_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// A request started on this connection; it counts as in flight until the guard (held
    /// by the response body) drops.
    pub(crate) fn request_started(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.started.store(true, Ordering::Release);
        self.touch();
        RequestGuard {
            activity: Arc::clone(self),
        }
    }

    /// Whether no request is in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    fn idle_for(&self) -> Duration {
        let last = self.last_active_ms.load(Ordering::Relaxed);
        Duration::from_millis(self.now_ms().saturating_sub(last))
    }

    /// Resolves once the connection has had no request in flight for `timeout`.
    pub(crate) async fn idle_expired(&self, timeout: Duration) {
        loop {
            let idle_for = self.idle_for();
            if self.is_idle() && idle_for >= timeout {
                return;
            }
            // Busy connections are checked again a full period later; idle ones when their
            // period would end.
            let wait = if self.is_idle() {
                timeout - idle_for
            } else {
                timeout
            };
            tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
        }
    }

    /// Resolves when `timeout` has passed and no request has started on the connection yet
    /// (it never resolves once one has).
    pub(crate) async fn first_request_late(&self, timeout: Duration) {
        tokio::time::sleep(timeout).await;
        if self.started.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves when the server asked for this connection's slot back.
    pub(crate) async fn close_requested(&self) {
        self.close.notified().await;
    }
}

/// A request in flight; dropping it (the response body ended or was dropped) ends it.
#[derive(Debug)]
pub(crate) struct RequestGuard {
    activity: Arc<Activity>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.activity.touch();
        self.activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection's hold on its slot; dropping it frees the slot.
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    pub(crate) activity: Arc<Activity>,
    table: Arc<Connections>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.open().remove(&self.id);
    }
}

/// The served connections.
#[derive(Debug)]
pub(crate) struct Connections {
    slots: Arc<Semaphore>,
    open: Mutex<HashMap<u64, Arc<Activity>>>,
    next_id: AtomicU64,
    epoch: Instant,
}

impl Connections {
    pub(crate) fn new(max_connections: usize) -> Arc<Connections> {
        let max = max_connections.clamp(1, Semaphore::MAX_PERMITS);
        Arc::new(Connections {
            slots: Arc::new(Semaphore::new(max)),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    fn open(&self) -> MutexGuard<'_, HashMap<u64, Arc<Activity>>> {
        // Every critical section is one map operation: a poisoned map is still whole.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many connections hold a slot.
    pub(crate) fn count(&self) -> usize {
        self.open().len()
    }

    /// Asks the connection idle longest to close; `false` when none is idle.
    pub(crate) fn evict_longest_idle(&self) -> bool {
        self.evict_idle(1) > 0
    }

    /// Asks up to `count` connections, the longest idle first, to close; how many were asked.
    pub(crate) fn evict_idle(&self, count: usize) -> usize {
        let open = self.open();
        let mut idle: Vec<_> = open
            .values()
            .filter(|activity| activity.is_idle() && !activity.closing.load(Ordering::Relaxed))
            .map(|activity| (activity.idle_for(), activity))
            .collect();
        idle.sort_unstable_by_key(|(idle_for, _)| std::cmp::Reverse(*idle_for));
        let asked = idle.len().min(count);
        for (_, activity) in idle.into_iter().take(count) {
            activity.closing.store(true, Ordering::Relaxed);
            activity.close.notify_one();
        }
        asked
    }

    /// A slot for a new connection: at once if one is free, else after closing idle
    /// connections, else when a busy one ends.
    pub(crate) async fn slot(self: &Arc<Self>) -> Slot {
        let permit = loop {
            if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
                break permit;
            }
            self.evict_longest_idle();
            // The evicted connection frees its slot as soon as its task sees the request; a
            // connection that turned busy meanwhile keeps it, so try the next idle one soon.
            match tokio::time::timeout(
                Duration::from_millis(50),
                Arc::clone(&self.slots).acquire_owned(),
            )
            .await
            {
                Ok(Ok(permit)) => break permit,
                // The semaphore is never closed; a timeout means: evict again.
                Ok(Err(_)) | Err(_) => continue,
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity {
            in_flight: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(0),
            close: Notify::new(),
            closing: AtomicBool::new(false),
            started: AtomicBool::new(false),
            epoch: self.epoch,
        });
        activity.touch();
        self.open().insert(id, Arc::clone(&activity));
        Slot {
            id,
            activity,
            table: Arc::clone(self),
            _permit: permit,
        }
    }
}
