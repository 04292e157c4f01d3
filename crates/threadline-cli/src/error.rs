//! The one error type of the command line: every command returns `Result<(), CliError>`, and
//! `main` prints the error once (one line on stderr, or none when the command already
//! reported what it found) and exits with [`CliError::exit_code`].
//!
//! The exit codes are the documented ones (README, `threadline --help`):
//!
//! | code | meaning | variants |
//! |---|---|---|
//! | 0 | the command did what it was asked | (no error) |
//! | 1 | the input was read but is broken or invalid, the command found problems, or its output is incomplete | [`Broken`](CliError::Broken), [`Output`](CliError::Output), [`InvalidRequest`](CliError::InvalidRequest), [`SessionEnded`](CliError::SessionEnded), [`Unmet`](CliError::Unmet), [`Found`](CliError::Found) |
//! | 2 | the arguments are wrong, the input cannot be read or used, or the command could not start | [`Usage`](CliError::Usage), [`Input`](CliError::Input), [`Rejected`](CliError::Rejected), [`Project`](CliError::Project), [`Scenario`](CliError::Scenario), [`Read`](CliError::Read), [`Unusable`](CliError::Unusable), [`Destination`](CliError::Destination), [`Start`](CliError::Start), [`Agent`](CliError::Agent) |
//!
//! A write to stdout that failed turns a success into exit code 1 (`output::finish`), after
//! the error, if any, is mapped.

use std::path::PathBuf;
use std::process::ExitCode;

use threadline::query::Terminal;
use threadline_cli::input::InputError;

