//! The entries of a session-stable context ([`SystemContext`](crate::SystemContext),
//! [`UserContext`](crate::UserContext)): `key`/value pairs in the order pushed, blank values
//! left out.

/// Ordered `(key, value)` pairs; a blank value is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ContextEntries(Vec<(String, String)>);

impl ContextEntries {
    /// Adds `key` with `value` as `prepare` makes it (a cut, say), unless `value` is blank
    /// (decided before `prepare`, so a blank value never becomes an entry).
    pub(crate) fn push(
        &mut self,
        key: String,
        value: String,
        prepare: impl FnOnce(String) -> String,
    ) {
        if !value.trim().is_empty() {
            self.0.push((key, prepare(value)));
        }
    }

    /// The entries, in the order pushed.
    pub(crate) fn as_slice(&self) -> &[(String, String)] {
        &self.0
    }

    /// Whether there is none.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_values_are_left_out_before_they_are_prepared() {
        let mut entries = ContextEntries::default();
        entries.push("a".into(), " \n".into(), |_| "prepared".into());
        assert!(entries.is_empty());
        entries.push("b".into(), "x".into(), |v| format!("{v}!"));
        entries.push("c".into(), "y".into(), std::convert::identity);
        assert_eq!(
            entries.as_slice(),
            [("b".into(), "x!".into()), ("c".into(), "y".into())]
        );
    }
}
