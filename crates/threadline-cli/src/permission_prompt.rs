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
        let question = format!("threadline: {} [y/N] ", terminal_safe(prompt, false));
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

/// Whether an answer grants the permission.
fn is_yes(line: &str) -> bool {
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
}
