//! Channel 1: `key: value` context appended to the end of the system prompt, computed once
//! per session (a git status snapshot), so the system prompt stays byte-identical and cached.

use std::path::Path;

use threadline_wire::content::TextBlock;
use threadline_wire::request::SystemPrompt;

use crate::context_entries::ContextEntries;
use threadline_workspace::Git;

/// The most characters one value may have; longer values are cut with a note.
pub const SYSTEM_VALUE_LIMIT: usize = 2000;

/// Session-stable context for the end of the system prompt, in the order it was pushed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemContext {
    entries: ContextEntries,
}

impl SystemContext {
    /// No context.
    pub fn new() -> Self {
        SystemContext::default()
    }

    /// Adds `key: value`, the value cut at [`SYSTEM_VALUE_LIMIT`] characters. A blank value
    /// is left out.
    pub fn push(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.entries.push(key.into(), value.into(), truncate_value);
        self
    }

    /// This context with `key: value` added.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.push(key, value);
        self
    }

    /// The entries.
    pub fn entries(&self) -> &[(String, String)] {
        self.entries.as_slice()
    }

    /// The text appended: one `key: value` per entry; `None` when there is none.
    pub fn text(&self) -> Option<String> {
        if self.entries.is_empty() {
            return None;
        }
        Some(
            self.entries
                .as_slice()
                .iter()
                .map(|(key, value)| format!("{key}: {value}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    /// `system` with this context appended as a last text block (the blocks before it are
    /// kept as they are, cache markers included).
    ///
    /// ```
    /// use threadline_attach::SystemContext;
    /// use threadline_wire::request::SystemPrompt;
    ///
    /// let context = SystemContext::new().with("gitStatus", "Current branch: main");
    /// let system = context.append_to(Some(SystemPrompt::Text("You are a coding agent.".into())));
    /// let blocks = system.expect("a prompt").blocks();
    /// assert_eq!(blocks[1].text, "gitStatus: Current branch: main");
    /// ```
    pub fn append_to(&self, system: Option<SystemPrompt>) -> Option<SystemPrompt> {
        let Some(text) = self.text() else {
            return system;
        };
        let mut blocks = system.map(|s| s.blocks()).unwrap_or_default();
        blocks.retain(|b| !b.text.trim().is_empty());
        blocks.push(TextBlock::new(text));
        Some(SystemPrompt::Blocks(blocks))
    }
}

fn truncate_value(value: String) -> String {
    match value.char_indices().nth(SYSTEM_VALUE_LIMIT) {
        None => value,
        Some((cut, _)) => format!(
            "{}\n... (truncated because it exceeds {SYSTEM_VALUE_LIMIT} characters)",
            &value[..cut]
        ),
    }
}

/// A snapshot of the git status of `root` for the system prompt: branch, short status and the
/// last five commits. `None` when `root` is not the top of a git work tree (a repository
/// *above* the workspace is never described), or git cannot be run or does not answer in time.
///
/// Taken once, at session start (it is a snapshot, and saying so keeps the model from
/// trusting it later); it runs `git` synchronously through [`Git`], so nothing the
/// repository's configuration names (fsmonitor, filters, hooks, pagers, …) is run, and each
/// invocation is bounded in time and output.
pub fn git_status_snapshot(root: &Path) -> Option<String> {
    let root = root.canonicalize().ok()?;
    let git = Git::new(&root).ok()?;
    let run = |args: &[&str]| git.run(args).ok();
    let top = run(&["rev-parse", "--show-toplevel"])?;
    // `core.worktree` or a `.git` file can name another work tree; only this one is described.
    if Path::new(top.trim()).canonicalize().ok()? != root {
        return None;
    }
    let branch = run(&["symbolic-ref", "--short", "HEAD"])
        .or_else(|| run(&["rev-parse", "--short", "HEAD"]))
        .unwrap_or_default();
    let status = run(&["status", "--short", "--ignore-submodules=all"]).unwrap_or_default();
    let commits = run(&[
        "log",
        "--oneline",
        "--no-show-signature",
        "--no-decorate",
        "-n",
        "5",
    ])
    .unwrap_or_default();
    let or_none = |s: String| if s.is_empty() { "(none)".to_owned() } else { s };
    Some(format!(
        "This is the git status at the start of the conversation. It is a snapshot and will \
         not update during the conversation.\nCurrent branch: {}\n\nStatus:\n{}\n\nRecent \
         commits:\n{}",
        or_none(branch),
        or_none(status),
        or_none(commits)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_with_a_note_and_blank_ones_left_out() {
        let context = SystemContext::new()
            .with("gitStatus", "é".repeat(SYSTEM_VALUE_LIMIT + 5))
            .with("empty", "  ");
        assert_eq!(context.entries().len(), 1);
        let text = context.text().expect("text");
        assert!(text.starts_with(&format!("gitStatus: {}", "é".repeat(SYSTEM_VALUE_LIMIT))));
        assert!(text.ends_with("(truncated because it exceeds 2000 characters)"));
    }

    #[test]
    fn no_context_leaves_the_system_prompt_alone() {
        let system = Some(SystemPrompt::Text("s".into()));
        assert_eq!(SystemContext::new().append_to(system.clone()), system);
    }

    use std::process::Command;

    #[test]
    fn a_fresh_repository_has_a_snapshot_of_its_branch_and_status() {
        let dir = tempfile::tempdir().expect("tempdir");
        let init = Command::new("git")
            .args(["-c", "init.defaultBranch=main", "init", "-q"])
            .arg(dir.path())
            .status()
            .expect("git runs");
        assert!(init.success());
        std::fs::write(dir.path().join("new.txt"), "x").expect("file");
        let snapshot = git_status_snapshot(dir.path()).expect("a snapshot");
        assert!(
            snapshot.ends_with(
                "Current branch: main\n\nStatus:\n?? new.txt\n\nRecent commits:\n(none)"
            ),
            "{snapshot}"
        );
    }

    #[test]
    fn a_directory_outside_git_has_no_snapshot() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(git_status_snapshot(dir.path()), None);
    }
}
