//! A [`Client`] as a named token counter. The client itself implements the service contract's
//! [`CountTokens`]; this wrapper stays for code that names it.

use crate::Client;
use threadline_wire::CountTokensRequest;
use threadline_wire::service::{CountFuture, CountTokens};

/// Counts through the client's `count_tokens` (not retried, not rate-limited by the client's
/// concurrency layer; the API does not charge for it). The same as the [`Client`]'s own
/// [`CountTokens`].
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

impl CountTokens for ClientTokenCounter {
    fn count_tokens(&self, request: CountTokensRequest) -> CountFuture<'_> {
        CountTokens::count_tokens(&self.client, request)
    }
}
