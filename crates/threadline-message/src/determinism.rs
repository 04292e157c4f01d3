//! Deterministic ids and clock for replays: inside a [`Deterministic`] scope, new message ids
//! ([`MessageId::random`], [`Header::new`](crate::Header::new)) are derived from a seed and a
//! counter, and the clock ([`now`], [`Timestamp::now`](crate::Timestamp::now)) reads a fixed
//! time. A durable engine that replays a turn (after a crash, on another machine) runs it in
//! a scope with the same seed and time, and gets the same messages, byte for byte, so the
//! same request bytes (the prompt cache survives a failover).
//!
//! The scope is a thread-local installed for the duration of each poll (or of one closure,
//! [`Source::enter`]), so it needs no runtime and follows a future across threads. Outside a
//! scope, ids are random (v4) and the clock is the wall clock.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use threadline_message::determinism::{Source, now};
//! use threadline_message::Message;
//!
//! let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
//! let first = Source::new("session-1/turn-3", at).enter(|| Message::user_text("hi"));
//! let again = Source::new("session-1/turn-3", at).enter(|| Message::user_text("hi"));
//! assert_eq!(first, again);
//! assert_eq!(first.header().timestamp.as_str(), "2027-01-15T08:00:00.000Z");
//! assert_eq!(Source::new("s", at).enter(now), at);
//! assert_ne!(Message::user_text("hi"), Message::user_text("hi")); // outside: random ids
//! ```

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::SystemTime;

use crate::header::MessageId;

/// Where ids and the time come from inside a scope: a seed, a counter, a fixed time. Cheap to
/// clone (the counter is shared by the clones).
#[derive(Debug, Clone)]
pub struct Source {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    seed: String,
    at: SystemTime,
    counter: AtomicU64,
}

thread_local! {
    static CURRENT: RefCell<Option<Source>> = const { RefCell::new(None) };
}

impl Source {
    /// A source whose ids derive from `seed` (then a counter from 0) and whose clock reads
    /// `at`.
    pub fn new(seed: impl Into<String>, at: SystemTime) -> Source {
        Source {
            inner: Arc::new(Inner {
                seed: seed.into(),
                at,
                counter: AtomicU64::new(0),
            }),
        }
    }

    /// How many ids were handed out.
    pub fn ids_issued(&self) -> u64 {
        self.inner.counter.load(Ordering::Relaxed)
    }

    /// Runs `f` with this source installed (the previous one, if any, is restored after).
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }

    /// `future`, with this source installed during each of its polls.
    pub fn scope<F: Future>(&self, future: F) -> Deterministic<F> {
        Deterministic {
            source: self.clone(),
            inner: Box::pin(future),
        }
    }

    fn next_id(&self) -> MessageId {
        let n = self.inner.counter.fetch_add(1, Ordering::Relaxed);
        crate::session_ops::derive_id(&["determinism", &self.inner.seed, &n.to_string()])
    }
}

struct Restore(Option<Source>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// A future polled with a [`Source`] installed (see [`Source::scope`]).
#[derive(Debug)]
pub struct Deterministic<F> {
    source: Source,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Deterministic<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let source = this.source.clone();
        source.enter(|| this.inner.as_mut().poll(cx))
    }
}

/// The current time: the scope's fixed time inside a [`Deterministic`] scope, the wall clock
/// outside.
pub fn now() -> SystemTime {
    CURRENT
        .with(|c| c.borrow().as_ref().map(|s| s.inner.at))
        .unwrap_or_else(SystemTime::now)
}

/// A new message id: derived from the scope's seed and counter inside a scope, a random v4
/// UUID outside.
pub(crate) fn next_id() -> MessageId {
    CURRENT
        .with(|c| c.borrow().as_ref().map(Source::next_id))
        .unwrap_or_else(|| MessageId(uuid::Uuid::new_v4().to_string()))
}

/// Whether a scope is installed on this thread.
pub fn is_deterministic() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ids_follow_the_counter_and_scopes_nest_and_restore() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let a = Source::new("a", at);
        let (x, y) = a.enter(|| (next_id(), next_id()));
        assert_ne!(x, y);
        assert_eq!(a.ids_issued(), 2);
        let b = Source::new("a", at);
        assert_eq!(b.enter(|| (next_id(), next_id())), (x.clone(), y));
        let inner = a.enter(|| {
            let nested = Source::new("other", SystemTime::UNIX_EPOCH).enter(next_id);
            (nested, now())
        });
        assert_ne!(inner.0, x);
        assert_eq!(inner.1, at);
        assert!(!is_deterministic());
        assert_eq!(
            uuid::Uuid::parse_str(x.as_str()).map(|u| u.get_version_num()),
            Ok(8)
        );
    }

    #[test]
    fn a_scoped_future_sees_its_source_on_every_poll_only() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(5);
        let source = Source::new("f", at);
        let future = source.scope(async {
            let first = now();
            futures_lite_yield().await;
            (first, now(), is_deterministic())
        });
        let out = block_on(future);
        assert_eq!(out, (at, at, true));
        assert!(!is_deterministic());
    }

    /// Yields once (returns Pending, wakes itself).
    async fn futures_lite_yield() {
        let mut yielded = false;
        std::future::poll_fn(|cx| {
            if yielded {
                Poll::Ready(())
            } else {
                yielded = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
        .await
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
        }
    }
}
