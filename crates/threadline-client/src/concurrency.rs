//! The concurrency limit: at most N requests in flight, where a streamed response counts until
//! its stream ends or is dropped (tower's own limit releases its permit when the response
//! future resolves, which for a stream is when it has barely begun).
//!
//! Waiting for a slot is part of the call's future, so the service is always ready and a slow
//! caller never blocks another's `poll_ready`. The limit sits outside the retry layer: a request
//! waiting to be retried keeps its slot, so an overloaded API sees fewer new requests, not
//! more. The limit cannot fail: it has no error of its own.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use threadline_wire::MessagesRequest;
use threadline_wire::service::{EventStream, EventStreamFuture, ServiceError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Applies [`ConcurrencyLimit`] to a service; every service it makes shares one set of slots.
#[derive(Debug, Clone)]
pub struct ConcurrencyLimitLayer {
    slots: Arc<Semaphore>,
}

impl ConcurrencyLimitLayer {
    /// At most `max` requests at once (at least 1, at most [`Semaphore::MAX_PERMITS`], which
    /// no machine reaches).
    pub fn new(max: usize) -> Self {
        ConcurrencyLimitLayer {
            slots: Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS))),
        }
    }
}

impl<S> tower_layer::Layer<S> for ConcurrencyLimitLayer {
    type Service = ConcurrencyLimit<S>;

    fn layer(&self, inner: S) -> ConcurrencyLimit<S> {
        ConcurrencyLimit {
            inner,
            slots: Arc::clone(&self.slots),
        }
    }
}

/// A service that holds a slot for each request until its stream ends.
#[derive(Debug, Clone)]
pub struct ConcurrencyLimit<S> {
    inner: S,
    slots: Arc<Semaphore>,
}

impl<S> tower_service::Service<MessagesRequest> for ConcurrencyLimit<S>
where
    S: tower_service::Service<MessagesRequest, Response = EventStream, Error = ServiceError>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: MessagesRequest) -> Self::Future {
        let slots = Arc::clone(&self.slots);
        // The clone is driven to readiness below; `self.inner` stays untouched (tower's
        // clone-in-call rule).
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let permit = slots
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
            let stream = inner.call(request).await?;
            Ok(Box::pin(Permitted {
                inner: stream,
                permit: Some(permit),
            }) as EventStream)
        })
    }
}

/// A stream holding a concurrency slot until it ends, fails or is dropped.
struct Permitted {
    inner: EventStream,
    permit: Option<OwnedSemaphorePermit>,
}

impl Stream for Permitted {
    type Item = Result<threadline_wire::StreamEvent, ServiceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.permit = None;
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_limit_makes_a_layer() {
        for max in [
            0,
            1,
            Semaphore::MAX_PERMITS,
            Semaphore::MAX_PERMITS + 1,
            usize::MAX,
        ] {
            let layer = ConcurrencyLimitLayer::new(max);
            assert!(layer.slots.available_permits() >= 1, "{max}");
        }
    }
}
