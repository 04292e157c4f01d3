//! The prompt cache's lifetime, as far as compaction needs it: has the cache expired since
//! the last request?
//!
//! A cache entry lives five minutes (or one hour) after it was last read or written, so the
//! last assistant message's time is when the cached prefix was last used. Clearing content
//! after the entry expired costs no cache: the next request writes the prefix anew anyway.

use std::time::{Duration, SystemTime};

use threadline_message::Message;
use threadline_wire::CacheTtl;

/// How long an entry with lifetime `ttl` lives; a lifetime this crate does not know counts
/// as the longest (one hour), so that expiry is never assumed too early.
pub fn ttl_duration(ttl: &CacheTtl) -> Duration {
    match ttl {
        CacheTtl::FiveMinutes => Duration::from_secs(5 * 60),
        _ => Duration::from_secs(60 * 60),
    }
}

/// When the cache used by the last request of `history` expires: the last assistant
/// message's time plus the lifetime. `None` when there is no assistant message with a
/// readable time (nothing is known to be cached, or when it was is unknown).
pub fn cache_expires_at(history: &[Message], ttl: &CacheTtl) -> Option<SystemTime> {
    let last = history.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => Some(a.header.timestamp.to_system_time()),
        _ => None,
    })??;
    last.checked_add(ttl_duration(ttl))
}

/// Whether the cache of the last request has expired at `now`. An unknown time counts as
/// not expired: clearing content then might break a live cache.
pub fn cache_expired(history: &[Message], ttl: &CacheTtl, now: SystemTime) -> bool {
    cache_expires_at(history, ttl).is_some_and(|at| now >= at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_message::Header;
    use threadline_wire::ContentBlock;

    fn at(time: &str) -> SystemTime {
        humantime::parse_rfc3339(time).expect("a time")
    }

    #[test]
    fn expiry_follows_the_last_assistant_message() {
        let history = vec![
            Message::user_text("hi"),
            Message::assistant(vec![ContentBlock::text("ok")])
                .with_header(Header::with("a", "2026-01-01T10:00:00.000Z")),
            Message::user_text("later").with_header(Header::with("u", "2026-01-01T11:00:00.000Z")),
        ];
        let five = CacheTtl::FiveMinutes;
        assert!(!cache_expired(&history, &five, at("2026-01-01T10:04:59Z")));
        assert!(cache_expired(&history, &five, at("2026-01-01T10:05:00Z")));
        assert!(!cache_expired(
            &history,
            &CacheTtl::OneHour,
            at("2026-01-01T10:30:00Z")
        ));
        assert!(cache_expired(
            &history,
            &CacheTtl::OneHour,
            at("2026-01-01T11:00:00Z")
        ));
        assert!(!cache_expired(
            &history[..1],
            &five,
            at("2030-01-01T00:00:00Z")
        ));
    }
}
