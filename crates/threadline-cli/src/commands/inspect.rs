//! `threadline inspect TRANSCRIPT [--json]`: the report of [`threadline_cli::inspect`], printed.

use std::process::ExitCode;

use threadline_cli::inspect::{render_text, report};

use crate::session::{Sidechains, load_session};

pub(crate) fn run(path: &str, json_output: bool, model: Option<&str>) -> ExitCode {
    let session = match load_session(path, Sidechains::WhenNoMainChain) {
        Ok(session) => session,
        Err(line) => {
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let report = report(&session, model);
    if let Some(warning) = report["model_warning"].as_str() {
        eprintln!("threadline: {warning}");
    }
    if json_output {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => crate::output::print_line(&json),
            Err(e) => {
                eprintln!("threadline: cannot print the report: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        crate::output::print_line(&render_text(&report));
    }
    ExitCode::SUCCESS
}
