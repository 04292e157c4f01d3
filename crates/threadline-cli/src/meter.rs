//! A service wrapper that counts what every answered request used: requests, usage, and the
//! requests that failed before any event. It sees every model call, the loop's and the
//! autocompact summary's alike, so the totals are the bill.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::StreamExt as _;
use threadline::wire::accumulate::MessageAccumulator;
use threadline::wire::service::{EventStream, EventStreamFuture, MessagesService, ServiceError};
use threadline::wire::{MessagesRequest, StreamEvent, Usage};

/// Totals over a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Totals {
    /// Calls that delivered events.
    pub(crate) answered: u32,
    /// Calls that failed (after the client's own retries).
    pub(crate) failed: u32,
    /// Input tokens not read from the cache nor written to it.
    pub(crate) input_tokens: u64,
    /// Tokens written to the cache.
    pub(crate) cache_write_tokens: u64,
    /// Tokens read from the cache.
    pub(crate) cache_read_tokens: u64,
    /// Output tokens.
    pub(crate) output_tokens: u64,
    /// The cost by the model table.
    pub(crate) cost: f64,
    /// Server-side compaction passes (`usage.iterations` of type `compaction`).
    pub(crate) compaction_iterations: u32,
    /// Their input tokens (all: uncached, written and read), included in the totals above.
    pub(crate) compaction_input_tokens: u64,
    /// Their output tokens, included in `output_tokens`.
    pub(crate) compaction_output_tokens: u64,
}

impl Totals {
    /// All input tokens: uncached, written and read (saturating).
    pub(crate) fn all_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_write_tokens)
            .saturating_add(self.cache_read_tokens)
    }

    /// The share of input tokens read from the cache.
    pub(crate) fn cache_read_share(&self) -> f64 {
        let all = self.all_input_tokens();
        if all == 0 {
            0.0
        } else {
            self.cache_read_tokens as f64 / all as f64
        }
    }

    /// Adds what `usage` bills: every `usage.iterations` pass (a compaction pass, a declined
    /// fallback hop), not only the top-level figures; each pass priced by its own model's row
    /// when it names one the table knows.
    fn add(&mut self, usage: &Usage, model: &str) {
        // Saturating: the counts are the server's, and a hostile one may send u64::MAX.
        let add = |total: &mut u64, tokens: Option<u64>| {
            *total = total.saturating_add(tokens.unwrap_or(0));
        };
        let billed = usage.billed();
        add(&mut self.input_tokens, billed.input_tokens);
        add(
            &mut self.cache_write_tokens,
            billed.cache_creation_input_tokens,
        );
        add(&mut self.cache_read_tokens, billed.cache_read_input_tokens);
        add(&mut self.output_tokens, billed.output_tokens);
        for pass in usage.compaction_iterations() {
            self.compaction_iterations = self.compaction_iterations.saturating_add(1);
            add(
                &mut self.compaction_input_tokens,
                Some(pass.total_input_tokens()),
            );
            add(&mut self.compaction_output_tokens, pass.output_tokens);
        }
        let table = threadline::wire::model::ModelTable::builtin();
        self.cost += table.cost(model, usage);
    }

    /// The compaction passes as a summary line's value (`None` when there were none).
    pub(crate) fn compaction_line(&self) -> Option<String> {
        (self.compaction_iterations > 0).then(|| {
            format!(
                "{} server-side compaction iteration{}: input {}, output {} (billed, in the tokens above)",
                self.compaction_iterations,
                if self.compaction_iterations == 1 { "" } else { "s" },
                self.compaction_input_tokens,
                self.compaction_output_tokens
            )
        })
    }
}

/// The shared totals.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meter(Arc<Mutex<Totals>>);

