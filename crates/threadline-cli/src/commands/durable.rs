//! The client side of durable sessions (threadline-restate), through a Restate server's
//! ingress: `threadline run --restate URL --session ID PROMPT` submits a turn and follows it,
//! `threadline session show --restate URL ID` shows a session, running or not.
//!
//! A turn is sent with an idempotency key derived from the session, the turn's number and the
//! prompt, so running the same command again after the client died follows the same
//! invocation instead of starting a second turn. While the turn runs, each journaled step
//! (model call, tool call, question) is printed on stderr as the session's `show` handler
//! reports it; a question is asked on the terminal (`[y/N]`) and denied when stdin is not
//! one. The answer's text goes to stdout.

use std::io::Write as _;
use std::time::Duration;

use sha2::Digest as _;
use threadline::query::Terminal;
use threadline_restate::{
    Ingress, InvocationId, Output, SessionView, ShowRequest, StepRecord, TurnOutcome, TurnRequest,
};

use crate::error::CliError;
use crate::permission_prompt::{can_ask, is_yes, question};
use crate::terminal_text::{terminal_safe, terminal_safe_json};
use threadline_cli::stderr_line;

/// The Virtual Object's name.
const SESSION: &str = "Session";
/// How often a running turn is polled.
const POLL: Duration = Duration::from_millis(200);

/// `run --restate`.
pub(crate) struct RemoteRun<'a> {
    pub(crate) ingress: &'a str,
    pub(crate) session: &'a str,
    pub(crate) prompt: &'a str,
}

fn runtime(command: &'static str) -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(Some(command), e))
}

fn ingress(command: &'static str, url: &str) -> Result<Ingress, CliError> {
    Ingress::new(url).map_err(|e| CliError::Usage {
        command: Some(command),
        message: format!("--restate {url}: {e}"),
    })
}

/// The session's view (`show`), from message `since` on.
async fn view(
    command: &'static str,
    ingress: &Ingress,
    session: &str,
    since: usize,
) -> Result<SessionView, CliError> {
    let body = serde_json::to_vec(&ShowRequest::since(since))
        .map_err(|e| CliError::start(Some(command), "cannot encode the request", e))?;
    let bytes = ingress
        .call(SESSION, session, "show", &body)
        .await
        .map_err(|e| {
            CliError::start(
                Some(command),
                format!("cannot reach the session {session}"),
                e,
            )
        })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        CliError::unusable(
            Some(command),
            format!("the session {session}'s view"),
            Some(e.into()),
        )
    })
}

