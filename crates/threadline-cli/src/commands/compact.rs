//! `threadline compact TRANSCRIPT --model M [--strategy micro|auto|snip] [--out FILE]`: applies
//! one compaction layer to a session and writes the resulting array as a threadline
//! transcript (JSONL), which `threadline normalize` and `check` read.

use std::fs;
use std::time::SystemTime;

use futures::executor::block_on;

use threadline_compact::units::since_last_boundary;
use threadline_compact::{
    AutocompactOptions, CircuitBreaker, CompactContext, ExtractiveSummarizer, HistoryOnly,
    MicrocompactOptions, ScriptedSummarizer, Summarizer, Thresholds, autocompact, estimate_context,
    inferred_overhead, microcompact_time_based, overhead_of, snip_oldest,
};
use threadline_message::{CompactTrigger, Message};
use threadline_normalize::{Options, normalize};
use threadline_wire::MessagesRequest;
use threadline_wire::model::ModelTable;

use crate::error::{BoxError, CliError};
use crate::input::InputError;
use crate::session::{Sidechains, load_session};
use threadline_cli::stderr_line;

/// The layer to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Strategy {
    /// Clear old tool results (time-based: only once the prompt cache has expired).
    Micro,
    /// Summarize everything before a verbatim tail.
    Auto,
    /// Remove the oldest messages (whole tool pairs and responses) down to the limit.
    Snip,
}

/// The arguments of `threadline compact`.
pub(crate) struct CompactArgs<'a> {
    pub(crate) transcript: &'a str,
    pub(crate) model: &'a str,
    pub(crate) strategy: Strategy,
    pub(crate) out: Option<&'a str>,
    pub(crate) limit: Option<u64>,
    pub(crate) summary: Option<&'a str>,
    pub(crate) keep: usize,
    pub(crate) now: Option<&'a str>,
    /// `--max-input-bytes`.
    pub(crate) input_limit: crate::input::InputLimit,
}

/// Prints the result, or writes it to `out` as every transcript the command line writes: key
/// shapes redacted, mode `0600`, a new file (one already there is replaced, never written
/// through: a link at `out` is removed, not followed).
fn write_transcript(messages: &[Message], out: Option<&str>) -> Result<(), CliError> {
    let cannot = |what: String, source: BoxError| CliError::Destination { what, source };
    if let Some(path) = out {
        let path = std::path::Path::new(path);
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(cannot(
                    format!("cannot replace {}", path.display()),
                    e.into(),
                ));
            }
        }
        let lines: Vec<(Option<String>, &Message)> = messages.iter().map(|m| (None, m)).collect();
        return super::session::write_new_lines(path, &lines);
    }
    let mut text = String::new();
    for message in messages {
        let line = serde_json::to_string(message)
            .map_err(|e| cannot("cannot write the result".to_owned(), e.into()))?;
        text.push_str(&line);
        text.push('\n');
    }
    crate::output::print_json(text.trim_end_matches('\n'));
    Ok(())
}

pub(crate) fn run(args: &CompactArgs<'_>) -> Result<(), CliError> {
    let path = args.transcript;
    let session = load_session(path, Sidechains::Never, args.input_limit)?;
    let now = match args.now {
        Some(text) => humantime::parse_rfc3339_weak(text)
            .map_err(|e| CliError::unusable(None, format!("--now {text}"), Some(e.into())))?,
        None => SystemTime::now(),
    };
    let resolved = ModelTable::builtin().resolve(args.model);
    if let Some(warning) = resolved.warning() {
        stderr_line!("threadline: {warning}");
    }
    let model = resolved.model();
    let history = session.messages;
    let visible = since_last_boundary(&history);
    let base = MessagesRequest::new(
        args.model,
        threadline_wire::defaults::max_tokens_for(model),
        normalize(visible, &Options::default()).messages,
    );
    // A transcript holds neither the system prompt nor the tools: their size is inferred
    // from the first recorded usage, so estimates before and after a removal agree (after
    // a compaction, the estimate counts them and the messages: the usage the kept tail
    // recorded described the context before it).
    let overhead = overhead_of(&base).max(inferred_overhead(&history).unwrap_or(0));
    let before = estimate_context(&history, overhead);
    let limit = args
        .limit
        .unwrap_or_else(|| Thresholds::for_model(model).autocompact);

    let (messages, what) = match args.strategy {
        Strategy::Micro => micro(&history, args.keep, now),
        Strategy::Snip => {
            let snipped = snip_oldest(&history, limit, overhead);
            let what = format!("removed {} messages", snipped.removed.len());
            (snipped.messages, what)
        }
        Strategy::Auto if before < limit => {
            stderr_line!("threadline: {path}: {before} tokens, below the limit {limit}; unchanged");
            (history.clone(), "nothing to compact".to_owned())
        }
        Strategy::Auto => {
            let context = CompactContext {
                model,
                base: &base,
                limit,
                now,
                trigger: CompactTrigger::Manual,
                files: &HistoryOnly,
            };
            summarize(&history, visible.len(), &context, args)?
        }
    };
    let after = estimate_context(&messages, overhead);
    write_transcript(&messages, args.out)?;
    stderr_line!(
        "threadline: {path}: {} messages, ~{before} tokens -> {} messages, ~{after} tokens; {what}",
        history.len(),
        messages.len(),
    );
    Ok(())
}

/// `micro`: old tool results cleared once the prompt cache has expired at `now`.
fn micro(history: &[Message], keep: usize, now: SystemTime) -> (Vec<Message>, String) {
    let options = MicrocompactOptions {
        keep_recent: keep,
        ..MicrocompactOptions::default()
    };
    match microcompact_time_based(history, &options, now) {
        Some(done) => (
            done.messages,
            format!("cleared {} old tool results", done.cleared.len()),
        ),
        None => (
            history.to_vec(),
            "nothing cleared (the prompt cache has not expired, or no old results)".to_owned(),
        ),
    }
}

/// `auto` over the limit: everything before a verbatim tail summarized, by the text of
/// `--summary FILE` or, without it, extractively.
fn summarize(
    history: &[Message],
    visible: usize,
    context: &CompactContext<'_>,
    args: &CompactArgs<'_>,
) -> Result<(Vec<Message>, String), CliError> {
    let scripted;
    let summarizer: &dyn Summarizer = match args.summary {
        Some(file) => {
            let bytes = crate::input::read_input(file, args.input_limit)?;
            let text = String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 {
                path: format!("--summary {file}"),
            })?;
            scripted = ScriptedSummarizer::new([Ok(text)]);
            &scripted
        }
        None => &ExtractiveSummarizer,
    };
    let done = block_on(autocompact(
        history,
        summarizer,
        context,
        &AutocompactOptions::default(),
        &mut CircuitBreaker::new(),
    ))
    .map_err(|e| CliError::Broken {
        what: format!("{}: cannot compact", args.transcript),
        source: Some(e.into()),
    })?;
    let what = format!(
        "summarized {visible} messages, kept a tail, re-attached {} files",
        done.reattached.len()
    );
    Ok((done.messages, what))
}
