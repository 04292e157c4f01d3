//! `@` mentions in the user's input: files, directories and agents (phase 1).

use std::collections::BTreeSet;

use threadline_message::Attachment;

use crate::source::{Note, Phase, Source, SourceContext, SourceError, SourceFuture, SourceOutput};
use threadline_workspace::{Limits, PathKind, Refusal};

/// The prefix of an agent mention: `@agent-reviewer`.
pub const AGENT_PREFIX: &str = "agent-";

/// The `@` mentions in `input`, in order, each once: `@path` (up to the next whitespace) or
/// `@"a path with spaces"`, where the `@` starts the input or follows whitespace (so an
/// e-mail address is not a mention).
///
/// ```
/// use threadline_attach::mentions;
///
/// assert_eq!(
///     mentions(r#"compare @src/a.rs with @"my notes.md", mail me@example.com, @src/a.rs"#),
///     ["src/a.rs", "my notes.md"],
/// );
/// ```
pub fn mentions(input: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut previous_is_space = true;
    let mut rest = input;
    while let Some(c) = rest.chars().next() {
        if c == '@' && previous_is_space {
            let after = &rest[1..];
            let (mention, consumed) = match after.strip_prefix('"') {
                Some(quoted) => match quoted.find('"') {
                    Some(end) => (&quoted[..end], end + 2),
                    None => unquoted(after),
                },
                None => unquoted(after),
            };
            if !mention.is_empty() && !found.iter().any(|f| f == mention) {
                found.push(mention.to_owned());
            }
            rest = &after[consumed..];
            previous_is_space = false;
            continue;
        }
        previous_is_space = c.is_whitespace();
        rest = &rest[c.len_utf8()..];
    }
    found
}

/// `mention` without the punctuation that ends a sentence or a parenthesis.
fn trim_sentence_end(mention: &str) -> &str {
    mention.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"'])
}

fn unquoted(after: &str) -> (&str, usize) {
    let end = after.find(char::is_whitespace).unwrap_or(after.len());
    (&after[..end], end)
}

/// Attaches the files and directories `@`-mentioned in the user's input, read inside the
/// workspace within its [`Limits`]. A mention that would leave the workspace (`..`, an
/// absolute path outside it, a symbolic link leading out — refused alike whether its target
/// exists or not), a binary file, a device or a missing path is refused and reported; a file or listing past a limit is cut, marked
/// `truncated` and reported.
#[derive(Debug, Clone, Default)]
pub struct FileMentions {
    limits: Limits,
}

impl FileMentions {
    /// With the default limits (2,000 lines, 256 KiB, 1,000 entries).
    pub fn new() -> Self {
        FileMentions::default()
    }

    /// With other limits.
    pub fn with_limits(limits: Limits) -> Self {
        FileMentions { limits }
    }
}

impl Source for FileMentions {
    fn name(&self) -> &str {
        "file_mentions"
    }

