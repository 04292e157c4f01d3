//! The API's exact token count (`POST /v1/messages/count_tokens`) as a
//! [`TokenCounter`](threadline_compact::TokenCounter), for compaction decisions (feature
//! `compact`).

use crate::Client;
use threadline_compact::TokenCounter;
use threadline_compact::estimate::CountFuture;
use threadline_wire::CountTokensRequest;

/// Counts through the client's `count_tokens` (not retried, not rate-limited by the client's
/// concurrency layer; the API does not charge for it).
///
/// ```no_run
/// use threadline_client::{ApiKey, Auth, Client, ClientConfig, ClientTokenCounter};
/// use threadline_compact::Compaction;
///
/// let key = ApiKey::from_env("ANTHROPIC_API_KEY").expect("set").expect("valid");
/// let auth = Auth::ApiKey(key);
/// let client = Client::new(ClientConfig::new("https://api.anthropic.com", auth)).expect("client");
/// let compaction = Compaction::default().with_token_counter(ClientTokenCounter::new(client));
/// # let _ = compaction;
/// ```
#[derive(Debug, Clone)]
pub struct ClientTokenCounter {
    client: Client,
}

impl ClientTokenCounter {
    /// A counter asking `client`.
    pub fn new(client: Client) -> ClientTokenCounter {
        ClientTokenCounter { client }
    }
}

impl TokenCounter for ClientTokenCounter {
    fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_> {
        Box::pin(async move { self.client.count_tokens(&request).await })
    }
}