impl Meter {
    /// The totals so far.
    pub(crate) fn totals(&self) -> Totals {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn with<R>(&self, f: impl FnOnce(&mut Totals) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// `inner`, counted.
#[derive(Debug, Clone)]
pub(crate) struct Metered<S> {
    inner: S,
    meter: Meter,
}

impl<S> Metered<S> {
    pub(crate) fn new(inner: S, meter: Meter) -> Metered<S> {
        Metered { inner, meter }
    }
}

impl<S> tower_service::Service<MessagesRequest> for Metered<S>
where
    S: MessagesService,
    S::Future: Send + 'static,
{
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: MessagesRequest) -> EventStreamFuture {
        let call = self.inner.call(request.clone());
        let meter = self.meter.clone();
        let model = request.model;
        Box::pin(async move {
            let stream = match call.await {
                Ok(stream) => stream,
                Err(error) => {
                    meter.with(|t| t.failed += 1);
                    return Err(error);
                }
            };
            meter.with(|t| t.answered += 1);
            let mut accumulator = MessageAccumulator::new();
            let stream = stream.map(move |event| {
                if let Ok(event) = &event {
                    // The accumulator's verdict on the stream is the loop's business.
                    let _ = accumulator.push(event);
                    if matches!(event, StreamEvent::MessageStop(_))
                        && let Some(usage) = accumulator.message().and_then(|m| m.usage.clone())
                    {
                        meter.with(|t| t.add(&usage, &model));
                    }
                }
                event
            });
            Ok(Box::pin(stream) as EventStream)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_usage_and_cost_by_the_model_table() {
        let mut totals = Totals::default();
        let usage = Usage::new()
            .with_input_tokens(100)
            .with_output_tokens(10)
            .with_cache_creation_input_tokens(200)
            .with_cache_read_input_tokens(700);
        totals.add(&usage, "claude-sonnet-4-5");
        assert_eq!(totals.input_tokens + totals.cache_write_tokens, 300);
        assert!((totals.cache_read_share() - 0.7).abs() < 1e-9);
        let model = threadline::wire::model::ModelTable::builtin()
            .resolve("claude-sonnet-4-5")
            .model()
            .clone();
        assert!((totals.cost - model.cost(&usage)).abs() < 1e-12);
        assert!(totals.cost > 0.0);
        assert_eq!(Totals::default().cache_read_share(), 0.0);
    }

    #[test]
    fn totals_bill_every_iteration_and_count_compaction_passes() {
        // The recorded ruby_llm compaction exchange.
        let usage: Usage = serde_json::from_str(
            r#"{"input_tokens":162,"output_tokens":11,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,
            "iterations":[{"type":"compaction","input_tokens":99195,"output_tokens":81},
                          {"type":"message","input_tokens":162,"output_tokens":11}]}"#,
        )
        .expect("parses");
        let mut totals = Totals::default();
        totals.add(&usage, "claude-sonnet-4-6");
        assert_eq!((totals.input_tokens, totals.output_tokens), (99_357, 92));
        assert_eq!(totals.compaction_iterations, 1);
        assert_eq!(
            (
                totals.compaction_input_tokens,
                totals.compaction_output_tokens
            ),
            (99_195, 81)
        );
        assert_eq!(
            totals.compaction_line().as_deref(),
            Some(
                "1 server-side compaction iteration: input 99195, output 81 (billed, in the tokens above)"
            )
        );
        assert_eq!(Totals::default().compaction_line(), None);
    }

    #[test]
    fn totals_saturate_instead_of_wrapping() {
        let mut totals = Totals::default();
        let huge = Usage::new()
            .with_input_tokens(u64::MAX - 1)
            .with_output_tokens(u64::MAX)
            .with_cache_creation_input_tokens(u64::MAX / 2 + 1)
            .with_cache_read_input_tokens(u64::MAX);
        totals.add(&huge, "claude-sonnet-4-5");
        totals.add(&huge, "claude-sonnet-4-5");
        assert_eq!(totals.input_tokens, u64::MAX);
        assert_eq!(totals.cache_write_tokens, u64::MAX);
        assert_eq!(totals.output_tokens, u64::MAX);
        assert_eq!(totals.all_input_tokens(), u64::MAX);
        assert!((totals.cache_read_share() - 1.0).abs() < 1e-9);
        assert!(totals.cost.is_finite());
    }
}
