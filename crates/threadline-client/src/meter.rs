//! Cost metering: a [`tower_layer::Layer`] that counts what every request used — requests
//! answered and failed, tokens (uncached input, cache writes, cache reads, output), the
//! server-side compaction passes, and the dollar cost by a [`ModelTable`].
//!
//! Put it outermost, over a [`Client`](crate::Client) or any [`MessagesService`]: it then
//! sees every model call (a loop's and an autocompact summary's alike) once, after the
//! client's own retries, so the totals are the bill. A call is *answered* when its future
//! yields a stream and *failed* when it yields an error. A response's usage is added when
//! its `message_stop` passes, priced by [`ModelTable::cost`]: every `usage.iterations` pass
//! (a compaction pass, a declined fallback hop) is billed, each by its own model's row when
//! the table knows it. The counts saturate: a hostile server's `u64::MAX` never wraps.
//!
//! Every service a [`MeterLayer`] makes shares its [`Meter`]'s totals; read them with
//! [`Meter::totals`] at any time.
//!
//! ```
//! use threadline_client::meter::{Meter, MeterLayer};
//! use tower_layer::Layer as _;
//! # use threadline_wire::service::{EventStream, ServiceError};
//! # use threadline_wire::MessagesRequest;
//! # #[derive(Clone)]
//! # struct Backend;
//! # impl tower_service::Service<MessagesRequest> for Backend {
//! #     type Response = EventStream;
//! #     type Error = ServiceError;
//! #     type Future = std::future::Ready<Result<EventStream, ServiceError>>;
//! #     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), ServiceError>> {
//! #         std::task::Poll::Ready(Ok(()))
//! #     }
//! #     fn call(&mut self, _: MessagesRequest) -> Self::Future {
//! #         std::future::ready(Err(ServiceError::new(threadline_wire::service::ServiceErrorKind::Connection, "offline")))
//! #     }
//! # }
//! # let client = Backend;
//!
//! let meter = Meter::new();
//! let service = MeterLayer::new(meter.clone()).layer(client);
//! // … run an agent or a loop over `service` …
//! # drop(service);
//! let totals = meter.totals();
//! assert_eq!((totals.answered, totals.failed), (0, 0));
//! assert_eq!(totals.cost, 0.0);
//! ```

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use threadline_wire::accumulate::MessageAccumulator;
use threadline_wire::model::ModelTable;
use threadline_wire::service::{EventStream, EventStreamFuture, MessagesService, ServiceError};
use threadline_wire::{BilledTotals, MessagesRequest, StreamEvent, Usage};

/// What the metered requests used, summed.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct MeterTotals {
    /// Calls that delivered events.
    pub answered: u32,
    /// Calls that failed before any event (after the retries of the layers inside).
    pub failed: u32,
    /// Input tokens neither read from the cache nor written to it.
    pub input_tokens: u64,
    /// Tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The dollar cost by the model table.
    pub cost: f64,
    /// Server-side compaction passes (`usage.iterations` of type `compaction`).
    pub compaction_iterations: u32,
    /// Their input tokens (all: uncached, written and read), included in the totals above.
    pub compaction_input_tokens: u64,
    /// Their output tokens, included in `output_tokens`.
    pub compaction_output_tokens: u64,
}