    fn phase(&self) -> Phase {
        Phase::UserInput
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            let mut output = SourceOutput::none();
            let Some(input) = cx.turn.input else {
                return Ok(output);
            };
            let paths: Vec<String> = mentions(input)
                .into_iter()
                .filter(|m| !m.starts_with(AGENT_PREFIX))
                .collect();
            if paths.is_empty() {
                return Ok(output);
            }
            let Some(workspace) = cx.turn.workspace else {
                return Err(SourceError::failed(
                    "files were mentioned but the turn has no workspace",
                ));
            };
            for path in paths {
                let subject = format!("@{path}");
                // "see @src/lib.rs." means `src/lib.rs` unless a file really ends in ".".
                let trimmed = trim_sentence_end(&path);
                let resolved = match workspace.resolve(&path) {
                    Err(Refusal::NotFound) if !trimmed.is_empty() && trimmed != path => {
                        workspace.resolve(trimmed)
                    }
                    other => other,
                };
                let resolved = match resolved {
                    Ok(resolved) => resolved,
                    Err(refusal) => {
                        output.notes.push(Note::Refused { subject, refusal });
                        continue;
                    }
                };
                let (attachment, truncation) = match resolved.kind {
                    PathKind::File => match workspace.read_text(&resolved, &self.limits).await {
                        Ok(read) => (
                            Attachment::File {
                                path: resolved.relative,
                                content: read.content,
                                truncated: read.truncated.is_some(),
                            },
                            read.truncated,
                        ),
                        Err(refusal) => {
                            output.notes.push(Note::Refused { subject, refusal });
                            continue;
                        }
                    },
                    PathKind::Directory => {
                        match workspace.list_dir(&resolved, &self.limits).await {
                            Ok(listing) => (
                                Attachment::Directory {
                                    path: resolved.relative,
                                    entries: listing.entries,
                                    truncated: listing.truncated.is_some(),
                                },
                                listing.truncated,
                            ),
                            Err(refusal) => {
                                output.notes.push(Note::Refused { subject, refusal });
                                continue;
                            }
                        }
                    }
                };
                if let Some(truncation) = truncation {
                    output.notes.push(Note::Truncated {
                        subject,
                        truncation,
                    });
                }
                output.attachments.push(attachment);
            }
            Ok(output)
        })
    }
}

/// Attaches the agents `@agent-NAME`-mentioned in the user's input. When built with the
/// agents that exist, a mention of any other is left out and reported.
#[derive(Debug, Clone, Default)]
pub struct AgentMentions {
    known: Option<BTreeSet<String>>,
}

impl AgentMentions {
    /// Accepts any agent name.
    pub fn new() -> Self {
        AgentMentions::default()
    }

    /// Accepts only these agents.
    pub fn known(agents: impl IntoIterator<Item = impl Into<String>>) -> Self {
        AgentMentions {
            known: Some(agents.into_iter().map(Into::into).collect()),
        }
    }
}

impl Source for AgentMentions {
    fn name(&self) -> &str {
        "agent_mentions"
    }

    fn phase(&self) -> Phase {
        Phase::UserInput
    }

    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            let mut output = SourceOutput::none();
            for mention in mentions(cx.turn.input.unwrap_or_default()) {
                let Some(agent) = mention.strip_prefix(AGENT_PREFIX) else {
                    continue;
                };
                // Agent names are identifiers: "ask @agent-reviewer." names `reviewer`.
                let end = agent
                    .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
                    .unwrap_or(agent.len());
                let agent = agent[..end].trim_end_matches('-');
                if agent.is_empty() {
                    continue;
                }
                if self.known.as_ref().is_some_and(|k| !k.contains(agent)) {
                    output.notes.push(Note::Ignored {
                        subject: format!("@{mention}"),
                        reason: "no such agent".to_owned(),
                    });
                    continue;
                }
                output.attachments.push(Attachment::AgentMention {
                    agent: agent.to_owned(),
                });
            }
            Ok(output)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_start_at_the_beginning_or_after_whitespace() {
        assert_eq!(mentions("@a b@c\t@d\n@e"), ["a", "d", "e"]);
    }

    #[test]
    fn quoted_mentions_may_hold_spaces_and_unclosed_quotes_end_at_whitespace() {
        assert_eq!(mentions(r#"@"a b" @"c d"#), ["a b", "\"c"]);
    }

    #[test]
    fn sentence_punctuation_is_trimmed() {
        assert_eq!(trim_sentence_end("src/lib.rs.)"), "src/lib.rs");
        assert_eq!(trim_sentence_end("a.rs"), "a.rs");
        assert_eq!(trim_sentence_end("..."), "");
    }

    #[test]
    fn a_lone_at_sign_and_unicode_are_handled() {
        assert_eq!(mentions("@ @ é@x @日本/語.md"), ["日本/語.md"]);
        assert!(mentions("").is_empty());
    }
}
