//! Where the mock's reported usage comes from: a [`UsageModel`].
//!
//! The default, [`EstimateUsage`], counts about four bytes of request JSON per input token and
//! reports no cache activity. A cache simulator plugs in by implementing [`UsageModel`]: it sees
//! every request in order and may answer cache reads and writes.

use threadline_wire::{CountTokensRequest, MessagesRequest, Usage};

/// Computes the usage the mock reports for one answer.
pub trait UsageModel: Send + Sync {
    /// The usage of answering `request` with `output_tokens` tokens of output. Called once per
    /// answered request, in arrival order.
    fn usage(&self, request: &MessagesRequest, request_bytes: usize, output_tokens: u64) -> Usage;

    /// The answer of `count_tokens` for a request body of `request_bytes` bytes.
    fn count_tokens(&self, _request: &CountTokensRequest, request_bytes: usize) -> u64 {
        estimate_tokens(request_bytes)
    }
}

/// A rough estimate: a token per four bytes of request JSON, no cache activity.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimateUsage;

impl UsageModel for EstimateUsage {
    fn usage(&self, _request: &MessagesRequest, request_bytes: usize, output_tokens: u64) -> Usage {
        Usage::new()
            .with_input_tokens(estimate_tokens(request_bytes))
            .with_output_tokens(output_tokens)
            .with_cache_creation_input_tokens(0)
            .with_cache_read_input_tokens(0)
    }
}

/// Tokens for a text: the workspace's estimate ([`threadline_wire::tokens::text_tokens`], a
/// token per four bytes), at least one.
pub(crate) fn estimate_tokens(text_bytes: usize) -> u64 {
    threadline_wire::tokens::text_tokens(text_bytes).max(1)
}
