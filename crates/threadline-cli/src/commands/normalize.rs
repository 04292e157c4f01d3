//! `threadline normalize TRANSCRIPT`: a session transcript to the request body the model sees.

use crate::error::CliError;
use crate::input::InputLimit;
use crate::session::{Continuation, Sidechains, build_request, load_session};
use threadline_cli::stderr_line;

/// Prints the request that continues the session. A finished session (it ends with the
/// model's complete answer) has no such request until the user's next message is known:
/// with `next` it is printed, without it the command says so and prints nothing, rather than
/// a prefill request the API would reject.
pub(crate) fn run(
    path: &str,
    model: Option<&str>,
    max_tokens: Option<u64>,
    next: Option<&str>,
    limit: InputLimit,
) -> Result<(), CliError> {
    let session = load_session(path, Sidechains::Never, limit)?;
    let (request, normalized, continuation) = build_request(&session, model, max_tokens, next);
    if continuation == Continuation::Finished && next.is_none() {
        stderr_line!(
            "threadline: {path}: the session is finished: it ends with the model's complete \
             answer, so the request that continues it needs the user's next message \
             (`--next TEXT`); {} transcript, {} messages; {}",
            session.format,
            session.messages.len(),
            normalized.report.summary()
        );
        return Ok(());
    }
    let json = serde_json::to_string_pretty(&request)
        .map_err(|e| CliError::output(None, "cannot print the request", e))?;
    crate::output::print_json(&json);
    stderr_line!(
        "threadline: {path}: {} transcript, {} messages -> {} request messages; {}",
        session.format,
        session.messages.len(),
        request.messages.len(),
        normalized.report.summary()
    );
    Ok(())
}
