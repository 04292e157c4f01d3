//! `threadline check FILE`: the API's acceptance rules, checked offline.
//!
//! FILE is a request body (`POST /v1/messages`, or `/v1/messages/count_tokens` with
//! `--count-tokens`), or a canonical fixture (`"format": "threadline-fixture/1"`) whose every
//! recorded request is checked against the model it names. Each violation is printed on stdout
//! as `PATH: MESSAGE`, or as the API's message alone when that already starts with the path;
//! for a fixture, each line starts with `exchange N: `.
//!
//! `check` is an oracle only if it never rejects what the API accepts. For a model the model
//! table does not know, the model-specific rules (`max_tokens` limit, thinking modes, effort,
//! sampling, prefill, system messages) are checked against the table's conservative default,
//! whose limits are guesses: what they find is printed on stderr as
//! `threadline: warning: …`, never on stdout, and does not change the exit code. So are the
//! findings of rules nothing bounds (see `threadline_validate::Rule`).
//!
//! Exit codes: 0 when there is no violation (warnings or not), 1 when there is one, 2 when the
//! input cannot be checked.

use std::collections::BTreeSet;

use serde_json::Value;
use threadline_validate::{Report, ValidateOptions, validate_count_tokens_report, validate_report};
use threadline_wire::model::{Model, ModelTable};
use threadline_wire::{CountTokensRequest, MessagesRequest};

use crate::error::CliError;
use crate::input::read_input;
use crate::session::{
    Continuation, NEXT_MESSAGE_PLACEHOLDER, build_request, looks_like_transcript, read_session,
};
use crate::terminal_text::terminal_safe;
use threadline_cli::stderr_line;

/// The `format` of a canonical fixture file.
const FIXTURE_FORMAT: &str = "threadline-fixture/1";

/// What the command line asked for.
pub(crate) struct CheckArgs<'a> {
    /// The file, or `-` for stdin.
    pub(crate) path: &'a str,
    /// Check against this model instead of the one each request names.
    pub(crate) model: Option<&'a str>,
    /// An `anthropic-beta` header value for plain request bodies.
    pub(crate) beta: Option<&'a str>,
    /// A plain body is a count_tokens request.
    pub(crate) count_tokens: bool,
    /// `--max-input-bytes`.
    pub(crate) limit: crate::input::InputLimit,
    /// A transcript's next user message, when the session is finished.
    pub(crate) next: Option<&'a str>,
}

/// One request to check.
struct Job {
    /// `exchange N` for a fixture, nothing for a plain body.
    label: Option<String>,
    body: Value,
    count_tokens: bool,
    beta: Option<String>,
}

/// The requests in the input: the body itself, or every recorded request of a fixture.
fn jobs(path: &str, value: Value, args: &CheckArgs<'_>) -> Result<Vec<Job>, String> {
    if value.get("format").and_then(Value::as_str) != Some(FIXTURE_FORMAT) {
        return Ok(vec![Job {
            label: None,
            body: value,
            count_tokens: args.count_tokens,
            beta: args.beta.map(str::to_owned),
        }]);
    }
    let exchanges = value
        .get("exchanges")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("threadline: {path}: the fixture has no `exchanges` array"))?;
    let jobs: Vec<Job> = exchanges
        .iter()
        .enumerate()
        .filter_map(|(i, exchange)| {
            let request = exchange.get("request").filter(|r| !r.is_null())?;
            let endpoint = request
                .get("endpoint")
                .and_then(Value::as_str)
                .unwrap_or("");
            let beta = request
                .get("headers")
                .and_then(|h| h.get("anthropic-beta"))
                .and_then(Value::as_str)
                .or(args.beta)
                .map(str::to_owned);
            Some(Job {
                label: Some(format!("exchange {i}")),
                body: request.get("body").cloned().unwrap_or(Value::Null),
                count_tokens: endpoint.ends_with("/count_tokens"),
                beta,
            })
        })
        .collect();
    if jobs.is_empty() {
        // Response-only recordings are valid fixtures with nothing to check.
        stderr_line!("threadline: {path}: the fixture holds no recorded request; nothing to check");
    }
    Ok(jobs)
}

/// What a check found, as printable lines.
#[derive(Debug, Default, PartialEq, Eq)]
struct Checked {
    /// One line per violation (stdout).
    violations: Vec<String>,
    /// One line per warning (stderr, after `threadline: warning: `).
    warnings: Vec<String>,
}

