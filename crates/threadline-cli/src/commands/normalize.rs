//! `threadline normalize TRANSCRIPT`: a session transcript to the request body the model sees.

use std::process::ExitCode;

use crate::input::read_input;
use crate::session::{build_request, read_session};

pub(crate) fn run(path: &str, model: Option<&str>, max_tokens: Option<u64>) -> ExitCode {
    let bytes = match read_input(path) {
        Ok(bytes) => bytes,
        Err(line) => {
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        eprintln!("threadline: {path}: not UTF-8 text");
        return ExitCode::from(2);
    };
    let session = read_session(&text);
    if session.messages.is_empty() {
        eprintln!("threadline: {path}: no messages found (is this a transcript?)");
        return ExitCode::from(2);
    }
    for problem in &session.problems {
        eprintln!("threadline: {path}: {problem}");
    }
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
