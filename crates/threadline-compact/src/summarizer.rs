//! The summarizer contract, the summary prompt, and two summarizers that need no model.
//!
//! The trait returns a boxed `Send` future: the real summarizer is a model call made by the
//! query loop (which owns the HTTP client), and a synchronous trait would make it block a
//! runtime thread. Summarizers are `Send + Sync`, so the autocompact driver's future (which
//! holds `&dyn Summarizer` across the call) is `Send` and can be awaited inside the loop's
//! `Send` hooks. Everything else in this crate is synchronous; only the autocompact driver
//! awaits.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use threadline_wire::service::ServiceError;
use threadline_wire::{Content, ContentBlock, MessagesRequest, Role};

/// The instruction appended to the summary request.
pub const SUMMARY_PROMPT: &str = "Your task is to write a detailed summary of the conversation so far, so that the work can continue without it. The most recent messages will be kept verbatim after your summary; concentrate on everything before them.

Do not call any tool. First think inside <analysis> tags, then write the summary inside <summary> tags with these sections:
1. Primary request and intent: every request the user made, in their words where it matters.
2. Key technical concepts.
3. Files and code: each file read, changed or created, why it matters, and the important snippets.
4. Errors and fixes: what went wrong and how it was resolved, with any feedback the user gave.
5. All user messages that are not tool results, in order.
6. Pending tasks.
7. Current work: precisely what was being done just before this summary.
8. Next step: the step that directly continues the current work, quoting the latest request.";

/// The text the summary message starts with.
pub const SUMMARY_PREAMBLE: &str = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.";

/// The text the summary message ends with.
pub const SUMMARY_CONTINUATION: &str = "Continue with the last task you were asked to work on without asking the user any further questions.";

/// Why a summary could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// The summary request itself was too long (token counts when the API gave them).
    #[error("the summary request is too long ({actual:?} tokens > {limit:?})")]
    PromptTooLong {
        /// The request's tokens.
        actual: Option<u64>,
        /// The model's limit.
        limit: Option<u64>,
    },
    /// Any other failure.
    #[error("summarization failed: {message}")]
    Failed {
        /// What went wrong.
        message: String,
    },
}

impl SummarizeError {
    /// The error for a failed model call: prompt-too-long errors keep their token counts; a
    /// body over the API's size limit is too long too (without counts).
    pub fn from_service(error: &ServiceError) -> Self {
        if !error.is_too_large() {
            return SummarizeError::Failed {
                message: error.to_string(),
            };
        }
        let counts = error.prompt_too_long();
        SummarizeError::PromptTooLong {
            actual: counts.map(|(actual, _)| actual),
            limit: counts.map(|(_, limit)| limit),
        }
    }

    /// Whether the summary request was too long (dropping older rounds may help).
    pub fn is_prompt_too_long(&self) -> bool {
        matches!(self, SummarizeError::PromptTooLong { .. })
    }
}

/// The future a [`Summarizer`] returns: the model's whole answer text.
pub type SummaryFuture<'a> =
    Pin<Box<dyn Future<Output = Result<String, SummarizeError>> + Send + 'a>>;

/// Writes a summary for a summary request (built by the autocompact driver: the main
/// request's prefix, then [`SUMMARY_PROMPT`], with tools forbidden).
///
/// `Send + Sync` so that the driver's futures are `Send`.
pub trait Summarizer: Send + Sync {
    /// Answers `request`; the text may hold `<analysis>` and `<summary>` sections.
    fn summarize<'a>(&'a self, request: &'a MessagesRequest) -> SummaryFuture<'a>;
}

/// A summarizer that answers from a script, one answer per call, and records the requests
/// (tests of the query loop and of compaction).
#[derive(Debug, Default)]
pub struct ScriptedSummarizer {
    answers: Mutex<VecDeque<Result<String, SummarizeError>>>,
    requests: Mutex<Vec<MessagesRequest>>,
}

impl ScriptedSummarizer {
    /// A summarizer giving `answers` in order; once they run out every call fails.
    pub fn new(answers: impl IntoIterator<Item = Result<String, SummarizeError>>) -> Self {
        ScriptedSummarizer {
            answers: Mutex::new(answers.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<MessagesRequest> {
        self.requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }
}

impl Summarizer for ScriptedSummarizer {
    fn summarize<'a>(&'a self, request: &'a MessagesRequest) -> SummaryFuture<'a> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.clone());
        }
        let answer = self
            .answers
            .lock()
            .ok()
            .and_then(|mut a| a.pop_front())
            .unwrap_or_else(|| {
                Err(SummarizeError::Failed {
                    message: "the script has no more answers".to_owned(),
                })
            });
        Box::pin(std::future::ready(answer))
    }
}

