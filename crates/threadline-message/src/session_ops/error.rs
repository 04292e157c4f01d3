//! The one error type of the session operations.

use std::io;
use std::path::PathBuf;

use crate::header::MessageId;

/// Why a session operation could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionOpError {
    /// The message to fork at is not in the session.
    #[error("message {id} is not in session {session}")]
    UnknownMessage {
        /// The session searched.
        session: String,
        /// The id that was not found.
        id: MessageId,
    },
    /// The session has fewer typed prompts than the turns asked to rewind.
    #[error("cannot rewind {asked} turns: the session has {found} typed prompts")]
    NotEnoughTurns {
        /// Turns asked.
        asked: usize,
        /// Typed prompts in the session.
        found: usize,
    },
    /// A directory of transcripts could not be listed.
    #[error("cannot list {}: {source}", path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl SessionOpError {
    /// The message to fork at is not in the session.
    pub fn is_unknown_message(&self) -> bool {
        matches!(self, SessionOpError::UnknownMessage { .. })
    }

    /// The session has fewer typed prompts than asked.
    pub fn is_not_enough_turns(&self) -> bool {
        matches!(self, SessionOpError::NotEnoughTurns { .. })
    }

    /// The operation was given input it cannot apply to (an unknown message, too many
    /// turns), as opposed to a file that could not be read.
    pub fn is_bad_input(&self) -> bool {
        self.is_unknown_message() || self.is_not_enough_turns()
    }

    /// A file or directory could not be read.
    pub fn is_io(&self) -> bool {
        matches!(self, SessionOpError::ReadDir { .. })
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn errors_say_what_and_keep_their_cause() {
        let unknown = SessionOpError::UnknownMessage {
            session: "s1".into(),
            id: MessageId::from("m9"),
        };
        assert_eq!(unknown.to_string(), "message m9 is not in session s1");
        assert!(unknown.is_unknown_message() && unknown.is_bad_input() && !unknown.is_io());
        assert!(unknown.source().is_none());

        let dir = SessionOpError::ReadDir {
            path: PathBuf::from("/nowhere"),
            source: io::Error::new(io::ErrorKind::NotFound, "gone"),
        };
        assert_eq!(dir.to_string(), "cannot list /nowhere: gone");
        assert!(dir.is_io() && !dir.is_bad_input());
        assert_eq!(
            dir.source().map(ToString::to_string).as_deref(),
            Some("gone")
        );
    }
}
