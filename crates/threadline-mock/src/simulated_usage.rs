//! Usage from the prompt-cache simulator: cache reads and writes as the API would report them.
//!
//! [`SimulatedUsage`] keeps one [`threadline_cache::Simulator`] per model and steps it with
//! every answered request, timed by the server's clock, so that a test or a demo talking to
//! the mock sees the cache hits (and misses) its marker placement earns — the default of
//! [`MockConfig`](crate::MockConfig).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use threadline_cache::Simulator;
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{MessagesRequest, Usage};

use crate::usage::{EstimateUsage, UsageModel};

/// A [`UsageModel`] backed by the prompt-cache simulator (one per model, in arrival order).
pub struct SimulatedUsage {
    started: Instant,
    simulators: Mutex<BTreeMap<String, Simulator<'static>>>,
    table: &'static ModelTable,
}

impl std::fmt::Debug for SimulatedUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedUsage").finish_non_exhaustive()
    }
}

impl Default for SimulatedUsage {
    fn default() -> Self {
        SimulatedUsage::new()
    }
}

impl SimulatedUsage {
    /// A simulator per model of the built-in table, with an empty cache; time starts now.
    pub fn new() -> Self {
        SimulatedUsage::with_table(ModelTable::builtin())
    }

    /// A simulator per model of `table`, with an empty cache; time starts now.
    pub fn with_table(table: &'static ModelTable) -> Self {
        SimulatedUsage {
            started: Instant::now(),
            simulators: Mutex::new(BTreeMap::new()),
            table,
        }
    }

    /// The table's row for `id` (aliases resolved), when the table knows it.
    fn known_model(&self, id: &str) -> Option<&'static Model> {
        let table = self.table;
        let canonical = table.resolve(id).model().id.clone();
        table.models().iter().find(|model| model.id == canonical)
    }
}

impl UsageModel for SimulatedUsage {
    fn usage(&self, request: &MessagesRequest, request_bytes: usize, output_tokens: u64) -> Usage {
        let Some(model) = self.known_model(&request.model) else {
            // The server answers 404 to unknown models before asking; be safe anyway.
            return EstimateUsage.usage(request, request_bytes, output_tokens);
        };
        let at_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut simulators = self
            .simulators
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let simulator = simulators
            .entry(model.id.clone())
            .or_insert_with(|| Simulator::new(model));
        let mut usage = simulator.step(at_ms, request).usage.to_usage();
        usage.output_tokens = Some(output_tokens);
        usage
    }
}

#[cfg(test)]
mod tests {
    use threadline_cache::Planner;
    use threadline_wire::{ContentBlock, MessageParam};

    use super::*;

    #[test]
    fn a_repeated_marked_prefix_is_read_from_the_cache() {
        let usage = SimulatedUsage::new();
        let mut messages = vec![MessageParam::user(vec![ContentBlock::text(
            "The whole repository, read once. ".repeat(2_000),
        )])];
        let mut planner = Planner::default();
        let mut request = MessagesRequest::new("claude-sonnet-4-6", 1024, messages.clone());
        planner.plan(&mut request);
        let first = usage.usage(&request, 0, 5);
        assert_eq!(first.cache_read_input_tokens, Some(0));
        assert!(first.cache_creation_input_tokens.unwrap_or(0) > 10_000);
        assert_eq!(first.output_tokens, Some(5));

        messages.push(MessageParam::assistant(vec![ContentBlock::text("Read.")]));
        messages.push(MessageParam::user(vec![ContentBlock::text("Go on.")]));
        let mut request = MessagesRequest::new("claude-sonnet-4-6", 1024, messages);
        planner.plan(&mut request);
        let second = usage.usage(&request, 0, 5);
        assert!(
            second.cache_read_input_tokens.unwrap_or(0)
                >= first.cache_creation_input_tokens.unwrap_or(0),
            "{second:?}"
        );
    }

    #[test]
    fn an_unknown_model_falls_back_to_the_estimate() {
        let usage = SimulatedUsage::new();
        let request = MessagesRequest::new(
            "no-such-model",
            16,
            vec![MessageParam::user(vec![ContentBlock::text("hi")])],
        );
        let answer = usage.usage(&request, 400, 1);
        assert_eq!(answer.input_tokens, Some(100));
    }
}
