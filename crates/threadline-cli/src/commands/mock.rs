//! `threadline mock --addr ADDR [--scenario FILE] [--record-log FILE] [LIMITS]`: the mock
//! Messages API on loopback.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::error::CliError;
use threadline_cli::stderr_line;
use threadline_mock::{MockConfig, MockServer, Scenario, ServerLimits, Step};

/// The mock's bounds on what clients send (`threadline_mock::ServerLimits`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LimitArgs {
    /// The largest request body; a larger one is answered 413 `request_too_large`.
    #[arg(long, value_name = "BYTES", default_value_t = ServerLimits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Body bytes all requests may hold at once (each body's first 16 KiB not counted);
    /// past it a request is answered 529 `overloaded_error`.
    #[arg(long, value_name = "BYTES", default_value_t = ServerLimits::default().max_buffered_body_bytes)]
    max_buffered_body_bytes: usize,
    /// Recorded requests kept (oldest dropped first).
    #[arg(long, value_name = "N", default_value_t = ServerLimits::default().max_recorded_requests)]
    max_recorded_requests: usize,
    /// Body bytes the recorded requests may hold (oldest dropped first).
    #[arg(long, value_name = "BYTES", default_value_t = ServerLimits::default().max_recorded_bytes)]
    max_recorded_bytes: usize,
    /// Connections served at once; a new one over it closes the longest-idle connection.
    #[arg(long, value_name = "N", default_value_t = ServerLimits::default().max_connections)]
    max_connections: usize,
    /// Seconds a client may take to send a request's headers.
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "30")]
    header_read_timeout: Duration,
    /// Seconds a new connection may take to start its first request (shorter than
    /// --header-read-timeout, so that connections trickling their first bytes give their
    /// slots back soon).
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "5")]
    first_request_timeout: Duration,
    /// Seconds a connection may stay without a request in flight.
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "30")]
    idle_timeout: Duration,
    /// Seconds a request's body may take to arrive.
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "60")]
    body_read_timeout: Duration,
    /// Bytes the `--record-log` file may grow by; past it a last `{"log_full":true}` line
    /// ends it.
    #[arg(long, value_name = "BYTES", default_value_t = ServerLimits::default().max_log_bytes)]
    max_log_bytes: u64,
}

impl LimitArgs {
    fn limits(&self) -> ServerLimits {
        ServerLimits::default()
            .with_max_body_bytes(self.max_body_bytes)
            .with_max_buffered_body_bytes(self.max_buffered_body_bytes)
            .with_max_recorded_requests(self.max_recorded_requests)
            .with_max_recorded_bytes(self.max_recorded_bytes)
            .with_max_connections(self.max_connections)
            .with_header_read_timeout(self.header_read_timeout)
            .with_first_request_timeout(self.first_request_timeout)
            .with_idle_timeout(self.idle_timeout)
            .with_body_read_timeout(self.body_read_timeout)
            .with_max_log_bytes(self.max_log_bytes)
    }
}

