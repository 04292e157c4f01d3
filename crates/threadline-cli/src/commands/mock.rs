//! `threadline mock --addr ADDR [--scenario FILE]`: the mock Messages API on loopback.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use threadline_mock::{MockConfig, MockServer, Scenario, Step};

/// The scenario without `--scenario`: the same short answer to every request.
fn default_scenario() -> Scenario {
    Scenario::new([Step::text("Hello from the threadline mock.")]).repeating_last()
}

pub(crate) fn run(addr: SocketAddr, scenario: Option<&Path>) -> ExitCode {
    let scenario = match scenario {
        Some(path) => match Scenario::from_file(path) {
            Ok(scenario) => scenario,
            Err(error) => {
                eprintln!("threadline: {error}");
                return ExitCode::from(2);
            }
        },
        None => default_scenario(),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("threadline: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async move {
        let server = match MockServer::start_with(MockConfig::new(scenario).with_addr(addr)).await {
            Ok(server) => server,
            Err(error) => {
                eprintln!("threadline: cannot listen on {addr}: {error}");
                return ExitCode::from(2);
            }
        };
        // The first line is the base URL, for scripts that start the mock on port 0.
        crate::output::print_line(&format!("listening on {}", server.base_url()));
        match tokio::signal::ctrl_c().await {
            Ok(()) => {
                eprintln!(
                    "threadline: mock stopped after {} requests",
                    server.request_count()
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("threadline: cannot wait for Ctrl-C: {error}");
                server.wait().await;
                ExitCode::SUCCESS
            }
        }
    })
}
