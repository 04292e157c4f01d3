//! The source trait: one plug-in that may contribute attachments to a turn.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use threadline_message::{Attachment, Message};

use threadline_workspace::{Refusal, Truncation, Workspace};

/// When a source runs (see the [collector](crate::Collector)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Phase 1: triggered by the user's input (`@` mentions). Completes before phase 2.
    UserInput,
    /// Phase 2: derived from the environment and history; may read what phase 1 found. Runs
    /// concurrently with the other phase-2 sources and with phase 3.
    Environment,
    /// Phase 3: main thread only (IDE selection, diagnostics, token usage); skipped for
    /// sub-agents. Runs concurrently with phase 2.
    MainThread,
}

/// Whose turn it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Thread {
    /// The user's own conversation.
    #[default]
    Main,
    /// A sub-agent's conversation: main-thread-only sources are skipped.
    SubAgent,
}

/// What a turn gives the sources to look at.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Turn<'a> {
    /// What the user typed this turn, if the turn starts with user input.
    pub input: Option<&'a str>,
    /// The session's message history (the internal array) before this turn's attachments.
    pub history: &'a [Message],
    /// The workspace files are read from; sources that read files add nothing without one.
    pub workspace: Option<&'a Workspace>,
    /// Today's date (`YYYY-MM-DD`), as the caller knows it. Taken as input, never read from a
    /// clock here, so the same state gives the same attachments.
    pub today: Option<&'a str>,
    /// Messages the user queued while the model was working.
    pub queued_commands: &'a [String],
    /// Main thread or sub-agent.
    pub thread: Thread,
}

impl<'a> Turn<'a> {
    /// A turn over `history` with no input, no workspace, no date and no queued commands, on
    /// the main thread.
    pub fn new(history: &'a [Message]) -> Turn<'a> {
        Turn {
            input: None,
            history,
            workspace: None,
            today: None,
            queued_commands: &[],
            thread: Thread::Main,
        }
    }

    /// This turn with the user's input.
    pub fn with_input(mut self, input: &'a str) -> Self {
        self.input = Some(input);
        self
    }

    /// This turn reading files from `workspace`.
    pub fn with_workspace(mut self, workspace: &'a Workspace) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// This turn on `today` (`YYYY-MM-DD`).
    pub fn with_today(mut self, today: &'a str) -> Self {
        self.today = Some(today);
        self
    }

    /// This turn with queued commands.
    pub fn with_queued_commands(mut self, queued: &'a [String]) -> Self {
        self.queued_commands = queued;
        self
    }

    /// This turn on a thread.
    pub fn with_thread(mut self, thread: Thread) -> Self {
        self.thread = thread;
        self
    }
}

/// What a source sees: the turn, and (from phase 2 on) what phase 1 found.
#[derive(Debug, Clone, Copy)]
pub struct SourceContext<'a> {
    /// The turn.
    pub turn: &'a Turn<'a>,
    /// The attachments phase 1 produced; empty during phase 1.
    pub found: &'a [Attachment],
}

/// Something a source wants reported besides its attachments: a path it refused, a file it
/// cut.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// `subject` (e.g. `@../x`) was not read.
    Refused {
        /// What was refused, as the user wrote it.
        subject: String,
        /// Why.
        refusal: Refusal,
    },
    /// `subject` was attached, but cut.
    Truncated {
        /// What was cut.
        subject: String,
        /// At which limit.
        truncation: Truncation,
    },
    /// `subject` was left out for a reason that is not a refusal (e.g. an unknown agent).
    Ignored {
        /// What was left out.
        subject: String,
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Refused { subject, refusal } => write!(f, "{subject}: refused: {refusal}"),
            Note::Truncated {
                subject,
                truncation,
            } => write!(f, "{subject}: truncated: {truncation}"),
            Note::Ignored { subject, reason } => write!(f, "{subject}: ignored: {reason}"),
        }
    }
}

/// What a source produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SourceOutput {
    /// Its attachments, in the order they should reach the model.
    pub attachments: Vec<Attachment>,
    /// What it wants reported.
    pub notes: Vec<Note>,
}

impl SourceOutput {
    /// Nothing to attach, nothing to report.
    pub fn none() -> Self {
        SourceOutput::default()
    }

    /// These attachments, nothing to report.
    pub fn attachments(attachments: Vec<Attachment>) -> Self {
        SourceOutput {
            attachments,
            notes: Vec::new(),
        }
    }
}

impl From<Option<Attachment>> for SourceOutput {
    fn from(attachment: Option<Attachment>) -> Self {
        SourceOutput::attachments(attachment.into_iter().collect())
    }
}

/// A source failed: it contributes nothing this turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// Reading something failed.
    #[error("{context}: {error}")]
    Io {
        /// What was being read.
        context: String,
        /// The error.
        #[source]
        error: std::io::Error,
    },
    /// Any other failure, in words.
    #[error("{0}")]
    Failed(String),
}

impl SourceError {
    /// A failure described in words.
    pub fn failed(message: impl Into<String>) -> Self {
        SourceError::Failed(message.into())
    }
}

/// The future a source returns.
pub type SourceFuture<'a> =
    Pin<Box<dyn Future<Output = Result<SourceOutput, SourceError>> + Send + 'a>>;

/// A plug-in that may contribute attachments to a turn. Adding a source is one `impl`:
///
/// ```
/// use threadline_attach::{Phase, Source, SourceContext, SourceFuture, SourceOutput};
/// use threadline_message::Attachment;
///
/// /// Reminds the model of the house style on every turn that has user input.
/// struct HouseStyle;
///
/// impl Source for HouseStyle {
///     fn name(&self) -> &str {
///         "house_style"
///     }
///     fn phase(&self) -> Phase {
///         Phase::Environment
///     }
///     fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
///         Box::pin(async move {
///             Ok(SourceOutput::from(cx.turn.input.map(|_| Attachment::Reminder {
///                 text: "Answer in British English.".into(),
///             })))
///         })
///     }
/// }
/// ```
///
/// A source must not block its thread (use async I/O, or `tokio::task::spawn_blocking`):
/// the collector's timeout can only interrupt a source at an `.await`.
pub trait Source: Send + Sync {
    /// A stable name for reports (`snake_case`, e.g. `file_mentions`).
    fn name(&self) -> &str;

    /// When it runs.
    fn phase(&self) -> Phase;

    /// Its own timeout, when the collector's default (1 s) does not suit it.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// What it contributes to the turn. An error, a panic or running past the timeout makes
    /// it contribute nothing; the collector reports it and goes on.
    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a>;
}
