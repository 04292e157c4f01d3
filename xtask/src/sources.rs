//! Parsing of `fixtures/recorded/SOURCES.md`, the attribution record of every raw file.
//!
//! The parts used here:
//!
//! ```text
//! ### owner/repo  →  `dir/`
//! - Licence: MIT (LICENSE: "...")
//! - Snapshot HEAD: `0123abcd...`
//! - Format: ...            (or "- What: ...")
//!
//! | File | Source path | ... | What it is |
//! |---|---|---|
//! | `file.yaml` | `tests/.../file.yaml` | ... | description |
//! ```

use std::collections::BTreeMap;

use crate::util::{Failure, XResult};

/// Attribution of one source repository (one `### owner/repo → dir/` section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceRepo {
    /// `owner/repo`.
    pub(crate) repo: String,
    /// Folder under `fixtures/recorded/`, without trailing slash.
    pub(crate) dir: String,
    /// SPDX-like licence expression (the text before any parenthesis).
    pub(crate) licence: String,
    /// Snapshot commit the bytes were taken from.
    pub(crate) commit: String,
    /// The section's `- Format:` or `- What:` line, if any.
    pub(crate) format_note: Option<String>,
}

/// Attribution of one raw file (one table row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceFile {
    /// The repository section the row belongs to.
    pub(crate) repo: SourceRepo,
    /// File name under `fixtures/recorded/<dir>/`.
    pub(crate) file: String,
    /// Path of the file in the source repository.
    pub(crate) source_path: String,
    /// The row's last column ("What it is" / notes).
    pub(crate) description: String,
}

/// Every attributed file, keyed by `(dir, file name)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources {
    pub(crate) files: BTreeMap<(String, String), SourceFile>,
    pub(crate) repos: Vec<SourceRepo>,
}

impl Sources {
    /// Looks up the attribution of `fixtures/recorded/<dir>/<file>`.
    pub(crate) fn get(&self, dir: &str, file: &str) -> Option<&SourceFile> {
        self.files.get(&(dir.to_owned(), file.to_owned()))
    }
}

#[derive(Debug, Default)]
struct PartialRepo {
    repo: String,
    dir: String,
    licence: Option<String>,
    commit: Option<String>,
    format_note: Option<String>,
    line: usize,
}

impl PartialRepo {
    fn finish(&self) -> XResult<SourceRepo> {
        let missing = |what: &str| {
            Failure::new(format!(
                "SOURCES.md line {}: section `{}` has no `- {what}:` line",
                self.line, self.repo
            ))
        };
        Ok(SourceRepo {
            repo: self.repo.clone(),
            dir: self.dir.clone(),
            licence: self.licence.clone().ok_or_else(|| missing("Licence"))?,
            commit: self
                .commit
                .clone()
                .ok_or_else(|| missing("Snapshot HEAD"))?,
            format_note: self.format_note.clone(),
        })
    }
}

/// Text between the first pair of backticks.
fn backticked(s: &str) -> Option<&str> {
    let start = s.find('`')? + 1;
    let len = s[start..].find('`')?;
    Some(&s[start..start + len])
}

type Row = (usize, String, String, String);

/// Moves the finished section and its rows into `sources`.
fn flush(
    current: &mut Option<PartialRepo>,
    rows: &mut Vec<Row>,
    sources: &mut Sources,
) -> XResult<()> {
    if let Some(partial) = current.take() {
        let repo = partial.finish()?;
        for (line, file, source_path, description) in rows.drain(..) {
            let key = (repo.dir.clone(), file.clone());
            if sources.files.contains_key(&key) {
                return Err(Failure::new(format!(
                    "SOURCES.md line {line}: `{}/{file}` is listed twice",
                    repo.dir
                )));
            }
            sources.files.insert(
                key,
                SourceFile {
                    repo: repo.clone(),
                    file,
                    source_path,
                    description,
                },
            );
        }
        sources.repos.push(repo);
    }
    rows.clear();
    Ok(())
}

