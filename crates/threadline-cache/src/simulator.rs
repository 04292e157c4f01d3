//! The prompt-cache simulator: predicts the usage of each request of a session by the API's
//! documented caching rules.
//!
//! Rules modelled (see the crate documentation for the sources):
//! * the prefix is `tools` → `system` → `messages`; an entry is the hash of the whole prefix up
//!   to a piece, markers ignored;
//! * entries are written only at breakpoints (explicit markers, the automatic marker on the
//!   last eligible piece);
//! * each breakpoint looks back at most 20 pieces (itself included) for a live entry; the read
//!   is the longest prefix found (`A`); `1h` writes cover `A`..`B` (the last `1h` breakpoint),
//!   `5m` writes `B`..`C` (the last breakpoint); `input_tokens` is what follows `C`;
//! * an entry lives 5 minutes or 1 hour from the request that wrote or last read it;
//! * a breakpoint whose prefix is shorter than the model's minimum cacheable length neither
//!   reads nor writes;
//! * what invalidates what: see [`crate::prefix`] (model, `tool_choice`, thinking settings,
//!   deferred tools, earlier thinking dropped by some models);
//! * requests are sequential: an entry is usable by the next request (the API makes it usable
//!   once the first response begins, so concurrent requests are not modelled);
//! * tokens come from a pluggable [`TokenCounter`]; an unseen prefix (a transcript's tools and
//!   system prompt) can be given, and a constant tail of uncached tokens the API adds.

use threadline_wire::MessagesRequest;
use threadline_wire::model::Model;
use threadline_wire::response::{CacheCreation, Usage};

use crate::breaks::{BreakCause, CacheBreak, first_difference};
use crate::cache_table::CacheTable;
use crate::prefix::{Prefix, Ttl, UnseenPrefix};
use crate::tokens::{Estimate, TokenCounter};

/// Settings of a simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimConfig {
    /// The part of the prompt the requests do not show.
    pub unseen: UnseenPrefix,
    /// Uncached tokens the API reports after the last breakpoint even when the last block is
    /// marked (the turn's framing; recorded values are 1–15).
    pub tail_tokens: u64,
}

/// The predicted usage of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Predicted {
    /// Tokens after the last breakpoint.
    pub input_tokens: u64,
    /// Tokens written (both lifetimes).
    pub cache_creation_input_tokens: u64,
    /// Of which with a five-minute lifetime.
    pub ephemeral_5m_input_tokens: u64,
    /// Of which with a one-hour lifetime.
    pub ephemeral_1h_input_tokens: u64,
    /// Tokens read.
    pub cache_read_input_tokens: u64,
}

impl Predicted {
    /// All input tokens (saturating).
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }

    /// Cache read ÷ all input tokens (0 without input).
    pub fn read_share(&self) -> f64 {
        let total = self.total();
        if total == 0 {
            0.0
        } else {
            self.cache_read_input_tokens as f64 / total as f64
        }
    }

    /// As the API's usage object (no output tokens).
    pub fn to_usage(&self) -> Usage {
        Usage::new()
            .with_input_tokens(self.input_tokens)
            .with_cache_creation_input_tokens(self.cache_creation_input_tokens)
            .with_cache_read_input_tokens(self.cache_read_input_tokens)
            .with_cache_creation(
                CacheCreation::new()
                    .with_ephemeral_5m_input_tokens(self.ephemeral_5m_input_tokens)
                    .with_ephemeral_1h_input_tokens(self.ephemeral_1h_input_tokens),
            )
    }

    /// The dollar cost of this input (plus `output_tokens` of output) by `model`'s prices.
    pub fn cost(&self, model: &Model, output_tokens: u64) -> f64 {
        let mut usage = self.to_usage();
        usage.output_tokens = Some(output_tokens);
        model.cost(&usage)
    }
}

/// The simulator's answer for one request.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Step {
    /// The predicted usage.
    pub usage: Predicted,
    /// The dollar cost of the input.
    pub cost: f64,
    /// Why this request read less than the previous one left in the cache, if it did.
    pub cache_break: Option<CacheBreak>,
}

