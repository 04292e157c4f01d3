//! The collector: runs the sources of a turn in three phases, each under a timeout and a
//! panic guard.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::join_all;
use threadline_message::{Attachment, Message};

use crate::source::{Note, Phase, Source, SourceContext, SourceError, SourceOutput, Thread, Turn};

/// The timeout a source gets unless it asks for another.
pub const DEFAULT_SOURCE_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a source contributed nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// It returned an error.
    #[error("failed: {0}")]
    Error(#[source] SourceError),
    /// It panicked.
    #[error("panicked: {message}")]
    Panicked {
        /// The panic's message, when it was a string.
        message: String,
    },
    /// It did not finish in time.
    #[error("timed out after {} ms", after.as_millis())]
    TimedOut {
        /// The timeout it ran under.
        after: Duration,
    },
}

impl Failure {
    /// Whether the source ran past its timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Failure::TimedOut { .. })
    }

    /// Whether the source panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, Failure::Panicked { .. })
    }
}

/// What happened to one source, besides its attachments.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryKind {
    /// It contributed nothing.
    #[error("{0}")]
    Failed(Failure),
    /// It reported something (a refused path, a cut file).
    #[error("{0}")]
    Note(Note),
}

/// One line of the collector's report.
#[derive(Debug, thiserror::Error)]
#[error("attachment source `{source_name}`: {kind}")]
#[non_exhaustive]
pub struct ReportEntry {
    /// The source's [name](Source::name).
    pub source_name: String,
    /// Its phase.
    pub phase: Phase,
    /// What happened.
    pub kind: EntryKind,
}

impl ReportEntry {
    /// The failure, if the source contributed nothing.
    pub fn failure(&self) -> Option<&Failure> {
        match &self.kind {
            EntryKind::Failed(failure) => Some(failure),
            EntryKind::Note(_) => None,
        }
    }

    /// The note, if the source reported one.
    pub fn note(&self) -> Option<&Note> {
        match &self.kind {
            EntryKind::Note(note) => Some(note),
            EntryKind::Failed(_) => None,
        }
    }
}

/// The attachments of a turn and the report of how they were collected.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Collected {
    /// The attachments: phase 1's, then phase 2's, then phase 3's, each phase in the order
    /// its sources were added (never in the order they happened to finish).
    pub attachments: Vec<Attachment>,
    /// Failures and notes, in the same order.
    pub report: Vec<ReportEntry>,
}

impl Collected {
    /// The attachments as messages to append to the history after the user's input.
    pub fn messages(&self) -> Vec<Message> {
        self.attachments
            .iter()
            .cloned()
            .map(Message::attachment)
            .collect()
    }

    /// The report entries of the source named `name`.
    pub fn entries_of<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s ReportEntry> {
        self.report.iter().filter(move |e| e.source_name == name)
    }
}

/// Runs attachment sources for a turn, in three phases:
///
/// 1. [`Phase::UserInput`] sources, concurrently, to completion;
/// 2. [`Phase::Environment`] sources, concurrently, seeing phase 1's attachments in
///    [`SourceContext::found`];
/// 3. [`Phase::MainThread`] sources, concurrently with phase 2, skipped for sub-agents.
///
/// Every source runs under its timeout ([`DEFAULT_SOURCE_TIMEOUT`] unless it or
/// [`with_timeout`](Self::with_timeout) says otherwise) and a panic guard: a source that
/// fails, panics or is too slow contributes nothing and is reported; the others are unaffected.
///
/// [`collect`](Self::collect) runs inside a Tokio runtime with the time driver enabled;
/// [`collect_blocking`](Self::collect_blocking) brings its own.
#[derive(Default)]
pub struct Collector {
    sources: Vec<Box<dyn Source>>,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field(
                "sources",
                &self.sources.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout())
            .finish()
    }
}

impl Collector {
    /// A collector with no sources.
    pub fn new() -> Self {
        Collector::default()
    }

    /// Adds a source; sources of one phase report in the order they were added.
    pub fn add(&mut self, source: impl Source + 'static) -> &mut Self {
        self.sources.push(Box::new(source));
        self
    }

