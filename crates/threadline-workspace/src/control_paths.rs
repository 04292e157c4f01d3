//! Control paths: the files of a workspace that make programs run without anyone asking —
//! git's repository directory (its `config` names `core.fsmonitor`, hooks, pagers …), an
//! agent's settings (Claude Code's `.claude/` hooks, `.mcp.json` servers), threadline's own
//! `.threadline/`. A tool allowed to write files but not to run commands must not write
//! these, or writing becomes running (a finding of a security review; ARCHITECTURE.md's
//! `threadline-tools` invariants).
//!
//! A pattern is one or more path components (`.git`, `.claude`); a path matches when the
//! pattern's components appear in it consecutively at any depth, so `.git` covers
//! `.git/config`, `sub/.git/hooks/pre-commit` and a worktree's or submodule's `.git` *file*.
//! Components are compared the way case-insensitive and normalizing file systems compare
//! them, as git itself does for `.git`: case folded, the code points HFS+ ignores dropped,
//! trailing dots and spaces and an NTFS stream suffix (`::$INDEX_ALLOCATION`) cut, and an
//! 8.3 short name (`GIT~1`) taken as its long name. That over-refuses on a case-sensitive
//! file system (`.GIT/x` is refused there too), which is the safe side.
//!
//! ```
//! use threadline_workspace::ControlPaths;
//!
//! let policy = ControlPaths::default();
//! assert!(policy.matches("sub/.git/config"));
//! assert!(policy.matches(".GIT/hooks/pre-commit"));
//! assert!(policy.matches(".claude/settings.json"));
//! assert!(!policy.matches("src/git.rs"));
//! assert!(!ControlPaths::none().matches(".git/config"));
//! assert!(ControlPaths::none().with("deploy/secrets").matches("deploy/secrets/prod.env"));
//! ```

use std::path::{Component, Path};

/// The control paths of [`ControlPaths::default`], and why each is there:
///
/// - `.git` — git's repository directory, or a worktree's or submodule's `.git` file that
///   points at one: `config` runs programs (`core.fsmonitor`, `core.pager`,
///   `core.sshCommand`, diff and filter drivers), `hooks/` are programs.
/// - `.gitmodules` — where submodules are fetched from; git treats it as special (its
///   `fsck` checks it, as it does `.git`).
/// - `.claude` — Claude Code's project settings, whose hooks and status line are shell
///   commands run on the next session, and the scripts they name.
/// - `.mcp.json` — MCP servers, started as commands by an agent opening the project.
/// - `.threadline` — reserved for threadline's own per-project configuration.
///
/// Not in the list, on purpose: `.gitattributes` (it selects drivers, but only the
/// configuration defines programs), the project's build files (`Makefile`, `build.rs`,
/// `package.json`): editing code that the user's own build runs is what a coding agent is
/// for, and is not protected.
pub const DEFAULT_CONTROL_PATHS: &[&str] =
    &[".git", ".gitmodules", ".claude", ".mcp.json", ".threadline"];

/// A workspace's control paths: the patterns of paths the file tools refuse to write or
/// edit (reading them stays allowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlPaths {
    /// Each pattern as given, and its folded components.
    patterns: Vec<(String, Vec<String>)>,
}

impl Default for ControlPaths {
    /// [`DEFAULT_CONTROL_PATHS`].
    fn default() -> Self {
        DEFAULT_CONTROL_PATHS
            .iter()
            .fold(ControlPaths::none(), |paths, pattern| paths.with(pattern))
    }
}

impl ControlPaths {
    /// No control paths at all: every path inside the workspace may be written.
    pub fn none() -> Self {
        ControlPaths {
            patterns: Vec::new(),
        }
    }

    /// These control paths and `pattern` (components separated by `/`; `.`, `..` and empty
    /// components are ignored; a pattern with no component is ignored).
    pub fn with(mut self, pattern: &str) -> Self {
        let folded: Vec<String> = pattern
            .split(['/', '\\'])
            .filter(|part| !part.is_empty() && *part != "." && *part != "..")
            .map(fold)
            .collect();
        if !folded.is_empty() && !self.patterns.iter().any(|(_, f)| *f == folded) {
            self.patterns.push((pattern.to_owned(), folded));
        }
        self
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(|(given, _)| given.as_str())
    }

    /// Whether `path` (relative to the workspace root) is, or lies under, a control path.
    pub fn matches(&self, path: impl AsRef<Path>) -> bool {
        self.matching(path.as_ref()).is_some()
    }

    /// The first pattern `path` matches.
    pub(crate) fn matching(&self, path: &Path) -> Option<&str> {
        if self.patterns.is_empty() {
            return None;
        }
        let parts: Vec<String> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(fold(&name.to_string_lossy())),
                _ => None,
            })
            .collect();
        self.patterns
            .iter()
            .find(|(_, pattern)| {
                parts
                    .windows(pattern.len())
                    .any(|window| window.iter().zip(pattern).all(|(a, b)| same(a, b)))
            })
            .map(|(given, _)| given.as_str())
    }
}

/// A component as a case-insensitive, normalizing file system sees it.
fn fold(name: &str) -> String {
    // NTFS: `name::$INDEX_ALLOCATION` (an alternate stream) names `name`.
    let name = name.split(':').next().unwrap_or_default();
    let kept: String = name.chars().filter(|&c| !hfs_ignorable(c)).collect();
    kept.to_lowercase().trim_end_matches(['.', ' ']).to_owned()
}

/// The code points HFS+ ignores in names (git's `is_hfs_dotgit` list).
fn hfs_ignorable(c: char) -> bool {
    matches!(c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// Whether folded `name` names folded `pattern`: equal, or an 8.3 short name of it
/// (`git~1` for `.git`: up to six characters of the name without its leading dots, `~`,
/// digits, and an optional extension).
fn same(name: &str, pattern: &str) -> bool {
    if name == pattern {
        return true;
    }
    let stem = name.split('.').next().unwrap_or_default();
    let Some((prefix, digits)) = stem.split_once('~') else {
        return false;
    };
    let long = pattern.trim_start_matches('.').replace('.', "");
    !prefix.is_empty()
        && prefix.chars().count() <= 6
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && long.starts_with(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_at_any_depth_and_everything_below() {
        let policy = ControlPaths::default();
        for path in [
            ".git",
            ".git/config",
            "a/b/.git/hooks/pre-commit",
            ".claude/settings.local.json",
            "pkg/.mcp.json",
            ".gitmodules",
        ] {
            assert!(policy.matches(path), "{path}");
        }
        for path in [
            "git",
            "src/.gitignore",
            ".github/workflows/ci.yml",
            "a.git",
            "x",
        ] {
            assert!(!policy.matches(path), "{path}");
        }
    }

    #[test]
    fn case_and_file_system_aliases_of_a_control_name_match() {
        let policy = ControlPaths::default();
        for path in [
            ".GIT/config",
            ".Git./config",
            ".git /config",
            ".g\u{200c}it/config",
            ".git::$INDEX_ALLOCATION/config",
            "GIT~1/config",
            "git~12/hooks",
        ] {
            assert!(policy.matches(path), "{path:?}");
        }
    }

    #[test]
    fn patterns_of_several_components_match_consecutively() {
        let policy = ControlPaths::none().with("deploy/keys/");
        assert!(policy.matches("app/deploy/keys/id"));
        assert!(!policy.matches("deploy/other/keys"));
        assert_eq!(policy.patterns().collect::<Vec<_>>(), ["deploy/keys/"]);
        assert_eq!(
            ControlPaths::none()
                .with("")
                .with("./..")
                .patterns()
                .count(),
            0
        );
    }
}