/// Parses SOURCES.md.
pub(crate) fn parse(text: &str) -> XResult<Sources> {
    let mut sources = Sources::default();
    let mut current: Option<PartialRepo> = None;
    let mut rows: Vec<Row> = Vec::new();
    for (idx, raw_line) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw_line.trim_end();
        if let Some(heading) = line.strip_prefix("### ") {
            flush(&mut current, &mut rows, &mut sources)?;
            let (repo, rest) = heading.split_once('→').ok_or_else(|| {
                Failure::new(format!(
                    "SOURCES.md line {line_no}: expected `### owner/repo → `dir/``, got `{line}`"
                ))
            })?;
            let dir = backticked(rest).ok_or_else(|| {
                Failure::new(format!(
                    "SOURCES.md line {line_no}: no backticked folder in `{line}`"
                ))
            })?;
            current = Some(PartialRepo {
                repo: repo.trim().to_owned(),
                dir: dir.trim_end_matches('/').to_owned(),
                line: line_no,
                ..PartialRepo::default()
            });
            continue;
        }
        if line.starts_with("## ") {
            flush(&mut current, &mut rows, &mut sources)?;
            continue;
        }
        let Some(partial) = current.as_mut() else {
            continue;
        };
        if let Some(value) = line.strip_prefix("- Licence:") {
            let value = value.trim();
            let licence = value.split_once(" (").map_or(value, |(l, _)| l).trim();
            partial.licence = Some(licence.to_owned());
        } else if let Some(value) = line.strip_prefix("- Snapshot HEAD:") {
            let commit = backticked(value).unwrap_or(value).trim();
            partial.commit = Some(commit.to_owned());
        } else if let Some(value) = line
            .strip_prefix("- Format:")
            .or_else(|| line.strip_prefix("- What:"))
        {
            partial.format_note = Some(value.trim().to_owned());
        } else if line.starts_with("| `") {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let file = cells.first().and_then(|c| backticked(c));
            let source_path = cells.get(1).and_then(|c| backticked(c));
            let description = cells.last().filter(|c| !c.is_empty());
            match (file, source_path, description) {
                (Some(file), Some(source_path), Some(description)) if cells.len() >= 3 => {
                    rows.push((
                        line_no,
                        file.to_owned(),
                        source_path.to_owned(),
                        (*description).to_owned(),
                    ));
                }
                _ => {
                    return Err(Failure::new(format!(
                        "SOURCES.md line {line_no}: table row needs `file` | `source path` | ... | description, got `{line}`"
                    )));
                }
            }
        }
    }
    flush(&mut current, &mut rows, &mut sources)?;
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# SOURCES\n\nintro\n\n## Part 1\n\n### pydantic/pydantic-ai  →  `pydantic__pydantic-ai/`\n- Licence: MIT (LICENSE: \"x\")\n- Snapshot HEAD: `4fda38988f2939fa6ea9cdefcf120693e10ef491`\n- Format: VCR cassettes.\n\n| File | Source path | Size | What it is |\n|---|---|---|---|\n| `a.yaml` | `tests/a.yaml` | 1,491 | Simplest reply. |\n| `b[x].yaml` | `tests/b[x].yaml` | 2 | Second. |\n\n### lanegrid/agtrace  →  `lanegrid__agtrace/`\n- Licence: MIT OR Apache-2.0 (repo ships two)\n- Snapshot HEAD: `b1ab`\n- What: transcripts.\n\n| File | Source path | Genuine? / notes |\n|---|---|---|\n| `s.jsonl` | `crates/s.jsonl` | Main session |\n\n## Coverage\n\n- Plain: `x`\n";

    #[test]
    fn parses_sections_and_rows() {
        let sources = parse(SAMPLE).expect("sample parses");
        assert_eq!(sources.repos.len(), 2);
        let a = sources
            .get("pydantic__pydantic-ai", "a.yaml")
            .expect("a.yaml is listed");
        assert_eq!(a.repo.repo, "pydantic/pydantic-ai");
        assert_eq!(a.repo.licence, "MIT");
        assert_eq!(a.repo.commit, "4fda38988f2939fa6ea9cdefcf120693e10ef491");
        assert_eq!(a.source_path, "tests/a.yaml");
        assert_eq!(a.description, "Simplest reply.");
        assert!(sources.get("pydantic__pydantic-ai", "b[x].yaml").is_some());
        let s = sources
            .get("lanegrid__agtrace", "s.jsonl")
            .expect("s.jsonl is listed");
        assert_eq!(s.repo.licence, "MIT OR Apache-2.0");
        assert_eq!(s.repo.format_note.as_deref(), Some("transcripts."));
        assert!(sources.get("lanegrid__agtrace", "a.yaml").is_none());
    }

    #[test]
    fn missing_licence_is_an_error() {
        let text = "### a/b → `a__b/`\n- Snapshot HEAD: `1`\n";
        let err = parse(text).expect_err("no licence line");
        assert!(err.message.contains("Licence"), "{}", err.message);
    }

    #[test]
    fn duplicate_rows_are_an_error() {
        let text = "### a/b → `a__b/`\n- Licence: MIT\n- Snapshot HEAD: `1`\n| `x` | `y` | d |\n| `x` | `y` | d |\n";
        let err = parse(text).expect_err("duplicate row");
        assert!(err.message.contains("twice"), "{}", err.message);
    }

    #[test]
    fn real_sources_md_parses() {
        let root = crate::util::repo_root();
        let text = crate::util::read_text(&root.join("fixtures/recorded/SOURCES.md"))
            .expect("SOURCES.md is readable");
        let sources = parse(&text).expect("SOURCES.md parses");
        assert!(sources.files.len() >= 44, "{}", sources.files.len());
        assert!(sources.repos.iter().all(|r| !r.commit.is_empty()));
    }
}