#[derive(Debug)]
struct Last {
    prefix: Prefix,
    /// The furthest position the previous request left cached (its last effective
    /// breakpoint), if any.
    cached_to: Option<usize>,
    at: u64,
}

/// Simulates the prompt cache of one model for a sequence of requests.
///
/// ```
/// use threadline_cache::{Planner, Simulator};
/// use threadline_wire::model::ModelTable;
/// use threadline_wire::{ContentBlock, MessageParam, MessagesRequest};
///
/// let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
/// let mut sim = Simulator::new(model);
/// let mut planner = Planner::default();
/// let long = "All work and no play. ".repeat(400);
/// let mut request = MessagesRequest::new("claude-sonnet-4-6", 1024, vec![
///     MessageParam::user(vec![ContentBlock::text(long)]),
/// ]);
/// planner.plan(&mut request);
/// let first = sim.step(0, &request);
/// assert_eq!(first.usage.cache_read_input_tokens, 0);
/// assert!(first.usage.cache_creation_input_tokens > 1024);
///
/// request.messages.push(MessageParam::assistant(vec![ContentBlock::text("Noted.")]));
/// request.messages.push(MessageParam::user(vec![ContentBlock::text("And now?")]));
/// planner.plan(&mut request);
/// let second = sim.step(60_000, &request);
/// assert_eq!(second.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens);
/// ```
pub struct Simulator<'m> {
    model: &'m Model,
    counter: Box<dyn TokenCounter + Send + Sync + 'm>,
    config: SimConfig,
    entries: CacheTable,
    last: Option<Last>,
    /// The cause a change announced since the last request gives its break.
    announced: Option<BreakCause>,
}