/// Any error a source may carry (an I/O error, a server's, a parser's).
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a command failed; see the module docs for the exit code of each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CliError {
    /// The arguments are wrong or do not fit together (`--dry-run` without a PROMPT, a date
    /// that is not YYYY-MM-DD). Exit code 2.
    #[error("threadline: {}{message}", at(*command))]
    Usage {
        /// The subcommand whose arguments they are, when the line names it.
        command: Option<&'static str>,
        /// What is wrong.
        message: String,
    },
    /// An input cannot be read as the command reads it: unreadable, larger than
    /// `--max-input-bytes`, not UTF-8, no message in it ([`threadline_cli::input`]). Exit
    /// code 2.
    #[error(transparent)]
    Input(#[from] InputError),
    /// An input or argument the command rejects, as the one line that says why and names it:
    /// a project directory without the session asked for ([`threadline_cli::project`]), a
    /// body `check` cannot read as a request, a session operation refused (an unknown message
    /// id, an existing `--out`). Exit code 2.
    #[error("{line}")]
    Rejected {
        /// The printable line, `threadline: …`.
        line: String,
    },
    /// A Claude Code project directory cannot be listed (`sessions DIR`). Exit code 2.
    #[error("threadline: {0}")]
    Project(#[from] threadline_message::claude_code_project::ProjectError),
    /// `mock --scenario FILE`: the scenario cannot be loaded. Exit code 2.
    #[error("threadline: {0}")]
    Scenario(#[from] threadline_mock::ScenarioError),
    /// A file cannot be read. Exit code 2.
    #[error("threadline: {}cannot read {}: {source}", at(*command), path.display())]
    Read {
        /// The subcommand.
        command: Option<&'static str>,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The input was read but is not what the command takes (not JSON, not a canonical
    /// fixture, a response that cannot be replayed, an invalid scenario or `--now`). Exit
    /// code 2.
    #[error("threadline: {}{what}{}", at(*command), cause(source.as_ref()))]
    Unusable {
        /// The subcommand.
        command: Option<&'static str>,
        /// What cannot be used, naming the input.
        what: String,
        /// The parser's or loader's error, if there is one.
        source: Option<BoxError>,
    },
    /// A file the arguments name cannot be written (`compact --out`, a fork's or rewind's new
    /// transcript): a bad argument. Exit code 2.
    #[error("threadline: {what}: {source}")]
    Destination {
        /// What was being written, naming the file.
        what: String,
        /// Why it could not be.
        source: BoxError,
    },
    /// The command could not start: the async runtime, a scratch directory, the mock server on
    /// loopback, the HTTP client, the agent, a missing API key. Exit code 2.
    #[error("threadline: {}{what}{}", at(*command), cause(source.as_ref()))]
    Start {
        /// The subcommand.
        command: Option<&'static str>,
        /// What could not be started (or the line saying what is missing).
        what: String,
        /// Why, if there is an error behind it.
        source: Option<BoxError>,
    },
    /// The agent could not be built (`run`, `demo`, `replay`). Exit code 2.
    #[error("threadline: {command}: {source}")]
    Agent {
        /// The subcommand.
        command: &'static str,
        /// Why.
        source: threadline::AgentError,
    },
    /// The input was read but is broken, or the operation on it failed (a fixture with no
    /// SSE response, a compaction that failed). Exit code 1.
    #[error("threadline: {what}{}", cause(source.as_ref()))]
    Broken {
        /// What is broken, naming the input.
        what: String,
        /// The operation's error, if there is one.
        source: Option<BoxError>,
    },
    /// The command's output could not be made or written (a JSON document that cannot be
    /// printed, the `--html` page). Exit code 1.
    #[error("threadline: {}{what}: {source}", at(*command))]
    Output {
        /// The subcommand.
        command: Option<&'static str>,
        /// What could not be written.
        what: String,
        /// Why.
        source: BoxError,
    },
    /// `run --dry-run`: the request the agent would send breaks the API's rules (each
    /// violation one line). Exit code 1.
    #[error("{}", invalid_request(violations))]
    InvalidRequest {
        /// The violations, in the API's words.
        violations: Vec<threadline_validate::Violation>,
    },
    /// `run PROMPT`: the session ended otherwise than completed (model error, turn limit, …).
    /// Exit code 1.
    #[error("threadline: run: {}", ended(terminal.as_ref()))]
    SessionEnded {
        /// How it ended; `None` when the loop stopped without saying.
        terminal: Option<Terminal>,
    },
    /// A session against the mock did not do what it must (`demo`: an event it did not show;
    /// `replay`: exchanges not used, or not answered as recorded). Exit code 1.
    #[error("threadline: {command}: {message}")]
    Unmet {
        /// The subcommand.
        command: &'static str,
        /// What was missing.
        message: String,
    },
    /// The command found problems and already reported each where it found it (`check`'s
    /// violations on stdout, `accumulate`'s broken streams, `mcp list`'s servers that did not
    /// connect): nothing more is printed. Exit code 1.
    #[error("{problems} problems found")]
    Found {
        /// How many.
        problems: usize,
    },
}

impl CliError {
    /// The process exit code for this error (see the module docs).
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::Usage { .. }
            | CliError::Input(_)
            | CliError::Rejected { .. }
            | CliError::Project(_)
            | CliError::Scenario(_)
            | CliError::Read { .. }
            | CliError::Unusable { .. }
            | CliError::Destination { .. }
            | CliError::Start { .. }
            | CliError::Agent { .. } => 2,
            CliError::Broken { .. }
            | CliError::Output { .. }
            | CliError::InvalidRequest { .. }
            | CliError::SessionEnded { .. }
            | CliError::Unmet { .. }
            | CliError::Found { .. } => 1,
        })
    }

    /// Whether the command already printed what went wrong, so that `main` prints nothing.
    pub(crate) fn is_reported(&self) -> bool {
        matches!(self, CliError::Found { .. })
    }

    /// The lines `main` prints on stderr for this error: one, or one per violation of a dry
    /// run. Each is a line of its own, escaped by `terminal_text::stderr_line` when printed,
    /// since it may quote a peer (an API server's error message, a refusal's explanation, a
    /// transcript's ids): a newline in such text cannot start a line of its own.
    pub(crate) fn lines(&self) -> Vec<String> {
        match self {
            reported if reported.is_reported() => Vec::new(),
            CliError::InvalidRequest { violations } => {
                violations.iter().map(invalid_request_line).collect()
            }
            other => vec![other.to_string()],
        }
    }

    /// An input or argument rejected, as the one line that says why.
    pub(crate) fn rejected(line: impl Into<String>) -> Self {
        CliError::Rejected { line: line.into() }
    }

    /// The command could not start: `what`, and the error behind it.
    pub(crate) fn start(
        command: Option<&'static str>,
        what: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> Self {
        CliError::Start {
            command,
            what: what.into(),
            source: Some(source.into()),
        }
    }

    /// The command could not start, for the reason `line` says.
    pub(crate) fn start_line(command: Option<&'static str>, line: impl Into<String>) -> Self {
        CliError::Start {
            command,
            what: line.into(),
            source: None,
        }
    }

    /// The async runtime of `command` could not be built.
    pub(crate) fn runtime(command: Option<&'static str>, source: std::io::Error) -> Self {
        Self::start(command, "cannot start the async runtime", source)
    }

    /// `what` of the command's output could not be printed or written.
    pub(crate) fn output(
        command: Option<&'static str>,
        what: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> Self {
        CliError::Output {
            command,
            what: what.into(),
            source: source.into(),
        }
    }

    /// The arguments are wrong.
    pub(crate) fn usage(command: Option<&'static str>, message: impl Into<String>) -> Self {
        CliError::Usage {
            command,
            message: message.into(),
        }
    }

    /// The input was read but the command cannot take it.
    pub(crate) fn unusable(
        command: Option<&'static str>,
        what: impl Into<String>,
        source: Option<BoxError>,
    ) -> Self {
        CliError::Unusable {
            command,
            what: what.into(),
            source,
        }
    }
}

/// `COMMAND: ` when the line names the subcommand.
fn at(command: Option<&'static str>) -> String {
    command.map(|c| format!("{c}: ")).unwrap_or_default()
}

/// `: SOURCE` when there is an error behind the line.
fn cause(source: Option<&BoxError>) -> String {
    source.map(|s| format!(": {s}")).unwrap_or_default()
}

/// One line per violation, as `run --dry-run` has always printed them.
fn invalid_request(violations: &[threadline_validate::Violation]) -> String {
    violations
        .iter()
        .map(invalid_request_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The line of one violation of a dry run's request.
fn invalid_request_line(violation: &threadline_validate::Violation) -> String {
    format!("threadline: run: the request is invalid: {violation}")
}

/// How a session that did not complete ended.
fn ended(terminal: Option<&Terminal>) -> String {
    match terminal {
        Some(terminal) => format!("the session ended: {terminal}"),
        None => "the session ended without a reason".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_maps_to_its_documented_exit_code() {
        let io = || std::io::Error::other("boom");
        let cases: Vec<(CliError, ExitCode, &str)> = vec![
            (
                CliError::usage(Some("run"), "--dry-run needs a PROMPT"),
                ExitCode::from(2),
                "threadline: run: --dry-run needs a PROMPT",
            ),
            (
                CliError::from(InputError::NotUtf8 {
                    path: "x.jsonl".to_owned(),
                }),
                ExitCode::from(2),
                "threadline: x.jsonl: not UTF-8 text",
            ),
            (
                CliError::rejected("threadline: --agent needs --session"),
                ExitCode::from(2),
                "threadline: --agent needs --session",
            ),
            (
                CliError::Read {
                    command: Some("replay"),
                    path: "f.json".into(),
                    source: io(),
                },
                ExitCode::from(2),
                "threadline: replay: cannot read f.json: boom",
            ),
            (
                CliError::runtime(Some("demo"), io()),
                ExitCode::from(2),
                "threadline: demo: cannot start the async runtime: boom",
            ),
            (
                CliError::start_line(None, "no key"),
                ExitCode::from(2),
                "threadline: no key",
            ),
            (
                CliError::Broken {
                    what: "f: cannot compact".to_owned(),
                    source: Some(io().into()),
                },
                ExitCode::from(1),
                "threadline: f: cannot compact: boom",
            ),
            (
                CliError::output(None, "cannot write out.html", io()),
                ExitCode::from(1),
                "threadline: cannot write out.html: boom",
            ),
            (
                CliError::SessionEnded { terminal: None },
                ExitCode::from(1),
                "threadline: run: the session ended without a reason",
            ),
            (
                CliError::Unmet {
                    command: "demo",
                    message: "the session did not show a parallel batch".to_owned(),
                },
                ExitCode::from(1),
                "threadline: demo: the session did not show a parallel batch",
            ),
        ];
        for (error, code, line) in cases {
            assert_eq!(error.exit_code(), code, "{error:?}");
            assert_eq!(error.to_string(), line);
            assert!(!error.is_reported());
        }
        let found = CliError::Found { problems: 3 };
        assert_eq!(found.exit_code(), ExitCode::from(1));
        assert!(found.is_reported());
    }

    #[test]
    fn the_cause_is_kept_as_the_source() {
        use std::error::Error as _;
        let error = CliError::runtime(None, std::io::Error::other("boom"));
        assert_eq!(
            error.source().map(ToString::to_string).as_deref(),
            Some("boom")
        );
        let read = CliError::Read {
            command: None,
            path: "f".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let io = read
            .source()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        assert_eq!(io, Some(std::io::ErrorKind::NotFound));
    }
}
