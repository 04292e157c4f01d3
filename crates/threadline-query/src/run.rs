//! The event stream of a run: the driver future and the channel it reports through, polled
//! together so the run needs no spawned task and no particular runtime.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::stream::StreamExt as _;

use crate::event::Event;

/// The events of one run (see [`Query::run`](crate::Query::run)). Dropping it stops the run
/// where it is (prefer the cancellation token, which leaves a complete history).
pub struct Run {
    driver: Option<BoxFuture<'static, ()>>,
    events: mpsc::UnboundedReceiver<Event>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("running", &self.driver.is_some())
            .finish_non_exhaustive()
    }
}

impl Run {
    pub(crate) fn new(
        driver: BoxFuture<'static, ()>,
        events: mpsc::UnboundedReceiver<Event>,
    ) -> Run {
        Run {
            driver: Some(driver),
            events,
        }
    }
}

impl Stream for Run {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        loop {
            match self.events.poll_next_unpin(cx) {
                Poll::Ready(item) => return Poll::Ready(item),
                Poll::Pending => {}
            }
            let Some(driver) = self.driver.as_mut() else {
                return Poll::Pending;
            };
            match driver.as_mut().poll(cx) {
                // The driver dropped its sender: drain what is left, then end.
                Poll::Ready(()) => self.driver = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