/// A summarizer that calls no model: it lists the user's requests, the files the tools
/// touched and the last thing the assistant said, from the request itself. Deterministic;
/// used by `threadline compact` without a model and as a floor for what a summary must keep.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveSummarizer;

/// The most characters kept of one user request in an extractive summary.
const EXTRACT_CHARS: usize = 500;

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

impl ExtractiveSummarizer {
    /// The summary of `request`'s messages (the final summary instruction left out).
    pub fn summary_of(request: &MessagesRequest) -> String {
        let mut requests = Vec::new();
        let mut files = std::collections::BTreeSet::new();
        let mut last_assistant = None;
        for message in &request.messages {
            let blocks = match &message.content {
                Content::Text(t) => vec![ContentBlock::text(t.clone())],
                Content::Blocks(b) => b.clone(),
            };
            for block in &blocks {
                match (message.role.clone(), block) {
                    (Role::User, ContentBlock::Text(t))
                        if t.text != SUMMARY_PROMPT
                            && !t.text.trim_start().starts_with("<system-reminder>")
                            && !t.text.trim().is_empty() =>
                    {
                        requests.push(clip(t.text.trim(), EXTRACT_CHARS));
                    }
                    (Role::Assistant, ContentBlock::Text(t)) if !t.text.trim().is_empty() => {
                        last_assistant = Some(clip(t.text.trim(), EXTRACT_CHARS));
                    }
                    (Role::Assistant, ContentBlock::ToolUse(u)) => {
                        for key in ["file_path", "path", "notebook_path"] {
                            if let Some(path) = u.input.get(key).and_then(|v| v.as_str()) {
                                files.insert(format!("{path} ({})", u.name));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut out = String::from("1. Primary request and intent:\n");
        for (i, r) in requests.iter().enumerate() {
            out.push_str(&format!("   - request {}: {r}\n", i + 1));
        }
        out.push_str("3. Files and code:\n");
        for f in &files {
            out.push_str(&format!("   - {f}\n"));
        }
        if let Some(last) = last_assistant {
            out.push_str(&format!(
                "7. Current work: the assistant last said: {last}\n"
            ));
        }
        out
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn summarize<'a>(&'a self, request: &'a MessagesRequest) -> SummaryFuture<'a> {
        let summary = format!("<summary>\n{}</summary>", Self::summary_of(request));
        Box::pin(std::future::ready(Ok(summary)))
    }
}

/// The summary proper from a model's answer: the `<summary>` section when there is one
/// (the `<analysis>` scratchpad is dropped), else the whole answer; trimmed.
pub fn extract_summary(answer: &str) -> String {
    let without_analysis = match (answer.find("<analysis>"), answer.find("</analysis>")) {
        (Some(start), Some(end)) if start < end => {
            format!(
                "{}{}",
                &answer[..start],
                &answer[end + "</analysis>".len()..]
            )
        }
        _ => answer.to_owned(),
    };
    match (
        without_analysis.find("<summary>"),
        without_analysis.rfind("</summary>"),
    ) {
        (Some(start), Some(end)) if start + "<summary>".len() <= end => without_analysis
            [start + "<summary>".len()..end]
            .trim()
            .to_owned(),
        _ => without_analysis.trim().to_owned(),
    }
}

/// The text of the summary message for `summary`.
pub fn summary_message_text(summary: &str) -> String {
    format!("{SUMMARY_PREAMBLE}\n\n{summary}\n\n{SUMMARY_CONTINUATION}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::ApiErrorResponse;
    use threadline_wire::api_error::ApiErrorType;

    #[test]
    fn the_summary_section_is_extracted() {
        assert_eq!(
            extract_summary("<analysis>thinking</analysis>\n<summary>\nThe gist.\n</summary>"),
            "The gist."
        );
        assert_eq!(extract_summary("  plain  "), "plain");
        assert_eq!(
            extract_summary("</summary><summary>"),
            "</summary><summary>"
        );
    }

    #[test]
    fn prompt_too_long_keeps_its_counts() {
        let error = ServiceError::from_api_response(
            400,
            ApiErrorResponse::new(
                ApiErrorType::InvalidRequest,
                "prompt is too long: 213462 tokens > 200000 maximum",
            ),
            None,
        );
        assert_eq!(
            SummarizeError::from_service(&error),
            SummarizeError::PromptTooLong {
                actual: Some(213_462),
                limit: Some(200_000)
            }
        );
    }
}
