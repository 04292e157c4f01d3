//! The timeout layers: a deadline for the first event of a response, and for the gap between
//! two events of a stream ([`TimeoutLayer`], under the retries); a deadline for the whole
//! request, retries included, up to the stream's last event ([`DeadlineLayer`], over them).
//! (The connect timeout is the connector's: see
//! [`Timeouts::connect`](crate::config::Timeouts::connect).)
//!
//! A timeout is a [`ServiceError`] of kind [`Timeout`](ServiceErrorKind::Timeout) whose source
//! is a [`TimeoutError`] naming the phase. Before the first event it may be retried; a timeout
//! in the middle of a stream (idle or total) is marked as after events, and is not.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use threadline_wire::MessagesRequest;
use threadline_wire::service::{EventStream, EventStreamFuture, ServiceError, ServiceErrorKind};
use tokio::time::{Instant, Sleep};

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// Establishing the connection.
    Connect,
    /// Waiting for the response and its first event.
    FirstByte,
    /// Waiting for the next event of a stream.
    Idle,
    /// The whole request, retries included, up to its last event.
    Total,
}

/// A wait that ran out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} timed out after {limit:?}", match .phase {
    TimeoutPhase::Connect => "connecting",
    TimeoutPhase::FirstByte => "waiting for the first event",
    TimeoutPhase::Idle => "waiting for the next event",
    TimeoutPhase::Total => "the whole request",
})]
#[non_exhaustive]
pub struct TimeoutError {
    /// Which wait.
    pub phase: TimeoutPhase,
    /// How long it was allowed to take.
    pub limit: Duration,
}

impl TimeoutError {
    /// A timeout of `phase` after `limit`.
    pub fn new(phase: TimeoutPhase, limit: Duration) -> Self {
        TimeoutError { phase, limit }
    }

    pub(crate) fn into_service_error(self) -> ServiceError {
        ServiceError::new(ServiceErrorKind::Timeout, self.to_string()).with_source(self)
    }
}

/// Applies [`Timeout`] to a service.
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    first_byte: Duration,
    idle: Duration,
}

impl TimeoutLayer {
    /// First-event and idle deadlines.
    pub fn new(first_byte: Duration, idle: Duration) -> Self {
        TimeoutLayer { first_byte, idle }
    }
}

impl<S> tower_layer::Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            first_byte: self.first_byte,
            idle: self.idle,
        }
    }
}

/// A service whose calls must produce their first event within a deadline, and whose streams
/// may not stall longer than the idle deadline.
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    first_byte: Duration,
    idle: Duration,
}

impl<S> tower_service::Service<MessagesRequest> for Timeout<S>
where
    S: tower_service::Service<MessagesRequest, Response = EventStream, Error = ServiceError>,
    S::Future: Send + 'static,
{
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: MessagesRequest) -> Self::Future {
        let call = self.inner.call(request);
        let (first_byte, idle) = (self.first_byte, self.idle);
        Box::pin(async move {
            match tokio::time::timeout(first_byte, call).await {
                Ok(Ok(stream)) => Ok(Box::pin(IdleTimeout::new(stream, idle)) as EventStream),
                Ok(Err(error)) => Err(error),
                Err(_) => {
                    Err(TimeoutError::new(TimeoutPhase::FirstByte, first_byte).into_service_error())
                }
            }
        })
    }
}

/// A stream that fails when the server makes it wait longer than `idle` for an item.
///
/// The clock starts when the inner stream first answers `Pending` after an item (the moment
/// the client starts waiting on the network), not at each item: a burst of events decoded from
/// one read costs no clock reads, and time the caller spends between polls never counts.
struct IdleTimeout {
    inner: EventStream,
    idle: Duration,
    sleep: Pin<Box<Sleep>>,
    waiting: bool,
    done: bool,
}

impl IdleTimeout {
    fn new(inner: EventStream, idle: Duration) -> Self {
        IdleTimeout {
            inner,
            idle,
            sleep: Box::pin(tokio::time::sleep(idle)),
            waiting: false,
            done: false,
        }
    }
}

