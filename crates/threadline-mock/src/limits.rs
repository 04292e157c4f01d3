//! The bounds on everything a client controls: body sizes, buffered bytes, recorded requests,
//! connections and how long a connection may sit without a request.

use std::time::Duration;

/// Bodies up to this size are always read; only the bytes of larger ones draw from the shared
/// [`ServerLimits::max_buffered_body_bytes`] budget, so a small request is never refused because
/// large uploads are in flight.
pub(crate) const SMALL_BODY_BYTES: usize = 16 * 1024;

/// Requests one HTTP/2 connection may have in flight at once (hyper's default is 200), so
/// that requests in flight stay within `max_connections` × this.
pub(crate) const MAX_HTTP2_STREAMS: u32 = 32;

/// The limits of a [`MockServer`](crate::MockServer). Every size and duration a client controls
/// is bounded here (every size a peer controls has a bound); [`ServerLimits::default()`] gives the values below.
///
/// | limit | default | over it |
/// |---|---|---|
/// | [`max_body_bytes`](Self::max_body_bytes) | 32 MiB (the API's) | 413 `request_too_large`, read no further |
/// | [`max_buffered_body_bytes`](Self::max_buffered_body_bytes) | 128 MiB | 529 `overloaded_error` |
/// | [`body_read_timeout`](Self::body_read_timeout) | 60 s | the connection is closed |
/// | [`max_recorded_requests`](Self::max_recorded_requests) | 10 000 | the oldest record is dropped |
/// | [`max_recorded_bytes`](Self::max_recorded_bytes) | 64 MiB | the oldest records are dropped |
/// | [`header_read_timeout`](Self::header_read_timeout) | 30 s | the connection is closed |
/// | [`first_request_timeout`](Self::first_request_timeout) | 5 s | the connection is closed |
/// | [`idle_timeout`](Self::idle_timeout) | 30 s | the connection is closed |
/// | [`max_connections`](Self::max_connections) | 128 | the longest-idle connection is closed |
/// | [`max_log_bytes`](Self::max_log_bytes) | 1 GiB | the request log ends with a `log_full` line |
///
/// An HTTP/2 connection carries at most 32 requests at once.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// The largest request body accepted. A larger one is answered 413 `request_too_large`
    /// as the API does: at once when its `content-length` says so, else as soon as the bytes
    /// read pass the limit (at most one more HTTP frame is read; nothing past the limit is
    /// kept).
    pub max_body_bytes: usize,
    /// How many body bytes all requests together may hold in memory while they are read and
    /// checked. The first 16 KiB of each body do not count, so small requests always get
    /// through; a request whose body would pass the budget is answered 529
    /// `overloaded_error` (the API's own answer under load, which clients retry). A declared
    /// `content-length` is paid in full when the headers arrive (so the refusal comes before
    /// the body is sent and the buffer is allocated once); an undeclared body pays as it
    /// grows. Body memory is thus at most this plus 16 KiB per request in flight (at most
    /// `max_connections`, times 32 streams on HTTP/2). Must be at least `max_body_bytes` for
    /// a maximal body to be accepted.
    pub max_buffered_body_bytes: usize,
    /// How long a request's body may take to arrive, from its headers to its last byte.
    /// A slower one is answered with a closed connection (recorded with no status).
    pub body_read_timeout: Duration,
    /// How many requests are kept for [`MockServer::requests()`](crate::MockServer::requests).
    /// Past it the oldest record is dropped first; [`MockServer::request_count()`](crate::MockServer::request_count)
    /// still counts every request.
    pub max_recorded_requests: usize,
    /// How many body bytes (as received) the kept records may hold together. Past it the
    /// oldest records are dropped first; a single body larger than this is recorded without
    /// its body. A parsed body takes a small multiple of its size in memory.
    pub max_recorded_bytes: usize,
    /// How long a client may take to send a request's headers (HTTP/1.1). The timer also
    /// runs while a kept-alive connection waits for its next request, so an idle HTTP/1.1
    /// connection closes after the shorter of this and [`idle_timeout`](Self::idle_timeout).
    pub header_read_timeout: Duration,
    /// How long a new connection may take to start its first request (HTTP/1.1 or HTTP/2,
    /// from the accept to its first request head, the bytes that tell the protocol apart
    /// included). Shorter than [`header_read_timeout`](Self::header_read_timeout), which
    /// hyper only starts once it knows the protocol: connections trickling their first bytes
    /// or header lines give their slots back within this, not the global timeouts.
    pub first_request_timeout: Duration,
    /// How long a connection may have no request in flight before it is closed (HTTP/1.1
    /// and HTTP/2, including a connection that never sends a byte).
    pub idle_timeout: Duration,
    /// How many connections are served at once. A new connection over the limit closes the
    /// connection that has been idle longest (no request in flight); when every connection
    /// is busy it waits for one to end. The same eviction runs when accepting fails for
    /// lack of file descriptors.
    pub max_connections: usize,
    /// How many bytes the request log ([`MockConfig::with_record_log`](crate::MockConfig::with_record_log))
    /// may grow by: the line that would pass it is replaced by `{"log_full":true,"seq":N}`
    /// and nothing more is written.
    pub max_log_bytes: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_body_bytes: 32 * 1024 * 1024,
            max_buffered_body_bytes: 128 * 1024 * 1024,
            body_read_timeout: Duration::from_secs(60),
            max_recorded_requests: 10_000,
            max_recorded_bytes: 64 * 1024 * 1024,
            header_read_timeout: Duration::from_secs(30),
            first_request_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            max_connections: 128,
            max_log_bytes: 1024 * 1024 * 1024,
        }
    }
}

impl ServerLimits {
    /// These limits with another largest request body.
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// These limits with another budget for body bytes held by all requests at once.
    pub fn with_max_buffered_body_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_body_bytes = bytes;
        self
    }

    /// These limits with another time allowed for a request's body to arrive.
    pub fn with_body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// These limits keeping at most `count` recorded requests.
    pub fn with_max_recorded_requests(mut self, count: usize) -> Self {
        self.max_recorded_requests = count;
        self
    }

    /// These limits keeping recorded bodies of at most `bytes` together.
    pub fn with_max_recorded_bytes(mut self, bytes: usize) -> Self {
        self.max_recorded_bytes = bytes;
        self
    }

    /// These limits with another time allowed for a request's headers.
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// These limits with another time allowed for a new connection's first request head.
    pub fn with_first_request_timeout(mut self, timeout: Duration) -> Self {
        self.first_request_timeout = timeout;
        self
    }

    /// These limits with another time a connection may sit without a request.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// These limits serving at most `count` connections at once (at least one).
    pub fn with_max_connections(mut self, count: usize) -> Self {
        self.max_connections = count;
        self
    }

    /// These limits letting the request log grow by at most `bytes`.
    pub fn with_max_log_bytes(mut self, bytes: u64) -> Self {
        self.max_log_bytes = bytes;
        self
    }
}