/// The idempotency key of turn `number` of `session` with `prompt`.
fn turn_id(session: &str, number: u32, prompt: &str) -> String {
    let digest = sha2::Sha256::digest(prompt.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{session}:turn-{number}:{hex}")
}

pub(crate) fn run(args: &RemoteRun<'_>) -> Result<(), CliError> {
    const RUN: &str = "run";
    let runtime = runtime(RUN)?;
    let ingress = ingress(RUN, args.ingress)?;
    runtime.block_on(async {
        let before = view(RUN, &ingress, args.session, usize::MAX).await?;
        // The server's count: a turn past the last one it could number is refused, not wrapped
        // (a wrapped number would reuse the first turn's idempotency key).
        let turn = before.turns.checked_add(1).ok_or_else(|| {
            CliError::rejected(format!(
                "threadline: {RUN}: session {} has no turn number left",
                args.session
            ))
        })?;
        let id = turn_id(args.session, turn, args.prompt);
        let request = TurnRequest::new(args.prompt).with_turn_id(id.clone());
        let body = serde_json::to_vec(&request)
            .map_err(|e| CliError::start(Some(RUN), "cannot encode the turn", e))?;
        let invocation = ingress
            .send(SESSION, args.session, "turn", &body, Some(&id))
            .await
            .map_err(|e| CliError::start(Some(RUN), "cannot submit the turn", e))?;
        stderr_line!(
            "turn {turn} of session {} (invocation {invocation})",
            args.session
        );
        let outcome = follow(&ingress, args.session, &invocation).await?;
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(answer(&outcome.text).as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| CliError::output(Some(RUN), "the answer", e))?;
        match outcome.terminal {
            Terminal::Completed => Ok(()),
            terminal => Err(CliError::SessionEnded {
                terminal: Some(terminal),
            }),
        }
    })
}

/// Polls the invocation until it finishes, printing each new step and answering questions.
async fn follow(
    ingress: &Ingress,
    session: &str,
    invocation: &InvocationId,
) -> Result<TurnOutcome, CliError> {
    const RUN: &str = "run";
    let mut printed = 0usize;
    let mut answered: Option<String> = None;
    loop {
        let done = ingress
            .output(invocation)
            .await
            .map_err(|e| CliError::start(Some(RUN), "cannot read the turn's outcome", e))?;
        // The step log of the current turn (also after it finished, to print the last steps).
        let view = view(RUN, ingress, session, usize::MAX).await?;
        for step in view.steps.iter().skip(printed) {
            stderr_line!("{}", step_line(step));
        }
        printed = printed.max(view.steps.len());
        match done {
            Output::Done(bytes) => {
                return serde_json::from_slice(&bytes).map_err(|e| {
                    CliError::unusable(Some(RUN), "the turn's outcome", Some(e.into()))
                });
            }
            Output::Failed { status, message } => {
                return Err(CliError::Broken {
                    what: format!("run: the turn failed ({status}): {message}"),
                    source: None,
                });
            }
            Output::Pending => {}
            _ => {}
        }
        if let Some(ask) = &view.ask
            && let Some(id) = ask.get("awakeable_id").and_then(|v| v.as_str())
            && answered.as_deref() != Some(id)
        {
            let allow = ask_user(ask).await;
            let answer = serde_json::json!({ "allow": allow }).to_string();
            ingress
                .resolve_awakeable(id, answer.as_bytes())
                .await
                .map_err(|e| CliError::start(Some(RUN), "cannot answer the question", e))?;
            answered = Some(id.to_owned());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The answer's text as written to stdout: the model's prose, with its newlines and tabs but
/// every escape sequence shown escaped, as the embedded `run` streams it.
fn answer(text: &str) -> String {
    format!("{}\n", terminal_safe(text, true))
}

/// One journaled step, `  NAME ok|failed (N bytes)`: the name carries a tool use's id, which
/// the model wrote, so it is escaped.
fn step_line(step: &StepRecord) -> String {
    let verdict = if step.ok { "ok" } else { "failed" };
    format!(
        "  {} {verdict} ({} bytes)",
        terminal_safe(&step.name, false),
        step.bytes
    )
}

/// What the pending question asks: `TOOL: PROMPT` (the prompt quotes the model's call).
fn asked(ask: &serde_json::Value) -> String {
    let tool = ask.get("tool").and_then(|v| v.as_str()).unwrap_or("a tool");
    let prompt = ask.get("prompt").and_then(|v| v.as_str()).unwrap_or("");
    format!("{tool}: {prompt}")
}

/// Asks on the terminal whether to allow the pending call (denied without a terminal), with
/// the embedded `run`'s question and answers.
async fn ask_user(ask: &serde_json::Value) -> bool {
    let asked = asked(ask);
    if !can_ask() {
        stderr_line!("threadline: {asked}: denied (stdin is not a terminal)");
        return false;
    }
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "{}", question(&asked));
    let _ = stderr.flush();
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    matches!(line, Ok(Ok(line)) if is_yes(&line))
}

/// `session show --restate URL ID [--json] [--transcript]`. The history is read page by page
/// until the server says it is whole, and no further than `limit` (`--max-input-bytes`): the
/// server's pages are input like any file.
pub(crate) fn show(
    url: &str,
    session: &str,
    json: bool,
    transcript: bool,
    limit: crate::input::InputLimit,
) -> Result<(), CliError> {
    const SHOW: &str = "session show";
    let runtime = runtime(SHOW)?;
    let ingress = ingress(SHOW, url)?;
    let too_large = || {
        CliError::from(crate::input::InputError::TooLarge {
            path: format!("the session {session}'s history"),
            limit: limit.bytes(),
        })
    };
    let (first, messages) = runtime.block_on(async {
        let first = view(SHOW, &ingress, session, 0).await?;
        let mut messages = first.messages.clone();
        let mut read = threadline_wire::json_size::serialized_len(&first.messages) as u64;
        let mut next = first.next;
        loop {
            if read > limit.bytes() {
                return Err(too_large());
            }
            let Some(since) = next.filter(|_| messages.len() < first.message_count) else {
                break;
            };
            let page = view(SHOW, &ingress, session, since).await?;
            read = read
                .saturating_add(threadline_wire::json_size::serialized_len(&page.messages) as u64);
            messages.extend(page.messages.iter().cloned());
            next = page.next.filter(|n| *n > since);
        }
        Ok::<_, CliError>((first, messages))
    })?;
    let mut out = String::new();
    if transcript {
        // The history as a threadline transcript: one message per line.
        for message in &messages {
            out.push_str(&message.to_string());
            out.push('\n');
        }
    } else if json {
        let mut value = serde_json::to_value(&first)
            .map_err(|e| CliError::output(Some(SHOW), "the view", e))?;
        value["messages"] = serde_json::Value::Array(messages);
        value.as_object_mut().map(|o| o.remove("next"));
        out = format!("{value:#}\n");
    } else {
        let safe = |text: &str| terminal_safe(text, false).into_owned();
        out.push_str(&format!("session: {}\n", safe(session)));
        out.push_str(&format!("status: {}\n", safe(&first.status)));
        out.push_str(&format!("turns: {}\n", first.turns));
        out.push_str(&format!("messages: {}\n", first.message_count));
        out.push_str(&format!("steps of the last turn: {}\n", first.steps.len()));
        for step in &first.steps {
            out.push_str(&step_line(step));
            out.push('\n');
        }
        if let Some(ask) = &first.ask {
            let tool = ask.get("tool").and_then(|v| v.as_str()).unwrap_or("?");
            out.push_str(&format!("waiting for permission: {}\n", safe(tool)));
        }
    }
    // The JSON forms quote the model too: what the serializer leaves raw is escaped (the
    // table's cells were escaped as it was built, and stay as they are).
    let out = if transcript || json {
        terminal_safe_json(&out)
    } else {
        out.into()
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| CliError::output(Some(SHOW), "the session", e))
}

#[cfg(test)]
mod tests {
    /// Escape sequences that hide or rewrite what a terminal shows.
    const HOSTILE: &str = "\u{1b}]0;PWNED\u{7}\u{1b}[2K\r\u{1b}[1A\u{202e}";

    /// Whether `text` holds a byte a terminal would act on: ESC, CR, BEL, a bidi override.
    fn raw(text: &str) -> bool {
        text.contains(['\u{1b}', '\r', '\u{7}', '\u{202e}'])
    }

    #[test]
    fn the_question_of_a_durable_turn_shows_the_command_escaped() {
        let ask = serde_json::json!({
            "awakeable_id": "a1",
            "tool": "Bash",
            "prompt": format!("touch pwned{HOSTILE}\nRun `ls`?"),
        });
        let question = super::question(&super::asked(&ask));
        assert!(!raw(&question), "{question:?}");
        assert_eq!(
            question,
            "threadline: Bash: touch pwned\\u{1b}]0;PWNED\\u{7}\\u{1b}[2K\\u{d}\\u{1b}[1A\\u{202e}\\u{a}Run `ls`? [y/N] "
        );
    }

    #[test]
    fn the_answer_and_the_steps_of_a_durable_turn_are_escaped() {
        let answer = super::answer(&format!("done{HOSTILE}\n\tnext"));
        assert!(!raw(&answer), "{answer:?}");
        assert_eq!(
            answer,
            "done\\u{1b}]0;PWNED\\u{7}\\u{1b}[2K\\u{d}\\u{1b}[1A\\u{202e}\n\tnext\n"
        );
        let step: threadline_restate::StepRecord = serde_json::from_value(serde_json::json!({
            "kind": "tool",
            "name": format!("tool:toolu_1{HOSTILE}\n  model#9 ok"),
            "ok": true,
            "bytes": 12,
        }))
        .expect("a step record");
        let line = super::step_line(&step);
        assert!(!raw(&line) && !line.contains('\n'), "{line:?}");
        assert!(
            line.starts_with("  tool:toolu_1\\u{1b}]0;PWNED"),
            "{line:?}"
        );
        assert!(
            line.ends_with("\\u{a}  model#9 ok ok (12 bytes)"),
            "{line:?}"
        );
    }

    #[test]
    fn a_turn_id_names_the_session_the_turn_and_the_prompt() {
        let id = super::turn_id("s1", 3, "hello");
        assert_eq!(id, "s1:turn-3:2cf24dba5fb0a30e");
        assert_ne!(id, super::turn_id("s1", 4, "hello"));
        assert_ne!(id, super::turn_id("s1", 3, "hello!"));
    }
}
