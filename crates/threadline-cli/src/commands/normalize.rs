//! `threadline normalize TRANSCRIPT`: a session transcript to the request body the model sees.

use std::process::ExitCode;

use crate::session::{Sidechains, build_request, load_session};

pub(crate) fn run(path: &str, model: Option<&str>, max_tokens: Option<u64>) -> ExitCode {
    let session = match load_session(path, Sidechains::Never) {
        Ok(session) => session,
        Err(line) => {
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let (request, normalized) = build_request(&session, model, max_tokens);
    match serde_json::to_string_pretty(&request) {
        Ok(json) => crate::output::print_line(&json),
        Err(e) => {
            eprintln!("threadline: cannot print the request: {e}");
            return ExitCode::from(1);
        }
    }
    eprintln!(
        "threadline: {path}: {} transcript, {} messages -> {} request messages; {}",
        session.format,
        session.messages.len(),
        request.messages.len(),
        normalized.report.summary()
    );
    ExitCode::SUCCESS
}