impl MeterTotals {
    /// All input tokens: uncached, written and read (saturating).
    pub fn all_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_write_tokens)
            .saturating_add(self.cache_read_tokens)
    }

    /// The share of input tokens read from the cache (0 when there were none).
    pub fn cache_read_share(&self) -> f64 {
        let all = self.all_input_tokens();
        if all == 0 {
            0.0
        } else {
            self.cache_read_tokens as f64 / all as f64
        }
    }

    /// Adds what `usage`, a response served by `model`, bills: every `usage.iterations` pass,
    /// not only the top-level figures, priced by `table` ([`ModelTable::cost`]).
    ///
    /// The token sums are [`BilledTotals::add`]'s (saturating), the one sum of billed usage.
    pub fn add_usage(&mut self, usage: &Usage, model: &str, table: &ModelTable) {
        let mut billed = BilledTotals {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_creation_input_tokens: self.cache_write_tokens,
            cache_read_input_tokens: self.cache_read_tokens,
        };
        billed.add(usage);
        self.input_tokens = billed.input_tokens;
        self.output_tokens = billed.output_tokens;
        self.cache_write_tokens = billed.cache_creation_input_tokens;
        self.cache_read_tokens = billed.cache_read_input_tokens;
        // Saturating: the counts are the server's, and a hostile one may send u64::MAX.
        let add = |total: &mut u64, tokens: Option<u64>| {
            *total = total.saturating_add(tokens.unwrap_or(0));
        };
        for pass in usage.compaction_iterations() {
            self.compaction_iterations = self.compaction_iterations.saturating_add(1);
            add(
                &mut self.compaction_input_tokens,
                Some(pass.total_input_tokens()),
            );
            add(&mut self.compaction_output_tokens, pass.output_tokens);
        }
        self.cost += table.cost(model, usage);
    }
}

#[derive(Debug)]
struct Shared {
    totals: Mutex<MeterTotals>,
    table: Arc<ModelTable>,
}

/// The shared totals of every service metered through it (cheap to clone: clones share).
#[derive(Debug, Clone)]
pub struct Meter(Arc<Shared>);

impl Default for Meter {
    fn default() -> Self {
        Meter::new()
    }
}

impl Meter {
    /// A meter pricing by the built-in model table ([`ModelTable::builtin`]).
    pub fn new() -> Meter {
        Meter::with_model_table(Arc::new(ModelTable::builtin().clone()))
    }

    /// A meter pricing by `table`.
    pub fn with_model_table(table: Arc<ModelTable>) -> Meter {
        Meter(Arc::new(Shared {
            totals: Mutex::new(MeterTotals::default()),
            table,
        }))
    }

    /// The table it prices by.
    pub fn model_table(&self) -> &ModelTable {
        &self.0.table
    }

    /// The totals so far.
    pub fn totals(&self) -> MeterTotals {
        self.with(|totals| totals.clone())
    }

    /// A layer metering into this meter.
    pub fn layer(&self) -> MeterLayer {
        MeterLayer::new(self.clone())
    }

    fn with<R>(&self, f: impl FnOnce(&mut MeterTotals) -> R) -> R {
        // A panic elsewhere while holding the lock leaves plain counters: still usable.
        f(&mut self.0.totals.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn add_usage(&self, usage: &Usage, model: &str) {
        let table = &self.0.table;
        self.with(|totals| totals.add_usage(usage, model, table));
    }
}

/// Applies [`Metered`] to a service; every service it makes counts into one [`Meter`].
#[derive(Debug, Clone)]
pub struct MeterLayer {
    meter: Meter,
}

impl MeterLayer {
    /// A layer counting into `meter` (a clone of a [`Meter`] shares its totals).
    pub fn new(meter: Meter) -> MeterLayer {
        MeterLayer { meter }
    }
}

impl<S> tower_layer::Layer<S> for MeterLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Metered<S> {
        Metered::new(inner, self.meter.clone())
    }
}

/// `inner`, counted into a [`Meter`].
#[derive(Debug, Clone)]
pub struct Metered<S> {
    inner: S,
    meter: Meter,
}

impl<S> Metered<S> {
    /// `inner`, counted into `meter` (a clone of a [`Meter`] shares its totals).
    pub fn new(inner: S, meter: Meter) -> Metered<S> {
        Metered { inner, meter }
    }

