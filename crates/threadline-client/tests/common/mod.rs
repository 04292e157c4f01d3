//! Shared helpers: a client for a mock, a small request, event collection.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use futures::StreamExt;
use threadline_client::{ApiKey, Auth, Client, ClientConfig, RetryConfig};
use threadline_wire::service::{EventStream, ServiceError};
use threadline_wire::{ContentBlock, MessageParam, MessagesRequest, StreamEvent};

pub const KEY: &str = "sk-ant-api03-TEST-KEY-0123456789-never-print-me";

/// Short timeouts and backoffs, so that fault tests stay fast.
pub fn config(base_url: &str) -> ClientConfig {
    ClientConfig::new(
        base_url,
        Auth::ApiKey(ApiKey::new(KEY).expect("a valid key")),
    )
    .with_timeouts(
        Duration::from_secs(2),
        Duration::from_secs(5),
        Duration::from_millis(500),
    )
    .with_retry(
        RetryConfig::default()
            .with_max_retries(2)
            .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
            .with_max_retry_after(Duration::from_secs(2)),
    )
}

pub fn client(base_url: &str) -> Client {
    Client::new(config(base_url)).expect("a valid configuration")
}

pub fn request() -> MessagesRequest {
    MessagesRequest::new(
        "claude-sonnet-4-6",
        1024,
        vec![MessageParam::user(vec![ContentBlock::text("Hello")])],
    )
}

/// Every item of the stream, until the end or the first error.
pub async fn drain(mut stream: EventStream) -> (Vec<StreamEvent>, Option<ServiceError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

/// The error of a call expected to fail before any event.
pub async fn call_error(client: &Client, request: MessagesRequest) -> ServiceError {
    match client.stream(request).await {
        Ok(_) => panic!("expected the call to fail"),
        Err(error) => error,
    }
}
