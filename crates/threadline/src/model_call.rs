//! One whole model answer through the service contract, for requests the loop does not make
//! itself (the autocompact summary).

use threadline_wire::accumulate::MessageAccumulator;
use threadline_wire::service::{MessagesService, ServiceError, ServiceErrorKind};
use threadline_wire::{ContentBlock, MessagesRequest};

/// Sends `request` (streamed) and returns the text of the answer.
pub(crate) async fn answer_text<S>(
    service: &mut S,
    mut request: MessagesRequest,
) -> Result<String, ServiceError>
where
    S: MessagesService,
{
    use futures::StreamExt as _;
    request.stream = Some(true);
    futures::future::poll_fn(|cx| service.poll_ready(cx)).await?;
    let mut stream = service.call(request).await?;
    let mut accumulator = MessageAccumulator::new();
    while let Some(event) = stream.next().await {
        accumulator.push(&event?).map_err(|e| {
            ServiceError::new(ServiceErrorKind::Decode, e.to_string()).after_events()
        })?;
    }
    let message = accumulator.finish().map_err(|e| {
        ServiceError::new(ServiceErrorKind::Truncated, e.to_string()).after_events()
    })?;
    let text: Vec<&str> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    Ok(text.join("\n"))
}