    /// The meter it counts into.
    pub fn meter(&self) -> &Meter {
        &self.meter
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service.
    pub fn into_inner(self) -> S {
        self.inner
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
        let model = request.model.clone();
        let call = self.inner.call(request);
        let meter = self.meter.clone();
        Box::pin(async move {
            let stream = match call.await {
                Ok(stream) => stream,
                Err(error) => {
                    meter.with(|t| t.failed = t.failed.saturating_add(1));
                    return Err(error);
                }
            };
            meter.with(|t| t.answered = t.answered.saturating_add(1));
            Ok(Box::pin(MeteredStream {
                inner: stream,
                accumulator: MessageAccumulator::new(),
                model,
                meter,
            }) as EventStream)
        })
    }
}

/// A response's events, its usage added to the meter as its `message_stop` passes.
struct MeteredStream {
    inner: EventStream,
    accumulator: MessageAccumulator,
    model: String,
    meter: Meter,
}

impl Stream for MeteredStream {
    type Item = Result<StreamEvent, ServiceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(Ok(event))) = &polled {
            let this = &mut *self;
            // The accumulator's verdict on the stream is the caller's business.
            let _ = this.accumulator.push(event);
            if matches!(event, StreamEvent::MessageStop(_))
                && let Some(usage) = this.accumulator.message().and_then(|m| m.usage.as_ref())
            {
                this.meter.add_usage(usage, &this.model);
            }
        }
        polled
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use futures::StreamExt as _;
    use serde_json::json;
    use threadline_wire::service::ServiceErrorKind;
    use threadline_wire::{ContentBlock, MessageParam};
    use tower_layer::Layer as _;
    use tower_service::Service as _;

    use super::*;

    /// One scripted reply: the events of a response, or the call's error.
    type Reply = Result<Vec<StreamEvent>, ServiceError>;

    /// A service answering each call with the next scripted reply.
    #[derive(Clone, Default)]
    struct Scripted(Arc<Mutex<VecDeque<Reply>>>);

    impl Scripted {
        fn new(replies: Vec<Reply>) -> Scripted {
            Scripted(Arc::new(Mutex::new(replies.into())))
        }
    }

