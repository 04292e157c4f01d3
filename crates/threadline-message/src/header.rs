//! What every internal message carries: a stable id and a timestamp.

use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// A message's stable id (a UUID for messages made here; whatever the source used for
/// imported ones).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(pub String);

impl MessageId {
    /// A fresh id: a random (v4) UUID, or, inside a [`determinism`](crate::determinism)
    /// scope, one derived from the scope's seed and counter (a replay gets the same ids).
    pub fn random() -> Self {
        crate::determinism::next_id()
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for MessageId {
    fn from(id: &str) -> Self {
        MessageId(id.to_owned())
    }
}

/// An RFC 3339 timestamp, kept as text so imported values round-trip exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub String);

impl Timestamp {
    /// The current time, in UTC with millisecond precision (inside a
    /// [`determinism`](crate::determinism) scope, the scope's fixed time).
    pub fn now() -> Self {
        Timestamp(humantime::format_rfc3339_millis(crate::determinism::now()).to_string())
    }

    /// The timestamp as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses the timestamp, if it is valid RFC 3339.
    pub fn to_system_time(&self) -> Option<SystemTime> {
        humantime::parse_rfc3339_weak(&self.0).ok()
    }
}

/// The id and time of one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The stable id.
    pub id: MessageId,
    /// When the message was made.
    pub timestamp: Timestamp,
}

impl Header {
    /// A header with a fresh id and the current time.
    pub fn new() -> Self {
        Header {
            id: MessageId::random(),
            timestamp: Timestamp::now(),
        }
    }

    /// A header with the given id and time (imports, tests, replays).
    pub fn with(id: impl Into<String>, timestamp: impl Into<String>) -> Self {
        Header {
            id: MessageId(id.into()),
            timestamp: Timestamp(timestamp.into()),
        }
    }
}

impl Default for Header {
    fn default() -> Self {
        Header::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_headers_are_unique_and_parse() {
        let (a, b) = (Header::new(), Header::new());
        assert_ne!(a.id, b.id);
        assert!(
            a.timestamp.to_system_time().is_some(),
            "{}",
            a.timestamp.as_str()
        );
        assert!(Timestamp("yesterday".into()).to_system_time().is_none());
    }
}