/// A positive number of seconds (`0.5`, `30`).
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    match Duration::try_from_secs_f64(secs) {
        Ok(duration) if !duration.is_zero() => Ok(duration),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// The scenario without `--scenario`: the same short answer to every request.
fn default_scenario() -> Scenario {
    Scenario::new([Step::text("Hello from the threadline mock.")]).repeating_last()
}

pub(crate) fn run(
    addr: SocketAddr,
    scenario: Option<&Path>,
    record_log: Option<&Path>,
    (models, google_service_account): (Option<&Path>, Option<&Path>),
    limits: &LimitArgs,
    input_limit: crate::input::InputLimit,
) -> Result<(), CliError> {
    let google_service_account = match google_service_account {
        Some(path) => {
            let name = path.display().to_string();
            let bytes = crate::input::read_input(&name, input_limit)?;
            let text = String::from_utf8_lossy(&bytes);
            let account = threadline_mock::GoogleServiceAccount::from_json(&text)
                .map_err(|e| CliError::usage(Some("mock"), format!("{name}: {e}")))?;
            Some(account)
        }
        None => None,
    };
    // Extra models: a file in the Models API's shape (`GET /v1/models`) or the model table's.
    let models = match models {
        Some(path) => {
            let name = path.display().to_string();
            let bytes = crate::input::read_input(&name, input_limit)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| CliError::usage(Some("mock"), format!("{name}: not UTF-8")))?;
            let table = threadline_wire::model::ModelTable::builtin()
                .extended_from_json(&text)
                .map_err(|e| CliError::usage(Some("mock"), format!("{name}: {e}")))?;
            Some(table)
        }
        None => None,
    };
    let scenario = match scenario {
        // The mock's loader reads the file whole: refuse one over the input limit (or
        // endless, `/dev/zero`) before it does.
        Some(path) => crate::input::read_input(&path.display().to_string(), input_limit)
            .map_err(CliError::from)
            .and_then(|_| Ok(Scenario::from_file(path)?))?,
        None => default_scenario(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(None, e))?;
    runtime.block_on(async move {
        let mut config = MockConfig::new(scenario)
            .with_addr(addr)
            .with_limits(limits.limits());
        if let Some(table) = models {
            config = config.with_models(table);
        }
        if let Some(account) = google_service_account {
            let credentials = threadline_mock::PlatformCredentials::default()
                .with_google_service_account(account);
            config = config.with_platform_credentials(credentials);
        }
        if let Some(path) = record_log {
            // Opened here, so that its error names the file rather than the address (with
            // the mode the mock creates it with, 0600: it holds the request bodies).
            threadline_wire::secret::private_file_options()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| CliError::start(None, format!("cannot open {}", path.display()), e))?;
            config = config.with_record_log(path);
        }
        let server = MockServer::start_with(config)
            .await
            .map_err(|e| CliError::start(None, format!("cannot listen on {addr}"), e))?;
        // The first line is the base URL with the bound port, for scripts that start the mock
        // on port 0: flushed now, since the process then only waits.
        crate::output::print(&format!("listening on {}\n", server.base_url()));
        match tokio::signal::ctrl_c().await {
            Ok(()) => {
                stderr_line!(
                    "threadline: mock stopped after {} requests",
                    server.request_count()
                );
            }
            Err(error) => {
                stderr_line!("threadline: cannot wait for Ctrl-C: {error}");
                server.wait().await;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        limits: LimitArgs,
    }

    #[test]
    fn the_flags_default_to_the_mock_crate_defaults() {
        let parsed = Wrapper::try_parse_from(["mock"]).expect("no flags parse");
        assert_eq!(parsed.limits.limits(), ServerLimits::default());
    }

    #[test]
    fn each_flag_sets_its_limit() {
        let parsed = Wrapper::try_parse_from([
            "mock",
            "--max-body-bytes=1",
            "--max-buffered-body-bytes=2",
            "--max-recorded-requests=3",
            "--max-recorded-bytes=4",
            "--max-connections=5",
            "--header-read-timeout=0.5",
            "--idle-timeout=6",
            "--body-read-timeout=7",
            "--max-log-bytes=8",
        ])
        .expect("flags parse");
        let expected = ServerLimits::default()
            .with_max_body_bytes(1)
            .with_max_buffered_body_bytes(2)
            .with_max_recorded_requests(3)
            .with_max_recorded_bytes(4)
            .with_max_connections(5)
            .with_header_read_timeout(Duration::from_millis(500))
            .with_idle_timeout(Duration::from_secs(6))
            .with_body_read_timeout(Duration::from_secs(7))
            .with_max_log_bytes(8);
        assert_eq!(parsed.limits.limits(), expected);
    }

    #[test]
    fn a_timeout_must_be_a_positive_number_of_seconds() {
        for bad in ["0", "-1", "soon", "NaN", "1e400"] {
            let flag = format!("--idle-timeout={bad}");
            assert!(
                Wrapper::try_parse_from(["mock", flag.as_str()]).is_err(),
                "{bad} was accepted"
            );
        }
    }
}
