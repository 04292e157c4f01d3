//! Session operations over a threadline transcript's messages: [`fork`] a session at a
//! message, [`rewind`] it by typed prompts, and [`summarize`] or [`list_sessions`] for a
//! listing.
//!
//! Every operation is a pure function of the messages (only [`list_sessions`] reads files),
//! and keeps every message it keeps as it was: its content blocks — tool-use ids, thinking
//! signatures, text — its timestamp and every other field serialize to the same bytes. A fork
//! changes ids only (and the references to them), a rewind changes nothing it keeps.
//!
//! * [`fork`] keeps everything up to and including a message, gives every kept message a
//!   fresh id derived from the source session's id, the fork point and the old id (forking
//!   twice gives the same bytes), rewrites the references the crate knows of
//!   ([`Tombstone::retracts`](crate::Tombstone), `CompactBoundary.last_message_id`) through the
//!   same map, and starts the new session with a [`SystemKind::ForkedFrom`](crate::SystemKind::ForkedFrom) record (which
//!   never reaches the API).
//! * [`rewind`] drops the last N typed prompts (see [`is_typed_prompt`]) and everything that
//!   followed each, then answers every tool use left without a result with an error result
//!   (one appended message), so that the session still normalizes to a valid request.
//! * [`summarize`] gives a [`SessionInfo`]: title, start time, message count, model and tokens.
//!
//! "Kept as it was" holds for the message values (and so for every line threadline wrote,
//! which is their serialization). To keep a source's own bytes — another key order, fields
//! this version does not know — write the kept messages with [`rewrite_line`] from the
//! source's [`transcript_lines`]: only the ids change.
//!
//! ```
//! use threadline_message::session_ops::{fork, rewind, summarize};
//! use threadline_message::{Header, Message, SystemKind};
//! use threadline_wire::ContentBlock;
//!
//! let at = |n: u32| Header::with(format!("m{n}"), format!("2026-01-01T00:00:0{n}Z"));
//! let session = vec![
//!     Message::user_text("Fix the bug").with_header(at(1)),
//!     Message::assistant(vec![ContentBlock::text("Done.")]).with_header(at(2)),
//!     Message::user_text("Now add a test").with_header(at(3)),
//!     Message::assistant(vec![ContentBlock::text("Added.")]).with_header(at(4)),
//! ];
//!
//! // A fork at the first answer: the record, then the two messages with fresh ids.
//! let forked = fork(&session, &"m2".into(), "source-session")?;
//! assert_eq!(forked.messages.len(), 3);
//! assert!(matches!(
//!     &forked.messages[0],
//!     Message::System(s) if matches!(&s.kind, SystemKind::ForkedFrom { session, .. } if session == "source-session")
//! ));
//! assert_ne!(forked.messages[1].id(), session[0].id());
//! assert_eq!(forked.source_ids, vec!["m1".into(), "m2".into()]);
//! // Deterministic: the same fork gives the same messages.
//! assert_eq!(fork(&session, &"m2".into(), "source-session")?.messages, forked.messages);
//!
//! // Rewinding one turn drops the last prompt and its answer.
//! let rewound = rewind(&session, 1)?;
//! assert_eq!(rewound.messages, session[..2].to_vec());
//! // There are only two typed prompts to drop.
//! let error = rewind(&session, 3).unwrap_err();
//! assert!(error.is_not_enough_turns());
//! assert_eq!(error.to_string(), "cannot rewind 3 turns: the session has 2 typed prompts");
//!
//! let info = summarize("source-session", &session);
//! assert_eq!(info.title.as_deref(), Some("Fix the bug"));
//! assert_eq!(info.message_count, 4);
//! # Ok::<(), threadline_message::session_ops::SessionOpError>(())
//! ```

mod error;
mod fork;
mod ids;
mod lines;
mod rewind;
mod summary;

pub use error::SessionOpError;
pub use fork::{Forked, fork};
pub use ids::derive_id;
pub use lines::{TranscriptLine, rewrite_line, transcript_lines};
pub use rewind::{Rewound, is_typed_prompt, rewind};
pub use summary::{
    ForkOrigin, ListedSession, Listing, SessionInfo, SkippedFile, TITLE_MAX_CHARS, list_sessions,
    summarize,
};
