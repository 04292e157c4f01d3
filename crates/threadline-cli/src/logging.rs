//! `--log FILE` and `RUST_LOG` for `threadline run` and `threadline demo`: the workspace's
//! `tracing` spans and events (the loop's `invoke_agent`, `chat` and `execute_tool` spans with
//! the OpenTelemetry GenAI attributes, the client's `anthropic.messages` span, compaction
//! events; see `threadline_wire::telemetry`) as JSON lines.
//!
//! - `--log FILE`: one JSON object a line for every event and every span close (the closing
//!   span's fields under `span`, its ancestors' under `spans`), filtered by `RUST_LOG` or, when
//!   it is unset or empty, by `threadline=info` (every threadline crate at INFO). The file is
//!   created with mode `0600`, like a transcript.
//! - `RUST_LOG` without `--log`: the same records, human-readable, on stderr.
//! - Neither: no subscriber, and the output is what it always was.
//!
//! What the spans carry is ids, names, counts and error classes: never message content, tool
//! inputs or outputs, or the API key (ARCHITECTURE.md, "Security"). Dependencies that log content at DEBUG or
//! TRACE (rmcp logs every JSON-RPC request and result, a tool's input and output among them)
//! are left out whatever `RUST_LOG` says ([`CONTENT_TARGETS`]).

use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{FilterFn, filter_fn};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The filter when `RUST_LOG` is unset or empty and `--log` is given.
const DEFAULT_FILTER: &str = "threadline=info";

/// The targets (and their submodules) never logged, whatever `RUST_LOG` says: their records
/// carry what the logs promise not to hold. `rmcp` logs each JSON-RPC request, result and
/// event with `Debug` (tool inputs and outputs); the Restate SDK logs journal entries (step
/// inputs and outputs).
pub(crate) const CONTENT_TARGETS: &[&str] = &["rmcp", "restate_sdk", "restate_sdk_shared_core"];

/// Whether records of `target` may be logged (it is not one of [`CONTENT_TARGETS`] or inside
/// one).
pub(crate) fn may_log(target: &str) -> bool {
    !CONTENT_TARGETS.iter().any(|denied| {
        target
            .strip_prefix(denied)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

/// The filter that drops [`CONTENT_TARGETS`], on top of `RUST_LOG`'s.
fn without_content() -> FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    filter_fn(|metadata| may_log(metadata.target()))
}

/// The `--log` subscriber: JSON lines to `writer`, filtered by `filter` and
/// [`without_content`].
fn file_subscriber<W>(filter: EnvFilter, writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_span_events(FmtSpan::CLOSE)
        .with_current_span(true)
        .with_span_list(true)
        .with_writer(writer)
        .finish()
        .with(without_content())
}

/// Installs the process's subscriber for `--log FILE` (created, or truncated) and `RUST_LOG`.
/// The line saying why it cannot (exit code 2): the file cannot be created, or `RUST_LOG`
/// does not parse.
pub(crate) fn init(log: Option<&std::path::Path>) -> Result<(), String> {
    let rust_log = std::env::var("RUST_LOG")
        .ok()
        .filter(|value| !value.trim().is_empty());
    let filter = |default: &str| {
        let directives = rust_log.as_deref().unwrap_or(default);
        EnvFilter::builder()
            .parse(directives)
            .map_err(|e| format!("threadline: RUST_LOG={directives:?} is not a valid filter: {e}"))
    };
    match (log, rust_log.is_some()) {
        (Some(path), _) => {
            // Created `0600` like a transcript (the one place their mode comes from).
            let file = threadline::wire::secret::private_file_options()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .map_err(|e| {
                    format!(
                        "threadline: --log {}: cannot create it: {e}",
                        path.display()
                    )
                })?;
            file_subscriber(filter(DEFAULT_FILTER)?, Mutex::new(file))
                .try_init()
                .map_err(|e| format!("threadline: --log: {e}"))
        }
        (None, true) => tracing_subscriber::fmt()
            .with_env_filter(filter(DEFAULT_FILTER)?)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .finish()
            .with(without_content())
            .try_init()
            .map_err(|e| format!("threadline: RUST_LOG: {e}")),
        (None, false) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for Captured {
        type Writer = Captured;
        fn make_writer(&'w self) -> Captured {
            self.clone()
        }
    }

    #[test]
    fn content_targets_and_their_modules_are_never_logged() {
        for target in [
            "rmcp",
            "rmcp::service",
            "rmcp::transport::io",
            "restate_sdk::endpoint",
            "restate_sdk_shared_core::vm",
        ] {
            assert!(!may_log(target), "{target}");
        }
        for target in [
            "threadline_query",
            "threadline_client::transport",
            "rmcpx",
            "hyper_util::client",
            "my_rmcp",
        ] {
            assert!(may_log(target), "{target}");
        }
    }

    /// With `RUST_LOG=debug` rmcp's lines, a tool's input and output in them, used to go
    /// into `--log`. They are dropped even when `RUST_LOG` names rmcp itself.
    #[test]
    fn rmcp_records_stay_out_of_the_log_whatever_rust_log_says() {
        for directives in [
            "trace",
            "debug",
            "rmcp=trace,threadline=info",
            "rmcp::service=trace",
        ] {
            let captured = Captured::default();
            let filter = EnvFilter::builder().parse(directives).expect("a filter");
            let subscriber = file_subscriber(filter, captured.clone());
            tracing::subscriber::with_default(subscriber, || {
                let span =
                    tracing::debug_span!(target: "rmcp::service", "serve", input = "SECRET-SPAN");
                span.in_scope(|| {
                    tracing::debug!(target: "rmcp::service", request = "SECRET-TOOL-INPUT", "received request");
                    tracing::trace!(target: "rmcp::service", result = "SECRET-TOOL-OUTPUT", "response message");
                });
                tracing::info!(target: "threadline_query", "kept");
            });
            let log =
                String::from_utf8(captured.0.lock().expect("not poisoned").clone()).expect("UTF-8");
            assert!(!log.contains("SECRET"), "{directives}: {log}");
            let kept = directives != "rmcp::service=trace";
            assert_eq!(log.contains("kept"), kept, "{directives}: {log}");
        }
    }
}
