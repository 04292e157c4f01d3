//! `threadline`: the command line of the threadline workspace.
//!
//! Every failure is one clear line on stderr and a documented exit code; nothing panics on bad
//! input. Exit codes: 0 success, 1 the input was read but is broken or invalid, 2 the input
//! could not be read (or the arguments are wrong).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod input;
mod output;
mod session;

/// The message array of an LLM agent, from the command line.
#[derive(Debug, Parser)]
#[command(name = "threadline", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Accumulate a raw SSE response body into the final message, printed as JSON.
    ///
    /// FILE holds the bytes of a streamed `/v1/messages` response (`-` reads stdin), or is a
    /// canonical fixture whose exchanges hold SSE bodies (every stream is accumulated). On a
    /// truncated or broken stream the partial message is printed, the error goes to stderr,
    /// and the exit code is 1.
    Accumulate {
        /// The SSE file, a canonical fixture, or `-` for stdin.
        file: String,
    },
    /// Check a request against the API's acceptance rules, offline; print each violation.
    ///
    /// FILE is a `/v1/messages` request body (`-` reads stdin), a canonical fixture whose
    /// every recorded request is checked, or a session transcript (threadline or Claude Code
    /// JSONL), whose normalized request is checked and whose repairs are reported on stderr. Each violation is printed as `PATH: MESSAGE` in the
    /// API's own words. Exit code 0: no violation; 1: violations; 2: unreadable input. An
    /// unknown model is checked against conservative defaults, with a warning on stderr.
    Check {
        /// The request body, a canonical fixture, or `-` for stdin.
        file: String,
        /// Check against this model instead of the one the request names.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The `anthropic-beta` header the request is sent with (e.g. for interleaved thinking).
        #[arg(long, value_name = "BETAS")]
        beta: Option<String>,
        /// FILE is a `/v1/messages/count_tokens` request body.
        #[arg(long)]
        count_tokens: bool,
    },
    /// Normalize a session transcript into the request body the model would see.
    ///
    /// TRANSCRIPT is a threadline transcript or a Claude Code transcript (detected). The
    /// request body JSON goes to stdout, a one-line summary of the repairs to stderr.
    Normalize {
        /// The transcript (`-` reads stdin).
        transcript: String,
        /// The model to build the request for (default: the transcript's last model).
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// `max_tokens` of the request (default: 8192, capped at the model's maximum).
        #[arg(long, value_name = "N")]
        max_tokens: Option<u64>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            // Help and version go to stdout; usage errors to stderr.
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Accumulate { file } => commands::accumulate::run(&file),
        Command::Check {
            file,
            model,
            beta,
            count_tokens,
        } => commands::check::run(&commands::check::CheckArgs {
            path: &file,
            model: model.as_deref(),
            beta: beta.as_deref(),
            count_tokens,
        }),
        Command::Normalize {
            transcript,
            model,
            max_tokens,
        } => commands::normalize::run(&transcript, model.as_deref(), max_tokens),
    }
}