impl Checked {
    /// Adds the findings of `report`, each line after `label: ` when there is a label.
    fn add(&mut self, label: Option<&str>, report: &Report) {
        let line = |v: &threadline_validate::Violation| match label {
            Some(label) => format!("{label}: {v}"),
            None => v.to_string(),
        };
        self.violations.extend(report.violations.iter().map(line));
        self.warnings.extend(report.warnings.iter().map(line));
    }
}

/// The row `id` is checked against; the first time an id is unknown, a warning on stderr.
fn resolve<'a>(table: &'a ModelTable, id: &'a str, warned: &mut BTreeSet<String>) -> &'a Model {
    let resolved = table.resolve(id);
    if !resolved.is_known() && warned.insert(id.to_owned()) {
        stderr_line!(
            "threadline: warning: unknown model `{id}`: its model-specific rules are checked \
             against the model table's conservative default and reported as warnings, not \
             violations"
        );
    }
    resolved.model()
}

/// Validates one request; the error is one printable line. With `--model`, the request is
/// made to name that model first, so that the API's texts (which name it) read as they would.
fn check_one(
    job: Job,
    args: &CheckArgs<'_>,
    warned: &mut BTreeSet<String>,
) -> Result<Report, String> {
    let where_ = match &job.label {
        Some(label) => format!("{}: {label}", args.path),
        None => args.path.to_owned(),
    };
    let table = ModelTable::builtin();
    // Without a header (no `--beta`, none recorded) the betas are unknown, not absent.
    let options = match job.beta.as_deref() {
        Some(beta) => ValidateOptions::default().with_beta_header(beta),
        None => ValidateOptions::default(),
    };
    if job.count_tokens {
        let mut request: CountTokensRequest = serde_json::from_value(job.body)
            .map_err(|e| format!("threadline: {where_}: not a count_tokens request body: {e}"))?;
        if let Some(model) = args.model {
            request.model = model.to_owned();
        }
        let model = resolve(table, &request.model, warned);
        Ok(validate_count_tokens_report(&request, model, &options))
    } else {
        let mut request: MessagesRequest = serde_json::from_value(job.body)
            .map_err(|e| format!("threadline: {where_}: not a messages request body: {e}"))?;
        if let Some(model) = args.model {
            request.model = model.to_owned();
        }
        let model = resolve(table, &request.model, warned);
        Ok(validate_report(&request, model, &options))
    }
}

/// The lines to print for `bytes` (one per violation and one per warning), or the one-line
/// error for input that cannot be checked.
fn check_input(bytes: &[u8], args: &CheckArgs<'_>) -> Result<Checked, String> {
    let path = args.path;
    if let Ok(text) = std::str::from_utf8(bytes)
        && looks_like_transcript(text)
    {
        return check_transcript(text, args);
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("threadline: {path}: not JSON: {e}"))?;
    let mut warned = BTreeSet::new();
    let mut checked = Checked::default();
    for job in jobs(path, value, args)? {
        let label = job.label.clone();
        let report = check_one(job, args, &mut warned)?;
        checked.add(label.as_deref(), &report);
    }
    Ok(checked)
}

/// A transcript: the request it normalizes to is checked; what the normalizer had to repair
/// (and lines it could not read) are reported on stderr.
fn check_transcript(text: &str, args: &CheckArgs<'_>) -> Result<Checked, String> {
    let path = args.path;
    let session = read_session(text);
    if !session.has_conversation() {
        return Err(crate::session::no_messages(
            path,
            "no messages found in the transcript",
            &session.problems,
        )
        .to_string());
    }
    for problem in &session.problems {
        stderr_line!("threadline: {path}: {problem}");
    }
    let next = args.next.unwrap_or(NEXT_MESSAGE_PLACEHOLDER);
    let (request, normalized, continuation) = build_request(&session, args.model, None, Some(next));
    stderr_line!(
        "threadline: {path}: {} transcript normalized; {}",
        session.format,
        normalized.report.summary()
    );
    if continuation == Continuation::Finished {
        stderr_line!(
            "threadline: {path}: the session is finished (it ends with the model's complete \
             answer); checked as the request that continues it with the user's next message"
        );
    }
    let mut warned = BTreeSet::new();
    let model = resolve(ModelTable::builtin(), &request.model, &mut warned);
    let options = match args.beta {
        Some(beta) => ValidateOptions::default().with_beta_header(beta),
        None => ValidateOptions::default(),
    };
    let mut checked = Checked::default();
    checked.add(None, &validate_report(&request, model, &options));
    Ok(checked)
}

