//! `threadline inspect TRANSCRIPT [--json]`: the report of [`threadline_cli::inspect`], printed.

use std::process::ExitCode;

use threadline_cli::inspect::{render_text, report};
use threadline_cli::inspect_html::render_html;

use crate::session::{Sidechains, load_session};

pub(crate) fn run(
    path: &str,
    json_output: bool,
    html: Option<&std::path::Path>,
    model: Option<&str>,
) -> ExitCode {
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
    if let Some(out) = html
        && let Err(e) = std::fs::write(out, render_html(&report, path))
    {
        eprintln!("threadline: cannot write {}: {e}", out.display());
        return ExitCode::from(1);
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
