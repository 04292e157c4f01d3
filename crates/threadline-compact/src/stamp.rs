//! Headers of the messages compaction writes: derived from their input, never random, so the
//! same input gives byte-identical output.

use std::time::SystemTime;

use threadline_message::{Header, MessageId, Timestamp};

/// A header whose id is `<kind>-<the id it is derived from>` and whose time is `now`.
pub(crate) fn derived_header(kind: &str, from: Option<&MessageId>, now: SystemTime) -> Header {
    let id = match from {
        Some(from) => format!("{kind}-{from}"),
        None => kind.to_owned(),
    };
    Header {
        id: MessageId(id),
        timestamp: Timestamp(humantime::format_rfc3339_millis(now).to_string()),
    }
}