impl Stream for IdleTimeout {
    type Item = Result<threadline_wire::StreamEvent, ServiceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(item) => {
                this.waiting = false;
                if item.is_none() {
                    this.done = true;
                }
                Poll::Ready(item)
            }
            Poll::Pending => {
                if !this.waiting {
                    this.waiting = true;
                    // A limit too far to represent is none: the sleep made in `new` (at
                    // Tokio's far future) is left as it is.
                    if let Some(deadline) = Instant::now().checked_add(this.idle) {
                        this.sleep.as_mut().reset(deadline);
                    }
                }
                match this.sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.done = true;
                        // The stream had delivered its first event before it was returned.
                        let error = TimeoutError::new(TimeoutPhase::Idle, this.idle)
                            .into_service_error()
                            .after_events();
                        Poll::Ready(Some(Err(error)))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

/// Applies [`Deadline`] to a service: the whole call, up to the stream's last event.
#[derive(Debug, Clone, Copy)]
pub struct DeadlineLayer {
    total: Duration,
}

impl DeadlineLayer {
    /// A deadline of `total` from each call.
    pub fn new(total: Duration) -> Self {
        DeadlineLayer { total }
    }
}

impl<S> tower_layer::Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Deadline<S> {
        Deadline {
            inner,
            total: self.total,
        }
    }
}

/// A service whose calls, and the streams they return, must be over within a deadline from
/// the call: unlike the idle deadline, events (a `ping` every few minutes) do not push it back.
#[derive(Debug, Clone)]
pub struct Deadline<S> {
    inner: S,
    total: Duration,
}

impl<S> tower_service::Service<MessagesRequest> for Deadline<S>
where
    S: tower_service::Service<MessagesRequest, Response = EventStream, Error = ServiceError>,
    S::Future: Send + 'static,
{
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: MessagesRequest) -> Self::Future {
        let total = self.total;
        // A deadline too far to represent is no deadline.
        let Some(deadline) = Instant::now().checked_add(total) else {
            return Box::pin(self.inner.call(request));
        };
        let call = self.inner.call(request);
        Box::pin(async move {
            // One timer for the call and then its stream: registering a second one when the
            // stream starts would cost the timer driver's lock twice more per request.
            let mut sleep = Box::pin(tokio::time::sleep_until(deadline));
            let mut call = std::pin::pin!(call);
            // The call first, as `tokio::time::timeout` does: an answer ready at the deadline
            // is taken.
            let answered = std::future::poll_fn(|cx| match call.as_mut().poll(cx) {
                Poll::Ready(result) => Poll::Ready(Some(result)),
                Poll::Pending => sleep.as_mut().poll(cx).map(|()| None),
            })
            .await;
            match answered {
                Some(Ok(stream)) => {
                    Ok(Box::pin(DeadlineStream::new(stream, sleep, total)) as EventStream)
                }
                Some(Err(error)) => Err(error),
                None => Err(TimeoutError::new(TimeoutPhase::Total, total).into_service_error()),
            }
        })
    }
}

/// A stream that fails once its deadline has passed, however often it delivers events.
struct DeadlineStream {
    inner: EventStream,
    total: Duration,
    sleep: Pin<Box<Sleep>>,
    done: bool,
}

impl DeadlineStream {
    /// `inner`, ending when `sleep` (the call's deadline timer) fires.
    fn new(inner: EventStream, sleep: Pin<Box<Sleep>>, total: Duration) -> Self {
        DeadlineStream {
            inner,
            total,
            sleep,
            done: false,
        }
    }
}

impl Stream for DeadlineStream {
    type Item = Result<threadline_wire::StreamEvent, ServiceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        // The deadline first: a stream whose events are always ready must still end.
        if this.sleep.as_mut().poll(cx).is_ready() {
            this.done = true;
            // The stream had delivered its first event before it was returned.
            let error = TimeoutError::new(TimeoutPhase::Total, this.total)
                .into_service_error()
                .after_events();
            return Poll::Ready(Some(Err(error)));
        }
        let item = this.inner.as_mut().poll_next(cx);
        if let Poll::Ready(None) = item {
            this.done = true;
        }
        item
    }
}