pub(crate) fn run(args: &CheckArgs<'_>) -> Result<(), CliError> {
    let bytes = read_input(args.path, args.limit)?;
    let checked = check_input(&bytes, args).map_err(CliError::rejected)?;
    for warning in &checked.warnings {
        // Request text (ids, names): escaped by `stderr_line`.
        stderr_line!("threadline: warning: {warning}");
    }
    if checked.violations.is_empty() {
        // Say so on stderr, so stdout stays the list of violations (empty here).
        stderr_line!("threadline: {}: no violations", args.path);
        return Ok(());
    }
    for line in &checked.violations {
        // A violation quotes the request (a tool's name, a model id): escaped.
        crate::output::print_line(&terminal_safe(line, false));
    }
    Err(CliError::Found {
        problems: checked.violations.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(model: Option<&'static str>) -> CheckArgs<'static> {
        CheckArgs {
            path: "body.json",
            model,
            beta: None,
            count_tokens: false,
            next: None,
            limit: crate::input::InputLimit::default(),
        }
    }

    const PREFILL: &str = r#"{"model":"claude-opus-4-7","max_tokens":1024,"messages":[
        {"role":"user","content":"Hi"},{"role":"assistant","content":"Hello "}]}"#;

    #[test]
    fn a_valid_body_prints_nothing() {
        let body = r#"{"model":"claude-haiku-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Hi"}]}"#;
        assert_eq!(
            check_input(body.as_bytes(), &args(None)),
            Ok(Checked::default())
        );
    }

    #[test]
    fn violations_print_in_the_apis_words() {
        assert_eq!(
            check_input(PREFILL.as_bytes(), &args(None)).map(|c| c.violations),
            Ok(vec![
                "messages.1: This model does not support assistant message prefill. The conversation must end with a user message.".to_owned()
            ])
        );
    }

    #[test]
    fn the_model_flag_overrides_the_request() {
        assert_eq!(
            check_input(PREFILL.as_bytes(), &args(Some("claude-haiku-4-5"))).map(|c| c.violations),
            Ok(vec![
                "messages.1.content: final assistant content cannot end with trailing whitespace"
                    .to_owned()
            ])
        );
    }

    #[test]
    fn every_request_of_a_fixture_is_checked_and_labelled() {
        let fixture = serde_json::json!({
            "format": FIXTURE_FORMAT,
            "exchanges": [
                {"request": {"endpoint": "/v1/messages", "body": serde_json::from_str::<Value>(PREFILL).expect("json")}, "response": {}},
                {"request": null, "response": {}},
                {"request": {"endpoint": "/v1/messages/count_tokens", "body": {"model": "claude-haiku-4-5", "messages": []}}, "response": {}}
            ]
        });
        let lines = check_input(fixture.to_string().as_bytes(), &args(None)).map(|c| c.violations);
        assert_eq!(
            lines,
            Ok(vec![
                "exchange 0: messages.1: This model does not support assistant message prefill. The conversation must end with a user message.".to_owned(),
                "exchange 2: messages: at least one message is required".to_owned(),
            ])
        );
    }

    #[test]
    fn an_unknown_models_limits_give_warnings_not_violations() {
        let body = r#"{"model":"claude-3-7-sonnet-latest","max_tokens":16000,"messages":[{"role":"user","content":"Hi"}]}"#;
        assert_eq!(
            check_input(body.as_bytes(), &args(None)),
            Ok(Checked {
                violations: vec![],
                warnings: vec!["max_tokens: 16000 > 8192, which is the maximum allowed number of output tokens for claude-3-7-sonnet-latest".to_owned()],
            })
        );
    }

    #[test]
    fn unreadable_input_is_one_line() {
        let not_json = check_input(b"{", &args(None)).map(|c| c.violations);
        assert!(
            matches!(&not_json, Err(line) if line.starts_with("threadline: body.json: not JSON:") && !line.contains('\n'))
        );
        let no_max_tokens =
            check_input(br#"{"model":"m","messages":[]}"#, &args(None)).map(|c| c.violations);
        assert_eq!(
            no_max_tokens,
            Err(
                "threadline: body.json: not a messages request body: missing field `max_tokens`"
                    .to_owned()
            )
        );
    }
}