impl std::fmt::Debug for Simulator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("model", &self.model.id)
            .field("config", &self.config)
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl<'m> Simulator<'m> {
    /// A simulator for `model` with the estimate as token counter and nothing unseen.
    pub fn new(model: &'m Model) -> Self {
        Simulator::with(model, Estimate, SimConfig::default())
    }

    /// A simulator with a counter and settings.
    pub fn with(
        model: &'m Model,
        counter: impl TokenCounter + Send + Sync + 'm,
        config: SimConfig,
    ) -> Self {
        Simulator {
            model,
            counter: Box::new(counter),
            config,
            entries: CacheTable::default(),
            last: None,
            announced: None,
        }
    }

    /// The agent re-rendered what follows the cross-session part of the unseen prefix (a
    /// `/mcp` reconnect, `by`), as
    /// [`SessionSimulator::reload_dynamic_prefix`](crate::SessionSimulator::reload_dynamic_prefix)
    /// says: from the next request on that part and everything after it hash anew, and a
    /// break there is [`BreakCause::PrefixReloaded`].
    pub fn reload_dynamic_prefix(&mut self, by: impl Into<String>) {
        self.config.unseen.generation += 1;
        self.announced = Some(BreakCause::PrefixReloaded { by: by.into() });
    }

    /// The next requests are priced as `model`'s (they name it, so their cache keys differ
    /// from the earlier ones'), and a break is [`BreakCause::ModelChanged`].
    pub fn switch_model(&mut self, model: &'m Model) {
        if model.id != self.model.id {
            self.model = model;
            self.announced = Some(BreakCause::ModelChanged);
        }
    }

    /// Replaces the token counter (for instance with more exact counts learnt from a
    /// response); cached entries are kept (they are keyed by content, not by size).
    pub fn set_counter(&mut self, counter: impl TokenCounter + Send + Sync + 'm) {
        self.counter = Box::new(counter);
    }

    /// The model simulated.
    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// The request flattened as this simulator counts it.
    pub fn prefix(&self, request: &MessagesRequest) -> Prefix {
        Prefix::of(request, &*self.counter, self.config.unseen)
    }

    /// Predicts the usage of `request` sent at `at_ms` (milliseconds on any clock, never
    /// decreasing), and updates the cache.
    pub fn step(&mut self, at_ms: u64, request: &MessagesRequest) -> Step {
        let prefix = self.prefix(request);
        self.step_prefix(at_ms, &prefix, Some(request))
    }

    /// [`Simulator::step`] for a request already flattened.
    pub fn step_prefix(
        &mut self,
        at_ms: u64,
        prefix: &Prefix,
        request: Option<&MessagesRequest>,
    ) -> Step {
        let minimum = self.model.min_cacheable_tokens;
        let breakpoints: Vec<(usize, Ttl)> = prefix
            .breakpoints()
            .into_iter()
            .filter(|&(p, _)| prefix.pieces[p].cumulative_tokens >= minimum)
            .collect();
        if self.last.is_none() && self.config.unseen.warm_tokens > 0 {
            let warm = self.config.unseen.warm_tokens;
            self.entries
                .warm_start(&prefix.pieces, &breakpoints, warm, at_ms);
        }
        let (hit, hits) = self.entries.reads(&prefix.pieces, &breakpoints, at_ms);
        let announced = self.announced.take();
        let cache_break = self
            .explain(at_ms, prefix, request, hit, &breakpoints)
            .map(|found| found.attributed(announced));
        // Every expired entry is swept after each request, so none is stale here.
        let written = self.entries.write(
            &prefix.pieces,
            &breakpoints,
            &hits,
            hit,
            at_ms,
            0,
            self.config.tail_tokens,
        );
        let usage = written.usage;
        let last_bp = written.last_breakpoint;
        let cached_to = last_bp.or(hit);
        self.last = Some(Last {
            prefix: prefix.clone(),
            cached_to,
            at: at_ms,
        });
        self.entries.sweep(at_ms);
        Step {
            cost: usage.cost(self.model, 0),
            usage,
            cache_break,
        }
    }

    /// Why `prefix` read less than the previous request left cached.
    fn explain(
        &self,
        at_ms: u64,
        prefix: &Prefix,
        request: Option<&MessagesRequest>,
        hit: Option<usize>,
        breakpoints: &[(usize, Ttl)],
    ) -> Option<CacheBreak> {
        let last = self.last.as_ref()?;
        let minimum = self.model.min_cacheable_tokens;
        let Some(cached_to) = last.cached_to else {
            // Nothing was cached last time: below the minimum, or no marker.
            let all = last.prefix.breakpoints();
            return all.last().map(|&(p, _)| CacheBreak {
                location: None,
                cause: BreakCause::BelowMinimum {
                    tokens: last.prefix.pieces[p].cumulative_tokens,
                    minimum,
                },
            });
        };
        if let Some(found) = first_difference(&last.prefix, prefix, cached_to, request) {
            return Some(found);
        }
        self.entries.unchanged_prefix_break(
            last.prefix.pieces[cached_to].prefix_hash,
            cached_to,
            hit,
            breakpoints,
            last.at,
            at_ms,
        )
    }
}

/// What a recorded usage tells about the parts of a prompt a recording does not show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// The unseen prefix, the warm part and the uncached tail.
    pub config: SimConfig,
    /// The factor to apply to the estimate (1 unless the estimate of the visible part alone
    /// exceeds the recorded total).
    pub scale: f64,
}

