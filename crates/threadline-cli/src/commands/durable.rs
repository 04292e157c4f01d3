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
    Ingress, InvocationId, Output, SessionView, ShowRequest, TurnOutcome, TurnRequest,
};

use crate::error::CliError;
use crate::permission_prompt::can_ask;
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
        let id = turn_id(args.session, before.turns + 1, args.prompt);
        let request = TurnRequest::new(args.prompt).with_turn_id(id.clone());
        let body = serde_json::to_vec(&request)
            .map_err(|e| CliError::start(Some(RUN), "cannot encode the turn", e))?;
        let invocation = ingress
            .send(SESSION, args.session, "turn", &body, Some(&id))
            .await
            .map_err(|e| CliError::start(Some(RUN), "cannot submit the turn", e))?;
        stderr_line!(
            "turn {} of session {} (invocation {invocation})",
            before.turns + 1,
            args.session
        );
        let outcome = follow(&ingress, args.session, &invocation).await?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", outcome.text)
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
            let verdict = if step.ok { "ok" } else { "failed" };
            stderr_line!("  {} {verdict} ({} bytes)", step.name, step.bytes);
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

/// Asks on the terminal whether to allow the pending call (denied without a terminal).
async fn ask_user(ask: &serde_json::Value) -> bool {
    let tool = ask.get("tool").and_then(|v| v.as_str()).unwrap_or("a tool");
    let prompt = ask.get("prompt").and_then(|v| v.as_str()).unwrap_or("");
    if !can_ask() {
        stderr_line!("  {tool}: {prompt}: denied (stdin is not a terminal)");
        return false;
    }
    // TODO: the prompt is the model's; shown raw until the embedded `run`'s question is used.
    let _ = write!(std::io::stderr(), "  {tool}: {prompt} [y/N] ");
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    matches!(line, Ok(Ok(line)) if matches!(line.trim(), "y" | "Y" | "yes"))
}

/// `session show --restate URL ID [--json] [--transcript]`.
pub(crate) fn show(url: &str, session: &str, json: bool, transcript: bool) -> Result<(), CliError> {
    const SHOW: &str = "session show";
    let runtime = runtime(SHOW)?;
    let ingress = ingress(SHOW, url)?;
    let (first, messages) = runtime.block_on(async {
        let first = view(SHOW, &ingress, session, 0).await?;
        let mut messages = first.messages.clone();
        let mut next = first.next;
        while let Some(since) = next {
            let page = view(SHOW, &ingress, session, since).await?;
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
        out.push_str(&format!("session: {session}\n"));
        out.push_str(&format!("status: {}\n", first.status));
        out.push_str(&format!("turns: {}\n", first.turns));
        out.push_str(&format!("messages: {}\n", first.message_count));
        out.push_str(&format!("steps of the last turn: {}\n", first.steps.len()));
        for step in &first.steps {
            let verdict = if step.ok { "ok" } else { "failed" };
            out.push_str(&format!(
                "  {} {verdict} ({} bytes)\n",
                step.name, step.bytes
            ));
        }
        if let Some(ask) = &first.ask {
            let tool = ask.get("tool").and_then(|v| v.as_str()).unwrap_or("?");
            out.push_str(&format!("waiting for permission: {tool}\n"));
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| CliError::output(Some(SHOW), "the session", e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_turn_id_names_the_session_the_turn_and_the_prompt() {
        let id = super::turn_id("s1", 3, "hello");
        assert_eq!(id, "s1:turn-3:2cf24dba5fb0a30e");
        assert_ne!(id, super::turn_id("s1", 4, "hello"));
        assert_ne!(id, super::turn_id("s1", 3, "hello!"));
    }
}
