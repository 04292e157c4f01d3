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
//! Git directories outside `.git` are control paths too ([`GIT_DIRECTORY_MARKER`]): git takes
//! any directory holding a `HEAD` file (with `objects/` and `refs/`) for a repository — a
//! bare one, found by discovery from inside it, whose `config` can name `core.fsmonitor` —
//! so a file named `HEAD` is never written (its name folded as above), and
//! [`Workspace::resolve_for_write`](crate::Workspace::resolve_for_write) refuses anything
//! inside a directory that already holds one. A file tool cannot make a directory a
//! repository without writing its `HEAD` (it makes no symbolic links), and cannot change one
//! that is. [`ControlPaths::with_git_directories`] turns this rule off.
//!
//! ```
//! use threadline_workspace::ControlPaths;
//!
//! let policy = ControlPaths::default();
//! assert!(policy.matches("sub/.git/config"));
//! assert!(policy.matches(".GIT/hooks/pre-commit"));
//! assert!(policy.matches(".claude/settings.json"));
//! assert!(!policy.matches("src/git.rs"));
//! assert!(policy.matches("vendor/x/HEAD"));
//! assert!(!policy.matches("vendor/HEAD/notes.txt"));
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

/// The file that makes a directory a git directory: git accepts a directory as a repository
/// only when it holds a `HEAD` (a file or a symbolic link; `objects/` and `refs/` are easy to
/// make, `HEAD` is the one thing git cannot do without). With the git-directory rule on
/// ([`ControlPaths::default`]), a path whose last component is `HEAD` is a control path, and
/// nothing is written inside a directory that holds one.
pub const GIT_DIRECTORY_MARKER: &str = "HEAD";

/// A workspace's control paths: the patterns of paths the file tools refuse to write or
/// edit (reading them stays allowed), and whether git directories outside `.git` are
/// protected ([`GIT_DIRECTORY_MARKER`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlPaths {
    /// Each pattern as given, and its folded components.
    patterns: Vec<(String, Vec<String>)>,
    /// Whether a file named [`GIT_DIRECTORY_MARKER`], and what lies beside or below one, is
    /// protected.
    git_directories: bool,
}

impl Default for ControlPaths {
    /// [`DEFAULT_CONTROL_PATHS`], and git directories protected.
    fn default() -> Self {
        DEFAULT_CONTROL_PATHS
            .iter()
            .fold(ControlPaths::none(), |paths, pattern| paths.with(pattern))
            .with_git_directories(true)
    }
}

impl ControlPaths {
    /// No control paths at all: every path inside the workspace may be written (git
    /// directories included).
    pub fn none() -> Self {
        ControlPaths {
            patterns: Vec::new(),
            git_directories: false,
        }
    }

    /// These control paths with the git-directory rule on or off: a file named `HEAD` (folded
    /// as the patterns are) is a control path, and
    /// [`Workspace::resolve_for_write`](crate::Workspace::resolve_for_write) refuses a path
    /// inside a directory that holds one ([`GIT_DIRECTORY_MARKER`]).
    pub fn with_git_directories(mut self, protected: bool) -> Self {
        self.git_directories = protected;
        self
    }

    /// Whether git directories outside `.git` are protected (see
    /// [`ControlPaths::with_git_directories`]).
    pub fn protects_git_directories(&self) -> bool {
        self.git_directories
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

    /// Whether `path` (relative to the workspace root) is, or lies under, a control path, or
    /// (the git-directory rule on) names a file `HEAD`. Lexical: what lies on disk beside
    /// the path is [`Workspace::resolve_for_write`](crate::Workspace::resolve_for_write)'s
    /// to check.
    pub fn matches(&self, path: impl AsRef<Path>) -> bool {
        self.matching(path.as_ref()).is_some()
    }

    /// The first pattern `path` matches ([`GIT_DIRECTORY_MARKER`] for a `HEAD`).
    pub(crate) fn matching(&self, path: &Path) -> Option<&str> {
        if self.patterns.is_empty() && !self.git_directories {
            return None;
        }
        let parts: Vec<String> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(fold(&name.to_string_lossy())),
                _ => None,
            })
            .collect();
        let pattern = self
            .patterns
            .iter()
            .find(|(_, pattern)| {
                parts
                    .windows(pattern.len())
                    .any(|window| window.iter().zip(pattern).all(|(a, b)| same(a, b)))
            })
            .map(|(given, _)| given.as_str());
        pattern.or_else(|| {
            (self.git_directories
                && parts
                    .last()
                    .is_some_and(|last| *last == fold(GIT_DIRECTORY_MARKER)))
            .then_some(GIT_DIRECTORY_MARKER)
        })
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
    fn a_file_named_head_is_a_control_path_unless_git_directories_are_off() {
        let policy = ControlPaths::default();
        for path in [
            "vendor/x/HEAD",
            "HEAD",
            "a/head",
            "a/Head.",
            "a/HEAD::$DATA",
            "a/HE\u{200c}AD",
        ] {
            assert_eq!(
                policy.matching(Path::new(path)),
                Some(GIT_DIRECTORY_MARKER),
                "{path:?}"
            );
        }
        // Only the last component: a directory named HEAD holds no git directory's HEAD.
        for path in ["HEAD/notes.txt", "a/HEADS", "a/ORIG_HEAD", "a/HEAD.txt"] {
            assert!(!policy.matches(path), "{path:?}");
        }
        assert!(policy.protects_git_directories());
        assert!(!policy.clone().with_git_directories(false).matches("x/HEAD"));
        assert!(!ControlPaths::none().matches("x/HEAD"));
        assert!(!ControlPaths::none().protects_git_directories());
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
