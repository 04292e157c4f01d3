//! Asking the user before a tool runs, in `threadline run`: the question on stderr, the
//! answer a line of stdin (`y` or `yes` allows; anything else, or end of input, denies).

use std::io::{BufRead as _, Write as _};

use futures::future::BoxFuture;
use threadline::query::permission::NOT_GRANTED;
use threadline::query::{Permission, PermissionCallback, PermissionRequest};

/// Asks on the terminal whenever a tool's verdict is [`Permission::Ask`]; other verdicts
/// stand. Reading stdin blocks, so it runs on tokio's blocking pool.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AskOnStdin;

impl PermissionCallback for AskOnStdin {
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        let Permission::Ask { prompt } = request.verdict else {
            let verdict = request.verdict.clone();
            return Box::pin(std::future::ready(verdict));
        };
        let question = format!("threadline: {} [y/N] ", printable(prompt));
        Box::pin(async move {
            let answer = tokio::task::spawn_blocking(move || {
                let mut stderr = std::io::stderr();
                let _ = write!(stderr, "{question}");
                let _ = stderr.flush();
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line).map(|_| line)
            })
            .await;
            match answer {
                Ok(Ok(line)) if is_yes(&line) => Permission::Allow,
                _ => Permission::Deny {
                    message: NOT_GRANTED.to_owned(),
                },
            }
        })
    }
}

/// Whether an answer grants the permission.
fn is_yes(line: &str) -> bool {
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// `text` with its control characters escaped: the question quotes what the model wrote,
/// which must not move the cursor or recolour the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
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
    fn control_characters_are_escaped() {
        assert_eq!(
            printable("Run `rm \u{1b}[2J -rf`?\n"),
            "Run `rm \\u{1b}[2J -rf`?\\n"
        );
        assert_eq!(printable("plain ✓"), "plain ✓");
    }
}