    impl tower_service::Service<MessagesRequest> for Scripted {
        type Response = EventStream;
        type Error = ServiceError;
        type Future = EventStreamFuture;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _request: MessagesRequest) -> EventStreamFuture {
            let reply = self
                .0
                .lock()
                .expect("not poisoned")
                .pop_front()
                .expect("a scripted reply per call");
            Box::pin(async move {
                let events = reply?;
                Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))) as EventStream)
            })
        }
    }

    fn event(value: serde_json::Value) -> StreamEvent {
        serde_json::from_value(value).expect("a valid event")
    }

    /// A whole response: one text block, `usage` split between `message_start` (input side)
    /// and `message_delta` (output side and anything else), as the API sends it.
    fn response(usage: serde_json::Value) -> Vec<StreamEvent> {
        let mut start_usage = usage.clone();
        if let Some(object) = start_usage.as_object_mut() {
            object.remove("iterations");
        }
        vec![
            event(json!({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage}})),
            event(json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}})),
            event(json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "hi"}})),
            event(json!({"type": "content_block_stop", "index": 0})),
            event(json!({"type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": usage})),
            event(json!({"type": "message_stop"})),
        ]
    }

    fn request(model: &str) -> MessagesRequest {
        MessagesRequest::new(
            model,
            64,
            vec![MessageParam::user(vec![ContentBlock::text("hello")])],
        )
    }

    async fn drain(service: &mut Metered<Scripted>, model: &str) -> Result<usize, ServiceError> {
        std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
        let stream = service.call(request(model)).await?;
        Ok(stream.count().await)
    }

    #[tokio::test]
    async fn the_layer_counts_answered_and_failed_calls_and_prices_by_the_table() {
        let usage = json!({"input_tokens": 100, "output_tokens": 10,
            "cache_creation_input_tokens": 200, "cache_read_input_tokens": 700});
        let backend = Scripted::new(vec![
            Ok(response(usage.clone())),
            Err(ServiceError::new(ServiceErrorKind::Connection, "refused")),
            Ok(response(usage.clone())),
        ]);
        let meter = Meter::new();
        let mut service = MeterLayer::new(meter.clone()).layer(backend);
        assert_eq!(drain(&mut service, "claude-sonnet-4-5").await.ok(), Some(6));
        assert!(drain(&mut service, "claude-sonnet-4-5").await.is_err());
        assert_eq!(drain(&mut service, "claude-sonnet-4-5").await.ok(), Some(6));

        let totals = meter.totals();
        assert_eq!((totals.answered, totals.failed), (2, 1));
        assert_eq!(
            (
                totals.input_tokens,
                totals.cache_write_tokens,
                totals.cache_read_tokens,
                totals.output_tokens
            ),
            (200, 400, 1400, 20)
        );
        assert!((totals.cache_read_share() - 0.7).abs() < 1e-9);
        let usage: Usage = serde_json::from_value(usage).expect("usage");
        let one = ModelTable::builtin().cost("claude-sonnet-4-5", &usage);
        assert!(one > 0.0);
        assert!((totals.cost - 2.0 * one).abs() < 1e-12);
    }

    #[tokio::test]
    async fn a_stream_cut_before_message_stop_adds_no_usage() {
        let mut events = response(json!({"input_tokens": 100, "output_tokens": 10}));
        events.pop();
        let meter = Meter::new();
        let mut service = meter.layer().layer(Scripted::new(vec![Ok(events)]));
        assert_eq!(drain(&mut service, "claude-sonnet-4-5").await.ok(), Some(5));
        let totals = meter.totals();
        assert_eq!(totals.answered, 1);
        assert_eq!(totals.all_input_tokens(), 0);
        assert_eq!(totals.cost, 0.0);
    }

    /// One model row in the table format, every price `price` dollars per million tokens.
    fn row(id: &str, price: f64) -> String {
        format!(
            r#"{{"id": "{id}", "aliases": [], "context_window": 200000, "max_output_tokens": 8192,
            "min_cacheable_tokens": 1024, "thinking": ["enabled"], "prefill": false,
            "sampling_params": true, "effort": [], "keeps_prior_thinking": false,
            "rejects_input_plus_max_tokens_over_window": true,
            "prices": {{"input": {price}, "output": {price}, "cache_write_5m": {price},
                "cache_write_1h": {price}, "cache_read": {price}}}}}"#
        )
    }

    #[tokio::test]
    async fn the_layer_prices_by_the_table_it_is_given() {
        let table = ModelTable::from_json(&format!(
            r#"{{"default": {}, "models": [{}]}}"#,
            row("unknown", 100.0),
            row("cheap", 1.0)
        ))
        .expect("a valid table");
        let meter = Meter::with_model_table(Arc::new(table));
        let mut service = meter.layer().layer(Scripted::new(vec![Ok(response(
            json!({"input_tokens": 1_000_000, "output_tokens": 0}),
        ))]));
        drain(&mut service, "cheap").await.expect("answered");
        assert!((meter.totals().cost - 1.0).abs() < 1e-9);
        assert!(meter.model_table().get("cheap").is_some());
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
        let mut totals = MeterTotals::default();
        totals.add_usage(&usage, "claude-sonnet-4-6", ModelTable::builtin());
        assert_eq!((totals.input_tokens, totals.output_tokens), (99_357, 92));
        assert_eq!(totals.compaction_iterations, 1);
        assert_eq!(
            (
                totals.compaction_input_tokens,
                totals.compaction_output_tokens
            ),
            (99_195, 81)
        );
        let expected = ModelTable::builtin().cost("claude-sonnet-4-6", &usage);
        assert!((totals.cost - expected).abs() < 1e-12);
    }

    #[test]
    fn totals_saturate_instead_of_wrapping() {
        let mut totals = MeterTotals::default();
        let huge = Usage::new()
            .with_input_tokens(u64::MAX - 1)
            .with_output_tokens(u64::MAX)
            .with_cache_creation_input_tokens(u64::MAX / 2 + 1)
            .with_cache_read_input_tokens(u64::MAX);
        totals.add_usage(&huge, "claude-sonnet-4-5", ModelTable::builtin());
        totals.add_usage(&huge, "claude-sonnet-4-5", ModelTable::builtin());
        assert_eq!(totals.input_tokens, u64::MAX);
        assert_eq!(totals.cache_write_tokens, u64::MAX);
        assert_eq!(totals.output_tokens, u64::MAX);
        assert_eq!(totals.all_input_tokens(), u64::MAX);
        assert!((totals.cache_read_share() - 1.0).abs() < 1e-9);
        assert!(totals.cost.is_finite());
        assert_eq!(MeterTotals::default().cache_read_share(), 0.0);
    }
}
