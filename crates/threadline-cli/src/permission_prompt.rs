//! Asking the user before a tool runs, in `threadline run`: the question on stderr, the
//! answer the next line of stdin (`y` or `yes` allows; anything else, or end of input,
//! denies). Only when stdin and stderr are a terminal: a piped script's lines are requests,
//! never answers, and its shell calls are refused as before.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;

use futures::future::BoxFuture;
use threadline::query::{Permission, PermissionCallback, PermissionRequest};

use crate::stdin_lines::StdinLines;
use crate::terminal_text::terminal_safe;

/// Set to `1` to ask even when stdin is not a terminal (the tests pipe their answers).
pub(crate) const ASK_ON_PIPE_VARIABLE: &str = "THREADLINE_ASK_ON_PIPE";

/// Whether this process can ask: stdin and stderr are a terminal (or the tests say so).
pub(crate) fn can_ask() -> bool {
    let forced = std::env::var(ASK_ON_PIPE_VARIABLE).is_ok_and(|v| v == "1");
    forced || (std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
}

/// Asks whenever a tool's verdict is [`Permission::Ask`]; other verdicts stand.
#[derive(Debug, Clone)]
pub(crate) struct AskOnStdin {
    lines: Arc<StdinLines>,
}

impl AskOnStdin {
    /// Asking through `lines`, the reader the prompt loop shares.
    pub(crate) fn new(lines: Arc<StdinLines>) -> AskOnStdin {
        AskOnStdin { lines }
    }
}

impl PermissionCallback for AskOnStdin {
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        let Permission::Ask { prompt } = request.verdict else {
            let verdict = request.verdict.clone();
            return Box::pin(std::future::ready(verdict));
        };
        let question = question(prompt);
        Box::pin(async move {
            let mut stderr = std::io::stderr();
            let _ = write!(stderr, "{question}");
            let _ = stderr.flush();
            match self.lines.next().await {
                Some(Ok(line)) if is_yes(&line) => Permission::Allow,
                _ => Permission::Deny {
                    message: Permission::NOT_GRANTED.to_owned(),
                },
            }
        })
    }
}

/// The question asked on stderr before a tool runs, `threadline: PROMPT [y/N] `: the prompt
/// quotes the model (a shell command), so it is escaped as one line — what the user reads is
/// what would run. The embedded `run` and the durable one (`run --restate`) ask with it.
pub(crate) fn question(prompt: &str) -> String {
    format!("threadline: {} [y/N] ", terminal_safe(prompt, false))
}

/// Whether an answer grants the permission.
pub(crate) fn is_yes(line: &str) -> bool {
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_yes_allows() {
        assert!(is_yes("y\n"));
        assert!(is_yes(" YES \r\n"));
        assert!(!is_yes(""));
        assert!(!is_yes("n\n"));
        assert!(!is_yes("yes please\n"));
    }

    #[test]
    fn the_question_shows_escape_sequences_escaped() {
        // What a terminal would show as ``Run `ls`? [y/N]`` for a command that touches a file.
        let hostile = "touch pwned\u{1b}[2K\r\u{1b}]0;PWNED\u{7}Run `ls`\u{1b}[1A\u{202e}?\nnext";
        let asked = question(hostile);
        assert_eq!(
            asked,
            "threadline: touch pwned\\u{1b}[2K\\u{d}\\u{1b}]0;PWNED\\u{7}Run `ls`\\u{1b}[1A\\u{202e}?\\u{a}next [y/N] "
        );
    }
}