impl Calibration {
    /// Calibrates on the first request of a recording and its recorded usage:
    /// * the uncached tail is its `input_tokens` (at most 64) when it used the cache at all;
    /// * the unseen prefix is the recorded total minus the estimate of the visible request
    ///   minus the tail; when the estimate alone is larger, the estimate is scaled down to the
    ///   recorded total instead and nothing is unseen;
    /// * the warm part is what it read: cached before the recording started.
    pub fn from_first(request: &MessagesRequest, recorded: &Usage) -> Calibration {
        let visible = Prefix::of(request, &Estimate, UnseenPrefix::default()).total_tokens();
        let read = recorded.cache_read_input_tokens.unwrap_or(0);
        let cached = recorded
            .cache_creation_input_tokens
            .unwrap_or(0)
            .saturating_add(read);
        let tail = if cached > 0 {
            recorded.input_tokens.unwrap_or(0).min(64)
        } else {
            0
        };
        let seen = recorded.total_input_tokens().saturating_sub(tail);
        let (tokens, scale) = if visible > seen && visible > 0 {
            (0, seen as f64 / visible as f64)
        } else {
            (seen - visible, 1.0)
        };
        Calibration {
            config: SimConfig {
                unseen: UnseenPrefix {
                    tokens,
                    warm_tokens: read,
                    marked: cached > 0,
                    ttl: Ttl::FiveMinutes,
                    generation: 0,
                },
                tail_tokens: tail,
            },
            scale,
        }
    }

    /// A simulator for `model` with this calibration and the (scaled) estimate.
    pub fn simulator<'m>(&self, model: &'m Model) -> Simulator<'m> {
        Simulator::with(
            model,
            crate::tokens::Scaled::new(Estimate, self.scale),
            self.config,
        )
    }

    /// A [`SessionSimulator`](crate::SessionSimulator) for `model` (requests naming
    /// `model_id`) with this calibration and the (scaled) estimate: the same predictions as
    /// [`Calibration::simulator`] with the default planner, for a growing conversation.
    pub fn session_simulator<'m>(
        &self,
        model: &'m Model,
        model_id: &str,
    ) -> crate::SessionSimulator<'m> {
        crate::SessionSimulator::new(
            model,
            model_id,
            crate::tokens::Scaled::new(Estimate, self.scale),
            self.config,
        )
    }
}

/// The read share of a sequence of usages: cache reads ÷ all input tokens (sums saturate).
pub fn hit_ratio<'a>(usages: impl IntoIterator<Item = &'a Predicted>) -> f64 {
    let (read, total) = usages.into_iter().fold((0u64, 0u64), |(r, t), u| {
        (
            r.saturating_add(u.cache_read_input_tokens),
            t.saturating_add(u.total()),
        )
    });
    if total == 0 {
        0.0
    } else {
        read as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn simulators_and_planners_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::Simulator<'static>>();
        send_sync::<crate::Planner>();
    }

    /// Recorded usage near `u64::MAX` (a damaged transcript, a hostile server): calibration,
    /// the simulator's steps and the hit ratio saturate instead of overflowing.
    #[test]
    fn usage_near_u64_max_saturates() {
        use super::*;
        use threadline_wire::{ContentBlock, MessageParam};
        let request = MessagesRequest::new(
            "claude-sonnet-4-6",
            1024,
            vec![MessageParam::user(vec![ContentBlock::text("hi")])],
        );
        let huge = Usage::new()
            .with_input_tokens(u64::MAX - 1)
            .with_cache_creation_input_tokens(u64::MAX / 2 + 1)
            .with_cache_read_input_tokens(u64::MAX);
        assert_eq!(huge.total_input_tokens(), u64::MAX);
        let calibration = Calibration::from_first(&request, &huge);
        let model = threadline_wire::model::ModelTable::builtin()
            .resolve("claude-sonnet-4-6")
            .model()
            .clone();
        let mut simulator = calibration.simulator(&model);
        let steps: Vec<Predicted> = (0..3)
            .map(|i| simulator.step(u64::MAX - 1 + i.min(1), &request).usage)
            .collect();
        assert!(steps.iter().all(|s| s.total() > 0));
        let ratio = hit_ratio(&steps);
        assert!((0.0..=1.0).contains(&ratio), "{ratio}");
        let max = Predicted {
            input_tokens: u64::MAX,
            cache_creation_input_tokens: u64::MAX,
            ephemeral_5m_input_tokens: 0,
            ephemeral_1h_input_tokens: 0,
            cache_read_input_tokens: u64::MAX,
        };
        assert_eq!(max.total(), u64::MAX);
        assert_eq!(hit_ratio([&max, &max]), 1.0);
    }
}
