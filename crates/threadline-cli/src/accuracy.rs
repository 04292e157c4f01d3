//! How close the context estimate comes to the usage a transcript recorded:
//! `estimate_mae_vs_recorded` of `cargo xtask bench` and the `estimate` part of
//! `threadline inspect`.
//!
//! For each request the transcript implies (one per response: fragments sharing a request id,
//! else an API message id, are one), the estimate is what the agent's loop would have computed
//! just before sending it: [`threadline_compact::estimate_context`] of the messages before the
//! response, with the unseen system prompt and tools ([`threadline_compact::inferred_overhead`],
//! from the first recorded usage). It anchors on the latest earlier usage that still describes
//! the context (the previous response's `input + cache_creation + cache_read + output`) and
//! adds the estimate of what was appended since — never on the request's own usage. It is
//! compared with the request's recorded `input + cache_creation + cache_read` (usage counted
//! once per request, the last fragment's: early fragments may carry a placeholder output).
//!
//! The first request with recorded usage is left out: its usage is where the unseen prefix is
//! inferred from, so it would be matched by construction.
//!
//! The walk keeps the visible history's start and estimate as it goes, and each estimate
//! looks back only to its anchor ([`estimate_context_from`]), so a transcript costs about its
//! length.

use threadline_compact::estimate::message_tokens;
use threadline_compact::units::is_compact_boundary;
use threadline_compact::{estimate_context_from, inferred_overhead, reported_input};
use threadline_message::Message;
use threadline_message::response_usage::{ResponseUsage, response_key};

/// One request's estimate against its recorded input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EstimatedRequest {
    /// The response's request id, else its API message id.
    pub key: Option<String>,
    /// The index in the messages of the response's first fragment (the request is everything
    /// before it).
    pub at: usize,
    /// The estimate of the request's input tokens.
    pub estimated: u64,
    /// `input + cache_creation + cache_read` the transcript recorded for it.
    pub recorded: u64,
    /// The estimate without any anchor: the unseen prefix plus the estimate of every visible
    /// message (what the estimator gives right after a compaction), for comparison.
    pub unanchored: u64,
}

impl EstimatedRequest {
    /// `|estimated − recorded| / recorded` (0 when both are 0).
    pub fn relative_error(&self) -> f64 {
        relative(self.estimated, self.recorded)
    }

    /// [`EstimatedRequest::relative_error`] of the unanchored estimate.
    pub fn unanchored_error(&self) -> f64 {
        relative(self.unanchored, self.recorded)
    }
}

fn relative(estimate: u64, recorded: u64) -> f64 {
    if recorded == 0 {
        return if estimate == 0 { 0.0 } else { 1.0 };
    }
    estimate.abs_diff(recorded) as f64 / recorded as f64
}

/// Every request of `messages` with recorded usage, after the first (see the module docs).
pub fn estimated_requests(messages: &[Message]) -> Vec<EstimatedRequest> {
    let overhead = inferred_overhead(messages).unwrap_or(0);
    let usage = ResponseUsage::of(messages);
    let mut out = Vec::new();
    let mut previous: Option<Option<&str>> = None;
    let mut first_recorded = true;
    // The visible history of `messages[..i]`, kept as `i` grows: where it starts (after the
    // last compaction boundary) and its estimate, so each request costs what came since
    // the last one, not the transcript.
    let mut visible_from = 0;
    let mut visible_tokens = 0u64;
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            let before = &messages[i - 1];
            if is_compact_boundary(before) {
                visible_from = i;
                visible_tokens = 0;
            } else {
                visible_tokens = visible_tokens.saturating_add(message_tokens(before));
            }
        }
        let Message::Assistant(a) = message else {
            continue;
        };
        if a.is_api_error {
            continue;
        }
        let key = response_key(message);
        if key.is_some() && previous == Some(key) {
            continue;
        }
        previous = Some(key);
        if i == 0 {
            continue;
        }
        // The response's usage, its last fragment's (without a key, the message's own).
        let recorded = usage.of_message(message).and_then(reported_input);
        let Some(recorded) = recorded else {
            continue;
        };
        if std::mem::take(&mut first_recorded) {
            continue;
        }
        out.push(EstimatedRequest {
            key: key.map(str::to_owned),
            at: i,
            estimated: estimate_context_from(&messages[..i], visible_from, overhead),
            recorded,
            unanchored: overhead.saturating_add(visible_tokens),
        });
    }
    out
}

/// The mean of the requests' [`EstimatedRequest::relative_error`] (`None` for none).
pub fn mean_relative_error(requests: &[EstimatedRequest]) -> Option<f64> {
    mean(requests, EstimatedRequest::relative_error)
}

/// The mean of the requests' `error` (`None` for none).
pub fn mean(requests: &[EstimatedRequest], error: fn(&EstimatedRequest) -> f64) -> Option<f64> {
    (!requests.is_empty()).then(|| requests.iter().map(error).sum::<f64>() / requests.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::{ContentBlock, Usage};

    fn answer(id: &str, input: u64, output: u64) -> Message {
        let mut m = Message::assistant_fragment(id, "m", vec![ContentBlock::text("x".repeat(40))]);
        if let Message::Assistant(a) = &mut m {
            a.usage = Some(Box::new(
                Usage::new()
                    .with_input_tokens(input)
                    .with_output_tokens(output),
            ));
        }
        m
    }

    #[test]
    fn each_request_is_estimated_from_the_usage_before_it() {
        let prompt = Message::user_text("y".repeat(400));
        let session = vec![
            prompt.clone(),
            answer("msg_1", 1_100, 10),
            prompt.clone(),
            answer("msg_2", 1_224, 10),
        ];
        let requests = estimated_requests(&session);
        assert_eq!(requests.len(), 1);
        // msg_1's input and output, plus the prompt appended since.
        let expected = 1_110 + threadline_compact::estimate::message_tokens(&prompt);
        assert_eq!(requests[0].estimated, expected);
        assert_eq!(requests[0].recorded, 1_224);
        assert_eq!(requests[0].at, 3);
        assert!(mean_relative_error(&requests).expect("one") < 0.01);
    }

    #[test]
    fn the_kept_walk_gives_each_request_the_estimates_of_its_own_prefix() {
        use threadline_compact::units::since_last_boundary;
        use threadline_compact::{estimate_context, estimate_messages};
        // A generated session with compaction boundaries, every response reporting usage.
        let mut session = threadline_testkit::messages::long_session(3_000, 7);
        for (k, message) in session.iter_mut().enumerate() {
            if let Message::Assistant(a) = message {
                let input = 1_000 + 37 * k as u64;
                a.usage = Some(Box::new(
                    Usage::new().with_input_tokens(input).with_output_tokens(9),
                ));
            }
        }
        assert!(session.iter().any(is_compact_boundary));
        let requests = estimated_requests(&session);
        assert!(requests.len() > 100, "{} requests", requests.len());
        let overhead = inferred_overhead(&session).unwrap_or(0);
        for request in &requests {
            let before = &session[..request.at];
            assert_eq!(
                request.estimated,
                estimate_context(before, overhead),
                "at {}",
                request.at
            );
            let unanchored = overhead + estimate_messages(since_last_boundary(before));
            assert_eq!(request.unanchored, unanchored, "at {}", request.at);
        }
    }
}
