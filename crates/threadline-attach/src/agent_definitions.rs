//! Subagent definitions: the `.claude/agents/*.md` files Claude Code reads, read from the
//! workspace (confined: a symbolic link out of it is refused; at most
//! [`MAX_DEFINITIONS`] files of at most [`MAX_DEFINITION_BYTES`] each).
//!
//! A file is a frontmatter block between `---` lines, `key: value` per line (`name`,
//! `description`, `tools` as a comma list, `model`; other keys are ignored), then the body,
//! which is the subagent's system prompt. `tools` absent means every tool of the parent but
//! `Task`; `model` absent or `inherit` means the parent's.
//!
//! ```
//! use threadline_attach::agent_definitions::parse_definition;
//!
//! let text = "---\nname: reader\ndescription: Reads files.\ntools: Read, Grep\nmodel: inherit\n---\nYou read files.\n";
//! let definition = parse_definition(std::path::Path::new("reader.md"), text)?;
//! assert_eq!(definition.name, "reader");
//! assert_eq!(definition.tools, Some(vec!["Read".to_owned(), "Grep".to_owned()]));
//! assert_eq!(definition.model, None);
//! assert_eq!(definition.system_prompt, "You read files.");
//! # Ok::<(), threadline_attach::agent_definitions::DefinitionError>(())
//! ```

use std::path::{Path, PathBuf};

use threadline_workspace::{Limits, PathKind, Refusal, Workspace};

/// Where the definitions are, relative to the workspace root.
pub const AGENTS_DIR: &str = ".claude/agents";
/// The most definition files read.
pub const MAX_DEFINITIONS: usize = 64;
/// The largest definition file read (bytes).
pub const MAX_DEFINITION_BYTES: u64 = 64 * 1024;

/// One subagent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentDefinition {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its name (the `subagent_type` the model gives).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The tools it may use; `None`: the parent's, `Task` excepted.
    pub tools: Option<Vec<String>>,
    /// Its model; `None` (absent or `inherit`): the parent's.
    pub model: Option<String>,
    /// The body: its system prompt.
    pub system_prompt: String,
}

/// A definition could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefinitionError {
    /// The file (or the directory) could not be read from the workspace.
    #[error("{}: cannot be read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Refusal,
    },
    /// The file is larger than [`MAX_DEFINITION_BYTES`].
    #[error("{}: larger than {MAX_DEFINITION_BYTES} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// More than [`MAX_DEFINITIONS`] files.
    #[error("{}: more than {MAX_DEFINITIONS} definitions", path.display())]
    TooMany {
        /// The directory.
        path: PathBuf,
    },
    /// The file has no frontmatter, or it is not closed.
    #[error("{}: no frontmatter (a `---` line, `key: value` lines, a `---` line)", path.display())]
    NoFrontmatter {
        /// The file.
        path: PathBuf,
    },
    /// A required field is missing or empty.
    #[error("{}: the frontmatter has no `{field}`", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
        /// `name` or `description`.
        field: &'static str,
    },
    /// The name is not letters, digits, `-` and `_`, or another file has it.
    #[error("{}: the name {name:?} is {why}", path.display())]
    BadName {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
        /// Why.
        why: &'static str,
    },
}

