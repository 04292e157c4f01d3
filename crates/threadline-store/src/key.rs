//! Which session an entry belongs to: a project, a session id in it, and optionally the path
//! of a sub-session (a subagent's transcript) under that session.

use crate::error::StoreError;

/// The longest project, session or subpath a key may carry, in bytes.
pub const MAX_KEY_PART_BYTES: usize = 512;

/// The address of one session's entries (or one sub-session's).
///
/// The parts are opaque to the store: a backend never interprets them as paths. A JSONL
/// backend encodes each part into one file-name segment, so `../x` or `a/b` stays inside its
/// root. [`SessionKey::new`] refuses empty parts, parts over [`MAX_KEY_PART_BYTES`] and parts
/// with control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct SessionKey {
    /// The project the session belongs to (Claude Code: the encoded working directory).
    pub project: String,
    /// The session id.
    pub session: String,
    /// The sub-session under `session`, e.g. `subagents/agent-a1b2` (`None`: the main one).
    pub subpath: Option<String>,
}

impl SessionKey {
    /// The main key of `session` in `project`.
    pub fn new(project: impl Into<String>, session: impl Into<String>) -> Result<Self, StoreError> {
        let key = SessionKey {
            project: project.into(),
            session: session.into(),
            subpath: None,
        };
        check_part("project", &key.project)?;
        check_part("session", &key.session)?;
        Ok(key)
    }

    /// The sub-session `subpath` of this key's session.
    pub fn with_subpath(&self, subpath: impl Into<String>) -> Result<Self, StoreError> {
        let subpath = subpath.into();
        check_part("subpath", &subpath)?;
        Ok(SessionKey {
            subpath: Some(subpath),
            ..self.main()
        })
    }

    /// The main key of this key's session (the subpath dropped).
    pub fn main(&self) -> SessionKey {
        SessionKey {
            project: self.project.clone(),
            session: self.session.clone(),
            subpath: None,
        }
    }

    /// Whether this is a main key (no subpath).
    pub fn is_main(&self) -> bool {
        self.subpath.is_none()
    }

    /// Checks the parts of a key built by hand (the fields are public): what
    /// [`SessionKey::new`] checks. Backends call it before they touch storage.
    pub fn validate(&self) -> Result<(), StoreError> {
        check_part("project", &self.project)?;
        check_part("session", &self.session)?;
        if let Some(subpath) = &self.subpath {
            check_part("subpath", subpath)?;
        }
        Ok(())
    }
}

pub(crate) fn check_part(part: &'static str, value: &str) -> Result<(), StoreError> {
    let reason = if value.is_empty() {
        "is empty"
    } else if value.len() > MAX_KEY_PART_BYTES {
        "is longer than 512 bytes"
    } else if value.chars().any(char::is_control) {
        "contains a control character"
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidKey { part, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_parts_are_refused_or_kept_opaque() {
        assert!(SessionKey::new("", "s").is_err());
        assert!(SessionKey::new("p", "a\nb").is_err());
        assert!(SessionKey::new("p", "x".repeat(513)).is_err());
        let key = SessionKey::new("../p", "a/b").expect("opaque parts are fine");
        assert_eq!(
            key.with_subpath("subagents/agent-1").expect("ok").main(),
            key
        );
    }
}
