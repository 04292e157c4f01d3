//! Instruction files (`AGENTS.md`, `CLAUDE.md`) in the directories between the workspace root
//! and a path the user mentioned (phase 2: it reads what phase 1 found).

use std::collections::BTreeSet;

use threadline_message::Attachment;

use crate::history::attachments_since_last_compaction;
use crate::source::{Note, Phase, Source, SourceContext, SourceFuture, SourceOutput};
use threadline_workspace::{Limits, PathKind, Refusal};

/// The names of instruction files, looked for in this order in each directory.
pub const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Attaches the instruction files found in the directories below the workspace root down to
/// each file or directory phase 1 attached (the root's own files belong to the session's
/// context message, not here). A file already attached since the last compaction is not
/// attached again; a symbolic link leading out of the workspace is refused and reported.
#[derive(Debug, Clone, Default)]
pub struct NestedInstructions {
    limits: Limits,
}

impl NestedInstructions {
    /// With the default limits.
    pub fn new() -> Self {
        NestedInstructions::default()
    }

    /// With other limits.
    pub fn with_limits(limits: Limits) -> Self {
        NestedInstructions { limits }
    }
}

impl Source for NestedInstructions {
    fn name(&self) -> &str {
        "nested_instructions"
    }

    fn phase(&self) -> Phase {
        Phase::Environment
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            let mut output = SourceOutput::none();
            let Some(workspace) = cx.turn.workspace else {
                return Ok(output);
            };
            let mut seen: BTreeSet<String> = attachments_since_last_compaction(cx.turn.history)
                .filter_map(|a| match a {
                    Attachment::NestedInstructions { path, .. } => Some(path.clone()),
                    _ => None,
                })
                .collect();
            for found in cx.found {
                let (path, is_file) = match found {
                    Attachment::File { path, .. } => (path, true),
                    Attachment::Directory { path, .. } => (path, false),
                    _ => continue,
                };
                // The mentioned file itself is already in front of the model.
                seen.insert(path.clone());
                let Ok(mentioned) = workspace.resolve(path) else {
                    continue;
                };
                let mut dirs: Vec<&str> = mentioned
                    .relative
                    .split('/')
                    .filter(|c| *c != ".")
                    .collect();
                if is_file || mentioned.kind == PathKind::File {
                    dirs.pop();
                }
                for depth in 1..=dirs.len() {
                    let dir = dirs[..depth].join("/");
                    for name in INSTRUCTION_FILES {
                        let candidate = format!("{dir}/{name}");
                        if seen.contains(&candidate) {
                            continue;
                        }
                        seen.insert(candidate.clone());
                        let resolved = match workspace.resolve(&candidate) {
                            Ok(resolved) if resolved.kind == PathKind::File => resolved,
                            Ok(_) | Err(Refusal::NotFound) => continue,
                            Err(refusal) => {
                                output.notes.push(Note::Refused {
                                    subject: candidate,
                                    refusal,
                                });
                                continue;
                            }
                        };
                        match workspace.read_text(&resolved, &self.limits).await {
                            Ok(read) => {
                                if let Some(truncation) = read.truncated {
                                    output.notes.push(Note::Truncated {
                                        subject: candidate.clone(),
                                        truncation,
                                    });
                                }
                                output.attachments.push(Attachment::NestedInstructions {
                                    path: candidate,
                                    content: read.content,
                                });
                            }
                            Err(refusal) => output.notes.push(Note::Refused {
                                subject: candidate,
                                refusal,
                            }),
                        }
                    }
                }
            }
            Ok(output)
        })
    }
}
