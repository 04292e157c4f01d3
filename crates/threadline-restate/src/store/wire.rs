//! What [`RestateStore`](super::RestateStore) and the objects exchange, the object key of a
//! session, and the state key layout of a `SessionLog`.

use serde::{Deserialize, Serialize};

use crate::http::segment;

/// The Restate name of the per-session object.
pub const SESSION_LOG: &str = "SessionLog";
/// The Restate name of the per-project index object.
pub const SESSION_INDEX: &str = "SessionIndex";

/// The most raw entry bytes one `load` page carries (a page holds at least one entry).
pub(crate) const PAGE_BYTES: usize = 8 * 1024 * 1024;

/// One entry in an append request: its id and its exact JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireEntry {
    pub(crate) id: Option<String>,
    pub(crate) line: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AppendRequest {
    pub(crate) subpath: Option<String>,
    pub(crate) now_ms: u64,
    pub(crate) entries: Vec<WireEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AppendResult {
    pub(crate) written: usize,
    pub(crate) duplicates: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LoadRequest {
    pub(crate) subpath: Option<String>,
    /// The index of the first entry of the page.
    pub(crate) from: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LoadPage {
    /// How many entries the log holds (`None`: the log does not exist).
    pub(crate) total: Option<u64>,
    /// Entries `from..`, at most [`PAGE_BYTES`] of them (at least one while any is left).
    pub(crate) entries: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeleteRequest {
    pub(crate) subpath: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Touch {
    pub(crate) session: String,
    pub(crate) mtime_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Listed {
    pub(crate) session: String,
    pub(crate) mtime_ms: u64,
}

/// The `SessionLog` object key of `(project, session)`: both percent-encoded, joined by `/`.
pub(crate) fn object_key(project: &str, session: &str) -> String {
    format!("{}/{}", segment(project), segment(session))
}

/// The `(project, session)` of an object key made by [`object_key`].
pub(crate) fn parse_object_key(key: &str) -> Option<(String, String)> {
    let (project, session) = key.split_once('/')?;
    Some((unsegment(project)?, unsegment(session)?))
}

/// Reverses [`segment`]; `None` for anything it does not produce.
fn unsegment(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

/// The state keys of one log (the main one or a sub-session) inside a `SessionLog`.
pub(crate) struct LogKeys {
    tag: String,
}

impl LogKeys {
    pub(crate) fn new(subpath: Option<&str>) -> Self {
        Self {
            tag: match subpath {
                None => "-".to_owned(),
                Some(s) => format!("s{}", segment(s)),
            },
        }
    }

    /// How many entries the log holds (absent: the log does not exist).
    pub(crate) fn count(&self) -> String {
        format!("n/{}", self.tag)
    }

    /// The bytes of entry `seq`.
    pub(crate) fn entry(&self, seq: u64) -> String {
        format!("e/{}/{seq:020}", self.tag)
    }

    /// The marker of an entry id (its value: the entry's index).
    pub(crate) fn id(&self, id: &str) -> String {
        format!("i/{}/{id}", self.tag)
    }

    /// Whether `state_key` belongs to this log.
    pub(crate) fn owns(&self, state_key: &str) -> bool {
        [b'n', b'e', b'i'].iter().any(|&kind| {
            state_key.as_bytes().first() == Some(&kind)
                && state_key.get(1..2) == Some("/")
                && state_key.get(2..).is_some_and(|rest| {
                    rest == self.tag || rest.starts_with(&format!("{}/", self.tag))
                })
        })
    }
}

/// The sorted subpaths holding entries.
pub(crate) const SUBS: &str = "subs";
/// When the index was last told about this session (milliseconds).
pub(crate) const INDEXED_MS: &str = "indexed_ms";
/// How often an append refreshes the session's mtime in the project index, at most.
pub(crate) const INDEX_REFRESH_MS: u64 = 1000;
/// The index's state key of a session.
pub(crate) fn index_key(session: &str) -> String {
    format!("s/{session}")
}
/// The session of an index state key.
pub(crate) fn index_session(state_key: &str) -> Option<&str> {
    state_key.strip_prefix("s/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_round_trip_hostile_parts() {
        for (p, s) in [
            ("p", "s"),
            ("/../x", "a/b"),
            ("%2F", ":"),
            ("ünï", "a b?#"),
            ("-", "~."),
        ] {
            let key = object_key(p, s);
            assert_eq!(key.matches('/').count(), 1, "{key}");
            assert_eq!(parse_object_key(&key), Some((p.to_owned(), s.to_owned())));
        }
        assert_eq!(object_key("a/b", "c"), "a%2Fb/c");
        assert_eq!(parse_object_key("nokey"), None);
        assert_eq!(parse_object_key("a%2/b"), None);
        assert_eq!(parse_object_key("a b/c"), None);
        assert_eq!(parse_object_key("%FF/c"), None);
    }

    proptest::proptest! {
        /// Any project and session (hostile text included) round-trip through the object key,
        /// and two different pairs never share one.
        #[test]
        fn object_keys_are_injective(
            p in "\\PC{0,12}|[/%:. -]{0,6}",
            s in "\\PC{0,12}|[/%:. -]{0,6}",
            q in "\\PC{0,12}",
        ) {
            let key = object_key(&p, &s);
            proptest::prop_assert_eq!(key.matches('/').count(), 1);
            proptest::prop_assert_eq!(parse_object_key(&key), Some((p.clone(), s.clone())));
            if q != p {
                proptest::prop_assert_ne!(object_key(&q, &s), key);
            }
        }

        /// A sub-session's state keys never belong to another log.
        #[test]
        fn log_keys_never_overlap(a in "\\PC{1,10}", b in "\\PC{1,10}", seq in 0u64..1_000_000) {
            let (ka, kb) = (LogKeys::new(Some(&a)), LogKeys::new(Some(&b)));
            let main = LogKeys::new(None);
            proptest::prop_assert!(!main.owns(&ka.entry(seq)) && !ka.owns(&main.count()));
            if a != b {
                proptest::prop_assert!(!ka.owns(&kb.entry(seq)));
                proptest::prop_assert!(!ka.owns(&kb.count()));
                proptest::prop_assert!(!ka.owns(&kb.id("x")));
            }
        }
    }

    #[test]
    fn log_keys_are_apart() {
        let main = LogKeys::new(None);
        let sub = LogKeys::new(Some("subagents/a"));
        let other = LogKeys::new(Some("subagents/ab"));
        assert_eq!(main.entry(7), "e/-/00000000000000000007");
        assert_eq!(sub.entry(7), "e/ssubagents%2Fa/00000000000000000007");
        assert_eq!(sub.count(), "n/ssubagents%2Fa");
        assert_eq!(sub.id("u/1"), "i/ssubagents%2Fa/u/1");
        assert!(sub.owns(&sub.entry(1)) && sub.owns(&sub.count()) && sub.owns(&sub.id("x")));
        assert!(!sub.owns(&other.entry(1)) && !sub.owns(&other.count()));
        assert!(!sub.owns(&main.entry(1)) && !main.owns(&sub.id("x")));
        assert!(!main.owns(SUBS) && !main.owns(INDEXED_MS));
        // Entry keys sort in append order.
        assert!(main.entry(9) < main.entry(10));
    }
}