    /// This collector with another source.
    pub fn with(mut self, source: impl Source + 'static) -> Self {
        self.add(source);
        self
    }

    /// This collector with another default timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The default timeout of its sources.
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_SOURCE_TIMEOUT)
    }

    /// The names of its sources, in the order they were added.
    pub fn source_names(&self) -> Vec<&str> {
        self.sources.iter().map(|s| s.name()).collect()
    }

    /// Collects the attachments of `turn`. Never fails: what goes wrong is in the report.
    pub async fn collect(&self, turn: &Turn<'_>) -> Collected {
        let mut collected = Collected::default();

        let first = SourceContext { turn, found: &[] };
        let phase_one = join_all(
            self.of_phase(Phase::UserInput)
                .map(|source| self.guarded(source, &first)),
        )
        .await;
        let mut found = Vec::new();
        for (source, result) in self.of_phase(Phase::UserInput).zip(phase_one) {
            record(&mut collected.report, source, result, &mut found);
        }

        let later = SourceContext {
            turn,
            found: &found,
        };
        let environment = join_all(
            self.of_phase(Phase::Environment)
                .map(|source| self.guarded(source, &later)),
        );
        let main_thread_only = join_all(
            self.of_phase(Phase::MainThread)
                .filter(|_| turn.thread == Thread::Main)
                .map(|source| self.guarded(source, &later)),
        );
        let (environment, main_thread_only) =
            futures::future::join(environment, main_thread_only).await;

        let mut rest = Vec::new();
        for (source, result) in self.of_phase(Phase::Environment).zip(environment) {
            record(&mut collected.report, source, result, &mut rest);
        }
        for (source, result) in self.of_phase(Phase::MainThread).zip(main_thread_only) {
            record(&mut collected.report, source, result, &mut rest);
        }
        collected.attachments = found;
        collected.attachments.append(&mut rest);
        collected
    }

    /// [`collect`](Self::collect) on a runtime of its own (current-thread, time driver), for
    /// callers that are not async. Like any `block_on`, it must not be called from inside an
    /// async runtime: there, `.await` [`collect`](Self::collect) instead.
    pub fn collect_blocking(&self, turn: &Turn<'_>) -> std::io::Result<Collected> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        Ok(runtime.block_on(self.collect(turn)))
    }

    fn of_phase(&self, phase: Phase) -> impl Iterator<Item = &dyn Source> + '_ {
        self.sources
            .iter()
            .map(|s| s.as_ref())
            .filter(move |s| s.phase() == phase)
    }

    /// Runs one source under its timeout, turning errors and panics into a [`Failure`].
    async fn guarded(
        &self,
        source: &dyn Source,
        cx: &SourceContext<'_>,
    ) -> Result<SourceOutput, Failure> {
        let after = source.timeout().unwrap_or_else(|| self.timeout());
        // A panic while building the future is caught as well as one while polling it.
        let future = std::panic::catch_unwind(AssertUnwindSafe(|| source.collect(cx)))
            .map_err(|payload| panicked(payload.as_ref()))?;
        match tokio::time::timeout(after, AssertUnwindSafe(future).catch_unwind()).await {
            Err(_elapsed) => Err(Failure::TimedOut { after }),
            Ok(Err(payload)) => Err(panicked(payload.as_ref())),
            Ok(Ok(Err(error))) => Err(Failure::Error(error)),
            Ok(Ok(Ok(output))) => Ok(output),
        }
    }
}

fn record(
    report: &mut Vec<ReportEntry>,
    source: &dyn Source,
    result: Result<SourceOutput, Failure>,
    attachments: &mut Vec<Attachment>,
) {
    let entry = |kind| ReportEntry {
        source_name: source.name().to_owned(),
        phase: source.phase(),
        kind,
    };
    match result {
        Ok(output) => {
            attachments.extend(output.attachments);
            report.extend(output.notes.into_iter().map(|n| entry(EntryKind::Note(n))));
        }
        Err(failure) => report.push(entry(EntryKind::Failed(failure))),
    }
}

fn panicked(payload: &(dyn std::any::Any + Send)) -> Failure {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    Failure::Panicked { message }
}
