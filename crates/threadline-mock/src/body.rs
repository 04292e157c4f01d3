//! A request body read within the limits: never more than the largest body, and no memory
//! past a body's first bytes without its share of the shared budget.

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::limits::SMALL_BODY_BYTES;
#[cfg(doc)]
use crate::limits::ServerLimits;

/// Why a request body was not read to its end.
pub(crate) enum BodyRefused {
    /// Past [`ServerLimits::max_body_bytes`], after this many bytes were read.
    TooLarge(usize),
    /// Past the shared budget of body bytes.
    Overloaded,
    /// The client went away or was too slow.
    Failed,
}

/// The body bytes and the share of the body budget they hold.
pub(crate) struct ReadBody {
    pub(crate) bytes: Vec<u8>,
    _budget: Option<OwnedSemaphorePermit>,
}

/// Reads a body within the limits: nothing when `content-length` is already too large, never
/// more than one frame past the limit, and nothing held past a body's first
/// [`SMALL_BODY_BYTES`] without its share of the shared budget (taken before the memory is).
pub(crate) async fn read_body(
    mut body: Incoming,
    declared: Option<u64>,
    max: usize,
    budget: &Arc<Semaphore>,
) -> Result<ReadBody, BodyRefused> {
    if declared.is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX)) {
        return Err(BodyRefused::TooLarge(0));
    }
    let mut held: Option<OwnedSemaphorePermit> = None;
    let mut charge = |capacity: usize| -> Result<(), BodyRefused> {
        let wanted = capacity.saturating_sub(SMALL_BODY_BYTES);
        let have = held.as_ref().map_or(0, OwnedSemaphorePermit::num_permits);
        if wanted <= have {
            return Ok(());
        }
        let more = u32::try_from(wanted - have).map_err(|_| BodyRefused::Overloaded)?;
        let permit = Arc::clone(budget)
            .try_acquire_many_owned(more)
            .map_err(|_| BodyRefused::Overloaded)?;
        match &mut held {
            Some(held) => held.merge(permit),
            None => held = Some(permit),
        }
        Ok(())
    };
    let mut bytes = Vec::new();
    if let Some(declared) = declared.and_then(|n| usize::try_from(n).ok()) {
        charge(declared)?;
        bytes.reserve_exact(declared);
    }
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyRefused::Failed)?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        let len = bytes.len().saturating_add(data.len());
        if len > max {
            return Err(BodyRefused::TooLarge(bytes.len()));
        }
        if len > bytes.capacity() {
            // Grow as a `Vec` would, but never past the limit, and pay before allocating.
            let capacity = len.max(bytes.capacity().saturating_mul(2)).min(max);
            charge(capacity)?;
            bytes.reserve_exact(capacity - bytes.len());
        }
        bytes.extend_from_slice(&data);
    }
    Ok(ReadBody {
        bytes,
        _budget: held,
    })
}