/// Parses one definition file's text (`path` names it in errors).
pub fn parse_definition(path: &Path, text: &str) -> Result<AgentDefinition, DefinitionError> {
    let no_frontmatter = || DefinitionError::NoFrontmatter {
        path: path.to_path_buf(),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(no_frontmatter());
    }
    let (mut name, mut description, mut tools, mut model) = (None, None, None, None);
    let mut closed = false;
    let mut consumed = text.find('\n').map_or(text.len(), |n| n + 1);
    for line in lines.by_ref() {
        consumed += line.len();
        let line = line.trim_end();
        if line == "---" {
            closed = true;
            break;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "name" => name = Some(value.to_owned()),
            "description" => description = Some(value.to_owned()),
            "tools" => {
                tools = Some(
                    value
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .collect::<Vec<_>>(),
                )
            }
            "model" => model = Some(value.to_owned()),
            _ => {}
        }
    }
    if !closed {
        return Err(no_frontmatter());
    }
    let missing = |field| DefinitionError::Missing {
        path: path.to_path_buf(),
        field,
    };
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| missing("name"))?;
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or_else(|| missing("description"))?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || name.len() > 64
    {
        return Err(DefinitionError::BadName {
            path: path.to_path_buf(),
            name,
            why: "not 1 to 64 letters, digits, `-` or `_`",
        });
    }
    if name == "fork" {
        return Err(DefinitionError::BadName {
            path: path.to_path_buf(),
            name,
            why: "reserved for forked subagents",
        });
    }
    Ok(AgentDefinition {
        path: path.to_path_buf(),
        name,
        description,
        tools,
        model: model.filter(|m| !m.is_empty() && m != "inherit"),
        system_prompt: text.get(consumed..).unwrap_or_default().trim().to_owned(),
    })
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// Reads every `*.md` file of the workspace's [`AGENTS_DIR`], sorted by file name. No
/// directory is no definitions; a file that cannot be read or parsed is an error naming it.
pub fn load_definitions(workspace: &Workspace) -> Result<Vec<AgentDefinition>, DefinitionError> {
    let dir_path = workspace.root().join(AGENTS_DIR);
    let dir = match workspace.resolve(AGENTS_DIR) {
        Ok(dir) if dir.kind == PathKind::Directory => dir,
        Ok(_) | Err(Refusal::NotFound) => return Ok(Vec::new()),
        Err(source) => {
            return Err(DefinitionError::Read {
                path: dir_path,
                source,
            });
        }
    };
    let read_error = |source: std::io::Error| DefinitionError::Read {
        path: dir_path.clone(),
        source: Refusal::Unreadable(source.to_string()),
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir.canonical).map_err(read_error)? {
        let name = entry.map_err(read_error)?.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(".md") && !name.starts_with('.') {
            if names.len() == MAX_DEFINITIONS {
                return Err(DefinitionError::TooMany { path: dir_path });
            }
            names.push(name.to_owned());
        }
    }
    names.sort();
    let limits = Limits::default()
        .with_max_bytes(MAX_DEFINITION_BYTES)
        .with_max_lines(usize::MAX);
    let mut definitions: Vec<AgentDefinition> = Vec::new();
    for name in names {
        let path = dir_path.join(&name);
        let refused = |source| DefinitionError::Read {
            path: path.clone(),
            source,
        };
        let file = workspace
            .resolve(&format!("{AGENTS_DIR}/{name}"))
            .map_err(refused)?;
        if file.kind != PathKind::File {
            continue;
        }
        let read = workspace
            .read_text_blocking(&file, &limits)
            .map_err(refused)?;
        if read.truncated.is_some() {
            return Err(DefinitionError::TooLarge { path });
        }
        let definition = parse_definition(&path, &read.content)?;
        if definitions.iter().any(|d| d.name == definition.name) {
            return Err(DefinitionError::BadName {
                path,
                name: definition.name,
                why: "already defined by another file",
            });
        }
        definitions.push(definition);
    }
    Ok(definitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("test setup");
        std::fs::create_dir_all(dir.path().join(AGENTS_DIR)).expect("test setup");
        for (name, text) in files {
            std::fs::write(dir.path().join(AGENTS_DIR).join(name), text).expect("test setup");
        }
        let workspace = Workspace::new(dir.path()).expect("test setup");
        (dir, workspace)
    }

    #[test]
    fn definitions_load_sorted_with_their_fields() {
        let (_dir, workspace) = workspace_with(&[
            (
                "b.md",
                "---\nname: writer\ndescription: 'Writes.'\nmodel: claude-haiku-4-5\n---\n\nWrite.\n",
            ),
            (
                "a.md",
                "---\nname: reader\ndescription: Reads.\ntools: Read,Grep ,\n---\nRead.\n",
            ),
            ("notes.txt", "not a definition"),
        ]);
        let loaded = load_definitions(&workspace).expect("test setup");
        let summary: Vec<_> = loaded
            .iter()
            .map(|d| {
                (
                    d.name.as_str(),
                    d.description.as_str(),
                    d.tools.clone(),
                    d.model.clone(),
                    d.system_prompt.as_str(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "reader",
                    "Reads.",
                    Some(vec!["Read".into(), "Grep".into()]),
                    None,
                    "Read."
                ),
                (
                    "writer",
                    "Writes.",
                    None,
                    Some("claude-haiku-4-5".into()),
                    "Write."
                ),
            ]
        );
    }

    #[test]
    fn errors_name_the_file() {
        let (dir, workspace) = workspace_with(&[("x.md", "name: x\n")]);
        let error = load_definitions(&workspace).expect_err("an error");
        let expected = dir
            .path()
            .canonicalize()
            .expect("test setup")
            .join(AGENTS_DIR)
            .join("x.md");
        assert_eq!(
            error,
            DefinitionError::NoFrontmatter {
                path: expected.clone()
            }
        );
        assert!(
            error
                .to_string()
                .starts_with(&expected.display().to_string())
        );
        let missing =
            parse_definition(Path::new("y.md"), "---\nname: y\n---\n").expect_err("an error");
        assert_eq!(
            missing.to_string(),
            "y.md: the frontmatter has no `description`"
        );
        let fork = parse_definition(Path::new("f.md"), "---\nname: fork\ndescription: d\n---\n");
        assert!(matches!(fork, Err(DefinitionError::BadName { .. })));
    }

    #[test]
    fn a_large_file_and_a_duplicate_name_are_refused() {
        let big = format!(
            "---\nname: big\ndescription: d\n---\n{}",
            "x".repeat(70_000)
        );
        let (_dir, workspace) = workspace_with(&[("big.md", &big)]);
        assert!(matches!(
            load_definitions(&workspace),
            Err(DefinitionError::TooLarge { .. })
        ));
        let same = "---\nname: same\ndescription: d\n---\n";
        let (_dir, workspace) = workspace_with(&[("a.md", same), ("b.md", same)]);
        assert!(matches!(
            load_definitions(&workspace),
            Err(DefinitionError::BadName { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_workspace_is_refused() {
        let outside = tempfile::tempdir().expect("test setup");
        let target = outside.path().join("evil.md");
        std::fs::write(&target, "---\nname: evil\ndescription: d\n---\n").expect("test setup");
        let (dir, workspace) = workspace_with(&[]);
        std::os::unix::fs::symlink(&target, dir.path().join(AGENTS_DIR).join("evil.md"))
            .expect("test setup");
        let error = load_definitions(&workspace).expect_err("an error");
        assert!(
            matches!(
                &error,
                DefinitionError::Read {
                    source: Refusal::SymlinkEscape,
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            load_definitions(&Workspace::new(outside.path()).expect("test setup"))
                .expect("test setup")
                .is_empty()
        );
    }
}
