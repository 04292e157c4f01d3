//! The requests kept for tests to inspect, bounded in count and body bytes (oldest dropped
//! first).

use std::collections::VecDeque;

use crate::server::RecordedRequest;

/// The kept records and the bounds they respect.
#[derive(Debug)]
pub(crate) struct Recording {
    kept: VecDeque<RecordedRequest>,
    /// The body bytes of the kept records that still hold a body.
    kept_bytes: usize,
    /// Every request recorded, kept or since dropped.
    received: usize,
    max_count: usize,
    max_bytes: usize,
}

impl Recording {
    pub(crate) fn new(max_count: usize, max_bytes: usize) -> Recording {
        Recording {
            kept: VecDeque::new(),
            kept_bytes: 0,
            received: 0,
            max_count,
            max_bytes,
        }
    }

    /// The body bytes a record holds against the byte bound.
    fn weight(record: &RecordedRequest) -> usize {
        if record.body.is_some() {
            record.body_bytes
        } else {
            0
        }
    }

    /// Keeps `record`, dropping the oldest records while the bounds would be passed. A body
    /// larger than the whole byte bound is not kept (the rest of the record is).
    pub(crate) fn push(&mut self, mut record: RecordedRequest) {
        self.received = self.received.saturating_add(1);
        if self.max_count == 0 {
            return;
        }
        if Self::weight(&record) > self.max_bytes {
            record.body = None;
        }
        let weight = Self::weight(&record);
        while self.kept.len() >= self.max_count
            || self.kept_bytes.saturating_add(weight) > self.max_bytes
        {
            let Some(oldest) = self.kept.pop_front() else {
                break;
            };
            self.kept_bytes -= Self::weight(&oldest);
        }
        self.kept_bytes += weight;
        self.kept.push_back(record);
    }

    /// The kept records, oldest first.
    pub(crate) fn kept(&self) -> &VecDeque<RecordedRequest> {
        &self.kept
    }

    /// How many requests were recorded, kept or dropped.
    pub(crate) fn received(&self) -> usize {
        self.received
    }

    /// How many records were dropped to respect the bounds.
    pub(crate) fn dropped(&self) -> usize {
        self.received - self.kept.len()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn record(n: usize, body_bytes: usize) -> RecordedRequest {
        RecordedRequest {
            method: "POST".to_owned(),
            path: format!("/{n}"),
            version: "HTTP/1.1".to_owned(),
            headers: BTreeMap::new(),
            body: Some(json!({"n": n})),
            body_bytes,
            status: Some(200),
            refusal: None,
        }
    }

    fn paths(recording: &Recording) -> Vec<String> {
        recording.kept().iter().map(|r| r.path.clone()).collect()
    }

    #[test]
    fn the_count_bound_drops_the_oldest_records_first() {
        let mut recording = Recording::new(3, usize::MAX);
        for n in 0..10 {
            recording.push(record(n, 10));
        }
        assert_eq!(paths(&recording), ["/7", "/8", "/9"]);
        assert_eq!(recording.received(), 10);
        assert_eq!(recording.dropped(), 7);
    }

    #[test]
    fn the_byte_bound_drops_the_oldest_bodies_first_and_never_holds_more() {
        let mut recording = Recording::new(usize::MAX, 100);
        for n in 0..10 {
            recording.push(record(n, 30 + n));
            let held: usize = recording.kept().iter().map(|r| r.body_bytes).sum();
            assert!(held <= 100, "{held} body bytes kept over a bound of 100");
        }
        // 37 + 38 + 39 = 114 > 100: only the last two fit.
        assert_eq!(paths(&recording), ["/8", "/9"]);
        assert_eq!(recording.dropped(), 8);
    }

    #[test]
    fn a_body_larger_than_the_byte_bound_is_kept_without_its_body() {
        let mut recording = Recording::new(10, 100);
        recording.push(record(0, 50));
        recording.push(record(1, 1_000));
        assert_eq!(paths(&recording), ["/0", "/1"]);
        assert_eq!(recording.kept()[1].body, None);
        assert_eq!(recording.kept()[1].body_bytes, 1_000);
        assert!(recording.kept()[0].body.is_some());
    }

    #[test]
    fn records_without_a_body_weigh_nothing() {
        let mut recording = Recording::new(10, 100);
        recording.push(record(0, 90));
        let mut rejected = record(1, 1_000_000);
        rejected.body = None;
        recording.push(rejected);
        assert_eq!(paths(&recording), ["/0", "/1"]);
    }

    #[test]
    fn a_zero_count_keeps_nothing_but_counts_everything() {
        let mut recording = Recording::new(0, 100);
        recording.push(record(0, 1));
        assert!(recording.kept().is_empty());
        assert_eq!(recording.received(), 1);
    }
}
