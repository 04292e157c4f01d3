//! `--log FILE` and `RUST_LOG` for `threadline run` and `threadline demo`: the workspace's
//! `tracing` spans and events (the loop's `invoke_agent`, `chat` and `execute_tool` spans with
//! the OpenTelemetry GenAI attributes, the client's `anthropic.messages` span, compaction
//! events; see `threadline_wire::telemetry`) as JSON lines.
//!
//! - `--log FILE`: one JSON object a line for every event and every span close (the closing
//!   span's fields under `span`, its ancestors' under `spans`), filtered by `RUST_LOG` or, when
//!   it is unset or empty, by `threadline=info` (every threadline crate at INFO).
//! - `RUST_LOG` without `--log`: the same records, human-readable, on stderr.
//! - Neither: no subscriber, and the output is what it always was.
//!
//! What the spans carry is ids, names, counts and error classes: never message content, tool
//! inputs or outputs, or the API key (invariant 7).

use std::fs::File;
use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The filter when `RUST_LOG` is unset or empty and `--log` is given.
const DEFAULT_FILTER: &str = "threadline=info";

/// Installs the process's subscriber for `--log FILE` (created, or truncated) and `RUST_LOG`.
/// The line saying why it cannot (exit code 2): the file cannot be created, or `RUST_LOG`
/// does not parse.
pub(crate) fn init(log: Option<&Path>) -> Result<(), String> {
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
            let file = File::create(path).map_err(|e| {
                format!(
                    "threadline: --log {}: cannot create it: {e}",
                    path.display()
                )
            })?;
            tracing_subscriber::fmt()
                .json()
                .with_env_filter(filter(DEFAULT_FILTER)?)
                .with_span_events(FmtSpan::CLOSE)
                .with_current_span(true)
                .with_span_list(true)
                .with_writer(Mutex::new(file))
                .finish()
                .try_init()
                .map_err(|e| format!("threadline: --log: {e}"))
        }
        (None, true) => tracing_subscriber::fmt()
            .with_env_filter(filter(DEFAULT_FILTER)?)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .finish()
            .try_init()
            .map_err(|e| format!("threadline: RUST_LOG: {e}")),
        (None, false) => Ok(()),
    }
}
